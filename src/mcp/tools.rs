//! The MCP tools `lackpy mcp` offers: names, input schemas, descriptions
//! written for a calling model, annotations, and the typed arguments.

use crate::mcp::backend::ToolInfo;
use rmcp::model::{Tool, ToolAnnotations};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The language in one paragraph, shared by the descriptions below.
const LANGUAGE: &str = "Programs are a strict subset of Python 3.11: assignments, for/if, \
comprehensions, f-strings, calls to the profile's tools and to builtins (len range enumerate zip \
sorted reversed min max sum any all abs round str int float bool list dict set tuple isinstance \
print sort_by repr). No import, def, class, while, try, lambda (except as key=) or names starting \
with '_'. The value of the last expression statement is the result, as in a notebook cell.";

/// Arguments of `run_program`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    /// Program text.
    pub program: String,
    /// Profile name.
    #[serde(default)]
    pub profile: Option<String>,
    /// Ad-hoc tool list.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Session id.
    #[serde(default)]
    pub session: Option<String>,
}

/// Arguments of `validate`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidateArgs {
    /// Program text.
    pub program: String,
    /// Profile name.
    #[serde(default)]
    pub profile: Option<String>,
    /// Ad-hoc tool list.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
}

/// Arguments of tools that take only an optional profile.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ProfileArg {
    /// Profile name.
    #[serde(default)]
    pub profile: Option<String>,
}

/// Arguments of tools that take no arguments.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// Arguments of `resolve_doc`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathArg {
    /// Doc path.
    pub path: String,
}

/// Arguments of `traces`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct TracesArg {
    /// How many traces.
    #[serde(default)]
    pub limit: Option<u64>,
}

/// Arguments of `search_tools`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryArg {
    /// Search words.
    pub query: String,
}

/// Arguments of `describe_tool`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NameArg {
    /// Tool name.
    pub name: String,
}

/// Arguments of `delegate`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelegateArgs {
    /// What the caller wants done, in words.
    pub intent: String,
    /// Profile name.
    #[serde(default)]
    pub profile: Option<String>,
}

/// Arguments of `confirm_result`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfirmArgs {
    /// The `run_id` of a `delegate` result.
    pub run_id: String,
    /// Whether the result was right.
    pub correct: bool,
}

/// Default and largest `traces` limit.
pub const TRACES_DEFAULT: u64 = 20;
/// Largest `traces` limit. Why: the store is a file per run; 1000 keeps a
/// listing fast and its text rendering is elided anyway.
pub const TRACES_MAX: u64 = 1000;

fn schema(properties: Value, required: &[&str]) -> Arc<Map<String, Value>> {
    let v = json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    });
    match v {
        Value::Object(m) => Arc::new(m),
        _ => Arc::new(Map::new()),
    }
}

fn profile_prop() -> Value {
    json!({"type": "string", "description": "Profile whose tools the program may use (see list_profiles). Omit for the server's default profile."})
}

fn tools_prop() -> Value {
    json!({"type": "array", "items": {"type": "string"}, "description": "Instead of a profile: the exact tool names the program may use, e.g. [\"read_file\", \"find_files\"]."})
}

fn read_only() -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
}

/// Annotations for tools that run programs, from the toolbox (a call may
/// name any profile or tool list, so the strongest tool counts): effects
/// ceiling at most 1 (the builtins' grade for reading) → read-only and
/// idempotent; effects 3 → destructive; any tool not provided by lackpy's
/// builtins (command, MCP, ...) → open world, since it may reach beyond the
/// workspace.
pub fn run_annotations(toolbox: &[ToolInfo]) -> ToolAnnotations {
    let d = toolbox.iter().map(|t| t.effects_ceiling).max().unwrap_or(0);
    let open = toolbox.iter().any(|t| t.provider != "builtin");
    ToolAnnotations::new()
        .read_only(d <= 1)
        .destructive(d >= 3)
        .idempotent(d <= 1)
        .open_world(open)
}

/// Every tool, in the order `tools/list` shows them.
pub fn all(toolbox: &[ToolInfo]) -> Vec<Tool> {
    let run_ann = run_annotations(toolbox);
    vec![
        Tool::new(
            "run_program",
            format!(
                "Validate and run a lackpy program in a fresh jailed worker and return its result. \
                 One call can make many tool calls and return only the answer. {LANGUAGE} \
                 Returns {{ok, value, repr, stdout, grade, trace, error}}; on failure ok is false and \
                 error has kind (validation/runtime/limit/tool/internal), type, message, line, col and hint. \
                 Pass the same `session` id across calls to keep the plain-data variables a program \
                 leaves for the next one, notebook-style."
            ),
            schema(
                json!({
                    "program": {"type": "string", "description": "The program text (lackpy: a strict Python subset)."},
                    "profile": profile_prop(),
                    "tools": tools_prop(),
                    "session": {"type": "string", "description": "Optional session id (1-128 of A-Z a-z 0-9 _ . : -). Variables left by earlier programs of this session are defined again at the start."},
                }),
                &["program"],
            ),
        )
        .with_title("Run a lackpy program")
        .with_annotations(run_ann.clone()),
        Tool::new(
            "validate",
            format!(
                "Check a lackpy program without running it: returns {{ok, grade, calls, error}} with the \
                 tools it would call and its grade (w: world coupling, d: effects). {LANGUAGE}"
            ),
            schema(
                json!({
                    "program": {"type": "string", "description": "The program text."},
                    "profile": profile_prop(),
                    "tools": tools_prop(),
                }),
                &["program"],
            ),
        )
        .with_title("Validate a lackpy program")
        .with_annotations(read_only()),
        Tool::new(
            "list_profiles",
            "List the profiles (named tool sets) programs can run under, with their tools and which one is the default.",
            schema(json!({}), &[]),
        )
        .with_title("List profiles")
        .with_annotations(read_only()),
        Tool::new(
            "list_tools",
            "List the tools a profile grants, with Python signatures, descriptions and grades. Use these names as functions in programs.",
            schema(json!({"profile": profile_prop()}), &[]),
        )
        .with_title("List a profile's tools")
        .with_annotations(read_only()),
        Tool::new(
            "docs_index",
            "List the documentation files of a profile's tools (paths to pass to resolve_doc).",
            schema(json!({"profile": profile_prop()}), &[]),
        )
        .with_title("Index of tool documentation")
        .with_annotations(read_only()),
        Tool::new(
            "resolve_doc",
            "Return the text of one tool documentation file, by the path docs_index or describe_tool gave.",
            schema(json!({"path": {"type": "string", "description": "Doc path as listed by docs_index."}}), &["path"]),
        )
        .with_title("Read a tool's documentation")
        .with_annotations(read_only()),
        Tool::new(
            "traces",
            "Show the most recent run traces (newest first): each run's program, grade, tool calls and outcome.",
            schema(
                json!({"limit": {"type": "integer", "minimum": 1, "maximum": TRACES_MAX, "description": "How many runs to show (default 20)."}}),
                &[],
            ),
        )
        .with_title("Recent run traces")
        .with_annotations(read_only().idempotent(false)),
        Tool::new(
            "search_tools",
            "Find tools by what they do: matches words of the query against every tool's name and description, best first. Use it instead of reading every signature when the toolbox is large.",
            schema(json!({"query": {"type": "string", "description": "A few words, e.g. \"read a file\"."}}), &["query"]),
        )
        .with_title("Search tools")
        .with_annotations(read_only()),
        Tool::new(
            "describe_tool",
            "Show one tool in full: signature, arguments with types and descriptions, return type, grade, its doc path, and the profiles that grant it.",
            schema(json!({"name": {"type": "string", "description": "Tool name, as list_tools or search_tools gave it."}}), &["name"]),
        )
        .with_title("Describe a tool")
        .with_annotations(read_only()),
        Tool::new(
            "delegate",
            "Describe a task in words; lackpy's inference providers write a program for it, validate it and run it. \
             Returns the run result plus the generated program. Fails with a clear error when no inference provider is configured.",
            schema(
                json!({
                    "intent": {"type": "string", "description": "What to do, in plain words."},
                    "profile": profile_prop(),
                }),
                &["intent"],
            ),
        )
        .with_title("Delegate a task to lackpy")
        .with_annotations(run_ann.open_world(true)),
        Tool::new(
            "confirm_result",
            "Tell lackpy whether a delegate result was right, by its run_id. Confirmed results teach the ratchet \
             (after [inference] promote_after confirmations the program becomes a workspace template); a rejection \
             resets the count and removes a template promoted for that intent.",
            schema(
                json!({
                    "run_id": {"type": "string", "description": "The run_id of the delegate result."},
                    "correct": {"type": "boolean", "description": "true when the result was right, false when it was wrong."},
                }),
                &["run_id", "correct"],
            ),
        )
        .with_title("Confirm or reject a delegate result")
        .with_annotations(
            ToolAnnotations::new()
                .read_only(false)
                .destructive(false)
                .idempotent(true)
                .open_world(false),
        ),
    ]
}

/// Score of `tool` for the words of `query` (0: no match). Name hits weigh
/// more than description hits; whole-word hits more than substrings.
pub fn score(tool: &ToolInfo, query: &str) -> u32 {
    let name = tool.name.to_lowercase();
    let desc = tool.description.to_lowercase();
    let name_words: Vec<&str> = name
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let desc_words: Vec<&str> = desc
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let mut s = 0u32;
    for q in query
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() >= 2)
    {
        if name == q {
            s += 20;
        }
        if name_words.iter().any(|w| *w == q || stem(w) == stem(q)) {
            s += 8;
        } else if name.contains(q) {
            s += 4;
        }
        if desc_words.iter().any(|w| *w == q || stem(w) == stem(q)) {
            s += 3;
        } else if desc.contains(q) {
            s += 1;
        }
    }
    s
}

/// Crude English stemming so "files" finds "file" and "reading" finds "read".
fn stem(w: &str) -> &str {
    for suffix in ["ing", "es", "s", "ed"] {
        if let Some(base) = w.strip_suffix(suffix) {
            if base.len() >= 3 {
                return base;
            }
        }
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, desc: &str, d: u8) -> ToolInfo {
        ToolInfo {
            name: name.into(),
            description: desc.into(),
            args: vec![],
            returns: String::new(),
            grade_w: 1,
            effects_ceiling: d,
            provider: "builtin".into(),
            docs: None,
        }
    }

    #[test]
    fn names_are_the_contract() {
        let names: Vec<String> = all(&[]).iter().map(|t| t.name.to_string()).collect();
        assert_eq!(
            names,
            [
                "run_program",
                "validate",
                "list_profiles",
                "list_tools",
                "docs_index",
                "resolve_doc",
                "traces",
                "search_tools",
                "describe_tool",
                "delegate",
                "confirm_result"
            ]
        );
        for t in all(&[]) {
            assert_eq!(
                t.input_schema.get("type"),
                Some(&json!("object")),
                "{}",
                t.name
            );
            assert!(
                t.description.as_deref().is_some_and(|d| d.len() > 40),
                "{}",
                t.name
            );
        }
    }

    #[test]
    fn run_annotations_follow_the_toolbox() {
        let ro = run_annotations(&[tool("read_file", "", 1)]);
        assert_eq!(ro.read_only_hint, Some(true));
        assert_eq!(ro.open_world_hint, Some(false));
        let rw = run_annotations(&[tool("read_file", "", 0), tool("write_file", "", 3)]);
        assert_eq!(rw.read_only_hint, Some(false));
        assert_eq!(rw.destructive_hint, Some(true));
        let cmd = ToolInfo {
            provider: "command".into(),
            ..tool("curl", "", 2)
        };
        let ow = run_annotations(&[cmd]);
        assert_eq!(ow.open_world_hint, Some(true));
        assert_eq!(ow.destructive_hint, Some(false));
    }

    #[test]
    fn search_prefers_name_hits() {
        let r = tool("read_file", "Read a UTF-8 text file from the workspace.", 0);
        let f = tool("find_files", "Glob for paths in the workspace.", 0);
        assert!(score(&r, "read file") > score(&f, "read file"));
        assert!(score(&f, "find files") > score(&r, "find files"));
        assert_eq!(score(&r, "zebra"), 0);
    }
}
