// Writes the SheetJS half of the workbook corpus into OUT_DIR (npm xlsx, an independent
// writer): cached formula results, error cells, the 1904 date system, and a 100,000-row sheet.
//   node make_sheetjs.cjs OUT_DIR [small|big]   (small: every book but the big one; default both)
process.env.TZ = "UTC";  // dates become serials in local time: keep them exact
const XLSX = require("xlsx");
const out = process.argv[2];
const which = process.argv[3] || "both";
const small = which !== "big", big = which !== "small";

// Formulas with cached values, error cells (#N/A is 0x2A, #DIV/0! is 0x07), booleans, dates.
if (small) {
  const ws = XLSX.utils.aoa_to_sheet([
    ["item", "qty", "price", "amount", "paid", "due"],
    ["bolt", 10, 0.25, null, true, new Date(Date.UTC(2023, 11, 31))],
    ["nut", 20, 0.1, null, false, new Date(Date.UTC(2024, 0, 15))],
    ["gear", 0, 3, null, true, new Date(Date.UTC(2024, 1, 29))],
  ], { cellDates: true });
  ws["D2"] = { t: "n", v: 2.5, f: "B2*C2" };
  ws["D3"] = { t: "n", v: 2, f: "B3*C3" };
  ws["D4"] = { t: "e", v: 0x07, f: "C4/B4" };
  ws["G1"] = { t: "s", v: "lookup" };
  ws["G2"] = { t: "e", v: 0x2a };
  ws["G3"] = { t: "e", v: 0x2a };
  ws["G4"] = { t: "s", v: "found" };
  ws["!ref"] = "A1:G4";
  const wb = XLSX.utils.book_new();
  XLSX.utils.book_append_sheet(wb, ws, "Orders");
  XLSX.writeFile(wb, `${out}/orders.xlsx`, { cellDates: false });
}

// The 1904 date system, from a second writer.
if (small) {
  // 43951 is 2024-05-01 counted from 1904-01-01 (45413 from 1900): SheetJS would write the
  // 1900 serial of a Date object, so the serial is given as a number with a date format.
  const ws = XLSX.utils.aoa_to_sheet([["day", "n"], [null, 1]]);
  ws["A2"] = { t: "n", v: 43951, z: "yyyy-mm-dd" };
  const wb = XLSX.utils.book_new();
  wb.Workbook = { WBProps: { date1904: true } };
  XLSX.utils.book_append_sheet(wb, ws, "Mac");
  XLSX.writeFile(wb, `${out}/sheetjs1904.xlsx`);
}

// 100,000 rows: id, a group label, an amount with cents, a date.
if (big) {
  const rows = [["id", "grp", "amount", "day"]];
  const base = Date.UTC(2020, 0, 1);
  for (let i = 1; i <= 100000; i++) {
    rows.push([i, "g" + (i % 7), (i % 1000) / 100, new Date(base + (i % 1461) * 86400000)]);
  }
  const ws = XLSX.utils.aoa_to_sheet(rows, { cellDates: true });
  const wb = XLSX.utils.book_new();
  XLSX.utils.book_append_sheet(wb, ws, "Big");
  XLSX.writeFile(wb, `${out}/big.xlsx`, { compression: true });
}

// A table as .xls (BIFF8), for FreeXL. 300 rows: FreeXL 1.0.6 cannot read a workbook stream
// small enough for the compound file's mini stream, which Excel never writes but SheetJS does.
if (small) {
  const rows = [["city", "pop", "founded"], ["Lyon", 522250, new Date(Date.UTC(1900, 2, 1))],
                ["Nice", 342669, new Date(Date.UTC(1950, 5, 15))]];
  for (let i = 3; i <= 300; i++) rows.push(["town" + i, i * 1000, new Date(Date.UTC(1970, 0, i))]);
  const ws = XLSX.utils.aoa_to_sheet(rows, { cellDates: true });
  const wb = XLSX.utils.book_new();
  XLSX.utils.book_append_sheet(wb, ws, "Cities");
  XLSX.writeFile(wb, `${out}/cities.xls`, { bookType: "biff8" });
}
