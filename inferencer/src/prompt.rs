//! Prompts: the Jupyter-cell framing of the gambit seed.
//!
//! The system prompt lists only what the cell may use — the profile's tools
//! (signature and description) and the builtins — and a few retrieved
//! examples; it never lists what is forbidden (the seed found prohibitions
//! hurt small models). The retry adds the previous answer, the validator's
//! errors with their lines, and deterministic hints.

use crate::corpus::{Example, BUILTINS};
use crate::hints::{render_errors, Hint};
use crate::http::{Message, Role};
use lackpy_policy::config::ToolSpec;
use lackpy_policy::ErrorInfo;

/// A tool as the prompt shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolDoc {
    /// Name the program uses.
    pub name: String,
    /// `name(arg: type, ...) -> returns`.
    pub signature: String,
    /// One-line description.
    pub description: String,
}

impl ToolDoc {
    /// From a tool spec under the name the program uses.
    pub fn from_spec(alias: &str, spec: &ToolSpec) -> Self {
        ToolDoc {
            name: alias.to_string(),
            signature: spec.signature_as(alias),
            description: spec
                .description
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string(),
        }
    }

    /// The shipped built-in file tools, for when no spec is at hand.
    pub fn builtin(name: &str) -> Option<ToolDoc> {
        let (sig, desc) = match name {
            "read_file" => ("read_file(path: str) -> str", "Read a file's whole content"),
            "find_files" => (
                "find_files(pattern: str) -> list[str]",
                "Paths matching a glob pattern such as \"**/*.py\"",
            ),
            "write_file" => (
                "write_file(path: str, content: str) -> bool",
                "Write (create or replace) a file",
            ),
            "edit_file" => (
                "edit_file(path: str, old_str: str, new_str: str) -> bool",
                "Replace the first occurrence of old_str; False if absent",
            ),
            _ => return None,
        };
        Some(ToolDoc {
            name: name.to_string(),
            signature: sig.to_string(),
            description: desc.to_string(),
        })
    }
}

/// The system prompt for a namespace (the examples go in as turns: see
/// [`first_messages`]).
pub fn system_prompt(tools: &[ToolDoc]) -> String {
    system_prompt_with(tools, None)
}

/// The system prompt, with a workspace view (see [`crate::context`]) when
/// given: what the cell can read, as text.
pub fn system_prompt_with(tools: &[ToolDoc], workspace: Option<&str>) -> String {
    let mut s = String::from(
        "You are a Jupyter notebook cell generator. Write a single cell using ONLY the pre-loaded kernel namespace below.\n\n\
         Output ONLY the cell contents — no markdown, no explanation, no code fences.\n\n\
         Assign tool results to variables and reuse them. Never call the same function twice when you can reuse a variable.\n\n",
    );
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    if names.contains(&"read_file") {
        s.push_str("You orchestrate tools to find and work with existing files. Use read_file(path) to get file contents. Paths are relative to the workspace root.\n\n");
    }
    s.push_str("Kernel namespace:\n");
    for t in tools {
        if t.description.is_empty() {
            s.push_str(&format!("  {}\n", t.signature));
        } else {
            s.push_str(&format!("  {}: {}\n", t.signature, t.description));
        }
    }
    s.push_str(&format!(
        "\nBuiltins: {}\n",
        BUILTINS
            .iter()
            .filter(|b| **b != "sort_by")
            .copied()
            .collect::<Vec<_>>()
            .join(", ")
    ));
    s.push_str("  sort_by(items, key, reverse=False) -> list: sort dicts by a field name, or sequences by an index\n");
    s.push_str("\nThe cell's last expression is displayed as output: end the cell with the expression whose value answers the task.\n");
    s.push_str("Answer exactly what the task asks for: one field (a file, a line number, a name, a count) when it asks for one, the matching lines or values when it asks for those, whole records only when it asks where or what something is.\n");
    if let Some(w) = workspace.filter(|w| !w.trim().is_empty()) {
        s.push_str("\nThe workspace (use these exact paths; data files start as shown):\n");
        s.push_str(w.trim_end());
        s.push('\n');
    }
    s
}

/// The system turn, then each retrieved example as a user turn (its task)
/// and an assistant turn (its cell). A small model imitates the form of
/// earlier answers far more than examples quoted in the system text: with
/// the examples in the system prompt, Qwen2.5-Coder-1.5B answered 42 of
/// 111 held-out tasks with a constant (the value it guessed) instead of a
/// cell.
fn opening(system: &str, examples: &[&Example]) -> Vec<Message> {
    let mut m = vec![Message::new(Role::System, system)];
    for e in examples {
        m.push(Message::new(
            Role::User,
            format!("# Task: {}", e.intent.trim()),
        ));
        m.push(Message::new(Role::Assistant, e.program.trim_end()));
    }
    m
}

/// The first attempt's conversation.
pub fn first_messages(system: &str, examples: &[&Example], intent: &str) -> Vec<Message> {
    let mut m = opening(system, examples);
    m.push(Message::new(
        Role::User,
        format!("# Task: {}", intent.trim()),
    ));
    m
}

/// The correction retry's conversation: the examples, then one user turn
/// holding the task, the rejected cell in a fence, the errors with lines
/// and the hints. No assistant turn for the rejected cell and no section
/// labels: small models echo a `### Request:` or `# Task:` header back as
/// code.
pub fn retry_messages(
    system: &str,
    examples: &[&Example],
    intent: &str,
    previous: &str,
    errors: &[ErrorInfo],
    hints: &[Hint],
) -> Vec<Message> {
    // A cell that only wrote its answer out as a constant has nothing to
    // correct: shown again, it is copied again (seen: the same list of
    // made-up find_definitions results three times; left out, with the
    // hint naming the call, the model called it).
    let constant = errors.iter().any(|e| e.type_name == "NoToolCall");
    let mut fix = if constant {
        format!("# Task: {}\n\n{CONSTANT_REJECTED}\n", intent.trim())
    } else {
        format!(
            "# Task: {}\n\nThis cell was rejected:\n```python\n{}\n```\n",
            intent.trim(),
            previous.trim_end()
        )
    };
    if !errors.is_empty() {
        fix.push_str("Why:\n");
        fix.push_str(&render_errors(errors));
        fix.push('\n');
    }
    if !hints.is_empty() {
        fix.push_str("How to fix it:\n");
        for h in hints {
            fix.push_str(&format!("- {}\n", h.text));
        }
    }
    fix.push_str("Write the corrected cell for the task, using only the kernel namespace. Output only the code.");
    let mut m = opening(system, examples);
    m.push(Message::new(Role::User, fix));
    m
}

/// What the retry says instead of showing a cell rejected as a constant.
const CONSTANT_REJECTED: &str = "Your answer wrote a value out as a constant instead of computing it with the tools, so it was rejected.";

/// A retry after the model repeated a rejected cell: the turn of
/// [`retry_messages`], plus an explicit request for a different approach
/// (for a constant, whose cell the turn does not show: a computed one).
pub fn different_messages(retry: Vec<Message>) -> Vec<Message> {
    let mut m = retry;
    if let Some(last) = m.last_mut() {
        let ask = if last.content.contains(CONSTANT_REJECTED) {
            "\nYou already gave that constant twice. Write a cell that computes the answer with the tools, following the hints."
        } else {
            "\nYou already gave this cell twice. Write a different cell that follows the hints."
        };
        last.content.push_str(ask);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::Corpus;

    #[test]
    fn a_constant_is_not_shown_back_to_the_model() {
        let no_tool = ErrorInfo::new(
            lackpy_policy::ErrorKind::Validation,
            "NoToolCall",
            "the cell calls no tool and ends in a constant",
        );
        let m = retry_messages(
            "sys",
            &[],
            "what is defined in a.py",
            "[{\"name\": \"made_up\"}]",
            &[no_tool],
            &[],
        );
        let last = &m.last().expect("a turn").content;
        assert!(!last.contains("made_up"), "{last}");
        assert!(last.contains("wrote a value out as a constant"), "{last}");
        let again = different_messages(m);
        let again = &again.last().expect("a turn").content;
        assert!(again.ends_with("You already gave that constant twice. Write a cell that computes the answer with the tools, following the hints."), "{again}");
        // Any other rejected cell is shown, to be corrected.
        let other = ErrorInfo::new(
            lackpy_policy::ErrorKind::Validation,
            "UnknownName",
            "name 'x'",
        );
        let m = retry_messages("sys", &[], "t", "x + made_up", &[other], &[]);
        assert!(m
            .last()
            .expect("a turn")
            .content
            .contains("```python\nx + made_up\n```"));
    }

    #[test]
    fn prompt_lists_only_namespace() {
        let tools: Vec<ToolDoc> = ["read_file", "find_files"]
            .iter()
            .filter_map(|n| ToolDoc::builtin(n))
            .collect();
        let c = Corpus::shipped().ok();
        let ex = c
            .as_ref()
            .map(|c| {
                c.retrieve("count lines in a.txt", 6, &|n| {
                    n == "read_file" || n == "find_files"
                })
            })
            .unwrap_or_default();
        let s = system_prompt(&tools);
        assert!(s.contains("read_file(path: str) -> str: Read a file's whole content"));
        assert!(!s.contains("write_file"));
        assert!(s.contains("Jupyter"));
        assert!(s.contains("Answer exactly what the task asks for: one field"));
        for banned in ["import", "Not available", "forbidden", "while", "lambda"] {
            // Examples may use lambda as key=, but the framing never lists prohibitions.
            if banned == "lambda" {
                continue;
            }
            assert!(!s.contains(banned), "{banned} in prompt");
        }
        assert_eq!(ex.len(), 6);
        // The examples are turns: task (user), cell (assistant), in
        // retrieval order, then the task itself.
        let m = first_messages(&s, &ex, "count lines in a.txt");
        assert_eq!(m.len(), 2 + 2 * ex.len());
        assert_eq!(m[0].role, Role::System);
        for (i, e) in ex.iter().enumerate() {
            assert_eq!(m[1 + 2 * i].role, Role::User);
            assert_eq!(m[1 + 2 * i].content, format!("# Task: {}", e.intent.trim()));
            assert_eq!(m[2 + 2 * i].role, Role::Assistant);
            assert_eq!(m[2 + 2 * i].content, e.program.trim_end());
        }
        let last = &m[m.len() - 1];
        assert_eq!(
            (last.role, last.content.as_str()),
            (Role::User, "# Task: count lines in a.txt")
        );
        assert!(!s.contains("# Task:"));
    }

    #[test]
    fn retry_has_previous_errors_hints() {
        let mut e = ErrorInfo::new(
            lackpy_policy::ErrorKind::Validation,
            "ForbiddenName",
            "open is not available",
        );
        e.line = Some(1);
        let h = crate::hints::hints_for(
            "open('a')",
            std::slice::from_ref(&e),
            &["read_file".to_string()],
        );
        let m = retry_messages("SYS", &[], "read a", "open('a')", &[e], &h);
        assert_eq!(m.len(), 2);
        assert!(m[1].content.contains("```python\nopen('a')\n```"));
        assert!(m[1].content.contains("line 1: ForbiddenName"));
        assert!(m[1].content.contains("read_file(path) instead of open()"));
        assert!(!m[1].content.contains("###"));
    }
}
