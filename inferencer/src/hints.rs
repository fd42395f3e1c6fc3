//! Deterministic correction hints for the one retry after a validation
//! failure (no model in the correction loop).
//!
//! Each hint names a failure mode (the kibitzer modes of
//! `profiles-and-toolbox.md`, plus the construct hints of the gambit seed)
//! and says what to do instead, in terms of the active namespace.

use crate::corpus::{called_names, is_builtin, strip_strings};
use lackpy_policy::ErrorInfo;

/// Why a generation failed, as a kibitzer-style failure mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureMode {
    /// Reached for the standard library (`open`, `os`, `pathlib`, `import`).
    StdlibLeak,
    /// Wrote the algorithm (def, class, while, try) instead of calling tools.
    ImplementNotOrchestrate,
    /// Called a name that is not in the namespace, or assumed a result shape.
    KeyHallucination,
    /// Used absolute or prefixed paths instead of workspace-relative ones.
    PathPrefix,
    /// The cell does not end in the value asked for.
    WrongOutput,
    /// A lambda outside `key=`.
    Lambda,
}

impl FailureMode {
    /// The mode's name as kibitzer spells it.
    pub fn name(self) -> &'static str {
        match self {
            FailureMode::StdlibLeak => "stdlib_leak",
            FailureMode::ImplementNotOrchestrate => "implement_not_orchestrate",
            FailureMode::KeyHallucination => "key_hallucination",
            FailureMode::PathPrefix => "path_prefix",
            FailureMode::WrongOutput => "wrong_output",
            FailureMode::Lambda => "lambda",
        }
    }
}

/// One hint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hint {
    /// The failure mode it addresses.
    pub mode: FailureMode,
    /// What to tell the model.
    pub text: String,
}

/// Does `code` (strings blanked) hold `word` as a whole identifier?
pub(crate) fn has_word(code: &str, word: &str) -> bool {
    code.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|w| w == word)
}

/// Hints for a failed `program`, given the validator's `errors` and the
/// tool names of the namespace. Deduplicated, in a fixed order.
pub fn hints_for(program: &str, errors: &[ErrorInfo], tools: &[String]) -> Vec<Hint> {
    let code = strip_strings(program);
    let has_tool = |t: &str| tools.iter().any(|x| x == t);
    let mut out: Vec<Hint> = Vec::new();
    let mut push = |mode, text: String| {
        if !out.iter().any(|h: &Hint| h.text == text) {
            out.push(Hint { mode, text });
        }
    };
    let calls = called_names(program);
    let reads = if has_tool("read_file") {
        "read_file(path)"
    } else {
        "the kernel tools"
    };
    if calls.contains("open") || code.contains("with open") {
        push(
            FailureMode::StdlibLeak,
            format!("Use {reads} instead of open(): it returns the whole file content as a str."),
        );
    }
    if code.lines().any(|l| {
        let t = l.trim_start();
        t.starts_with("import ") || t.starts_with("from ") && t.contains(" import ")
    }) {
        push(FailureMode::StdlibLeak, "The kernel namespace is already loaded: call the tools directly, with no import lines.".into());
    }
    let mut modules_used: Vec<&str> = Vec::new();
    for m in MODULES {
        if code.contains(&format!("{m}.")) && has_word(&code, m) {
            modules_used.push(m);
            let text = if m == "re" {
                "`re` is not in the kernel namespace: match text with str methods and operators instead (`\"x\" in line`, line.startswith(...), line.split(...), line.strip(...), line.replace(...)).".to_string()
            } else {
                let instead = if has_tool("find_files") {
                    "find_files(pattern) to list files and "
                } else {
                    ""
                };
                format!("`{m}` is not in the kernel namespace; use {instead}{reads} to read them.")
            };
            push(FailureMode::StdlibLeak, text);
        }
    }
    if has_word(&code, "def") || has_word(&code, "class") {
        push(FailureMode::ImplementNotOrchestrate, "Write the steps inline in the cell, calling the tools directly; the cell cannot define functions or classes.".into());
    }
    if has_word(&code, "while") {
        push(
            FailureMode::ImplementNotOrchestrate,
            "Use a for loop over a list or over range(n) instead of while.".into(),
        );
    }
    if has_word(&code, "try") || has_word(&code, "except") || has_word(&code, "raise") {
        push(FailureMode::ImplementNotOrchestrate, "Call the tools directly without try/except: a failing tool call ends the cell and reports its error.".into());
    }
    if has_word(&code, "lambda") && errors.iter().any(|e| mentions(e, "lambda")) {
        push(FailureMode::Lambda, "Use sort_by(items, \"field\") to sort dicts by a field, or sorted(items, key=len); a lambda is only allowed as key=.".into());
    }
    // Names the validator did not know: hallucinated tools or variables.
    for e in errors {
        if let Some(name) = unknown_name(e) {
            if calls.contains(&name) && matches!(name.as_str(), "next" | "filter" | "map") {
                // Python's iterator helpers: a comprehension does each.
                push(FailureMode::KeyHallucination, format!("Write a list comprehension instead of {name}(): [f(x) for x in items if cond], and [x for x in items if cond][0] for the first match."));
            } else if calls.contains(&name) && !is_builtin(&name) {
                let close = tools
                    .iter()
                    .filter(|t| similar(t, &name))
                    .cloned()
                    .collect::<Vec<_>>();
                let text = if let Some(t) = close.first() {
                    format!("`{name}` is not in the kernel namespace; did you mean {t}()?")
                } else {
                    format!(
                        "`{name}` is not in the kernel namespace; the tools are: {}.",
                        tools.join(", ")
                    )
                };
                push(FailureMode::KeyHallucination, text);
            } else if name != "open" && !modules_used.contains(&name.as_str()) {
                // A module's name gets the module's hint above, not the
                // advice to assign it.
                push(FailureMode::KeyHallucination, never_assigned(&name));
            }
        }
    }
    let mentions = |needles: &[&str]| needles.iter().any(|n| program.contains(n));
    if has_tool("find_files")
        && mentions(&[
            "[\"path\"]",
            "['path']",
            "[\"name\"]",
            "['file']",
            "[\"file\"]",
        ])
    {
        push(FailureMode::KeyHallucination, "find_files(pattern) returns a list of path strings (list[str]); use each string as the path.".into());
    }
    if mentions(&["\"/", "'/", "\"~", "'~", "\"./", "'./"]) {
        push(FailureMode::PathPrefix, "Paths are relative to the workspace root: write \"notes/todo.txt\", not \"/notes/todo.txt\" or \"./notes/todo.txt\".".into());
    }
    if let Some(last) = code
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
    {
        let t = last.trim_start();
        let indented = last.len() != t.len();
        if indented || t.starts_with("print(") || (t.contains(" = ") && !t.contains("==")) {
            push(FailureMode::WrongOutput, "End the cell with a line holding just the expression whose value is the answer (for example `result`).".into());
        }
    }
    for e in errors {
        if e.type_name == "EmptyResult" {
            push(FailureMode::WrongOutput, "Check every path, glob pattern, column index and spelling against the workspace shown above: the exact file names, and the words and case the files use (a log's level words, a table's values). If nothing is really the answer, give the same cell again.".into());
        }
        if e.type_name == "NoToolCall" {
            let example = tools
                .first()
                .map_or(String::new(), |t| format!(" (for example {t}(...))"));
            push(FailureMode::WrongOutput, format!("{COMPUTE_WITH_TOOLS}{example} and end with an expression over their results; do not write the answer out as a constant."));
        }
        let msg = e.message.to_lowercase();
        // A file path given to find_callers, which takes a function or
        // class name: find_definitions takes a file; the rest of what a
        // file holds is in its text.
        if e.type_name == "BadArgument"
            && msg.contains("must be a python name")
            && (msg.contains('/') || msg.contains(".py"))
            && has_tool("read_file")
        {
            push(FailureMode::KeyHallucination, "find_callers takes a function or class name (\"load\", \"Config.load\"), not a file. find_definitions(path) lists what one file defines ({file, line, kind, name, signature}); for the rest, read it: its import lines are the lines of read_file(path) that start with \"import \" or \"from \".".into());
        }
        // A list of paths used as a file's text: find_files finds, it
        // does not read.
        if msg.contains("'list' object has no attribute")
            && code.contains("find_files(")
            && has_tool("read_file")
        {
            push(FailureMode::KeyHallucination, "find_files(pattern) returns a list of path strings, not a file's text: read a file with read_file(path), and a known path needs no find_files.".into());
        }
        // The first definition of a name that has none: a config file's
        // setting, or a name spelt another way.
        if msg.contains("index out of range")
            && (code.contains("find_definitions(") || code.contains("find_callers("))
            && has_tool("read_file")
        {
            push(FailureMode::KeyHallucination, "find_definitions and find_callers found nothing for that name: they index Python functions and classes only. A setting in a .ini, .cfg, .toml or other text file is in its text: read_file(path) and look through its lines.".into());
        }
        // A split line indexed by a column name, or the header row parsed
        // as data: the two ways a table program fails at run time.
        if msg.contains("indices must be integers") && code.contains(".split(") {
            push(FailureMode::KeyHallucination, "A line split with .split(sep) is a list of strings: index it by the column's number (line 0 of the table names the columns), not by its name.".into());
        }
        // Split rows unpacked into fewer (or more) names than they have
        // fields: `for order_id, status in rows` over a six-column table.
        if (msg.contains("too many values to unpack")
            || msg.contains("not enough values to unpack"))
            && code.contains(".split(")
        {
            push(FailureMode::KeyHallucination, "A split line has one item per column of the table, every column: do not unpack it into a few names; take each row whole and index the columns you need (`[r[0] for r in rows if r[5] == \"x\"]`, with the column numbers shown above).".into());
        }
        // A str indexed where a list of fields was meant: `line[4]`, or a
        // find_files path's `p[3]`, is one character, which then fails to
        // convert. Otherwise a failed conversion is the header row's.
        if let Some(ch) = one_char_conversion(&e.message) {
            if code.contains("find_files(") && !code.contains("read_file(") {
                push(FailureMode::KeyHallucination, "find_files(pattern) returns paths, not a file's lines: a table's data lines are read_file(path).splitlines()[1:], each split into its fields with .split(sep).".into());
            } else if !code.contains(".split(") {
                push(FailureMode::KeyHallucination, format!("A line is a str, so line[i] is one character ({ch}): split the line into its fields first, line.split(sep)[i]."));
            }
        } else if msg.contains("invalid literal for int()")
            || msg.contains("could not convert string to float")
        {
            push(
                FailureMode::KeyHallucination,
                "Line 0 of a table is its header, not data: convert the fields of lines[1:] only."
                    .into(),
            );
        }
        if let Some(h) = &e.hint {
            push(FailureMode::KeyHallucination, h.clone());
        }
    }
    out
}

/// Modules a model reaches for, whose use gets a hint naming what the
/// kernel has instead.
const MODULES: [&str; 9] = [
    "os",
    "pathlib",
    "glob",
    "subprocess",
    "sys",
    "shutil",
    "json",
    "re",
    "io",
];

/// The literal of a failed `int()`/`float()` conversion when it is a
/// single character (`'a'`, `','`): the sign of a str indexed by position.
fn one_char_conversion(message: &str) -> Option<&str> {
    if !(message.starts_with("invalid literal for int()")
        || message.starts_with("could not convert string to float"))
    {
        return None;
    }
    let (_, lit) = message.rsplit_once(": ")?;
    let inner = lit
        .strip_prefix('\'')
        .and_then(|l| l.strip_suffix('\''))
        .or_else(|| lit.strip_prefix('"').and_then(|l| l.strip_suffix('"')))?;
    (inner.chars().count() == 1 || inner == "\\'").then_some(lit)
}

/// The hint for a name used but never assigned (and not a tool).
fn never_assigned(name: &str) -> String {
    format!("`{name}` is used but never assigned; assign it before using it, or use a tool result.")
}

/// For an unknown name that is a part of a path the task spells out
/// (`config` for `config/shop.ini`, `shop` or `setup` for a file's stem):
/// the model took the file for a loaded variable. Replaces the generic
/// "never assigned" hint for that name in `hints`.
pub fn unknown_name_is_a_file(errors: &[ErrorInfo], spelled: &[&str], hints: &mut Vec<Hint>) {
    for e in errors {
        let Some(name) = unknown_name(e) else {
            continue;
        };
        let Some(path) = spelled.iter().find(|p| {
            p.split('/')
                .any(|part| part == name || part.split('.').next().is_some_and(|stem| stem == name))
        }) else {
            continue;
        };
        let generic = never_assigned(&name);
        hints.retain(|h| h.text != generic);
        let text = if crate::context::is_config_file(path) {
            // The line that builds the dictionary the cell used: told only
            // to read the file, the model kept writing `config["open_hour"]`.
            format!("`{name}` is not a variable: the cell starts with nothing but the tools. Build it from the file first, then index it: {name} = {{l.split(\"=\", 1)[0].strip(): l.split(\"=\", 1)[1].strip() for l in read_file(\"{path}\").splitlines() if \"=\" in l}}")
        } else {
            format!("`{name}` is not a variable: the cell starts with nothing but the tools. {path} is a file: read it with read_file(\"{path}\") and take what the task asks from its lines (a \"key = value\" line splits at \"=\").")
        };
        if !hints.iter().any(|h| h.text == text) {
            hints.push(Hint {
                mode: FailureMode::KeyHallucination,
                text,
            });
        }
    }
}

/// How the generic hint for a cell rejected as a constant begins (replaced
/// by [`constant_is_a_tool_result`]'s when it has one).
const COMPUTE_WITH_TOOLS: &str = "Compute the answer by calling the tools";

/// For a cell rejected as a constant (`NoToolCall`) that spells out a
/// code-intelligence tool's result, dictionaries with its keys (seen:
/// `[{"file": "scripts/helpers.py", "line": 1, "kind": "function", "name":
/// …, "signature": …}]` three times for "what is defined in
/// scripts/helpers.py", the generic hint notwithstanding): name the call
/// that returns it, with the Python file the task spells out. Replaces the
/// generic "call the tools" hint.
pub fn constant_is_a_tool_result(
    errors: &[ErrorInfo],
    program: &str,
    spelled: &[&str],
    tools: &[String],
    hints: &mut Vec<Hint>,
) {
    if !errors.iter().any(|e| e.type_name == "NoToolCall") {
        return;
    }
    let key =
        |k: &str| program.contains(&format!("\"{k}\":")) || program.contains(&format!("'{k}':"));
    let has_tool = |t: &str| tools.iter().any(|x| x == t);
    let text = if key("kind") && key("signature") && has_tool("find_definitions") {
        let arg = spelled
            .iter()
            .find(|p| p.ends_with(".py"))
            .map_or("path".to_string(), |p| format!("\"{p}\""));
        format!("That list is what find_definitions({arg}) returns: call it instead of writing its result, e.g. [d[\"name\"] for d in find_definitions({arg})] for the names it defines.")
    } else if key("caller") && has_tool("find_callers") {
        "That list is what find_callers(name) returns: call it with the function's name instead of writing its result, e.g. [c[\"caller\"] for c in find_callers(\"name\")].".to_string()
    } else {
        return;
    };
    hints.retain(|h| !h.text.starts_with(COMPUTE_WITH_TOOLS));
    hints.push(Hint {
        mode: FailureMode::KeyHallucination,
        text,
    });
}

fn mentions(e: &ErrorInfo, word: &str) -> bool {
    e.message.to_lowercase().contains(word) || e.type_name.to_lowercase().contains(word)
}

/// The name an "unknown name" validation error is about, if it is one.
///
/// Only errors about names count (`UnknownName`, `ForbiddenName`,
/// `NameError`): a forbidden construct (`import`, `try`), a method or an
/// argument error also quotes a word, which is not an unassigned name.
fn unknown_name(e: &ErrorInfo) -> Option<String> {
    if !matches!(
        e.type_name.as_str(),
        "UnknownName" | "ForbiddenName" | "NameError"
    ) {
        return None;
    }
    let m = &e.message;
    let lower = m.to_lowercase();
    if !(lower.contains("unknown")
        || lower.contains("not defined")
        || lower.contains("not available")
        || lower.contains("forbidden")
        || lower.contains("never assigned")
        || lower.contains("not a tool")
        || lower.contains("not allowed"))
    {
        return None;
    }
    // The first quoted identifier in the message.
    for q in ['\'', '`', '"'] {
        let mut parts = m.split(q);
        parts.next();
        if let Some(inner) = parts.next() {
            let inner = inner.trim_end_matches("()");
            if !inner.is_empty() && inner.chars().all(|c| c.is_alphanumeric() || c == '_') {
                return Some(inner.to_string());
            }
        }
    }
    None
}

/// Loose similarity: shared prefix of 4, or one contains the other, or a
/// small edit distance.
fn similar(a: &str, b: &str) -> bool {
    let (a, b) = (a.to_lowercase(), b.to_lowercase());
    if a.len() >= 4 && b.len() >= 4 && a[..4] == b[..4] {
        return true;
    }
    if a.contains(&b) || b.contains(&a) {
        return true;
    }
    let key = |s: &str| s.replace(['_', 's'], "");
    key(&a) == key(&b) || edit_distance(&a, &b) <= 2
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().take(64).collect();
    let b: Vec<char> = b.chars().take(64).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Render validation errors for the retry prompt: one line each, with the
/// line number when known.
pub fn render_errors(errors: &[ErrorInfo]) -> String {
    errors
        .iter()
        .take(5)
        .map(|e| match e.line {
            Some(l) => format!("- line {l}: {}: {}", e.type_name, e.message),
            None => format!("- {}: {}", e.type_name, e.message),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use lackpy_policy::ErrorKind;

    fn err(msg: &str) -> ErrorInfo {
        ErrorInfo::new(ErrorKind::Validation, "UnknownName", msg)
    }

    fn tools() -> Vec<String> {
        vec!["read_file".into(), "find_files".into()]
    }

    fn modes(p: &str, e: &[ErrorInfo]) -> Vec<&'static str> {
        hints_for(p, e, &tools())
            .into_iter()
            .map(|h| h.mode.name())
            .collect()
    }

    #[test]
    fn stdlib_leak() {
        let h = hints_for(
            "import os\nwith open('a.txt') as f:\n    f.read()",
            &[],
            &tools(),
        );
        assert!(
            h.iter()
                .any(|h| h.text.contains("read_file(path) instead of open()")),
            "{h:?}"
        );
        assert!(h.iter().any(|h| h.text.contains("no import")), "{h:?}");
        assert!(modes("os.listdir('.')", &[]).contains(&"stdlib_leak"));
        // Words inside strings do not count.
        assert!(modes("read_file('import os')", &[]).is_empty());
    }

    #[test]
    fn implement_not_orchestrate() {
        assert!(modes("def f(x):\n    return x\nf(1)", &[]).contains(&"implement_not_orchestrate"));
        assert!(
            modes("i = 0\nwhile i < 3:\n    i += 1\ni", &[]).contains(&"implement_not_orchestrate")
        );
        assert!(modes("try:\n    x = 1\nexcept E:\n    pass\nx", &[])
            .contains(&"implement_not_orchestrate"));
    }

    #[test]
    fn hallucinated_tool_gets_nearest() {
        let h = hints_for("read('a.txt')", &[err("unknown name 'read'")], &tools());
        assert!(
            h.iter()
                .any(|h| h.text.contains("did you mean read_file()")),
            "{h:?}"
        );
        let h = hints_for(
            "read('a')",
            &[err(
                "'read' is not a tool of the active profile or an allowed builtin",
            )],
            &tools(),
        );
        assert!(
            h.iter()
                .any(|h| h.text.contains("did you mean read_file()")),
            "{h:?}"
        );
        let h = hints_for("glob_files('*')", &[err("unknown name 'zzz'")], &tools());
        assert!(
            !h.iter()
                .any(|h| h.text.contains("zzz") && h.text.contains("did you mean")),
            "{h:?}"
        );
    }

    #[test]
    fn path_prefix_and_output_and_keys() {
        assert!(modes("read_file('/etc/passwd')", &[]).contains(&"path_prefix"));
        assert!(modes("x = read_file('a')", &[]).contains(&"wrong_output"));
        assert!(modes("print(read_file('a'))", &[]).contains(&"wrong_output"));
        assert!(modes("[f['path'] for f in find_files('*')]", &[]).contains(&"key_hallucination"));
        assert!(modes(
            "sorted(x, key=lambda a: a)",
            &[err("lambda is only allowed as key=")]
        )
        .contains(&"lambda"));
    }

    #[test]
    fn render() {
        let mut e = err("bad");
        e.line = Some(3);
        assert_eq!(render_errors(&[e]), "- line 3: UnknownName: bad");
    }

    #[test]
    fn constant_answers_and_table_errors_get_their_hints() {
        let tools = ["find_callers".to_string(), "read_file".to_string()];
        for (kind, type_name, message, program, hint) in [
            (
                ErrorKind::Validation,
                "NoToolCall",
                "the cell calls no tool",
                "[{'file': 'a.py', 'line': 3}]",
                "calling the tools (for example find_callers(...))",
            ),
            (
                ErrorKind::Runtime,
                "TypeError",
                "list indices must be integers or slices, not str",
                "[l.split(',')['qty'] for l in read_file('a.csv').splitlines()]",
                "by the column's number",
            ),
            (
                ErrorKind::Runtime,
                "ValueError",
                "invalid literal for int() with base 10: 'qty'",
                "sum(int(l.split(',')[1]) for l in read_file('a.csv').splitlines())",
                "lines[1:] only",
            ),
        ] {
            let e = ErrorInfo::new(kind, type_name, message);
            let h = hints_for(program, &[e], &tools);
            assert!(
                h.iter().any(|h| h.text.contains(hint)),
                "{type_name}: {h:?}"
            );
        }
        // Neither fires on an unrelated error.
        let e = ErrorInfo::new(ErrorKind::Runtime, "KeyError", "'x'");
        assert!(hints_for("read_file('a')", &[e], &tools).is_empty());
    }

    #[test]
    fn a_file_given_to_a_code_tool_gets_how_to_read_it() {
        let e = ErrorInfo::new(
            ErrorKind::Tool,
            "BadArgument",
            "find_callers() argument 'name' must be a Python name such as 'load' or 'Config.load', not \"src/a.py\"",
        );
        let h = hints_for(
            "find_callers(\"src/a.py\")",
            std::slice::from_ref(&e),
            &tools(),
        );
        assert!(
            h.iter().any(|h| h.text.contains("not a file")
                && h.text.contains("find_definitions(path)")
                && h.text.contains("read_file(path)")),
            "{h:?}"
        );
        // A bad name that is no path: no such hint.
        let mut other = e.clone();
        other.message = "find_callers() argument 'name' must be a Python name such as 'load' or 'Config.load', not \"a b\"".into();
        let h = hints_for("find_callers(\"a b\")", &[other], &tools());
        assert!(!h.iter().any(|h| h.text.contains("not a file")), "{h:?}");
    }

    #[test]
    fn a_module_gets_its_own_hint_not_the_advice_to_assign_it() {
        let e = err("name 're' is not defined: not a tool of the active profile, an allowed builtin, or a variable assigned in the program");
        let h = hints_for(
            "[re.search(\"x\", l) for l in read_file(\"a.md\").splitlines()]",
            std::slice::from_ref(&e),
            &tools(),
        );
        assert!(
            !h.iter().any(|h| h.text.contains("never assigned")),
            "{h:?}"
        );
        assert!(
            h.iter()
                .any(|h| h.text.contains("`re`") && h.text.contains("startswith")),
            "{h:?}"
        );
        // A variable of that name assigned nowhere is still told so.
        let e = err("name 'rows' is not defined");
        let h = hints_for("rows[0]", &[e], &tools());
        assert!(
            h.iter()
                .any(|h| h.text.contains("`rows` is used but never assigned")),
            "{h:?}"
        );
    }

    #[test]
    fn a_file_taken_for_a_variable_gets_how_to_read_it() {
        let e = err("name 'config' is not defined: not a tool of the active profile, an allowed builtin, or a variable assigned in the program");
        let mut h = hints_for("config[\"currency\"]", std::slice::from_ref(&e), &tools());
        assert!(h.iter().any(|h| h.text.contains("never assigned")), "{h:?}");
        unknown_name_is_a_file(std::slice::from_ref(&e), &["config/shop.ini"], &mut h);
        assert!(
            !h.iter().any(|h| h.text.contains("never assigned")),
            "{h:?}"
        );
        assert!(
            h.iter()
                .any(|h| h.text.contains("read_file(\"config/shop.ini\")")),
            "{h:?}"
        );
        // A configuration file: the line that builds the dictionary.
        assert!(
            h.iter().any(|h| h.text.ends_with("then index it: config = {l.split(\"=\", 1)[0].strip(): l.split(\"=\", 1)[1].strip() for l in read_file(\"config/shop.ini\").splitlines() if \"=\" in l}")),
            "{h:?}"
        );
        // The stem counts too; an unrelated name or path does not.
        let e = err("name 'setup' is not defined");
        let mut h = Vec::new();
        unknown_name_is_a_file(std::slice::from_ref(&e), &["setup.cfg"], &mut h);
        assert_eq!(h.len(), 1, "{h:?}");
        let e = err("name 'notes' is not defined");
        let mut h = Vec::new();
        unknown_name_is_a_file(std::slice::from_ref(&e), &["notes.txt"], &mut h);
        assert!(h[0].text.contains("splits at"), "{h:?}");
        let mut h = Vec::new();
        unknown_name_is_a_file(&[e], &["data/orders.csv"], &mut h);
        assert!(h.is_empty(), "{h:?}");
    }

    #[test]
    fn a_constant_shaped_like_a_tool_result_gets_the_call() {
        let e = ErrorInfo::new(
            ErrorKind::Validation,
            "NoToolCall",
            "the cell calls no tool and ends in a constant: the value must come from the tools",
        );
        let cell = r#"[{"file": "scripts/helpers.py", "line": 1, "kind": "function", "name": "get_info", "signature": "(sku) -> dict"}]"#;
        let mut ci = tools();
        ci.push("find_definitions".into());
        ci.push("find_callers".into());
        let mut h = hints_for(cell, std::slice::from_ref(&e), &ci);
        assert!(
            h.iter().any(|h| h.text.starts_with("Compute the answer")),
            "{h:?}"
        );
        constant_is_a_tool_result(
            std::slice::from_ref(&e),
            cell,
            &["scripts/helpers.py"],
            &ci,
            &mut h,
        );
        assert!(
            !h.iter().any(|h| h.text.starts_with("Compute the answer")),
            "{h:?}"
        );
        assert!(
            h.iter().any(|h| h
                .text
                .contains(r#"[d["name"] for d in find_definitions("scripts/helpers.py")]"#)),
            "{h:?}"
        );
        // find_callers' keys name find_callers.
        let cell = r#"[{"file": "a.py", "line": 3, "caller": "main", "text": "load()"}]"#;
        let mut h = Vec::new();
        constant_is_a_tool_result(std::slice::from_ref(&e), cell, &[], &ci, &mut h);
        assert!(h[0].text.contains("find_callers(name)"), "{h:?}");
        // Without the tool, or another shape, or another error: nothing.
        for (cell, tools) in [
            (r#"[{"kind": "function", "signature": "()"}]"#, tools()),
            ("[1, 2, 3]", ci.clone()),
        ] {
            let mut h = Vec::new();
            constant_is_a_tool_result(std::slice::from_ref(&e), cell, &[], &tools, &mut h);
            assert!(h.is_empty(), "{cell}: {h:?}");
        }
        let mut h = Vec::new();
        let other = err("name 'x' is not defined");
        constant_is_a_tool_result(
            &[other],
            r#"[{"kind": 1, "signature": 2}]"#,
            &[],
            &ci,
            &mut h,
        );
        assert!(h.is_empty(), "{h:?}");
    }

    #[test]
    fn split_rows_unpacked_get_how_to_index() {
        let e = ErrorInfo::new(
            ErrorKind::Runtime,
            "ValueError",
            "too many values to unpack (expected 2)",
        );
        let p = "[a for a, b in [l.split(\",\") for l in read_file(\"o.csv\").splitlines()]]";
        let h = hints_for(p, std::slice::from_ref(&e), &tools());
        assert!(
            h.iter().any(|h| h.text.contains("index the columns")),
            "{h:?}"
        );
        // Not for pairs that come from anywhere else.
        let h = hints_for("a, b = find_files(\"*\")", &[e], &tools());
        assert!(
            !h.iter().any(|h| h.text.contains("index the columns")),
            "{h:?}"
        );
    }

    #[test]
    fn a_str_indexed_as_fields_gets_how_to_split() {
        let conv = |m: &str| ErrorInfo::new(ErrorKind::Runtime, "ValueError", m);
        let e = conv("could not convert string to float: ','");
        let h = hints_for(
            "max(read_file(\"o.csv\").splitlines()[1:], key=lambda r: float(r[4]))",
            std::slice::from_ref(&e),
            &tools(),
        );
        assert!(
            h.iter()
                .any(|h| h.text.contains("one character (',')")
                    && h.text.contains("line.split(sep)[i]")),
            "{h:?}"
        );
        assert!(!h.iter().any(|h| h.text.contains("header")), "{h:?}");
        // A path from find_files indexed as a row.
        let e = conv("invalid literal for int() with base 10: 'a'");
        let h = hints_for(
            "sorted(find_files(\"p.csv\"), key=lambda r: int(r[3]))",
            std::slice::from_ref(&e),
            &tools(),
        );
        assert!(
            h.iter()
                .any(|h| h.text.contains("returns paths, not a file's lines")),
            "{h:?}"
        );
        // A header field: the header hint, not these.
        let e = conv("invalid literal for int() with base 10: 'stock'");
        let h = hints_for(
            "[int(l.split(\",\")[3]) for l in read_file(\"p.csv\").splitlines()]",
            std::slice::from_ref(&e),
            &tools(),
        );
        assert!(h.iter().any(|h| h.text.contains("header")), "{h:?}");
        assert!(!h.iter().any(|h| h.text.contains("one character")), "{h:?}");
        // Already split, one-character field: no split hint.
        let e = conv("invalid literal for int() with base 10: 'x'");
        let h = hints_for(
            "[int(l.split(\",\")[3]) for l in read_file(\"p.csv\").splitlines()]",
            std::slice::from_ref(&e),
            &tools(),
        );
        assert!(!h.iter().any(|h| h.text.contains("one character")), "{h:?}");
        assert_eq!(
            one_char_conversion("could not convert string to float: ''"),
            None
        );
        assert_eq!(one_char_conversion("other: 'a'"), None);
    }

    #[test]
    fn a_tool_result_misused_as_text_gets_how_to_read() {
        let e = ErrorInfo::new(
            ErrorKind::Runtime,
            "AttributeError",
            "'list' object has no attribute 'splitlines'",
        );
        let h = hints_for(
            "find_files(\"setup.cfg\").splitlines()",
            std::slice::from_ref(&e),
            &tools(),
        );
        assert!(
            h.iter().any(|h| h.text.contains("not a file's text")),
            "{h:?}"
        );
        let e = ErrorInfo::new(ErrorKind::Runtime, "IndexError", "list index out of range");
        let h = hints_for(
            "c = find_definitions(\"shop\")[0]\nc",
            std::slice::from_ref(&e),
            &tools(),
        );
        assert!(h.iter().any(|h| h.text.contains("a .ini, .cfg")), "{h:?}");
        // The same error in a cell using neither tool: no such hints.
        let h = hints_for("read_file(\"a\").splitlines()[9]", &[e], &tools());
        assert!(!h.iter().any(|h| h.text.contains("a .ini, .cfg")), "{h:?}");
    }

    #[test]
    fn forbidden_constructs_are_not_unknown_names() {
        for (p, msg) in [
            ("import os\nos.listdir('.')", "`import` is not allowed"),
            (
                "try:\n    x = 1\nexcept E:\n    x = 2\nx",
                "'try' is not allowed",
            ),
            ("'a'.foo()", "str method 'foo' is not allowed"),
        ] {
            let e = ErrorInfo::new(ErrorKind::Validation, "ForbiddenSyntax", msg);
            let h = hints_for(p, &[e], &tools());
            assert!(
                !h.iter().any(|h| h.text.contains("never assigned")),
                "{p}: {h:?}"
            );
        }
        // Python's iterator helpers get the comprehension that does it.
        let e = ErrorInfo::new(
            ErrorKind::Validation,
            "ForbiddenName",
            "'next' is not available",
        );
        let h = hints_for("next(x for x in xs if x)", &[e], &tools());
        assert!(
            h.iter().any(|h| h.text.contains("instead of next()")
                && h.text.contains("[x for x in items if cond][0]")),
            "{h:?}"
        );
        assert!(
            !h.iter()
                .any(|h| h.text.contains("not in the kernel namespace")),
            "{h:?}"
        );
        let h = hints_for("x + 1", &[err("name 'x' is not defined")], &tools());
        assert!(
            h.iter()
                .any(|h| h.text.contains("`x` is used but never assigned")),
            "{h:?}"
        );
    }
}
