//! Human-readable output never hands a terminal raw control text: a
//! program (and a tool it calls) choosing ESC/CSI sequences, CR, C1 controls
//! (U+009B), bidi overrides and isolates, zero-width and other format
//! characters, or line/paragraph separators, through `lackpy run` (value,
//! printed output, error), `lackpy trace list` and `lackpy trace show`
//! (program text, tool arguments, tool error messages). Every one of them is
//! shown escaped (`\x1b`, `\u202e`); `--json` stays exact JSON.

use crate::util::{self, json, lackpy, run_with_stdin, workspace};
use std::path::Path;

/// Characters that must never reach a terminal raw from a program: Cc but
/// newline and tab, and the Cf/Zl/Zp characters the hostile text uses.
fn is_unsafe(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            c,
            '\u{200b}'..='\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{feff}'
                | '\u{2028}'
                | '\u{2029}'
        )
}

/// The raw characters the program's text and values carry.
const RAW: &[char] = &[
    '\x1b', '\x07', '\u{9b}', '\u{202e}', '\u{2066}', '\u{200b}', '\u{feff}', '\u{2028}',
];

/// How each raw character must be shown (and CR, made at run time).
const SHOWN: &[&str] = &[
    "\\x1b", "\\x07", "\\x9b", "\\u202e", "\\u2066", "\\u200b", "\\ufeff", "\\u2028",
];

/// A program whose source holds the raw characters in a string literal and
/// in a comment (CR cannot be raw in a literal: it ends the line, so the
/// value gets it from `\r`), prints the string, returns it through
/// `fail`, a tool whose error message is its argument.
fn hostile_program() -> String {
    let raw =
        "A\x1b]0;pwned\x07B\x1b[2J\\rC\u{9b}31mD\u{202e}E\u{2066}F\u{200b}G\u{feff}H\u{2028}I";
    format!("s = \"{raw}\"  # {raw}\nprint(s)\nfail(s)\n")
}

fn hostile_workspace() -> tempfile::TempDir {
    workspace(&[
        (
            ".lackpy/config.toml",
            "[[tools]]\nname = \"fail\"\nprovider = \"python\"\nmodule = \"evil\"\nfunction = \"fail\"\nreturns = \"None\"\ngrade_w = 0\neffects_ceiling = 0\nargs = [{ name = \"s\", type = \"str\" }]\n",
        ),
        (".lackpy/tools/evil.py", "def fail(s):\n    raise ValueError(s)\n"),
    ])
}

/// Every line of `out` is free of unsafe characters; returns the text.
fn check_clean(what: &str, out: &[u8]) -> String {
    let text = String::from_utf8_lossy(out).into_owned();
    if let Some(c) = text.chars().find(|c| is_unsafe(*c)) {
        panic!(
            "{what}: raw U+{:04X} reached the terminal:\n{}",
            c as u32,
            text.escape_debug()
        );
    }
    text
}

fn assert_all_shown(what: &str, text: &str) {
    for s in SHOWN {
        assert!(
            text.contains(s),
            "{what}: {s} not shown:\n{}",
            text.escape_debug()
        );
    }
}

fn trace(ws: &Path, args: &[&str]) -> std::process::Output {
    let mut c = lackpy();
    c.arg("trace").args(args).arg("--workspace").arg(ws);
    c.output().expect("lackpy trace")
}

#[test]
fn run_and_trace_escape_hostile_text() {
    assert!(
        util::have_python(),
        "python3 is required (the python tool provider writes the hostile text)"
    );
    let ws = hostile_workspace();
    let w = ws.path().to_str().unwrap_or(".");
    let program = hostile_program();
    for c in RAW {
        assert!(
            program.contains(*c),
            "the program must carry U+{:04X} raw",
            *c as u32
        );
    }

    // `lackpy run` (human): the printed text on stdout, the tool error on stderr.
    let out = run_with_stdin(
        &["run", "-", "--workspace", w, "--tools", "fail"],
        &program,
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stdout = check_clean("run stdout", &out.stdout);
    let stderr = check_clean("run stderr", &out.stderr);
    assert_all_shown("run stdout", &stdout);
    assert!(stdout.contains("\\x0d"), "CR not shown: {stdout:?}");
    // The tool error message (the raw argument) is one escaped line.
    let err_line = stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_else(|| panic!("no error line: {stderr:?}"));
    assert!(err_line.contains("ToolFailed"), "{err_line}");
    assert_all_shown("run error line", err_line);
    assert!(err_line.contains("\\x0d"), "{err_line}");

    // The value's repr too (a program that returns the string).
    let out = run_with_stdin(
        &["run", "-", "--workspace", w, "--tools", "fail"],
        &program.replace("fail(s)\n", "s\n"),
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = check_clean("run value", &out.stdout);
    assert!(stdout.contains("\\x1b"), "{stdout:?}");

    // `lackpy trace list`: the program's first line, one line per run.
    let out = trace(ws.path(), &["list"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let list = check_clean("trace list", &out.stdout);
    assert_eq!(list.lines().count(), 2, "{list:?}");
    assert!(list.contains("\\x1b]0;pwned\\x07"), "{list:?}");

    // `lackpy trace show`: program text, tool arguments and the tool error.
    let failed_run =
        String::from_utf8_lossy(&trace(ws.path(), &["list", "--json"]).stdout).into_owned();
    let runs: serde_json::Value = serde_json::from_str(&failed_run).expect("trace list --json");
    let failed = runs
        .as_array()
        .and_then(|a| a.iter().find(|r| r["outcome"] == "tool"))
        .expect("the failed run is listed");
    // --json keeps the program exactly (JSON escapes, no terminal escapes).
    assert_eq!(failed["program"].as_str(), Some(program.as_str()));
    let id = failed["run_id"].as_str().unwrap_or("");
    let out = trace(ws.path(), &["show", id]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let show = check_clean("trace show", &out.stdout);
    assert_all_shown("trace show", &show);
    let call = show
        .lines()
        .find(|l| l.trim_start().starts_with("fail(") && l.contains(" us"))
        .unwrap_or_else(|| panic!("no call line: {show:?}"));
    assert!(call.contains("FAILED"), "{call}");
    assert_all_shown("trace show call line", call);
    // The program's three lines, each indented, and nothing else between
    // "program:" and "calls".
    let prog: Vec<&str> = show
        .lines()
        .skip_while(|l| *l != "program:")
        .skip(1)
        .take_while(|l| !l.starts_with("calls"))
        .collect();
    assert_eq!(prog.len(), 3, "{prog:?}");
    assert!(prog.iter().all(|l| l.starts_with("    ")), "{prog:?}");
}

#[test]
fn run_escapes_bidi_and_c1_from_print() {
    // No tool needed: printed bidi, C1 and a CR that would overwrite the
    // trace summary line.
    let ws = workspace(&[]);
    let w = ws.path().to_str().unwrap_or(".");
    let program =
        "print('ok\\r-- 0 tool calls, fake\\u202e\\u2067x\\u2069\\x9b2J\\u200f\\ufeff\\u2029')\n";
    let out = run_with_stdin(
        &["run", "-", "--workspace", w, "--tools", "read_file"],
        program,
        None,
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let stdout = check_clean("run stdout", &out.stdout);
    for s in [
        "\\x0d", "\\u202e", "\\u2067", "\\u2069", "\\x9b", "\\u200f", "\\ufeff", "\\u2029",
    ] {
        assert!(stdout.contains(s), "{s} not shown: {stdout:?}");
    }
    // The printed text as one line (the CR did not start a line of its
    // own), and no value line for `None`.
    assert_eq!(stdout.lines().collect::<Vec<_>>().len(), 1, "{stdout:?}");
    assert!(stdout.starts_with("ok\\x0d-- 0 tool calls"), "{stdout:?}");
    // --json is exact: the same text, raw, inside a JSON string.
    let out = run_with_stdin(
        &[
            "run",
            "--json",
            "-",
            "--workspace",
            w,
            "--tools",
            "read_file",
        ],
        program,
        None,
    );
    let v = json(&out);
    assert_eq!(
        v["stdout"].as_str(),
        Some(
            "ok\r-- 0 tool calls, fake\u{202e}\u{2067}x\u{2069}\u{9b}2J\u{200f}\u{feff}\u{2029}\n"
        )
    );
}
