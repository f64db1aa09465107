"""Writes the property lists in this folder with Python's plistlib (an independent writer), so the readers are
tested against files they did not produce.  Run: python3 generate.py  (Python 3.11; the output is committed)."""
import datetime, plistlib, pathlib

here = pathlib.Path(__file__).parent
utc = datetime.timezone.utc


def write(name, value, fmt):
    (here / name).write_bytes(plistlib.dumps(value, fmt=fmt, sort_keys=False))


layout = {
    "schemaVersion": 1,
    "tabs": [
        {"id": "home", "title": "Accueil \u00e9t\u00e9 \U0001F600", "rootViewController": "HomeViewController",
         "params": {"zoom": 1.5, "count": -3, "flag": True, "blob": b"\x00\x01\xfe\xff", "list": [1, 2, 3]}},
        {"id": "news", "title": "News & <more>", "rootViewController": "NewsViewController", "navigation": False},
    ],
    "x-note": "tab\there\nnewline",
}
for fmt, suffix in ((plistlib.FMT_XML, "xml.plist"), (plistlib.FMT_BINARY, "bplist")):
    write("layout." + suffix, layout, fmt)

# Dates: a fraction of a second (binary keeps it; plistlib's XML writer drops it), and the year 9999.
dates = {"fraction": datetime.datetime(2024, 2, 29, 12, 0, 0, 250000),
         "last": datetime.datetime(9999, 12, 31, 23, 59, 59),
         "first": datetime.datetime(1, 1, 1, 0, 0, 0)}
write("dates.bplist", dates, plistlib.FMT_BINARY)

# Integers at the edges of 64 bits: 2^63-1 and -2^63 fit; 2^63 and 2^64-1 (written as 128-bit integers) do not.
write("int-fits.bplist", {"max": 2**63 - 1, "min": -2**63, "minusOne": -1}, plistlib.FMT_BINARY)
write("int-too-big.bplist", {"big": 2**64 - 1}, plistlib.FMT_BINARY)
write("int-2-63.bplist", {"big": 2**63}, plistlib.FMT_BINARY)
write("int-too-big.xml.plist", {"big": 2**64 - 1}, plistlib.FMT_XML)

# UTF-16 with a byte order mark, both byte orders, with CR LF line ends.
text = plistlib.dumps({"k": "\u00e9\U0001F600"}, fmt=plistlib.FMT_XML).decode("utf-8")
text = text.replace('encoding="UTF-8"', 'encoding="UTF-16"').replace("\n", "\r\n")
(here / "utf16le.xml.plist").write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
(here / "utf16be.xml.plist").write_bytes(b"\xfe\xff" + text.encode("utf-16-be"))
