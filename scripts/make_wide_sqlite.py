#!/usr/bin/env python3
"""Writes a wide SQLite database for testing the schema budget: 300 tables (20 business areas x
15 kinds of record), each with 8 to 14 columns and 12 rows, foreign keys between them, and a
few tables whose words appear nowhere else (billing_invoices, ops_telemetry's nebula_flux).
Deterministic: the same arguments give the same tables and rows.

    python3 scripts/make_wide_sqlite.py OUT.sqlite [--tables 300 (at most 3000)] [--rows 12]
"""
import argparse
import os
import random
import sqlite3
import sys

AREAS = ["billing", "crm", "hr", "inventory", "shipping", "marketing", "support", "finance",
         "legal", "procurement", "facilities", "it", "research", "sales", "training",
         "quality", "payroll", "travel", "events", "ops"]
KINDS = ["customers", "invoices", "invoice_lines", "orders", "payments", "accounts", "contacts",
         "tickets", "assets", "vendors", "contracts", "projects", "tasks", "audits", "telemetry"]
EXTRA_COLUMNS = [("region", "TEXT"), ("priority", "INTEGER"), ("owner", "TEXT"),
                 ("cost_center", "TEXT"), ("score", "REAL"), ("currency", "TEXT"),
                 ("approved", "INTEGER"), ("due_date", "DATE"), ("channel", "TEXT"),
                 ("weight_kg", "REAL"), ("category", "TEXT"), ("quantity", "INTEGER")]
WORDS = ["alpha", "bravo", "delta", "echo", "harbor", "summit", "maple", "cedar", "onyx", "pilot",
         "vector", "lumen", "orbit", "quartz", "zephyr", "ember", "falcon", "garnet"]
REGIONS = ["North", "South", "East", "West", "Central"]
STATUSES = ["open", "closed", "pending", "void"]
MAX_ROUNDS = 10


def table_names(count):
    # Past 300, the areas repeat numbered (billing2_customers, ...), keeping the first 300 as
    # they were.
    names = []
    for round_ in range(1, MAX_ROUNDS + 1):
        suffix = "" if round_ == 1 else str(round_)
        names += [f"{area}{suffix}_{kind}" for area in AREAS for kind in KINDS]
    return names[:count]


def columns_for(name, rng, names):
    area, kind = name.split("_", 1)
    cols = [("id", "INTEGER PRIMARY KEY"), ("name", "TEXT"), ("status", "TEXT"),
            ("created_at", "DATE"), ("amount", "REAL")]
    fks = []
    # Each area's records point at its customers and, for lines, at their invoices.
    if kind != "customers" and f"{area}_customers" in names:
        cols.append(("customer_id", "INTEGER"))
        fks.append(("customer_id", f"{area}_customers" if area != "billing" else "crm_customers"))
    if kind == "invoice_lines" and f"{area}_invoices" in names:
        cols.append(("invoice_id", "INTEGER"))
        fks.append(("invoice_id", f"{area}_invoices"))
    for extra in rng.sample(EXTRA_COLUMNS, rng.randint(2, 6)):
        cols.append(extra)
    if name == "billing_invoices":
        cols += [("invoice_number", "TEXT"), ("total_due", "REAL"), ("paid_on", "DATE")]
    if name == "ops_telemetry":
        cols += [("nebula_flux", "REAL"), ("spectrograph", "TEXT")]
    return cols, fks


def value(col, typ, row, rng, name):
    if col == "id":
        return row
    if col in ("customer_id", "invoice_id"):
        return rng.randint(1, 12)
    if col == "name":
        return f"{rng.choice(WORDS).title()} {name.split('_', 1)[1].rstrip('s').replace('_', ' ')} {row}"
    if col == "status":
        return rng.choice(STATUSES)
    if col == "region":
        return rng.choice(REGIONS)
    if col == "invoice_number":
        return f"INV-{2024000 + row}"
    if col == "spectrograph":
        return rng.choice(["redshift band", "blueshift band", "hydrogen line"])
    if typ == "DATE":
        return f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    if typ == "REAL":
        return round(rng.uniform(1, 5000), 2)
    if typ == "INTEGER":
        return rng.randint(0, 9)
    return f"{rng.choice(WORDS)}-{rng.randint(1, 40)}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--tables", type=int, default=300)
    parser.add_argument("--rows", type=int, default=12)
    args = parser.parse_args()
    if not 1 <= args.tables <= len(AREAS) * len(KINDS) * MAX_ROUNDS:
        sys.exit(f"--tables must be 1 to {len(AREAS) * len(KINDS) * MAX_ROUNDS}")
    if os.path.exists(args.out):
        os.remove(args.out)
    rng = random.Random(20261130)
    names = table_names(args.tables)
    db = sqlite3.connect(args.out)
    for name in names:
        cols, fks = columns_for(name, rng, names)
        ddl = [f'"{c}" {t}' for c, t in cols]
        ddl += [f'FOREIGN KEY ("{c}") REFERENCES "{ref}"("id")' for c, ref in fks]
        db.execute(f'CREATE TABLE "{name}" ({", ".join(ddl)})')
        marks = ", ".join("?" for _ in cols)
        rows = [[value(c, t.split()[0], r, rng, name) for c, t in cols]
                for r in range(1, args.rows + 1)]
        db.executemany(f'INSERT INTO "{name}" VALUES ({marks})', rows)
    db.commit()
    db.close()


if __name__ == "__main__":
    main()
