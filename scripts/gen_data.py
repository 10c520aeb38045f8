#!/usr/bin/env python3
# Seeded, deterministic generator for quarry's sample data: writes sales.csv, sensors.csv
# (deliberately messy; temperatures mix Celsius and Fahrenheit, "70.5 F") and passengers.csv
# to OUT_DIR (default: <repo>/data). Usage: python3 scripts/gen_data.py [OUT_DIR]
import csv
import datetime as dt
import sys
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from random import Random

# Only IEEE-exact helpers of Random are used (random, randint, choice(s), uniform, triangular,
# sample, shuffle): no gauss/expovariate, whose libm calls could differ between platforms.


def write_csv(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


# ----------------------------------------------------------------------------- sales.csv
N_ORDERS = 2065
REGIONS = [("North", 0.27), ("East", 0.25), ("South", 0.2), ("West", 0.16), ("Central", 0.12)]
CHANNELS = [("Online", 0.5), ("Retail", 0.32), ("Partner", 0.18)]
DISCOUNTS = [("0", 0.58), ("0.05", 0.2), ("0.1", 0.14), ("0.15", 0.08)]
PRODUCTS = {  # category -> [(product, list price)]
    "Electronics": [("Wireless Mouse", "24.99"), ("Mechanical Keyboard", "89.00"),
                    ("27in Monitor", "249.00"), ("USB-C Dock", "129.50"),
                    ("Noise-Cancelling Headphones", "199.99")],
    "Furniture": [("Office Chair", "179.00"), ("Standing Desk", "449.00"),
                  ("Bookshelf", "119.90"), ("Desk Lamp", "39.95")],
    "Office Supplies": [("Printer Paper Case", "42.50"), ("Gel Pens 12pk", "11.49"),
                        ("Notebook Set", "18.75"), ("Stapler", "14.20")],
    "Outdoor": [("Camping Tent", "159.00"), ("Cooler Box", "79.99"),
                ("Folding Chair", "34.50"), ("Hiking Backpack", "109.00")],
}
CATEGORIES = list(PRODUCTS)  # insertion order, not hash order
MONTH_FACTOR = [0.9, 0.85, 0.95, 1.0, 1.0, 1.05, 1.05, 1.0, 0.95, 1.15, 1.35, 1.55]


def category_weights(month):
    w = {"Electronics": 0.34, "Furniture": 0.2, "Office Supplies": 0.32, "Outdoor": 0.14}
    if month in (6, 7, 8):
        w["Outdoor"] *= 3.0  # summer bump for Outdoor
    if month in (11, 12):
        w["Electronics"] *= 1.4  # holiday gadgets
    return [w[c] for c in CATEGORIES]


def gen_sales(rng):
    start, end = dt.date(2024, 1, 1), dt.date(2025, 12, 31)
    days = [start + dt.timedelta(d) for d in range((end - start).days + 1)]
    span = len(days) - 1
    weights = []
    for i, d in enumerate(days):
        trend = 1.0 + 0.5 * i / span  # ~50% growth over two years
        weekday = 0.55 if d.weekday() >= 5 else 1.0  # weekend dip
        weights.append(trend * MONTH_FACTOR[d.month - 1] * weekday)
    dates = sorted(rng.choices(days, weights=weights, k=N_ORDERS))

    region_names = [r for r, _ in REGIONS]
    # Customers belong to one region; pool sizes follow region weights.
    pools, cid = {}, 1
    for r, w in REGIONS:
        n = round(420 * w)
        pools[r] = [f"C{cid + k:04d}" for k in range(n)]
        cid += n

    rows = []
    for oid, d in enumerate(dates, start=1):
        region = rng.choices(region_names, weights=[w for _, w in REGIONS])[0]
        pool = pools[region]
        # a few loyal customers place most orders: triangular skew towards the pool start
        customer = pool[min(len(pool) - 1, int(rng.triangular(0, len(pool), 0)))]
        category = rng.choices(CATEGORIES, weights=category_weights(d.month))[0]
        product, price = rng.choice(PRODUCTS[category])
        channel = rng.choices([c for c, _ in CHANNELS], weights=[w for _, w in CHANNELS])[0]
        hi = 12 if category == "Office Supplies" else 4
        if channel == "Partner":
            hi *= 2
        units = 1 + int(rng.triangular(0, hi, 0))
        discount = rng.choices([x for x, _ in DISCOUNTS], weights=[w for _, w in DISCOUNTS])[0]
        if units >= 10 and discount == "0":
            discount = "0.05"  # bulk orders always get something off
        revenue = (units * Decimal(price) * (1 - Decimal(discount))).quantize(
            Decimal("0.01"), rounding=ROUND_HALF_UP)
        rows.append([oid, d.isoformat(), region, product, category, channel, units,
                     price, discount, f"{revenue:.2f}", customer])
    header = ["order_id", "order_date", "region", "product", "category", "channel", "units",
              "unit_price", "discount", "revenue", "customer_id"]
    return header, rows


# ---------------------------------------------------------------------------- sensors.csv
N_READINGS = 600
STATIONS = ["ST-01", "ST-02", "ST-03", "ST-04", "ST-05"]
STATION_BASE_C = [19.5, 21.0, 23.5, 17.0, 25.0]


def variant(rng, clean, alternatives, p_each):
    """Return `clean`, or one of `alternatives` each with probability p_each."""
    x = rng.random()
    for k, alt in enumerate(alternatives):
        if x < p_each * (k + 1):
            return alt
    return clean


def fmt_time(rng, t):
    x = rng.random()
    if x < 0.08:  # US style, 12-hour clock, no leading zero on the hour
        h12 = t.hour % 12 or 12
        return f"{t:%m/%d/%Y} {h12}:{t:%M} {'AM' if t.hour < 12 else 'PM'}"
    if x < 0.16:
        return f"{t:%Y-%m-%dT%H:%M:%S}Z"
    return f"{t:%Y-%m-%d %H:%M:%S}"


def gen_sensors(rng):
    start = dt.datetime(2025, 3, 1, 0, 0, 0)
    rows = []
    for i in range(N_READINGS):
        t = start + dt.timedelta(minutes=24 * i)
        s = i % len(STATIONS)
        code = STATIONS[s]
        station = variant(rng, code, [code.lower(), code.title()], 0.07)

        state = rng.choices(["ok", "fault", "maint"], weights=[0.87, 0.08, 0.05])[0]
        if state == "ok":
            status = variant(rng, "ok", ["OK", "Ok"], 0.07)
        elif state == "fault":
            status = variant(rng, "fault", ["FAULT"], 0.4)
        else:
            status = "maint"

        # daily cycle as a triangle wave peaking at 14:00 (no trig: platform-exact)
        hour = t.hour + t.minute / 60
        cycle = 1 - abs(((hour - 14) % 24) - 12) / 6  # +1 at 14:00, -1 at 02:00
        temp_c = STATION_BASE_C[s] + 3.0 * cycle + rng.uniform(-0.8, 0.8)
        x = rng.random()
        if state == "fault" and x < 0.5 or x < 0.02:
            temp = "-999"  # sentinel, mostly on faulty stations
        elif x < 0.055:
            temp = "N/A"
        elif x < 0.09:
            temp = ""
        elif x < 0.16:
            temp = f"{temp_c * 9 / 5 + 32:.1f} F"
        elif x < 0.23:
            temp = f"{temp_c:.1f}C"
        else:
            temp = f"{temp_c:.1f} C"

        hum = int(55 - 8 * cycle + rng.uniform(-6, 6))
        x = rng.random()
        humidity = "" if x < 0.06 else f"{hum} %" if x < 0.14 else f"{hum}%"

        day = i / (N_READINGS / 10)  # 0..10 days
        battery = 100 - s * 4 - day * (3.5 + s) + rng.uniform(-1.5, 1.5)
        battery = "" if rng.random() < 0.06 else f"{max(battery, 1.0):.1f}"
        rows.append([i + 1, station, fmt_time(rng, t), temp, humidity, status, battery])
    header = ["reading_id", "station", "recorded_at", "temperature", "humidity", "status",
              "battery"]
    return header, rows


# ------------------------------------------------------------------------- passengers.csv
N_PASSENGERS = 340
SURNAMES = ["Andersson", "Baxter", "Carter", "Dean", "Eriksson", "Fortune", "Goodwin",
            "Harris", "Ilett", "Johnson", "Kelly", "Lindqvist", "Moran", "Nasser", "O'Brien",
            "Palsson", "Quick", "Rice", "Sage", "Taylor", "Uruchurtu", "Vander Planke",
            "Williams", "Yasbeck", "Zabour", "Allison", "Brown", "Connolly", "Davies", "Hart"]
MALE = ["John", "William", "Charles", "George", "Thomas", "James", "Henry", "Edward",
        "Arthur", "Frederick", "Karl", "Patrick", "Samuel", "Ernst", "Hans"]
FEMALE = ["Mary", "Anna", "Elizabeth", "Margaret", "Helen", "Alice", "Ellen", "Bridget",
          "Maria", "Edith", "Ida", "Kate", "Emily", "Hilda", "Agnes"]
SURVIVAL = {("female", 1): 0.95, ("female", 2): 0.9, ("female", 3): 0.5,
            ("male", 1): 0.37, ("male", 2): 0.16, ("male", 3): 0.14}
CABIN_P = {1: 0.8, 2: 0.1, 3: 0.03}


def gen_passengers(rng):
    missing_embarked = set(rng.sample(range(1, N_PASSENGERS + 1), 2))
    rows = []
    for pid in range(1, N_PASSENGERS + 1):
        pclass = rng.choices([1, 2, 3], weights=[0.24, 0.21, 0.55])[0]
        sex = "male" if rng.random() < 0.64 else "female"
        age = rng.triangular(0.4, 70, 26 if pclass == 3 else 36)
        age = round(age, 2) if age < 1 else int(age) + (0.5 if rng.random() < 0.05 else 0)
        surname = rng.choice(SURNAMES)
        married = False
        if sex == "male":
            title = "Master" if age < 13 else rng.choices(["Mr", "Dr", "Rev"], [0.96, 0.02, 0.02])[0]
            name = f"{surname}, {title}. {rng.choice(MALE)}"
        elif age >= 18 and rng.random() < 0.55:
            married = True
            husband = f"{rng.choice(MALE)} {rng.choice(MALE)[0]}"
            name = f"{surname}, Mrs. {husband}"
            if rng.random() < 0.4:  # maiden name in parentheses, sometimes with a nickname
                maiden = f"{rng.choice(FEMALE)} {rng.choice(SURNAMES)}"
                name += f' ({maiden})' if rng.random() < 0.7 else f' ("{maiden}")'
        else:
            name = f"{surname}, Miss. {rng.choice(FEMALE)}"
        sibsp = rng.choices([0, 1, 2, 3, 4], [0.68, 0.23, 0.04, 0.03, 0.02])[0]
        if married:
            sibsp = max(sibsp, 1)
        parch = rng.choices([0, 1, 2, 3], [0.76, 0.13, 0.09, 0.02])[0] if age >= 13 else rng.randint(1, 2)
        survived = 1 if rng.random() < SURVIVAL[(sex, pclass)] + (0.2 if age < 10 else 0) else 0

        ticket_kind = rng.random()
        num = rng.randint(1000, 399999)
        if pclass == 1 and ticket_kind < 0.5:
            ticket = f"PC {num % 100000}"
        elif ticket_kind < 0.15:
            ticket = f"A/5 {num % 100000}"
        elif ticket_kind < 0.22:
            ticket = f"STON/O2. {3100000 + num % 10000}"
        elif ticket_kind < 0.28:
            ticket = f"C.A. {num % 100000}"
        else:
            ticket = str(num)
        lo, hi = {1: (26.0, 263.0), 2: (10.5, 73.5), 3: (6.75, 56.5)}[pclass]
        fare = f"{rng.triangular(lo, hi, lo + (hi - lo) * 0.1):.4f}"

        cabin = ""
        if rng.random() < CABIN_P[pclass]:
            deck = rng.choice("ABCDE" if pclass == 1 else "DEFG")
            cabin = f"{deck}{rng.randint(2, 148)}"
            if pclass == 1 and rng.random() < 0.12:
                cabin += f" {deck}{rng.randint(2, 148)}"
        embarked = "" if pid in missing_embarked else rng.choices("SCQ", [0.72, 0.19, 0.09])[0]
        age_s = "" if rng.random() < 0.2 else (f"{age:g}")
        rows.append([pid, survived, pclass, name, sex, age_s, sibsp, parch, ticket, fare,
                     cabin, embarked])
    header = ["PassengerId", "Survived", "Pclass", "Name", "Sex", "Age", "SibSp", "Parch",
              "Ticket", "Fare", "Cabin", "Embarked"]
    return header, rows


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "data"
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / "sales.csv", *gen_sales(Random(20240101)))
    write_csv(out / "sensors.csv", *gen_sensors(Random(20250301)))
    write_csv(out / "passengers.csv", *gen_passengers(Random(1912)))
    print(f"wrote sales.csv, sensors.csv, passengers.csv to {out}")


if __name__ == "__main__":
    main()
