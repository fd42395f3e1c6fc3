//! Lone surrogates in string literals (`'\ud800'`), as CPython keeps them.
//!
//! The parser (rustpython-parser) and Rust strings hold Unicode scalar
//! values only, so before parsing, [`rewrite`] turns every `\uD8xx`-style
//! escape of a surrogate (U+D800..U+DFFF) inside a non-raw, non-bytes string
//! literal (f-string literal parts included) into an escape of a
//! *placeholder*: U+10F800 + (cp − 0xD800), the last 2048 code points of
//! plane 16 (private use). A program with at least one such escape is in
//! *surrogate mode* ([`Program::surrogates`](super::Program::surrogates));
//! the interpreter then treats the placeholder range as the surrogates
//! wherever the two differ observably (repr, ordering, printing, tool
//! arguments, the JSON value). Without such an escape nothing changes.
//!
//! In surrogate mode a real placeholder character cannot be told apart from
//! a surrogate, so a literal holding one (written as itself or as an
//! escape) is refused ([`Rewritten::real_placeholder`]); the interpreter
//! likewise refuses tool results and session variables holding one.

/// First placeholder code point: the stand-in of U+D800.
pub const PLACEHOLDER_BASE: u32 = 0x10_F800;
/// Number of surrogates (U+D800..=U+DFFF) and placeholders.
const COUNT: u32 = 0x800;

/// The surrogate (0xD800..=0xDFFF) a placeholder character stands for.
#[inline]
pub fn surrogate_of(c: char) -> Option<u32> {
    let u = c as u32;
    (u >= PLACEHOLDER_BASE).then(|| u - PLACEHOLDER_BASE + 0xD800)
}

/// The placeholder of surrogate `cp`, if `cp` is one.
pub fn placeholder_of(cp: u32) -> Option<char> {
    if (0xD800..0xD800 + COUNT).contains(&cp) {
        char::from_u32(cp - 0xD800 + PLACEHOLDER_BASE)
    } else {
        None
    }
}

/// Whether `s` holds a placeholder character (its UTF-8 form starts with
/// byte 0xF4 followed by 0x8F and a byte >= 0xA0).
#[inline]
pub fn has_placeholder(s: &str) -> bool {
    let b = s.as_bytes();
    // memchr-fast path: no 0xF4 byte, no placeholder.
    let mut i = 0;
    while let Some(p) = b[i..].iter().position(|&x| x == 0xF4) {
        let at = i + p;
        if b.get(at + 1) == Some(&0x8F) && b.get(at + 2).is_some_and(|&x| x >= 0xA0) {
            return true;
        }
        i = at + 1;
    }
    false
}

/// The first placeholder character of `s`, as (char index, char).
pub fn first_placeholder(s: &str) -> Option<(usize, char)> {
    if !has_placeholder(s) {
        return None;
    }
    s.chars()
        .enumerate()
        .find(|(_, c)| (*c as u32) >= PLACEHOLDER_BASE)
}

/// One rewritten escape: on 1-based `line`, columns (characters) at or after
/// `col_after` in the rewritten line are `delta` characters to the right of
/// where they are in the program as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shift {
    line: u32,
    col_after: u32,
    delta: u32,
}

/// The outcome of [`rewrite`].
#[derive(Debug, Default)]
pub(crate) struct Rewritten {
    /// The rewritten source, when some escape was rewritten (surrogate mode).
    pub text: Option<String>,
    /// Column shifts, to report positions in the program as written.
    pub shifts: Vec<Shift>,
    /// Byte offset (in the source as written) of a real placeholder
    /// character, or an escape of one, in a string literal: only reported in
    /// surrogate mode, where it would be confused with a surrogate.
    pub real_placeholder: Option<usize>,
}

/// Map a column of the rewritten text back to the program as written.
pub(crate) fn unshift(shifts: &[Shift], line: u32, col: u32) -> u32 {
    let back: u32 = shifts
        .iter()
        .filter(|s| s.line == line && col >= s.col_after)
        .map(|s| s.delta)
        .sum();
    col.saturating_sub(back).max(1)
}

/// Is the run of identifier characters `p` a string prefix, and if so, is it
/// raw and/or bytes? `None`: not a prefix (an identifier or keyword such as
/// `or` or `in` that happens to touch the quote).
fn prefix_kind(p: &[u8]) -> Option<(bool, bool)> {
    let mut lower = [0u8; 2];
    if p.len() > 2 {
        return None;
    }
    for (l, c) in lower.iter_mut().zip(p) {
        *l = c.to_ascii_lowercase();
    }
    match &lower[..p.len()] {
        b"" | b"u" | b"f" => Some((false, false)),
        b"r" | b"fr" | b"rf" => Some((true, false)),
        b"b" => Some((false, true)),
        b"br" | b"rb" => Some((true, true)),
        _ => None,
    }
}

/// The string literal whose opening quote `q` is at `b[i]`: whether the
/// identifier characters just before it make it raw and bytes (neither
/// when they are no prefix, such as `in`), and its closing quote or
/// quotes.
pub(crate) fn literal_open(b: &[u8], i: usize, q: u8) -> (bool, bool, &'static [u8]) {
    let mut p = i;
    while p > 0 && (b[p - 1].is_ascii_alphanumeric() || b[p - 1] == b'_' || b[p - 1] >= 0x80) {
        p -= 1;
    }
    let (raw, bytes) = prefix_kind(&b[p..i]).unwrap_or((false, false));
    let triple = b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q);
    let close: &'static [u8] = match (q, triple) {
        (b'\'', true) => b"'''",
        (b'\'', false) => b"'",
        (_, true) => b"\"\"\"",
        (_, false) => b"\"",
    };
    (raw, bytes, close)
}

/// Whether `b` has anything that may be a surrogate escape (`\uD8xx`..,
/// `\U0000D8xx`..) anywhere, in a literal or not: without one the
/// program cannot be in surrogate mode, and [`rewrite`] stops at this
/// quick scan (the common case).
fn may_have_surrogate_escape(b: &[u8]) -> bool {
    let high = |x: Option<&u8>| matches!(x, Some(b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F'));
    let d = |x: Option<&u8>| matches!(x, Some(b'd' | b'D'));
    b.iter().enumerate().any(|(i, &c)| {
        c == b'\\'
            && match b.get(i + 1) {
                Some(b'u') => d(b.get(i + 2)) && high(b.get(i + 3)),
                Some(b'U') => {
                    b.get(i + 2..i + 6) == Some(b"0000") && d(b.get(i + 6)) && high(b.get(i + 7))
                }
                _ => false,
            }
    })
}

fn hex_value(h: &[u8]) -> Option<u32> {
    if h.iter().all(u8::is_ascii_hexdigit) {
        std::str::from_utf8(h)
            .ok()
            .and_then(|s| u32::from_str_radix(s, 16).ok())
    } else {
        None
    }
}

/// Rewrite surrogate escapes (see the module doc). Linear in the source.
pub(crate) fn rewrite(src: &str) -> Rewritten {
    let b = src.as_bytes();
    let mut out = Rewritten::default();
    if !may_have_surrogate_escape(b) {
        return out;
    }
    let mut text = String::new();
    // Bytes of `src` already copied to `text`.
    let mut copied = 0usize;
    // Line bookkeeping for the shifts (1-based line, byte offset of its start
    // in `src`, and the characters added on it so far).
    let mut line = 1u32;
    let mut line_start = 0usize;
    let mut added_on_line = 0u32;
    let mut placeholder_at: Option<usize> = None;
    let mut i = 0usize;
    while i < b.len() {
        match b[i] {
            b'\n' => {
                line += 1;
                line_start = i + 1;
                added_on_line = 0;
                i += 1;
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            q @ (b'\'' | b'"') => {
                let (raw, bytes, close) = literal_open(b, i, q);
                let triple = close.len() == 3;
                i += close.len();
                let mut closed = false;
                while i < b.len() {
                    if b[i..].starts_with(close) {
                        closed = true;
                        break;
                    }
                    match b[i] {
                        // A single-quoted literal ends at the line's end (the parser reports it).
                        b'\n' if !triple => break,
                        b'\n' => {
                            line += 1;
                            line_start = i + 1;
                            added_on_line = 0;
                            i += 1;
                        }
                        // An unterminated single-quoted literal: the parser reports it.
                        b'\\' if !triple && b.get(i + 1).is_none() => i += 1,
                        b'\\' => {
                            let digits = match b.get(i + 1) {
                                Some(b'u') if !raw && !bytes => 4,
                                Some(b'U') if !raw && !bytes => 8,
                                _ => 0,
                            };
                            let cp = b.get(i + 2..i + 2 + digits).and_then(hex_value);
                            match cp {
                                Some(cp) if digits > 0 => {
                                    if let Some(ph) = placeholder_of(cp) {
                                        text.push_str(&src[copied..i]);
                                        text.push_str(&format!("\\U{:08x}", ph as u32));
                                        copied = i + 2 + digits;
                                        // Characters written minus characters replaced.
                                        let delta = 10 - (2 + digits) as u32;
                                        let col =
                                            src.get(line_start..i).map_or(0, |s| s.chars().count())
                                                as u32;
                                        added_on_line += delta;
                                        if delta > 0 {
                                            out.shifts.push(Shift {
                                                line,
                                                // 1-based column just past the escape as rewritten.
                                                col_after: col
                                                    + added_on_line
                                                    + 2
                                                    + digits as u32
                                                    + 1,
                                                delta,
                                            });
                                        }
                                    } else if (PLACEHOLDER_BASE..=0x10_FFFF).contains(&cp) {
                                        placeholder_at.get_or_insert(i);
                                    }
                                    i += 2 + digits;
                                }
                                // `\\`, `\'`, a backslash-newline, ...: the
                                // next byte is never a delimiter.
                                _ => {
                                    if b.get(i + 1) == Some(&b'\n') {
                                        line += 1;
                                        line_start = i + 2;
                                        added_on_line = 0;
                                    }
                                    i += 2;
                                }
                            }
                        }
                        0xF4 => {
                            if !bytes
                                && b.get(i + 1) == Some(&0x8F)
                                && b.get(i + 2).is_some_and(|&x| x >= 0xA0)
                            {
                                placeholder_at.get_or_insert(i);
                            }
                            i += 1;
                        }
                        _ => i += 1,
                    }
                }
                if closed {
                    i += close.len();
                }
            }
            _ => i += 1,
        }
    }
    if copied > 0 {
        text.push_str(&src[copied..]);
        out.text = Some(text);
        out.real_placeholder = placeholder_at;
    } else {
        out.shifts.clear();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rw(s: &str) -> Option<String> {
        rewrite(s).text
    }

    #[test]
    fn rewrites_surrogate_escapes_only_where_they_are_escapes() {
        for (src, want) in [
            ("x = '\\ud800'", Some("x = '\\U0010f800'")),
            ("x = '\\U0000DFFF'", Some("x = '\\U0010ffff'")),
            ("x = '\\ud83d\\ude00'", Some("x = '\\U0010f83d\\U0010fe00'")),
            ("x = f'{1}\\udc00'", Some("x = f'{1}\\U0010fc00'")),
            // Not escapes: raw, bytes, an escaped backslash, comments, other code points.
            ("x = r'\\ud800'", None),
            ("x = Rb'\\ud800'", None),
            ("x = b'\\ud800'", None),
            ("x = '\\\\ud800'", None),
            ("x = 1  # '\\ud800'", None),
            ("x = '\\ud7ff\\ue000'", None),
            ("x = '\\ud80'", None),
            // A keyword touching the quote is not a prefix (`or` is not raw).
            ("x = 0 or'\\ud800'", Some("x = 0 or'\\U0010f800'")),
            // The quote of the other kind and an escaped quote do not end it.
            ("x = '\"\\'\\ud800'", Some("x = '\"\\'\\U0010f800'")),
            ("x = '''a\n'\\udfff'''", Some("x = '''a\n'\\U0010ffff'''")),
        ] {
            assert_eq!(rw(src).as_deref(), want, "{src}");
        }
    }

    #[test]
    fn placeholders_are_refused_in_surrogate_mode_only() {
        assert_eq!(rewrite("x = '\u{10F800}'").real_placeholder, None);
        assert_eq!(rewrite("x = '\\U0010f800'").real_placeholder, None);
        assert_eq!(
            rewrite("x = '\\ud800' + '\u{10FFFF}'").real_placeholder,
            Some(16)
        );
        assert_eq!(
            rewrite("x = '\\ud800' + '\\U0010FABC'").real_placeholder,
            Some(16)
        );
        assert_eq!(
            rewrite("x = '\\ud800' + r'\u{10F801}'").real_placeholder,
            Some(17)
        );
        // Below the range, or in a comment: fine.
        assert_eq!(
            rewrite("x = '\\ud800' + '\u{10F7FF}'  # \u{10F800}").real_placeholder,
            None
        );
    }

    #[test]
    fn columns_map_back() {
        let r = rewrite("x = '\\ud800' + y");
        // `y` is at column 16 as written, 20 after the rewrite.
        assert_eq!(unshift(&r.shifts, 1, 20), 16);
        assert_eq!(unshift(&r.shifts, 1, 5), 5);
        assert_eq!(unshift(&r.shifts, 2, 20), 20);
        let r = rewrite("x = 'é\\ud800\\udc00' + y");
        // `y` at 24 as written; two escapes each +4.
        assert_eq!(unshift(&r.shifts, 1, 32), 24);
    }

    #[test]
    fn mapping() {
        assert_eq!(placeholder_of(0xD800), Some('\u{10F800}'));
        assert_eq!(placeholder_of(0xDFFF), Some('\u{10FFFF}'));
        assert_eq!(placeholder_of(0xE000), None);
        assert_eq!(surrogate_of('\u{10F801}'), Some(0xD801));
        assert_eq!(surrogate_of('\u{10F7FF}'), None);
        assert!(has_placeholder("a\u{10FFFF}"));
        assert!(!has_placeholder("a\u{10F7FF}\u{F4}"));
        assert_eq!(first_placeholder("ab\u{10F800}"), Some((2, '\u{10F800}')));
    }
}
