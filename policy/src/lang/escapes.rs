//! A string literal's escape that CPython 3.11's `unicodeescape` decoder
//! refuses (`"\x4"`, `"\u12"`, `"\U00110000"`, `"\N{NOPE}"`, `"\N"`):
//! CPython's SyntaxError is "(unicode error) 'unicodeescape' codec can't
//! decode bytes in position A-B: REASON", where A-B are byte positions in
//! the text the decoder sees: the literal's body (for an f-string, the
//! piece between two replacement fields or doubled braces) with every
//! non-ASCII character written as a ten-byte `\UXXXXXXXX` escape
//! (`decode_unicode_with_escapes`). Its caret is on the token after the
//! string(s). Linear in the source; a source without a backslash is not
//! scanned.

use super::names::known_name_311;

/// A refused escape.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BadEscape {
    /// Byte offset of the escape's backslash in the source.
    pub offset: usize,
    /// CPython's message.
    pub message: String,
}

/// The first escape, in a non-raw str literal of `src`, that CPython 3.11
/// refuses.
pub(crate) fn first_bad_escape(src: &str) -> Option<BadEscape> {
    if !src.contains('\\') {
        return None;
    }
    let b = src.as_bytes();
    let mut i = 0usize;
    while let Some(&c) = b.get(i) {
        match c {
            b'#' => {
                while b.get(i).is_some_and(|&c| c != b'\n') {
                    i += 1;
                }
            }
            b'\'' | b'"' => {
                let (raw, bytes, fstring) = prefix(b, i);
                let triple = b.get(i + 1) == Some(&c) && b.get(i + 2) == Some(&c);
                let qlen = if triple { 3 } else { 1 };
                let body = i + qlen;
                let mut j = body;
                let end = loop {
                    match b.get(j) {
                        None => break j,
                        Some(b'\\') => j += 2,
                        Some(b'\n') if !triple => break j,
                        Some(&q) if q == c && (!triple || b.get(j..j + 3) == Some(&[c, c, c])) => {
                            break j
                        }
                        Some(_) => j += 1,
                    }
                };
                if !raw && !bytes {
                    let text = src.get(body..end.min(src.len()))?;
                    let found = if fstring {
                        let mut pieces = Vec::new();
                        fstring_pieces(text, 0, 0, &mut pieces);
                        pieces
                            .into_iter()
                            .find_map(|(s, e)| decode(text.get(s..e)?).map(|(at, m)| (s + at, m)))
                    } else {
                        decode(text)
                    };
                    if let Some((at, message)) = found {
                        return Some(BadEscape {
                            offset: body + at,
                            message,
                        });
                    }
                }
                i = (end + qlen).max(i + 1);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Raw, bytes and f-string flags of the literal whose quote is at `b[i]`.
fn prefix(b: &[u8], i: usize) -> (bool, bool, bool) {
    let mut p = i;
    while p > 0 && (b[p - 1].is_ascii_alphanumeric() || b[p - 1] == b'_' || b[p - 1] >= 0x80) {
        p -= 1;
    }
    let word = b.get(p..i).unwrap_or_default();
    if word.len() > 2
        || !word
            .iter()
            .all(|c| matches!(c.to_ascii_lowercase(), b'r' | b'b' | b'f' | b'u'))
    {
        return (false, false, false);
    }
    let has = |x: u8| word.iter().any(|c| c.to_ascii_lowercase() == x);
    (has(b'r'), has(b'b'), has(b'f'))
}

/// The literal pieces of an f-string body (byte ranges of `t`), as CPython
/// 3.11's `fstring_find_literal` cuts them: at a replacement field and after
/// the first brace of a doubled one (top level only); a field's format spec
/// is cut the same way (`lvl` 1 and deeper).
fn fstring_pieces(t: &str, mut i: usize, lvl: usize, out: &mut Vec<(usize, usize)>) -> usize {
    let b = t.as_bytes();
    let mut start = i;
    while let Some(&c) = b.get(i) {
        if c == b'\\' {
            match b.get(i + 1) {
                Some(b'N') if b.get(i + 2) == Some(&b'{') => {
                    i += 3;
                    while b.get(i).is_some_and(|&c| c != b'}') {
                        i += 1;
                    }
                    i += 1;
                    continue;
                }
                Some(b'{' | b'}') => {
                    i += 1;
                    continue;
                }
                Some(_) => {
                    i += 2;
                    continue;
                }
                None => break,
            }
        }
        if c == b'{' || c == b'}' {
            if lvl == 0 && b.get(i + 1) == Some(&c) {
                out.push((start, i + 1));
                i += 2;
                start = i;
                continue;
            }
            out.push((start, i));
            if c == b'}' {
                // The end of a format spec.
                return i;
            }
            // A field: its expression, `=`, `!x`, then a format spec.
            let Some(expr) = super::syntax::fstring_field_expr(t, i + 1) else {
                return t.len();
            };
            i += 1 + expr.len();
            if b.get(i) == Some(&b'=') {
                i += 1;
            }
            if b.get(i) == Some(&b'!') {
                i += 2;
            }
            if b.get(i) == Some(&b':') && lvl < 2 {
                i = fstring_pieces(t, i + 1, lvl + 1, out);
            }
            // The field's `}`.
            i += 1;
            start = i;
            continue;
        }
        i += 1;
    }
    out.push((start, i.min(t.len())));
    t.len()
}

/// CPython 3.11's decoding of one piece: the byte offset (in `t`) of the
/// first refused escape, and the message.
fn decode(t: &str) -> Option<(usize, String)> {
    if !t.contains('\\') {
        return None;
    }
    // (offset in t, char) and the position in CPython's converted text.
    let cs: Vec<(usize, char)> = t
        .char_indices()
        .filter(|&(k, c)| !(c == '\r' && t.as_bytes().get(k + 1) == Some(&b'\n')))
        .collect();
    let width = |c: char| if c.is_ascii() { 1 } else { 10 };
    let mut pos = 0usize;
    let mut k = 0usize;
    let fail = |start: usize, end: usize, reason: &str| {
        format!("(unicode error) 'unicodeescape' codec can't decode bytes in position {start}-{}: {reason}", end - 1)
    };
    while let Some(&(off, c)) = cs.get(k) {
        if c != '\\' {
            pos += width(c);
            k += 1;
            continue;
        }
        let start = pos;
        let &(_, e) = cs.get(k + 1)?;
        if !e.is_ascii() {
            // Written `\u005c` then the character's own escape.
            pos += 6;
            k += 1;
            continue;
        }
        pos += 2;
        k += 2;
        let count = match e {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            'N' => {
                let reason = "malformed \\N character escape";
                match cs.get(k) {
                    None => return Some((off, fail(start, pos, reason))),
                    Some(&(_, '{')) => {}
                    Some(_) => return Some((off, fail(start, pos, reason))),
                }
                pos += 1;
                k += 1;
                let name_start = k;
                let name_pos = pos;
                while cs.get(k).is_some_and(|&(_, c)| c != '}') {
                    pos += width(cs[k].1);
                    k += 1;
                }
                if k >= cs.len() {
                    return Some((off, fail(start, pos, reason)));
                }
                let name: String = cs[name_start..k].iter().map(|&(_, c)| c).collect();
                if pos == name_pos {
                    return Some((off, fail(start, pos, reason)));
                }
                pos += 1;
                k += 1;
                if !name.is_ascii() || !known_name_311(&name) {
                    return Some((off, fail(start, pos, "unknown Unicode character name")));
                }
                continue;
            }
            '0'..='7' => {
                let mut n = 1;
                while n < 3 && cs.get(k).is_some_and(|&(_, c)| matches!(c, '0'..='7')) {
                    pos += 1;
                    k += 1;
                    n += 1;
                }
                continue;
            }
            _ => continue,
        };
        let reason = match e {
            'x' => "truncated \\xXX escape",
            'u' => "truncated \\uXXXX escape",
            _ => "truncated \\UXXXXXXXX escape",
        };
        let mut v: u32 = 0;
        for _ in 0..count {
            match cs.get(k) {
                Some(&(_, h)) if h.is_ascii_hexdigit() => {
                    v = v * 16 + h.to_digit(16).unwrap_or(0);
                    pos += 1;
                    k += 1;
                }
                _ => return Some((off, fail(start, pos, reason))),
            }
        }
        if v > 0x10FFFF {
            return Some((off, fail(start, pos, "illegal Unicode character")));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_and_reasons_are_cpython_311s() {
        let m = |s: &str| first_bad_escape(s).map(|e| (e.offset, e.message));
        let msg = |a: usize, b: usize, r: &str| {
            format!(
                "(unicode error) 'unicodeescape' codec can't decode bytes in position {a}-{b}: {r}"
            )
        };
        for ok in [
            "x = 'a\\n\\t\\x41\\u00e9\\U0001F600\\N{BULLET}\\101\\d'",
            "x = r'\\x4'",
            "x = b'\\u12'",
            "x = 1  # '\\x4'",
            "x = f'{a!r:>{w}} {{\\x41}}'",
            "x = '\\\\x4'",
        ] {
            assert_eq!(m(ok), None, "{ok}");
        }
        assert_eq!(
            m("x = '\\x4'"),
            Some((5, msg(0, 2, "truncated \\xXX escape")))
        );
        assert_eq!(
            m("x = 'ab\\xZZ'"),
            Some((7, msg(2, 3, "truncated \\xXX escape")))
        );
        assert_eq!(
            m("x = '\u{e9}\u{1f600}\\x4'"),
            Some((11, msg(20, 22, "truncated \\xXX escape")))
        );
        assert_eq!(
            m("x = '\\U00110000'"),
            Some((5, msg(0, 9, "illegal Unicode character")))
        );
        assert_eq!(
            m("x = '\\U0001F60'"),
            Some((5, msg(0, 8, "truncated \\UXXXXXXXX escape")))
        );
        assert_eq!(
            m("x = '\\N'"),
            Some((5, msg(0, 1, "malformed \\N character escape")))
        );
        assert_eq!(
            m("x = '\\N{}'"),
            Some((5, msg(0, 2, "malformed \\N character escape")))
        );
        assert_eq!(
            m("x = '\\N{NOPE}'"),
            Some((5, msg(0, 7, "unknown Unicode character name")))
        );
        // Names CPython 3.11 (Unicode 14.0) does not know; names in any
        // case and aliases are known, the algorithmic ones in capitals only.
        for ok in [
            "x = '\\N{bullet}\\N{NULL}\\N{BOM}\\N{LINE FEED}'",
            "x = '\\N{HANGUL SYLLABLE GAG}\\N{CJK UNIFIED IDEOGRAPH-4E00}'",
            "x = r'\\N{SHAKING FACE}'",
        ] {
            assert_eq!(m(ok), None, "{ok}");
        }
        let unknown = "unknown Unicode character name";
        assert_eq!(
            m("x = 'ab\\N{SHAKING FACE}'"),
            Some((7, msg(2, 17, unknown)))
        );
        assert_eq!(
            m("x = '\\N{hangul syllable GAG}'"),
            Some((5, msg(0, 22, unknown)))
        );
        assert_eq!(
            m("x = '\\N{CJK UNIFIED IDEOGRAPH-31350}'"),
            Some((5, msg(0, 30, unknown)))
        );
        assert_eq!(
            m("x = f'{1}\\N{PINK HEART}'"),
            Some((9, msg(0, 13, unknown)))
        );
        assert_eq!(
            m("x = '''a\n\\N{KAWI LETTER A}'''"),
            Some((9, msg(2, 18, unknown)))
        );
        assert_eq!(m("x = '\u{e9}\\N{NOPE}'"), Some((7, msg(10, 17, unknown))));
        assert_eq!(
            m("x = f'a{x}b{{c\\x4'"),
            Some((14, msg(1, 3, "truncated \\xXX escape")))
        );
        assert_eq!(
            m("x = f'{x:\\x4}'"),
            Some((9, msg(0, 2, "truncated \\xXX escape")))
        );
    }
}
