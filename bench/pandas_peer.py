"""The pandas peer of bench/load_bench.py: read_csv, then the five analyst questions as an analyst
would write them in pandas. Run as its own process so its wall time and peak RSS are measured
from outside, like quarry's.

  python3 pandas_peer.py sales FILE.csv     read + the five group-bys
  python3 pandas_peer.py read FILE.csv      read_csv only (the wide-file peer)

Prints one JSON object: {"import_seconds", "read_seconds", "queries": [{"name", "seconds",
"columns", "rows"}], "shape"}; cells are text (floats with repr's full precision).
"""
import json
import sys
import time

_start = time.perf_counter()
import pandas as pd  # noqa: E402  (the import is timed)

IMPORT_SECONDS = time.perf_counter() - _start


def cell(value):
    if value is None or (isinstance(value, float) and value != value):
        return None
    if hasattr(value, "item"):  # numpy scalars
        value = value.item()
    if isinstance(value, float):
        return repr(value)
    return str(value)


def table(frame):
    frame = frame.reset_index()
    return list(map(str, frame.columns)), [[cell(v) for v in row] for row in frame.itertuples(index=False)]


def revenue_by_region(df):
    return df.groupby("region")["revenue"].sum()


def monthly_revenue(df):
    monthly = df.groupby(df["order_date"].dt.to_period("M"))["revenue"].sum()
    monthly.index = monthly.index.to_timestamp().strftime("%Y-%m-%d")
    return monthly.rename_axis("month")


def top_products(df):
    totals = df.groupby("product")["revenue"].sum().reset_index()
    return totals.sort_values(["revenue", "product"], ascending=[False, True]).head(10).set_index("product")


def customers_by_category(df):
    return df.groupby("category")["customer_id"].nunique().rename("customers")


def avg_order_by_region_category(df):
    return df.groupby(["region", "category"]).agg(
        avg_order_value=("revenue", "mean"), avg_quantity=("quantity", "mean"))


QUESTIONS = [revenue_by_region, monthly_revenue, top_products, customers_by_category,
             avg_order_by_region_category]


def main():
    mode, path = sys.argv[1], sys.argv[2]
    out = {"import_seconds": IMPORT_SECONDS, "queries": []}
    start = time.perf_counter()
    if mode == "read":
        df = pd.read_csv(path)
        out["read_seconds"] = time.perf_counter() - start
        out["shape"] = list(df.shape)
    else:
        df = pd.read_csv(path, parse_dates=["order_date"])
        out["read_seconds"] = time.perf_counter() - start
        out["shape"] = list(df.shape)
        for question in QUESTIONS:
            start = time.perf_counter()
            result = question(df)
            seconds = time.perf_counter() - start
            columns, rows = table(result)
            out["queries"].append({"name": question.__name__, "seconds": seconds,
                                   "columns": columns, "rows": rows})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
