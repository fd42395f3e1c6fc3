//! `is_xid_start` and `is_xid_continue` with CPython 3.11's Unicode (14.0.0),
//! the two functions rustpython-parser's lexer imports from unic-ucd-ident
//! (whose tables are Unicode 10.0). The tables (`tables.rs`) are generated
//! by `gen_tables.py` from CPython 3.11's `str.isidentifier()`.

mod tables;

use std::cmp::Ordering;

fn in_ranges(ranges: &[(u32, u32)], c: char) -> bool {
    let u = u32::from(c);
    ranges
        .binary_search_by(|&(lo, hi)| {
            if hi < u {
                Ordering::Less
            } else if lo > u {
                Ordering::Greater
            } else {
                Ordering::Equal
            }
        })
        .is_ok()
}

/// Can `c` start an identifier (XID_Start; `_` is not in it)?
pub fn is_xid_start(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphabetic();
    }
    in_ranges(tables::XID_START, c)
}

/// Can `c` continue an identifier (XID_Continue)?
pub fn is_xid_continue(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || c == '_';
    }
    in_ranges(tables::XID_CONTINUE, c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_and_unicode_14() {
        assert!(is_xid_start('a') && !is_xid_start('_') && !is_xid_start('1'));
        assert!(is_xid_continue('_') && is_xid_continue('1') && !is_xid_continue('-'));
        // Unicode 10: Greek, CJK.
        assert!(is_xid_start('λ') && is_xid_start('中'));
        // Added in Unicode 11 (Georgian Mtavruli), 12 (U+A7BA), 13 (CJK
        // extension G), 14 (U+1E290 Toto).
        for c in ['\u{1C90}', '\u{A7BA}', '\u{30000}', '\u{1E290}'] {
            assert!(is_xid_start(c) && is_xid_continue(c), "{c:?}");
        }
        // A combining mark added in Unicode 14 continues but does not start.
        assert!(is_xid_continue('\u{1AC1}') && !is_xid_start('\u{1AC1}'));
        // Not assigned in Unicode 14 (U+1E4D0, Nag Mundari, is Unicode 15).
        assert!(!is_xid_start('\u{1E4D0}') && !is_xid_continue('\u{1E4D0}'));
        // Symbols and emoji are neither.
        assert!(!is_xid_start('€') && !is_xid_continue('😀'));
    }

    #[test]
    fn tables_are_sorted_and_disjoint() {
        for t in [tables::XID_START, tables::XID_CONTINUE] {
            assert!(t.iter().all(|&(lo, hi)| lo <= hi));
            assert!(t.windows(2).all(|w| w[0].1 + 1 < w[1].0));
        }
    }
}
