"""The sqlite3 peer of bench/load_bench.py: the CSV imported with the csv module and executemany
into an in-memory database (what python's standard library offers), then the five analyst
questions in SQLite's dialect. Run as its own process so its wall time and peak RSS are measured
from outside.

  python3 sqlite_peer.py FILE.csv

Prints one JSON object: {"import_seconds", "queries": [{"name", "seconds", "columns", "rows"}]};
cells are text (floats with repr's full precision).
"""
import csv
import json
import sqlite3
import sys
import time

QUESTIONS = [
    ("revenue_by_region",
     "SELECT region, sum(revenue) AS revenue FROM sales GROUP BY region ORDER BY region"),
    ("monthly_revenue",
     "SELECT strftime('%Y-%m-01', order_date) AS month, sum(revenue) AS revenue FROM sales "
     "GROUP BY month ORDER BY month"),
    ("top_products",
     "SELECT product, sum(revenue) AS revenue FROM sales GROUP BY product "
     "ORDER BY revenue DESC, product LIMIT 10"),
    ("customers_by_category",
     "SELECT category, count(DISTINCT customer_id) AS customers FROM sales GROUP BY category "
     "ORDER BY category"),
    ("avg_order_by_region_category",
     "SELECT region, category, avg(revenue) AS avg_order_value, avg(quantity) AS avg_quantity "
     "FROM sales GROUP BY region, category ORDER BY region, category"),
]


def cell(value):
    if value is None:
        return None
    return repr(value) if isinstance(value, float) else str(value)


def main():
    path = sys.argv[1]
    out = {"queries": []}
    start = time.perf_counter()
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE sales (order_id INTEGER, order_date TEXT, region TEXT, product TEXT, "
               "category TEXT, customer_id INTEGER, quantity INTEGER, revenue REAL)")
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        next(reader)  # the header
        # Column affinity turns the csv module's strings into INTEGER and REAL values.
        db.executemany("INSERT INTO sales VALUES (?, ?, ?, ?, ?, ?, ?, ?)", reader)
    db.commit()
    out["import_seconds"] = time.perf_counter() - start
    for name, sql in QUESTIONS:
        start = time.perf_counter()
        cursor = db.execute(sql)
        rows = [[cell(v) for v in row] for row in cursor.fetchall()]
        out["queries"].append({"name": name, "seconds": time.perf_counter() - start,
                               "columns": [d[0] for d in cursor.description], "rows": rows})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
