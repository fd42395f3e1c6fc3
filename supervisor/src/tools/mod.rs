//! The builtins: the tools the supervisor itself implements (the file
//! tools and code intelligence). Only the supervisor runs tools; a worker
//! can only ask. Calls come from the dispatcher, `providers`.

pub mod codeintel;
pub mod fs;
pub mod glob;

use crate::call::RunContext;
use fs::Workspace;
use lackpy_policy::config::{ToolSpec, Toolbox};
use lackpy_policy::wire::{Data, ToolFailure};

/// The builtins' names: the file tools and code intelligence. Their specs
/// (arguments, grades, descriptions) are `policy`'s `default_tools.toml`,
/// the one table of builtins.
pub const NAMES: &[&str] = lackpy_policy::lang::tables::BUILTIN_TOOLS;

/// Whether the supervisor implements a builtin function of this name.
pub fn is_builtin(name: &str) -> bool {
    NAMES.contains(&name)
}

/// The spec of a builtin tool by name (from `default_tools.toml`).
pub fn builtin_spec(name: &str) -> Option<ToolSpec> {
    Toolbox::builtin().get(name).cloned()
}

fn str_arg<'a>(
    tool: &str,
    spec: &ToolSpec,
    args: &'a [Data],
    i: usize,
) -> Result<&'a str, ToolFailure> {
    let name = spec.args.get(i).map_or("arg", |a| a.name.as_str());
    match args.get(i) {
        Some(Data::Str(s)) => Ok(s),
        Some(other) => Err(ToolFailure::new(
            "BadArgument",
            format!(
                "{tool}() argument '{name}' must be str, not {}",
                other.type_name()
            ),
        )),
        None => Err(ToolFailure::new(
            "BadArgument",
            format!("{tool}() missing required argument: '{name}'"),
        )),
    }
}

/// Run builtin `function` (one of [`NAMES`]) for an authorized call of
/// `spec`, positional arguments in the spec's order, for run `run`.
/// Callers go through `Providers::call`, which puts
/// the builtins that write or index on a confined lane.
///
/// # Errors
/// The tool's failure.
pub fn call(
    function: &str,
    spec: &ToolSpec,
    args: &[Data],
    ws: &Workspace,
    run: &RunContext,
) -> Result<Data, ToolFailure> {
    if codeintel::is_codeintel(function) {
        let name = str_arg(function, spec, args, 0)?;
        return codeintel::call(function, name, ws, run);
    }
    file_tool(function, spec, args, ws, run)
}

/// The file tools (`read_file`, `find_files`, `write_file`, `edit_file`).
fn file_tool(
    t: &str,
    spec: &ToolSpec,
    args: &[Data],
    ws: &Workspace,
    run: &RunContext,
) -> Result<Data, ToolFailure> {
    match t {
        "read_file" => fs::read_text(ws, str_arg(t, spec, args, 0)?).map(Data::Str),
        "find_files" => glob::find_files(ws, str_arg(t, spec, args, 0)?, run)
            .map(|v| Data::List(v.into_iter().map(Data::Str).collect())),
        "write_file" => {
            let (path, content) = (str_arg(t, spec, args, 0)?, str_arg(t, spec, args, 1)?);
            fs::write_text_within(ws, path, content, run).map(|()| Data::Bool(true))
        }
        "edit_file" => {
            let path = str_arg(t, spec, args, 0)?;
            let old = str_arg(t, spec, args, 1)?;
            let new = str_arg(t, spec, args, 2)?;
            let text = fs::read_text(ws, path)?;
            match text.find(old) {
                None => Ok(Data::Bool(false)),
                Some(at) => {
                    let mut out = String::with_capacity(text.len() + new.len());
                    out.push_str(&text[..at]);
                    out.push_str(new);
                    out.push_str(&text[at + old.len()..]);
                    fs::write_text_within(ws, path, &out, run).map(|()| Data::Bool(true))
                }
            }
        }
        other => Err(ToolFailure::new(
            "ToolFailed",
            format!("no builtin tool named {other:?}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_file_first_occurrence() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f"), "a-b-a").unwrap();
        let ws = Workspace::open(d.path()).unwrap();
        let spec = builtin_spec("edit_file").unwrap();
        let call = |spec: &ToolSpec, args: &[Data], ws: &Workspace| {
            super::call("edit_file", spec, args, ws, &RunContext::default())
        };
        let s = |x: &str| Data::Str(x.into());
        assert_eq!(
            call(&spec, &[s("f"), s("a"), s("X")], &ws).unwrap(),
            Data::Bool(true)
        );
        assert_eq!(
            std::fs::read_to_string(d.path().join("f")).unwrap(),
            "X-b-a"
        );
        assert_eq!(
            call(&spec, &[s("f"), s("zz"), s("X")], &ws).unwrap(),
            Data::Bool(false)
        );
        assert_eq!(
            call(&spec, &[s("f"), Data::Int(1), s("X")], &ws)
                .unwrap_err()
                .type_name,
            "BadArgument"
        );
    }
}
