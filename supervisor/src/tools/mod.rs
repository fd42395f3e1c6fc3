//! The tools the supervisor itself implements, and the dispatch from a
//! profile's [`ToolSpec`] to them. Only the supervisor runs tools; a worker
//! can only ask.

pub mod fs;
pub mod glob;

use fs::{fail, Workspace};
use lackpy_policy::config::ToolSpec;
use lackpy_policy::wire::{Data, ToolFailure};

/// The builtin tools: (name, argument names, grade w, effects ceiling, description).
pub const BUILTINS: &[(&str, &[&str], u8, u8, &str)] = &[
    (
        "read_file",
        &["path"],
        1,
        1,
        "Read a UTF-8 text file of the workspace.",
    ),
    (
        "find_files",
        &["pattern"],
        1,
        1,
        "Paths of the workspace matching a glob pattern, sorted.",
    ),
    (
        "write_file",
        &["path", "content"],
        3,
        3,
        "Write a text file (atomically), creating parent directories.",
    ),
    (
        "edit_file",
        &["path", "old_str", "new_str"],
        3,
        3,
        "Replace the first occurrence of old_str; False if absent.",
    ),
    (
        "find_definitions",
        &["name"],
        1,
        0,
        "Definitions (functions, classes, methods) of a name in the workspace's Python files.",
    ),
    (
        "find_callers",
        &["name"],
        1,
        0,
        "Call sites of a function or method name in the workspace's Python files.",
    ),
];

/// The spec of a builtin tool by name.
pub fn builtin_spec(name: &str) -> Option<ToolSpec> {
    BUILTINS
        .iter()
        .find(|b| b.0 == name)
        .map(|(name, args, w, d, desc)| ToolSpec {
            name: (*name).to_string(),
            provider: "builtin".to_string(),
            description: (*desc).to_string(),
            args: args
                .iter()
                .map(|a| lackpy_policy::config::ArgSpec {
                    name: (*a).to_string(),
                    type_name: "str".to_string(),
                    description: String::new(),
                })
                .collect(),
            returns: match *name {
                "read_file" => "str",
                "find_files" => "list[str]",
                "find_definitions" | "find_callers" => "list[dict]",
                _ => "bool",
            }
            .to_string(),
            grade_w: *w,
            effects_ceiling: *d,
            ..ToolSpec::default()
        })
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
        Some(other) => Err(fail(
            "BadArgument",
            format!(
                "{tool}() argument '{name}' must be str, not {}",
                type_name(other)
            ),
        )),
        None => Err(fail(
            "BadArgument",
            format!("{tool}() missing required argument: '{name}'"),
        )),
    }
}

/// Python type name of a value, for messages.
pub fn type_name(d: &Data) -> &'static str {
    match d {
        Data::None => "NoneType",
        Data::Bool(_) => "bool",
        Data::Int(_) | Data::BigInt(_) => "int",
        Data::Float(_) => "float",
        Data::Str(_) => "str",
        Data::List(_) => "list",
        Data::Tuple(_) => "tuple",
        Data::Dict(_) => "dict",
        Data::Set(_) => "set",
    }
}

/// Execute a tool call already authorized against the profile, with
/// positional arguments in the spec's order.
///
/// # Errors
/// The tool's failure.
pub fn call(spec: &ToolSpec, args: &[Data], ws: &Workspace) -> Result<Data, ToolFailure> {
    if spec.provider != "builtin" || crate::providers::codeintel::is_codeintel(&spec.name) {
        return crate::providers::call(spec, args, ws);
    }
    builtin(spec, args, ws)
}

/// The builtin function `spec` runs when it is one the supervisor
/// implements itself (the file tools and code intelligence, also behind an
/// alias, a `codeintel` entry or an original-lackpy `lackpy.sources.builtins`
/// entry): those run confined.
pub fn builtin_function(spec: &ToolSpec) -> Option<&str> {
    let function = || {
        spec.provider_config
            .get("function")
            .and_then(|f| f.as_str())
            .unwrap_or(spec.name.as_str())
    };
    match spec.provider.as_str() {
        "builtin" => Some(spec.name.as_str()),
        "codeintel" => Some(function()),
        "python"
            if spec.provider_config.get("module").and_then(|m| m.as_str())
                == Some(crate::providers::LEGACY_BUILTINS_MODULE) =>
        {
            Some(function())
        }
        _ => None,
    }
}

/// [`call`] for a builtin tool on a confined lane ([`crate::confine`]):
/// landlocked to the workspace, read-only unless the tool writes, no
/// network, no execute. Any other tool is called here as [`call`] does.
///
/// # Errors
/// The tool's failure.
pub fn call_confined(
    spec: &ToolSpec,
    args: std::sync::Arc<Vec<Data>>,
    ws: &Workspace,
) -> Result<Data, ToolFailure> {
    let access = match builtin_function(spec) {
        // Not a builtin; or one whose every open is a single `openat2`
        // beneath the workspace descriptor (`read_file`, `find_files`), so
        // the kernel already confines it and the hot path keeps no thread
        // hop (a hop per call cost ~1 ms under CPU contention: a flood of
        // 10,000 calls then ran past the wall clock).
        None | Some("read_file" | "find_files") => return call(spec, &args, ws),
        Some("write_file" | "edit_file") => crate::confine::Access::Write,
        Some(_) => crate::confine::Access::Read,
    };
    let ws2 = ws
        .try_clone()
        .map_err(|e| fail("ToolFailed", format!("cannot share the workspace: {e}")))?;
    let spec2 = spec.clone();
    crate::confine::run(ws.path(), access, move || call(&spec2, &args, &ws2))
}

/// The file tools (`read_file`, `find_files`, `write_file`, `edit_file`).
fn builtin(spec: &ToolSpec, args: &[Data], ws: &Workspace) -> Result<Data, ToolFailure> {
    let t = spec.name.as_str();
    match t {
        "read_file" => fs::read_text(ws, str_arg(t, spec, args, 0)?).map(Data::Str),
        "find_files" => glob::find_files(ws, str_arg(t, spec, args, 0)?)
            .map(|v| Data::List(v.into_iter().map(Data::Str).collect())),
        "write_file" => fs::write_text(ws, str_arg(t, spec, args, 0)?, str_arg(t, spec, args, 1)?)
            .map(|()| Data::Bool(true)),
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
                    fs::write_text(ws, path, &out).map(|()| Data::Bool(true))
                }
            }
        }
        other => Err(fail(
            "ToolFailed",
            format!("no builtin tool named {other:?}"),
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn edit_file_first_occurrence() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f"), "a-b-a").unwrap();
        let ws = Workspace::open(d.path()).unwrap();
        let spec = builtin_spec("edit_file").unwrap();
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

    #[test]
    fn other_providers_fail_clearly() {
        let d = tempfile::tempdir().unwrap();
        let ws = Workspace::open(d.path()).unwrap();
        let spec = ToolSpec {
            name: "x".into(),
            provider: "no-such-provider".into(),
            ..ToolSpec::default()
        };
        let e = call(&spec, &[], &ws).unwrap_err();
        assert_eq!(e.type_name, "ToolFailed");
        assert!(e.message.contains("not available"));
    }
}
