//! CPython 3.11's Unicode character data, as `str` needs it: the
//! predicates (`isalpha`, `isprintable`, ...), decimal values and the full
//! case mappings. The tables are generated from CPython's own `unicodedata`
//! by `gen_unicode.py` into `unicode_tables.rs`; the functions over them are
//! here.

#[rustfmt::skip]
#[path = "unicode_tables.rs"]
mod tables;

pub use tables::*;

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
    if matches!(
        c,
        ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r' | '\x1c'..='\x1f'
    ) {
        f |= SPACE;
    }
    if c == '_' {
        f |= XID_START | XID_CONT;
    }
    if matches!(c, '\'' | '.' | ':' | '^' | '`') {
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

/// A case mapping: up to three chars, NUL-padded. Why not `&str`: a table
/// of pointers is relocated (and so copied into private memory) every time
/// the binary starts, in the supervisor and in every exec'd worker; ~17
/// pages of it. These tables are plain read-only data.
type Mapped = [char; 3];

/// What `map` (sorted by code point) maps `c` to, if anything.
#[inline]
fn mapped(map: &'static [(u32, Mapped)], c: char) -> Option<&'static Mapped> {
    map.binary_search_by(|(s, _)| s.cmp(&(c as u32)))
        .ok()
        .map(|i| &map[i].1)
}

/// Append a mapping's chars (up to its padding).
#[inline]
fn push(out: &mut String, m: &Mapped) {
    for &ch in m.iter().take_while(|&&ch| ch != '\0') {
        out.push(ch);
    }
}

/// Full upper-case mapping of `c` (CPython's, not the newer Unicode of
/// Rust's `char::to_uppercase`).
#[inline]
pub fn upper(c: char, out: &mut String) {
    case_map(c, char::to_ascii_uppercase, &UPPER_MAP, out);
}

/// Full lower-case mapping of `c`, without the final-sigma rule (CPython's
/// `_PyUnicode_ToLowerFull`).
#[inline]
pub fn lower(c: char, out: &mut String) {
    case_map(c, char::to_ascii_lowercase, &LOWER_MAP, out);
}

/// `c` mapped by `ascii` when it is ASCII, else by `map` (unchanged when
/// `map` does not have it).
#[inline]
fn case_map(c: char, ascii: fn(&char) -> char, map: &'static [(u32, Mapped)], out: &mut String) {
    if c.is_ascii() {
        out.push(ascii(&c));
        return;
    }
    match mapped(map, c) {
        Some(m) => push(out, m),
        None => out.push(c),
    }
}

/// Title-case mapping of `c` (CPython's `str.title` per character).
pub fn title(c: char, out: &mut String) {
    match mapped(&TITLE_MAP, c) {
        Some(m) => push(out, m),
        None => upper(c, out),
    }
}

/// Case fold of `c`.
pub fn fold(c: char, out: &mut String) {
    let u = c as u32;
    if let Some(m) = mapped(&FOLD, c) {
        push(out, m);
    } else if FOLD_TO_UPPER.iter().any(|&(a, b)| (a..=b).contains(&u)) {
        upper(c, out);
    } else {
        lower(c, out);
    }
}

#[cfg(test)]
mod tests {
    /// What `python3 -c script` prints (the test fails without python3).
    fn python3_output(script: &str) -> String {
        let out = std::process::Command::new("python3")
            .args(["-c", script])
            .output()
            .expect("python3 is required");
        assert!(out.status.success(), "python3 failed");
        String::from_utf8(out.stdout).expect("utf-8")
    }

    /// `fold` agrees with CPython's `str.casefold` wherever that differs
    /// from `str.lower` (everywhere else it is `lower`, checked by the
    /// interpreter's differential tests).
    #[test]
    fn fold_matches_cpython_where_it_is_not_lower() {
        let script = "import sys\nfor c in range(0x110000):\n    ch = chr(c)\n    if 0xd800 <= c < 0xe000 or ch.casefold() == ch.lower():\n        continue\n    print(c, ' '.join(str(ord(x)) for x in ch.casefold()))\n";
        let text = python3_output(script);
        let mut checked = 0;
        for line in text.lines() {
            let mut nums = line.split(' ').map(|n| n.parse::<u32>().expect("number"));
            let c = nums.next().and_then(char::from_u32).expect("code point");
            let want: String = nums.filter_map(char::from_u32).collect();
            let mut got = String::new();
            super::fold(c, &mut got);
            assert_eq!(got, want, "casefold of U+{:04X}", c as u32);
            checked += 1;
        }
        assert!(checked > 250, "only {checked} code points checked");
    }

    /// `upper`, `lower` and `title` agree with CPython's `str.upper`,
    /// `str.lower` and `str.title` on every code point whose mapping is not
    /// itself (one-character strings; `title` of one character is its
    /// title-case mapping).
    #[test]
    fn case_maps_match_cpython_on_every_code_point() {
        let script = "for c in range(0x110000):\n    ch = chr(c)\n    if 0xd800 <= c < 0xe000:\n        continue\n    u, l, t = ch.upper(), ch.lower(), ch.title()\n    if u != ch or l != ch or t != ch:\n        print(c, '|'.join(' '.join(str(ord(x)) for x in s) for s in (u, l, t)))\n";
        let text = python3_output(script);
        let mut checked = 0;
        for line in text.lines() {
            let (c, maps) = line.split_once(' ').expect("code point and maps");
            let c = c
                .parse::<u32>()
                .ok()
                .and_then(char::from_u32)
                .expect("code point");
            let want: Vec<String> = maps
                .split('|')
                .map(|m| {
                    m.split(' ')
                        .filter_map(|n| n.parse::<u32>().ok().and_then(char::from_u32))
                        .collect()
                })
                .collect();
            for (i, f) in [super::upper, super::lower, super::title]
                .iter()
                .enumerate()
            {
                let mut got = String::new();
                f(c, &mut got);
                assert_eq!(got, want[i], "case map {i} of U+{:04X}", c as u32);
            }
            checked += 1;
        }
        assert!(checked > 2500, "only {checked} code points checked");
    }

    /// The committed tables are exactly what the generator writes from
    /// CPython 3.11's `unicodedata` (so a change to either is caught).
    #[test]
    fn tables_are_what_gen_unicode_writes() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/interp");
        let out = std::env::temp_dir().join(format!("lackpy-unicode-{}.rs", std::process::id()));
        let status = std::process::Command::new("python3")
            .arg(dir.join("gen_unicode.py"))
            .arg(&out)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("python3 3.11 is required to check the generated tables");
        assert!(
            status.success(),
            "gen_unicode.py failed (it needs python3 3.11)"
        );
        let generated = std::fs::read_to_string(&out).expect("read generated");
        let _ = std::fs::remove_file(&out);
        let committed =
            std::fs::read_to_string(dir.join("unicode_tables.rs")).expect("read committed");
        assert!(
            generated == committed,
            "unicode_tables.rs differs from what gen_unicode.py writes: regenerate it"
        );
    }
}
