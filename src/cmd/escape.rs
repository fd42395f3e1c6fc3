//! Text for a terminal. Everything a human-readable CLI output shows that a
//! program, a tool, a worker or a workspace file could have chosen (program
//! text, values, printed output, error messages, tool arguments, names from a
//! workspace config) goes through [`line`] or [`block`] first, so it cannot
//! drive the operator's terminal (ESC and CSI sequences: titles, screen
//! clears, cursor moves; CR: overwriting a line) or hide what it says
//! (bidirectional overrides and isolates, zero-width and other invisible
//! format characters), and a one-line field cannot forge another line.
//!
//! Escapes are visible, so the reader sees that something was there: `\x1b`
//! up to U+00FF, `\u202e` in the BMP, `\U000e0001` beyond. `--json` output
//! needs none of this: it is exact JSON (serde escapes control characters,
//! and a JSON reader is not a terminal).

use std::borrow::Cow;

/// Must `c` be escaped before it reaches a terminal? Every character of
/// Unicode categories Cc (C0 controls, DEL, C1 controls such as U+009B CSI),
/// Cf (format: bidi embeddings, overrides, isolates and marks, zero-width
/// space/joiners, word joiner, invisible operators, BOM, interlinear
/// annotation, tags, …), Zl (U+2028) and Zp (U+2029).
pub fn is_unsafe(c: char) -> bool {
    c.is_control() || is_format(c) || matches!(c, '\u{2028}' | '\u{2029}')
}

/// Unicode general category Cf (Unicode 15.1).
fn is_format(c: char) -> bool {
    matches!(
        c as u32,
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x890..=0x891
            | 0x8E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    )
}

fn push_escaped(out: &mut String, c: char) {
    let n = c as u32;
    if n <= 0xff {
        out.push_str(&format!("\\x{n:02x}"));
    } else if n <= 0xffff {
        out.push_str(&format!("\\u{n:04x}"));
    } else {
        out.push_str(&format!("\\U{n:08x}"));
    }
}

fn escape(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    let bad = |c: char| is_unsafe(c) && !keep(c);
    if !text.chars().any(bad) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if bad(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// One field of one line: every unsafe character escaped, newline and tab
/// included (so the text cannot start a line of its own).
pub fn line(text: &str) -> Cow<'_, str> {
    escape(text, |_| false)
}

/// Text whose lines are its own structure (a program's printed output):
/// newline and tab kept, every other unsafe character escaped (CR too, so a
/// line cannot be overwritten).
pub fn block(text: &str) -> Cow<'_, str> {
    escape(text, |c| c == '\n' || c == '\t')
}

/// The width in columns [`line`] gives `c` (1 for a kept character): for
/// lining up a caret under an escaped excerpt.
pub fn escaped_width(c: char) -> usize {
    if !is_unsafe(c) {
        1
    } else if (c as u32) <= 0xff {
        4
    } else if (c as u32) <= 0xffff {
        6
    } else {
        10
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every character of every category that must not reach a terminal.
    fn unsafe_chars() -> Vec<char> {
        let mut v: Vec<char> = Vec::new();
        // Cc: C0, DEL, C1.
        v.extend((0u32..0x20).filter_map(char::from_u32));
        v.push('\u{7f}');
        v.extend((0x80u32..0xa0).filter_map(char::from_u32));
        // Cf: bidi, zero-width, BOM, soft hyphen, Arabic/Syriac marks, tags, ...
        for (a, b) in [
            (0xADu32, 0xAD),
            (0x600, 0x605),
            (0x61C, 0x61C),
            (0x6DD, 0x6DD),
            (0x70F, 0x70F),
            (0x180E, 0x180E),
            (0x200B, 0x200F),
            (0x202A, 0x202E),
            (0x2060, 0x2064),
            (0x2066, 0x206F),
            (0xFEFF, 0xFEFF),
            (0xFFF9, 0xFFFB),
            (0x110BD, 0x110BD),
            (0x1D173, 0x1D17A),
            (0xE0001, 0xE0001),
            (0xE0020, 0xE007F),
        ] {
            v.extend((a..=b).filter_map(char::from_u32));
        }
        // Zl, Zp.
        v.push('\u{2028}');
        v.push('\u{2029}');
        v
    }

    #[test]
    fn every_control_category_is_escaped_visibly() {
        for c in unsafe_chars() {
            let s = format!("a{c}b");
            let l = line(&s);
            assert!(
                !l.contains(c),
                "U+{:04X} reached the terminal raw: {l:?}",
                c as u32
            );
            assert!(l.starts_with("a\\") && l.ends_with('b'), "{l:?}");
            assert!(l.chars().all(|x| !is_unsafe(x)), "{l:?}");
            assert_eq!(l.chars().count(), 2 + escaped_width(c), "{l:?}");
            if c != '\n' && c != '\t' {
                assert_eq!(block(&s), l, "U+{:04X}", c as u32);
            }
        }
        assert_eq!(line("\x1b[2J"), "\\x1b[2J");
        assert_eq!(line("x\ry"), "x\\x0dy");
        assert_eq!(line("\u{9b}31m"), "\\x9b31m");
        assert_eq!(line("abc\u{202e}fed"), "abc\\u202efed");
        assert_eq!(line("\u{2066}x\u{2069}"), "\\u2066x\\u2069");
        assert_eq!(line("\u{feff}"), "\\ufeff");
        assert_eq!(line("tag\u{e0041}"), "tag\\U000e0041");
        assert_eq!(line("a\u{2028}b\u{2029}c"), "a\\u2028b\\u2029c");
    }

    #[test]
    fn lines_and_blocks_differ_only_in_newline_and_tab() {
        assert_eq!(line("a\nb\tc"), "a\\x0ab\\x09c");
        assert_eq!(block("a\nb\tc"), "a\nb\tc");
        assert_eq!(block("ok\r-- 0 tool calls\n"), "ok\\x0d-- 0 tool calls\n");
    }

    #[test]
    fn ordinary_text_is_untouched() {
        for s in [
            "",
            "plain ASCII: ~!@#$%^&*()_+`-={}[]|\\:\";'<>?,./",
            "é ü ß ñ Ω Ж 中文 日本語 한국어 עברית العربية",
            "emoji 🎉 and combining e\u{301}",
            "nbsp\u{a0}and ideographic\u{3000}space",
        ] {
            assert!(matches!(line(s), Cow::Borrowed(_)), "{s:?}");
            assert_eq!(line(s), s);
            assert_eq!(block(s), s);
        }
    }
}
