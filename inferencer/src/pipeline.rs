//! The cascade: providers in `[inference] order`, each tried until one
//! yields a program that validates.
//!
//! Templates and rules cost nothing. A model provider gets one attempt with
//! the retrieved-example prompt and, when the answer does not validate, one
//! correction retry (previous answer + errors with lines + deterministic
//! hints); then the next provider. Every attempt is recorded with its raw
//! answer, cleaned program and error, for `delegate --json`'s `attempts`.
//!
//! The model call goes through [`ModelCaller`], so the same pipeline runs
//! with the jailed inferencer worker, in-process HTTP, or a test double.

use crate::clean::clean_answer;
use crate::config::{InferenceConfig, Plugin, ProviderConfig, ProviderEndpoint};
use crate::corpus::Corpus;
use crate::hints::hints_for;
use crate::http::{Generation, InferError, Request};
use crate::prompt::{
    different_messages, first_messages, retry_messages, system_prompt_with, ToolDoc,
};
use crate::templates::{rules, TemplateSet};
use lackpy_policy::{first_error, ErrorInfo, ErrorKind};
use serde::Serialize;

/// Longest intent accepted, in bytes. Why: an intent is a sentence; anything
/// larger is not one, and it would be copied into every prompt.
pub const MAX_INTENT_BYTES: usize = 8 * 1024;

/// Largest model answer considered, in bytes. Why: a lackpy cell is a few
/// lines (programs are capped at 64 KiB by default); an answer this large is
/// garbage, and it would be parsed and echoed in `attempts`.
pub const MAX_ANSWER_BYTES: usize = 256 * 1024;

/// How much of a raw answer `attempts` keeps, in bytes.
pub const MAX_RAW_ECHO_BYTES: usize = 16 * 1024;

/// At most `n` bytes of `s`, cut at a char boundary, marked when cut.
fn echo(s: &str, n: usize) -> String {
    if s.len() <= n {
        return s.to_string();
    }
    let end = s.floor_char_boundary(n);
    format!("{}… [{} more bytes]", &s[..end], s.len() - end)
}

/// Makes one model call. Implemented by the jailed worker client, by
/// [`InProcess`], and by test doubles.
pub trait ModelCaller {
    /// Send `req` and return the model's raw text.
    ///
    /// # Errors
    /// [`InferError`] when no text came back.
    fn call(&mut self, req: &Request) -> Result<Generation, InferError>;
}

/// Calls the model from this process ([`crate::http::generate`]).
#[derive(Debug, Default)]
pub struct InProcess;

impl ModelCaller for InProcess {
    fn call(&mut self, req: &Request) -> Result<Generation, InferError> {
        crate::http::generate(req)
    }
}

/// One provider attempt, as `delegate --json` reports it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Attempt {
    /// Provider name (from `order`).
    pub provider: String,
    /// The model's raw answer (or the template/rule name's program).
    pub raw: Option<String>,
    /// The cleaned program.
    pub program: Option<String>,
    /// Why it was not used (validation error, or the provider's failure).
    pub error: Option<ErrorInfo>,
    /// Wall time of the attempt, ms.
    pub duration_ms: u64,
    /// Prompt tokens the endpoint reported for this call, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// From a template or rule (whose misfit does not decide the final error).
    #[serde(skip)]
    pub zero_cost: bool,
}

impl Attempt {
    /// The error's type name (`ForbiddenName`, `InferenceFailed`, ...), if it failed.
    pub fn error_type(&self) -> Option<&str> {
        self.error.as_ref().map(|e| e.type_name.as_str())
    }
}

/// What the caller's run check says about a program that validated.
#[derive(Debug, Clone, PartialEq)]
pub enum RunCheck {
    /// Use it: it ran ok, or it has effects and is run once by the caller
    /// (never re-run automatically).
    Accept,
    /// It ran (it has no effects) and failed: record the error and let the
    /// cascade go on.
    Failed(ErrorInfo),
    /// It ran ok (it has no effects) but its value is empty: `None`, `[]`,
    /// `{}`, `""` or `0`, shown as this text. Often a path, pattern or
    /// spelling that matched nothing: a model provider whose prompt has
    /// the workspace view is asked once more, with that fact; the cell is
    /// kept when the answer is no better.
    Empty(String),
    /// It ran ok (it has no effects) with a value of this shape: checked
    /// against what the task asks for ([`shape_mismatch`]).
    Value(ValueShape),
}

/// The shape of a value a program computed: its type and a few facts
/// about its items ([`ListShape`]), a dict's values or a str's edges. No
/// content: this much goes back to the model, with the workspace view on
/// only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueShape {
    /// An int or a float.
    Number,
    /// A str.
    Str {
        /// It is one line that starts or ends with whitespace (`line[1:]`
        /// of `"# Title"`).
        padded: bool,
    },
    /// A bool.
    Bool,
    /// A list (or tuple).
    List(ListShape),
    /// A dict.
    Dict {
        /// Every value is a bool, and there is one at least.
        all_bool: bool,
    },
    /// Anything else.
    Other,
}

/// A list's length and what all its items are (each flag false for an
/// empty list).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListShape {
    /// Number of items.
    pub len: usize,
    /// Every item is a dict with a `"file"` key (what `find_definitions`
    /// and `find_callers` return).
    pub records_with_file: bool,
    /// Every item is a list (or tuple) of two items: `sorted(d.items())`.
    pub pairs: bool,
    /// Every item is a str of several lines: files' texts.
    pub texts: bool,
    /// Every item is a str holding a number (`"14"`, `"2.50"`; not
    /// `"0.3.0"`): a CSV field unconverted.
    pub numbers_as_text: bool,
    /// Every item is a list of two or more strs: a line split into its
    /// fields or words, kept whole.
    pub split_rows: bool,
    /// Every item is one line of a table, unsplit: it holds a tab, or two
    /// commas or more with no space after any (`"hinge,1.75,40"`; not
    /// prose such as `"red, green, blue"`).
    pub table_lines: bool,
}

/// The lower-cased alphanumeric words of a task, in order.
fn intent_words(intent: &str) -> Vec<String> {
    intent
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The words of a task asking for a count (`how many`, `number of`,
/// `count ...`), unless it asks for one per group (`per`, `each`, `every`,
/// `by`), which is a dict.
fn asks_for_count(intent: &str) -> bool {
    let words = intent_words(intent);
    let has = |w: &str| words.iter().any(|x| x == w);
    let pair = |a: &str, b: &str| words.windows(2).any(|p| p[0] == a && p[1] == b);
    let count =
        pair("how", "many") || pair("number", "of") || words.first().is_some_and(|w| w == "count");
    count && !["per", "each", "every", "by", "map"].iter().any(|w| has(w))
}

/// A task asking for files or modules ("the files that call load",
/// "which module defines Item").
fn asks_for_files(intent: &str) -> bool {
    let words = intent_words(intent);
    let has = |w: &str| words.iter().any(|x| x == w);
    has("files")
        || has("modules")
        || ((has("which") || has("what")) && (has("file") || has("module")))
}

/// A task asking for one value per group ("count the orders per status",
/// "map each file to its size"): a dict.
fn asks_for_mapping(intent: &str) -> bool {
    let words = intent_words(intent);
    words.iter().any(|w| w == "per") || words.first().is_some_and(|w| w == "map")
}

/// A task asking for split lines themselves: rows, records, fields,
/// columns, words, pairs, tuples, or a split.
fn asks_for_parts(intent: &str) -> bool {
    const PARTS: &[&str] = &[
        "row", "rows", "record", "records", "field", "fields", "column", "columns", "word",
        "words", "pair", "pairs", "tuple", "tuples", "split", "table",
    ];
    intent_words(intent)
        .iter()
        .any(|w| PARTS.contains(&w.as_str()))
}

/// A task asking for lines themselves ("the lines of data/orders.csv
/// with status shipped", "the error lines").
fn asks_for_lines(intent: &str) -> bool {
    intent_words(intent)
        .iter()
        .any(|w| w == "line" || w == "lines")
}

/// A task asking which items qualify ("which documents mention refunds",
/// "list the files that ..."): the items, not a verdict for each.
fn asks_which(intent: &str) -> bool {
    let words = intent_words(intent);
    words.iter().any(|w| w == "which") || words.first().is_some_and(|w| w == "list")
}

/// A task asking for one thing: it starts with "the", the head of its
/// noun phrase (the last word before "of", "in", "with", ...) is not a
/// plural, and it has no word asking for several ("all", "list", "each",
/// "which", ...). "the customer of order 1006", "the version in setup.cfg";
/// not "the stock items with fewer than 100 units".
fn asks_for_one(intent: &str) -> bool {
    const STOPS: &[&str] = &[
        "of", "in", "with", "that", "where", "from", "for", "by", "at", "on", "to", "which", "who",
        "whose", "without", "as", "and", "is", "are", "was", "does", "do",
    ];
    const SEVERAL: &[&str] = &[
        "all", "every", "each", "list", "per", "both", "which", "many", "lines", "files", "names",
    ];
    let lower = intent.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    if words.first() != Some(&"the") || words.iter().any(|w| SEVERAL.contains(w)) {
        return false;
    }
    // The phrase ends at a preposition or, after its first word, at a
    // participle ("the changes listed for ...", but "the pinned requirement").
    let mut phrase: Vec<&str> = Vec::new();
    for w in &words[1..] {
        if STOPS.contains(w) || (!phrase.is_empty() && w.ends_with("ed")) {
            break;
        }
        phrase.push(w);
    }
    phrase
        .last()
        .is_some_and(|head| !head.ends_with('s') && head.chars().all(char::is_alphabetic))
}

/// The cell's last line, when it is a one-line expression (no
/// assignment, block or comment): what a fix can wrap.
fn last_expression(program: &str) -> Option<&str> {
    let last = program
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())?
        .trim_end();
    let simple = !last.starts_with(char::is_whitespace)
        && !last.starts_with('#')
        && !last.ends_with(':')
        && last.len() <= 200
        && !crate::corpus::strip_strings(last).contains(" = ");
    simple.then_some(last)
}

/// What is wrong with a value of `shape` as the answer to `intent`, when
/// something clearly is: a list where a count is asked for, whole records
/// where files are, a list of one item where one thing is. The error goes
/// back to the model once (like an empty value), with the fix written on
/// the cell's last expression when it has one; the cell stands when the
/// next answer is no better.
pub fn shape_mismatch(intent: &str, program: &str, shape: &ValueShape) -> Option<ErrorInfo> {
    let last = last_expression(program);
    let on_last = |wrap: &dyn Fn(&str) -> String, generic: &str| match last {
        Some(e) => format!("End the cell with {}", wrap(e)),
        None => generic.to_string(),
    };
    let (ty, message, hint) = match shape {
        ValueShape::List(ListShape { len, .. }) if asks_for_count(intent) => (
            "CountExpected",
            format!("the task asks for a count, but the cell's value is a list of {len} items"),
            on_last(
                &|e| format!("len({e})."),
                "End the cell with the number: len(...) of the list of matching items.",
            ),
        ),
        ValueShape::Dict { .. } if asks_for_count(intent) => (
            "CountExpected",
            "the task asks for a count, but the cell's value is a dict".to_string(),
            "End the cell with one number: len(...) of the matching items.".to_string(),
        ),
        ValueShape::List(ListShape {
            records_with_file: true,
            ..
        }) if asks_for_files(intent) => (
            "FilesExpected",
            "the task asks for files, but the cell's value is a list of whole records (dicts with a \"file\" field)".to_string(),
            on_last(
                &|e| format!("sorted(set(d[\"file\"] for d in {e})), or {e}[0][\"file\"] when the task asks for one file."),
                "Answer with the file paths: sorted(set(d[\"file\"] for d in records)), or records[0][\"file\"] when the task asks for one file.",
            ),
        ),
        ValueShape::List(ListShape { texts: true, .. }) if asks_for_files(intent) => (
            "FilesExpected",
            "the task asks for files, but the cell's value is a list of files' texts".to_string(),
            "Answer with the paths of the matching files: [p for p in find_files(pattern) if condition on read_file(p)].".to_string(),
        ),
        ValueShape::List(ListShape { pairs: true, .. }) if asks_for_mapping(intent) => (
            "DictExpected",
            "the task asks for one value per group (a dict), but the cell's value is a list of pairs".to_string(),
            on_last(
                &|e| format!("dict({e}) (a dict keeps its keys' order; no sorting is needed)."),
                "End the cell with the dict itself (not sorted(d.items()) or a list of pairs).",
            ),
        ),
        ValueShape::List(ListShape {
            split_rows: true, ..
        }) if !asks_for_parts(intent) => (
            "FieldExpected",
            "each item of the cell's value is a whole split line (a list of its fields or words), not the value the task asks for".to_string(),
            on_last(
                &|e| format!("the part the task asks for from each split line r: [r[i] for r in {e}] for one field (a name, a price), or [\" \".join(r[i:]) for r in {e}] for the text after the first i words."),
                "Answer with the part the task asks for from each split line r: r[i] for one field (a name, a price), or \" \".join(r[i:]) for the text after the first i words.",
            ),
        ),
        ValueShape::List(ListShape {
            table_lines: true, ..
        }) if !asks_for_parts(intent) && !asks_for_lines(intent) => (
            "FieldExpected",
            "each item of the cell's value is a whole line of a table (its fields still joined by commas or tabs), not the value the task asks for".to_string(),
            on_last(
                &|e| format!("the field the task asks for from each line l: [l.split(sep)[i] for l in {e}], with the table's separator (\",\" or \"\\t\") and the column i its header line names."),
                "Answer with the field the task asks for from each line l: l.split(sep)[i], with the table's separator (\",\" or \"\\t\") and the column i its header line names.",
            ),
        ),
        ValueShape::Dict { all_bool: true } if asks_which(intent) => (
            "ItemsExpected",
            "the task asks which items qualify, but the cell's value is a dict of True/False for every item".to_string(),
            on_last(
                &|e| format!("[k for k, v in {e}.items() if v] (the items themselves), or better, a list comprehension with an if."),
                "End the cell with the list of the items that qualify: [x for x in items if condition].",
            ),
        ),
        ValueShape::Str { padded: true } => (
            "PaddedText",
            "the cell's value starts or ends with whitespace".to_string(),
            on_last(
                &|e| format!("{e}.strip()."),
                "End the cell with the text without its surrounding spaces: .strip() it.",
            ),
        ),
        ValueShape::List(ListShape {
            len: 1,
            numbers_as_text,
            ..
        }) if asks_for_one(intent) => {
            let convert = if *numbers_as_text {
                ", converted with int() or float(): the item is a number written as text"
            } else {
                ""
            };
            (
                "OneExpected",
                "the task asks for one value, but the cell's value is a list holding one item"
                    .to_string(),
                on_last(
                    &|e| format!("{e}[0] (the item itself, not a list){convert}."),
                    &format!("End the cell with the item itself, not a list of it (its [0]){convert}."),
                ),
            )
        }
        _ => return None,
    };
    let mut e = ErrorInfo::new(ErrorKind::Runtime, ty, message);
    e.hint = Some(hint);
    Some(e)
}

/// A task asking how many characters a text has, answered by counting
/// its lines or words, or measuring one line ("the number of characters
/// in setup.cfg" → `len(read_file("setup.cfg").splitlines())`). Not when
/// the task is about lines or words itself ("characters in the longest
/// line"). Sent back once, like a shape mismatch.
fn characters_as_lines(intent: &str, program: &str) -> Option<ErrorInfo> {
    let words = intent_words(intent);
    let has = |w: &str| words.iter().any(|x| x == w);
    let about_parts = [
        "line", "lines", "word", "words", "longest", "shortest", "each", "per",
    ]
    .iter()
    .any(|w| has(w));
    if !(has("characters") || has("chars")) || about_parts || !asks_for_count(intent) {
        return None;
    }
    let code = crate::corpus::strip_strings(program);
    if !(code.contains(".splitlines(") || code.contains(".split(")) {
        return None;
    }
    let mut e = ErrorInfo::new(
        ErrorKind::Runtime,
        "CharactersExpected",
        "the task asks for a number of characters, but the cell splits the text into lines or words and counts those",
    );
    e.hint = Some("len(text) is the number of characters of a str, newlines included: len(read_file(path)) for a whole file.".into());
    Some(e)
}

/// A task about the rows of a table answered by counting every line of a
/// `.csv`/`.tsv` file (`len(read_file(p).splitlines())`): line 0 is the
/// header, not a row, so the count is one too many. Not when the count
/// takes the header off (`[1:]` inside, `- 1` after). Sent back once,
/// like a shape mismatch.
fn header_counted(intent: &str, program: &str) -> Option<ErrorInfo> {
    let words = intent_words(intent);
    if !words
        .iter()
        .any(|w| matches!(w.as_str(), "row" | "rows" | "record" | "records"))
    {
        return None;
    }
    // Each count scans back for its `(`: quadratic, so bounded like the
    // other lexical answer checks.
    if program.len() > crate::clean::LINT_BYTES {
        return None;
    }
    let lower = program.to_ascii_lowercase();
    if !(lower.contains(".csv") || lower.contains(".tsv")) {
        return None;
    }
    let code = crate::corpus::strip_strings(program);
    let pat = ".splitlines())";
    let counted = code.match_indices(pat).any(|(i, _)| {
        // The `(` that the `)` after `splitlines()` closes.
        let is_len = crate::clean::unmatched_open(&code[..i]).is_some_and(|k| {
            code[..k].ends_with("len")
                && !code[..k - 3]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
        });
        let after = code[i + pat.len()..].trim_start();
        is_len && !after.starts_with('-')
    });
    if !counted {
        return None;
    }
    let mut e = ErrorInfo::new(
        ErrorKind::Runtime,
        "HeaderCounted",
        "the task asks about a table's rows, but len(....splitlines()) counts its header line too",
    );
    e.hint = Some("Line 0 of a table is its header, not a row: its data rows are read_file(path).splitlines()[1:].".into());
    Some(e)
}

/// Most columns [`concrete_field_hint`] writes one expression for.
const MAX_HINT_COLUMNS: usize = 8;

/// A `FieldExpected` error for whole table lines, its hint made concrete
/// from the workspace view: one complete expression per column of the
/// table the cell reads (`[l.split(",")[0] for l in E] (name)`, …, with
/// the table's own separator), so the model picks the column the task
/// means instead of copying a placeholder (seen: `line.split(sep)[i]`
/// written back as it was, an unknown name). The view already shows these
/// column names: nothing new reaches the model. Any other error, a cell
/// with no last expression, or a table not in the view: unchanged.
fn concrete_field_hint(mut e: ErrorInfo, program: &str, context: &str) -> ErrorInfo {
    if e.type_name != "FieldExpected" || !e.message.contains("whole line of a table") {
        return e;
    }
    let Some(last) = last_expression(program) else {
        return e;
    };
    let lines: Vec<&str> = context.lines().collect();
    for (k, l) in lines.iter().enumerate() {
        let Some(path) = l.strip_suffix(':').filter(|p| !p.starts_with(' ')) else {
            continue;
        };
        let quoted = [format!("\"{path}\""), format!("'{path}'")];
        if path.is_empty() || !quoted.iter().any(|q| program.contains(q.as_str())) {
            continue;
        }
        // The table's layout line follows its first lines.
        let Some((sep, cols)) = lines[k + 1..]
            .iter()
            .take_while(|x| x.starts_with("  "))
            .find_map(|x| crate::context::parse_table_layout(x.trim()))
        else {
            continue;
        };
        if cols.is_empty() || cols.len() > MAX_HINT_COLUMNS || !matches!(sep, "\",\"" | "\"\\t\"") {
            return e;
        }
        let each: Vec<String> = cols
            .iter()
            .map(|(i, name)| format!("[l.split({sep})[{i}] for l in {last}] ({name})"))
            .collect();
        e.hint = Some(format!(
            "End the cell with the field the task asks for from each line of {path}, one of: {}.",
            each.join(", ")
        ));
        return e;
    }
    e
}

/// A cell that uses none of the files the task spells out (`named`):
/// "what does tests/test_utils.py import" answered by scanning every
/// file. Sent back once, like a shape mismatch.
fn unused_named_file(program: &str, named: &[&str]) -> Option<ErrorInfo> {
    let lower = program.to_lowercase();
    let first = named.first()?;
    if named.iter().any(|p| lower.contains(&p.to_lowercase())) {
        return None;
    }
    let mut e = ErrorInfo::new(
        ErrorKind::Runtime,
        "NamedFileUnused",
        format!("the task names {first}, but the cell never uses that path"),
    );
    e.hint = Some(format!(
        "Work on the file the task names: read_file({first:?}), not a search over other files."
    ));
    Some(e)
}

/// What [`Delegator::check`] says about a program.
enum Verdict {
    /// Use it.
    Accept,
    /// It ran ok with an empty value ([`RunCheck::Empty`]): the error
    /// that explains it to the model.
    Empty(ErrorInfo),
    /// Rejected: why.
    Reject(Vec<ErrorInfo>),
}

/// The error that tells the model its cell's value was empty.
fn empty_error(shown: &str) -> ErrorInfo {
    ErrorInfo::new(
        ErrorKind::Runtime,
        "EmptyResult",
        format!("the cell ran, but its value is {shown}: nothing matched"),
    )
}

/// The outcome of the cascade.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Delegation {
    /// The program that validated, if any.
    pub program: Option<String>,
    /// The provider that produced it.
    pub provider: Option<String>,
    /// Every attempt, in order.
    pub attempts: Vec<Attempt>,
    /// Set when no program validated.
    pub error: Option<ErrorInfo>,
}

/// Everything the cascade needs besides the model caller.
pub struct Delegator<'a> {
    /// `[inference]`.
    pub config: &'a InferenceConfig,
    /// The profile's tools as the prompt shows them.
    pub tools: &'a [ToolDoc],
    /// Templates (workspace then shipped).
    pub templates: &'a TemplateSet,
    /// The example corpus.
    pub corpus: &'a Corpus,
    /// Environment lookup for API keys.
    pub env: &'a dyn Fn(&str) -> Option<String>,
    /// The validator: `Ok` when the program may run under the profile.
    pub validate: &'a dyn Fn(&str) -> Result<(), Vec<ErrorInfo>>,
    /// A bounded view of the workspace as text ([`crate::context`]), put
    /// into the prompt of providers whose `workspace_context` allows it.
    pub context: Option<&'a str>,
    /// Runs a validated program when that is safe (no effects) and says
    /// whether to keep it; `None`: every validated program is accepted.
    pub run: Option<&'a dyn Fn(&str) -> RunCheck>,
}

fn ms(since: std::time::Instant) -> u64 {
    u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A provider failure as an attempt's `error` (kind `tool`, type `InferenceFailed`).
pub fn inference_error(message: impl Into<String>) -> ErrorInfo {
    // Messages can carry text from the endpoint or the worker: bound them.
    ErrorInfo::new(
        ErrorKind::Tool,
        "InferenceFailed",
        echo(&message.into(), 2048),
    )
}

impl Delegation {
    /// The provider of every attempt, in order.
    pub fn providers_tried(&self) -> Vec<&str> {
        self.attempts.iter().map(|a| a.provider.as_str()).collect()
    }
}

impl<'a> Delegator<'a> {
    /// A delegator with no workspace view and no run check (set
    /// [`Delegator::context`] and [`Delegator::run`] to add them).
    pub fn new(
        config: &'a InferenceConfig,
        tools: &'a [ToolDoc],
        templates: &'a TemplateSet,
        corpus: &'a Corpus,
        env: &'a dyn Fn(&str) -> Option<String>,
        validate: &'a dyn Fn(&str) -> Result<(), Vec<ErrorInfo>>,
    ) -> Self {
        Delegator {
            config,
            tools,
            templates,
            corpus,
            env,
            validate,
            context: None,
            run: None,
        }
    }

    /// Run the cascade for `intent`.
    pub fn delegate(&self, intent: &str, caller: &mut dyn ModelCaller) -> Delegation {
        let mut d = Delegation {
            program: None,
            provider: None,
            attempts: Vec::new(),
            error: None,
        };
        let intent = intent.trim();
        if intent.is_empty() || intent.len() > MAX_INTENT_BYTES {
            let msg = if intent.is_empty() {
                "the intent is empty".to_string()
            } else {
                format!("the intent is longer than {MAX_INTENT_BYTES} bytes")
            };
            d.error = Some(ErrorInfo::new(ErrorKind::Validation, "BadIntent", msg));
            return d;
        }
        for p in &self.config.order {
            let done = match p.plugin {
                Plugin::Templates => self.zero_cost(&mut d, &p.name, self.templates.find(intent)),
                Plugin::Rules => self.zero_cost(&mut d, &p.name, rules(intent)),
                _ => self.model(&mut d, p, intent, caller),
            };
            if done {
                return d;
            }
        }
        d.error = Some(self.final_error(&d.attempts));
        d
    }

    fn final_error(&self, attempts: &[Attempt]) -> ErrorInfo {
        let last_validation = attempts
            .iter()
            .rev()
            .filter(|a| !a.zero_cost)
            .filter_map(|a| a.error.as_ref())
            .find(|e| e.kind == ErrorKind::Validation);
        if let Some(e) = last_validation {
            let mut e = e.clone();
            e.message = format!(
                "no provider produced a valid program; last error: {}",
                e.message
            );
            return e;
        }
        let failures: Vec<String> = attempts
            .iter()
            .filter_map(|a| {
                a.error
                    .as_ref()
                    .map(|e| format!("{}: {}", a.provider, e.message))
            })
            .collect();
        if failures.is_empty() {
            let mut e = inference_error("no provider produced a program for this intent");
            e.hint = Some("configure a model provider in [inference] (default: Ollama at http://localhost:11434)".into());
            e
        } else {
            inference_error(format!(
                "no provider produced a program: {}",
                failures.join("; ")
            ))
        }
    }

    /// Templates and rules: a match that validates wins; a match that does
    /// not validate is recorded and the cascade moves on; no match is silent.
    fn zero_cost(
        &self,
        d: &mut Delegation,
        provider: &str,
        found: Option<(String, String)>,
    ) -> bool {
        let Some((name, program)) = found else {
            return false;
        };
        let t0 = std::time::Instant::now();
        let res = match self.check("", &program, &[], &[]) {
            Verdict::Accept | Verdict::Empty(_) => Ok(()),
            Verdict::Reject(errs) => Err(errs),
        };
        let ok = res.is_ok();
        d.attempts.push(Attempt {
            provider: provider.to_string(),
            raw: Some(format!("# {name}\n{program}")),
            program: Some(program.clone()),
            error: res.err().map(first_error),
            duration_ms: ms(t0),
            prompt_tokens: None,
            zero_cost: true,
        });
        if ok {
            d.program = Some(program);
            d.provider = Some(provider.to_string());
        }
        ok
    }

    /// Shape check, validator, then the caller's run check. `named`: the
    /// workspace paths the task spells out (with the view on).
    fn check(&self, intent: &str, program: &str, tool_names: &[String], named: &[&str]) -> Verdict {
        let shape = crate::clean::shape_problem(program, tool_names);
        // The validator's errors (an unknown name, with its line) say more
        // than "no tool call" about a cell using names it should not.
        match shape {
            Some(("NoToolCall", _)) | None => {}
            Some((ty, msg)) => {
                return Verdict::Reject(vec![ErrorInfo::new(ErrorKind::Validation, ty, msg)])
            }
        }
        if let Err(errs) = (self.validate)(program) {
            return Verdict::Reject(errs);
        }
        if let Some((ty, msg)) = shape {
            return Verdict::Reject(vec![ErrorInfo::new(ErrorKind::Validation, ty, msg)]);
        }
        if let Some((msg, hint)) = crate::clean::literal_arg_problem(program, self.tools) {
            let mut e = ErrorInfo::new(ErrorKind::Validation, "ArgumentError", msg);
            e.hint = Some(hint);
            return Verdict::Reject(vec![e]);
        }
        if let Some((msg, hint)) = crate::clean::line_index_problem(program) {
            let mut e = ErrorInfo::new(ErrorKind::Validation, "LineIndexed", msg);
            e.hint = Some(hint);
            return Verdict::Reject(vec![e]);
        }
        match self.run.map(|r| r(program)) {
            Some(RunCheck::Failed(e)) => Verdict::Reject(vec![e]),
            Some(RunCheck::Empty(shown)) => Verdict::Empty(empty_error(&shown)),
            Some(RunCheck::Value(shape)) => match shape_mismatch(intent, program, &shape)
                .or_else(|| characters_as_lines(intent, program))
                .or_else(|| header_counted(intent, program))
                .or_else(|| unused_named_file(program, named))
            {
                Some(e) => Verdict::Empty(e),
                None => Verdict::Accept,
            },
            _ => Verdict::Accept,
        }
    }

    fn model(
        &self,
        d: &mut Delegation,
        p: &ProviderConfig,
        intent: &str,
        caller: &mut dyn ModelCaller,
    ) -> bool {
        let endpoint = match p.endpoint(self.env) {
            Ok(Some(e)) => e,
            Ok(None) => return false,
            Err(e) => {
                d.attempts.push(Attempt {
                    provider: p.name.clone(),
                    raw: None,
                    program: None,
                    error: Some(inference_error(e.to_string())),
                    duration_ms: 0,
                    prompt_tokens: None,
                    zero_cost: false,
                });
                return false;
            }
        };
        let tool_names: Vec<String> = self.tools.iter().map(|t| t.name.clone()).collect();
        let allowed = |n: &str| tool_names.iter().any(|t| t == n);
        let (context, keys) = match self.context.filter(|_| p.context_enabled(&endpoint)) {
            Some(c) => {
                let (view, keys) = crate::context::split_view(c);
                (Some(view), keys)
            }
            None => (None, Vec::new()),
        };
        let query = retrieval_query(intent, context);
        let examples = self.corpus.retrieve(&query, self.config.examples, &allowed);
        let system = system_prompt_with(self.tools, context);
        tracing::debug!(
            provider = %p.name,
            examples = ?examples.iter().map(|e| e.intent.as_str()).collect::<Vec<_>>(),
            "retrieved examples"
        );
        // The files the task names go next to it, in the first prompt and
        // in every retry (a small model copies the examples' paths unless
        // the right ones are close by).
        let mut task = intent.to_string();
        if let Some(ctx) = context {
            for line in task_files(intent, ctx) {
                task.push('\n');
                task.push_str(&line);
            }
        }
        let spelled: Vec<&str> = context
            .map(|c| spelled_paths(intent, &view_paths(c)))
            .unwrap_or_default();
        let mut messages = first_messages(&system, &examples, &task);
        let mut temperature = None;
        let mut rejected: Vec<String> = Vec::new();
        // A cell that ran ok with an empty value, and its attempt's index:
        // the answer when the call after it does no better.
        let mut fallback: Option<(String, usize)> = None;
        // One first answer, one correction retry, and one more call only
        // when the retry repeated a rejected cell or failed in a way that
        // first earned a hint from a configuration file's keys.
        let mut calls: u64 = 0;
        // Whether the first retry already carried a configuration file's
        // keys (then a second failure gets no third call for them).
        let mut grounded_before = false;
        while calls < 3 {
            calls += 1;
            let t0 = std::time::Instant::now();
            let mut req = Request {
                endpoint: endpoint.clone(),
                messages: messages.clone(),
                temperature,
            };
            // A fixed seed makes each retry draw the same random numbers,
            // so a peaked distribution gives the rejected cell again at any
            // temperature (seen: three identical answers). Each call of a
            // delegation gets its own seed, still reproducible.
            if let Some(seed) = req.endpoint.seed.as_mut() {
                *seed = seed.wrapping_add(calls - 1);
            }
            let generation = match caller.call(&req) {
                Ok(g) => g,
                Err(e) => {
                    tracing::info!(provider = %p.name, error = %e, "model call failed");
                    d.attempts.push(Attempt {
                        provider: p.name.clone(),
                        raw: None,
                        program: None,
                        error: Some(inference_error(e.to_string())),
                        duration_ms: ms(t0),
                        prompt_tokens: None,
                        zero_cost: false,
                    });
                    return false;
                }
            };
            if generation.text.len() > MAX_ANSWER_BYTES {
                d.attempts.push(Attempt {
                    provider: p.name.clone(),
                    raw: Some(echo(&generation.text, MAX_RAW_ECHO_BYTES)),
                    program: None,
                    error: Some(inference_error(format!(
                        "the answer is larger than {MAX_ANSWER_BYTES} bytes"
                    ))),
                    duration_ms: ms(t0),
                    prompt_tokens: generation.prompt_tokens,
                    zero_cost: false,
                });
                return false;
            }
            let mut program = clean_answer(&generation.text);
            // wrong_output: a cell ending in `name = ...` or `print(x)` loses its value.
            if let Some(fixed) = crate::clean::ensure_result(&program) {
                program = fixed;
            }
            if let Some(fixed) = crate::clean::unprint_result(&program) {
                program = fixed;
            }
            if let Some(fixed) = crate::clean::collect_prints(&program) {
                program = fixed;
            }
            // A retry that is only the corrected last line of the cell it
            // was shown (`results[0]`, with `results` assigned above) is
            // that cell with its last line replaced.
            let validates = |p: &str| (self.validate)(p).is_ok();
            if let Some(whole) = rejected
                .last()
                .and_then(|prev| splice_last_line(prev, &program, &validates))
            {
                program = whole;
            }
            if let Some(code) = uncommented_answer(&task, &program, &validates) {
                tracing::info!(provider = %p.name, "an answer written as comments: its code is used");
                program = code;
            }
            if let Some(whole) = with_shown_rows(&task, &program, &validates) {
                program = whole;
            }
            // Its key-function form only for a cell the model gave again:
            // rewritten at once, `max(LINES, key=lambda r: float(r[4]))[4]`
            // ends as the field's text where the retry had converted it.
            let again = rejected.iter().any(|r| same_code(r, &program));
            if let Some(split) = with_split_rows(&task, &program, again, &validates) {
                tracing::info!(provider = %p.name, "a line indexed as a row: the task's rows are used");
                program = split;
            }
            let repeated = rejected.iter().any(|r| same_code(r, &program));
            let errs = match self.check(intent, &program, &tool_names, &spelled) {
                // An empty value from the first answer, with the view on:
                // ask again with that fact, keeping this cell.
                Verdict::Empty(e) if context.is_some() && calls == 1 => {
                    fallback = Some((program.clone(), d.attempts.len()));
                    vec![concrete_field_hint(e, &program, context.unwrap_or(""))]
                }
                Verdict::Accept | Verdict::Empty(_) => {
                    d.attempts.push(Attempt {
                        provider: p.name.clone(),
                        raw: Some(echo(&generation.text, MAX_RAW_ECHO_BYTES)),
                        program: Some(program.clone()),
                        error: None,
                        duration_ms: ms(t0),
                        prompt_tokens: generation.prompt_tokens,
                        zero_cost: false,
                    });
                    d.program = Some(program);
                    d.provider = Some(p.name.clone());
                    return true;
                }
                Verdict::Reject(errs) => errs,
            };
            let mut hints = hints_for(&program, &errs, &tool_names);
            if let Some(ctx) = context {
                hints.extend(missing_path_hints(&errs, ctx));
            }
            crate::hints::unknown_name_is_a_file(&errs, &spelled, &mut hints);
            crate::hints::constant_is_a_tool_result(
                &errs,
                &program,
                &spelled,
                &tool_names,
                &mut hints,
            );
            let key_hints = config_key_hints(&errs, &program, &spelled, &keys);
            let value_hint = config_value_hint(intent, &errs, &program, &spelled, &keys);
            let grounded = !key_hints.is_empty() || value_hint.is_some();
            hints.extend(key_hints);
            hints.extend(value_hint);
            d.attempts.push(Attempt {
                provider: p.name.clone(),
                raw: Some(echo(&generation.text, MAX_RAW_ECHO_BYTES)),
                program: Some(program.clone()),
                error: Some(first_error(errs.clone())),
                duration_ms: ms(t0),
                prompt_tokens: generation.prompt_tokens,
                zero_cost: false,
            });
            // A run-time failure goes back to the model only when the
            // workspace view is on for it (the error text may quote data).
            let runtime = errs.iter().any(|e| e.kind != ErrorKind::Validation);
            if runtime && context.is_none() {
                return false;
            }
            if calls == 1 {
                messages = retry_messages(&system, &examples, &task, &program, &errs, &hints);
                temperature = Some(p.retry_temperature);
                grounded_before = grounded;
            } else if calls == 2 && grounded && !grounded_before && !repeated {
                // The retry's failure is the first to earn a hint read from
                // the configuration file's own keys (seen: an unknown name,
                // then `shop["opening_hour"]`, a KeyError): one more
                // correction, with that hint.
                tracing::info!(provider = %p.name, "a second correction, with the file's keys");
                messages = retry_messages(&system, &examples, &task, &program, &errs, &hints);
            } else if repeated && calls == 2 {
                // A retry that repeats the rejected cell is wasted: ask
                // again, warmer, saying so.
                tracing::info!(provider = %p.name, "the retry repeated the rejected cell");
                messages = different_messages(retry_messages(
                    &system, &examples, &task, &program, &errs, &hints,
                ));
                temperature = Some((p.retry_temperature + 0.3).min(1.2));
            } else {
                break;
            }
            rejected.push(program);
        }
        if let Some((program, i)) = fallback {
            tracing::info!(provider = %p.name, "the empty-valued cell stands");
            if let Some(a) = d.attempts.get_mut(i) {
                a.error = None;
            }
            d.program = Some(program);
            d.provider = Some(p.name.clone());
            return true;
        }
        false
    }
}

/// The retrieval query: the intent, plus the kind of each workspace file
/// the intent names (`orders` → `data/orders.csv` → `csv`), so a data
/// question finds the examples for its file format.
fn retrieval_query(intent: &str, context: Option<&str>) -> String {
    let Some(ctx) = context else {
        return intent.to_string();
    };
    let mut extra: Vec<&str> = Vec::new();
    for path in named_paths(intent, ctx) {
        let Some((_, ext)) = path.rsplit_once('.') else {
            continue;
        };
        let kind = match ext {
            "py" => "python",
            "md" => "markdown",
            "csv" | "tsv" | "json" | "jsonl" | "ini" | "cfg" | "toml" | "log" | "txt" => ext,
            _ => continue,
        };
        if !extra.contains(&kind) {
            extra.push(kind);
        }
    }
    if extra.is_empty() {
        intent.to_string()
    } else {
        format!("{intent} {}", extra.join(" "))
    }
}

/// The paths the view lists (its "Workspace files" section; never the
/// lines of a data file's head, which are indented the same way).
fn view_paths(ctx: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut in_files = false;
    for line in ctx.lines() {
        if let Some(path) = line.strip_prefix("  ") {
            if in_files && !path.contains(char::is_whitespace) {
                out.push(path);
            }
            continue;
        }
        in_files = line.starts_with("Workspace files");
    }
    out
}

/// The indented lines of `path`'s head block in the view (`path:` then
/// lines starting with two spaces), trimmed.
fn view_block<'c>(ctx: &'c str, path: &str) -> Vec<&'c str> {
    let lines: Vec<&str> = ctx.lines().collect();
    let Some(j) = lines.iter().position(|l| *l == format!("{path}:")) else {
        return Vec::new();
    };
    lines
        .iter()
        .skip(j + 1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.trim())
        .collect()
}

/// The head block the view shows for `path`: its first lines, without
/// the layout line.
fn view_head<'c>(ctx: &'c str, path: &str) -> Vec<&'c str> {
    view_block(ctx, path)
        .into_iter()
        .filter(|l| !(l.starts_with('(') && l.ends_with(')')))
        .collect()
}

/// The notes the view adds to `path`'s head block (the text inside
/// its parenthesised lines: a table's layout, a log's capitals).
fn view_notes<'c>(ctx: &'c str, path: &str) -> Vec<&'c str> {
    view_block(ctx, path)
        .into_iter()
        .filter_map(|l| l.strip_prefix('(')?.strip_suffix(')'))
        .collect()
}

/// For a run-time "no such file" error: the workspace paths (from the
/// view) with the missing path's file name, or else the advice to use a
/// listed path as written.
fn missing_path_hints(errs: &[ErrorInfo], ctx: &str) -> Vec<crate::hints::Hint> {
    let mut out = Vec::new();
    for e in errs.iter().filter(|e| e.type_name == "FileNotFound") {
        let missing = e
            .message
            .split('"')
            .nth(1)
            .unwrap_or("")
            .trim_start_matches("./");
        let name = missing.rsplit('/').next().unwrap_or(missing);
        let same: Vec<&str> = view_paths(ctx)
            .into_iter()
            .filter(|p| !name.is_empty() && p.rsplit('/').next() == Some(name) && *p != missing)
            .take(3)
            .collect();
        let text = if same.is_empty() {
            format!("\"{missing}\" is not a file of the workspace: use one of the paths listed above, exactly as written (directory included).")
        } else {
            format!("\"{missing}\" is not a file of the workspace; the file is {}: use the path with its directory.", same.iter().map(|p| format!("\"{p}\"")).collect::<Vec<_>>().join(" or "))
        };
        out.push(crate::hints::Hint {
            mode: crate::hints::FailureMode::PathPrefix,
            text,
        });
    }
    out
}

/// For a run-time `KeyError` in a cell that reads a configuration file
/// (its path in the cell or spelled by the task): the file's keys, from
/// the view's keys section (`keys`, see [`crate::context::split_view`]).
/// Qwen2.5-Coder-1.5B, asked for "the report day" of an INI file it saw
/// three lines of, wrote `config["timeout"]` (an example's key) three
/// times. The keys are not in the first prompt (shown there, the model
/// took them for a dictionary the cell already had: 3 of 3 right answers
/// became wrong) nor beside an unknown name (it kept writing
/// `config["currency"]`), only in the retry after a `KeyError`.
fn config_key_hints(
    errs: &[ErrorInfo],
    program: &str,
    spelled: &[&str],
    keys: &[(&str, &str)],
) -> Vec<crate::hints::Hint> {
    let mut out = Vec::new();
    let read = keys
        .iter()
        .find(|(p, _)| spelled.contains(p) || program.contains(&format!("{p:?}")));
    let Some((path, lines)) = read else {
        return out;
    };
    let (sections, names) = config_sections_and_keys(lines);
    if names.is_empty() {
        return out;
    }
    let list = names.join(", ");
    for e in errs.iter().filter(|e| e.type_name == "KeyError") {
        let key = e.message.trim().trim_matches(['\'', '"']);
        let text = if sections.contains(&key) {
            format!("'{key}' is the section line [{key}] of {path}, not a key: its \"key = value\" lines give the keys {list}.")
        } else if !names.contains(&key) {
            format!("{path} has no key '{key}': its \"key = value\" lines give the keys {list}. Use the key the task means, spelled as the file spells it.")
        } else {
            continue;
        };
        if !out.iter().any(|h: &crate::hints::Hint| h.text == text) {
            out.push(crate::hints::Hint {
                mode: crate::hints::FailureMode::KeyHallucination,
                text,
            });
        }
    }
    out
}

/// A configuration file's section names and keys, from its entry in the
/// view's keys section (`"[shop]", "name = …", "day: …"`).
fn config_sections_and_keys(lines: &str) -> (Vec<&str>, Vec<&str>) {
    let lines: Vec<&str> = lines
        .trim_end_matches('…')
        .split(", ")
        .map(|l| l.trim_matches('"'))
        .collect();
    let sections = lines
        .iter()
        .filter(|l| l.starts_with('['))
        .map(|l| l.trim_matches(['[', ']']).trim())
        .collect();
    let names = lines
        .iter()
        .filter(|l| !l.starts_with('['))
        .filter_map(|l| Some(l[..l.find(['=', ':'])?].trim()))
        .collect();
    (sections, names)
}

/// Whether two words are one word in two forms: equal, or sharing a
/// prefix of at least four characters that covers all but at most two of
/// the shorter (`open`/`opening`, `requires`/`required`).
fn same_word(a: &str, b: &str) -> bool {
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let shorter = a.chars().count().min(b.chars().count());
    a == b || (common >= 4 && common + 2 >= shorter)
}

/// For a cell that reads a configuration file the task spells out and
/// failed at run time (or ran to an empty or ill-shaped value): when the
/// task's words pick out one of the file's keys (`package name` → `name`,
/// `opening hour` → `open_hour` over `close_hour`), the expression that
/// reads that key's value. A small model shown the file's keys guessed
/// section lookups and index arithmetic (`line.index("name ")`,
/// `[metadata]` as a key line) and failed three times; the keys stay out
/// of the first prompt (see [`config_key_hints`]).
fn config_value_hint(
    intent: &str,
    errs: &[ErrorInfo],
    program: &str,
    spelled: &[&str],
    keys: &[(&str, &str)],
) -> Option<crate::hints::Hint> {
    if errs.iter().all(|e| e.kind == ErrorKind::Validation) {
        return None;
    }
    let (path, lines) = keys
        .iter()
        .find(|(p, _)| spelled.contains(p) && program.contains(&format!("{p:?}")))?;
    let (_, names) = config_sections_and_keys(lines);
    // A task about the file's layout (its sections, keys or lines) asks
    // for no one value: "section names" is not the key `name`.
    const LAYOUT: [&str; 9] = [
        "section", "sections", "key", "keys", "line", "lines", "settings", "all", "every",
    ];
    let words = intent_words(intent);
    if words.iter().any(|w| LAYOUT.contains(&w.as_str())) {
        return None;
    }
    let path_words = intent_words(path);
    let words: Vec<String> = words
        .into_iter()
        .filter(|w| w.len() >= 3 && !path_words.contains(w))
        .collect();
    let score = |key: &str| {
        key.to_lowercase()
            .split(['_', '-', '.', ' '])
            .filter(|part| words.iter().any(|w| same_word(w, part)))
            .count()
    };
    let best = names.iter().map(|k| score(k)).max().filter(|&b| b > 0)?;
    let tied: Vec<&&str> = names.iter().filter(|k| score(k) == best).collect();
    let [key] = tied.as_slice() else {
        return None;
    };
    let sep = if lines.contains(&format!("\"{key}:")) && !lines.contains(&format!("\"{key} =")) {
        ":"
    } else {
        "="
    };
    let expr = format!("[l.split(\"{sep}\", 1)[1].strip() for l in read_file(\"{path}\").splitlines() if l.split(\"{sep}\", 1)[0].strip() == \"{key}\"][0]");
    if program.contains(&expr) {
        return None;
    }
    Some(crate::hints::Hint {
        mode: crate::hints::FailureMode::KeyHallucination,
        text: format!("The task asks for {path}'s key {key}: its value is {expr}"),
    })
}

/// Most files described next to the task.
const MAX_TASK_FILES: usize = 3;

/// The paths of `paths` that `intent` spells out (`data/orders.csv`),
/// as whole names (not `a/data/orders.csv` or `orders.csv.bak`).
fn spelled_paths<'c>(intent: &str, paths: &[&'c str]) -> Vec<&'c str> {
    let lower = intent.to_lowercase();
    paths
        .iter()
        .copied()
        .filter(|p| {
            let p = p.to_lowercase();
            lower.match_indices(&p).any(|(i, _)| {
                let before = lower[..i].chars().next_back();
                let rest = &lower[i + p.len()..];
                let ok_before = before.is_none_or(|c| !(c.is_alphanumeric() || "_/.".contains(c)));
                // A full stop after the path ends the sentence, not the name.
                let ok_after = match rest.chars().next() {
                    None => true,
                    Some('.') => rest.len() == 1 || rest[1..].starts_with(char::is_whitespace),
                    Some(c) => !(c.is_alphanumeric() || "_/".contains(c)),
                };
                ok_before && ok_after
            })
        })
        .collect()
}

/// The workspace files the task names, chosen from the view: the paths
/// the intent spells out (`data/orders.csv`) when there are any; else
/// those whose file name shares a word with it (`orders` →
/// `data/orders.csv`, `server log` → `logs/server.log`); else those
/// whose directory does (`the notes` → `notes/a.txt`). At most
/// [`MAX_TASK_FILES`].
fn named_paths<'c>(intent: &str, ctx: &'c str) -> Vec<&'c str> {
    let paths = view_paths(ctx);
    let spelled = spelled_paths(intent, &paths);
    if !spelled.is_empty() {
        return spelled.into_iter().take(MAX_TASK_FILES).collect();
    }
    let words: std::collections::BTreeSet<String> =
        crate::corpus::tokens(intent).into_iter().collect();
    let stem_hit = |p: &str| {
        let name = p.rsplit('/').next().unwrap_or(p);
        let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
        crate::corpus::tokens(stem)
            .iter()
            .any(|t| words.contains(t))
    };
    let by_name: Vec<&str> = paths.iter().copied().filter(|p| stem_hit(p)).collect();
    if !by_name.is_empty() {
        return by_name.into_iter().take(MAX_TASK_FILES).collect();
    }
    let dir_hit = |p: &str| {
        p.rsplit_once('/')
            .is_some_and(|(d, _)| crate::corpus::tokens(d).iter().any(|t| words.contains(t)))
    };
    let by_dir: Vec<&str> = paths.iter().copied().filter(|p| dir_hit(p)).collect();
    if !by_dir.is_empty() {
        return by_dir.into_iter().take(MAX_TASK_FILES).collect();
    }
    // Last, the files whose shown lines hold the task's words ("the stock
    // of the lamp": products.csv's header has `stock`, its first row
    // `lamp`), most distinct words first.
    let mut by_content: Vec<(usize, &str)> = paths
        .iter()
        .map(|p| {
            let mut seen = std::collections::BTreeSet::new();
            for line in view_head(ctx, p) {
                for t in crate::corpus::tokens(line) {
                    if words.contains(&t) {
                        seen.insert(t);
                    }
                }
            }
            (seen.len(), *p)
        })
        .filter(|(n, _)| *n > 0)
        .collect();
    let best = by_content.iter().map(|(n, _)| *n).max().unwrap_or(0);
    by_content.retain(|(n, _)| *n == best);
    by_content
        .into_iter()
        .map(|(_, p)| p)
        .take(MAX_TASK_FILES)
        .collect()
}

/// Lines describing the files the task names ([`named_paths`]), for the
/// user turn next to the task: a table (`.csv`, `.tsv`) as the line of
/// code that splits its data rows and the index of each column, with its
/// first data row; any other file with its first line when the view
/// shows one.
fn task_files(intent: &str, ctx: &str) -> Vec<String> {
    let mut out = Vec::new();
    for path in named_paths(intent, ctx) {
        let head = view_head(ctx, path);
        let ext = path
            .rsplit_once('.')
            .map(|(_, e)| e.to_ascii_lowercase())
            .unwrap_or_default();
        let sep = match ext.as_str() {
            "csv" => Some((',', "\",\"")),
            "tsv" => Some(('\t', "\"\\t\"")),
            _ => None,
        };
        let quoted = format!("{path:?}");
        match (sep, head.first()) {
            (Some((sep, lit)), Some(header)) if header.split(sep).count() >= 2 => {
                let cols: Vec<String> = header
                    .split(sep)
                    .take(24)
                    .enumerate()
                    .map(|(i, c)| format!("r[{i}] {}", c.trim()))
                    .collect();
                out.push(format!(
                    "# {path} is a table: its line 0 is the header {:?}; {ROWS_NOTE}rows = [l.split({lit}) for l in read_file({quoted}).splitlines()[1:]]",
                    header.trim()
                ));
                let first = head
                    .get(1)
                    .map(|r| format!(" (first row: {r})"))
                    .unwrap_or_default();
                out.push(format!("# each row r: {}{first}", cols.join(", ")));
            }
            (_, Some(_)) => {
                let shown: Vec<String> = head.iter().map(|l| format!("{l:?}")).collect();
                let capitals = view_notes(ctx, path)
                    .into_iter()
                    .find_map(|n| n.strip_prefix("words in capitals: "))
                    .map(|w| format!("; words in capitals: {w}"))
                    .unwrap_or_default();
                out.push(format!(
                    "# read_file({quoted}).splitlines() starts [{}]{capitals}",
                    shown.join(", ")
                ));
            }
            (_, None) => out.push(format!("# {path}")),
        }
    }
    out
}

/// `previous` with its last line replaced by `answer`, when `answer` is
/// one line of code that does not validate alone (it uses names only
/// `previous` assigns) and the spliced cell does.
fn splice_last_line(
    previous: &str,
    answer: &str,
    validates: &dyn Fn(&str) -> bool,
) -> Option<String> {
    let code = |l: &&str| !l.trim().is_empty() && !l.trim_start().starts_with('#');
    let line = match answer.lines().filter(code).collect::<Vec<_>>().as_slice() {
        [one] if !one.starts_with(char::is_whitespace) => one.trim_end().to_string(),
        _ => return None,
    };
    let kept: Vec<&str> = previous.lines().collect();
    let last = kept.iter().rposition(code)?;
    if last == 0 || validates(&line) {
        return None;
    }
    let mut whole = kept[..last].join("\n");
    whole.push('\n');
    whole.push_str(&line);
    validates(&whole).then_some(whole)
}

/// Most trailing comment lines [`uncommented_answer`] turns into code.
const MAX_UNCOMMENTED_LINES: usize = 8;

/// `answer` with its code written as comments made code: a cell of
/// comments only whose last lines, the ones that do not repeat the task's
/// own notes (`# each row r: r[2] product`), validate once their `#` is
/// taken off. A small model shown the notes as comments sometimes echoes
/// them and then comments out its answer too (seen: `# set(r[2] for r in
/// rows)` as the last line, the cell rejected as empty twice). Code that
/// parses but does not validate (`rows` never assigned) is taken too when
/// it looks like code (a call, subscript or assignment): the retry then
/// says what is wrong with it instead of "empty". Prose does not parse, so
/// it stays a comment; `None` when nothing changes.
fn uncommented_answer(
    task: &str,
    answer: &str,
    validates: &dyn Fn(&str) -> bool,
) -> Option<String> {
    let lines: Vec<&str> = answer.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() || !lines.iter().all(|l| l.trim_start().starts_with('#')) {
        return None;
    }
    let notes: Vec<&str> = task
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix('#'))
        .map(str::trim)
        .collect();
    let text = |l: &str| l.trim_start().trim_start_matches('#').trim().to_string();
    let tail: Vec<&str> = lines
        .iter()
        .rev()
        .take_while(|l| {
            let t = text(l);
            !t.is_empty() && !notes.contains(&t.as_str())
        })
        // One more than the most kept: enough to see there are too many.
        .take(MAX_UNCOMMENTED_LINES + 1)
        .copied()
        .collect();
    if tail.is_empty() || tail.len() > MAX_UNCOMMENTED_LINES {
        return None;
    }
    let code: Vec<String> = tail.iter().rev().map(|l| text(l)).collect();
    let code = code.join("\n");
    let looks_like_code = crate::clean::parses(&code) && code.contains(['(', '[', '=']);
    (validates(&code) || looks_like_code).then_some(code)
}

/// The text after which the task's notes show how a table's rows are read
/// ([`task_files`]).
const ROWS_NOTE: &str = "its data rows: ";

/// `answer` with the `rows = ...` line the task's notes showed put first,
/// when `answer` uses `rows` without assigning it, does not validate as it
/// is, and does with that line. A small model often takes the note's
/// `rows` as already defined. Only when the task shows one such line.
fn with_shown_rows(task: &str, answer: &str, validates: &dyn Fn(&str) -> bool) -> Option<String> {
    let shown: Vec<&str> = shown_rows(task).collect();
    let [line] = shown.as_slice() else {
        return None;
    };
    let code = crate::corpus::strip_strings(answer);
    let uses = crate::hints::has_word(&code, "rows");
    let assigns = code
        .lines()
        .any(|l| l.trim_start().starts_with("rows =") || l.contains("for rows "));
    if !uses || assigns || validates(answer) {
        return None;
    }
    let whole = format!("{line}\n{answer}");
    validates(&whole).then_some(whole)
}

/// The `rows = [l.split(SEP) for l in read_file(P).splitlines()[1:]]`
/// lines the task's notes show ([`task_files`]), one per table.
fn shown_rows(task: &str) -> impl Iterator<Item = &str> {
    task.lines()
        .filter(|l| l.starts_with("# "))
        .filter_map(|l| l.split_once(ROWS_NOTE).map(|(_, d)| d.trim()))
        .filter(|d| d.starts_with("rows = "))
}

/// `answer` with its loops over a table's lines made loops over the rows
/// the task's notes showed, when the cell indexes a line as if it were
/// split ([`crate::clean::line_index_problem`]): `for r in
/// read_file(P).splitlines()[1:]` becomes `for r in [l.split(",") for l in
/// read_file(P).splitlines()[1:]]`, the note's own expression, and the
/// unsliced `read_file(P).splitlines()` too (the header is no row). Only
/// when the result no longer indexes a line and validates. A small model
/// given the hint often repeats the same cell (seen: three identical
/// answers), so the fix the hint names is applied here.
/// With `key_functions`, a call's `key=lambda` over the lines too
/// ([`with_split_key_rows`]).
fn with_split_rows(
    task: &str,
    answer: &str,
    key_functions: bool,
    validates: &dyn Fn(&str) -> bool,
) -> Option<String> {
    crate::clean::line_index_problem(answer)?;
    let mut out = answer.to_string();
    for shown in shown_rows(task) {
        let Some(rows) = shown.strip_prefix("rows = ") else {
            continue;
        };
        // `[l.split(SEP) for l in LINES]`: LINES is what a loop over the
        // table's lines iterates.
        let Some(lines) = rows
            .strip_suffix(']')
            .and_then(|r| r.split_once(" for l in "))
            .map(|(_, lines)| lines)
        else {
            continue;
        };
        let unsliced = lines.strip_suffix("[1:]").unwrap_or(lines);
        if !loop_vars_only_indexed(&out, unsliced) {
            return None;
        }
        // One pass: ` in LINES` with the rows' own slice `[1:]` or none
        // becomes ` in ROWS`; another slice (`[2:]`) is left as it is.
        let mut fixed = String::with_capacity(out.len());
        let mut rest = out.as_str();
        let pat = format!(" in {unsliced}");
        while let Some(k) = rest.find(&pat) {
            fixed.push_str(&rest[..k]);
            let mut after = &rest[k + pat.len()..];
            match after.strip_prefix("[1:]") {
                Some(past) if lines.ends_with("[1:]") => {
                    fixed.push_str(&format!(" in {rows}"));
                    after = past;
                }
                _ if after.starts_with('[') => fixed.push_str(&pat),
                _ => fixed.push_str(&format!(" in {rows}")),
            }
            rest = after;
        }
        fixed.push_str(rest);
        out = if key_functions {
            with_split_key_rows(&fixed, lines, unsliced, rows)
        } else {
            fixed
        };
    }
    (out != answer && crate::clean::line_index_problem(&out).is_none() && validates(&out))
        .then_some(out)
}

/// [`with_split_rows`] for a call's first argument: `sorted(LINES,
/// key=lambda r: float(r[2]))` (LINES the table's lines, sliced `[1:]` as
/// the rows are, or unsliced) becomes `sorted(ROWS, key=lambda r: …)` when
/// the lambda's parameter is used only indexed. Seen: three identical
/// answers of that shape, the hint notwithstanding.
fn with_split_key_rows(program: &str, lines: &str, unsliced: &str, rows: &str) -> String {
    let code = crate::corpus::strip_strings(program);
    if code.len() != program.len() {
        return program.to_string();
    }
    let pat = format!("({unsliced}");
    let mut out = String::with_capacity(program.len());
    let mut last = 0;
    for (k, _) in program.match_indices(&pat) {
        let mut after = k + pat.len();
        if program[after..].starts_with("[1:]") && lines.ends_with("[1:]") {
            after += "[1:]".len();
        } else if program[after..].starts_with('[') {
            continue;
        }
        let tail = program[after..].trim_start();
        let Some(name) = tail
            .strip_prefix(',')
            .map(str::trim_start)
            .and_then(|t| t.strip_prefix("key=lambda "))
            .and_then(|t| t.split_once(':'))
            .map(|(n, _)| n.trim())
        else {
            continue;
        };
        if k < last || !only_indexed(&code, name) {
            continue;
        }
        out.push_str(&program[last..k + 1]);
        out.push_str(rows);
        last = after;
    }
    out.push_str(&program[last..]);
    out
}

/// Whether `name` (an identifier) occurs in `code` (strings blanked) only
/// as a lambda's parameter (`lambda name:`) or indexed (`name[`).
fn only_indexed(code: &str, name: &str) -> bool {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    if name.is_empty() || !name.chars().all(is_word) {
        return false;
    }
    code.match_indices(name).all(|(i, _)| {
        let prev = code[..i].chars().next_back();
        let rest = &code[i + name.len()..];
        let next = rest.chars().next();
        prev.is_some_and(is_word)
            || next.is_some_and(is_word)
            || next == Some('[')
            || (code[..i].ends_with("lambda ") && rest.trim_start().starts_with(':'))
    })
}

/// Whether every name bound by `for NAME in LINES…` (LINES starting with
/// `lines`) is used only indexed (`NAME[…]`) elsewhere in `program`: then
/// looping over split rows instead keeps the cell's meaning; a name also
/// used as a str (`NAME.strip()`, `"x" in NAME`) does not.
fn loop_vars_only_indexed(program: &str, lines: &str) -> bool {
    let code = crate::corpus::strip_strings(program);
    if code.len() != program.len() {
        return false;
    }
    let pat = format!(" in {lines}");
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    for (k, _) in program.match_indices(&pat) {
        let before = code[..k].trim_end();
        let name = before.rsplit(|c: char| !is_word(c)).next().unwrap_or("");
        if name.is_empty() || !before.ends_with(&format!("for {name}")) {
            return false;
        }
        for (i, _) in code.match_indices(name) {
            let prev = code[..i].chars().next_back();
            let next = code[i + name.len()..].chars().next();
            if prev.is_some_and(is_word) || next.is_some_and(is_word) {
                continue;
            }
            let bound = code[..i].ends_with("for ") && code[i + name.len()..].starts_with(" in ");
            if !bound && next != Some('[') {
                return false;
            }
        }
    }
    true
}

/// Two programs that differ only in whitespace and comments.
fn same_code(a: &str, b: &str) -> bool {
    let norm = |s: &str| {
        s.lines()
            .map(|l| l.split(" #").next().unwrap_or("").trim().to_string())
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n")
            .replace(' ', "")
    };
    norm(a) == norm(b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ProviderConfig;
    use crate::http::Role;

    /// Answers from a script; records the requests.
    struct Script {
        answers: Vec<Result<String, InferError>>,
        seen: Vec<Request>,
    }

    impl ModelCaller for Script {
        fn call(&mut self, req: &Request) -> Result<Generation, InferError> {
            self.seen.push(req.clone());
            if self.answers.is_empty() {
                return Err(InferError::Worker("script exhausted".into()));
            }
            self.answers.remove(0).map(|text| Generation {
                text,
                elapsed_ms: 1,
                tries: 1,
                prompt_tokens: Some(100),
            })
        }
    }

    /// A fake validator: rejects `import`, `open(` and syntax errors.
    fn fake_validate(p: &str) -> Result<(), Vec<ErrorInfo>> {
        if p.contains("import") || p.contains("open(") {
            let mut e = ErrorInfo::new(
                ErrorKind::Validation,
                "ForbiddenName",
                "'open' is not available",
            );
            e.line = Some(1);
            return Err(vec![e]);
        }
        // The real validator's unknown names, for two names the tests use.
        for name in ["results", "rows"] {
            if p.contains(name) && !p.contains(&format!("{name} = ")) {
                return Err(vec![ErrorInfo::new(
                    ErrorKind::Validation,
                    "UnknownName",
                    format!("name '{name}' is not defined"),
                )]);
            }
        }
        rustpython_parser::parse(p, rustpython_parser::Mode::Module, "<t>")
            .map(|_| ())
            .map_err(|e| {
                vec![ErrorInfo::new(
                    ErrorKind::Validation,
                    "SyntaxError",
                    e.error.to_string(),
                )]
            })
    }

    fn run(
        order: Vec<ProviderConfig>,
        intent: &str,
        answers: Vec<Result<String, InferError>>,
    ) -> (Delegation, Script) {
        run_in(order, 6, None, None, intent, answers)
    }

    /// The cascade over `order` (shipped templates and corpus, `examples`
    /// retrieved), with a workspace view and a run check when given.
    fn run_in(
        order: Vec<ProviderConfig>,
        examples: usize,
        context: Option<&str>,
        check: Option<&dyn Fn(&str) -> RunCheck>,
        intent: &str,
        answers: Vec<Result<String, InferError>>,
    ) -> (Delegation, Script) {
        let config = InferenceConfig {
            order,
            promote_after: 3,
            examples,
            promote_unconfirmed: false,
        };
        let tools: Vec<ToolDoc> = ["read_file", "find_files"]
            .iter()
            .filter_map(|n| ToolDoc::builtin(n))
            .collect();
        let templates = TemplateSet::load(None).unwrap_or_default();
        let corpus = Corpus::shipped().unwrap_or_else(|e| panic!("{e}"));
        let env = |_: &str| None;
        let mut del = Delegator::new(&config, &tools, &templates, &corpus, &env, &fake_validate);
        del.context = context;
        del.run = check;
        let mut s = Script {
            answers,
            seen: Vec::new(),
        };
        let d = del.delegate(intent, &mut s);
        (d, s)
    }

    /// One provider `x` answering `answers` in turn.
    fn run_x(intent: &str, answers: &[&str]) -> (Delegation, Script) {
        let answers = answers.iter().map(|a| Ok(a.to_string())).collect();
        run(vec![ollama("x")], intent, answers)
    }

    /// [`run_x`], checking that the first attempt failed with `error_type`.
    fn first_fails(intent: &str, answers: &[&str], error_type: &str) -> Delegation {
        let (d, _) = run_x(intent, answers);
        assert_eq!(d.attempts[0].error_type(), Some(error_type), "{intent}");
        d
    }

    /// The answer of an endpoint that refuses connections.
    fn refused() -> Result<String, InferError> {
        Err(InferError::Unreachable {
            url: "http://127.0.0.1:9/api/generate".into(),
            detail: "refused".into(),
        })
    }

    fn ollama(name: &str) -> ProviderConfig {
        ProviderConfig::new(name, Plugin::Ollama)
    }

    #[test]
    fn template_wins_without_model_call() {
        let (d, s) = run(
            InferenceConfig::default().order,
            "read notes/todo.txt",
            vec![],
        );
        assert_eq!(d.program.as_deref(), Some("read_file(\"notes/todo.txt\")"));
        assert_eq!(d.provider.as_deref(), Some("templates"));
        assert!(s.seen.is_empty());
    }

    #[test]
    fn retry_with_hints_then_success() {
        let (d, s) = run(
            vec![ollama("small")],
            "tell me what a.txt says about cats",
            vec![
                Ok("```python\nf = open('a.txt')\nf.read()\n```".into()),
                Ok("read_file('a.txt')".into()),
            ],
        );
        assert_eq!(d.program.as_deref(), Some("read_file('a.txt')"));
        assert_eq!(d.attempts.len(), 2);
        assert_eq!(
            d.attempts[0].program.as_deref(),
            Some("f = open('a.txt')\nf.read()")
        );
        // The retry: the first prompt's system turn and example turns,
        // then one user turn with the rejected cell, errors and hints.
        let retry = &s.seen[1].messages;
        let first = &s.seen[0].messages;
        assert_eq!(retry.len(), first.len());
        assert_eq!(retry[..retry.len() - 1], first[..first.len() - 1]);
        let last = &retry[retry.len() - 1];
        assert_eq!(last.role, Role::User);
        assert!(
            last.content.contains("line 1")
                && last.content.contains("```python\nf = open('a.txt')")
                && last.content.contains("read_file(path) instead of open()"),
            "{}",
            last.content
        );
        assert_eq!(s.seen[1].temperature, Some(0.6));
        // The first prompt carries retrieved examples, as turns, after the namespace.
        assert!(first.len() > 3, "no example turns");
        assert_eq!(first[2].role, Role::Assistant);
        assert!(first[1].content.starts_with("# Task:"));
    }

    #[test]
    fn cascade_to_next_provider() {
        let (d, s) = run(
            vec![ollama("small"), ollama("big")],
            "summarise a.txt",
            vec![
                Ok("import os".into()),
                Ok("import sys".into()),
                Ok("read_file('a.txt')".into()),
            ],
        );
        assert_eq!(d.provider.as_deref(), Some("big"));
        assert_eq!(d.providers_tried(), ["small", "small", "big"]);
        assert_eq!(s.seen.len(), 3);
        assert!(d.error.is_none());
    }

    #[test]
    fn unreachable_then_validation_error_reported() {
        let (d, _) = run(
            vec![ollama("down"), ollama("bad")],
            "summarise a.txt",
            vec![refused(), Ok("import os".into()), Ok("import os".into())],
        );
        let e = d.error.unwrap_or_else(|| inference_error("none"));
        assert_eq!(e.kind, ErrorKind::Validation);
        assert!(
            e.message
                .starts_with("no provider produced a valid program"),
            "{}",
            e.message
        );
        assert_eq!(d.attempts[0].error_type(), Some("InferenceFailed"));
    }

    #[test]
    fn all_unreachable_names_url() {
        let (d, _) = run(vec![ollama("down")], "summarise a.txt", vec![refused()]);
        let e = d.error.unwrap_or_else(|| inference_error("none"));
        assert_eq!(
            (e.kind, e.type_name.as_str()),
            (ErrorKind::Tool, "InferenceFailed")
        );
        assert!(
            e.message.contains("http://127.0.0.1:9/api/generate"),
            "{}",
            e.message
        );
    }

    #[test]
    fn template_misfit_does_not_decide_the_final_error() {
        // The template matches but (here) does not validate; the model is down.
        let (d, _) = run(
            vec![
                ProviderConfig::new("templates", Plugin::Templates),
                ollama("down"),
            ],
            "open import.txt",
            vec![refused()],
        );
        assert_eq!(d.attempts.len(), 2);
        assert_eq!(
            d.attempts[0].error.as_ref().map(|e| e.kind),
            Some(ErrorKind::Validation)
        );
        assert_eq!(d.error.map(|e| e.kind), Some(ErrorKind::Tool));
    }

    #[test]
    fn bad_intents() {
        let (d, s) = run_x("   ", &[]);
        assert_eq!(d.error.map(|e| e.type_name), Some("BadIntent".into()));
        assert!(s.seen.is_empty());
        let (d, _) = run_x(&"x".repeat(MAX_INTENT_BYTES + 1), &[]);
        assert_eq!(d.error.map(|e| e.type_name), Some("BadIntent".into()));
    }

    #[test]
    fn huge_answer_is_refused_and_echo_bounded() {
        let (d, s) = run_x("do something", &[&"x".repeat(MAX_ANSWER_BYTES + 1)]);
        assert_eq!(s.seen.len(), 1, "no retry on a garbage-sized answer");
        assert!(d.attempts[0]
            .raw
            .as_ref()
            .is_some_and(|r| r.len() < MAX_RAW_ECHO_BYTES + 64));
        assert_eq!(echo("héllo", 2), "h… [5 more bytes]");
    }

    #[test]
    fn empty_answer_is_an_attempt() {
        let d = first_fails("do something", &["", "```\n```"], "EmptyProgram");
        // Two empty answers: the retry repeated the first, so one more call
        // (here the script is exhausted).
        assert_eq!(d.attempts.len(), 3);
        assert!(d.program.is_none());
    }

    #[test]
    fn comment_only_cell_is_not_a_program() {
        let d = first_fails(
            "summarise a.txt",
            &["# read a.txt and summarise it", "read_file('a.txt')"],
            "EmptyProgram",
        );
        assert_eq!(d.program.as_deref(), Some("read_file('a.txt')"));
    }

    #[test]
    fn constant_and_print_answers() {
        // A made-up constant is flagged; a trailing print(x) becomes x.
        let d = first_fails(
            "how many lines in a.txt",
            &["42", "print(len(read_file('a.txt').splitlines()))"],
            "NoToolCall",
        );
        assert_eq!(
            d.program.as_deref(),
            Some("len(read_file('a.txt').splitlines())")
        );
        let d = first_fails(
            "print each line of a.txt",
            &[
                // (A loop that prints is collected: see a_printing_loop_...)
                "for l in read_file('a.txt').splitlines():\n    n = len(l)",
                "read_file('a.txt').splitlines()",
            ],
            "NoResult",
        );
        assert!(d.program.is_some());
    }

    #[test]
    fn a_printing_loop_is_accepted_as_a_collecting_one() {
        let (d, s) = run_x(
            "the text files that mention cats",
            &["for p in find_files('*.txt'):\n    if 'cat' in read_file(p):\n        print(p)"],
        );
        assert_eq!(s.seen.len(), 1, "no retry");
        assert_eq!(
            d.program.as_deref(),
            Some("results = []\nfor p in find_files('*.txt'):\n    if 'cat' in read_file(p):\n        results.append(p)\nresults")
        );
    }

    #[test]
    fn repeated_retry_is_asked_again_differently() {
        let (d, s) = run_x(
            "summarise a.txt",
            &["import os", "import  os  # again", "read_file('a.txt')"],
        );
        assert_eq!(s.seen.len(), 3);
        assert!(s.seen[2]
            .messages
            .last()
            .expect("a turn")
            .content
            .contains("Write a different cell"));
        assert!(s.seen[2].temperature > s.seen[1].temperature);
        assert_eq!(d.program.as_deref(), Some("read_file('a.txt')"));
        // A retry that differs gets no third call.
        let (_, s) = run_x("summarise a.txt", &["import os", "import sys", "x"]);
        assert_eq!(s.seen.len(), 2);
    }

    /// With a fixed seed, each call of one delegation draws its own
    /// numbers (the seed plus the call's index): a retry with the first
    /// call's seed gave back the rejected cell even when warmer.
    #[test]
    fn each_call_of_a_delegation_has_its_own_seed() {
        let mut p = ollama("x");
        p.seed = Some(42);
        let answers = ["import os", "import  os  # again", "read_file('a.txt')"]
            .iter()
            .map(|a| Ok(a.to_string()))
            .collect();
        let (d, s) = run(vec![p], "summarise a.txt", answers);
        assert_eq!(d.program.as_deref(), Some("read_file('a.txt')"));
        let seeds: Vec<Option<u64>> = s.seen.iter().map(|r| r.endpoint.seed).collect();
        assert_eq!(seeds, [Some(42), Some(43), Some(44)]);
        // No seed configured: none is sent (the server draws its own).
        let (_, s) = run_x("summarise a.txt", &["import os", "read_file('a.txt')"]);
        assert!(s.seen.iter().all(|r| r.endpoint.seed.is_none()));
    }

    #[test]
    fn runtime_failure_falls_through_and_context_reaches_the_prompt() {
        // Programs reading missing.txt fail at run time.
        let run_check = |p: &str| {
            if p.contains("missing.txt") {
                RunCheck::Failed(ErrorInfo::new(
                    ErrorKind::Tool,
                    "FileNotFoundError",
                    "missing.txt: no such file",
                ))
            } else {
                RunCheck::Accept
            }
        };
        let (d, s) = run_in(
            vec![
                ProviderConfig::new("templates", Plugin::Templates),
                ollama("small"),
            ],
            2,
            Some("Workspace files:\n  notes/present.txt"),
            Some(&run_check),
            "read missing.txt",
            vec![
                Ok("read_file('missing.txt')".into()),
                Ok("read_file('notes/present.txt')".into()),
            ],
        );
        // The template's answer failed at run time: the model was asked.
        assert_eq!(d.attempts[0].provider, "templates");
        assert_eq!(d.attempts[0].error_type(), Some("FileNotFoundError"));
        assert!(s.seen[0].messages[0].content.contains("notes/present.txt"));
        // The model's first answer failed at run time too: retried with the error.
        assert!(s.seen[1]
            .messages
            .last()
            .expect("a turn")
            .content
            .contains("missing.txt: no such file"));
        assert_eq!(d.program.as_deref(), Some("read_file('notes/present.txt')"));
    }

    /// A run check: `find_files('*.md')` and `read_file('a.md')` run ok
    /// with an empty value, anything else ok with a value.
    fn empty_for_md(p: &str) -> RunCheck {
        if p.contains("'*.md'") || p.contains("'a.md'") {
            RunCheck::Empty("[]".into())
        } else {
            RunCheck::Accept
        }
    }

    #[test]
    fn an_empty_value_is_asked_again_once() {
        let ctx = Some("Workspace files:\n  docs/a.md");
        let markdown = |answers: &[&str]| {
            run_in(
                vec![ollama("x")],
                2,
                ctx,
                Some(&empty_for_md),
                "the markdown files",
                answers.iter().map(|a| Ok(a.to_string())).collect(),
            )
        };
        // A better second answer wins.
        let (d, s) = markdown(&["find_files('*.md')", "find_files('**/*.md')"]);
        assert_eq!(d.program.as_deref(), Some("find_files('**/*.md')"));
        assert_eq!(s.seen.len(), 2);
        let retry = &s.seen[1].messages.last().expect("a turn").content;
        assert!(
            retry.contains("EmptyResult: the cell ran, but its value is []")
                && retry.contains("Check every path, glob pattern"),
            "{retry}"
        );
        assert_eq!(d.attempts[0].error_type(), Some("EmptyResult"));
        // A worse one (rejected) leaves the first cell standing, its
        // attempt without an error; no third call.
        let (d, s) = markdown(&["find_files('*.md')", "import os", "x"]);
        assert_eq!(d.program.as_deref(), Some("find_files('*.md')"));
        assert_eq!((s.seen.len(), d.attempts[0].error_type()), (2, None));
        assert!(d.error.is_none());
        // The same cell again: it stands, no third call.
        let (d, s) = markdown(&["find_files('*.md')", "find_files( '*.md' )", "x"]);
        assert_eq!(d.program.as_deref(), Some("find_files( '*.md' )"));
        assert_eq!(s.seen.len(), 2);
        // Another empty cell: the second stands.
        let (d, s) = markdown(&["find_files('*.md')", "read_file('a.md')", "x"]);
        assert_eq!(d.program.as_deref(), Some("read_file('a.md')"));
        assert_eq!(s.seen.len(), 2);
        // Without the workspace view the model is not asked again.
        let (d, s) = run_in(
            vec![ollama("x")],
            2,
            None,
            Some(&empty_for_md),
            "the markdown files",
            vec![Ok("find_files('*.md')".into()), Ok("x".into())],
        );
        assert_eq!(d.program.as_deref(), Some("find_files('*.md')"));
        assert_eq!(s.seen.len(), 1);
        // Templates' empty values stand (no model to ask).
        let (d, s) = run_in(
            vec![
                ProviderConfig::new("templates", Plugin::Templates),
                ollama("x"),
            ],
            2,
            ctx,
            Some(&|_: &str| RunCheck::Empty("[]".into())),
            "read notes/todo.txt",
            vec![],
        );
        assert_eq!(d.provider.as_deref(), Some("templates"));
        assert!(s.seen.is_empty());
    }

    #[test]
    fn a_header_counted_as_a_row_is_sent_back() {
        let ty = |i: &str, p: &str| header_counted(i, p).map(|e| e.type_name);
        for (intent, program) in [
            (
                "map each csv file to its number of data rows",
                "{p: len(read_file(p).splitlines()) for p in find_files(\"**/*.csv\")}",
            ),
            (
                "how many rows does data/stock.csv have",
                "lines = read_file(\"data/stock.csv\")\nlen(lines.splitlines())",
            ),
            (
                "how many records are in data/a.TSV",
                "len(read_file('data/a.TSV').splitlines( ))",
            ),
        ] {
            let program = program.replace("( )", "()");
            assert_eq!(
                ty(intent, &program).as_deref(),
                Some("HeaderCounted"),
                "{program}"
            );
        }
        for (intent, program) in [
            // The header taken off, inside or after.
            (
                "map each csv file to its number of data rows",
                "{p: len(read_file(p).splitlines()) - 1 for p in find_files(\"**/*.csv\")}",
            ),
            (
                "how many rows does data/stock.csv have",
                "len(read_file(\"data/stock.csv\").splitlines()[1:])",
            ),
            // Not about rows, or not a table.
            (
                "how many lines does data/stock.csv have",
                "len(read_file(\"data/stock.csv\").splitlines())",
            ),
            (
                "how many rows of text does notes.txt have",
                "len(read_file(\"notes.txt\").splitlines())",
            ),
            // Not a count of the lines.
            (
                "the rows of data/stock.csv",
                "read_file(\"data/stock.csv\").splitlines()",
            ),
            (
                "the longest row of data/stock.csv",
                "max_len(read_file(\"data/stock.csv\").splitlines())",
            ),
        ] {
            assert_eq!(ty(intent, program), None, "{program}");
        }
        // A hostile answer of thousands of counts is not scanned at all.
        let huge = "len(read_file('a.csv').splitlines())\n".repeat(2000);
        assert_eq!(ty("how many rows does a.csv have", &huge), None);
    }

    #[test]
    fn characters_counted_as_lines_are_sent_back() {
        let ty = |i: &str, p: &str| characters_as_lines(i, p).map(|e| e.type_name);
        for (intent, program) in [
            (
                "the number of characters in notes/ideas.txt",
                "len(read_file(\"notes/ideas.txt\").splitlines())",
            ),
            (
                "the number of characters in setup.cfg",
                "len(read_file(\"setup.cfg\").splitlines()[2])",
            ),
            (
                "how many characters does README.md have",
                "sum(len(w) for w in read_file(\"README.md\").split())",
            ),
        ] {
            assert_eq!(
                ty(intent, program).as_deref(),
                Some("CharactersExpected"),
                "{program}"
            );
        }
        for (intent, program) in [
            (
                "the number of characters in setup.cfg",
                "len(read_file(\"setup.cfg\"))",
            ),
            (
                "the number of characters in the longest line of a.txt",
                "max(len(l) for l in read_file(\"a.txt\").splitlines())",
            ),
            (
                "the number of lines in a.txt",
                "len(read_file(\"a.txt\").splitlines())",
            ),
            (
                "the characters of each name",
                "[len(n) for n in read_file(\"a\").split(\",\")]",
            ),
            // A "." inside a string is no call.
            (
                "how many characters in a.txt",
                "len(read_file(\"a.split(x)\"))",
            ),
        ] {
            assert_eq!(ty(intent, program), None, "{intent}: {program}");
        }
    }

    #[test]
    fn what_the_task_asks_for_is_checked_against_the_values_shape() {
        let list = |len| {
            ValueShape::List(ListShape {
                len,
                ..ListShape::default()
            })
        };
        let records = ValueShape::List(ListShape {
            len: 2,
            records_with_file: true,
            ..ListShape::default()
        });
        let ty = |intent: &str, shape: &ValueShape| {
            shape_mismatch(intent, "", shape).map(|e| e.type_name)
        };
        // Whole split lines where a field or a text is asked.
        let rows = ValueShape::List(ListShape {
            len: 3,
            split_rows: true,
            ..ListShape::default()
        });
        for intent in [
            "the kitchen products sorted by stock, highest first",
            "the messages of the error lines in logs/server.log, without date, time and level",
        ] {
            assert_eq!(
                ty(intent, &rows).as_deref(),
                Some("FieldExpected"),
                "{intent}"
            );
        }
        for intent in [
            "the rows of data/orders.csv with status shipped",
            "the words of each line",
            "split each line at the commas",
        ] {
            assert_eq!(ty(intent, &rows), None, "{intent}");
        }
        // Whole table lines where a field is asked; not where lines or
        // rows are.
        let lines = ValueShape::List(ListShape {
            len: 1,
            table_lines: true,
            ..ListShape::default()
        });
        assert_eq!(
            ty("the stock items with fewer than 100 units", &lines).as_deref(),
            Some("FieldExpected")
        );
        let e = shape_mismatch(
            "the stock items with fewer than 100 units",
            "[s for s in read_file(\"data/stock.csv\").splitlines()[1:] if int(s.split(\",\")[2]) < 100]",
            &lines,
        )
        .map(|e| e.hint.unwrap_or_default())
        .unwrap_or_default();
        assert!(e.contains("[l.split(sep)[i] for l in [s for s in"), "{e}");
        for intent in [
            "the lines of data/orders.csv with status shipped",
            "the records of alice's orders",
            "the csv rows with an empty field",
        ] {
            assert_eq!(ty(intent, &lines), None, "{intent}");
        }
        let hint = shape_mismatch("the kitchen products", "rows = f()\nrows", &rows)
            .and_then(|e| e.hint)
            .unwrap_or_default();
        assert!(
            hint.contains("[r[i] for r in rows]") && hint.contains("\" \".join(r[i:])"),
            "{hint}"
        );
        // A count asked, a list given.
        for intent in [
            "how many places call money",
            "the number of TODO lines",
            "count the python files",
        ] {
            assert_eq!(
                ty(intent, &list(3)).as_deref(),
                Some("CountExpected"),
                "{intent}"
            );
            assert_eq!(
                ty(intent, &ValueShape::Dict { all_bool: false }).as_deref(),
                Some("CountExpected"),
                "{intent}"
            );
            assert_eq!(ty(intent, &ValueShape::Number), None, "{intent}");
        }
        // A count per group is a dict (or a list of pairs): not flagged.
        for intent in [
            "count the orders per status",
            "number of lines in each log file",
            "how many rows by file",
        ] {
            assert_eq!(
                ty(intent, &ValueShape::Dict { all_bool: false }),
                None,
                "{intent}"
            );
            assert_eq!(ty(intent, &list(2)), None, "{intent}");
        }
        // Files asked, whole records given.
        for intent in [
            "the files that call load_items",
            "which module defines Item",
            "modules using x",
        ] {
            assert_eq!(
                ty(intent, &records).as_deref(),
                Some("FilesExpected"),
                "{intent}"
            );
            assert_eq!(ty(intent, &list(2)), None, "{intent}");
        }
        assert_eq!(ty("every place that calls connect", &records), None);
        assert_eq!(ty("the lines of a.txt", &list(4)), None);
        // Files asked, their texts given.
        let texts = ValueShape::List(ListShape {
            len: 2,
            texts: true,
            ..ListShape::default()
        });
        assert_eq!(
            ty("source files with TODO markers", &texts).as_deref(),
            Some("FilesExpected")
        );
        assert_eq!(ty("the TODO lines", &texts), None);
        // One value per group asked, a list of pairs given.
        let pairs = ValueShape::List(ListShape {
            len: 3,
            pairs: true,
            ..ListShape::default()
        });
        for intent in [
            "count the orders per status",
            "map each csv file to its number of data rows",
        ] {
            assert_eq!(
                ty(intent, &pairs).as_deref(),
                Some("DictExpected"),
                "{intent}"
            );
            assert_eq!(ty(intent, &list(3)), None, "{intent}");
        }
        assert_eq!(ty("the callers of f with their line numbers", &pairs), None);
        // Which items asked, a verdict for each given.
        let verdicts = ValueShape::Dict { all_bool: true };
        for intent in [
            "which documents in docs mention refunds",
            "list the notes with open items",
        ] {
            assert_eq!(
                ty(intent, &verdicts).as_deref(),
                Some("ItemsExpected"),
                "{intent}"
            );
            assert_eq!(ty(intent, &ValueShape::Dict { all_bool: false }), None);
        }
        assert_eq!(ty("does each file mention refunds", &verdicts), None);
        // One item asked: int()/float() suggested only for a number as text.
        let one = |numbers_as_text| {
            ValueShape::List(ListShape {
                len: 1,
                numbers_as_text,
                ..ListShape::default()
            })
        };
        let hint = |shape| {
            shape_mismatch("the version in setup.cfg", "x = f()\nx", &shape)
                .and_then(|e| e.hint)
                .unwrap_or_default()
        };
        assert!(hint(one(true)).contains("int() or float()"));
        assert_eq!(
            hint(one(false)),
            "End the cell with x[0] (the item itself, not a list)."
        );
        // Text with spaces around it.
        let e = shape_mismatch(
            "the title of a.md without the leading #",
            "read_file(\"a.md\").splitlines()[0][1:]",
            &ValueShape::Str { padded: true },
        )
        .expect("a mismatch");
        assert_eq!(
            e.hint.as_deref(),
            Some("End the cell with read_file(\"a.md\").splitlines()[0][1:].strip().")
        );
        assert_eq!(ty("the title", &ValueShape::Str { padded: false }), None);
        let e = shape_mismatch("which docs mention x", "{p: 1 for p in a}", &verdicts)
            .expect("a mismatch");
        assert_eq!(
            e.hint.as_deref(),
            Some("End the cell with [k for k, v in {p: 1 for p in a}.items() if v] (the items themselves), or better, a list comprehension with an if.")
        );
        // The error carries its fix.
        let e = shape_mismatch(
            "how many places call money",
            "find_callers(\"money\")",
            &list(1),
        )
        .expect("a mismatch");
        assert!(e.message.contains("a list of 1 items"), "{}", e.message);
        assert_eq!(
            e.hint.as_deref(),
            Some("End the cell with len(find_callers(\"money\")).")
        );
        // A cell ending in an assignment or a block: the generic fix.
        let e = shape_mismatch("how many x", "n = f()\nfor a in n:\n    a", &list(2))
            .expect("a mismatch");
        assert!(e.hint.is_some_and(|h| h.contains("len(...) of the list")));
        // One thing asked, a list of one given.
        for intent in [
            "the customer of order 1006",
            "the version in setup.cfg",
            "the stock of the lamp",
            "the pinned requirement",
        ] {
            assert_eq!(
                ty(intent, &list(1)).as_deref(),
                Some("OneExpected"),
                "{intent}"
            );
            assert_eq!(ty(intent, &list(2)), None, "{intent}");
        }
        for intent in [
            "the stock items with fewer than 100 units",
            "the changes listed for version 0.3.0 in the changelog",
            "the TODO comments in the source",
            "the python files that define a class",
            "list the test files",
            "the names of all users",
            "which module calls format_line",
            "what does a.py import",
        ] {
            assert_eq!(ty(intent, &list(1)), None, "{intent}");
        }
        let e = shape_mismatch(
            "the customer of order 1006",
            "[r[1] for r in rows if r[0] == \"1006\"]",
            &list(1),
        )
        .expect("a mismatch");
        assert!(e.hint.is_some_and(|h| h.starts_with(
            "End the cell with [r[1] for r in rows if r[0] == \"1006\"][0] (the item itself"
        )),);
    }

    #[test]
    fn a_list_for_a_count_is_asked_again_once_with_the_view() {
        let ctx = Some("Workspace files:\n  a.py");
        let check = |p: &str| {
            if p.starts_with("len(") {
                RunCheck::Value(ValueShape::Number)
            } else {
                RunCheck::Value(ValueShape::List(ListShape {
                    len: 1,
                    records_with_file: true,
                    ..ListShape::default()
                }))
            }
        };
        let ask = |ctx, answers: &[&str]| {
            run_in(
                vec![ollama("x")],
                2,
                ctx,
                Some(&check),
                "how many python files are there",
                answers.iter().map(|a| Ok(a.to_string())).collect(),
            )
        };
        let (d, s) = ask(ctx, &["find_files('*.py')", "len(find_files('*.py'))"]);
        assert_eq!(d.program.as_deref(), Some("len(find_files('*.py'))"));
        let retry = &s.seen[1].messages.last().expect("a turn").content;
        assert!(
            retry.contains("CountExpected")
                && retry.contains("End the cell with len(find_files('*.py'))."),
            "{retry}"
        );
        // A retry with the same shape is taken as it is (no third call).
        let (d, s) = ask(ctx, &["find_files('*.py')", "find_files('*.py') + []"]);
        assert_eq!(d.program.as_deref(), Some("find_files('*.py') + []"));
        assert_eq!(s.seen.len(), 2);
        // Without the view: accepted as it is, no second call.
        let (d, s) = ask(None, &["find_files('*.py')", "x"]);
        assert_eq!(d.program.as_deref(), Some("find_files('*.py')"));
        assert_eq!(s.seen.len(), 1);
    }

    #[test]
    fn a_retry_of_only_the_last_line_is_spliced_into_the_cell() {
        // A toy validator: every name used must be assigned first.
        let ok = |p: &str| !p.contains("results") || p.contains("results = ");
        let prev = "results = [r for r in rows]\nresults";
        assert_eq!(
            splice_last_line(prev, "results[0]", &ok).as_deref(),
            Some("results = [r for r in rows]\nresults[0]")
        );
        // Comments and blank lines of the answer are not code.
        assert_eq!(
            splice_last_line(prev, "# fixed\nresults[0]\n", &ok).as_deref(),
            Some("results = [r for r in rows]\nresults[0]")
        );
        // A whole new cell, an answer valid alone, a one-line previous
        // cell, or a splice that still fails: left as it is.
        assert_eq!(splice_last_line(prev, "x = 1\nresults[0]", &ok), None);
        assert_eq!(splice_last_line(prev, "len(read_file('a'))", &ok), None);
        assert_eq!(splice_last_line("results", "results[0]", &ok), None);
        assert_eq!(splice_last_line("x = 1\nx", "results[0]", &ok), None);
        assert_eq!(splice_last_line(prev, "    results[0]", &ok), None);
    }

    #[test]
    fn a_one_line_fix_of_a_one_item_list_is_applied_to_the_cell() {
        let ctx = Some("Workspace files:\n  a.py");
        let check = |p: &str| {
            if p.ends_with("[0]") {
                RunCheck::Value(ValueShape::Str { padded: false })
            } else {
                RunCheck::Value(ValueShape::List(ListShape {
                    len: 1,
                    ..ListShape::default()
                }))
            }
        };
        let (d, s) = run_in(
            vec![ollama("x")],
            2,
            ctx,
            Some(&check),
            "the customer of order 1006",
            vec![
                Ok("results = find_files('*.py')\nresults".into()),
                Ok("results[0]".into()),
            ],
        );
        assert_eq!(
            d.program.as_deref(),
            Some("results = find_files('*.py')\nresults[0]")
        );
        let retry = &s.seen[1].messages.last().expect("a turn").content;
        assert!(
            retry.contains("OneExpected") && retry.contains("results[0]"),
            "{retry}"
        );
    }

    #[test]
    fn a_header_counted_as_a_row_is_asked_again_once_with_the_view() {
        let ctx = Some("Workspace files:\n  data/a.csv");
        let check = |_: &str| RunCheck::Value(ValueShape::Number);
        let all = "len(read_file('data/a.csv').splitlines())";
        let rows = "len(read_file('data/a.csv').splitlines()[1:])";
        let (d, s) = run_in(
            vec![ollama("x")],
            2,
            ctx,
            Some(&check),
            "how many data rows does data/a.csv have",
            vec![Ok(all.into()), Ok(rows.into())],
        );
        assert_eq!(d.program.as_deref(), Some(rows));
        let retry = &s.seen[1].messages.last().expect("a turn").content;
        assert!(
            retry.contains("HeaderCounted") && retry.contains("splitlines()[1:]"),
            "{retry}"
        );
    }

    #[test]
    fn whole_table_lines_get_one_expression_per_column() {
        let ctx = "Workspace files:\n  data/stock.csv\nFirst lines of data files:\ndata/stock.csv:\n  name,price,qty\n  bolt,0.10,500\n  (fields split by \",\"; line 0 is the header, data rows are lines[1:]; columns: 0 name, 1 price, 2 qty)\nnotes.txt:\n  hello\n";
        let program = "[s for s in read_file(\"data/stock.csv\").splitlines()[1:] if int(s.split(\",\")[2]) < 100]";
        let shape = ValueShape::List(ListShape {
            len: 1,
            table_lines: true,
            ..ListShape::default()
        });
        let e = shape_mismatch("the stock items with fewer than 100 units", program, &shape)
            .expect("whole table lines");
        let e = concrete_field_hint(e, program, ctx);
        assert_eq!(
            e.hint.as_deref(),
            Some(
                "End the cell with the field the task asks for from each line of data/stock.csv, one of: \
                 [l.split(\",\")[0] for l in [s for s in read_file(\"data/stock.csv\").splitlines()[1:] if int(s.split(\",\")[2]) < 100]] (name), \
                 [l.split(\",\")[1] for l in [s for s in read_file(\"data/stock.csv\").splitlines()[1:] if int(s.split(\",\")[2]) < 100]] (price), \
                 [l.split(\",\")[2] for l in [s for s in read_file(\"data/stock.csv\").splitlines()[1:] if int(s.split(\",\")[2]) < 100]] (qty)."
            )
        );
        // A table not in the view, or another error: the hint stands.
        let other = "[s for s in read_file(\"b.csv\").splitlines()]";
        let e2 = shape_mismatch("the stock items", other, &shape).expect("whole table lines");
        let before = e2.hint.clone();
        assert_eq!(concrete_field_hint(e2, other, ctx).hint, before);
        let pad = ErrorInfo::new(ErrorKind::Runtime, "PaddedText", "x");
        assert_eq!(concrete_field_hint(pad, program, ctx).hint, None);
    }

    #[test]
    fn an_answer_written_as_comments_is_taken_as_code() {
        // A toy validator: Python-looking lines, every name assigned or a
        // tool's.
        let ok = |p: &str| {
            p.contains('(')
                && !p.starts_with(char::is_uppercase)
                && !p.contains(": ")
                && !p.contains("This")
                && (!p.contains("rows") || p.contains("rows = "))
        };
        let task = "# Task: how many distinct products were ordered\n# each row r: r[2] product\n# its data rows: rows = [l.split(\",\") for l in read_file(\"a.csv\").splitlines()[1:]]";
        let echo = "# each row r: r[2] product\n";
        assert_eq!(
            uncommented_answer(
                task,
                &format!("{echo}# len(set(read_file('a.csv').splitlines()))"),
                &ok
            )
            .as_deref(),
            Some("len(set(read_file('a.csv').splitlines()))")
        );
        // Two lines of code, one with no space after its `#`.
        assert_eq!(
            uncommented_answer(task, &format!("{echo}# rows = [1]\n#len(rows)\n"), &ok).as_deref(),
            Some("rows = [1]\nlen(rows)")
        );
        // Code that parses but does not validate: taken, so the retry
        // names what is wrong with it.
        assert_eq!(
            uncommented_answer(task, &format!("{echo}# set(r[2] for r in rows)"), &ok).as_deref(),
            Some("set(r[2] for r in rows)")
        );
        // More trailing code lines than are taken: left as they are.
        let many = format!("{echo}{}", "# len(find_files('*'))\n".repeat(5000));
        assert_eq!(uncommented_answer(task, &many, &ok), None);
        // Prose, a bare word, the notes alone, a cell with code: left as
        // they are.
        for answer in [
            format!("{echo}# This counts the products"),
            format!("{echo}# products"),
            format!("{echo}# Count the distinct products (r[2])."),
            echo.to_string(),
            format!("{echo}len(find_files('*'))"),
            String::new(),
        ] {
            assert_eq!(uncommented_answer(task, &answer, &ok), None, "{answer}");
        }
    }

    #[test]
    fn a_line_indexed_in_a_key_function_is_sent_back() {
        let check = |_: &str| RunCheck::Value(ValueShape::Number);
        let bad = "max(read_file('data/a.csv').splitlines()[1:], key=lambda r: float(r[4]))[4]";
        let good = "max(float(l.split(',')[4]) for l in read_file('data/a.csv').splitlines()[1:])";
        let (d, s) = run_in(
            vec![ollama("x")],
            2,
            None,
            Some(&check),
            "the highest price in data/a.csv",
            vec![Ok(bad.into()), Ok(good.into())],
        );
        assert_eq!(d.program.as_deref(), Some(good));
        let retry = &s.seen[1].messages.last().expect("a turn").content;
        assert!(
            retry.contains("LineIndexed") && retry.contains("r.split(\",\")[4]"),
            "{retry}"
        );
    }

    #[test]
    fn a_cell_ignoring_the_file_the_task_names_is_asked_again_once() {
        let ctx = Some("Workspace files:\n  src/a.py\n  tests/test_b.py");
        let check = |_: &str| RunCheck::Value(ValueShape::Number);
        let scan = "len([p for p in find_files('**/*.py') if 'TODO' in read_file(p)])";
        let named = "len([l for l in read_file('tests/test_b.py').splitlines() if 'TODO' in l])";
        let (d, s) = run_in(
            vec![ollama("x")],
            2,
            ctx,
            Some(&check),
            "how many TODO lines does tests/test_b.py have",
            vec![Ok(scan.into()), Ok(named.into())],
        );
        assert_eq!(d.program.as_deref(), Some(named));
        let retry = &s.seen[1].messages.last().expect("a turn").content;
        assert!(
            retry.contains("NamedFileUnused") && retry.contains("read_file(\"tests/test_b.py\")"),
            "{retry}"
        );
        // A second answer that does not validate: the first cell stands.
        let (d, _) = run_in(
            vec![ollama("x")],
            2,
            ctx,
            Some(&check),
            "how many TODO lines does tests/test_b.py have",
            vec![Ok(scan.into()), Ok("len(".into())],
        );
        assert_eq!(d.program.as_deref(), Some(scan));
        // A path the task does not spell out: nothing to check.
        assert!(unused_named_file(scan, &[]).is_none());
        assert!(unused_named_file(named, &["tests/test_b.py"]).is_none());
        assert!(unused_named_file(named, &["TESTS/test_b.py"]).is_none());
    }

    #[test]
    fn a_line_indexed_as_a_row_loops_over_the_rows_the_task_showed() {
        let task = "the customers\n# data/o.csv is a table: its line 0 is the header \"id,customer\"; its data rows: rows = [l.split(\",\") for l in read_file(\"data/o.csv\").splitlines()[1:]]\n# each row r: r[0] id, r[1] customer";
        let rows = "[l.split(\",\") for l in read_file(\"data/o.csv\").splitlines()[1:]]";
        let ok = |_: &str| true;
        // Sliced and unsliced loops, a comprehension and a statement.
        assert_eq!(
            with_split_rows(
                task,
                "c = set()\nfor row in read_file(\"data/o.csv\").splitlines()[1:]:\n    c.add(row[1])\nsorted(c)",
                false,
                &ok
            ),
            Some(format!("c = set()\nfor row in {rows}:\n    c.add(row[1])\nsorted(c)"))
        );
        assert_eq!(
            with_split_rows(
                task,
                "sum(int(r[0]) for r in read_file(\"data/o.csv\").splitlines())",
                false,
                &ok
            ),
            Some(format!("sum(int(r[0]) for r in {rows})"))
        );
        // Nothing indexed as a field, another file, or the result does not
        // validate: left alone.
        for answer in [
            "[l for l in read_file(\"data/o.csv\").splitlines() if \"x\" in l]",
            "[r[1] for r in read_file(\"data/p.csv\").splitlines()[1:]]",
            // The line is also used as a str: split, it would fail.
            "[h[0] for h in read_file(\"data/o.csv\").splitlines() if h.strip()]",
            "[r[1] for r in read_file(\"data/o.csv\").splitlines()[1:] if \"x\" in r]",
        ] {
            assert_eq!(with_split_rows(task, answer, false, &ok), None, "{answer}");
        }
        let no = |_: &str| false;
        assert_eq!(
            with_split_rows(
                task,
                "[r[1] for r in read_file(\"data/o.csv\").splitlines()[1:]]",
                false,
                &no
            ),
            None
        );
        // A `key=lambda` over the lines, sliced like the rows or not: only
        // when asked for (a cell given again).
        let sorted =
            "sorted(read_file(\"data/o.csv\").splitlines()[1:], key=lambda r: int(r[0]))[:5]";
        assert_eq!(with_split_rows(task, sorted, false, &ok), None);
        assert_eq!(
            with_split_rows(task, sorted, true, &ok),
            Some(format!("sorted({rows}, key=lambda r: int(r[0]))[:5]"))
        );
        assert_eq!(
            with_split_rows(
                task,
                "max(read_file(\"data/o.csv\").splitlines(), key=lambda x: int(x[0]))",
                true,
                &ok
            ),
            Some(format!("max({rows}, key=lambda x: int(x[0]))"))
        );
        // The parameter also used as a str, or another slice: left alone.
        for answer in [
            "sorted(read_file(\"data/o.csv\").splitlines()[1:], key=lambda r: int(r[0]) + len(r))",
            "sorted(read_file(\"data/o.csv\").splitlines()[2:], key=lambda r: int(r[0]))",
        ] {
            assert_eq!(with_split_rows(task, answer, true, &ok), None, "{answer}");
        }
        // Through the cascade: the repaired answer runs without a retry.
        let ctx = Some("Workspace files:\n  data/o.csv\nFirst lines of data files:\ndata/o.csv:\n  id,customer\n  1,ann");
        let (d, s) = run_in(
            vec![ollama("x")],
            2,
            ctx,
            None,
            "the customers in data/o.csv",
            vec![Ok(
                "[r[1] for r in read_file(\"data/o.csv\").splitlines()[1:]]".into(),
            )],
        );
        assert_eq!(s.seen.len(), 1, "{:?}", d.attempts);
        assert_eq!(
            d.program.as_deref(),
            Some(format!("[r[1] for r in {rows}]").as_str())
        );
        // A key function over the lines goes back to the model first; given
        // again, it is rewritten.
        let (d, s) = run_in(
            vec![ollama("x")],
            2,
            ctx,
            None,
            "the customers in data/o.csv",
            vec![Ok(sorted.into()), Ok(sorted.into())],
        );
        assert_eq!(s.seen.len(), 2, "{:?}", d.attempts);
        assert_eq!(d.attempts[0].error_type(), Some("LineIndexed"));
        assert_eq!(
            d.program.as_deref(),
            Some(format!("sorted({rows}, key=lambda r: int(r[0]))[:5]").as_str())
        );
    }

    #[test]
    fn the_rows_line_the_task_showed_is_put_first_when_the_answer_lacks_it() {
        let task = "how many orders have status shipped\n# data/o.csv is a table: its line 0 is the header \"id,status\"; its data rows: rows = [l.split(\",\") for l in read_file(\"data/o.csv\").splitlines()[1:]]\n# each row r: r[0] id, r[1] status";
        let validates = |p: &str| p.contains("rows = ") || !p.contains("rows");
        let rows = "rows = [l.split(\",\") for l in read_file(\"data/o.csv\").splitlines()[1:]]";
        assert_eq!(
            with_shown_rows(
                task,
                "len([r for r in rows if r[1] == \"shipped\"])",
                &validates
            ),
            Some(format!(
                "{rows}\nlen([r for r in rows if r[1] == \"shipped\"])"
            ))
        );
        // It assigns rows itself, does not use it, or names it in a string only.
        for answer in [
            "rows = [1]\nlen(rows)",
            "len(read_file(\"data/o.csv\").splitlines())",
            "len(\"rows\")",
            "len(my_rows)",
        ] {
            assert_eq!(with_shown_rows(task, answer, &validates), None, "{answer}");
        }
        // Two tables shown: which rows is meant is not known.
        let two = format!("{task}\n# data/p.csv is a table: its line 0 is the header \"a,b\"; its data rows: rows = [l.split(\",\") for l in read_file(\"data/p.csv\").splitlines()[1:]]");
        assert_eq!(with_shown_rows(&two, "len(rows)", &validates), None);
        // Through the cascade: the repaired answer is used without a retry.
        let ctx = Some("Workspace files:\n  data/o.csv\nFirst lines of data files:\ndata/o.csv:\n  id,status\n  1,shipped");
        let (d, s) = run_in(
            vec![ollama("x")],
            2,
            ctx,
            None,
            "how many orders in data/o.csv are shipped",
            vec![Ok("len([r for r in rows if r[1] == \"shipped\"])".into())],
        );
        assert_eq!(s.seen.len(), 1);
        assert!(
            d.program
                .as_deref()
                .is_some_and(|p| p.starts_with("rows = [l.split(")),
            "{:?}",
            d.attempts
        );
    }

    #[test]
    fn a_missing_path_gets_the_listed_one() {
        let ctx = "Workspace files:\n  data/products.csv\n  notes/a.txt\nFirst lines of data files:\nx.csv:\n  a,b";
        let e = |m: &str| ErrorInfo::new(ErrorKind::Tool, "FileNotFound", m);
        let h = missing_path_hints(&[e("no such file: \"products.csv\"")], ctx);
        assert!(
            h[0].text.contains("the file is \"data/products.csv\""),
            "{:?}",
            h
        );
        let h = missing_path_hints(&[e("no such file: \"data.csv\"")], ctx);
        assert!(
            h[0].text.contains("use one of the paths listed above"),
            "{:?}",
            h
        );
        assert!(
            missing_path_hints(&[ErrorInfo::new(ErrorKind::Tool, "Other", "x")], ctx).is_empty()
        );
    }

    #[test]
    fn retrieval_query_adds_the_kind_of_named_files() {
        let ctx = "Workspace files:\n  data/orders.csv\n  logs/server.log\n  README.md\nFirst lines of data files:\ndata/orders.csv:\n  id,qty";
        assert_eq!(
            retrieval_query("how many orders have status shipped", Some(ctx)),
            "how many orders have status shipped csv"
        );
        assert_eq!(
            retrieval_query("errors in the server log", Some(ctx)),
            "errors in the server log log"
        );
        assert_eq!(retrieval_query("anything", None), "anything");
        // Named by what its shown lines hold: `qty` is a column.
        assert_eq!(
            retrieval_query("the largest qty", Some(ctx)),
            "the largest qty csv"
        );
    }

    #[test]
    fn a_file_whose_shown_lines_hold_the_tasks_words_is_named_last() {
        let ctx = "Workspace files:\n  data/orders.csv\n  data/products.csv\n  notes/a.txt\n\
                   First lines of data files:\ndata/orders.csv:\n  id,customer,product\n  1,ann,lamp\n\
                   data/products.csv:\n  sku,name,stock\n  L-01,lamp,14\nnotes/a.txt:\n  stock take on monday";
        // products.csv holds both words; orders.csv and a.txt one each.
        assert_eq!(
            named_paths("the stock of the lamp", ctx),
            ["data/products.csv"]
        );
        // A ties with B: both, in view order.
        assert_eq!(
            named_paths("stock", ctx),
            ["data/products.csv", "notes/a.txt"]
        );
        // A name match wins over content.
        assert_eq!(
            named_paths("the lamp in the orders", ctx),
            ["data/orders.csv"]
        );
        assert!(named_paths("nothing here", ctx).is_empty());
    }

    /// A `KeyError` in a cell reading a configuration file: the retry
    /// names the file's keys; an unknown name or any other error, or a
    /// cell reading no such file, gets nothing.
    #[test]
    fn a_missing_key_gets_the_files_keys() {
        let keys = [(
            "config/shop.ini",
            "\"[shop]\", \"name = …\", \"open_hour = …\", \"[report]\", \"day: …\"",
        )];
        let cell = "c = {}\nfor l in read_file(\"config/shop.ini\").splitlines():\n    pass\nc[\"timeout\"]";
        let key_error = |k: &str| ErrorInfo::new(ErrorKind::Runtime, "KeyError", format!("'{k}'"));
        let h = config_key_hints(&[key_error("timeout")], cell, &[], &keys);
        assert_eq!(h.len(), 1, "{h:?}");
        assert_eq!(h[0].text, "config/shop.ini has no key 'timeout': its \"key = value\" lines give the keys name, open_hour, day. Use the key the task means, spelled as the file spells it.");
        let h = config_key_hints(&[key_error("report")], cell, &[], &keys);
        assert!(
            h[0].text
                .starts_with("'report' is the section line [report] of config/shop.ini, not a key"),
            "{h:?}"
        );
        assert!(config_key_hints(&[key_error("day")], cell, &[], &keys).is_empty());
        // An unknown name gets none: listed beside `config is not
        // defined`, the keys kept the model writing `config["currency"]`.
        let unknown = ErrorInfo::new(
            ErrorKind::Validation,
            "UnknownName",
            "name 'config' is not defined: not a tool of the active profile, an allowed builtin, or a variable assigned in the program",
        );
        let h = config_key_hints(&[unknown], "config[\"open\"]", &["config/shop.ini"], &keys);
        assert!(h.is_empty(), "{h:?}");
        let other = ErrorInfo::new(ErrorKind::Runtime, "ValueError", "x");
        assert!(config_key_hints(&[other], cell, &[], &keys).is_empty());
        assert!(config_key_hints(&[key_error("x")], "read_file(\"a.ini\")", &[], &keys).is_empty());
    }

    /// A retry that fails in a way that first earns a hint from the
    /// configuration file's keys gets one more correction with it; a first
    /// retry that already had it does not.
    #[test]
    fn a_second_failure_with_the_files_keys_gets_one_more_call() {
        let ctx = Some("Workspace files:\n  config/shop.ini\nKeys of configuration files:\n  config/shop.ini: \"[shop]\", \"open_hour = …\", \"close_hour = …\"");
        let check = |p: &str| {
            if p.contains("[\"opening_hour\"]") {
                RunCheck::Failed(ErrorInfo::new(
                    ErrorKind::Runtime,
                    "KeyError",
                    "'opening_hour'",
                ))
            } else {
                RunCheck::Accept
            }
        };
        let read = "c = {l.split(\"=\")[0].strip(): l.split(\"=\")[1].strip() for l in read_file(\"config/shop.ini\").splitlines() if \"=\" in l}\n";
        let wrong = format!("{read}c[\"opening_hour\"]");
        let right = format!("{read}c[\"open_hour\"]");
        let intent = "the opening hour set in config/shop.ini";
        let (d, s) = run_in(
            vec![ollama("x")],
            2,
            ctx,
            Some(&check),
            intent,
            vec![Ok("import os".into()), Ok(wrong.clone()), Ok(right.clone())],
        );
        assert_eq!(s.seen.len(), 3, "{:?}", d.attempts);
        let third = &s.seen[2].messages.last().expect("a turn").content;
        assert!(
            third.contains("== \"open_hour\"][0]") && third.contains("has no key 'opening_hour'"),
            "{third}"
        );
        assert_eq!(d.program.as_deref(), Some(right.as_str()));
        // The first retry had the keys already: no third call.
        let (d, s) = run_in(
            vec![ollama("x")],
            2,
            ctx,
            Some(&check),
            intent,
            vec![
                Ok(wrong.clone()),
                Ok(format!("{read}c[\"opening_hour\"]  # again")),
                Ok(right),
            ],
        );
        assert_eq!(
            s.seen.len(),
            3,
            "a repeat still gets its call: {:?}",
            d.attempts
        );
        let (_, s) = run_in(
            vec![ollama("x")],
            2,
            ctx,
            Some(&check),
            intent,
            vec![Ok(wrong), Ok("import sys".into()), Ok("1".into())],
        );
        assert_eq!(s.seen.len(), 2);
    }

    /// A run-time failure in a cell reading a configuration file the task
    /// spells out: when the task's words pick one key, the retry gets the
    /// expression reading its value.
    #[test]
    fn the_key_the_task_names_gets_the_expression_reading_it() {
        let keys = [(
            "config/shop.ini",
            "\"[shop]\", \"name = …\", \"open_hour = …\", \"close_hour = …\", \"[report]\", \"day: …\"",
        )];
        let spelled = ["config/shop.ini"];
        let cell = "c = {}\nfor l in read_file(\"config/shop.ini\").splitlines():\n    pass\nc[\"timeout\"]";
        let failed = ErrorInfo::new(ErrorKind::Runtime, "KeyError", "'timeout'");
        let hint = |intent: &str| {
            config_value_hint(intent, std::slice::from_ref(&failed), cell, &spelled, &keys)
                .map(|h| h.text)
        };
        assert_eq!(
            hint("the report day in config/shop.ini").as_deref(),
            Some("The task asks for config/shop.ini's key day: its value is [l.split(\":\", 1)[1].strip() for l in read_file(\"config/shop.ini\").splitlines() if l.split(\":\", 1)[0].strip() == \"day\"][0]")
        );
        // A word in another form, and the better of two partial matches.
        assert!(hint("the opening hour set in config/shop.ini")
            .is_some_and(|h| h.contains("== \"open_hour\"")));
        // No key named, two equally named, or only the path's own words.
        for intent in [
            "section names of config/shop.ini, sorted",
            "all the settings in config/shop.ini",
            "the hour in config/shop.ini",
            "what is in config/shop.ini",
        ] {
            assert_eq!(hint(intent), None, "{intent}");
        }
        assert!(hint("the shop name in config/shop.ini").is_some_and(|h| h.contains("== \"name\"")));
        // Not for a validation error, a file the task does not spell out,
        // or a cell that does not read it.
        let invalid = ErrorInfo::new(ErrorKind::Validation, "UnknownName", "name 'c'");
        assert!(config_value_hint("the report day", &[invalid], cell, &spelled, &keys).is_none());
        assert!(config_value_hint(
            "the report day",
            std::slice::from_ref(&failed),
            cell,
            &[],
            &keys
        )
        .is_none());
        assert!(config_value_hint(
            "the report day in config/shop.ini",
            std::slice::from_ref(&failed),
            "c[\"day\"]",
            &spelled,
            &keys
        )
        .is_none());
    }

    #[test]
    fn files_named_by_the_task_go_next_to_it() {
        let ctx = "Workspace files:\n  data/orders.csv\n  data/users.csv\n  notes/a.txt\n  docs/shipping.md\n\
                   First lines of data files:\ndata/orders.csv:\n  id,qty,status\n  1,2,shipped\n  (layout)\n\
                   notes/a.txt:\n  hello";
        // A table: the code that splits its rows, each column's index and
        // its first row; a data line of a head is never taken for a path.
        assert_eq!(
            task_files("total qty of the orders", ctx),
            [
                "# data/orders.csv is a table: its line 0 is the header \"id,qty,status\"; its data rows: rows = [l.split(\",\") for l in read_file(\"data/orders.csv\").splitlines()[1:]]",
                "# each row r: r[0] id, r[1] qty, r[2] status (first row: 1,2,shipped)",
            ]
        );
        assert!(task_files("something else", ctx).is_empty());
        // A path spelled out wins over files sharing a word (`data`).
        assert_eq!(
            named_paths("how many rows in data/orders.csv.", ctx),
            ["data/orders.csv"]
        );
        // The file's name before its directory's.
        assert_eq!(named_paths("the pending orders", ctx), ["data/orders.csv"]);
        assert_eq!(named_paths("all the notes", ctx), ["notes/a.txt"]);
        assert_eq!(
            task_files("what do the notes say", ctx),
            ["# read_file(\"notes/a.txt\").splitlines() starts [\"hello\"]"]
        );
        // A log: its lines and its words in capitals.
        let ctx = "Workspace files:\n  logs/app.log\nFirst lines of data files:\nlogs/app.log:\n  09:00 INFO up\n  (words in capitals: INFO, WARN)";
        assert_eq!(
            task_files("warnings in the app log", ctx),
            ["# read_file(\"logs/app.log\").splitlines() starts [\"09:00 INFO up\"]; words in capitals: INFO, WARN"]
        );
    }
}
