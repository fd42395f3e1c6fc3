# Generates worker/src/interp/unicode.rs from CPython 3.11's own unicodedata,
# so str predicates, repr escapes and case mappings match CPython exactly.
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
fold = [(c, chr(c).casefold()) for c in range(0x110000) if chr(c).casefold() != chr(c).lower()]
dec0 = [c for c in range(0x110000) if unicodedata.decimal(chr(c), None) == 0]
for c in dec0:
    for k in range(10):
        assert unicodedata.decimal(chr(c + k), None) == k
def rs(s): return '"' + ''.join('\\u{%x}' % ord(x) for x in s) + '"'
out = []
out.append("//! Unicode tables generated from CPython 3.11's `unicodedata` by")
out.append("//! `worker/src/interp/gen_unicode.py`; do not edit by hand.")
out.append("")
for k, v in F.items():
    out.append(f"/// Flag: `str.is{k.lower()}` (or the named property) holds.")
    out.append(f"pub const {k}: u16 = {v};")
out.append("/// Runs of code points sharing the same flags: (first code point, flags).")
out.append(f"pub static RUNS: [(u32, u16); {len(runs)}] = [")
for i in range(0, len(runs), 8):
    out.append("    " + " ".join(f"({c:#x}, {f})," for c, f in runs[i:i+8]))
out.append("];")
out.append("/// Title-case mappings that differ from the upper-case mapping.")
out.append(f"pub static TITLE_MAP: [(u32, &str); {len(title)}] = [")
for c, t in title: out.append(f"    ({c:#x}, {rs(t)}),")
out.append("];")
out.append("/// Full upper-case mappings of non-ASCII code points that have one.")
out.append(f"pub static UPPER_MAP: [(u32, &str); {len(upper)}] = [")
for c, t in upper: out.append(f"    ({c:#x}, {rs(t)}),")
out.append("];")
out.append("/// Full lower-case mappings of non-ASCII code points that have one.")
out.append(f"pub static LOWER_MAP: [(u32, &str); {len(lower)}] = [")
for c, t in lower: out.append(f"    ({c:#x}, {rs(t)}),")
out.append("];")
out.append("/// Case-fold mappings that differ from the lower-case mapping.")
out.append(f"pub static FOLD: [(u32, &str); {len(fold)}] = [")
for c, t in fold: out.append(f"    ({c:#x}, {rs(t)}),")
out.append("];")
out.append("/// First code point (value 0) of each run of ten decimal digits.")
out.append(f"pub static DECIMAL0: [u32; {len(dec0)}] = [")
for i in range(0, len(dec0), 10):
    out.append("    " + " ".join(f"{c:#x}," for c in dec0[i:i+10]))
out.append("];")
out.append("""
/// The flags of a code point.
pub fn flags(c: char) -> u16 {
    let u = c as u32;
    match RUNS.binary_search_by(|(s, _)| s.cmp(&u)) {
        Ok(i) => RUNS[i].1,
        Err(0) => 0,
        Err(i) => RUNS[i - 1].1,
    }
}

/// Does `c` have flag `f`?
#[inline]
pub fn has(c: char, f: u16) -> bool {
    if c.is_ascii() {
        return ascii_flags(c) & f != 0;
    }
    flags(c) & f != 0
}

fn ascii_flags(c: char) -> u16 {
    let mut f = 0;
    if (' '..='~').contains(&c) {
        f |= PRINT;
    }
    if c.is_ascii_alphabetic() {
        f |= ALPHA | CASED | XID_START | XID_CONT;
        f |= if c.is_ascii_lowercase() { LOWER } else { UPPER };
    }
    if c.is_ascii_digit() {
        f |= DECIMAL | DIGIT | NUMERIC | XID_CONT;
    }
    if matches!(c, ' ' | '\\t' | '\\n' | '\\x0b' | '\\x0c' | '\\r' | '\\x1c'..='\\x1f') {
        f |= SPACE;
    }
    if c == '_' {
        f |= XID_START | XID_CONT;
    }
    if matches!(c, '\\'' | '.' | ':' | '^' | '`') {
        f |= CASE_IGNORABLE;
    }
    f
}

/// Decimal value of a Unicode decimal digit.
pub fn decimal(c: char) -> Option<u32> {
    let u = c as u32;
    if c.is_ascii_digit() {
        return Some(u - '0' as u32);
    }
    let i = match DECIMAL0.binary_search(&u) {
        Ok(i) => i,
        Err(0) => return None,
        Err(i) => i - 1,
    };
    let d = u - DECIMAL0[i];
    if d < 10 {
        Some(d)
    } else {
        None
    }
}

/// What `map` (sorted by code point) maps `c` to, if anything.
#[inline]
fn mapped(map: &'static [(u32, &'static str)], c: char) -> Option<&'static str> {
    map.binary_search_by(|(s, _)| s.cmp(&(c as u32)))
        .ok()
        .map(|i| map[i].1)
}

/// Full upper-case mapping of `c` (CPython's, not the newer Unicode of
/// Rust's `char::to_uppercase`).
#[inline]
pub fn upper(c: char, out: &mut String) {
    if c.is_ascii() {
        out.push(c.to_ascii_uppercase());
        return;
    }
    match mapped(&UPPER_MAP, c) {
        Some(m) => out.push_str(m),
        None => out.push(c),
    }
}

/// Full lower-case mapping of `c`, without the final-sigma rule (CPython's
/// `_PyUnicode_ToLowerFull`).
#[inline]
pub fn lower(c: char, out: &mut String) {
    if c.is_ascii() {
        out.push(c.to_ascii_lowercase());
        return;
    }
    match mapped(&LOWER_MAP, c) {
        Some(m) => out.push_str(m),
        None => out.push(c),
    }
}

/// Title-case mapping of `c` (CPython's `str.title` per character).
pub fn title(c: char, out: &mut String) {
    match mapped(&TITLE_MAP, c) {
        Some(m) => out.push_str(m),
        None => upper(c, out),
    }
}

/// Case fold of `c`.
pub fn fold(c: char, out: &mut String) {
    match mapped(&FOLD, c) {
        Some(m) => out.push_str(m),
        None => lower(c, out),
    }
}
""")
open(sys.argv[1], 'w').write("\n".join(out) + "\n")
print(len(runs), len(title), len(fold), len(dec0))
