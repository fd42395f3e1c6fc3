//! Bounded text renderings of results, for the calling model's context.
//!
//! `structuredContent` always carries the complete result; the text content
//! is what most clients put in front of the model, so it is kept short the
//! way glove-python does it: lists and dicts past [`MAX_ITEMS`] entries and
//! strings past [`MAX_STR_CHARS`] characters are elided with a marker naming
//! the true size, and the whole text never exceeds [`MAX_TEXT_BYTES`].

use serde_json::Value;
use std::fmt::Write as _;

/// Items of a list or dict shown before eliding the rest (glove-python's 25).
pub const MAX_ITEMS: usize = 25;
/// Characters of a string shown before eliding the rest (glove-python's 300).
pub const MAX_STR_CHARS: usize = 300;
/// Hard cap of one text rendering, in bytes. Why 4 KiB: about a thousand
/// tokens, enough for an answer, small enough that a runaway result cannot
/// flood the caller's context.
pub const MAX_TEXT_BYTES: usize = 4096;
/// Nesting shown before a container is summarized as `[…N items]`. Keeps the
/// recursion below bounded whatever the value's depth.
const MAX_NEST: usize = 6;
/// Bytes of a repr or stdout shown verbatim inside a run rendering.
const MAX_BLOCK_BYTES: usize = 1500;

/// Render `v` as compact JSON with long containers and strings elided.
pub fn elide_json(v: &Value) -> String {
    let mut out = String::new();
    write_elided(&mut out, v, 0);
    out
}

fn write_elided(out: &mut String, v: &Value, depth: usize) {
    match v {
        Value::String(s) => {
            let count = s.chars().count();
            if count > MAX_STR_CHARS {
                let head: String = s.chars().take(MAX_STR_CHARS).collect();
                let shown = Value::String(format!("{head}… [{count} chars]"));
                out.push_str(&shown.to_string());
            } else {
                out.push_str(&v.to_string());
            }
        }
        Value::Array(items) => {
            if depth >= MAX_NEST && !items.is_empty() {
                let _ = write!(out, "[…{} items]", items.len());
                return;
            }
            out.push('[');
            for (i, item) in items.iter().take(MAX_ITEMS).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_elided(out, item, depth + 1);
            }
            write_more(out, items.len(), "items");
            out.push(']');
        }
        Value::Object(map) => {
            if depth >= MAX_NEST && !map.is_empty() {
                let _ = write!(out, "{{…{} keys}}", map.len());
                return;
            }
            out.push('{');
            for (i, (k, item)) in map.iter().take(MAX_ITEMS).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_elided(out, &Value::String(k.clone()), depth + 1);
                out.push_str(": ");
                write_elided(out, item, depth + 1);
            }
            write_more(out, map.len(), "keys");
            out.push('}');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// `, … N more (LEN WHAT)` when a container of `len` entries was cut at
/// [`MAX_ITEMS`].
fn write_more(out: &mut String, len: usize, what: &str) {
    if len > MAX_ITEMS {
        let _ = write!(out, ", … {} more ({len} {what})", len - MAX_ITEMS);
    }
}

/// Cut `s` to at most `max` bytes on a char boundary, saying how much was cut.
pub fn cap(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let marker_room = 48;
    let mut end = max.saturating_sub(marker_room);
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more bytes elided]", &s[..end], s.len() - end)
}

/// The text for any non-run result: elided JSON, capped.
pub fn render_generic(v: &Value) -> String {
    cap(&elide_json(v), MAX_TEXT_BYTES)
}

/// One line for an `error` object: `runtime NameError (line 3, col 5): message`.
pub fn render_error(err: &Value) -> String {
    let kind = err.get("kind").and_then(Value::as_str).unwrap_or("error");
    let ty = err.get("type").and_then(Value::as_str).unwrap_or("");
    let msg = err.get("message").and_then(Value::as_str).unwrap_or("");
    let mut s = format!("{kind} {ty}");
    match (
        err.get("line").and_then(Value::as_u64),
        err.get("col").and_then(Value::as_u64),
    ) {
        (Some(l), Some(c)) => {
            let _ = write!(s, " (line {l}, col {c})");
        }
        (Some(l), None) => {
            let _ = write!(s, " (line {l})");
        }
        _ => {}
    }
    let _ = write!(s, ": {}", cap(msg, MAX_BLOCK_BYTES));
    if let Some(h) = err.get("hint").and_then(Value::as_str) {
        let _ = write!(s, "\nhint: {}", cap(h, 500));
    }
    s
}

/// The text of a `run_program`/`validate` result: status, value, stdout,
/// a trace summary and the error, each bounded.
pub fn render_run(report: &Value) -> String {
    let mut s = String::new();
    let ok = report.get("ok").and_then(Value::as_bool).unwrap_or(false);
    if ok {
        s.push_str("ok");
    } else {
        s.push_str("failed");
    }
    if let Some(g) = report.get("grade").filter(|g| g.is_object()) {
        let w = g.get("w").and_then(Value::as_u64).unwrap_or(0);
        let d = g.get("d").and_then(Value::as_u64).unwrap_or(0);
        let _ = write!(s, " (grade w={w} d={d})");
    }
    s.push('\n');
    if let Some(err) = report.get("error").filter(|e| e.is_object()) {
        let _ = writeln!(s, "error: {}", render_error(err));
    }
    if let Some(program) = report.get("program").and_then(Value::as_str) {
        let provider = report
            .get("provider")
            .and_then(Value::as_str)
            .unwrap_or("?");
        let _ = writeln!(
            s,
            "program (from {provider}):\n{}",
            cap(program, MAX_BLOCK_BYTES)
        );
    }
    if let Some(calls) = report.get("calls").and_then(Value::as_array).filter(|_| ok) {
        let names: Vec<String> = calls
            .iter()
            .map(|c| c.as_str().map_or_else(|| c.to_string(), String::from))
            .collect();
        let shown = if names.is_empty() {
            "(no tool calls)".to_string()
        } else {
            names.join(", ")
        };
        let _ = writeln!(s, "calls: {}", cap(&shown, 500));
    }
    if let Some(repr) = report.get("repr").and_then(Value::as_str) {
        if repr.len() <= MAX_BLOCK_BYTES {
            let _ = writeln!(s, "value: {repr}");
        } else {
            let shown = report.get("value").map(elide_json).unwrap_or_default();
            let _ = writeln!(
                s,
                "value (repr is {} chars; shown elided, complete in structuredContent): {}",
                repr.chars().count(),
                cap(&shown, MAX_BLOCK_BYTES)
            );
        }
    }
    if let Some(out) = report
        .get("stdout")
        .and_then(Value::as_str)
        .filter(|o| !o.is_empty())
    {
        let _ = writeln!(s, "stdout:\n{}", cap(out, MAX_BLOCK_BYTES));
    }
    if let Some(trace) = report
        .get("trace")
        .and_then(Value::as_array)
        .filter(|t| !t.is_empty())
    {
        let _ = writeln!(s, "trace: {}", summarize_trace(trace));
    }
    if let Some(sess) = report.get("session").filter(|x| x.is_object()) {
        let _ = writeln!(s, "session: {}", cap(&elide_json(sess), 500));
    }
    cap(s.trim_end(), MAX_TEXT_BYTES)
}

/// `3 tool calls (read_file ×2, find_files); 1 failed`.
fn summarize_trace(trace: &[Value]) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    let mut failed = 0usize;
    for t in trace {
        let name = t
            .get("tool")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string();
        if t.get("ok").and_then(Value::as_bool) == Some(false) {
            failed += 1;
        }
        match counts.iter_mut().find(|(n, _)| *n == name) {
            Some((_, c)) => *c += 1,
            None => counts.push((name, 1)),
        }
    }
    let parts: Vec<String> = counts
        .iter()
        .take(MAX_ITEMS)
        .map(|(n, c)| {
            if *c > 1 {
                format!("{n} ×{c}")
            } else {
                n.clone()
            }
        })
        .collect();
    let mut s = format!(
        "{} tool call{} ({}{})",
        trace.len(),
        if trace.len() == 1 { "" } else { "s" },
        parts.join(", "),
        if counts.len() > MAX_ITEMS {
            ", …"
        } else {
            ""
        }
    );
    if failed > 0 {
        let _ = write!(s, "; {failed} failed");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn long_lists_and_strings_are_elided_with_counts() {
        let v = json!({"xs": (0..100).collect::<Vec<_>>(), "s": "a".repeat(1000)});
        let t = elide_json(&v);
        assert!(t.contains("… 75 more (100 items)"), "{t}");
        assert!(t.contains("[1000 chars]"), "{t}");
        assert!(t.len() < 600, "{}", t.len());
    }

    #[test]
    fn deep_values_do_not_recurse_without_bound() {
        let mut v = json!(1);
        for _ in 0..150 {
            v = json!([v]);
        }
        let t = elide_json(&v);
        assert!(t.contains("[…1 items]"), "{t}");
    }

    #[test]
    fn cap_respects_char_boundaries() {
        let s = "é".repeat(5000);
        let c = cap(&s, 100);
        assert!(c.len() <= 100 + 40, "{}", c.len());
        assert!(c.contains("more bytes elided"));
    }

    #[test]
    fn run_rendering_is_bounded_and_names_the_error() {
        let big = "x".repeat(100_000);
        let r = json!({
            "ok": false, "value": null, "repr": null, "stdout": big,
            "grade": {"w": 1, "d": 0},
            "trace": [{"tool": "read_file", "ok": true}, {"tool": "read_file", "ok": false}],
            "error": {"kind": "runtime", "type": "NameError", "message": "name 'x' is not defined",
                      "line": 3, "col": 5, "hint": null}
        });
        let t = render_run(&r);
        assert!(t.len() <= MAX_TEXT_BYTES, "{}", t.len());
        assert!(
            t.contains("runtime NameError (line 3, col 5): name 'x' is not defined"),
            "{t}"
        );
        assert!(t.contains("2 tool calls (read_file ×2); 1 failed"), "{t}");
    }

    #[test]
    fn run_rendering_elides_a_huge_value() {
        let xs: Vec<i64> = (0..10_000).collect();
        let repr = format!("{xs:?}");
        let r = json!({"ok": true, "value": xs, "repr": repr, "stdout": "", "grade": {"w":0,"d":0}, "trace": [], "error": null});
        let t = render_run(&r);
        assert!(t.starts_with("ok (grade w=0 d=0)"), "{t}");
        assert!(t.contains("9975 more (10000 items)"), "{t}");
        assert!(t.len() <= MAX_TEXT_BYTES);
    }
}
