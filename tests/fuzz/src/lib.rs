//! The fuzz targets' bodies, shared by the libFuzzer entry points
//! (`fuzz_targets/*.rs`, run by `cargo +nightly fuzz`) and the built-in
//! mutation fuzzer (`src/main.rs`, stable toolchain). Each target must never
//! panic, hang or overflow the stack, whatever the input.
//!
//! - [`parse_validate`]: raw bytes as a program through the validator.
//! - [`interp`]: a program that validates, run by the interpreter with small
//!   limits against an in-process fake tool host. Inputs that do not
//!   validate seed the grammar generator instead, so most runs interpret.
//! - [`ipc_frame`]: raw bytes as an IPC frame payload in both directions,
//!   and every decoded value through the flat-data rebuild.

pub mod gen;

use lackpy_policy::lang::validate_bytes;
use lackpy_policy::wire::{
    Data, FlatData, FromWorker, Limits, ToWorker, ToolFailure, MAX_DATA_DEPTH,
};
use lackpy_policy::{Grade, Namespace, ToolEntry};
use lackpy_worker::interp::{run, Output, ToolHost};

/// The profile every target uses: the four builtin file tools.
pub fn namespace() -> Namespace {
    let tool = |name: &str, args: &[&str]| ToolEntry {
        name: name.to_string(),
        target: name.to_string(),
        args: args.iter().map(|s| s.to_string()).collect(),
        grade: Grade::default(),
    };
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
    fn call(
        &mut self,
        name: &str,
        args: Vec<Data>,
        _kwargs: Vec<(String, Data)>,
    ) -> Result<Data, ToolFailure> {
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

/// Target `parse_validate`.
pub fn parse_validate(data: &[u8]) {
    let _ = validate_bytes(data, &namespace(), &Limits::default());
}

/// Validate then interpret `src`.
pub fn validate_and_run(src: &[u8]) -> bool {
    let limits = limits();
    match validate_bytes(src, &namespace(), &limits) {
        Ok(program) => {
            let mut out = CappedOut {
                text: String::new(),
                cap: limits.stdout_bytes as usize,
            };
            let _ = run(&program, &mut FakeHost, &mut out, &limits);
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

fn check_flat(flat: &FlatData) {
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
    use lackpy_worker::ipc::decode;
    if let Ok(m) = decode::<FromWorker>(data) {
        match m {
            FromWorker::ToolCall { args, kwargs, .. } => {
                args.iter().for_each(check_flat);
                kwargs.iter().for_each(|(_, f)| check_flat(f));
            }
            FromWorker::Done(o) => {
                if let Some(v) = &o.value {
                    check_flat(v);
                }
            }
            _ => {}
        }
    }
    if let Ok(ToWorker::ToolResult { result: Ok(f), .. }) = decode::<ToWorker>(data) {
        check_flat(&f);
    }
}
