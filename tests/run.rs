//! `lackpy run` end to end: the real binary, the real jailed worker, a
//! fixture workspace; the JSON contract, every error kind and exit status,
//! tool calls and trace files.

use crate::util::{json, lackpy, run_with_stdin, workspace};
use serde_json::json;
use std::path::Path;

fn run_json(ws: &Path, args: &[&str], program: &str) -> (i32, serde_json::Value) {
    let mut a = vec!["run", "--json", "--workspace", ws.to_str().unwrap_or(".")];
    a.extend_from_slice(args);
    let out = run_with_stdin(&a, program, None);
    (out.status.code().unwrap_or(-1), json(&out))
}

/// `lackpy run --workspace WS ARGS...` with `stdin`.
fn run_in(ws: &Path, args: &[&str], stdin: &str) -> std::process::Output {
    let mut a = vec!["run", "--workspace", ws.to_str().unwrap_or(".")];
    a.extend_from_slice(args);
    run_with_stdin(&a, stdin, None)
}

/// The run exited with `exit` and reported an error of `kind` and `type`.
fn assert_error(code: i32, v: &serde_json::Value, exit: i32, kind: &str, ty: &str) {
    assert_eq!(code, exit, "{v}");
    assert_eq!(
        (&v["error"]["kind"], &v["error"]["type"]),
        (&json!(kind), &json!(ty)),
        "{v}"
    );
}

fn traces(ws: &Path) -> Vec<serde_json::Value> {
    let dir = ws.join(".lackpy/traces");
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        out.extend(text.lines().filter_map(|l| serde_json::from_str(l).ok()));
    }
    out
}

fn fixture() -> tempfile::TempDir {
    workspace(&[
        ("a.txt", "hello\n"),
        ("src/m.py", "x = 1\n"),
        ("src/n.py", ""),
        ("notes.md", "# hi\n"),
    ])
}

#[test]
fn json_contract_shape() {
    let ws = fixture();
    let (code, v) = run_json(ws.path(), &[], "1+1\n");
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v,
        json!({"ok": true, "value": 2, "repr": "2", "stdout": "", "grade": {"w": 0, "d": 0}, "trace": [], "error": null})
    );
}

#[test]
fn tool_calls_are_answered_and_traced() {
    let ws = fixture();
    let (code, v) = run_json(
        ws.path(),
        &[],
        "t = read_file('a.txt')\nfiles = find_files('src/*.py')\n[t, files]\n",
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["value"], json!(["hello\n", ["src/m.py", "src/n.py"]]));
    assert_eq!(v["grade"], json!({"w": 1, "d": 1}));
    let trace = v["trace"].as_array().cloned().unwrap_or_default();
    assert_eq!(trace.len(), 2);
    assert_eq!(trace[0]["tool"], "read_file");
    assert_eq!(trace[0]["args"], json!(["a.txt"]));
    assert_eq!(trace[0]["ok"], true);
    assert_eq!(trace[0]["error"], json!(null));
    assert!(trace[0]["duration_us"].is_u64());
    let recs = traces(ws.path());
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["outcome"], "ok");
    assert_eq!(recs[0]["jail_level"], "full");
    assert_eq!(recs[0]["calls"].as_array().map(Vec::len), Some(2));
    assert_eq!(recs[0]["program_sha256"].as_str().map(str::len), Some(64));
}

#[test]
fn write_and_edit_with_tools_flag() {
    let ws = fixture();
    let prog = "write_file('out/new.txt', 'a-b-a')\nedit_file('out/new.txt', 'a', 'X')\n";
    let (code, v) = run_json(ws.path(), &["--tools", "write_file,edit_file"], prog);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["value"], json!(true));
    assert_eq!(
        std::fs::read_to_string(ws.path().join("out/new.txt")).unwrap_or_default(),
        "X-b-a"
    );
    assert_eq!(v["grade"], json!({"w": 3, "d": 3}));
}

#[test]
fn dict_value_keeps_insertion_order() {
    let ws = fixture();
    let (code, v) = run_json(ws.path(), &[], "{'b': 1, 'a': 2, 'c': {'z': 1, 'y': 2}}\n");
    assert_eq!(code, 0, "{v}");
    let keys = |v: &serde_json::Value| -> Vec<String> {
        v.as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default()
    };
    assert_eq!(keys(&v["value"]), ["b", "a", "c"], "{v}");
    assert_eq!(keys(&v["value"]["c"]), ["z", "y"], "{v}");
    assert_eq!(v["repr"], "{'b': 1, 'a': 2, 'c': {'z': 1, 'y': 2}}");
}

#[test]
fn print_goes_to_stdout_field() {
    let ws = fixture();
    let (code, v) = run_json(ws.path(), &[], "print('hi', 1)\nx = 3\n");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["stdout"], "hi 1\n");
    assert_eq!(v["value"], json!(null));
    assert_eq!(v["repr"], json!(null));
}

#[test]
fn validation_error_exits_2_and_is_traced() {
    let ws = fixture();
    let (code, v) = run_json(ws.path(), &[], "import os\n");
    assert_eq!(code, 2, "{v}");
    assert_eq!(v["ok"], false);
    assert_eq!(v["error"]["kind"], "validation");
    assert_eq!(traces(ws.path())[0]["outcome"], "validation");
}

#[test]
fn hallucinated_tool_is_a_validation_error() {
    let ws = fixture();
    let (code, v) = run_json(ws.path(), &[], "write_file('x', 'y')\n");
    assert_eq!(code, 2, "{v}");
    assert_eq!(v["error"]["kind"], "validation");
    assert!(!ws.path().join("x").exists());
}

#[test]
fn runtime_error_exits_1() {
    let ws = fixture();
    let (code, v) = run_json(ws.path(), &[], "x = 1\ny = x / 0\n");
    assert_error(code, &v, 1, "runtime", "ZeroDivisionError");
    assert_eq!(v["error"]["line"], 2);
}

#[test]
fn tool_errors_exit_1_and_are_traced() {
    let ws = fixture();
    for (prog, ty) in [
        ("read_file('../etc/passwd')", "PathOutsideWorkspace"),
        ("read_file('/etc/passwd')", "PathOutsideWorkspace"),
        ("read_file('missing.txt')", "FileNotFound"),
        ("read_file('src')", "IsADirectory"),
    ] {
        let (code, v) = run_json(ws.path(), &[], prog);
        assert_eq!(code, 1, "{prog}: {v}");
        assert_eq!(v["error"]["kind"], "tool", "{prog}: {v}");
        assert_eq!(v["error"]["type"], ty, "{prog}: {v}");
        assert_eq!(v["trace"][0]["ok"], false);
        assert!(v["trace"][0]["error"]
            .as_str()
            .unwrap_or("")
            .starts_with(ty));
    }
    assert_eq!(traces(ws.path()).len(), 4);
}

#[test]
fn keyword_and_wrong_arity_tool_calls() {
    let ws = fixture();
    let (code, v) = run_json(ws.path(), &[], "read_file(path='a.txt')");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["trace"][0]["args"], json!(["a.txt"]));
    // A call that does not match the tool's declared arguments is caught
    // by the validator (before anything runs), with the line and a hint.
    let (code, v) = run_json(ws.path(), &[], "x = 1\nread_file('a.txt', 'b')\n");
    assert_error(code, &v, 2, "validation", "ArgumentError");
    assert_eq!(v["error"]["line"], 2, "{v}");
    assert_eq!(v["error"]["hint"], "call it as read_file(path)", "{v}");
    assert_eq!(v["trace"], json!([]), "nothing ran: {v}");
}

/// Each limit stops a runaway program with a `limit` error that names it.
#[test]
fn fuel_wall_clock_and_memory_limits() {
    let ws = fixture();
    let spin = |n: &str| format!("t = 0\nfor i in range({n}):\n    t += i\nt\n");
    let cases: [(&[&str], String, &str); 3] = [
        (&["--fuel", "10000"], spin("10000000"), "fuel"),
        (
            &["--timeout", "0.5", "--fuel", "100000000000"],
            spin("1000000000"),
            "timeout",
        ),
        (
            &["--memory-mb", "64"],
            "x = 'a' * 500000000\nlen(x)\n".to_string(),
            "memory",
        ),
    ];
    for (args, program, ty) in cases {
        let t0 = std::time::Instant::now();
        let (code, v) = run_json(ws.path(), args, &program);
        assert_error(code, &v, 1, "limit", ty);
        if ty == "timeout" {
            assert!(t0.elapsed() < std::time::Duration::from_secs(5));
        }
    }
}

#[test]
fn encoding_and_size_are_validation_errors() {
    let ws = fixture();
    let out = {
        use std::io::Write;
        let mut c = lackpy();
        c.args([
            "run",
            "--json",
            "--workspace",
            ws.path().to_str().unwrap_or("."),
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
        let mut child = c.spawn().expect("spawn");
        if let Some(mut s) = child.stdin.take() {
            let _ = s.write_all(b"x = '\xff'\n");
        }
        child.wait_with_output().expect("wait")
    };
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(json(&out)["error"]["type"], "EncodingError");
    let big = format!("x = 1\n{}", "# pad\n".repeat(20_000));
    let (code, v) = run_json(ws.path(), &[], &big);
    assert_eq!(code, 2);
    assert_eq!(v["error"]["type"], "SourceTooLarge");
}

#[test]
fn usage_errors_exit_3() {
    let ws = fixture();
    let out = run_in(ws.path(), &["/nonexistent/prog.py"], "");
    assert_eq!(out.status.code(), Some(3));
    let out = run_in(ws.path(), &["--tools", "no_such_tool"], "1");
    assert_eq!(out.status.code(), Some(3));
    let out = run_with_stdin(&["run", "--workspace", "/nonexistent-dir"], "1", None);
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn human_output() {
    let ws = fixture();
    let out = run_in(ws.path(), &[], "print('hey')\n[1, 'a']\n");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hey\n[1, 'a']\n");
    assert!(String::from_utf8_lossy(&out.stderr).contains("0 tool calls"));
    let out = run_in(ws.path(), &[], "x = 1\ny = x / 0\n");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ZeroDivisionError"), "{err}");
    assert!(err.contains("y = x / 0"), "{err}");
    assert!(err.contains('^'), "{err}");
}

#[test]
fn file_argument_and_stdin_dash() {
    let ws = fixture();
    std::fs::write(ws.path().join("prog.py"), "read_file('a.txt')\n").unwrap_or(());
    let p = ws.path().join("prog.py");
    let out = run_in(ws.path(), &["--json", p.to_str().unwrap_or("")], "");
    assert_eq!(json(&out)["value"], "hello\n");
    let out = run_in(ws.path(), &["--json", "-"], "2*3");
    assert_eq!(json(&out)["value"], 6);
}

#[test]
fn read_only_workspace_still_runs() {
    let ws = fixture();
    // Make the trace directory impossible to create: a file where it should be.
    std::fs::write(ws.path().join(".lackpy"), "not a dir").unwrap_or(());
    let out = run_in(ws.path(), &["--json"], "1");
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("trace not written"));
}

#[test]
fn lone_surrogates_run_as_in_cpython_and_json_stays_strict() {
    let ws = fixture();
    let dir = ws.path().to_str().unwrap_or(".");
    let out = run_with_stdin(
        &["run", "--json", "--workspace", dir],
        "s = '\\ud800'\n[s, {s: 'x\\udfff'}, len(s), s < '\\ue000']\n",
        None,
    );
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    // Strict JSON (serde_json parses it): the value that holds a lone
    // surrogate is null with a warning; the repr is exact.
    let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap_or_default();
    assert_eq!(v["ok"], true, "{text}");
    assert_eq!(v["value"], serde_json::Value::Null, "{text}");
    assert!(
        v["warnings"].to_string().contains("lone surrogate"),
        "{text}"
    );
    assert!(
        text.contains(r#""repr":"['\\ud800', {'\\ud800': 'x\\udfff'}, 1, True]""#),
        "{text}"
    );
    // Printing one fails as CPython's strict UTF-8 stdout does.
    let (code, v) = run_json(ws.path(), &[], "print('ok')\nprint('a\\udc00')\n");
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["stdout"], "ok\n");
    assert_eq!(v["error"]["type"], "UnicodeEncodeError");
    assert_eq!(v["error"]["line"], 2);
}

/// Where CPython's recursion limit and lackpy's nesting bounds meet: the
/// same script run by `python3` (as a file, the program's frame the only
/// one) and by `lackpy run` must agree on each side of the boundary —
/// `repr`/f-strings of lists nested 997 deep work and 998 do not; `==`,
/// `<` and dict `==` work 999 deep and 1000 do not. Also ranges longer
/// than 2**64: `reversed` starts at the real last element, `==` compares
/// real lengths, and `str * n` past the index range is CPython's
/// `OverflowError`.
#[test]
fn nesting_bounds_and_huge_ranges_match_cpython() {
    assert!(
        crate::util::have_python(),
        "python3 is required for this test"
    );
    let ws = fixture();
    let mut cases: Vec<String> = Vec::new();
    for n in [996, 997] {
        cases.push(format!(
            "x = [0]\nfor i in range({n}):\n    x = [x]\nlen(repr(x)) + len(f'{{x}}')\n"
        ));
    }
    for n in [998, 999] {
        cases.push(format!(
            "x = [0]\ny = [0]\nfor i in range({n}):\n    x = [x]\n    y = [y]\n[x == y, x < y]\n"
        ));
        cases.push(format!(
            "x = {{'a': 0}}\ny = {{'a': 0}}\nfor i in range({n}):\n    x = {{'a': x}}\n    y = {{'a': y}}\nx == y\n"
        ));
    }
    cases.push(
        "h = int('18446744073709551616') + 5\nfor x in reversed(range(h)):\n    break\n\
         a = int('9' * 25)\n\
         [x, list(zip('ab', reversed(range(-a, 0)))), range(h) == range(h + 1), \
         [range(h)].count(range(h + 1)), list(zip('xy', reversed(range(3, h, 7))))]\n"
            .to_string(),
    );
    cases.push("'ab' * 9223372036854775807\n".to_string());
    cases.push("'' * 9223372036854775807\n".to_string());
    for prog in &cases {
        // CPython, given the program as a script file (its own frame the
        // only one): the repr of the last expression, or the exception type.
        let file = ws.path().join("probe.py");
        let direct = format!(
            "{}\ntry:\n    print('ok', repr(_v))\nexcept NameError:\n    pass\n",
            wrap_last(prog)
        );
        std::fs::write(&file, &direct).expect("write probe");
        let py = std::process::Command::new("python3")
            .arg(&file)
            .output()
            .expect("python3");
        let py_out = String::from_utf8_lossy(&py.stdout).trim().to_string();
        let want = if py.status.success() && py_out.starts_with("ok ") {
            py_out
        } else {
            let err = String::from_utf8_lossy(&py.stderr);
            let ty = err
                .lines()
                .last()
                .and_then(|l| l.split(':').next())
                .unwrap_or("?")
                .to_string();
            format!("err {ty}")
        };
        let (_, v) = run_json(ws.path(), &[], prog);
        let got = if v["ok"] == true {
            format!("ok {}", v["repr"].as_str().unwrap_or("?"))
        } else {
            format!("err {}", v["error"]["type"].as_str().unwrap_or("?"))
        };
        assert_eq!(got, want, "{prog}");
    }
}

/// `prog` with its last line's value kept in `_v` at module level (the
/// script's only frame), as a file python3 runs.
fn wrap_last(prog: &str) -> String {
    let lines: Vec<&str> = prog.trim_end().lines().collect();
    let (last, body) = lines.split_last().expect("a program");
    format!("{}\n_v = {last}", body.join("\n"))
}
