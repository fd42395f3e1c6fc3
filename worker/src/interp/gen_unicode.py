# Generates the tables of worker/src/interp/unicode.rs (the file
# worker/src/interp/unicode_tables.rs) from CPython 3.11's own unicodedata,
# so str predicates, repr escapes and case mappings match CPython exactly:
#     python3.11 worker/src/interp/gen_unicode.py worker/src/interp/unicode_tables.rs
# The functions over the tables are hand-written, in unicode.rs.
import sys, unicodedata
assert sys.version_info[:2] == (3, 11), sys.version
F = dict(PRINT=1, ALPHA=2, DECIMAL=4, DIGIT=8, NUMERIC=16, SPACE=32, LOWER=64, UPPER=128, TITLE=256, CASED=512, XID_START=1024, XID_CONT=2048, CASE_IGNORABLE=4096)
# Case_Ignorable, read off CPython's own final-sigma rule in str.lower():
# a case-ignorable X is skipped when looking back from a capital sigma.
def case_ignorable(ch):
    return (' ' + ch + '\u03a3').lower()[-1] == '\u03c3' and ('A' + ch + '\u03a3').lower()[-1] == '\u03c2'
def flags(c):
    ch = chr(c); f = 0
    if ch.isprintable(): f |= F['PRINT']
    if ch.isalpha(): f |= F['ALPHA']
    if ch.isdecimal(): f |= F['DECIMAL']
    if ch.isdigit(): f |= F['DIGIT']
    if ch.isnumeric(): f |= F['NUMERIC']
    if ch.isspace(): f |= F['SPACE']
    if ch.islower(): f |= F['LOWER']
    if ch.isupper(): f |= F['UPPER']
    if unicodedata.category(ch) == 'Lt': f |= F['TITLE']
    if ch.islower() or ch.isupper() or unicodedata.category(ch) == 'Lt' or ch.lower() != ch or ch.upper() != ch: f |= F['CASED']
    if ch.isidentifier(): f |= F['XID_START']
    if ('a' + ch).isidentifier(): f |= F['XID_CONT']
    if case_ignorable(ch): f |= F['CASE_IGNORABLE']
    return f
runs = []
prev = None
for c in range(0x110000):
    f = flags(c)
    if f != prev:
        runs.append((c, f)); prev = f
title = [(c, chr(c).title()) for c in range(0x110000) if chr(c).title() != chr(c).upper()]
upper = [(c, chr(c).upper()) for c in range(128, 0x110000) if chr(c).upper() != chr(c)]
lower = [(c, chr(c).lower()) for c in range(128, 0x110000) if chr(c).lower() != chr(c)]
# Case folds that differ from the lower-case mapping: most are listed; those
# equal to the upper-case mapping (the Cherokee letters) are ranges.
fold = []
fold_upper = []
for c in range(0x110000):
    ch = chr(c)
    if ch.casefold() == ch.lower():
        continue
    if ch.casefold() != ch.upper():
        fold.append((c, ch.casefold()))
    elif fold_upper and fold_upper[-1][1] == c - 1:
        fold_upper[-1][1] = c
    else:
        fold_upper.append([c, c])
dec0 = [c for c in range(0x110000) if unicodedata.decimal(chr(c), None) == 0]
for c in dec0:
    for k in range(10):
        assert unicodedata.decimal(chr(c + k), None) == k


def packed(items, per_line, indent="    "):
    """Array entries, `per_line` to a line."""
    return [indent + " ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]


def chars(s):
    """A mapping as three chars, NUL-padded: no pointer in the table, so it
    needs no relocation when the binary starts (see `unicode.rs`)."""
    assert 1 <= len(s) <= 3 and "\0" not in s, s
    return "[" + ", ".join("'\\u{%x}'" % ord(x) for x in s) + ", '\\0'" * (3 - len(s)) + "]"


def strmap(table):
    return [f"({c:#x}, {chars(t)})," for c, t in table]


# (doc, declaration, entries, entries per line). Tables of one shape are
# kept apart, so that their ends never line up.
TABLES = [
    ("Runs of code points sharing the same flags: (first code point, flags).",
     "RUNS: [(u32, u16)", [f"({c:#x}, {f})," for c, f in runs], 8),
    ("Title-case mappings that differ from the upper-case mapping.",
     "TITLE_MAP: [(u32, [char; 3])", strmap(title), 4),
    ("First code point (value 0) of each run of ten decimal digits.",
     "DECIMAL0: [u32", [f"{c:#x}," for c in dec0], 10),
    ("Full upper-case mappings of non-ASCII code points that have one.",
     "UPPER_MAP: [(u32, [char; 3])", strmap(upper), 4),
    ("Ranges (first, last) of the code points whose case fold is their\n/// "
     "upper-case mapping (not in `FOLD`, and not their lower-case one).",
     "FOLD_TO_UPPER: [(u32, u32)", [f"({a:#x}, {b:#x})," for a, b in fold_upper], 4),
    ("Full lower-case mappings of non-ASCII code points that have one.",
     "LOWER_MAP: [(u32, [char; 3])", strmap(lower), 4),
    ("Case-fold mappings that differ from the lower- and the upper-case mapping.",
     "FOLD: [(u32, [char; 3])", strmap(fold), 4),
]
out = [
    "// Unicode tables generated from CPython 3.11's `unicodedata` by",
    "// `worker/src/interp/gen_unicode.py`; do not edit by hand. Declared with",
    "// `#[rustfmt::skip]` in `unicode.rs`: several entries to a line.",
    "",
    "// Flags of a code point: FLAG means `str.isflag` (or the property of that",
    "// name) holds.",
]
out += packed([f"pub const {k}: u16 = {v};" for k, v in F.items()], 3, indent="")
out.append("")
for doc, decl, entries, per_line in TABLES:
    out.append(f"/// {doc}")
    out.append(f"pub static {decl}; {len(entries)}] = [")
    out += packed(entries, per_line)
    out.append("];")
open(sys.argv[1], 'w').write("\n".join(out) + "\n")
print(len(runs), len(title), len(fold), len(dec0))
