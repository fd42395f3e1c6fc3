//! The fuzz targets' bodies, shared by the libFuzzer entry points
//! (`fuzz_targets/*.rs`, run by `cargo fuzz` through `scripts/fuzz`) and the
//! built-in mutation fuzzer (`src/main.rs`). Each target must never panic,
//! hang, overflow the stack or blow up memory, whatever the input.
//!
//! - [`parse_validate`]: raw bytes as a program through the validator.
//! - [`interp`]: a program that validates, run by the interpreter with small
//!   limits against an in-process fake tool host. Inputs that do not
//!   validate seed the grammar generator instead, so most runs interpret.
//! - [`ipc_frame`]: raw bytes as an IPC frame payload in both directions,
//!   every decoded value through the flat-data rebuild, and what the
//!   supervisor does with an accepted value (JSON and repr rendering).
//! - [`glob`]: raw bytes as a `find_files` pattern over a small fixed
//!   workspace with nested directories, symlinks that stay inside, one that
//!   points outside and a symlink loop.
//! - [`config`]: raw bytes as a config file (`Config::parse`, then every
//!   profile resolved), a `.kit` file, a workspace `templates.toml` (parsed
//!   and matched) or a `ratchet.json` (through `record_success`); the first
//!   byte picks which.
//! - [`mcp_result`]: raw bytes as what an MCP server sends: a JSON-RPC
//!   message, a `tools/call` result (converted to plain data the way
//!   `providers::mcp::call` does) or a tool listing entry (`spec_of`).

#[path = "gen.rs"]
pub mod gen;

use lackpy_policy::lang::validate_bytes;
use lackpy_policy::wire::{
    Data, FlatData, FromWorker, Limits, Outcome, ToWorker, ToolFailure, ToolSig, MAX_DATA_DEPTH,
};
use lackpy_policy::{Grade, Namespace, ToolEntry};
use lackpy_worker::interp::{run, Kwargs, Output, ToolHost};

/// The profile every target uses: the four builtin file tools.
pub fn namespace() -> Namespace {
    let tool = |name: &str, args: &[&str]| ToolEntry::new(name, args, Grade::default());
    Namespace {
        tools: vec![
            tool("read_file", &["path"]),
            tool("find_files", &["pattern"]),
            tool("write_file", &["path", "content"]),
            tool("edit_file", &["path", "old_str", "new_str"]),
        ],
    }
}

/// Small limits: a fuzz iteration must take milliseconds.
pub fn limits() -> Limits {
    Limits {
        wall_ms: 1_000,
        fuel: 100_000,
        memory_bytes: 16 << 20,
        stdout_bytes: 64 << 10,
        tool_calls: 100,
        result_bytes: 1 << 20,
        ..Limits::default()
    }
}

/// Canned tool results, as plain data.
pub struct FakeHost;

impl ToolHost for FakeHost {
    fn call(&mut self, name: &str, args: Vec<Data>, _kwargs: Kwargs) -> Result<Data, ToolFailure> {
        match (name, args.first()) {
            ("read_file", Some(Data::Str(p))) if p == "a.txt" => {
                Ok(Data::Str("hello\nworld\n".into()))
            }
            ("find_files", _) => Ok(Data::List(vec![
                Data::Str("a.txt".into()),
                Data::Str("sub/b.txt".into()),
            ])),
            ("write_file", _) => Ok(Data::Bool(true)),
            ("edit_file", _) => Ok(Data::Bool(false)),
            _ => Err(ToolFailure {
                type_name: "FileNotFound".into(),
                message: "no such file".into(),
            }),
        }
    }
}

/// Captured stdout with a cap.
pub struct CappedOut {
    /// Text so far.
    pub text: String,
    /// Cap in bytes.
    pub cap: usize,
}

impl Output for CappedOut {
    fn write(&mut self, text: &str) -> bool {
        if self.text.len() + text.len() > self.cap {
            return false;
        }
        self.text.push_str(text);
        true
    }
}

/// Target `parse_validate`: under the default limits, and under the most
/// a profile can allow (`max_depth` is clamped to the hard cap; any source
/// size), where the parser and the checker recurse deepest.
pub fn parse_validate(data: &[u8]) {
    let _ = validate_bytes(data, &namespace(), &Limits::default());
    let most = Limits {
        max_depth: u32::MAX,
        source_bytes: u64::MAX,
        ..Limits::default()
    };
    let _ = validate_bytes(data, &namespace(), &most);
}

/// Validate then interpret `src` with [`namespace`] and [`limits`].
pub fn validate_and_run(src: &[u8]) -> bool {
    validate_and_run_with(src, &namespace(), &limits())
}

/// Validate `src` against `ns` and, when it validates, interpret it against
/// [`FakeHost`] with stdout capped at `limits.stdout_bytes`; whether it
/// validated.
pub fn validate_and_run_with(src: &[u8], ns: &Namespace, limits: &Limits) -> bool {
    match validate_bytes(src, ns, limits) {
        Ok(program) => {
            let mut out = CappedOut {
                text: String::new(),
                cap: limits.stdout_bytes as usize,
            };
            let _ = run(&program, &mut FakeHost, &mut out, limits);
            true
        }
        Err(_) => false,
    }
}

/// Target `interp`.
pub fn interp(data: &[u8]) {
    if !validate_and_run(data) {
        // Not a valid program: use the bytes as the seed of a generated one.
        let mut seed = 0xcbf2_9ce4_8422_2325u64;
        for b in data {
            seed = (seed ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
        let mut rng = gen::Rng::new(seed);
        let program = gen::grammar_program(&mut rng);
        validate_and_run(program.as_bytes());
    }
}

/// A flat value the decoder accepts is within the depth cap and survives a
/// round trip unchanged.
pub fn check_flat(flat: &FlatData) {
    if let Ok(d) = Data::from_flat(flat, MAX_DATA_DEPTH) {
        assert!(
            d.depth() <= MAX_DATA_DEPTH,
            "from_flat accepted a value deeper than the cap"
        );
        // Compared through Debug, so NaN equals itself.
        let again = Data::from_flat(&d.to_flat(), MAX_DATA_DEPTH).map(|x| format!("{x:?}"));
        assert_eq!(
            again,
            Ok(format!("{d:?}")),
            "flat round trip changed the value"
        );
    }
}

/// Target `ipc_frame`.
pub fn ipc_frame(data: &[u8]) {
    ipc_decode(data);
}

/// `data` decoded as a message in both directions, every accepted value
/// through [`check_flat`]; how many of the two directions decoded it.
pub fn ipc_decode(data: &[u8]) -> usize {
    use lackpy_worker::ipc::decode;
    let mut decoded = 0;
    if let Ok(m) = decode::<FromWorker>(data) {
        decoded += 1;
        for (_, v) in worker_values(&m) {
            check_flat(v);
        }
    }
    if let Ok(ToWorker::ToolResult { result: Ok(f), .. }) = decode::<ToWorker>(data) {
        decoded += 1;
        check_flat(&f);
    }
    decoded
}

/// Every value a worker message carries: a tool call's arguments, and a
/// run's value and the globals it kept (these with their names).
fn worker_values(m: &FromWorker) -> Vec<(Option<&str>, &FlatData)> {
    match m {
        FromWorker::ToolCall { args, kwargs, .. } => args
            .iter()
            .chain(kwargs.iter().map(|(_, f)| f))
            .map(|f| (None, f))
            .collect(),
        FromWorker::Done(o) => o
            .value
            .iter()
            .map(|v| (None, v))
            .chain(o.globals.iter().map(|(n, f)| (Some(n.as_str()), f)))
            .collect(),
        _ => Vec::new(),
    }
}

/// Supervisor-side handling of an accepted value: the JSON form and repr
/// (the trace and the CLI contract render every argument and result).
fn render(d: &Data) {
    let _ = lackpy_supervisor::json::to_json(d);
    let _ = lackpy_supervisor::json::repr(d);
}

fn check_flat_and_render(flat: &FlatData) {
    check_flat(flat);
    if let Ok(d) = Data::from_flat(flat, MAX_DATA_DEPTH) {
        render(&d);
    }
}

/// Target `ipc_frame` with the supervisor's rendering of what it accepts
/// and the worker's check of predefined names.
pub fn ipc_frame_full(data: &[u8]) {
    use lackpy_worker::ipc::decode;
    ipc_frame(data);
    let ns = namespace();
    if let Ok(m) = decode::<FromWorker>(data) {
        for (name, v) in worker_values(&m) {
            if let Some(name) = name {
                let _ = lackpy_policy::lang::is_predefinable(name, &ns);
            }
            check_flat_and_render(v);
        }
    }
    if let Ok(ToWorker::Run { globals, .. }) = decode::<ToWorker>(data) {
        for (name, f) in &globals {
            let _ = lackpy_policy::lang::is_predefinable(name, &ns);
            check_flat(f);
        }
    }
}

// ------------------------------------------------------------------ glob

/// The fixed workspace of the `glob` target (created once per process):
///
/// ```text
/// a.txt  b.py  .env  .hidden/h.py  src/m.py  src/sub/n.py  src/sub/t.txt
/// src/sub/deep/er/est/z.txt  sp ace/é.txt
/// loop -> .              (a symlink loop through the root)
/// src/sub/back -> ../..  (another loop, relative, stays inside)
/// self -> self           (ELOOP)
/// out -> /               (points outside: never followed)
/// up -> ..               (climbs out: never followed)
/// dangling -> nope
/// ```
pub struct GlobWorkspace {
    /// The workspace directory.
    pub path: std::path::PathBuf,
    /// It, opened.
    pub ws: lackpy_supervisor::tools::fs::Workspace,
}

/// The `glob` target's workspace (created on first use).
///
/// # Panics
/// When the temporary workspace cannot be created (a broken machine, not
/// an input).
pub fn glob_workspace() -> &'static GlobWorkspace {
    static WS: std::sync::OnceLock<GlobWorkspace> = std::sync::OnceLock::new();
    WS.get_or_init(|| {
        use std::os::unix::fs::symlink;
        let base = std::env::temp_dir().join(format!("lackpy-fuzz-glob-{}", std::process::id()));
        let path = base.join("ws");
        let _ = std::fs::remove_dir_all(&base);
        let mk = |r: std::io::Result<()>| r.expect("create the glob fuzz workspace");
        mk(std::fs::create_dir_all(path.join("src/sub/deep/er/est")));
        mk(std::fs::create_dir_all(path.join(".hidden")));
        mk(std::fs::create_dir_all(path.join("sp ace")));
        for f in [
            "a.txt",
            "b.py",
            ".env",
            ".hidden/h.py",
            "src/m.py",
            "src/sub/n.py",
            "src/sub/t.txt",
            "src/sub/deep/er/est/z.txt",
            "sp ace/é.txt",
        ] {
            mk(std::fs::write(path.join(f), "x"));
        }
        mk(symlink(".", path.join("loop")));
        mk(symlink("../..", path.join("src/sub/back")));
        mk(symlink("self", path.join("self")));
        mk(symlink("/", path.join("out")));
        mk(symlink("..", path.join("up")));
        mk(symlink("nope", path.join("dangling")));
        // Something beside the workspace that must never be listed.
        mk(std::fs::write(base.join("canary.txt"), "secret"));
        let ws = lackpy_supervisor::tools::fs::Workspace::open(&path)
            .expect("open the glob fuzz workspace");
        GlobWorkspace { path, ws }
    })
}

/// Target `glob`: the bytes (lossily UTF-8, as a program's `str`) as a
/// `find_files` pattern. Besides not crashing: results are sorted, unique,
/// relative, never climb, never pass through the symlinks that point out,
/// and never exceed the result cap.
/// The run deadline each fuzzed `find_files` call gets. Why 2 s: well
/// under libFuzzer's 10 s per-input timeout even under AddressSanitizer,
/// so a walk that does not look at the deadline shows up as a hang.
pub const GLOB_RUN_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);

pub fn glob(data: &[u8]) {
    use lackpy_supervisor::tools::glob::{find_files, MAX_RESULTS};
    let g = glob_workspace();
    let pattern = String::from_utf8_lossy(data);
    // As the supervisor calls it: inside a run, whose deadline bounds the
    // walk (a pattern whose walk is long but bounded ends in `Timeout`).
    let deadline = std::time::Instant::now() + GLOB_RUN_DEADLINE;
    let run = lackpy_supervisor::providers::RunContext::new(deadline, None);
    let found = find_files(&g.ws, &pattern, &run);
    if let Ok(paths) = found {
        assert!(paths.len() <= MAX_RESULTS, "more than MAX_RESULTS paths");
        assert!(
            paths.windows(2).all(|w| w[0] < w[1]),
            "results not sorted and unique"
        );
        for p in &paths {
            assert!(!p.starts_with('/'), "absolute result {p:?}");
            let comps: Vec<&str> = p.split('/').collect();
            let (last, dirs) = comps.split_last().unwrap_or((&"", &[]));
            // `out` and `up` may be listed themselves, never gone through.
            assert!(
                *last != ".." && !dirs.iter().any(|c| matches!(*c, ".." | "out" | "up")),
                "result {p:?} leaves the workspace"
            );
        }
    }
}

// ---------------------------------------------------------------- config

/// Intents the `templates` mode matches every parsed template against.
const INTENTS: &[&str] = &[
    "read a.txt",
    "count lines in src/main.py",
    "find files matching **/*.md",
    "x y",
    "{a} {b}",
    "",
];

/// Target `config`. The first byte picks what the rest is:
/// - `0`: a config file: `Config::parse`, then every profile resolved
///   (against a kit parsed from the same text), metadata, docs index,
///   toolbox, a merge with itself, and the inferencer's `[inference]` parser;
/// - `1`: a `.kit` file, resolved as a profile through an empty config;
/// - `2`: a workspace `templates.toml` (everything up to the first NUL) and
///   an intent (the rest), matched by every template, plus keyword rules;
/// - `3`: a workspace `ratchet.json`, through `record_success` (which reads,
///   updates, writes it and may promote into `templates.toml`).
pub fn config(data: &[u8]) {
    let Some((mode, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    match mode % 4 {
        0 => config_file(&text),
        1 => kit_file(&text),
        2 => templates_file(&text),
        _ => ratchet_file(&text),
    }
}

fn config_file(text: &str) {
    use lackpy_policy::config::{Config, Kits};
    let file = std::path::Path::new("fuzz.toml");
    let Ok(cfg) = Config::parse(text, file) else {
        return;
    };
    let mut kits = Kits::default();
    kits.insert_text("k", text);
    let mut names = cfg.profile_names(&kits);
    names.push("none".into());
    names.push("read_file,find_files".into());
    for n in names.iter().take(64) {
        let _ = cfg.resolve(Some(n), None, &kits);
        let _ = cfg.profile_meta(Some(n), &kits);
        let _ = cfg.docs_index(Some(n), None, &kits);
    }
    let _ = cfg.resolve(None, None, &kits);
    let _ = cfg.resolve(None, Some(&["read_file".to_string()]), &kits);
    let _ = cfg.toolbox();
    if let Ok(inference) = cfg.inference.resolve() {
        use lackpy_inferencer::config::ProviderEndpoint;
        for p in &inference.order {
            let _ = p.endpoint(&|_| None);
        }
    }
    let merged = Config::merge(cfg.clone(), cfg);
    let _ = merged.resolve(None, None, &kits);
}

fn kit_file(text: &str) {
    use lackpy_policy::config::{parse_kit, render_kit, Config, Kits};
    let kit = parse_kit("k", text);
    // What `lackpy profile create` writes must parse back to the same tools.
    let again = parse_kit("k", &render_kit(&kit));
    assert_eq!(again.tools, kit.tools, "a rendered kit lists other tools");
    let mut kits = Kits::default();
    kits.insert_text("k", text);
    let cfg = Config::default();
    let _ = cfg.resolve(Some("k"), None, &kits);
    let _ = cfg.docs_index(Some("k"), None, &kits);
}

fn templates_file(text: &str) {
    use lackpy_inferencer::templates::{rules, TemplateSet};
    let (tpl, intent) = text.split_once('\0').unwrap_or((text, "read a.txt"));
    if let Ok(templates) = TemplateSet::parse(tpl, "fuzz.toml") {
        let set = TemplateSet { templates };
        for i in INTENTS.iter().copied().chain(std::iter::once(intent)) {
            let _ = set.find(i);
        }
    }
    let _ = rules(intent);
    let _ = rules(tpl);
}

/// A workspace for the ratchet (created once per process).
fn ratchet_workspace() -> &'static std::path::Path {
    static WS: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    WS.get_or_init(|| {
        let p = std::env::temp_dir().join(format!("lackpy-fuzz-ratchet-{}", std::process::id()));
        let _ = std::fs::create_dir_all(p.join(".lackpy"));
        p
    })
}

fn ratchet_file(text: &str) {
    use lackpy_inferencer::templates::{ratchet_path, record_success, templates_path, TemplateSet};
    let ws = ratchet_workspace();
    let _ = std::fs::remove_file(templates_path(ws));
    if std::fs::write(ratchet_path(ws), text).is_err() {
        return;
    }
    // An intent already in the file (if it parses) so the update path runs.
    let intent = text
        .split('"')
        .nth(3)
        .filter(|s| s.len() < 200)
        .unwrap_or("count the lines");
    for promote_after in [0, 1] {
        let _ = record_success(
            ws,
            intent,
            "len(find_files(\"*\"))",
            "ollama",
            promote_after,
            false,
        );
    }
    let _ = TemplateSet::load(Some(ws)).map(|t| t.find(intent));
}

// ------------------------------------------------------------ mcp_result

/// Target `mcp_result`: the bytes as JSON a server sends: a whole JSON-RPC
/// message (as rmcp parses each line), a `tools/call` result converted to
/// plain data (`providers::mcp::result_to_data`, then the supervisor's
/// flattening and rendering), and a tool listing entry (`spec_of`).
pub fn mcp_result(data: &[u8]) {
    use lackpy_policy::config::McpServer;
    use lackpy_supervisor::providers::mcp::{result_to_data, spec_of};
    use rmcp::model::{CallToolResult, ServerJsonRpcMessage, Tool};
    let _ = serde_json::from_slice::<ServerJsonRpcMessage>(data);
    if let Ok(r) = serde_json::from_slice::<CallToolResult>(data) {
        if let Ok(d) = result_to_data("t", &r) {
            let flat = d.to_flat();
            // What the supervisor sends must come back whole in the worker.
            assert_eq!(
                Data::from_flat(&flat, MAX_DATA_DEPTH).map(|x| format!("{x:?}")),
                Ok(format!("{d:?}")),
                "an MCP result does not survive the wire"
            );
            render(&d);
        }
    }
    if let Ok(t) = serde_json::from_slice::<Tool>(data) {
        let server = McpServer::default();
        if let Some(spec) = spec_of("srv", &server, &t, std::time::Duration::from_secs(1)) {
            let _ = lackpy_supervisor::providers::mcp::is_required(&spec, "x");
            // The name is a Python identifier the validator accepts as a tool.
            assert!(
                spec.name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_'),
                "tool name {:?} is not an identifier",
                spec.name
            );
        }
    }
}

// ------------------------------------------------------------------ shared

/// A fuzz target: takes any bytes, must never panic or hang.
pub type Target = fn(&[u8]);

/// Every target, by name: what `lackpy-fuzz TARGET` runs and what the
/// fuzz smoke replays each committed corpus through.
pub const TARGETS: &[(&str, Target)] = &[
    ("parse_validate", parse_validate),
    ("interp", interp),
    ("ipc_frame", ipc_frame_full),
    ("glob", glob),
    ("config", config),
    ("mcp_result", mcp_result),
];

/// Valid messages of every variant, with edge values: the seeds the
/// `ipc_frame` fuzzers mutate.
pub fn sample_messages() -> (Vec<FromWorker>, Vec<ToWorker>) {
    let data = Data::Dict(vec![
        (
            Data::Str("k".into()),
            Data::List(vec![Data::Int(i64::MIN), Data::Float(f64::NAN), Data::None]),
        ),
        (
            Data::Tuple(vec![]),
            Data::Set(vec![
                Data::BigInt("-123456789012345678901234567890".into()),
                Data::Bool(true),
            ]),
        ),
    ]);
    let from = vec![
        FromWorker::Ready {
            protocol: lackpy_policy::wire::PROTOCOL_VERSION,
        },
        FromWorker::SetupFailed {
            step: "pivot_root".into(),
            errno: 22,
            detail: "EINVAL".into(),
        },
        FromWorker::ToolCall {
            id: 1,
            name: "read_file".into(),
            args: vec![Data::Str("a.txt".into()).to_flat(), data.to_flat()],
            kwargs: vec![("path".into(), Data::Str("é\u{0}".into()).to_flat())],
        },
        FromWorker::Stdout("hello\n".into()),
        FromWorker::Done(Outcome {
            value: Some(data.to_flat()),
            repr: Some("{...}".into()),
            error: None,
            fuel_used: u64::MAX,
            globals: vec![],
            skipped_globals: vec![],
        }),
    ];
    let to = vec![
        ToWorker::Run {
            protocol: 1,
            program: "x = 1\nx".into(),
            tools: vec![ToolSig {
                name: "read_file".into(),
                args: vec!["path".into()],
            }],
            limits: Limits::default(),
            globals: vec![],
            want_globals: false,
        },
        ToWorker::ToolResult {
            id: 7,
            result: Ok(data.to_flat()),
        },
        ToWorker::ToolResult {
            id: 8,
            result: Err(ToolFailure {
                type_name: "PathOutsideWorkspace".into(),
                message: "no".into(),
            }),
        },
    ];
    (from, to)
}
