//! Tool providers end to end: the real binary and jailed worker, a fixture
//! workspace (`tests/fixtures/providers/ws`) whose config declares python,
//! command, virtual and original-lackpy tool entries, and the
//! code-intelligence builtins on a fixture package.

use crate::util::{self, json, run_with_stdin};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

/// A fresh copy of the fixture workspace (runs write traces into it).
fn fixture() -> tempfile::TempDir {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/providers/ws");
    let dst = tempfile::tempdir().expect("tempdir");
    copy_dir(&src, dst.path());
    dst
}

fn copy_dir(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).expect("fixture dir").flatten() {
        let target = to.join(e.file_name());
        let ft = e.file_type().expect("file type");
        if ft.is_dir() {
            if e.file_name() == "__pycache__" || e.file_name() == "traces" {
                continue;
            }
            std::fs::create_dir_all(&target).expect("mkdir");
            copy_dir(&e.path(), &target);
        } else if ft.is_file() {
            std::fs::copy(e.path(), &target).expect("copy");
        }
    }
}

fn run(ws: &Path, tools: &str, program: &str) -> (i32, Value) {
    let out = crate::util::run_json(ws, tools, program);
    (out.status.code().unwrap_or(-1), json(&out))
}

/// Run `program` under `profile` of the workspace's config.
fn run_profile(ws: &Path, profile: &str, program: &str) -> std::process::Output {
    run_with_stdin(
        &[
            "run",
            "--json",
            "--workspace",
            ws.to_str().unwrap_or("."),
            "--profile",
            profile,
        ],
        program,
        None,
    )
}

fn tool_error(v: &Value) -> (String, String) {
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["error"]["kind"], "tool", "{v}");
    (
        v["error"]["type"].as_str().unwrap_or("").to_string(),
        v["error"]["message"].as_str().unwrap_or("").to_string(),
    )
}

#[test]
fn python_tools_return_plain_data() {
    assert!(util::have_python(), "python3 is required for this test");
    let ws = fixture();
    let (code, v) = run(
        ws.path(),
        "add,describe,count_lines",
        "big = add(4611686018427387904, 4611686018427387904)\n\
         d = describe((1, 'x', None))\n\
         [add(1, 2), add(True, 2), big, d['type'], d['value'], count_lines('notes.txt')]\n",
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["value"],
        json!([3, 3, "9223372036854775808", "tuple", [1, "x", null], 4])
    );
    assert_eq!(
        v["repr"],
        "[3, 3, 9223372036854775808, 'tuple', (1, 'x', None), 4]"
    );
    assert_eq!(v["grade"], json!({"w": 1, "d": 0}));
    assert_eq!(v["trace"][0]["tool"], "add");
    assert_eq!(v["trace"][0]["ok"], true);
}

/// A python tool's declared argument types are checked by the supervisor
/// before the helper is asked: `add(a: int, b: int)` refuses strings.
#[test]
fn python_tool_arguments_are_type_checked() {
    assert!(util::have_python(), "python3 is required for this test");
    let ws = fixture();
    let (code, v) = run(ws.path(), "add", "add('a', 'b')\n");
    assert_eq!(code, 1, "{v}");
    assert_eq!(
        tool_error(&v),
        (
            "BadArgument".into(),
            "add() argument 'a' must be int, not str".into()
        )
    );
    assert_eq!(v["trace"][0]["ok"], false, "{v}");
    let (_, v) = run(ws.path(), "add", "add(1, b=2.5)\n");
    assert_eq!(
        tool_error(&v).1,
        "add() argument 'b' must be int, not float"
    );
}

/// A workspace whose config declares command tools with typed arguments;
/// each tool, when it runs, creates a marker file in the workspace (so a
/// test can tell whether the command ran at all).
fn typed_command_workspace() -> tempfile::TempDir {
    let ws = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(ws.path().join(".lackpy")).expect("mkdir");
    // `sh -c 'touch ran_NAME; echo "$*"' sh {arg}...`
    let tool = |name: &str, placeholders: &[&str], args: &str| {
        let items: Vec<String> = placeholders
            .iter()
            .map(|p| format!("\"{{{p}}}\""))
            .collect();
        format!(
            "[[tools]]\nname = \"{name}\"\nprovider = \"command\"\n\
             argv = [\"sh\", \"-c\", \"touch ran_{name}; echo \\\"$*\\\"\", \"sh\", {}]\n\
             writable = true\ngrade_w = 2\neffects_ceiling = 2\nargs = [{args}]\n\n",
            items.join(", ")
        )
    };
    let mut cfg = String::new();
    cfg.push_str(&tool("count", &["n"], r#"{ name = "n", type = "int" }"#));
    cfg.push_str(&tool("ratio", &["x"], r#"{ name = "x", type = "float" }"#));
    cfg.push_str(&tool("flag", &["on"], r#"{ name = "on", type = "bool" }"#));
    cfg.push_str(&tool(
        "greet",
        &["who", "title"],
        r#"{ name = "who", type = "str" }, { name = "title", type = "Optional[str]" }"#,
    ));
    cfg.push_str(&tool(
        "tags",
        &["t"],
        r#"{ name = "t", type = "list[str]" }"#,
    ));
    cfg.push_str(&tool("weird", &["p"], r#"{ name = "p", type = "Path" }"#));
    std::fs::write(ws.path().join(".lackpy/config.toml"), cfg).expect("config");
    ws
}

/// A command tool's declared argument types are enforced before the
/// command runs: a wrongly typed call is refused with `BadArgument` and
/// the command never starts (it would have created its marker file).
#[test]
fn command_tool_arguments_are_type_checked_before_the_command_runs() {
    let ws = typed_command_workspace();
    let ran = |name: &str| ws.path().join(format!("ran_{name}")).exists();
    // Wrong types: refused, nothing ran.
    for (tools, program, message) in [
        (
            "count",
            "count('5')",
            "count() argument 'n' must be int, not str",
        ),
        (
            "count",
            "count(5.0)",
            "count() argument 'n' must be int, not float",
        ),
        (
            "count",
            "count(None)",
            "count() argument 'n' must be int, not NoneType",
        ),
        (
            "count",
            "count(n=[1])",
            "count() argument 'n' must be int, not list",
        ),
        (
            "ratio",
            "ratio('0.5')",
            "ratio() argument 'x' must be float, not str",
        ),
        (
            "flag",
            "flag(1)",
            "flag() argument 'on' must be bool, not int",
        ),
        (
            "greet",
            "greet(None, 'Dr')",
            "greet() argument 'who' must be str, not NoneType",
        ),
        (
            "greet",
            "greet('a', 2)",
            "greet() argument 'title' must be str | None, not int",
        ),
        (
            "greet",
            "greet(title='Dr')",
            "greet() missing required argument: 'who'",
        ),
        (
            "greet",
            "greet('a')",
            "greet() missing required argument: 'title'",
        ),
        (
            "tags",
            "tags(['a', 1])",
            "tags() argument 't' must be list[str], not list with an item of another type",
        ),
        (
            "tags",
            "tags(('a',))",
            "tags() argument 't' must be list[str], not tuple",
        ),
    ] {
        let (code, v) = run(ws.path(), tools, &format!("{program}\n"));
        assert_eq!(code, 1, "{program}: {v}");
        assert_eq!(
            tool_error(&v),
            ("BadArgument".into(), message.into()),
            "{program}"
        );
        assert_eq!(v["trace"][0]["ok"], false, "{program}: {v}");
        assert!(!ran(tools), "{program}: the command ran");
    }
    // An unknown declared type is a configuration error, and fails closed.
    let (code, v) = run(ws.path(), "weird", "weird('x')\n");
    assert_eq!(code, 1, "{v}");
    let (ty, msg) = tool_error(&v);
    assert_eq!(ty, "ToolFailed");
    assert!(
        msg.contains("tool \"weird\" is misconfigured") && msg.contains("\"Path\""),
        "{msg}"
    );
    assert!(!ran("weird"));
    // Right types run (bool is an int, an int is a float; Optional takes None).
    let (code, v) = run(
        ws.path(),
        "count,ratio,flag,greet",
        "[count(5), count(True), ratio(2), flag(False), greet('a', None), greet(who='a', title='Dr')]\n",
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["value"],
        json!(["5\n", "True\n", "2\n", "False\n", "a\n", "a Dr\n"])
    );
    for t in ["count", "ratio", "flag", "greet"] {
        assert!(ran(t), "{t} did not run");
    }
}

#[test]
fn python_prints_do_not_corrupt_the_protocol() {
    assert!(util::have_python(), "python3 is required for this test");
    let ws = fixture();
    let (code, v) = run(ws.path(), "noisy,add", "[noisy('abc'), add(1, 1)]\n");
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["value"], json!(["cba", 2]));
    assert_eq!(v["stdout"], "");
}

#[test]
fn python_exceptions_are_tool_errors() {
    assert!(util::have_python(), "python3 is required for this test");
    let ws = fixture();
    let (code, v) = run(ws.path(), "picky", "picky(-1)\n");
    assert_eq!(code, 1, "{v}");
    assert_eq!(
        tool_error(&v),
        (
            "ToolFailed".into(),
            "ValueError: n must be >= 0, got -1".into()
        )
    );
    assert_eq!(v["error"]["line"], 1);
    assert_eq!(v["trace"][0]["ok"], false);
    let (_, v) = run(ws.path(), "count_lines", "count_lines('missing.txt')\n");
    let (ty, msg) = tool_error(&v);
    assert_eq!(ty, "FileNotFound");
    assert!(msg.starts_with("FileNotFoundError: "), "{msg}");
}

#[test]
fn python_non_plain_results_name_the_type() {
    assert!(util::have_python(), "python3 is required for this test");
    let ws = fixture();
    let (code, v) = run(ws.path(), "opaque", "opaque()\n");
    assert_eq!(code, 1, "{v}");
    let (ty, msg) = tool_error(&v);
    assert_eq!(ty, "ToolFailed");
    assert!(msg.contains("non-plain value of type 'Thing'"), "{msg}");
    assert!(msg.contains("result['thing']"), "{msg}");
}

#[test]
fn python_crash_and_hang_are_contained() {
    assert!(util::have_python(), "python3 is required for this test");
    let ws = fixture();
    let (code, v) = run(ws.path(), "crash,add", "crash()\n");
    assert_eq!(code, 1, "{v}");
    let (ty, msg) = tool_error(&v);
    assert_eq!(ty, "ToolFailed");
    assert!(
        msg.contains("crashed") && msg.contains("exit status 7"),
        "{msg}"
    );

    let t0 = Instant::now();
    let (code, v) = run(ws.path(), "hang", "hang()\n");
    assert_eq!(code, 1, "{v}");
    let (ty, msg) = tool_error(&v);
    assert_eq!(ty, "Timeout", "{msg}");
    assert!(t0.elapsed() < Duration::from_secs(8));
}

/// A tool's own timeout is cut to what is left of the run's wall clock: a
/// hung tool ends the run at its wall-clock limit (kind `limit`), not at the
/// tool's longer timeout.
#[test]
fn a_hung_tool_cannot_outlive_the_run_wall_clock() {
    assert!(util::have_python(), "python3 is required for this test");
    let ws = fixture();
    let cfg = ws.path().join(".lackpy/config.toml");
    let mut text = std::fs::read_to_string(&cfg).expect("config");
    // The tool's own timeout (60 s) is far above both the run's wall clock
    // and the generous bound below, so the bound proves the cut without
    // timing anything finely.
    text.push_str(
        "\n[[tools]]\nname = \"hang_long\"\nprovider = \"python\"\nmodule = \"mytools\"\nfunction = \"hang\"\nprovider_config = { timeout = 60 }\n\
         \n[profiles.quick]\ntools = [\"hang_long\"]\n[profiles.quick.sandbox]\nwall_ms = 300\n",
    );
    std::fs::write(&cfg, text).expect("write config");
    let t0 = Instant::now();
    let out = run_profile(ws.path(), "quick", "hang_long()\n");
    let took = t0.elapsed();
    let v = json(&out);
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["error"]["kind"], "limit", "{v}");
    assert!(
        took < Duration::from_secs(20),
        "the run took {took:?}; the hung tool's own 60 s timeout should have been cut to 300 ms"
    );
    assert_eq!(v["trace"][0]["ok"], false, "{v}");
}

#[test]
fn original_lackpy_builtin_entries_keep_working() {
    let ws = fixture();
    let (code, v) = run(
        ws.path(),
        "legacy_read",
        "legacy_read('notes.txt').split()[0]\n",
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["value"], "alpha");
    let (_, v) = run(
        ws.path(),
        "legacy_read",
        "legacy_read('../../etc/passwd')\n",
    );
    assert_eq!(tool_error(&v).0, "PathOutsideWorkspace");
}

#[test]
fn command_arguments_arrive_literally() {
    let ws = fixture();
    let evil = [
        "; rm -rf notes.txt",
        "$(touch pwned)",
        "`touch pwned`",
        "a && touch pwned",
        "x' \"y",
        "*",
    ];
    for e in evil {
        let prog = format!("say({e:?}, '|next')\n");
        let (code, v) = run(ws.path(), "say", &prog);
        assert_eq!(code, 0, "{v}");
        assert_eq!(v["value"], format!("{e}||next|"), "{v}");
    }
    assert!(!ws.path().join("pwned").exists());
    assert!(ws.path().join("notes.txt").exists());
    // An option smuggled into a positional slot is refused.
    let (code, v) = run(ws.path(), "say", "say('--version', 'x')\n");
    assert_eq!(code, 1, "{v}");
    let (ty, msg) = tool_error(&v);
    assert_eq!(ty, "BadArgument");
    assert!(msg.contains("starts with '-'"), "{msg}");
}

#[test]
fn command_parse_modes_and_status() {
    let ws = fixture();
    let (code, v) = run(
        ws.path(),
        "grep_lines,cat_stdin",
        "[grep_lines('a'), grep_lines('-rf'), grep_lines('zzz'), cat_stdin(41)['got'] + 1]\n",
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["value"],
        json!([
            ["1:alpha", "2:beta", "4:gamma $(id)"],
            ["3:; rm -rf x"],
            [],
            42
        ])
    );
}

#[test]
fn virtual_tools_fail_cleanly_without_a_host() {
    let ws = fixture();
    let (code, v) = run(ws.path(), "ask_user", "ask_user('why?')\n");
    assert_eq!(code, 1, "{v}");
    assert_eq!(
        tool_error(&v),
        (
            "ToolFailed".into(),
            "virtual tool \"ask_user\" is not provided by this host".into()
        )
    );
    assert_eq!(v["grade"], json!({"w": 2, "d": 0}));
}

#[test]
fn code_intelligence_on_a_fixture_package() {
    let ws = fixture();
    let (code, v) = run(
        ws.path(),
        "find_definitions,find_callers",
        "[find_definitions('run'), find_definitions('Engine.step'), find_definitions('Engine'),\n \
         [(c['file'], c['line'], c['caller']) for c in find_callers('step')],\n \
         find_callers('run')]\n",
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["grade"], json!({"w": 1, "d": 0}));
    assert_eq!(
        v["value"][0],
        json!([{"file": "pkg/core.py", "line": 4, "kind": "function", "name": "run",
                "signature": "def run(engine, steps=1)"}])
    );
    assert_eq!(
        v["value"][1],
        json!([{"file": "pkg/core.py", "line": 14, "kind": "method", "name": "Engine.step",
                "signature": "def step(self)"}])
    );
    assert_eq!(
        v["value"][2],
        json!([{"file": "pkg/core.py", "line": 10, "kind": "class", "name": "Engine",
                "signature": "class Engine"}])
    );
    assert_eq!(
        v["value"][3],
        json!([["pkg/core.py", 6, "run"], ["pkg/sub/cli.py", 7, "main"]])
    );
    assert_eq!(
        v["value"][4],
        json!([{"file": "pkg/sub/cli.py", "line": 6, "caller": "main", "text": "run(e, steps=2)"}])
    );
    let (code, v) = run(
        ws.path(),
        "find_definitions",
        "find_definitions('not a name')\n",
    );
    assert_eq!(code, 1, "{v}");
    assert_eq!(tool_error(&v).0, "BadArgument");
}

#[test]
fn aliases_resolve_for_every_provider() {
    let ws = fixture();
    let out = run_profile(
        ws.path(),
        "aliased",
        "[defs('helper')[0]['name'], plus(2, 3) if PY else 5, shout('a', 'b')]\n"
            .replace("PY", if util::have_python() { "True" } else { "False" })
            .as_str(),
    );
    let v = json(&out);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["value"], json!(["helper", 5, "a|b|"]));
    // The join over the tools the program names (ask_user is granted, not named).
    assert_eq!(v["grade"], json!({"w": 1, "d": 0}));
    let tools: Vec<&str> = v["trace"]
        .as_array()
        .map(|t| t.iter().filter_map(|e| e["tool"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(tools.first(), Some(&"defs"));
    assert_eq!(tools.last(), Some(&"shout"));
}

/// The Rust library path: an embedding host installs a `HostTools` and a
/// `[[virtual_tools]]` declaration is satisfied by it, through the real
/// supervisor and jailed worker.
#[test]
fn embedding_host_supplies_virtual_tools() {
    use lackpy_policy::config::{Config, Kits};
    use lackpy_policy::wire::{Data, Limits, ToolFailure};
    use lackpy_supervisor::providers::HostTools;
    use lackpy_supervisor::spawn::ExeHandle;
    use lackpy_supervisor::{JailLevel, RunRequest, Supervisor, SupervisorConfig};
    use std::sync::Arc;

    struct Host;
    impl HostTools for Host {
        fn call(&self, name: &str, args: &[Data]) -> Option<Result<Data, ToolFailure>> {
            match (name, args) {
                ("ask_user", [Data::Str(q)]) => Some(Ok(Data::Str(format!("answer to {q}")))),
                _ => None,
            }
        }
    }

    let cfg = Config::parse(
        "[[virtual_tools]]\nname = \"ask_user\"\ngrade_w = 2\neffects_ceiling = 0\n\
         args = [{ name = \"question\", type = \"str\" }]\n\
         [[virtual_tools]]\nname = \"withdrawn\"\ngrade_w = 1\neffects_ceiling = 0\n",
        Path::new("<test>"),
    )
    .expect("config");
    let profile = cfg
        .resolve(
            None,
            Some(&["ask_user".to_string(), "withdrawn".to_string()]),
            &Kits::default(),
        )
        .expect("profile");
    let ws = tempfile::tempdir().expect("tempdir");
    let sup = Supervisor::new(SupervisorConfig {
        exe: ExeHandle::open(&crate::util::bin()).expect("exe"),
        jail_level: JailLevel::full(),
        pool_size: 0,
        worker_role: vec!["executor".into()],
        trace_limits: Default::default(),
    })
    .expect("supervisor");
    sup.providers().set_host_tools(Some(Arc::new(Host)));
    let run = |src: &str| {
        sup.run(RunRequest {
            source: src.as_bytes().to_vec(),
            profile: profile.clone(),
            workspace: ws.path().to_path_buf(),
            limits: Limits::default(),
        })
    };
    let r = run("ask_user(question='why?')\n");
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(r.value, json!("answer to why?"));
    assert_eq!(r.trace[0].tool, "ask_user");
    let r = run("withdrawn()\n");
    let e = r.error.expect("error");
    assert_eq!(e.type_name, "ToolFailed");
    assert_eq!(
        e.message,
        "virtual tool \"withdrawn\" is not provided by this host"
    );
    sup.providers().set_host_tools(None);
}

/// Two supervisors in one process share no provider state: the host tools
/// installed on one are not the other's, and the python helper one's run
/// starts is not the other's.
#[test]
fn two_supervisors_do_not_share_provider_state() {
    use lackpy_policy::config::{ArgSpec, Config, Kits, ToolSpec};
    use lackpy_policy::wire::{Data, Limits, ToolFailure};
    use lackpy_supervisor::providers::HostTools;
    use lackpy_supervisor::spawn::ExeHandle;
    use lackpy_supervisor::{JailLevel, RunRequest, Supervisor, SupervisorConfig};
    use std::sync::Arc;
    assert!(util::have_python(), "python3 is required for this test");

    struct Host;
    impl HostTools for Host {
        fn call(&self, _name: &str, _args: &[Data]) -> Option<Result<Data, ToolFailure>> {
            Some(Ok(Data::Str("from the host".into())))
        }
    }
    let new_sup = || {
        Supervisor::new(SupervisorConfig {
            exe: ExeHandle::open(&crate::util::bin()).expect("exe"),
            jail_level: JailLevel::full(),
            pool_size: 0,
            worker_role: vec!["executor".into()],
            trace_limits: Default::default(),
        })
        .expect("supervisor")
    };
    let (a, b) = (new_sup(), new_sup());
    let ws = fixture();
    let cfg = Config::parse(
        "[[virtual_tools]]\nname = \"ask\"\ngrade_w = 1\neffects_ceiling = 0\n",
        Path::new("<test>"),
    )
    .expect("config");
    let mut profile = cfg
        .resolve(None, Some(&["ask".to_string()]), &Kits::default())
        .expect("profile");
    let mut add = ToolSpec {
        name: "add".into(),
        provider: "python".into(),
        args: ["a", "b"]
            .iter()
            .map(|a| ArgSpec {
                name: (*a).into(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    add.provider_config
        .insert("module".into(), json!("mytools"));
    add.provider_config.insert("function".into(), json!("add"));
    profile.tools.push(("add".into(), add));
    let run = |sup: &Supervisor, src: &str| {
        sup.run(RunRequest {
            source: src.as_bytes().to_vec(),
            profile: profile.clone(),
            workspace: ws.path().to_path_buf(),
            limits: Limits::default(),
        })
    };
    a.providers().set_host_tools(Some(Arc::new(Host)));
    let r = run(&a, "ask()\n");
    assert!(r.ok, "{:?}", r.error);
    let r = run(&b, "ask()\n");
    let e = r.error.expect("b has no host tools");
    assert_eq!(e.type_name, "ToolFailed", "{e:?}");
    // A python helper started by a's run lives in a's providers only.
    let r = run(&a, "add(1, 2)\n");
    assert!(r.ok, "{:?}", r.error);
    assert_eq!(a.providers().python().live(), 1);
    assert_eq!(b.providers().python().live(), 0);
    drop(a);
    assert_eq!(b.providers().python().live(), 0);
}

/// A python tool call that must wait for the workspace's helper (busy with
/// another run's hung call) waits no longer than its own run's wall clock.
#[test]
fn waiting_for_a_busy_python_helper_is_bounded_by_the_run_deadline() {
    use lackpy_policy::config::{ArgSpec, ResolvedProfile, ToolSpec};
    use lackpy_policy::wire::{ErrorKind, Limits};
    use lackpy_supervisor::spawn::ExeHandle;
    use lackpy_supervisor::{JailLevel, RunRequest, Supervisor, SupervisorConfig};
    assert!(util::have_python(), "python3 is required for this test");
    let ws = fixture();
    let py = |function: &str, args: &[&str]| {
        let mut spec = ToolSpec {
            name: function.into(),
            provider: "python".into(),
            args: args
                .iter()
                .map(|a| ArgSpec {
                    name: (*a).into(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        spec.provider_config
            .insert("module".into(), json!("mytools"));
        spec.provider_config
            .insert("function".into(), json!(function));
        spec.provider_config.insert("timeout".into(), json!(3));
        spec
    };
    let profile = ResolvedProfile {
        name: "py".into(),
        tools: vec![
            ("hang".into(), py("hang", &[])),
            ("add".into(), py("add", &["a", "b"])),
        ],
        limits: Limits::default(),
    };
    let exe = ExeHandle::open(Path::new(env!("CARGO_BIN_EXE_lackpy"))).expect("exe");
    let sup = std::sync::Arc::new(
        Supervisor::new(SupervisorConfig {
            exe,
            jail_level: JailLevel::full(),
            pool_size: 0,
            worker_role: vec!["executor".into()],
            trace_limits: Default::default(),
        })
        .expect("supervisor"),
    );
    let req = |program: &str, wall_ms: u64| RunRequest {
        source: program.as_bytes().to_vec(),
        profile: profile.clone(),
        workspace: ws.path().to_path_buf(),
        limits: Limits {
            wall_ms,
            ..Limits::default()
        },
    };
    let (s2, hung) = (sup.clone(), req("hang()", 4_000));
    let first = std::thread::spawn(move || s2.run(hung));
    // Let the first run's call take the helper.
    std::thread::sleep(Duration::from_millis(700));
    let t0 = Instant::now();
    let r = sup.run(req("add(1, 2)", 300));
    let took = t0.elapsed();
    let e = r.error.as_ref().expect("the second run must not finish");
    assert_eq!(e.kind, ErrorKind::Limit, "{e:?}");
    assert!(
        took < Duration::from_millis(1_200),
        "waited {took:?} for a busy helper with a 300 ms wall clock"
    );
    let first = first.join().expect("first run");
    assert!(first.error.is_some());
}
