//! Parse → validate → grade. (STUB: parse only; the policy work replaces the
//! body of `validate` but keeps these public signatures.)

use crate::wire::{ErrorInfo, ErrorKind, Limits};
use rustpython_parser::{ast, text_size::TextSize, Mode};
use serde::Serialize;

/// Grade of a program or tool: world coupling `w` and effects `d`, each 0–3.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Grade {
    /// World coupling.
    pub w: u8,
    /// Effects.
    pub d: u8,
}

/// One tool visible to a program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolEntry {
    /// Name the program uses (alias).
    pub name: String,
    /// Name of the real tool in the toolbox.
    pub target: String,
    /// Declared argument names.
    pub args: Vec<String>,
    /// The tool's grade.
    pub grade: Grade,
}

/// The names a program may call besides builtins: the active profile's tools.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Namespace {
    /// Tools, by program-visible name.
    pub tools: Vec<ToolEntry>,
}

impl Namespace {
    /// Look a tool up by the name the program uses.
    pub fn get(&self, name: &str) -> Option<&ToolEntry> {
        self.tools.iter().find(|t| t.name == name)
    }
}

/// A validated program, ready to interpret.
#[derive(Debug, Clone)]
pub struct Program {
    /// The source text.
    pub source: String,
    /// Top-level statements.
    pub body: Vec<ast::Stmt>,
    /// Join of the grades of the tools it names.
    pub grade: Grade,
    /// Tools it calls, in first-appearance order, deduplicated.
    pub calls: Vec<String>,
    line_starts: Vec<u32>,
}

impl Program {
    /// 1-based (line, column) of a byte offset into the source; the column counts characters.
    pub fn locate(&self, offset: TextSize) -> (u32, u32) {
        let off = u32::from(offset);
        let line_idx = match self.line_starts.binary_search(&off) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        let start = self.line_starts.get(line_idx).copied().unwrap_or(0) as usize;
        let end = (off as usize).min(self.source.len());
        let col = self.source.get(start..end).map_or(0, |s| s.chars().count());
        (line_idx as u32 + 1, col as u32 + 1)
    }
}

/// Parse, validate and grade `source` against `ns` under `limits`
/// (`source_bytes`, `max_depth`).
///
/// # Errors
/// Every violation found, each an [`ErrorInfo`] of kind `validation`.
pub fn validate(source: &str, ns: &Namespace, limits: &Limits) -> Result<Program, Vec<ErrorInfo>> {
    let _ = (ns, limits);
    let module = rustpython_parser::parse(source, Mode::Module, "<program>").map_err(|e| {
        vec![ErrorInfo::new(ErrorKind::Validation, "SyntaxError", e.error.to_string())]
    })?;
    let body = match module {
        ast::Mod::Module(m) => m.body,
        _ => Vec::new(),
    };
    let mut line_starts = vec![0u32];
    for (i, b) in source.bytes().enumerate() {
        if b == b'\n' {
            line_starts.push(i as u32 + 1);
        }
    }
    Ok(Program { source: source.to_string(), body, grade: Grade::default(), calls: Vec::new(), line_starts })
}
