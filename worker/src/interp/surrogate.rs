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
#[inline(always)]
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

/// Code point order of two strs (CPython's `str` comparison), given their
/// UTF-8 bytes (taken as bytes: `PyStr::as_str` would validate them).
#[inline]
pub fn cmp_str(a: &[u8], b: &[u8]) -> Ordering {
    // UTF-8 byte order is code point order, except that in surrogate mode
    // the placeholders (the top of plane 16) sort as U+D800..U+DFFF.
    let o = a.cmp(b);
    if o != Ordering::Equal && on() {
        return cmp_surrogates(a, b, o);
    }
    o
}

/// [`cmp_str`] in surrogate mode: only the first differing character decides.
#[cold]
#[inline(never)]
fn cmp_surrogates(a: &[u8], b: &[u8], bytewise: Ordering) -> Ordering {
    let (Ok(a), Ok(b)) = (std::str::from_utf8(a), std::str::from_utf8(b)) else {
        return bytewise;
    };
    let common = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    let mut start = common;
    while start > 0 && !a.is_char_boundary(start) {
        start -= 1;
    }
    let (x, y) = (
        a.get(start..).and_then(|s| s.chars().next()),
        b.get(start..).and_then(|s| s.chars().next()),
    );
    match (x, y) {
        (Some(x), Some(y)) => code_point(x).cmp(&code_point(y)),
        _ => bytewise,
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
        if matches!(d, Data::Str(s) if has_placeholder(s)) {
            return true;
        }
        super::push_children(d, &mut stack);
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

#[cfg(test)]
mod tests {
    use super::super::{run_source, run_with_globals, ToolHost};
    use lackpy_policy::wire::{Data, ErrorKind, Limits, ToolFailure};
    use lackpy_policy::{validate, Namespace, ToolEntry};

    /// `echo` returns its argument; `weird` returns a real placeholder char.
    struct Host(Vec<Data>);

    impl ToolHost for Host {
        fn call(
            &mut self,
            name: &str,
            args: Vec<Data>,
            _kw: Vec<(String, Data)>,
        ) -> Result<Data, ToolFailure> {
            self.0.extend(args.iter().cloned());
            match name {
                "weird" => Ok(Data::Str("x\u{10F800}".into())),
                _ => Ok(args.into_iter().next().unwrap_or(Data::None)),
            }
        }
    }

    fn run(src: &str) -> (super::super::RunResult, String, Vec<Data>) {
        let mut out = String::new();
        let mut host = Host(Vec::new());
        let r = run_source(
            src,
            &["echo", "weird"],
            &mut host,
            &mut out,
            &Limits::default(),
        );
        (r, out, host.0)
    }

    #[test]
    fn surrogates_repr_and_order_as_cpython() {
        let (r, _, _) = run("s = '\\ud800'\n[s, s < '\\ue000', s > '\\ud7ff', sorted(['\\U00010000', s, '\\uffff'])]");
        assert_eq!(r.error, None);
        assert_eq!(
            r.repr.as_deref(),
            Some("['\\ud800', True, True, ['\\ud800', '\\uffff', '\u{10000}']]")
        );
        // The value crosses as placeholders (the front ends escape them).
        let Some(Data::List(v)) = r.value else {
            panic!("a list")
        };
        assert_eq!(v[0], Data::Str("\u{10F800}".into()));
        // The mode ends with the run.
        assert!(!super::on());
    }

    #[test]
    fn without_a_surrogate_escape_the_placeholder_range_is_ordinary() {
        let (r, out, _) = run("s = '\\U0010f800'\nprint(s)\n[s, s > '\\uffff', echo(s), weird()]");
        assert_eq!(r.error, None);
        assert_eq!(out, "\u{10F800}\n");
        assert_eq!(
            r.repr.as_deref(),
            Some("['\\U0010f800', True, '\\U0010f800', 'x\\U0010f800']")
        );
    }

    #[test]
    fn printing_a_surrogate_fails_after_the_pieces_before_it() {
        let (r, out, _) = run("print('a')\nprint('b', 'c\\udc00\\udc01', sep='-')");
        let e = r.error.expect("an error");
        assert_eq!(e.kind, ErrorKind::Runtime);
        assert_eq!(e.type_name, "UnicodeEncodeError");
        assert_eq!(
            e.message,
            "'utf-8' codec can't encode characters in position 1-2: surrogates not allowed"
        );
        assert_eq!(e.line, Some(2));
        assert_eq!(out, "a\nb-");
    }

    #[test]
    fn a_surrogate_never_reaches_a_tool() {
        let (r, _, sent) = run("x = echo('ok')\ny = echo(['a', {'k': 'b\\ud800'}])");
        let e = r.error.expect("an error");
        assert_eq!(e.type_name, "UnicodeEncodeError");
        assert_eq!(
            e.message,
            "'utf-8' codec can't encode character '\\ud800' in position 1: surrogates not allowed"
        );
        assert_eq!(sent, vec![Data::Str("ok".into())]);
    }

    #[test]
    fn a_real_placeholder_from_a_tool_is_refused_in_surrogate_mode() {
        let (r, _, _) = run("s = '\\ud800'\nt = weird()");
        let e = r.error.expect("an error");
        assert_eq!(e.kind, ErrorKind::Tool);
        assert!(e.message.contains("U+10F800"), "{}", e.message);
        assert_eq!(e.line, Some(2));
    }

    #[test]
    fn runtime_columns_are_those_of_the_program_as_written() {
        let (r, _, _) = run("x = '\\ud800\\udfff' + 1");
        let e = r.error.expect("an error");
        assert_eq!(e.type_name, "TypeError");
        assert_eq!((e.line, e.col), (Some(1), Some(5)));
        let (r, _, _) = run("x = ['\\ud800', 1 / 0]");
        let e = r.error.expect("an error");
        assert_eq!((e.line, e.col), (Some(1), Some(16)));
    }

    #[test]
    fn session_variables_with_surrogates_are_not_kept_nor_taken() {
        let ns = Namespace {
            tools: vec![ToolEntry {
                name: "echo".into(),
                target: "echo".into(),
                args: Vec::new(),
                grade: Default::default(),
            }],
        };
        let limits = Limits::default();
        let p = validate("a = '\\ud800'\nb = 'ok'", &ns, &limits).expect("valid");
        assert!(p.surrogates);
        let mut out = String::new();
        let (r, g) = run_with_globals(&p, &mut Host(Vec::new()), &mut out, &limits, Vec::new());
        assert_eq!(r.error, None);
        assert_eq!(g.vars, vec![("b".to_string(), Data::Str("ok".into()))]);
        assert_eq!(g.skipped, vec!["a".to_string()]);
        let p = lackpy_policy::validate_with_predefined(
            "c = v + '\\ud800'",
            &ns,
            &limits,
            &["v".into()],
        )
        .expect("valid");
        let initial = vec![("v".to_string(), Data::Str("\u{10FFFF}".into()))];
        let (r, _) = run_with_globals(&p, &mut Host(Vec::new()), &mut out, &limits, initial);
        assert_eq!(r.error.map(|e| e.type_name), Some("ValueError".to_string()));
    }
}
