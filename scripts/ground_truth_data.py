"""Loading, cleaning and exact arithmetic for scripts/ground_truth.py (standard library only).

Cleaning rules are the ones the task questions state: station codes compared upper-cased;
recorded_at in three formats, all UTC, the slash one month/day/year; temperature '21.4 C',
'21.4C' or '70.5 F' (converted, (F - 32) * 5 / 9), with 'N/A', '-999' and '' meaning no
reading; humidity '45%' or '45 %'; status compared lower-cased. A value in none of these forms
raises ValueError, so a change in the data cannot slip through as a silently skipped row.
"""
import csv
import datetime as dt
import re
import sqlite3
from decimal import ROUND_HALF_UP, Decimal, getcontext
from functools import lru_cache
from pathlib import Path

getcontext().prec = 40
ROOT = Path(__file__).resolve().parent.parent


# ---------------------------------------------------------------- loading and cleaning


@lru_cache(maxsize=None)
def sales():
    with open(ROOT / "data" / "sales.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["date"] = dt.date.fromisoformat(r["order_date"])
        r["units"] = int(r["units"])
        r["unit_price"] = Decimal(r["unit_price"])
        r["revenue"] = Decimal(r["revenue"])
    return rows


TEMP = re.compile(r"^(-?\d+(?:\.\d+)?)\s*([CF])$")
HUMIDITY = re.compile(r"^(\d+(?:\.\d+)?)\s*%$")
TIME_FORMATS = ("%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%SZ", "%m/%d/%Y %I:%M %p")
TEMP_MISSING = {"", "N/A", "-999"}


def parse_time(text):
    for fmt in TIME_FORMATS:
        try:
            return dt.datetime.strptime(text, fmt)
        except ValueError:
            pass
    raise ValueError(f"sensors.csv: unknown recorded_at format {text!r}")


def celsius(text):
    """'21.4 C' / '21.4C' -> 21.4, '70.5 F' -> 21.39.., sentinels -> None."""
    text = text.strip()
    if text in TEMP_MISSING:
        return None
    m = TEMP.match(text)
    if not m:
        raise ValueError(f"sensors.csv: unknown temperature {text!r}")
    value = Decimal(m.group(1))
    return (value - 32) * 5 / 9 if m.group(2) == "F" else value


@lru_cache(maxsize=None)
def sensors():
    with open(ROOT / "data" / "sensors.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["station_key"] = r["station"].strip().upper()
        r["time"] = parse_time(r["recorded_at"].strip())
        r["celsius"] = celsius(r["temperature"])
        h = r["humidity"].strip()
        if h and not HUMIDITY.match(h):
            raise ValueError(f"sensors.csv: unknown humidity {h!r}")
        r["humidity_pct"] = Decimal(HUMIDITY.match(h).group(1)) if h else None
        r["status_key"] = r["status"].strip().lower()
        r["battery_pct"] = Decimal(r["battery"]) if r["battery"].strip() else None
    return rows


@lru_cache(maxsize=None)
def passengers():
    with open(ROOT / "data" / "passengers.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["survived"] = int(r["Survived"])
        r["pclass"] = int(r["Pclass"])
        r["age"] = Decimal(r["Age"]) if r["Age"].strip() else None
        r["fare"] = Decimal(r["Fare"])
    return rows


def chinook(sql, params=()):
    # Read-only: the user's data is never written.
    uri = (ROOT / "data" / "chinook.sqlite").as_uri() + "?mode=ro"
    with sqlite3.connect(uri, uri=True) as con:
        return con.execute(sql, params).fetchall()


# ---------------------------------------------------------------- arithmetic


def money(d):
    """Decimal -> float with exactly two decimals (exact sums print as 1234.5, not 1234.4999)."""
    return float(Decimal(d).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def real(d):
    """Full-precision values are stored to 6 decimals; tolerances cover the asked rounding."""
    return float(Decimal(d).quantize(Decimal("0.000001"), rounding=ROUND_HALF_UP))


def mean(values):
    values = list(values)
    return sum(values, Decimal(0)) / len(values)


def pct(part, whole):
    return Decimal(part) * 100 / Decimal(whole)


def pearson(xs, ys):
    xs, ys = [Decimal(x) for x in xs], [Decimal(y) for y in ys]
    mx, my = mean(xs), mean(ys)
    sxy = sum(((x - mx) * (y - my) for x, y in zip(xs, ys)), Decimal(0))
    sxx = sum(((x - mx) ** 2 for x in xs), Decimal(0))
    syy = sum(((y - my) ** 2 for y in ys), Decimal(0))
    return sxy / (sxx * syy).sqrt()


def ranked(totals):
    """(key, total) pairs, highest first; a tie at the top makes the question ambiguous."""
    order = sorted(totals.items(), key=lambda kv: kv[1], reverse=True)
    if len(order) > 1 and order[0][1] == order[1][1]:
        raise ValueError(f"tie at the top: {order[:2]}")
    return order


def group_sum(rows, key, value):
    out = {}
    for r in rows:
        out[key(r)] = out.get(key(r), Decimal(0)) + value(r)
    return out


def values(*v):
    return {"values": list(v)}


def month_names(ym):
    """'2025-12' -> the ways an answer may name that month."""
    d = dt.date.fromisoformat(ym + "-01")
    return [ym, d.strftime("%B %Y"), d.strftime("%b %Y")]


def date_names(d):
    return [d.isoformat(), f"{d:%B} {d.day}, {d.year}", f"{d.day} {d:%B} {d.year}", f"{d:%m/%d/%Y}"]


def year_rows(year):
    return [r for r in sales() if r["date"].year == year]


def usable_temps():
    return [r for r in sensors() if r["celsius"] is not None]
