#!/usr/bin/python3
"""Writes the openpyxl half of the workbook corpus into OUT_DIR (Debian's python3-openpyxl).

openpyxl saves no cached formula results, so its formulas read as 'no saved result'.
  /usr/bin/python3 make_openpyxl.py OUT_DIR
"""
import datetime
import sys

import openpyxl
from openpyxl.utils.datetime import CALENDAR_MAC_1904

out = sys.argv[1]

# Dates, datetimes, booleans, an error, a formula, a total row, a hidden sheet, a chart sheet.
wb = openpyxl.Workbook()
ws = wb.active
ws.title = "Sales"
ws.append(["region", "units", "day", "at", "ok", "price"])
ws.append(["North", 4, datetime.date(2024, 5, 1), datetime.datetime(2024, 5, 1, 9, 30), True, 2.5])
ws.append(["South", 6, datetime.date(2024, 5, 2), datetime.datetime(2024, 5, 2, 17, 0), False, "#N/A"])
ws.append(["East", 5, datetime.date(2024, 2, 29), datetime.datetime(2024, 2, 29, 0, 0, 1), True, 4.25])
ws.append(["Grand total", 15, None, None, None, "=SUM(F2:F4)"])
hidden = wb.create_sheet("Lookup")
hidden.append(["code", "label"])
hidden.append(["A", "alpha"])
hidden.sheet_state = "hidden"
wb.create_chartsheet("Chart")
wb.save(f"{out}/sales.xlsx")

# The 1904 date system (Excel for Mac before 2011).
wb = openpyxl.Workbook()
wb.epoch = CALENDAR_MAC_1904
ws = wb.active
ws.title = "Mac"
ws.append(["day", "amount"])
ws.append([datetime.date(2024, 5, 1), 10])
ws.append([datetime.date(1904, 1, 2), 20])
wb.save(f"{out}/mac1904.xlsx")

# A report: a title block above the header, the data from B4, a merged region label over
# three rows, zip codes stored as text, and an empty row inside the data.
wb = openpyxl.Workbook()
ws = wb.active
ws.title = "Report"
ws["B1"] = "Quarterly report"
ws["B2"] = "generated 2024-05-01"
ws["B4"], ws["C4"], ws["D4"], ws["E4"] = "region", "store", "zip", "sales"
rows = [("North", "N1", "02134", 100), (None, "N2", "02135", 200), (None, "N3", "02136", 300),
        ("South", "S1", "30301", 50)]
for i, (region, store, zipcode, sales) in enumerate(rows):
    r = 5 + i + (1 if i == 3 else 0)  # row 8 is left empty
    if region:
        ws.cell(r, 2, region)
    ws.cell(r, 3, store)
    ws.cell(r, 4, zipcode)
    ws.cell(r, 5, sales)
ws.merge_cells("B5:B7")
wb.save(f"{out}/report.xlsx")

# Many sheets, one of them empty, names that need cleaning.
wb = openpyxl.Workbook()
ws = wb.active
ws.title = "Q1 2024"
ws.append(["k", "v"])
ws.append(["a", 1])
ws2 = wb.create_sheet("Q2.2024")
ws2.append(["k", "v"])
ws2.append(["b", 2])
ws2.append(["c", 3])
wb.create_sheet("Blank")
wb.save(f"{out}/quarters.xlsx")

# From a fresh-user trial: one stray cell far to the right (it made 16,384 columns), a header
# over two rows (group names merged over years), a template sheet of only a header beside the
# data, and date-formatted zeros (a formula over an empty cell saves 0).
wb = openpyxl.Workbook()
ws = wb.active
ws.title = "S"
ws.append(["id", "amt", "code"])
for i in range(100):
    ws.append([i, i * 2.5, "%05d" % i])
ws["XFD50"] = "x"
tpl = wb.create_sheet("Template")
tpl.append(["when", "who", "what"])
wb.save(f"{out}/stray.xlsx")

wb = openpyxl.Workbook()
ws = wb.active
ws.title = "P"
ws.append(["id", "Sales", None, "Cost", None])
ws.append([None, 2023, 2024, 2023, 2024])
ws.append([1, 10, 11, 5, 6])
ws.append([2, 20, 21, 7, 8])
ws.merge_cells("A1:A2")
ws.merge_cells("B1:C1")
ws.merge_cells("D1:E1")
wb.save(f"{out}/twoheader.xlsx")

wb = openpyxl.Workbook()
ws = wb.active
ws.title = "D"
ws.append(["k", "paid"])
for k, v in (("a", datetime.date(2024, 1, 5)), ("b", 0), ("c", datetime.date(2024, 1, 7))):
    ws.append([k, v])
    ws.cell(ws.max_row, 2).number_format = "yyyy-mm-dd"
wb.save(f"{out}/zerodate.xlsx")
