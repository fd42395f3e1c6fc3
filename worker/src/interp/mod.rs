//! The lackpy interpreter. (STUB: the interpreter work replaces this,
//! keeping these public names and signatures.)

use lackpy_policy::wire::{Data, ErrorInfo, ErrorKind, Limits, ToolFailure};
use lackpy_policy::Program;

/// How a program reaches its tools. The worker's implementation sends each
/// call over IPC; tests use an in-process fake.
pub trait ToolHost {
    /// Call tool `name` (as written in the program) with plain-data arguments.
    ///
    /// # Errors
    /// The tool's failure, which the interpreter raises as a `tool` error.
    fn call(&mut self, name: &str, args: Vec<Data>, kwargs: Vec<(String, Data)>) -> Result<Data, ToolFailure>;
}

/// Where `print` output goes. The worker streams it over IPC; tests collect it.
pub trait Output {
    /// Append printed text. Returning `false` stops the run with an `output` limit error.
    fn write(&mut self, text: &str) -> bool;
}

impl Output for String {
    fn write(&mut self, text: &str) -> bool {
        self.push_str(text);
        true
    }
}

/// The result of interpreting one program.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    /// The value of the last top-level expression statement, if the program ended in one.
    pub value: Option<Data>,
    /// Its Python repr.
    pub repr: Option<String>,
    /// The error that ended the run, if any.
    pub error: Option<ErrorInfo>,
    /// Fuel consumed.
    pub fuel_used: u64,
}

/// Interpret a validated program.
pub fn run(program: &Program, host: &mut dyn ToolHost, out: &mut dyn Output, limits: &Limits) -> RunResult {
    let _ = (program, host, out, limits);
    RunResult {
        value: None,
        repr: None,
        error: Some(ErrorInfo::new(ErrorKind::Internal, "NotImplemented", "interpreter not built yet")),
        fuel_used: 0,
    }
}
