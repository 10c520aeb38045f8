#!/usr/bin/python3
"""Writes hostile and broken workbook packages into OUT_DIR, with Python's zipfile only.

Sizes are patched into the zip headers where a real payload would take minutes to write:
the reader must refuse from the central directory, before it inflates anything.
  /usr/bin/python3 make_hostile.py OUT_DIR
"""
import struct
import sys
import zipfile

out = sys.argv[1]

CONTENT_TYPES = ('<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/'
                 'package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/>'
                 '</Types>')
ROOT_RELS = ('<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/'
             'package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/'
             'officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>')
WORKBOOK = ('<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/'
            'spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/'
            'relationships"><sheets><sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>')


def wb_rels(target="worksheets/sheet1.xml", extra=""):
    return ('<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/'
            'package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/'
            f'officeDocument/2006/relationships/worksheet" Target="{target}"/>{extra}</Relationships>')


SHEET = ('<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/'
         'spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>k</t></is></c>'
         '<c r="B1" t="inlineStr"><is><t>v</t></is></c></row><row r="2"><c r="A2" t="inlineStr"><is>'
         '<t>a</t></is></c><c r="B2"><v>1</v></c></row></sheetData></worksheet>')


def package(path, parts):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in parts:
            z.writestr(name, data)


def base(sheet=SHEET, rels=None):
    return [("[Content_Types].xml", CONTENT_TYPES), ("_rels/.rels", ROOT_RELS),
            ("xl/workbook.xml", WORKBOOK), ("xl/_rels/workbook.xml.rels", rels or wb_rels()),
            ("xl/worksheets/sheet1.xml", sheet)]


def patch_size(path, name, size):
    """Sets the uncompressed size of entry `name` in its local and central headers."""
    data = bytearray(open(path, "rb").read())
    key = name.encode()
    at = 0
    while True:
        at = data.find(key, at + 1)
        if at < 0:
            break
        if data[at - 30:at - 26] == b"PK\x03\x04":
            struct.pack_into("<I", data, at - 30 + 22, size)
        elif data[at - 46:at - 42] == b"PK\x01\x02":
            struct.pack_into("<I", data, at - 46 + 24, size)
    open(path, "wb").write(bytes(data))


# A well-formed control: the hostile cases differ from it in one way each.
package(f"{out}/plain.xlsx", base())
# A 1 GB shared-strings part, as the directory declares it.
package(f"{out}/huge_strings.xlsx", base() + [("xl/sharedStrings.xml", "<sst/>")])
patch_size(f"{out}/huge_strings.xlsx", "xl/sharedStrings.xml", 1 << 30)
# Many parts that together unpack past the package limit (overlapping-file bombs look so).
package(f"{out}/many_parts.xlsx", base() + [(f"xl/media/p{i}.bin", "x") for i in range(8)])
for i in range(8):
    patch_size(f"{out}/many_parts.xlsx", f"xl/media/p{i}.bin", 400 << 20)
# A real deflate bomb: 48 MiB of blanks inside the sheet, packed about 1000 to 1.
blank = " " * (48 << 20)
package(f"{out}/bomb.xlsx", base(sheet=SHEET.replace("<sheetData>", "<sheetData>" + blank)))
# Entry names that climb out of the package, and a relationship that does.
package(f"{out}/climb_entry.xlsx", base() + [("../../evil.txt", "x")])
package(f"{out}/climb_absolute.xlsx", base() + [("/etc/evil.txt", "x")])
package(f"{out}/climb_rel.xlsx", base(rels=wb_rels(target="../../../../etc/passwd")))
# A DTD with nested entities (billion laughs) in the sheet.
laughs = ('<?xml version="1.0"?><!DOCTYPE worksheet [<!ENTITY a "aaaaaaaaaa">'
          + "".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">' for i in range(9))
          + ']><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
            '<row r="1"><c r="A1" t="inlineStr"><is><t>&j;</t></is></c></row></sheetData></worksheet>')
package(f"{out}/laughs.xlsx", base(sheet=laughs))
# Broken packages: not XML, a cell outside Excel's grid, a shared string that is not there,
# a binary workbook, a truncated zip, text with an .xlsx name, a compound file (encrypted).
package(f"{out}/badxml.xlsx", base(sheet="<worksheet><sheetData><row>"))
package(f"{out}/outside.xlsx", base(sheet=SHEET.replace('r="B2"', 'r="XFE2"')))
package(f"{out}/bad_shared.xlsx", base(sheet=SHEET.replace('<c r="B2"><v>1</v>', '<c r="B2" t="s"><v>7</v>')))
package(f"{out}/binary.xlsx", [("[Content_Types].xml", CONTENT_TYPES), ("xl/workbook.bin", "x")])
whole = open(f"{out}/plain.xlsx", "rb").read()
open(f"{out}/truncated.xlsx", "wb").write(whole[: len(whole) // 2])
open(f"{out}/text.xlsx", "w").write("region,units\nNorth,4\n")
open(f"{out}/encrypted.xlsx", "wb").write(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 504)
# Hand-written XML the big writers never produce but the format allows: prefixed names, rows
# and cells without r, a phonetic run, t="d" dates, out-of-order rows, and a formula string.
odd = ('<?xml version="1.0" encoding="UTF-8"?><x:worksheet xmlns:x="http://schemas.openxmlformats.org/'
       'spreadsheetml/2006/main"><x:sheetData>'
       '<x:row r="3"><x:c t="inlineStr"><x:is><x:t>Tokyo</x:t></x:is></x:c><x:c t="d"><x:v>2024-01-03</x:v></x:c>'
       '<x:c t="str"><x:f>A3&amp;"!"</x:f><x:v>Tokyo!</x:v></x:c></x:row>'
       '<x:row r="1"><x:c t="inlineStr"><x:is><x:t>city</x:t></x:is></x:c><x:c t="inlineStr"><x:is><x:t>day</x:t>'
       '</x:is></x:c><x:c t="inlineStr"><x:is><x:t>shout</x:t></x:is></x:c></x:row>'
       '<x:row><x:c t="inlineStr"><x:is><x:r><x:t>Ky</x:t></x:r><x:r><x:t>oto</x:t></x:r><x:rPh sb="0" eb="1">'
       '<x:t>キョウト</x:t></x:rPh></x:is></x:c><x:c t="d"><x:v>2024-01-04</x:v></x:c><x:c t="str"><x:f>A4</x:f>'
       '</x:c></x:row></x:sheetData></x:worksheet>')
package(f"{out}/odd.xlsx", base(sheet=odd))

# From a fresh-user trial: escaped characters (_x000D_ is a carriage return, _x005F_ an
# underscore), a formula whose saved result is an empty string (<v></v>, Excel's IF(x,"",...)),
# overlapping, reversed and invalid merges, and a part given twice.
escaped = ('<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/'
           'spreadsheetml/2006/main"><sheetData>'
           '<row r="1"><c r="A1" t="inlineStr"><is><t>note</t></is></c><c r="B1" t="inlineStr"><is><t>f</t></is></c></row>'
           '<row r="2"><c r="A2" t="inlineStr"><is><t>line1_x000D__x000A_line2</t></is></c>'
           '<c r="B2" t="str"><f>IF(1,"","x")</f><v></v></c></row>'
           '<row r="3"><c r="A3" t="inlineStr"><is><t>_x005F_x000D_ literal</t></is></c>'
           '<c r="B3" t="str"><f>A3</f><v>y</v></c></row>'
           '</sheetData><mergeCells count="3"><mergeCell ref="A2:B3"/><mergeCell ref="B3:A2"/>'
           '<mergeCell ref="garbage"/></mergeCells></worksheet>')
package(f"{out}/escaped.xlsx", base(sheet=escaped))
import warnings
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # zipfile warns of the duplicate name, which is the point
    package(f"{out}/duplicate.xlsx", base() + [("xl/worksheets/sheet1.xml", SHEET.replace("<v>1</v>", "<v>666</v>"))])
