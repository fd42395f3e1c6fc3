//! A new user's first hour: the original lackpy's files work unchanged,
//! output reads like a notebook, configuration errors keep the JSON
//! contract. Each test drives the real binary.

use crate::util::{json, lackpy, run_with_stdin, workspace};
use std::process::Output;

/// The file the original's `lackpyctl init` writes (ollama model and URL
/// as its defaults fill them in), byte for byte.
const ORIGINAL_INIT: &str = r#"[inference]
order = ["templates", "rules", "local"]

# Model calls go through woollama's model-management core: one provider routes to
# any woollama-known backend via a "<provider>/<model>" string (ollama/…,
# anthropic/…, openai/…). The model choice is per-machine — set it here.
[inference.providers.local]
plugin = "woollama"
model = "ollama/qwen2.5-coder:1.5b"
base_url = "http://localhost:11434/v1"

[profile]
default = "debug"

[sandbox]
enabled = false
timeout_seconds = 120
memory_mb = 512
"#;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn lp(args: &[&str], ws: &std::path::Path) -> Output {
    lackpy()
        .args(args)
        .current_dir(ws)
        .output()
        .expect("run lackpy")
}

#[test]
fn original_init_config_works_unedited_and_says_what_it_ignores() {
    let ws = workspace(&[
        (".lackpy/config.toml", ORIGINAL_INIT),
        (".lackpy/templates/.keep", ""),
        (".lackpy/kits/.keep", ""),
        ("a.txt", "hello"),
    ]);
    let out = run_with_stdin(&["run", "-"], "len(read_file('a.txt'))", Some(ws.path()));
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(text(&out.stdout), "5\n");
    // One warning for the key that changes nothing, one for the missing default.
    assert_eq!(
        err.matches("sandbox.enabled = false has no effect").count(),
        1,
        "{err}"
    );
    assert_eq!(err.matches("default profile \"debug\"").count(), 1, "{err}");
    // A key that has its effect (timeout_seconds) is not reported.
    assert!(!err.contains("timeout_seconds"), "{err}");
    let out = lp(&["profile", "list"], ws.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn profile_level_sandbox_strict_and_other_original_keys() {
    let cfg = r#"
[profiles.reader]
tools = ["read_file"]
sandbox = "strict"
language = "restricted-python"
execution = "one-shot"
model = "ollama/qwen2.5-coder:3b"
temperature = 0.2

[profiles.loose]
tools = ["read_file"]
sandbox = "none"
"#;
    let ws = workspace(&[(".lackpy/config.toml", cfg), ("a.txt", "x")]);
    let out = lp(&["profile", "list"], ws.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        text(&out.stdout).contains("reader"),
        "{}",
        text(&out.stdout)
    );
    // "strict", the only language and the only execution model: no warning.
    assert!(!err.contains("profiles.reader.sandbox"), "{err}");
    assert!(!err.contains("language"), "{err}");
    assert!(!err.contains("execution"), "{err}");
    // Inference keys of a profile change nothing here: said once each.
    assert_eq!(
        err.matches("profiles.reader.model is ignored").count(),
        1,
        "{err}"
    );
    assert_eq!(
        err.matches("profiles.reader.temperature is ignored")
            .count(),
        1,
        "{err}"
    );
    // A sandbox level other than strict cannot loosen the jail: said so.
    assert!(
        err.contains("profiles.loose.sandbox = \"none\" has no effect"),
        "{err}"
    );
    let out = run_with_stdin(
        &["run", "--json", "--profile", "reader", "-"],
        "read_file('a.txt')",
        Some(ws.path()),
    );
    assert_eq!(json(&out)["value"], "x", "{}", text(&out.stderr));
}

#[test]
fn dot_profile_files_are_read_and_win_over_dot_kit() {
    let ws = workspace(&[
        (".lackpy/kits/fs.kit", "---\nname: fs\n---\nread_file\n"),
        (
            ".lackpy/kits/fs.profile",
            "---\nname: fs\ndescription: files\n---\nread_file\nfind_files\n",
        ),
        (".lackpy/kits/only.profile", "find_files\n"),
    ]);
    let out = lp(&["profile", "info", "fs", "--json"], ws.path());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v = json(&out);
    let names: Vec<&str> = v["tools"]
        .as_array()
        .map(|a| a.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["read_file", "find_files"], "{v}");
    let out = run_with_stdin(
        &["run", "--json", "--profile", "only", "-"],
        "find_files('*.profile')",
        Some(ws.path()),
    );
    let v = json(&out);
    assert_eq!(v["ok"], true, "{v}");
    // `profile create` over an existing `.profile` rewrites that file.
    let out = lp(
        &["profile", "create", "fs", "--tools", "read_file", "--force"],
        ws.path(),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let body = std::fs::read_to_string(ws.path().join(".lackpy/kits/fs.profile")).expect("read");
    assert!(!body.contains("find_files"), "{body}");
}

#[test]
fn human_run_prints_output_then_value_and_no_none() {
    let ws = workspace(&[]);
    let out = run_with_stdin(&["run", "-"], "print('a')\nprint('b')\n", Some(ws.path()));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "a\nb\n");
    let out = run_with_stdin(&["run", "-"], "print('a', end='')\n7\n", Some(ws.path()));
    assert_eq!(text(&out.stdout), "a\n7\n");
    let err = text(&out.stderr);
    let summary: Vec<&str> = err.lines().filter(|l| l.contains("tool call")).collect();
    assert_eq!(summary.len(), 1, "{err}");
    assert!(summary[0].starts_with("-- 0 tool calls"), "{err}");
}
