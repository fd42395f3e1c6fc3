//! The two zero-cost providers — templates and rules — and the ratchet that
//! turns repeated successful generations into workspace templates.
//!
//! Templates are intent patterns with `{slots}`; a slot matches one
//! word-like token (a path or a glob: no whitespace) and is substituted as
//! a Python string literal, so an intent can never inject code into a
//! template. Rules are keyword patterns that fire only when every content
//! word of the intent is covered by the rule's vocabulary, so "read a.txt
//! and count its TODOs" is left to a model rather than half-answered.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Longest intent the template matcher looks at, in bytes. Why: matching
/// is O(segments × n²); longer intents are never template-shaped anyway.
const MAX_MATCH_BYTES: usize = 1024;

/// Most segments (literal runs and slots) a pattern may have. Why: the
/// matcher recurses once per segment, and a workspace templates file is
/// not trusted to be sane.
const MAX_SEGMENTS: usize = 32;

/// Largest workspace templates or ratchet file read, in bytes.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Read a small file of the workspace's control directory (`name` inside
/// `.lackpy/`), beneath the workspace's descriptor, no symlink followed;
/// `Ok(None)` when it does not exist.
fn read_small(ws: &Path, name: &str) -> Result<Option<String>, TemplateError> {
    match lackpy_beneath::open_control(ws, false)? {
        None => Ok(None),
        Some(ctl) => Ok(ctl.read_text(name, MAX_FILE_BYTES)?),
    }
}

/// One template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Template {
    /// A name for traces.
    #[serde(default)]
    pub name: String,
    /// Patterns with `{slot}`s.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<String>,
    /// A single pattern (the original lackpy's spelling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// An exact normalised intent (written by the ratchet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
    /// The program, with `{slot}` placeholders.
    pub program: String,
    /// Provider whose output was promoted (ratchet templates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub promoted_from: Option<String>,
    /// The profile it was promoted under; such a template answers only
    /// under that profile (ratchet templates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct TemplatesFile {
    #[serde(default)]
    templates: Vec<Template>,
}

/// The shipped templates (TOML text).
pub const SHIPPED_TEMPLATES: &str = include_str!("../corpus/templates.toml");

/// Why templates could not be loaded or saved.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TemplateError {
    /// Not the expected TOML.
    #[error("{file}: {detail}")]
    Parse {
        /// Which file.
        file: String,
        /// The parser's message.
        detail: String,
    },
    /// Reading or writing failed.
    #[error("{file}: {source}")]
    Io {
        /// Which file.
        file: String,
        /// The error.
        source: std::io::Error,
    },
    /// A control file was refused (a symlink, not a regular file, too
    /// large) or could not be opened beneath the workspace.
    #[error(transparent)]
    Control(#[from] lackpy_beneath::Error),
}

/// Lowercase, collapse whitespace, drop trailing punctuation.
pub fn normalise_intent(intent: &str) -> String {
    let s = intent
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    s.trim_end_matches(['.', '!', '?', ':', ';', ','])
        .trim()
        .to_string()
}

/// The ratchet's key for an intent: whitespace collapsed, trailing
/// punctuation dropped, words lowercased, but literals kept exact — a word
/// with a `.`, `/`, `*`, `_`, digit or quote, or with a capital after its
/// first letter (`A.txt`, `TODO`, `parse_line`), so "summarise A.txt" and
/// "summarise a.txt" are different intents.
pub fn ratchet_key(intent: &str) -> String {
    let words: Vec<String> = intent
        .split_whitespace()
        .map(|w| {
            let literal = w
                .chars()
                .any(|c| ".*/_\"'`".contains(c) || c.is_ascii_digit())
                || w.chars().skip(1).any(char::is_uppercase);
            if literal {
                w.to_string()
            } else {
                w.to_lowercase()
            }
        })
        .collect();
    words
        .join(" ")
        .trim_end_matches(['.', '!', '?', ':', ';', ','])
        .trim()
        .to_string()
}

/// A Python string literal for `s` (double-quoted, escaped).
pub fn py_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[derive(Debug, PartialEq)]
enum Seg {
    Lit(String),
    Slot(String),
}

fn segments(pattern: &str) -> Vec<Seg> {
    let p = normalise_intent(pattern);
    let mut out = Vec::new();
    let mut rest = p.as_str();
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            break;
        };
        let name = &rest[open + 1..close];
        if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
            break;
        }
        if open > 0 {
            out.push(Seg::Lit(rest[..open].to_string()));
        }
        out.push(Seg::Slot(name.to_string()));
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        out.push(Seg::Lit(rest.to_string()));
    }
    out
}

/// A slot value: one token, quotes stripped; `None` when not token-shaped.
fn slot_value(raw: &str) -> Option<String> {
    let v = raw.trim().trim_matches(['"', '\'', '`']);
    if v.is_empty() || v.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return None;
    }
    Some(v.to_string())
}

/// A slot named `path` takes only a path-like token (a `.` or `/`, no
/// glob characters), one named `pattern` only a glob or path (`*`, `?`,
/// `[`, `.` or `/`): "find TODO" is not a file pattern, and "list python"
/// not a path, so those intents go to a model instead of a wrong answer.
fn slot_fits(name: &str, v: &str) -> bool {
    match name {
        "path" => v.contains(['.', '/']) && !v.contains(['*', '?']),
        "pattern" => v.contains(['*', '?', '[', '.', '/']),
        _ => true,
    }
}

/// Match `intent` (normalised) against a pattern; the slot captures.
fn match_pattern(pattern: &str, intent: &str) -> Option<BTreeMap<String, String>> {
    let segs = segments(pattern);
    if segs.len() > MAX_SEGMENTS {
        return None;
    }
    // Captures must keep the original case (paths); match on a lowercase copy
    // of the same length. Only ASCII lowercasing keeps byte offsets aligned.
    let lower = intent.to_ascii_lowercase();
    let mut caps = BTreeMap::new();
    if go(&segs, &lower, intent, 0, &mut caps) {
        Some(caps)
    } else {
        None
    }
}

fn go(
    segs: &[Seg],
    lower: &str,
    orig: &str,
    pos: usize,
    caps: &mut BTreeMap<String, String>,
) -> bool {
    let Some((first, rest)) = segs.split_first() else {
        return pos == lower.len();
    };
    match first {
        Seg::Lit(l) => {
            lower.get(pos..).is_some_and(|s| s.starts_with(l.as_str()))
                && go(rest, lower, orig, pos + l.len(), caps)
        }
        Seg::Slot(name) => {
            // A slot is one token: it ends at the next space or the end.
            let tail = lower.get(pos..).unwrap_or("");
            let end = tail.find(' ').map_or(lower.len(), |i| pos + i);
            if end == pos {
                return false;
            }
            let Some(v) = orig
                .get(pos..end)
                .and_then(slot_value)
                .filter(|v| slot_fits(name, v))
            else {
                return false;
            };
            caps.insert(name.clone(), v);
            if go(rest, lower, orig, end, caps) {
                return true;
            }
            caps.remove(name);
            false
        }
    }
}

impl Template {
    fn all_patterns(&self) -> impl Iterator<Item = &String> {
        self.patterns.iter().chain(self.pattern.iter())
    }

    /// The program for `intent`, if this template matches it.
    pub fn apply(&self, intent: &str) -> Option<String> {
        if let Some(exact) = &self.intent {
            return (ratchet_key(exact) == ratchet_key(intent)).then(|| self.program.clone());
        }
        // Keep the intent's case for captures, with normalised spacing/punctuation.
        let norm = intent.split_whitespace().collect::<Vec<_>>().join(" ");
        let norm = norm
            .trim_end_matches(['.', '!', '?', ':', ';', ','])
            .trim()
            .to_string();
        if norm.len() > MAX_MATCH_BYTES {
            return None;
        }
        for p in self.all_patterns() {
            if let Some(caps) = match_pattern(p, &norm) {
                return Some(substitute(&self.program, &caps));
            }
        }
        None
    }
}

/// `program` with every `{slot}` that has a capture replaced by the
/// capture as a Python string literal, in one left-to-right pass: an
/// inserted literal is never scanned again, so a capture that itself looks
/// like `{other}` stays inside its literal (replacing slot by slot would
/// substitute into the first literal and split it open).
fn substitute(program: &str, caps: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(program.len());
    let mut rest = program;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let slot = after
            .find('}')
            .map(|close| (&after[..close], &after[close + 1..]))
            .and_then(|(name, tail)| caps.get(name).map(|v| (v, tail)));
        match slot {
            Some((v, tail)) => {
                out.push_str(&py_str(v));
                rest = tail;
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Templates in the order they are tried (workspace first, then shipped).
#[derive(Debug, Clone, Default)]
pub struct TemplateSet {
    /// The templates.
    pub templates: Vec<Template>,
}

impl TemplateSet {
    /// Parse a templates file's text.
    ///
    /// # Errors
    /// [`TemplateError::Parse`] naming `file`.
    pub fn parse(text: &str, file: &str) -> Result<Vec<Template>, TemplateError> {
        Ok(parse_templates_file(text, file)?.templates)
    }

    /// The workspace's `.lackpy/templates.toml` (if present) then the shipped ones.
    ///
    /// # Errors
    /// A workspace file that exists but cannot be read or parsed.
    pub fn load(workspace: Option<&Path>) -> Result<Self, TemplateError> {
        let mut templates = Vec::new();
        if let Some(ws) = workspace {
            let path = templates_path(ws);
            if let Some(text) = read_small(ws, TEMPLATES_FILE)? {
                templates.extend(Self::parse(&text, &path.display().to_string())?);
            }
        }
        templates.extend(Self::parse(SHIPPED_TEMPLATES, "shipped templates")?);
        Ok(TemplateSet { templates })
    }

    /// [`TemplateSet::load`], keeping only templates for `profile` (a
    /// template promoted under another profile is dropped).
    ///
    /// # Errors
    /// As [`TemplateSet::load`].
    pub fn load_for(workspace: Option<&Path>, profile: &str) -> Result<Self, TemplateError> {
        let mut t = Self::load(workspace)?;
        t.templates
            .retain(|t| t.profile.as_deref().is_none_or(|p| p == profile));
        Ok(t)
    }

    /// The first template matching `intent`: (template name, program).
    pub fn find(&self, intent: &str) -> Option<(String, String)> {
        self.templates
            .iter()
            .find_map(|t| t.apply(intent).map(|p| (t.name.clone(), p)))
    }
}

/// The workspace templates file's name in `.lackpy/`.
const TEMPLATES_FILE: &str = "templates.toml";
/// The ratchet file's name in `.lackpy/`.
const RATCHET_FILE: &str = "ratchet.json";

/// `<ws>/.lackpy/templates.toml` (for messages: it is opened beneath the workspace).
pub fn templates_path(ws: &Path) -> PathBuf {
    ws.join(lackpy_beneath::CONTROL_DIR).join(TEMPLATES_FILE)
}

/// `<ws>/.lackpy/ratchet.json`: success counts per normalised intent.
pub fn ratchet_path(ws: &Path) -> PathBuf {
    ws.join(lackpy_beneath::CONTROL_DIR).join(RATCHET_FILE)
}

// ---------------------------------------------------------------- rules

/// Words a rule may leave uncovered (fillers).
const FILLER: &[&str] = &[
    "a",
    "an",
    "the",
    "all",
    "every",
    "of",
    "in",
    "me",
    "please",
    "file",
    "files",
    "contents",
    "content",
    "content of",
    "are",
    "there",
    "is",
    "does",
    "do",
    "have",
    "has",
    "under",
    "from",
    "inside",
    "within",
    "that",
    "this",
    "my",
    "of the",
];

fn file_type_glob(word: &str) -> Option<&'static str> {
    Some(match word {
        "python" | "py" => "**/*.py",
        "markdown" | "md" => "**/*.md",
        "text" | "txt" => "**/*.txt",
        "rust" | "rs" => "**/*.rs",
        "json" => "**/*.json",
        "csv" => "**/*.csv",
        "yaml" | "yml" => "**/*.yaml",
        "toml" => "**/*.toml",
        "javascript" | "js" => "**/*.js",
        "typescript" | "ts" => "**/*.ts",
        "html" => "**/*.html",
        "log" => "**/*.log",
        _ => return None,
    })
}

fn is_pathlike(tok: &str) -> bool {
    let t = tok.trim_matches(['"', '\'', '`']);
    !t.is_empty()
        && !t.contains('*')
        && (t.contains('/')
            || t.rsplit_once('.').is_some_and(|(a, b)| {
                !a.is_empty() && !b.is_empty() && b.chars().all(|c| c.is_ascii_alphanumeric())
            }))
        && t.chars().all(|c| c.is_alphanumeric() || "._-/".contains(c))
}

fn is_globlike(tok: &str) -> bool {
    let t = tok.trim_matches(['"', '\'', '`']);
    (t.contains('*') || t.contains('?'))
        && t.chars()
            .all(|c| c.is_alphanumeric() || "._-/*?[]".contains(c))
}

/// The keyword-rule provider: a program for `intent`, or `None`.
pub fn rules(intent: &str) -> Option<(String, String)> {
    let raw: Vec<String> = intent
        .split_whitespace()
        .map(|w| {
            w.trim_end_matches([',', '.', '?', '!', ';', ':'])
                .to_string()
        })
        .collect();
    if raw.is_empty() || raw.len() > 12 {
        return None;
    }
    let lower: Vec<String> = raw.iter().map(|w| w.to_lowercase()).collect();
    let has = |w: &str| lower.iter().any(|x| x == w);
    let path = raw
        .iter()
        .find(|w| is_pathlike(w))
        .map(|w| w.trim_matches(['"', '\'', '`']).to_string());
    let glob = raw
        .iter()
        .find(|w| is_globlike(w))
        .map(|w| w.trim_matches(['"', '\'', '`']).to_string());
    let ftype = lower
        .iter()
        .find_map(|w| file_type_glob(w))
        .map(str::to_string);
    // "number" counts only as "number of" ("number the lines" is not a count).
    let number_of = lower.windows(2).any(|w| w[0] == "number" && w[1] == "of");
    let counting = has("count") || (has("how") && has("many")) || number_of;
    let covered = |extra: &[&str]| {
        lower.iter().zip(raw.iter()).all(|(l, r)| {
            FILLER.contains(&l.as_str())
                || extra.contains(&l.as_str())
                || Some(r.trim_matches(['"', '\'', '`'])) == path.as_deref()
                || Some(r.trim_matches(['"', '\'', '`'])) == glob.as_deref()
                || file_type_glob(l).is_some()
        })
    };
    const COUNT: &[&str] = &["count", "how", "many", "number", "total"];
    const LIST: &[&str] = &[
        "list", "find", "show", "which", "what", "get", "glob", "search", "for",
    ];
    const READ: &[&str] = &[
        "read", "show", "print", "cat", "display", "view", "open", "get", "what's", "what", "whats",
    ];
    if let Some(p) = &path {
        // Counting the lines or the words of one file.
        for (rule, unit, method) in [
            ("count-lines", &["lines", "line"][..], ".splitlines()"),
            ("count-words", &["words", "word"][..], ".split()"),
            (
                "count-characters",
                &["characters", "character", "chars"][..],
                "",
            ),
        ] {
            if counting && unit.iter().any(|u| has(u)) && covered(&[COUNT, unit].concat()) {
                return Some((
                    rule.into(),
                    format!("len(read_file({}){method})", py_str(p)),
                ));
            }
        }
        if !counting && lower.iter().any(|w| READ.contains(&w.as_str())) && covered(READ) {
            return Some(("read".into(), format!("read_file({})", py_str(p))));
        }
        return None;
    }
    // Every file, with no type or pattern: "list all files", "every file
    // of the workspace".
    const WHOLE: &[&str] = &["workspace", "project", "repository", "repo"];
    if glob.is_none()
        && ftype.is_none()
        && (has("files") || has("all") || has("every"))
        && (has("file") || has("files"))
    {
        if counting && covered(&[COUNT, WHOLE].concat()) {
            return Some(("count-all-files".into(), "len(find_files(\"**/*\"))".into()));
        }
        if !counting && covered(&[LIST, WHOLE].concat()) {
            return Some(("all-files".into(), "find_files(\"**/*\")".into()));
        }
    }
    let pattern = glob.clone().or(ftype)?;
    if counting && covered(COUNT) {
        return Some((
            "count-files".into(),
            format!("len(find_files({}))", py_str(&pattern)),
        ));
    }
    if lower.iter().any(|w| LIST.contains(&w.as_str())) && covered(&[LIST, &["files"]].concat()) {
        return Some((
            "find-files".into(),
            format!("find_files({})", py_str(&pattern)),
        ));
    }
    None
}

// -------------------------------------------------------------- ratchet

/// One (intent, profile)'s record in `ratchet.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RatchetEntry {
    /// The last confirmed program.
    pub program: String,
    /// Consecutive confirmed successes with this program.
    pub successes: u32,
    /// Provider that produced it.
    pub provider: String,
}

/// A delegate run that ran ok and waits for the caller's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingRun {
    /// The intent as asked.
    pub intent: String,
    /// The profile it ran under.
    pub profile: String,
    /// The program.
    pub program: String,
    /// Provider that produced it.
    pub provider: String,
}

/// Most runs kept waiting for a verdict. Why: unconfirmed runs would
/// otherwise grow the file without bound; the oldest are dropped.
const MAX_PENDING: usize = 200;

#[derive(Debug, Default, Serialize, Deserialize)]
struct RatchetFile {
    /// Keyed by `profile` + U+001F + [`ratchet_key`] of the intent.
    #[serde(default)]
    intents: BTreeMap<String, RatchetEntry>,
    /// Runs awaiting confirmation, by run id (with an insertion counter
    /// to drop the oldest).
    #[serde(default)]
    pending: BTreeMap<String, (u64, PendingRun)>,
    #[serde(default)]
    seq: u64,
}

/// What the ratchet did with a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ratchet {
    /// Counted; confirmed successes so far.
    Counted(u32),
    /// Stored as a workspace template.
    Promoted,
    /// Kept until the caller confirms or rejects it (by run id).
    Pending,
    /// A failure or rejection: the count was reset (and `true` when a
    /// promoted template was removed).
    Reset(bool),
    /// Nothing to do (counting is off, or the program came from a template).
    Skipped,
}

/// How the ratchet treats a delegate result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RatchetPolicy {
    /// Confirmed successes before promotion; 0 = never count nor promote
    /// (except `force`).
    pub promote_after: u32,
    /// Count a run that ran ok as confirmed (default false: only the
    /// caller's confirmation counts).
    pub count_unconfirmed: bool,
    /// Promote now (`lackpy delegate --promote`).
    pub force: bool,
}

fn ratchet_entry_key(profile: &str, intent: &str) -> String {
    format!("{profile}\u{1f}{}", ratchet_key(intent))
}

/// One read-modify-write of the ratchet file at a time in this process
/// (MCP runs delegate calls concurrently); a poisoned lock only means
/// another call panicked.
fn with_ratchet<T>(
    ws: &Path,
    f: impl FnOnce(&mut RatchetFile) -> Result<T, TemplateError>,
) -> Result<T, TemplateError> {
    with_ratchet_if(ws, |file| f(file).map(|t| (t, true)))
}

/// As [`with_ratchet`]; the file is written only when `f` says it changed.
fn with_ratchet_if<T>(
    ws: &Path,
    f: impl FnOnce(&mut RatchetFile) -> Result<(T, bool), TemplateError>,
) -> Result<T, TemplateError> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = LOCK
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let rpath = ratchet_path(ws);
    let mut file: RatchetFile = match read_small(ws, RATCHET_FILE)? {
        // A file in the old shape (or damaged) starts afresh rather than
        // blocking every delegate call.
        Some(t) => serde_json::from_str(&t).unwrap_or_default(),
        None => RatchetFile::default(),
    };
    let (out, changed) = f(&mut file)?;
    if !changed {
        return Ok(out);
    }
    let json = ratchet_text_within(&mut file).map_err(|detail| TemplateError::Parse {
        file: rpath.display().to_string(),
        detail,
    })?;
    write_atomic(ws, RATCHET_FILE, &json)?;
    Ok(out)
}

/// The ratchet file's text, kept within [`MAX_FILE_BYTES`] (which is all
/// that is ever read back) by forgetting the oldest runs waiting for a
/// verdict, then counts in key order. Why: intents (8 KiB) and programs
/// (64 KiB) are a client's and a model's; written unbounded, a file over
/// the cap stopped the ratchet for good (every later read failed).
///
/// # Errors
/// The file cannot be serialised.
fn ratchet_text_within(file: &mut RatchetFile) -> Result<String, String> {
    loop {
        let json = serde_json::to_string_pretty(&*file).map_err(|e| e.to_string())?;
        if json.len() as u64 <= MAX_FILE_BYTES {
            return Ok(json);
        }
        let oldest = file
            .pending
            .iter()
            .min_by_key(|(_, (n, _))| *n)
            .map(|(k, _)| k.clone());
        if let Some(k) = oldest {
            file.pending.remove(&k);
        } else if file.intents.pop_first().is_none() {
            return Err(format!(
                "larger than {MAX_FILE_BYTES} bytes however little is kept"
            ));
        }
    }
}

/// Record the outcome of a delegate run (`ok`: it validated and ran ok).
///
/// A failure resets the count of its (intent, profile) and removes a
/// template promoted for it. A success is counted only when
/// `count_unconfirmed`; otherwise it waits under `run_id` for
/// [`confirm`]. `force` promotes a success at once. A program that came
/// from a template is not counted again, but its failure still demotes.
///
/// # Errors
/// The ratchet or templates file cannot be read or written.
#[allow(clippy::too_many_arguments)]
pub fn record_result(
    ws: &Path,
    intent: &str,
    profile: &str,
    program: &str,
    provider: &str,
    ok: bool,
    run_id: &str,
    policy: RatchetPolicy,
) -> Result<Ratchet, TemplateError> {
    if !ok {
        return reset(ws, intent, profile);
    }
    if policy.force {
        promote_template(ws, intent, profile, program, provider)?;
        with_ratchet(ws, |f| {
            f.intents.remove(&ratchet_entry_key(profile, intent));
            Ok(())
        })?;
        return Ok(Ratchet::Promoted);
    }
    // A template's result is not counted again, but it waits for a
    // verdict too: a rejection removes a promoted template.
    if policy.promote_after == 0 || (provider == "templates" && policy.count_unconfirmed) {
        return Ok(Ratchet::Skipped);
    }
    let run = PendingRun {
        intent: intent.to_string(),
        profile: profile.to_string(),
        program: program.to_string(),
        provider: provider.to_string(),
    };
    if policy.count_unconfirmed {
        return count(ws, &run, policy.promote_after);
    }
    if run_id.is_empty() {
        return Ok(Ratchet::Skipped);
    }
    with_ratchet(ws, |f| {
        f.seq = f.seq.wrapping_add(1);
        f.pending.insert(run_id.to_string(), (f.seq, run));
        while f.pending.len() > MAX_PENDING {
            let oldest = f
                .pending
                .iter()
                .min_by_key(|(_, (n, _))| *n)
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => f.pending.remove(&k),
                None => break,
            };
        }
        Ok(Ratchet::Pending)
    })
}

/// The caller's verdict on a delegate result, by its run id: `correct`
/// counts it (promoting after `promote_after`), a rejection resets the
/// count and removes a template promoted for the intent. `None` when the
/// run id is unknown (never recorded, already judged, or dropped).
///
/// # Errors
/// The ratchet or templates file cannot be read or written.
pub fn confirm(
    ws: &Path,
    run_id: &str,
    correct: bool,
    promote_after: u32,
) -> Result<Option<Ratchet>, TemplateError> {
    let run = with_ratchet_if(ws, |f| {
        let r = f.pending.remove(run_id).map(|(_, r)| r);
        let changed = r.is_some();
        Ok((r, changed))
    })?;
    let Some(run) = run else {
        return Ok(None);
    };
    if !correct {
        return reset(ws, &run.intent, &run.profile).map(Some);
    }
    if promote_after == 0 || run.provider == "templates" {
        return Ok(Some(Ratchet::Skipped));
    }
    count(ws, &run, promote_after).map(Some)
}

fn count(ws: &Path, run: &PendingRun, promote_after: u32) -> Result<Ratchet, TemplateError> {
    let key = ratchet_entry_key(&run.profile, &run.intent);
    let n = with_ratchet(ws, |f| {
        let entry = f
            .intents
            .entry(key.clone())
            .or_insert_with(|| RatchetEntry {
                program: run.program.clone(),
                successes: 0,
                provider: run.provider.clone(),
            });
        if entry.program != run.program {
            *entry = RatchetEntry {
                program: run.program.clone(),
                successes: 0,
                provider: run.provider.clone(),
            };
        }
        entry.successes = entry.successes.saturating_add(1);
        let n = entry.successes;
        if n >= promote_after {
            f.intents.remove(&key);
        }
        Ok(n)
    })?;
    if n >= promote_after {
        promote_template(ws, &run.intent, &run.profile, &run.program, &run.provider)?;
        return Ok(Ratchet::Promoted);
    }
    Ok(Ratchet::Counted(n))
}

fn reset(ws: &Path, intent: &str, profile: &str) -> Result<Ratchet, TemplateError> {
    let key = ratchet_entry_key(profile, intent);
    with_ratchet_if(ws, |f| Ok(((), f.intents.remove(&key).is_some())))?;
    demote_template(ws, intent, profile).map(Ratchet::Reset)
}

/// Record a delegate run that validated and ran ok, counting it as
/// confirmed (the behaviour before confirmations; kept for callers that
/// have no verdict step): after `promote_after` successes (0 = never)
/// with the same program, or at once when `force`, it becomes a template.
///
/// # Errors
/// The ratchet or templates file cannot be read, parsed or written.
pub fn record_success(
    ws: &Path,
    intent: &str,
    program: &str,
    provider: &str,
    promote_after: u32,
    force: bool,
) -> Result<Ratchet, TemplateError> {
    record_result(
        ws,
        intent,
        "",
        program,
        provider,
        true,
        "",
        RatchetPolicy {
            promote_after,
            count_unconfirmed: true,
            force,
        },
    )
}

/// Replace `name` in the workspace's `.lackpy/` atomically (created when
/// absent), beneath the workspace's descriptor, never through a symlink.
fn write_atomic(ws: &Path, name: &str, text: &str) -> Result<(), TemplateError> {
    let ctl = lackpy_beneath::open_control(ws, true)?.ok_or_else(|| TemplateError::Io {
        file: ws.join(lackpy_beneath::CONTROL_DIR).display().to_string(),
        source: std::io::Error::from(std::io::ErrorKind::NotFound),
    })?;
    Ok(ctl.write_atomic(name, text.as_bytes())?)
}

/// Parse a templates file's `text` (`file` names it in errors), its TOML
/// items counted first as a config file's are
/// ([`lackpy_policy::config::MAX_CONFIG_ITEMS`]). Why: the parser holds
/// every small item with its spans; 1 MiB of `{},` took `lackpy delegate`
/// to 75 MiB (14 MiB without the file) at every delegation, in every
/// concurrent one of a server (redteam-14).
///
/// # Errors
/// [`TemplateError::Parse`] naming `file`: too many items, or not the
/// expected TOML.
fn parse_templates_file(text: &str, file: &str) -> Result<TemplatesFile, TemplateError> {
    use lackpy_policy::config::{toml_items, MAX_CONFIG_ITEMS};
    if toml_items(text) > MAX_CONFIG_ITEMS {
        return Err(TemplateError::Parse {
            file: file.to_string(),
            detail: format!(
                "the file holds more than {MAX_CONFIG_ITEMS} TOML items (counted as `[`, `{{`, `=`, `,` and `.` characters; MAX_CONFIG_ITEMS); it was not parsed"
            ),
        });
    }
    toml::from_str(text).map_err(|e| TemplateError::Parse {
        file: file.to_string(),
        detail: e.to_string(),
    })
}

fn load_workspace_templates(ws: &Path) -> Result<TemplatesFile, TemplateError> {
    Ok(match read_small(ws, TEMPLATES_FILE)? {
        Some(t) => parse_templates_file(&t, &templates_path(ws).display().to_string())?,
        None => TemplatesFile::default(),
    })
}

/// The templates file's text.
fn templates_text(ws: &Path, file: &TemplatesFile) -> Result<String, TemplateError> {
    let text = toml::to_string(file).map_err(|e| TemplateError::Parse {
        file: templates_path(ws).display().to_string(),
        detail: e.to_string(),
    })?;
    Ok(format!(
        "# Written by `lackpy delegate` (the ratchet). Edit freely.\n{text}"
    ))
}

fn save_workspace_templates(ws: &Path, file: &TemplatesFile) -> Result<(), TemplateError> {
    write_atomic(ws, TEMPLATES_FILE, &templates_text(ws, file)?)
}

/// Save `file` with a template just promoted (its last), kept within
/// [`MAX_FILE_BYTES`] and `MAX_CONFIG_ITEMS` (all [`TemplateSet::load`]
/// reads) by
/// dropping the oldest promoted templates first; the operator's own are
/// never dropped. Why: each promotion adds a client's intent (8 KiB) and a
/// program; written unbounded, 140 promotions of long intents made the
/// file too large to read and every later `delegate` of the workspace, of
/// every client, failed.
///
/// # Errors
/// The file cannot fit even with no other promoted template (it is then
/// left as it was), or cannot be written.
fn save_promoted_within(ws: &Path, file: &mut TemplatesFile) -> Result<(), TemplateError> {
    loop {
        let text = templates_text(ws, file)?;
        if text.len() as u64 <= MAX_FILE_BYTES
            && lackpy_policy::config::toml_items(&text) <= lackpy_policy::config::MAX_CONFIG_ITEMS
        {
            return write_atomic(ws, TEMPLATES_FILE, &text);
        }
        let last = file.templates.len().saturating_sub(1);
        match file
            .templates
            .iter()
            .position(|t| t.promoted_from.is_some())
            .filter(|&i| i < last)
        {
            Some(i) => {
                file.templates.remove(i);
            }
            None => {
                return Err(TemplateError::Parse {
                    file: templates_path(ws).display().to_string(),
                    detail: format!(
                        "not promoted: the file would be larger than {MAX_FILE_BYTES} bytes or {} TOML items (hint: remove templates you no longer need)",
                        lackpy_policy::config::MAX_CONFIG_ITEMS
                    ),
                })
            }
        }
    }
}

fn is_promoted_for(t: &Template, key: &str, profile: &str) -> bool {
    t.promoted_from.is_some()
        && t.intent.as_deref().map(ratchet_key).as_deref() == Some(key)
        && t.profile.as_deref().unwrap_or("") == profile
}

fn promote_template(
    ws: &Path,
    intent: &str,
    profile: &str,
    program: &str,
    provider: &str,
) -> Result<(), TemplateError> {
    let key = ratchet_key(intent);
    let mut file = load_workspace_templates(ws)?;
    file.templates
        .retain(|t| !is_promoted_for(t, &key, profile));
    file.templates.push(Template {
        name: format!("promoted: {}", key.chars().take(60).collect::<String>()),
        intent: Some(key),
        program: program.to_string(),
        promoted_from: Some(provider.to_string()),
        profile: (!profile.is_empty()).then(|| profile.to_string()),
        ..Template::default()
    });
    save_promoted_within(ws, &mut file)
}

/// Remove the template promoted for (intent, profile); true when one was.
fn demote_template(ws: &Path, intent: &str, profile: &str) -> Result<bool, TemplateError> {
    let key = ratchet_key(intent);
    let mut file = load_workspace_templates(ws)?;
    let before = file.templates.len();
    file.templates
        .retain(|t| !is_promoted_for(t, &key, profile));
    if file.templates.len() == before {
        return Ok(false);
    }
    save_workspace_templates(ws, &file)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped() -> TemplateSet {
        TemplateSet::load(None).unwrap_or_default()
    }

    #[test]
    fn shipped_templates_match_with_slots() {
        let t = shipped();
        assert!(t.templates.len() >= 5);
        for (intent, program) in [
            ("Read notes/Todo.txt", "read_file(\"notes/Todo.txt\")"),
            (
                "count lines in 'src/main.py'.",
                "len(read_file(\"src/main.py\").splitlines())",
            ),
            ("find files matching **/*.md", "find_files(\"**/*.md\")"),
        ] {
            assert_eq!(t.find(intent).map(|x| x.1).as_deref(), Some(program));
        }
        assert_eq!(t.find("show the contents of `a b.txt`"), None);
        // Must cover the whole intent.
        assert_eq!(t.find("read a.txt and count the TODO items"), None);
    }

    /// Runs waiting for a verdict hold a client's intent and a program:
    /// written unbounded, 100 of them made `ratchet.json` larger than what
    /// is read back, and the ratchet stopped for good (every later call
    /// failed to read it). The oldest are now forgotten first.
    #[test]
    fn the_ratchet_file_stays_readable() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        let policy = RatchetPolicy {
            promote_after: 3,
            count_unconfirmed: false,
            force: false,
        };
        let long = "x".repeat(8000);
        for i in 0..100 {
            let intent = format!("count {long} {i}");
            let r = record_result(
                ws,
                &intent,
                "p",
                &long,
                "rules",
                true,
                &format!("run{i}"),
                policy,
            );
            assert_eq!(r.unwrap(), Ratchet::Pending, "{i}");
        }
        let size = std::fs::metadata(ratchet_path(ws)).unwrap().len();
        assert!(size <= MAX_FILE_BYTES, "{size}");
        // The newest run is still there to be confirmed; the oldest is gone.
        assert_eq!(
            confirm(ws, "run99", true, 3).unwrap(),
            Some(Ratchet::Counted(1))
        );
        assert_eq!(confirm(ws, "run0", true, 3).unwrap(), None);
    }

    /// A templates file's TOML items are counted before it is parsed
    /// (1 MiB of `{},` cost 60 MiB parsed), and promotions keep the file
    /// within that count as well as its size: promoted programs full of
    /// commas would otherwise make it unreadable, and every later
    /// `delegate` of the workspace would fail.
    #[test]
    fn templates_are_counted_before_parsing_and_promotions_stay_loadable() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path();
        std::fs::create_dir_all(ws.join(".lackpy")).unwrap();
        let hostile = format!("a = [{}]\n", "{},".repeat(300_000));
        std::fs::write(templates_path(ws), hostile).unwrap();
        match TemplateSet::load(Some(ws)) {
            Ok(_) => panic!("300,000 inline tables were parsed"),
            Err(e) => assert!(e.to_string().contains("MAX_CONFIG_ITEMS"), "{e}"),
        }
        std::fs::remove_file(templates_path(ws)).unwrap();
        let policy = RatchetPolicy {
            promote_after: 1,
            count_unconfirmed: true,
            force: false,
        };
        // 30,000 commas per program (60 KB): three of them are over the count.
        let program = format!("x = [{}]", "0,".repeat(30_000));
        for i in 0..4 {
            let intent = format!("list the numbers {i}");
            let r = record_result(ws, &intent, "p", &program, "rules", true, "", policy);
            assert_eq!(r.unwrap(), Ratchet::Promoted, "{i}");
            let t = TemplateSet::load_for(Some(ws), "p").unwrap();
            assert_eq!(t.find(&intent).map(|x| x.1), Some(program.clone()), "{i}");
        }
    }

    #[test]
    fn shipped_template_programs_validate() {
        let ns = crate::corpus::tests::file_tools_ns();
        for t in shipped().templates {
            let mut prog = t.program.clone();
            for slot in ["path", "pattern"] {
                prog = prog.replace(&format!("{{{slot}}}"), &py_str("notes/*.txt"));
            }
            let r = lackpy_policy::validate(&prog, &ns, &lackpy_policy::Limits::default());
            assert!(r.is_ok(), "{}: {prog}: {:?}", t.name, r.err());
        }
    }

    #[test]
    fn slots_cannot_inject() {
        let t = shipped();
        let got = t
            .find("read a.txt\"+read_file(\"b")
            .map(|x| x.1)
            .unwrap_or_default();
        assert_eq!(got, "read_file(\"a.txt\\\"+read_file(\\\"b\")");
        assert!(rustpython_parser::parse(&got, rustpython_parser::Mode::Module, "<t>").is_ok());
    }

    #[test]
    fn a_capture_that_names_another_slot_stays_a_literal() {
        // Replacing slot by slot put `b`'s literal inside `a`'s literal
        // (`""+x+""`), which made `b`'s text bare code.
        let t = Template {
            name: "t".into(),
            patterns: vec!["read {a} {b}".into()],
            program: "f({a}, {b})".into(),
            ..Template::default()
        };
        assert_eq!(
            t.apply("read {b} +x+").as_deref(),
            Some("f(\"{b}\", \"+x+\")")
        );
        // Unknown and malformed braces are left alone.
        let t = Template {
            program: "{a} {zz} {{ } {".into(),
            ..t
        };
        assert_eq!(t.apply("read q r").as_deref(), Some("\"q\" {zz} {{ } {"));
    }

    #[test]
    fn hostile_workspace_templates_are_bounded() {
        let Ok(dir) = tempfile::tempdir() else { return };
        let ws = dir.path();
        let _ = std::fs::create_dir_all(ws.join(".lackpy"));
        // A pattern with thousands of slots is skipped, not recursed into.
        let pattern = "{a} ".repeat(5000);
        let text = format!("[[templates]]\npattern = \"{pattern}\"\nprogram = \"1\"\n");
        let _ = std::fs::write(templates_path(ws), text);
        let t = TemplateSet::load(Some(ws)).unwrap_or_default();
        assert_eq!(t.find(&"x ".repeat(400)), None);
        // An oversized file is a clear error.
        let _ = std::fs::write(templates_path(ws), "#".repeat(2 * 1024 * 1024));
        match TemplateSet::load(Some(ws)) {
            Ok(_) => panic!("a 2 MiB templates file loaded"),
            Err(e) => assert!(e.to_string().contains("larger than"), "{e}"),
        }
    }

    #[test]
    fn rules_fire_only_when_covered() {
        for (intent, program) in [
            ("list all python files", Some("find_files(\"**/*.py\")")),
            (
                "how many markdown files are there?",
                Some("len(find_files(\"**/*.md\"))"),
            ),
            (
                "count the lines in notes/todo.txt",
                Some("len(read_file(\"notes/todo.txt\").splitlines())"),
            ),
            ("print README.md", Some("read_file(\"README.md\")")),
            ("read notes/todo.txt and count the TODO items", None),
            ("list python files that import os", None),
            ("summarise the project", None),
            ("number the lines of notes/todo.txt", None),
            (
                "number of lines in a.txt",
                Some("len(read_file(\"a.txt\").splitlines())"),
            ),
            (
                "the number of characters in notes/a.txt",
                Some("len(read_file(\"notes/a.txt\"))"),
            ),
            (
                "how many chars does a.txt have",
                Some("len(read_file(\"a.txt\"))"),
            ),
            ("the characters of a.txt", None),
            ("count the distinct characters in a.txt", None),
            ("list all files", Some("find_files(\"**/*\")")),
            ("every file of the workspace", Some("find_files(\"**/*\")")),
            (
                "how many files are in the project",
                Some("len(find_files(\"**/*\"))"),
            ),
            ("show the file", None),
            ("list all files under src", None),
            ("list the files that mention refunds", None),
        ] {
            assert_eq!(rules(intent).map(|x| x.1).as_deref(), program, "{intent}");
        }
    }

    #[test]
    fn ratchet_promotes_after_n() {
        let dir = tempfile::tempdir().ok();
        let Some(dir) = dir else { return };
        let ws = dir.path();
        let p = "len(find_files(\"**/*.rs\"))";
        let r1 = record_success(ws, "How many Rust files?", p, "ollama", 3, false).ok();
        let r2 = record_success(ws, "how many rust files", p, "ollama", 3, false).ok();
        assert_eq!(
            (r1, r2),
            (Some(Ratchet::Counted(1)), Some(Ratchet::Counted(2)))
        );
        assert!(TemplateSet::load(Some(ws))
            .ok()
            .and_then(|t| t.find("how many rust files?"))
            .is_none());
        assert_eq!(
            record_success(ws, "how many rust  files", p, "ollama", 3, false).ok(),
            Some(Ratchet::Promoted)
        );
        let t = TemplateSet::load(Some(ws)).unwrap_or_default();
        assert_eq!(
            t.find("How many Rust files?").map(|x| x.1),
            Some(p.to_string())
        );
        // Explicit promotion.
        assert_eq!(
            record_success(ws, "x y", "1", "openai", 3, true).ok(),
            Some(Ratchet::Promoted)
        );
        assert!(TemplateSet::load(Some(ws))
            .ok()
            .and_then(|t| t.find("X Y"))
            .is_some());
        // A different program resets the count.
        let _ = record_success(ws, "q", "1", "ollama", 3, false);
        assert_eq!(
            record_success(ws, "q", "2", "ollama", 3, false).ok(),
            Some(Ratchet::Counted(1))
        );
    }

    fn policy(n: u32) -> RatchetPolicy {
        RatchetPolicy {
            promote_after: n,
            count_unconfirmed: false,
            force: false,
        }
    }

    #[test]
    fn ratchet_needs_confirmation_and_a_failure_demotes() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ws = dir.path();
        let p = "len(read_file(\"A.txt\"))";
        let rec = |id: &str, ok: bool| {
            record_result(
                ws,
                "size of A.txt",
                "default",
                p,
                "ollama",
                ok,
                id,
                policy(2),
            )
            .ok()
        };
        // Ran ok: pending, not counted.
        assert_eq!(rec("r1", true), Some(Ratchet::Pending));
        assert_eq!(rec("r2", true), Some(Ratchet::Pending));
        let load = || TemplateSet::load_for(Some(ws), "default").unwrap_or_default();
        assert!(load().find("size of A.txt").is_none());
        // Unknown run ids are refused; a rejection resets.
        assert_eq!(confirm(ws, "nope", true, 2).ok(), Some(None));
        assert_eq!(
            confirm(ws, "r1", false, 2).ok(),
            Some(Some(Ratchet::Reset(false)))
        );
        assert_eq!(confirm(ws, "r1", true, 2).ok(), Some(None), "judged once");
        assert_eq!(
            confirm(ws, "r2", true, 2).ok(),
            Some(Some(Ratchet::Counted(1)))
        );
        assert_eq!(rec("r3", true), Some(Ratchet::Pending));
        assert_eq!(
            confirm(ws, "r3", true, 2).ok(),
            Some(Some(Ratchet::Promoted))
        );
        assert_eq!(
            load().find("size of A.txt").map(|x| x.1),
            Some(p.to_string())
        );
        // Literals keep their case; other profiles do not see it.
        assert!(load().find("size of a.txt").is_none());
        assert!(TemplateSet::load_for(Some(ws), "other")
            .unwrap_or_default()
            .find("size of A.txt")
            .is_none());
        // The template's program later fails: it is demoted.
        assert_eq!(rec("r4", false), Some(Ratchet::Reset(true)));
        assert!(load().find("size of A.txt").is_none());
        let text = std::fs::read_to_string(ratchet_path(ws)).unwrap_or_default();
        assert!(!text.contains("\"successes\""), "count reset: {text}");
    }

    #[test]
    fn ratchet_off_and_forced() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ws = dir.path();
        let mut pol = policy(0);
        pol.count_unconfirmed = true;
        for i in 0..5 {
            let r = record_result(ws, "q", "", "1", "ollama", true, &format!("r{i}"), pol).ok();
            assert_eq!(r, Some(Ratchet::Skipped));
        }
        assert!(
            !ratchet_path(ws).exists(),
            "promote_after = 0 counts nothing"
        );
        pol.force = true;
        assert_eq!(
            record_result(ws, "q", "", "1", "ollama", true, "", pol).ok(),
            Some(Ratchet::Promoted)
        );
    }

    #[test]
    fn broad_templates_do_not_answer_non_paths() {
        let t = shipped();
        for intent in [
            "find TODO",
            "list python",
            "show me everything",
            "read the docs",
            "open settings",
        ] {
            assert!(t.find(intent).is_none(), "{intent}: {:?}", t.find(intent));
        }
        for (intent, program) in [
            ("find **/*.py", "find_files(\"**/*.py\")"),
            ("read notes/a.txt", "read_file(\"notes/a.txt\")"),
        ] {
            assert_eq!(t.find(intent).map(|x| x.1).as_deref(), Some(program));
        }
        assert_eq!(ratchet_key("Summarise  A.txt."), "summarise A.txt");
        assert_eq!(ratchet_key("Count TODO lines"), "count TODO lines");
    }
}
