//! Surrogate mode (see `lackpy_policy::lang::surrogate`): a program whose
//! string literals hold lone surrogate escapes carries placeholders
//! (U+10F800 + (cp − 0xD800)) in its strings, and here they behave as
//! CPython's surrogates wherever a surrogate and a private-use character
//! differ observably: repr/ascii (`format::str_repr_into`), ordering
//! ([`cmp_str`]), printing and tool arguments ([`encode_error`]: CPython's
//! `UnicodeEncodeError` from the UTF-8 codec), and a real placeholder from
//! outside (a tool result or session variable) is refused. Every other str
//! operation (len, indexing, find, split, case mapping, `isX()`) already
//! treats a private-use character exactly as CPython treats a surrogate.
//!
//! The mode is per thread, set by [`Mode::enter`] for one run; off, the
//! placeholder range is ordinary private-use text and nothing here costs
//! more than a thread-local read on an unequal string comparison.

use super::err::{Exc, InterpResult};
use lackpy_policy::lang::surrogate::{first_placeholder, has_placeholder, surrogate_of};
use lackpy_policy::wire::Data;
use std::cell::Cell;
use std::cmp::Ordering;

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
}

/// Whether the running program is in surrogate mode.
#[inline]
pub fn on() -> bool {
    ON.with(Cell::get)
}

/// Surrogate mode for the duration of one run (restored on drop).
pub struct Mode(bool);

impl Mode {
    /// Set the mode of this thread to `on` until the guard drops.
    pub fn enter(on: bool) -> Mode {
        Mode(ON.with(|c| c.replace(on)))
    }
}

impl Drop for Mode {
    fn drop(&mut self) {
        let prev = self.0;
        ON.with(|c| c.set(prev));
    }
}

/// The code point `c` stands for: its surrogate in surrogate mode.
#[inline]
pub fn code_point(c: char) -> u32 {
    match surrogate_of(c) {
        Some(s) if on() => s,
        _ => c as u32,
    }
}

/// Code point order of two strs (CPython's `str` comparison).
#[inline]
pub fn cmp_str(a: &str, b: &str) -> Ordering {
    // UTF-8 byte order is code point order, except that in surrogate mode
    // the placeholders (the top of plane 16) sort as U+D800..U+DFFF.
    let o = a.as_bytes().cmp(b.as_bytes());
    if o == Ordering::Equal || !on() {
        return o;
    }
    // Only the first differing character decides.
    let common = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let mut start = common;
    while start > 0 && !a.is_char_boundary(start) {
        start -= 1;
    }
    let (x, y) = (a[start..].chars().next(), b[start..].chars().next());
    match (x, y) {
        (Some(x), Some(y)) => code_point(x).cmp(&code_point(y)),
        _ => o,
    }
}

/// CPython's `UnicodeEncodeError` for encoding `s` to UTF-8 when it holds a
/// surrogate (surrogate mode only): positions are characters of `s`, and a
/// run of surrogates is reported as one range, as CPython's codec does.
pub fn encode_error(s: &str) -> Option<Box<Exc>> {
    if !on() {
        return None;
    }
    let (start, c) = first_placeholder(s)?;
    let run = s
        .chars()
        .skip(start)
        .take_while(|c| surrogate_of(*c).is_some())
        .count();
    let msg = if run == 1 {
        format!(
            "'utf-8' codec can't encode character '\\u{:04x}' in position {start}: surrogates not allowed",
            code_point(c)
        )
    } else {
        format!(
            "'utf-8' codec can't encode characters in position {start}-{}: surrogates not allowed",
            start + run - 1
        )
    };
    Some(Exc::py("UnicodeEncodeError", msg))
}

/// `print`'s text is written piece by piece (each argument, each `sep`,
/// then `end`; `starts` holds each piece's byte offset in `text`). In
/// surrogate mode the first piece holding a surrogate fails: the bytes
/// written before it and its error.
pub fn print_error(text: &str, starts: &[usize]) -> Option<(usize, Box<Exc>)> {
    if !on() || !has_placeholder(text) {
        return None;
    }
    for (i, &s) in starts.iter().enumerate() {
        let e = starts.get(i + 1).copied().unwrap_or(text.len());
        if let Some(err) = text.get(s..e).and_then(encode_error) {
            return Some((s, err));
        }
    }
    None
}

/// The first error of plain data crossing to a tool: a str holding a
/// surrogate cannot be encoded to UTF-8 (surrogate mode only).
pub fn data_error(d: &Data) -> Option<Box<Exc>> {
    if !on() {
        return None;
    }
    let mut stack = vec![d];
    while let Some(d) = stack.pop() {
        match d {
            Data::Str(s) => {
                if let Some(e) = encode_error(s) {
                    return Some(e);
                }
            }
            Data::List(v) | Data::Tuple(v) | Data::Set(v) => stack.extend(v.iter().rev()),
            Data::Dict(v) => {
                for (k, x) in v.iter().rev() {
                    stack.push(x);
                    stack.push(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// Whether plain data from outside holds a placeholder character: in
/// surrogate mode it would be taken for a surrogate.
pub fn data_has_placeholder(d: &Data) -> bool {
    let mut stack = vec![d];
    while let Some(d) = stack.pop() {
        match d {
            Data::Str(s) if has_placeholder(s) => return true,
            Data::List(v) | Data::Tuple(v) | Data::Set(v) => stack.extend(v.iter()),
            Data::Dict(v) => {
                for (k, x) in v {
                    stack.push(k);
                    stack.push(x);
                }
            }
            _ => {}
        }
    }
    false
}

/// The error for a placeholder character arriving from outside in surrogate mode.
pub fn from_outside_error(what: &str) -> InterpResult<()> {
    Err(Exc::py(
        "ValueError",
        format!(
            "{what} holds a character of U+10F800..U+10FFFF, which this program (it has a lone surrogate escape such as '\\ud800') uses to stand for surrogates"
        ),
    ))
}
