//! `\N{...}` escapes as CPython 3.11 resolves them. The parser
//! (rustpython-parser, through `unicode_names2`) knows the names of a later
//! Unicode (`\N{SHAKING FACE}`, Unicode 15) and matches the algorithmic names
//! `HANGUL SYLLABLE ...` and `CJK UNIFIED IDEOGRAPH-...` in any case, where
//! CPython 3.11 (Unicode 14.0) refuses both: SyntaxError "(unicode error)
//! 'unicodeescape' codec can't decode bytes in position A-B: unknown Unicode
//! character name".

use super::names_table::ASSIGNED_311;
use std::cmp::Ordering;

fn in_ranges(ranges: &[(u32, u32)], u: u32) -> bool {
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

/// Code points of categories Cf, Zs (but the space), Zl and Zp in CPython
/// 3.11's Unicode (14.0.0): assigned, yet not printable.
const FORMAT_AND_SEPARATORS_311: &[(u32, u32)] = &[
    (0xA0, 0xA0),
    (0xAD, 0xAD),
    (0x600, 0x605),
    (0x61C, 0x61C),
    (0x6DD, 0x6DD),
    (0x70F, 0x70F),
    (0x890, 0x891),
    (0x8E2, 0x8E2),
    (0x1680, 0x1680),
    (0x180E, 0x180E),
    (0x2000, 0x200F),
    (0x2028, 0x202F),
    (0x205F, 0x2064),
    (0x2066, 0x206F),
    (0x3000, 0x3000),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x13438),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
];

/// CPython 3.11's `str.isprintable()` for one character: assigned in
/// Unicode 14.0 and not a control, format, surrogate, private-use or
/// separator character (the space excepted).
fn printable_311(c: char) -> bool {
    let u = c as u32;
    let control = u < 0x20 || (0x7F..=0x9F).contains(&u);
    let private = (0xE000..=0xF8FF).contains(&u) || u >= 0xF0000;
    in_ranges(ASSIGNED_311, u) && !control && !private && !in_ranges(FORMAT_AND_SEPARATORS_311, u)
}

/// CPython's tokenizer message for a non-ASCII character that cannot be
/// part of a name (`verify_identifier`).
pub(crate) fn invalid_character_message(c: char) -> String {
    if printable_311(c) {
        format!("invalid character '{c}' (U+{:04X})", c as u32)
    } else {
        format!("invalid non-printable character U+{:04X}", c as u32)
    }
}

/// Does CPython 3.11 resolve `\N{name}`?
pub(crate) fn known_name_311(name: &str) -> bool {
    unicode_names2::character(name).is_some() && known_to_cpython311(name)
}

/// Would CPython 3.11 resolve `\N{name}` (given that the parser did)?
fn known_to_cpython311(name: &str) -> bool {
    let Some(c) = unicode_names2::character(name) else {
        // The parser refuses it itself.
        return true;
    };
    let upper = name.to_ascii_uppercase();
    if (upper.starts_with("HANGUL SYLLABLE ") || upper.starts_with("CJK UNIFIED IDEOGRAPH-"))
        && upper != name
    {
        return false;
    }
    in_ranges(ASSIGNED_311, c as u32)
}
