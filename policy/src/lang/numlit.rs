//! CPython 3.11's tokenizer errors for malformed number literals (`0b2`,
//! `0777`, `1_`, `1e`, `0x`, `1abc`), which rustpython-parser words as its
//! own lexer errors (or as `ParseBigIntError { kind: Empty }`). Only asked
//! once a program has failed to parse: the first malformed literal's message
//! and offset, as CPython's tokenizer (`Parser/tokenizer.c`, `tok_get`'s
//! number branch, `tok_decimal_tail` and `verify_end_of_number`) reports it.
//! Strings (f-strings included) and comments are skipped; identifiers are
//! consumed whole, so `x1e` is no number.

/// A malformed literal: CPython's message, and the byte offset of the
/// character its caret points at.
pub struct NumberError {
    /// Where the literal starts.
    pub start: usize,
    pub offset: usize,
    pub message: String,
}

fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 128
}

/// The first malformed number literal of `src`, if any (linear, no recursion).
pub fn first_error(src: &str) -> Option<NumberError> {
    let b = src.as_bytes();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'#' => {
                while b.get(i).is_some_and(|&c| c != b'\n') {
                    i += 1;
                }
            }
            b'\'' | b'"' => i = skip_string(b, i),
            b'0'..=b'9' => match number(b, i) {
                Ok(end) => i = end,
                Err(e) => return Some(e),
            },
            b'.' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => match number(b, i) {
                Ok(end) => i = end,
                Err(e) => return Some(e),
            },
            c if ident_char(c) => {
                while b.get(i).is_some_and(|&c| ident_char(c)) {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// Past the string literal whose quote is at `i` (an unterminated one runs
/// to the end of its line, or of the text for a triple-quoted one).
pub(crate) fn skip_string(b: &[u8], mut i: usize) -> usize {
    let Some(&q) = b.get(i) else {
        return i;
    };
    let triple = b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q);
    i += if triple { 3 } else { 1 };
    while let Some(&c) = b.get(i) {
        if c == b'\\' {
            i += 2;
            continue;
        }
        if !triple && c == b'\n' {
            return i;
        }
        if c == q && (!triple || (b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q))) {
            return i + if triple { 3 } else { 1 };
        }
        i += 1;
    }
    i.min(b.len())
}

/// A cursor over the bytes, as the tokenizer's `tok_nextc`/`tok_backup`:
/// `cur` is the offset after the last character read.
struct Tok<'a> {
    b: &'a [u8],
    start: usize,
    cur: usize,
}

impl Tok<'_> {
    /// The next character (0 at the end, as the tokenizer's EOF).
    fn next(&mut self) -> u8 {
        let c = self.b.get(self.cur).copied().unwrap_or(0);
        self.cur += 1;
        c
    }

    fn backup(&mut self) {
        self.cur = self.cur.saturating_sub(1);
    }

    /// `syntaxerror(tok, ...)`: the caret is on the last character read.
    fn error(&self, message: impl Into<String>) -> NumberError {
        NumberError {
            start: self.start,
            offset: self.cur.saturating_sub(1),
            message: message.into(),
        }
    }

    /// Do the characters ahead spell `rest` and then end the word?
    fn lookahead(&self, rest: &str) -> bool {
        let end = self.cur + rest.len();
        self.b.get(self.cur..end) == Some(rest.as_bytes())
            && !self.b.get(end).is_some_and(|&c| ident_char(c))
    }

    /// `tok_decimal_tail`: digits with single underscores between them;
    /// returns the first character after them.
    fn decimal_tail(&mut self) -> Result<u8, NumberError> {
        loop {
            let mut c = self.next();
            while c.is_ascii_digit() {
                c = self.next();
            }
            if c != b'_' {
                return Ok(c);
            }
            if !self.next().is_ascii_digit() {
                self.backup();
                return Err(self.error("invalid decimal literal"));
            }
        }
    }

    /// `verify_end_of_number`: a literal may be followed by a keyword
    /// (`1if x else 2`), not by another identifier character. `c` was just read.
    fn verify_end(&mut self, c: u8, kind: &str) -> Result<(), NumberError> {
        let keyword = match c {
            b'a' => self.lookahead("nd"),
            b'e' => self.lookahead("lse"),
            b'f' => self.lookahead("or"),
            b'i' => matches!(self.b.get(self.cur), Some(b'f' | b'n' | b's')),
            b'o' => self.lookahead("r"),
            b'n' => self.lookahead("ot"),
            _ => false,
        };
        // Only ASCII: `1é` is the number 1, then a name (CPython 3.11).
        if !keyword && c < 128 && ident_char(c) {
            self.backup();
            return Err(self.error(format!("invalid {kind} literal")));
        }
        Ok(())
    }

    /// A prefixed integer (`0x`, `0o`, `0b`) after its prefix.
    fn prefixed(&mut self, kind: &str, digit: fn(u8) -> bool) -> Result<usize, NumberError> {
        let mut c = self.next();
        loop {
            if c == b'_' {
                c = self.next();
            }
            if !digit(c) {
                if kind != "hexadecimal" && c.is_ascii_digit() {
                    return Err(
                        self.error(format!("invalid digit '{}' in {kind} literal", c as char))
                    );
                }
                self.backup();
                return Err(self.error(format!("invalid {kind} literal")));
            }
            c = self.next();
            while digit(c) {
                c = self.next();
            }
            if c != b'_' {
                break;
            }
        }
        if kind != "hexadecimal" && c.is_ascii_digit() {
            return Err(self.error(format!("invalid digit '{}' in {kind} literal", c as char)));
        }
        self.verify_end(c, kind)?;
        self.backup();
        Ok(self.cur)
    }
}

/// The number starting at `start` (a digit, or `.` before a digit): its end,
/// or CPython's error.
fn number(b: &[u8], start: usize) -> Result<usize, NumberError> {
    let mut t = Tok {
        b,
        start,
        cur: start,
    };
    let first = t.next();
    let mut c;
    if first == b'.' {
        c = t.next();
        return fraction(&mut t, c);
    }
    if first == b'0' {
        c = t.next();
        match c {
            b'x' | b'X' => return t.prefixed("hexadecimal", |c| c.is_ascii_hexdigit()),
            b'o' | b'O' => return t.prefixed("octal", |c| (b'0'..b'8').contains(&c)),
            b'b' | b'B' => return t.prefixed("binary", |c| c == b'0' || c == b'1'),
            _ => {}
        }
        loop {
            if c == b'_' {
                c = t.next();
                if !c.is_ascii_digit() {
                    t.backup();
                    return Err(t.error("invalid decimal literal"));
                }
            }
            if c != b'0' {
                break;
            }
            c = t.next();
        }
        let nonzero = c.is_ascii_digit();
        if nonzero {
            c = t.decimal_tail()?;
        }
        match c {
            b'.' => {
                c = t.next();
                return fraction(&mut t, c);
            }
            b'e' | b'E' => return exponent(&mut t, c),
            b'j' | b'J' => return imaginary(&mut t),
            _ if nonzero => {
                return Err(NumberError {
                    start,
                    offset: start,
                    message: "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers".to_string(),
                })
            }
            _ => {}
        }
        t.verify_end(c, "decimal")?;
        t.backup();
        return Ok(t.cur);
    }
    t.backup();
    c = t.decimal_tail()?;
    if c == b'.' {
        c = t.next();
        return fraction(&mut t, c);
    }
    after_fraction(&mut t, c)
}

/// After the `.`: `c` is the character following it.
fn fraction(t: &mut Tok<'_>, mut c: u8) -> Result<usize, NumberError> {
    if c.is_ascii_digit() {
        t.backup();
        c = t.decimal_tail()?;
    }
    after_fraction(t, c)
}

fn after_fraction(t: &mut Tok<'_>, c: u8) -> Result<usize, NumberError> {
    match c {
        b'e' | b'E' => exponent(t, c),
        b'j' | b'J' => imaginary(t),
        _ => {
            t.verify_end(c, "decimal")?;
            t.backup();
            Ok(t.cur)
        }
    }
}

/// `e` (the `e`/`E`) was just read.
fn exponent(t: &mut Tok<'_>, e: u8) -> Result<usize, NumberError> {
    let mut c = t.next();
    if c == b'+' || c == b'-' {
        c = t.next();
        if !c.is_ascii_digit() {
            t.backup();
            return Err(t.error("invalid decimal literal"));
        }
    } else if !c.is_ascii_digit() {
        // `1else`: the number ends before the `e`.
        t.backup();
        t.verify_end(e, "decimal")?;
        t.backup();
        return Ok(t.cur);
    }
    t.backup();
    c = t.decimal_tail()?;
    if c == b'j' || c == b'J' {
        return imaginary(t);
    }
    t.verify_end(c, "decimal")?;
    t.backup();
    Ok(t.cur)
}

/// The `j` was just read.
fn imaginary(t: &mut Tok<'_>) -> Result<usize, NumberError> {
    let c = t.next();
    t.verify_end(c, "imaginary")?;
    t.backup();
    Ok(t.cur)
}

#[cfg(test)]
mod tests {
    use super::first_error;

    /// (program, CPython 3.11's message, its 1-based column on line 1;
    /// None when CPython's tokenizer accepts every number).
    const CASES: &[(&str, Option<(&str, usize)>)] = &[
        ("x = 0777", Some(("leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers", 5))),
        ("x = 0_9", Some(("leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers", 5))),
        ("x = 0b2", Some(("invalid digit '2' in binary literal", 7))),
        ("x = 0b", Some(("invalid binary literal", 6))),
        ("x = 0o8", Some(("invalid digit '8' in octal literal", 7))),
        ("x = 0or 2", Some(("invalid octal literal", 6))),
        ("x = 0xg", Some(("invalid hexadecimal literal", 6))),
        ("x = 0x", Some(("invalid hexadecimal literal", 6))),
        ("x = 1e", Some(("invalid decimal literal", 5))),
        ("x = 1e_5", Some(("invalid decimal literal", 5))),
        ("x = 1.e", Some(("invalid decimal literal", 6))),
        ("x = 1e+", Some(("invalid decimal literal", 7))),
        ("x = 1_000_", Some(("invalid decimal literal", 10))),
        ("x = 1__0", Some(("invalid decimal literal", 6))),
        ("x = 1.bit_length()", Some(("invalid decimal literal", 6))),
        ("isinstance(1async%)", Some(("invalid decimal literal", 12))),
        ("x = 1jx", Some(("invalid imaginary literal", 6))),
        ("x = 'é' + 1é", None),
        ("x = 0b1_", Some(("invalid binary literal", 8))),
        ("x = 0o17_8", Some(("invalid digit '8' in octal literal", 10))),
        ("x = 0x_", Some(("invalid hexadecimal literal", 7))),
        ("x = 0b12", Some(("invalid digit '2' in binary literal", 8))),
        ("x = 1.5_", Some(("invalid decimal literal", 8))),
        ("x = 1e5x", Some(("invalid decimal literal", 7))),
        ("x = 0_", Some(("invalid decimal literal", 6))),
        ("x = 00x", Some(("invalid decimal literal", 6))),
        ("x = 0e", Some(("invalid decimal literal", 5))),
        ("x = 1.5e-3j2", Some(("invalid imaginary literal", 11))),
        ("x = 0j_", Some(("invalid imaginary literal", 6))),
        ("x = 0.1.2", None),
        ("x = [1for a in 'ab']", None),
        ("x = 1if 2else 3", None),
        ("x = 0x1for x in 'ab'", None),
        ("x = 1_0.0_1e1_0", None),
        ("x = .5 + 5. + 1.e1 + 00 + 0_0 + 0e5 + 09.5 + 09e1 + 0j", None),
        ("x1e = 1  # 0b2\ny = '0777' + \"\"\"1_\"\"\"", None),
        ("x = 1 .bit_length()", None),
    ];

    #[test]
    fn matches_cpython() {
        for (src, want) in CASES {
            let got = first_error(src).map(|e| {
                let col = src[..e.offset].chars().count() + 1;
                (e.message, col)
            });
            let want = want.map(|(m, c)| (m.to_string(), c));
            assert_eq!(got, want, "{src}");
        }
    }
}
