#!/usr/bin/env python3
"""Reference answers of the task suite (tasks/suite.json) -> tasks/truth.json.

An independent implementation: Python's standard library only (csv, sqlite3, decimal,
datetime), no DuckDB and no quarry code, so a bug in quarry's engine cannot hide in its own
grading. One function per task id, computing its truth from the raw files under data/.
Money is summed in Decimal so sums are exact to the cent. Loading, the cleaning rules and
the arithmetic live in scripts/ground_truth_data.py.

  python3 scripts/ground_truth.py             write tasks/truth.json
  python3 scripts/ground_truth.py --check     recompute, compare with the committed file
  python3 scripts/ground_truth.py --validate  check suite.json's shape and counts

Exit 0 when all is well, 1 with a message naming the problem otherwise.
"""
import datetime as dt
import json
import re
import sqlite3
import sys
from decimal import Decimal

from ground_truth_data import (ROOT, TEMP, chinook, date_names, group_sum, mean, money,
                               month_names, passengers, pct, pearson, ranked, real, sales,
                               sensors, usable_temps, values, year_rows)
SUITE = ROOT / "tasks" / "suite.json"
TRUTH = ROOT / "tasks" / "truth.json"

TASKS = {}


def task(fn):
    TASKS[fn.__name__] = fn
    return fn


# ---------------------------------------------------------------- sales.csv


@task
def sales_revenue_2025():
    return values(money(sum(r["revenue"] for r in year_rows(2025))))


@task
def sales_orders_2024():
    return values(len(year_rows(2024)))


@task
def sales_north_revenue():
    return values(money(sum(r["revenue"] for r in sales() if r["region"] == "North")))


@task
def sales_electronics_units():
    return values(sum(r["units"] for r in sales() if r["category"] == "Electronics"))


@task
def sales_avg_order_revenue():
    return values(real(mean(r["revenue"] for r in sales())))


@task
def sales_top_region():
    order = ranked(group_sum(sales(), lambda r: r["region"], lambda r: r["revenue"]))
    # Every other region: "South, not North" must not pass.
    return {"must_contain": [order[0][0]], "must_not_contain": [k for k, _ in order[1:]]}


@task
def sales_revenue_growth():
    y24 = sum(r["revenue"] for r in year_rows(2024))
    y25 = sum(r["revenue"] for r in year_rows(2025))
    return values(real((y25 - y24) * 100 / y24))


@task
def sales_q4_share_2025():
    rows = year_rows(2025)
    q4 = sum(r["revenue"] for r in rows if r["date"].month >= 10)
    return values(real(pct(q4, sum(r["revenue"] for r in rows))))


@task
def sales_weekend_orders():
    return values(sum(1 for r in sales() if r["date"].weekday() >= 5))


@task
def sales_east_furniture_2024():
    return values(money(sum(r["revenue"] for r in year_rows(2024)
                            if r["region"] == "East" and r["category"] == "Furniture")))


@task
def sales_top_category_2025():
    order = ranked(group_sum(year_rows(2025), lambda r: r["category"], lambda r: r["revenue"]))
    return values(money(order[0][1]))


@task
def sales_best_month():
    order = ranked(group_sum(sales(), lambda r: r["order_date"][:7], lambda r: r["revenue"]))
    return {"must_contain": [month_names(order[0][0])], "must_not_contain": month_names(order[1][0])}


@task
def sales_units_price_correlation():
    rows = sales()
    return values(real(pearson([r["units"] for r in rows], [r["unit_price"] for r in rows])))


@task
def sales_monthly_orders_revenue_correlation():
    months = sorted({r["order_date"][:7] for r in sales()})
    orders = group_sum(sales(), lambda r: r["order_date"][:7], lambda r: 1)
    revenue = group_sum(sales(), lambda r: r["order_date"][:7], lambda r: r["revenue"])
    return values(real(pearson([orders[m] for m in months], [revenue[m] for m in months])))


@task
def sales_trend_story():
    y24 = sum(r["revenue"] for r in year_rows(2024))
    y25 = sum(r["revenue"] for r in year_rows(2025))
    monthly = group_sum(sales(), lambda r: r["order_date"][:7], lambda r: r["revenue"])
    quarters = group_sum(sales(), lambda r: f"{r['date'].year}-Q{(r['date'].month - 1) // 3 + 1}",
                         lambda r: r["revenue"])
    best = ranked(monthly)[0]
    outdoor = [r for r in sales() if r["category"] == "Outdoor"]
    summer = sum(r["revenue"] for r in outdoor if r["date"].month in (6, 7, 8))
    return {"facts": [
        f"total revenue 2024: {money(y24)}; 2025: {money(y25)}; growth {real(pct(y25 - y24, y24)):.1f}%",
        "quarterly revenue: " + ", ".join(f"{q} {money(v)}" for q, v in sorted(quarters.items())),
        f"highest month: {best[0]} with {money(best[1])}",
        f"Q4 share of each year's revenue: 2024 {real(pct(quarters['2024-Q4'], y24)):.1f}%, "
        f"2025 {real(pct(quarters['2025-Q4'], y25)):.1f}%",
        f"Outdoor revenue in June-August: {real(pct(summer, sum(r['revenue'] for r in outdoor))):.1f}% "
        "of Outdoor's two-year revenue (3 of 12 months)",
    ]}


# ---------------------------------------------------------------- sensors.csv


@task
def sensors_st01_readings():
    return values(sum(1 for r in sensors() if r["station_key"] == "ST-01"))


@task
def sensors_missing_temperature():
    return values(sum(1 for r in sensors() if r["celsius"] is None))


@task
def sensors_fault_readings():
    return values(sum(1 for r in sensors() if r["status_key"] == "fault"))


@task
def sensors_missing_battery():
    return values(sum(1 for r in sensors() if r["battery_pct"] is None))


@task
def sensors_avg_temperature():
    return values(real(mean(r["celsius"] for r in usable_temps())))


@task
def sensors_avg_humidity():
    return values(real(mean(r["humidity_pct"] for r in sensors() if r["humidity_pct"] is not None)))


@task
def sensors_usable_readings_march_5():
    return values(sum(1 for r in usable_temps() if r["time"].date() == dt.date(2025, 3, 5)))


@task
def sensors_hottest_station():
    rows = usable_temps()
    sums = group_sum(rows, lambda r: r["station_key"], lambda r: r["celsius"])
    counts = group_sum(rows, lambda r: r["station_key"], lambda r: 1)
    order = ranked({k: sums[k] / counts[k] for k in sums})
    return {"must_contain": [order[0][0]], "must_not_contain": [k for k, _ in order[1:]]}


@task
def sensors_temp_humidity_correlation():
    rows = [r for r in usable_temps() if r["humidity_pct"] is not None]
    return values(real(pearson([r["celsius"] for r in rows], [r["humidity_pct"] for r in rows])))


@task
def sensors_peak_daily_average():
    rows = usable_temps()
    sums = group_sum(rows, lambda r: r["time"].date(), lambda r: r["celsius"])
    counts = group_sum(rows, lambda r: r["time"].date(), lambda r: 1)
    return values(real(ranked({d: sums[d] / counts[d] for d in sums})[0][1]))


@task
def sensors_ok_avg_temperature():
    return values(real(mean(r["celsius"] for r in usable_temps() if r["status_key"] == "ok")))


@task
def sensors_hottest_reading_date():
    rows = sorted(usable_temps(), key=lambda r: r["celsius"], reverse=True)
    if rows[0]["celsius"] == rows[1]["celsius"] and rows[0]["time"].date() != rows[1]["time"].date():
        raise ValueError("sensors_hottest_reading_date: the top temperature is tied across dates")
    top = rows[0]["time"].date()
    runner_up = next(r["time"].date() for r in rows if r["time"].date() != top)
    return {"must_contain": [date_names(top)], "must_not_contain": date_names(runner_up)}


@task
def sensors_quality_story():
    rows = sensors()
    raw = [r["temperature"].strip() for r in rows]
    naive = [Decimal(TEMP.match(t).group(1)) if TEMP.match(t) else Decimal(t)
             for t in raw if t not in ("", "N/A")]
    cased = len({r["station"] for r in rows}) - len({r["station_key"] for r in rows})
    formats = {}
    for r in rows:
        text = r["recorded_at"].strip()
        kind = "T..Z" if text.endswith("Z") else "slash" if "/" in text else "space"
        formats[kind] = formats.get(kind, 0) + 1
    return {"facts": [
        f"{len(rows)} readings; {len({r['station_key'] for r in rows})} stations written in "
        f"{len({r['station'] for r in rows})} spellings that differ only by case ({cased} extra)",
        f"temperature: {sum(t == '-999' for t in raw)} are the sentinel -999, "
        f"{sum(t == 'N/A' for t in raw)} are N/A, {sum(t == '' for t in raw)} are empty; "
        f"{sum(t.endswith('F') for t in raw)} are in Fahrenheit",
        f"average temperature cleaned (Fahrenheit converted, sentinels excluded): "
        f"{real(mean(r['celsius'] for r in usable_temps())):.2f} C over {len(usable_temps())} readings",
        f"average if -999 is kept as a number and Fahrenheit read as Celsius: {real(mean(naive)):.2f}",
        f"recorded_at formats: {formats.get('space', 0)} 'YYYY-MM-DD HH:MM:SS', "
        f"{formats.get('T..Z', 0)} ISO with Z, {formats.get('slash', 0)} 'MM/DD/YYYY h:mm AM/PM'",
        f"status in mixed case: {len({r['status'] for r in rows})} spellings of "
        f"{len({r['status_key'] for r in rows})} values; humidity empty in "
        f"{sum(r['humidity_pct'] is None for r in rows)} readings, battery in "
        f"{sum(r['battery_pct'] is None for r in rows)}",
    ]}


# ---------------------------------------------------------------- passengers.csv


@task
def passengers_survival_rate():
    rows = passengers()
    return values(real(pct(sum(r["survived"] for r in rows), len(rows))))


@task
def passengers_missing_age():
    return values(sum(1 for r in passengers() if r["age"] is None))


@task
def passengers_avg_age():
    return values(real(mean(r["age"] for r in passengers() if r["age"] is not None)))


@task
def passengers_female_survival():
    rows = [r for r in passengers() if r["Sex"] == "female"]
    return values(real(pct(sum(r["survived"] for r in rows), len(rows))))


@task
def passengers_class_fares():
    return values(*(real(mean(r["fare"] for r in passengers() if r["pclass"] == c)) for c in (1, 2, 3)))


@task
def passengers_age_fare_correlation():
    rows = [r for r in passengers() if r["age"] is not None]
    return values(real(pearson([r["age"] for r in rows], [r["fare"] for r in rows])))


@task
def passengers_survival_story():
    rows = passengers()

    def rate(pred):
        group = [r for r in rows if pred(r)]
        return f"{real(pct(sum(r['survived'] for r in group), len(group))):.1f}% of {len(group)}"

    facts = [f"overall survival {rate(lambda r: True)}"]
    facts += [f"{s} survival {rate(lambda r, s=s: r['Sex'] == s)}" for s in ("female", "male")]
    facts += [f"class {c} survival {rate(lambda r, c=c: r['pclass'] == c)}" for c in (1, 2, 3)]
    facts += [f"{s}, class {c}: survival {rate(lambda r, s=s, c=c: r['Sex'] == s and r['pclass'] == c)}"
              for s in ("female", "male") for c in (1, 2, 3)]
    return {"facts": facts}


# ---------------------------------------------------------------- chinook.sqlite


@task
def chinook_total_invoiced():
    return values(money(sum(Decimal(str(t)) for (t,) in chinook("SELECT Total FROM Invoice"))))


@task
def chinook_customers_without_company():
    return values(chinook("SELECT count(*) FROM Customer WHERE Company IS NULL")[0][0])


@task
def chinook_top_country():
    totals = {}
    for country, total in chinook("SELECT BillingCountry, Total FROM Invoice"):
        totals[country] = totals.get(country, Decimal(0)) + Decimal(str(total))
    order = ranked(totals)
    synonyms = {"USA": ["USA", "United States"]}
    return {"must_contain": [synonyms.get(order[0][0], [order[0][0]])],
            "must_not_contain": synonyms.get(order[1][0], [order[1][0]])}


def line_revenue(where, params=()):
    rows = chinook("SELECT il.UnitPrice, il.Quantity FROM InvoiceLine il "
                   "JOIN Invoice i ON i.InvoiceId = il.InvoiceId "
                   "JOIN Track t ON t.TrackId = il.TrackId "
                   "JOIN Genre g ON g.GenreId = t.GenreId WHERE " + where, params)
    return sum((Decimal(str(p)) * q for p, q in rows), Decimal(0))


@task
def chinook_rock_revenue():
    return values(money(line_revenue("g.Name = ?", ("Rock",))))


@task
def chinook_artist_most_albums():
    counts = dict(chinook("SELECT ar.Name, count(*) FROM Album al "
                          "JOIN Artist ar ON ar.ArtistId = al.ArtistId GROUP BY ar.ArtistId"))
    order = ranked(counts)
    return {"must_contain": [order[0][0]], "must_not_contain": [order[1][0]]}


@task
def chinook_tracks_never_sold():
    return values(chinook("SELECT count(*) FROM Track t WHERE NOT EXISTS "
                          "(SELECT 1 FROM InvoiceLine il WHERE il.TrackId = t.TrackId)")[0][0])


@task
def chinook_metal_revenue_2024():
    return values(money(line_revenue("g.Name = ? AND substr(i.InvoiceDate, 1, 4) = ?",
                                     ("Metal", "2024"))))


@task
def chinook_top_support_rep():
    totals = {}
    for first, last, total in chinook(
            "SELECT e.FirstName, e.LastName, i.Total FROM Invoice i "
            "JOIN Customer c ON c.CustomerId = i.CustomerId "
            "JOIN Employee e ON e.EmployeeId = c.SupportRepId"):
        name = f"{first} {last}"
        totals[name] = totals.get(name, Decimal(0)) + Decimal(str(total))
    order = ranked(totals)
    return {"must_contain": [order[0][0].split()[-1]], "must_not_contain": [order[1][0]]}


# ---------------------------------------------------------------- suite checks and output

GRADERS = {"numeric": 33, "predicate": 7, "judge": 3}
DIFFICULTY = {"easy": 15, "medium": 17, "hard": 11}
TAGS = ["aggregation", "group-by", "filters", "time-series", "correlation", "nulls",
        "type-coercion", "messy-columns", "joins"]


def load_suite():
    try:
        tasks = json.loads(SUITE.read_text(encoding="utf-8"))["tasks"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.exit(f"ground_truth: cannot read {SUITE.relative_to(ROOT)}: {e}")
    if not isinstance(tasks, list) or not all(isinstance(t, dict) and "id" in t for t in tasks):
        sys.exit(f"ground_truth: {SUITE.relative_to(ROOT)}: \"tasks\" must be a list of objects "
                 "with an \"id\" each (see tasks/README.md)")
    return tasks


def pairing_problems(tasks):
    ids = [t.get("id") for t in tasks]
    out = [f"task {i!r} in suite.json has no function in scripts/ground_truth.py"
           for i in ids if i not in TASKS]
    out += [f"function {name}() has no task in suite.json" for name in TASKS if name not in ids]
    return out


def compute(tasks):
    out = {}
    for t in tasks:
        try:
            out[t["id"]] = TASKS[t["id"]]()
        except (OSError, ValueError, ArithmeticError, sqlite3.Error) as e:
            # A changed data file (a new temperature form, a tie at the top) must stop the
            # script with the task's name, not write a wrong truth.
            sys.exit(f"ground_truth: task {t['id']}: {e}")
    return {"generated_by": "scripts/ground_truth.py", "tasks": out}


def dump(truth):
    return json.dumps(truth, indent=2, ensure_ascii=False) + "\n"


def judge_turns_ok(turns):
    if not isinstance(turns, list) or len(turns) != 3:
        return False
    for turn in turns:
        try:
            verdict = json.loads(turn["content"])
        except (TypeError, KeyError, ValueError):
            return False
        if (not isinstance(verdict, dict) or set(verdict) != {"verdict", "reason"}
                or verdict["verdict"] not in ("pass", "fail") or not isinstance(verdict["reason"], str)):
            return False
    return True


def validate(tasks):
    problems = pairing_problems(tasks)
    if len(tasks) < 43:
        problems.append(f"{len(tasks)} tasks; the suite needs at least 43")
    ids = [t.get("id", "") for t in tasks]
    problems += [f"duplicate task id {i!r}" for i in sorted(set(ids)) if ids.count(i) > 1]
    for want, field in ((GRADERS, "grader"), (DIFFICULTY, "difficulty")):
        got = {k: sum(t.get(field) == k for t in tasks) for k in want}
        if got != want or sum(got.values()) != len(tasks):
            problems.append(f"{field} counts {got} (of {len(tasks)} tasks); expected {want}")
    for tag in TAGS:
        if sum(tag in t.get("tags", []) for t in tasks) < 3:
            problems.append(f"tag {tag!r} is on fewer than 3 tasks")
    truth = json.loads(TRUTH.read_text(encoding="utf-8"))["tasks"] if TRUTH.exists() else {}
    for t in tasks:
        tid = t.get("id", "")
        if not re.fullmatch(r"[a-z0-9_]+", tid):
            problems.append(f"task id {tid!r} is not [a-z0-9_]+")
        if not t.get("question", "").strip():
            problems.append(f"{tid}: empty question")
        problems += [f"{tid}: unknown tag {x!r}" for x in t.get("tags", []) if x not in TAGS]
        if not t.get("tags"):
            problems.append(f"{tid}: no tags")
        if not t.get("data"):
            problems.append(f"{tid}: no data files")
        problems += [f"{tid}: data file {p} does not exist" for p in t.get("data", [])
                     if not (ROOT / p).is_file()]
        grader, entry = t.get("grader"), truth.get(tid)
        tol = t.get("tolerance")
        if grader == "numeric" and not (isinstance(tol, dict) and len(tol) == 1
                                        and set(tol) <= {"abs", "rel"}):
            problems.append(f"{tid}: numeric task needs tolerance {{\"abs\": x}} or {{\"rel\": r}}")
        if grader == "judge" and not t.get("rubric", "").strip():
            problems.append(f"{tid}: judge task needs a rubric")
        key = {"numeric": "values", "predicate": "must_contain", "judge": "facts"}.get(grader)
        if entry is None or key is None or not entry.get(key):
            problems.append(f"{tid}: tasks/truth.json has no {key or 'truth'} for this task")
        fixture = ROOT / "tasks" / "fixtures" / f"{tid}.json"
        if fixture.exists():
            doc = json.loads(fixture.read_text(encoding="utf-8"))
            if doc.get("question") != t.get("question") or doc.get("data") != t.get("data"):
                problems.append(f"{fixture.relative_to(ROOT)}: question/data differ from the task's")
            if doc.get("source") != "scripted":
                problems.append(f"{fixture.relative_to(ROOT)}: not labelled \"source\": \"scripted\"")
            if doc.get("expected_grade") not in ("pass", "fail"):
                problems.append(f"{fixture.relative_to(ROOT)}: expected_grade must be pass or fail")
            if grader == "judge" and not judge_turns_ok(doc.get("judge_turns")):
                problems.append(f"{fixture.relative_to(ROOT)}: a judge task's fixture needs three "
                                'judge_turns whose content is {"verdict": "pass"|"fail", "reason": "..."}')
    return problems


def main(argv):
    mode = argv[1] if len(argv) > 1 else ""
    if mode not in ("", "--check", "--validate") or len(argv) > 2:
        sys.exit("usage: python3 scripts/ground_truth.py [--check | --validate]")
    tasks = load_suite()
    if mode == "--validate":
        problems = validate(tasks)
        for p in problems:
            print(f"ground_truth --validate: {p}", file=sys.stderr)
        if not problems:
            print(f"ground_truth --validate: {len(tasks)} tasks OK")
        return 1 if problems else 0
    problems = pairing_problems(tasks)
    if problems:
        for p in problems:
            print(f"ground_truth: {p}", file=sys.stderr)
        return 1
    truth = compute(tasks)
    if mode == "":
        TRUTH.write_text(dump(truth), encoding="utf-8")
        print(f"ground_truth: wrote {TRUTH.relative_to(ROOT)} ({len(tasks)} tasks)")
        return 0
    try:
        committed = json.loads(TRUTH.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        print(f"ground_truth --check: cannot read {TRUTH.relative_to(ROOT)}: {e}; "
              "run python3 scripts/ground_truth.py", file=sys.stderr)
        return 1
    old = committed.get("tasks", {}) if isinstance(committed, dict) else {}
    differing = [tid for tid in truth["tasks"] if old.get(tid) != truth["tasks"][tid]]
    differing += [tid for tid in old if tid not in truth["tasks"]]
    for tid in differing:
        print(f"ground_truth --check: {tid}: committed {json.dumps(old.get(tid))} "
              f"!= recomputed {json.dumps(truth['tasks'].get(tid))}", file=sys.stderr)
    if not differing and TRUTH.read_text(encoding="utf-8") != dump(truth):
        print("ground_truth --check: tasks/truth.json differs in order or header; "
              "regenerate it with python3 scripts/ground_truth.py", file=sys.stderr)
        return 1
    if differing:
        print(f"ground_truth --check: {len(differing)} task(s) differ; if the data or a task "
              "changed on purpose, regenerate with python3 scripts/ground_truth.py", file=sys.stderr)
        return 1
    print(f"ground_truth --check: {len(truth['tasks'])} tasks match tasks/truth.json")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
