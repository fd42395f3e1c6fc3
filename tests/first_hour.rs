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

/// `bytes` (an output stream) contains `needle`.
fn assert_contains(bytes: &[u8], needle: &str) {
    let t = text(bytes);
    assert!(t.contains(needle), "{needle:?} not in {t}");
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
    assert_contains(&out.stdout, "reader");
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

/// The npm-installed MCP server `scripts/test-deps` puts in
/// `target/test-deps/npm` (the test fails, naming the script, without it).
fn npm_server() -> std::path::PathBuf {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("target/test-deps/npm/node_modules/.bin/mcp-server-everything");
    assert!(
        p.exists(),
        "{} is missing: run scripts/test-deps (needs npm); scripts/test does",
        p.display()
    );
    p
}

/// A workspace whose config declares the npm-installed server as `every`,
/// then `extra` (TOML).
fn npm_workspace(extra: &str) -> tempfile::TempDir {
    let cfg = format!(
        "[mcp_servers.every]\ncommand = {}\nargs = [\"stdio\"]\n\n{extra}",
        toml_str(&npm_server())
    );
    workspace(&[(".lackpy/config.toml", &cfg)])
}

fn toml_str(p: &std::path::Path) -> String {
    format!("{:?}", p.to_str().expect("utf-8 path"))
}

#[test]
fn npm_installed_server_runs_in_its_jail_only_when_a_profile_names_its_tool() {
    let ws = npm_workspace("[profiles.ev]\ntools = [\"echo\", \"read_file\"]\n");
    let cache = ws.path().join(".lackpy/cache");
    // A run whose profile names none of the server's tools never looks the
    // server up (no start, no cache entry).
    let out = run_with_stdin(&["run", "--json", "-"], "1 + 1", Some(ws.path()));
    assert_eq!(json(&out)["value"], 2, "{}", text(&out.stderr));
    let out = run_with_stdin(&["validate", "-"], "read_file('x')", Some(ws.path()));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!cache.exists(), "the server was asked for its tools");
    // Its tool, from a profile: the server starts in its jail (no extra
    // read_paths: its node_modules is part of its installation) and answers.
    let out = run_with_stdin(
        &["run", "--json", "--profile", "ev", "-"],
        "echo('hi')",
        Some(ws.path()),
    );
    let v = json(&out);
    assert_eq!(v["value"], "Echo: hi", "{v}\n{}", text(&out.stderr));
    assert!(!text(&out.stderr).contains("ERR_MODULE_NOT_FOUND"));
    assert_eq!(
        std::fs::read_dir(&cache).map(|d| d.count()).unwrap_or(0),
        1,
        "the tool list is cached"
    );
}

#[test]
fn cached_tool_lists_need_no_server_and_doctor_fails_for_a_broken_one() {
    let server = npm_server();
    // A wrapper beside a switch: with `broken` present the server dies at
    // start, without changing anything the cache identity covers.
    let inst = tempfile::tempdir().expect("tempdir");
    let inst = inst.path().canonicalize().expect("canon");
    let wrapper = inst.join("srv.sh");
    std::fs::write(
        &wrapper,
        "#!/bin/sh\n[ -e \"$(dirname \"$0\")/broken\" ] && { echo broken >&2; exit 1; }\nexec \"$@\"\n",
    )
    .expect("write");
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let cfg = format!(
        "[mcp_servers.every]\ncommand = {}\nargs = [{}, \"stdio\"]\n",
        toml_str(&wrapper),
        toml_str(&server)
    );
    let ws = workspace(&[(".lackpy/config.toml", &cfg)]);
    let names = |out: &Output| -> Vec<String> {
        json(out)["tools"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t["name"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let out = lp(&["tools", "--json"], ws.path());
    assert!(
        names(&out).contains(&"echo".to_string()),
        "{}",
        text(&out.stderr)
    );
    std::fs::write(inst.join("broken"), "").expect("write");
    // From the cache: the (now broken) server is not started.
    let out = lp(&["tools", "--json"], ws.path());
    assert!(
        names(&out).contains(&"echo".to_string()),
        "{}",
        text(&out.stderr)
    );
    assert!(
        !text(&out.stderr).contains("broken"),
        "{}",
        text(&out.stderr)
    );
    // doctor asks the server itself: it fails, and doctor says so.
    let out = lp(&["doctor", "--json"], ws.path());
    let v = json(&out);
    assert_ne!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["ok"], false, "{v}");
    assert!(v["mcp_servers"][0]["error"].is_string(), "{v}");
    // Changing the server's table makes the cache stale: asked again.
    let cfg2 = cfg.replace("\"stdio\"]", "\"stdio\"]\nenv = { X = \"1\" }");
    std::fs::write(ws.path().join(".lackpy/config.toml"), cfg2).expect("write");
    let out = lp(&["tools", "--json"], ws.path());
    assert!(!names(&out).contains(&"echo".to_string()));
    assert_contains(&out.stderr, "mcp server every");
}

#[test]
fn missing_program_clashes_and_doctor_exit_status() {
    let ws = workspace(&[(
        ".lackpy/config.toml",
        "[mcp_servers.ghost]\ncommand = \"no-such-mcp-server-for-lackpy\"\n",
    )]);
    let out = lp(&["tools"], ws.path());
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("\"no-such-mcp-server-for-lackpy\" is not on PATH"),
        "{err}"
    );
    assert!(!err.contains("see its stderr above"), "{err}");
    let out = lp(&["doctor", "--json"], ws.path());
    let v = json(&out);
    assert_eq!(v["ok"], false, "{v}");
    assert_ne!(out.status.code(), Some(0));
    assert!(
        v["mcp_servers"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("not on PATH")),
        "{v}"
    );
}

#[test]
fn a_server_tool_hidden_by_a_builtin_is_reported() {
    // `echo` of the server clashes with a config tool of that name.
    let ws = npm_workspace(
        "[[tools]]\nname = \"echo\"\nprovider = \"command\"\nargv = [\"echo\", \"{x}\"]\nargs = [{ name = \"x\", type = \"str\" }]\n",
    );
    let out = lp(&["tools", "--json"], ws.path());
    let v = json(&out);
    let shadowed = v["shadowed"].as_array().cloned().unwrap_or_default();
    assert_eq!(shadowed.len(), 1, "{v}");
    assert!(
        shadowed[0].as_str().is_some_and(|s| s.contains("echo")),
        "{v}"
    );
    let out = lp(&["tools"], ws.path());
    assert!(text(&out.stdout).contains("shadowed: mcp server every: its tool echo"));
    let out = lp(&["doctor", "--json"], ws.path());
    let v = json(&out);
    assert_eq!(
        v["mcp_tools_shadowed"].as_array().map(Vec::len),
        Some(1),
        "{v}"
    );
}

#[test]
fn json_config_errors_are_one_object_of_kind_config() {
    let ws = workspace(&[(".lackpy/config.toml", "[sandbox]\nmemory_mb = \"x\"\n")]);
    for args in [
        &["run", "--json", "-c", "1"][..],
        &["validate", "--json", "-c", "1"],
        &["tools", "--json"],
        &["profile", "list", "--json"],
    ] {
        let out = lp(args, ws.path());
        assert_eq!(out.status.code(), Some(3), "{args:?}");
        let v = json(&out);
        assert_eq!(v["ok"], false, "{args:?}: {v}");
        assert_eq!(v["error"]["kind"], "config", "{args:?}: {v}");
        assert_eq!(v["error"]["type"], "ConfigError", "{args:?}: {v}");
        assert_eq!(v["error"]["line"], 2, "{args:?}: {v}");
        // Still said on stderr for a person.
        assert!(text(&out.stderr).contains("config.toml:2"), "{args:?}");
    }
    let ok = workspace(&[]);
    let out = lp(
        &["run", "--json", "--profile", "nope", "-c", "1"],
        ok.path(),
    );
    assert_eq!(out.status.code(), Some(3));
    let v = json(&out);
    assert_eq!(v["error"]["kind"], "config", "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown profile 'nope'")),
        "{v}"
    );
    let out = lp(&["run", "--json", "no-such-file.py"], ok.path());
    assert_eq!(json(&out)["error"]["type"], "UsageError");
}

#[test]
fn unknown_tool_errors_say_which_profile_grants_it() {
    let ws = workspace(&[(
        ".lackpy/config.toml",
        "[profiles.code]\ntools = [\"read_file\", \"find_definitions\"]\n",
    )]);
    let hint = |program: &str| -> String {
        let out = run_with_stdin(&["validate", "--json", "-"], program, Some(ws.path()));
        assert_eq!(out.status.code(), Some(2));
        json(&out)["error"]["hint"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let h = hint("find_definitions('f')");
    assert!(h.contains("profile code grants it (--profile code)"), "{h}");
    assert!(
        h.contains("--tools read_file,find_files,find_definitions"),
        "{h}"
    );
    let h = hint("find_callers('f')");
    assert!(
        h.contains("no profile grants it; add it with --tools read_file,find_files,find_callers"),
        "{h}"
    );
    assert!(!h.contains("did you mean"), "{h}");
    // A typo still gets its close name, and only that.
    let h = hint("raed_file('a')");
    assert!(h.contains("did you mean read_file?"), "{h}");
    // Far names are not suggested.
    let h = hint("summarize_everything('a')");
    assert!(!h.contains("did you mean"), "{h}");
    // The same explanation for `run`.
    let out = run_with_stdin(
        &["run", "--json", "-"],
        "find_definitions('f')",
        Some(ws.path()),
    );
    let v = json(&out);
    assert!(
        v["error"]["hint"]
            .as_str()
            .is_some_and(|h| h.contains("--profile code")),
        "{v}"
    );
}

#[test]
fn tools_lists_the_profiles_granting_each_tool() {
    let ws = workspace(&[(
        ".lackpy/config.toml",
        "[profiles.rw]\ntools = [\"read_file\", \"write_file\"]\n",
    )]);
    let out = lp(&["tools", "--json"], ws.path());
    let v = json(&out);
    let of = |name: &str| -> Vec<String> {
        v["tools"]
            .as_array()
            .and_then(|a| a.iter().find(|t| t["name"] == name))
            .and_then(|t| t["profiles"].as_array())
            .map(|p| {
                p.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert_eq!(of("read_file"), ["rw", "(default)"], "{v}");
    assert_eq!(of("write_file"), ["rw"], "{v}");
    assert!(of("edit_file").is_empty(), "{v}");
    let out = lp(&["tools"], ws.path());
    assert_contains(&out.stdout, "    profiles: rw, (default)");
}

#[test]
fn mcp_client_script_exits_non_zero_when_the_program_fails() {
    assert!(crate::util::have_python(), "python3 is required");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts");
    let check = "import sys; sys.path.insert(0, sys.argv[1]); import mcp_client as m\n\
        assert m.exit_status({}, {'ok': True}) == 0\n\
        assert m.exit_status({'isError': True}, {'ok': False, 'error': {'kind': 'runtime'}}) == 1\n\
        assert m.exit_status({}, {'ok': False, 'error': {'kind': 'validation'}}) == 2\n\
        assert m.exit_status({}, {'ok': False, 'error': {'kind': 'config'}}) == 3\n\
        assert m.exit_status({'isError': True}, None) == 1\n";
    let out = std::process::Command::new("python3")
        .args(["-c", check])
        .arg(&dir)
        .output()
        .expect("python3");
    assert!(out.status.success(), "{}", text(&out.stderr));
}

#[test]
fn readme_delegate_example_needs_no_model() {
    let ws = workspace(&[("notes.md", "a\nTODO b\nc\n")]);
    // No model anywhere: the README's example is answered by templates/rules.
    let out = lackpy()
        .args([
            "delegate",
            "count the lines in notes.md",
            "--json",
            "--ollama-url",
            "http://127.0.0.1:9",
        ])
        .current_dir(ws.path())
        .output()
        .expect("run");
    let v = json(&out);
    assert_eq!(v["value"], 3, "{v}");
    let readme = include_str!("../README.md");
    assert!(readme.contains("lackpy delegate \"count the lines in notes.md\" --json"));
}

#[test]
fn run_help_says_where_traces_go() {
    let out = lackpy().args(["run", "--help"]).output().expect("run");
    let help = text(&out.stdout);
    assert!(help.contains("WORKSPACE/.lackpy/traces"), "{help}");
    assert!(
        help.contains("without --workspace that is\nthe current directory"),
        "{help}"
    );
}
