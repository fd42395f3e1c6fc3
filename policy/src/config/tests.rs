//! Config tests, using files written in the original lackpy's format.

use super::*;

fn p(text: &str) -> Result<Config, ConfigError> {
    Config::parse(text, Path::new("/ws/.lackpy/config.toml"))
}

const ORIGINAL: &str = r#"
[inference]
order = ["templates", "rules", "ollama-local"]

[inference.providers.ollama-local]
plugin = "ollama"
host = "http://localhost:11434"
model = "qwen3.6:latest"
temperature = 0.2
keep_alive = "30m"

[kit]
default = "debug"

[sandbox]
enabled = true
timeout_seconds = 30
memory_mb = 128

[[tools]]
name = "count_lines"
provider = "python"
module = "my_tools"
function = "count_lines"
description = "Count the number of lines in a file"
returns = "int"
grade_w = 1
effects_ceiling = 0
args = [{ name = "path", type = "str", description = "File path" }]

[mcp_servers.fs]
transport = "stdio"
command = "mcp-server-filesystem"
args = ["--root", "."]

[mcp_servers.fs.tools.read_file]
grade = { w = 1, d = 0 }

[mcp]
host_configs = ["~/.claude.json"]

[profiles.debug]
tools = ["read_file", "find_files", "count_lines"]
description = "Debugging"

[profiles.aliased]
tools = { find = "find_files", r = { tool = "read_file" } }
extra_tools = ["edit_file", "find"]

[profiles.kitted]
tools = "filesystem"

[profiles.strict]
tools = ["read_file"]
[profiles.strict.sandbox]
timeout_seconds = 1.5
fuel = 1000
"#;

fn kits() -> Kits {
    let mut k = Kits::default();
    k.insert_text(
        "filesystem",
        "---\nname: filesystem\ndescription: Read, write, and search files\ndocs: docs/kits/fs.md\n---\nread_file\n# comment\nfind_files\nwrite_file\n\nedit_file\n",
    );
    k.insert_text("plain", "read_file\n");
    k
}

#[test]
fn original_format_parses() {
    let c = p(ORIGINAL).expect("parses");
    assert_eq!(c.default_profile.as_deref(), Some("debug"));
    assert_eq!(c.sandbox.wall_ms, Some(30_000));
    assert_eq!(c.sandbox.memory_bytes, Some(128 * 1024 * 1024));
    assert_eq!(
        c.inference.order,
        vec!["templates", "rules", "ollama-local"]
    );
    let prov = &c.inference.providers["ollama-local"];
    assert_eq!(prov.plugin, Plugin::Ollama);
    assert_eq!(prov.base_url.as_deref(), Some("http://localhost:11434"));
    assert_eq!(prov.temperature, 0.2);
    // The original's Ollama `keep_alive` changes nothing here: one warning.
    assert_eq!(
        c.warnings
            .iter()
            .filter(|w| w.contains("inference.providers.ollama-local.keep_alive is ignored"))
            .count(),
        1,
        "{:?}",
        c.warnings
    );
    let t = &c.tools[0];
    assert_eq!(t.name, "count_lines");
    assert_eq!(t.provider, "python");
    assert_eq!(t.provider_config["module"], "my_tools");
    assert_eq!(t.provider_config["function"], "count_lines");
    assert_eq!(t.args[0].type_name, "str");
    assert_eq!(t.grade(), Grade { w: 1, d: 0 });
    let fs = &c.mcp_servers["fs"];
    assert_eq!(fs.command.as_deref(), Some("mcp-server-filesystem"));
    assert_eq!(fs.args, vec!["--root", "."]);
    assert_eq!(fs.tool_grades["read_file"], Grade { w: 1, d: 0 });
    assert_eq!(c.mcp_host_configs, vec!["~/.claude.json"]);
    // The jail defaults: no network, workspace read-only.
    assert!(!fs.network);
    assert_eq!(fs.workspace, WorkspaceAccess::Read);
    assert!(fs.read_paths.is_empty() && fs.memory_mb.is_none());
}

#[test]
fn mcp_server_jail_keys() {
    let c = p("[mcp_servers.x]\ncommand = \"srv\"\nnetwork = true\nworkspace = \"write\"\n\
               read_paths = [\"~/data\"]\nwrite_paths = [\"out\"]\nmemory_mb = 512\nmax_procs = 8\n")
    .expect("parses");
    let x = &c.mcp_servers["x"];
    assert!(x.network);
    assert_eq!(x.workspace, WorkspaceAccess::Write);
    assert_eq!(x.read_paths, vec!["~/data"]);
    assert_eq!(x.write_paths, vec!["out"]);
    assert_eq!((x.memory_mb, x.max_procs), (Some(512), Some(8)));
    for (bad, key) in [
        ("workspace = \"all\"", "mcp_servers.x.workspace"),
        ("memory_mb = 0", "mcp_servers.x.memory_mb"),
        ("max_procs = -1", "mcp_servers.x.max_procs"),
        ("read_paths = [\"\"]", "mcp_servers.x.read_paths"),
        ("trust_workspace_code = \"yes\"", "trust_workspace_code"),
    ] {
        let e = p(&format!("[mcp_servers.x]\ncommand = \"srv\"\n{bad}\n"))
            .expect_err(bad)
            .to_string();
        assert!(e.contains(key), "{bad}: {e}");
    }
}

#[test]
fn profile_forms_resolve() {
    let c = p(ORIGINAL).expect("parses");
    let k = kits();
    let r = c.resolve(None, None, &k).expect("default profile");
    assert_eq!(r.name, "debug");
    let names: Vec<&str> = r.tools.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(names, vec!["read_file", "find_files", "count_lines"]);
    assert_eq!(r.limits.wall_ms, 30_000);

    let r = c.resolve(Some("aliased"), None, &k).expect("aliased");
    let pairs: Vec<(&str, &str)> = r
        .tools
        .iter()
        .map(|(a, s)| (a.as_str(), s.name.as_str()))
        .collect();
    assert_eq!(
        pairs,
        vec![
            ("find", "find_files"),
            ("r", "read_file"),
            ("edit_file", "edit_file")
        ]
    );
    assert_eq!(r.grade(), Grade { w: 3, d: 3 });
    let ns = r.namespace();
    assert_eq!(ns.get("r").map(|t| t.target.as_str()), Some("read_file"));

    let r = c.resolve(Some("kitted"), None, &k).expect("kit profile");
    assert_eq!(r.tools.len(), 4);
    let r = c
        .resolve(Some("filesystem"), None, &k)
        .expect("kit by name");
    assert_eq!(r.tools.len(), 4);
    let r = c.resolve(Some("none"), None, &k).expect("none");
    assert!(r.tools.is_empty());
    let r = c.resolve(Some("strict"), None, &k).expect("strict");
    assert_eq!(r.limits.wall_ms, 1500);
    assert_eq!(r.limits.fuel, 1000);
    assert_eq!(r.limits.memory_bytes, 128 * 1024 * 1024);
    let r = c
        .resolve(Some("read_file,write_file"), None, &k)
        .expect("ad hoc");
    assert_eq!(r.tools.len(), 2);
    let r = c
        .resolve(Some("debug"), Some(&["write_file".to_string()]), &k)
        .expect("tools win");
    assert_eq!(r.name, "(tools)");
    assert_eq!(r.tools[0].1.grade(), Grade { w: 3, d: 3 });
}

/// `write_mb`/`write_bytes` set the run's write budget, globally and per
/// profile (the profile's wins); the default is 64 MiB.
#[test]
fn write_budget_keys() {
    let c = p(
        "[sandbox]\nwrite_mb = 2\n[profiles.w]\ntools = [\"write_file\"]\n\
               [profiles.w.sandbox]\nwrite_bytes = 5000\n[profiles.g]\ntools = [\"write_file\"]\n",
    )
    .expect("parses");
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let k = kits();
    let r = c.resolve(Some("w"), None, &k).expect("w");
    assert_eq!(r.limits.write_bytes, 5000);
    let r = c.resolve(Some("g"), None, &k).expect("g");
    assert_eq!(r.limits.write_bytes, 2 * 1024 * 1024);
    let r = p("")
        .expect("empty")
        .resolve(None, None, &k)
        .expect("default");
    assert_eq!(r.limits.write_bytes, 64 * 1024 * 1024);
    for bad in ["write_mb = -1", "write_bytes = -5", "write_mb = \"x\""] {
        let e = p(&format!("[sandbox]\n{bad}\n"))
            .expect_err(bad)
            .to_string();
        assert!(e.contains("write_"), "{bad}: {e}");
    }
}

#[test]
fn default_is_read_only_builtins() {
    let c = Config::default();
    let r = c.resolve(None, None, &Kits::default()).expect("default");
    assert_eq!(r.name, "(default)");
    let names: Vec<&str> = r.tools.iter().map(|(a, _)| a.as_str()).collect();
    assert_eq!(names, vec!["read_file", "find_files"]);
    assert_eq!(r.limits, Limits::default());
    assert_eq!(r.grade(), Grade { w: 1, d: 1 });
}

#[test]
fn builtins_and_override() {
    let b = builtin_tools();
    let names: Vec<&str> = b.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "read_file",
            "find_files",
            "write_file",
            "edit_file",
            "find_definitions",
            "find_callers"
        ]
    );
    assert!(b.iter().all(|t| t.provider == "builtin"));
    assert_eq!(b[3].args.len(), 3);
    let c = p("[[tools]]\nname = \"read_file\"\nprovider = \"builtin\"\ngrade_w = 2\neffects_ceiling = 0\n")
        .expect("parses");
    let tb = c.toolbox();
    assert_eq!(tb.tools.len(), 6);
    assert_eq!(
        tb.get("read_file").map(ToolSpec::grade),
        Some(Grade { w: 2, d: 0 })
    );
}

#[test]
fn unknown_names_list_what_exists() {
    let c = p(ORIGINAL).expect("parses");
    let e = c.resolve(Some("nope"), None, &kits()).expect_err("unknown");
    let s = e.to_string();
    assert!(s.contains("unknown profile 'nope'"), "{s}");
    assert!(
        s.contains("debug") && s.contains("filesystem") && s.contains("none"),
        "{s}"
    );
    let e = c
        .resolve(None, Some(&["rm_rf".to_string()]), &kits())
        .expect_err("unknown tool");
    let s = e.to_string();
    assert!(
        s.contains("unknown tool 'rm_rf'") && s.contains("read_file"),
        "{s}"
    );
    let bad = p("[profiles.x]\ntools = [\"ghost\"]\n").expect("parses");
    let e = bad
        .resolve(Some("x"), None, &Kits::default())
        .expect_err("ghost");
    assert_eq!(e.line, Some(1));
    assert!(e.to_string().contains("in profile 'x'"), "{e}");
}

#[test]
fn bad_config_names_file_line_and_key() {
    let e = p("[sandbox]\ntimeout_seconds = \"ten\"\n").expect_err("type error");
    assert_eq!(e.line, Some(2), "{e}");
    let s = e.to_string();
    assert!(s.starts_with("/ws/.lackpy/config.toml:2: "), "{s}");
    let e = p("x = [\n").expect_err("syntax");
    assert!(e.line.is_some(), "{e}");
    let e = p("[[tools]]\nname = \"t\"\nprovider = \"python\"\ngrade_w = 9\n").expect_err("range");
    assert_eq!(e.line, Some(1));
    assert_eq!(e.key.as_deref(), Some("tools.t.grade_w"));
    let e = p("[[tools]]\nname = \"t\"\n").expect_err("no provider");
    assert!(e.to_string().contains("provider"), "{e}");
    let e = p("[sandbox]\nfuel = -1\n").expect_err("negative");
    assert_eq!(e.key.as_deref(), Some("sandbox.fuel"));
    let e = p("[[tools]]\nname = \"t\"\nprovider = \"python\"\ngrade_w = \"high\"\n")
        .expect_err("type");
    assert!(e.line.is_some(), "{e}");
    // Unknown sections and keys are ignored, as in the original.
    assert!(p("[whatever]\nx = 1\n[sandbox]\nunknown_key = 3\n").is_ok());
}

#[test]
fn merge_prefers_workspace() {
    let user = p("[profile]\ndefault = \"u\"\n[sandbox]\ntimeout_seconds = 5\nmemory_mb = 64\n[profiles.u]\ntools = [\"read_file\"]\n[inference]\norder = [\"a\"]\n[inference.providers.a]\nplugin = \"ollama\"\n")
        .expect("user");
    let ws = p("[sandbox]\ntimeout_seconds = 7\n[profiles.w]\ntools = [\"find_files\"]\n[inference.providers.b]\nplugin = \"openai\"\n")
        .expect("ws");
    let m = Config::merge(user, ws);
    assert_eq!(m.default_profile.as_deref(), Some("u"));
    assert_eq!(m.sandbox.wall_ms, Some(7000));
    assert_eq!(m.sandbox.memory_bytes, Some(64 * 1024 * 1024));
    assert_eq!(
        m.sandbox_raw
            .get("timeout_seconds")
            .and_then(|v| v.as_integer()),
        Some(7)
    );
    assert_eq!(
        m.sandbox_raw.get("memory_mb").and_then(|v| v.as_integer()),
        Some(64)
    );
    assert!(m.profiles.contains_key("u") && m.profiles.contains_key("w"));
    assert_eq!(m.inference.order, vec!["a"]);
    assert_eq!(m.inference.providers.len(), 2);
    let r = m.inference.resolve().expect("resolves");
    assert_eq!(
        r.order.iter().map(|p| p.plugin).collect::<Vec<_>>(),
        [Plugin::Ollama]
    );
}

/// `[inference]` is typed when the file loads: a wrong value is an error
/// naming the file, its line and the dotted key; an `order` name that is
/// no provider is reported at the line of `order` once the files are
/// merged; keys of the original that change nothing warn once each.
#[test]
fn inference_is_typed_at_load_with_file_line_and_key() {
    let e = p("[inference]
examples = 3

[inference.providers.small]
plugin = \"ollama\"\ntimeout_seconds = -1\n")
    .expect_err("bad timeout");
    assert_eq!(e.line, Some(6), "{e}");
    assert_eq!(
        e.key.as_deref(),
        Some("inference.providers.small.timeout_seconds"),
        "{e}"
    );
    assert!(
        e.to_string().starts_with("/ws/.lackpy/config.toml:6: "),
        "{e}"
    );
    for (text, key) in [
        (
            "[inference]\npromote_after = -2\n",
            "inference.promote_after",
        ),
        ("[inference]\norder = \"small\"\n", "inference.order"),
        ("[inference]\nexamples = 51\n", "inference.examples"),
        (
            "[inference.providers.x]\nstream = \"yes\"\n",
            "inference.providers.x.stream",
        ),
        (
            "[inference.providers.x]\napi = \"completions\"\n",
            "inference.providers.x.api",
        ),
        (
            "[inference.providers.x]\nhost = \"localhost:11434\"\n",
            "inference.providers.x.host",
        ),
        (
            "[inference.providers.x]\ntemperature = 3\n",
            "inference.providers.x.temperature",
        ),
        (
            "[inference.providers.x]\nretries = 11\n",
            "inference.providers.x.retries",
        ),
        (
            "[inference.providers.x]\nmodel = 7\n",
            "inference.providers.x.model",
        ),
    ] {
        let e = p(text).expect_err(text);
        assert_eq!(e.key.as_deref(), Some(key), "{text}: {e}");
        assert!(e.line.is_some(), "{text}: {e}");
    }
    // An unknown order name: accepted per file (the other file may define
    // it), an error with the line of `order` when resolved.
    let c = p("[profile]\ndefault = \"x\"\n[inference]\norder = [\"rules\", \"nope\"]\n")
        .expect("loads");
    let e = c.inference.resolve().expect_err("nope");
    assert_eq!(
        (e.line, e.key.as_deref()),
        (Some(4), Some("inference.order")),
        "{e}"
    );
    assert!(e.to_string().contains("\"nope\""), "{e}");
    // Typed values and defaults.
    let c = p("[inference]\npromote_after = 0\n[inference.providers.s]\nplugin = \"openai\"\nmodel = \"m\"\ntimeout = 5\nconnect_timeout_seconds = 0.5\nseed = 42\napi_key = \"sk-x\"\n")
        .expect("loads");
    let r = c.inference.resolve().expect("resolves");
    assert_eq!(r.promote_after, 0);
    assert_eq!(
        r.order.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["templates", "rules", "s"]
    );
    let s = &r.order[2];
    assert_eq!(
        (s.timeout, s.connect_timeout, s.seed, s.retries),
        (
            std::time::Duration::from_secs(5),
            std::time::Duration::from_millis(500),
            Some(42),
            1
        )
    );
    assert!(
        !format!("{c:?}").contains("sk-x"),
        "the key never shows in Debug"
    );
    // No section: the defaults.
    let r = p("").expect("empty").inference.resolve().expect("defaults");
    assert_eq!(r, InferenceConfig::default());
}

#[test]
fn kit_parsing_and_render() {
    let k = parse_kit(
        "fs",
        "---\nname: fs\ndescription: Files\ndocs: d.md\n---\nread_file\n# c\n\nfind_files\n",
    );
    assert_eq!(k.tools, vec!["read_file", "find_files"]);
    assert_eq!(k.description, "Files");
    assert_eq!(k.docs.as_deref(), Some("d.md"));
    let again = parse_kit("fs", &render_kit(&k));
    assert_eq!(again, k);
    assert_eq!(parse_kit("x", "a\nb\n").tools, vec!["a", "b"]);
}

#[test]
fn legacy_kit_default_falls_back() {
    let c = p("[kit]\ndefault = \"debug\"\n").expect("parses");
    let r = c.resolve(None, None, &Kits::default()).expect("falls back");
    assert_eq!(r.name, "(default)");
    // The original's `lackpyctl init` writes `[profile] default = "debug"`
    // without defining it: the same fallback (the CLI warns).
    let c = p("[profile]\ndefault = \"debug\"\n").expect("parses");
    assert!(c.default_names_nothing(&Kits::default()));
    assert_eq!(
        c.resolve(None, None, &Kits::default())
            .expect("falls back")
            .name,
        "(default)"
    );
    // Naming it explicitly is still an error.
    assert!(c.resolve(Some("debug"), None, &Kits::default()).is_err());
}

#[test]
fn original_profile_keys_are_accepted_with_one_warning_each() {
    let c = p("[profiles.a]\ntools = [\"read_file\"]\nsandbox = \"strict\"\nlanguage = \"restricted-python\"\nexecution = \"one-shot\"\nmodel = \"m\"\nmode = \"x\"\norder = [\"rules\"]\ntemperature = 0.1\nrules = [\"r\"]\npolicy = { a = 1 }\n[profiles.b]\nsandbox = \"off\"\nlanguage = \"lua\"\nwhatever = 1\n[sandbox]\nenabled = false\nbogus = 2\n")
        .expect("parses");
    let w = c.warnings.join("\n");
    for key in ["model", "mode", "order", "temperature", "rules", "policy"] {
        assert_eq!(
            w.matches(&format!("profiles.a.{key} is ignored")).count(),
            1,
            "{w}"
        );
    }
    assert!(
        !w.contains("profiles.a.sandbox") && !w.contains("profiles.a.language"),
        "{w}"
    );
    assert!(
        w.contains("profiles.b.sandbox = \"off\" has no effect"),
        "{w}"
    );
    assert!(w.contains("profiles.b.language is ignored"), "{w}");
    assert!(w.contains("profiles.b.whatever is ignored"), "{w}");
    assert!(w.contains("sandbox.enabled = false has no effect"), "{w}");
    assert!(w.contains("sandbox.bogus is ignored"), "{w}");
    assert!(
        c.warnings
            .iter()
            .all(|l| l.starts_with("/ws/.lackpy/config.toml: ")),
        "{w}"
    );
    assert_eq!(c.warnings.len(), 11, "{w}");
    // A profile's limit table still works next to the level form.
    let c = p("[profiles.s]\ntools = []\n[profiles.s.sandbox]\nfuel = 7\n").expect("parses");
    assert_eq!(c.profiles["s"].limits.fuel, Some(7));
    assert!(c.warnings.is_empty());
    // Warnings survive a merge (user file, then workspace file).
    let m = Config::merge(p("[sandbox]\nenabled = false\n").expect("u"), c);
    assert_eq!(m.warnings.len(), 1);
}

#[test]
fn docs_index_and_meta() {
    let c = p(ORIGINAL).expect("parses");
    let k = kits();
    let idx = c.docs_index(Some("filesystem"), None, &k).expect("idx");
    assert_eq!(
        idx.tool_docs.get("read_file").map(String::as_str),
        Some("docs/tools/read_file.md")
    );
    assert_eq!(idx.kit_docs, vec!["docs/kits/fs.md"]);
    assert_eq!(c.profile_meta(Some("debug"), &k).source, "config");
    assert_eq!(
        c.profile_meta(Some("filesystem"), &k).description,
        "Read, write, and search files"
    );
    assert_eq!(c.profile_meta(Some("none"), &k).source, "builtin");
}

#[test]
fn sandbox_lower_is_typed_validated_and_merged() {
    let c = p("[sandbox]\nlower = [\"seccomp\", \"landlock\", \"seccomp\"]\n").expect("parses");
    assert_eq!(
        c.sandbox_lower,
        Some(vec!["seccomp".to_string(), "landlock".to_string()])
    );
    assert_eq!(
        p("[sandbox]\nfuel = 5\n").expect("parses").sandbox_lower,
        None
    );
    let e = p("[sandbox]\n\nlower = [\"selinux\"]\n").expect_err("unknown layer");
    assert_eq!(e.key.as_deref(), Some("sandbox.lower"));
    assert_eq!(e.line, Some(3), "{e}");
    let s = e.to_string();
    assert!(s.starts_with("/ws/.lackpy/config.toml:3: "), "{s}");
    assert!(s.contains("selinux") && s.contains("seccomp"), "{s}");
    let e = p("[sandbox]\nlower = \"seccomp\"\n").expect_err("not a list");
    assert!(e.line.is_some(), "{e}");
    let e = p("[profiles.x]\ntools = []\n[profiles.x.sandbox]\nlower = [\"seccomp\"]\n")
        .expect_err("profile-level lower");
    assert_eq!(e.key.as_deref(), Some("profiles.x.sandbox.lower"));
    // Workspace over user: the workspace's list wins when it sets one.
    let user = p("[sandbox]\nlower = [\"landlock\"]\n").expect("user");
    let ws = p("[sandbox]\nfuel = 9\n").expect("ws");
    let m = Config::merge(user.clone(), ws);
    assert_eq!(m.sandbox_lower, Some(vec!["landlock".to_string()]));
    let ws = p("[sandbox]\nlower = []\n").expect("ws");
    assert_eq!(Config::merge(user, ws).sandbox_lower, Some(vec![]));
}

#[test]
fn a_misconfigured_command_tool_is_a_config_error_with_file_line_and_key() {
    let text = "[[tools]]\nname = \"grep\"\nprovider = \"command\"\n\
                args = [{ name = \"pattern\", type = \"str\" }]\n\
                argv = [\"grep\", \"--\", \"{patern}\"]\n";
    let e = p(text).expect_err("typo in a placeholder");
    assert_eq!(
        e.file.as_deref(),
        Some(Path::new("/ws/.lackpy/config.toml"))
    );
    assert_eq!(e.line, Some(5), "{e}");
    assert_eq!(e.key.as_deref(), Some("tools.grep.argv[2]"), "{e}");
    assert!(
        e.to_string()
            .contains("{patern} is not one of its declared args"),
        "{e}"
    );
    // Other mistakes the command provider used to find only at first call.
    for (body, key) in [
        ("argv = \"grep\"\n", "tools.t.argv"),
        ("argv = [\"{a}\"]\n", "tools.t.argv[0]"),
        ("argv = [\"x\"]\nparse = \"yaml\"\n", "tools.t.parse"),
        ("argv = [\"x\"]\ntimeout = -1\n", "tools.t.timeout"),
        ("argv = [\"x\"]\nok_status = [\"0\"]\n", "tools.t.ok_status"),
        ("argv = [\"x\"]\nenv = { A = 1 }\n", "tools.t.env.A"),
        ("argv = [\"x\", \"{\"]\n", "tools.t.argv[1]"),
        (
            "argv = [\"x\"]\ntrust_workspace_code = \"yes\"\n",
            "tools.t.trust_workspace_code",
        ),
    ] {
        let text = format!(
            "[[tools]]\nname = \"t\"\nprovider = \"command\"\nargs = [{{ name = \"a\" }}]\n{body}"
        );
        let e = p(&text).expect_err(body);
        assert_eq!(e.key.as_deref(), Some(key), "{body}: {e}");
        assert!(e.line.is_some_and(|l| l >= 5), "{body}: {e}");
    }
    // A python tool without its function, an unknown provider.
    let e = p("[[tools]]\nname = \"f\"\nprovider = \"python\"\nmodule = \"m\"\n")
        .expect_err("function");
    assert_eq!(e.key.as_deref(), Some("tools.f.function"), "{e}");
    let e = p("[[tools]]\nname = \"f\"\nprovider = \"shell\"\n").expect_err("provider");
    assert_eq!(e.key.as_deref(), Some("tools.f.provider"), "{e}");
    assert_eq!(e.line, Some(3), "{e}");
    // A good one loads, typed.
    let cfg = p("[[tools]]\nname = \"t\"\nprovider = \"command\"\nargs = [{ name = \"a\" }]\nargv = [\"echo\", \"--\", \"{a}\"]\nparse = \"lines\"\n")
        .expect("good command tool");
    let Ok(Provider::Command(c)) = Provider::of(&cfg.tools[0]) else {
        panic!("not a command tool");
    };
    assert_eq!(c.parse, Parse::Lines);
    assert_eq!(c.argv[2].whole_arg(), Some(0));
}
