//! The example corpus and keyword+synonym retrieval.
//!
//! As `retrieval-small-models.md` measured, a small coder model does far
//! better with a handful of *relevant* examples than with many: the intent is
//! tokenised, expanded through a hand-curated synonym table, and each example
//! scored by overlap with its tags (weight 2) and its own intent words
//! (weight 1). Only examples whose tools the profile grants are eligible.
//! No learning, no embeddings: deterministic and cheap.

use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

/// One example: an intent and the cell that does it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Example {
    /// What was asked.
    pub intent: String,
    /// Keywords describing what it teaches.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The lackpy cell.
    pub program: String,
}

#[derive(Deserialize)]
struct ExamplesFile {
    examples: Vec<Example>,
}

#[derive(Deserialize)]
struct SynonymsFile {
    groups: Vec<Vec<String>>,
}

/// Why a corpus could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad corpus file: {0}")]
pub struct CorpusError(pub String);

/// The shipped examples (TOML text).
pub const SHIPPED_EXAMPLES: &str = include_str!("../corpus/examples.toml");
/// The shipped synonym table (TOML text).
pub const SHIPPED_SYNONYMS: &str = include_str!("../corpus/synonyms.toml");

/// Examples plus the synonym table.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// The examples, in file order.
    pub examples: Vec<Example>,
    /// stemmed word → the stemmed words of every group it belongs to.
    synonyms: BTreeMap<String, BTreeSet<String>>,
}

/// Words that carry no retrieval signal.
const STOPWORDS: &[&str] = &[
    "a", "an", "the", "of", "in", "on", "to", "for", "and", "or", "with", "from", "by", "at", "is",
    "are", "be", "it", "its", "that", "this", "these", "those", "me", "my", "i", "we", "our",
    "you", "your", "please", "can", "could", "would", "should", "do", "does", "what", "into", "as",
    "there", "then", "them", "they", "their",
];

/// Lowercase, split on anything but letters, digits and `_`, drop
/// stopwords, and stem lightly. File names contribute their parts
/// (`notes/todo.txt` → `note`, `todo`, `txt`).
pub fn tokens(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty() && !STOPWORDS.contains(w))
        .map(stem)
        .collect()
}

/// The words of `text` that occur only inside a file's name or path
/// (`notes/todo.txt` gives `note` and `todo`; the extension `txt` is not
/// one of them: a file's kind says what the example teaches), stemmed as
/// [`tokens`] does.
fn name_only_words(text: &str) -> BTreeSet<String> {
    let is_path = |w: &str| {
        w.contains('/')
            || w.rsplit_once('.').is_some_and(|(b, ext)| {
                !b.is_empty() && !ext.is_empty() && ext.chars().all(|c| c.is_ascii_alphanumeric())
            })
    };
    let mut in_names = BTreeSet::new();
    let mut elsewhere = BTreeSet::new();
    for w in text.split_whitespace() {
        let w = w.trim_matches(|c: char| !(c.is_alphanumeric() || c == '_'));
        if is_path(w) {
            let stemless = w.rsplit_once('.').map_or(w, |(b, _)| b);
            in_names.extend(tokens(stemless));
            if let Some((_, ext)) = w.rsplit_once('.') {
                elsewhere.extend(tokens(ext));
            }
        } else {
            elsewhere.extend(tokens(w));
        }
    }
    in_names.retain(|t| !elsewhere.contains(t));
    in_names
}

/// Light stemming into a matching key (not always a word): drop a
/// trailing `ing`/`ed` (when at least four letters remain) and undouble
/// the consonant that leaves (`summing` → `sum`), drop a plural `s`/`es`,
/// then drop a final silent `e` (when three letters remain). Every form of
/// a word gets the same key: `replace`, `replaces`, `replacing` and
/// `replaced` all give `replac`; `file`/`files` give `fil`; `reading`
/// gives `read`; `string` stays.
pub fn stem(w: &str) -> String {
    let mut base = w.to_string();
    let mut cut_suffix = false;
    for suf in ["ing", "ed"] {
        if let Some(b) = base.strip_suffix(suf) {
            if b.chars().count() >= 4 || (suf == "ed" && b.chars().count() >= 3) {
                base = b.to_string();
                cut_suffix = true;
                break;
            }
        }
    }
    if cut_suffix {
        let cs: Vec<char> = base.chars().collect();
        if let [.., a, b] = cs.as_slice() {
            if a == b && !"aeiouls".contains(*a) && cs.len() >= 4 {
                base.pop();
            }
        }
    } else if let Some(b) = base
        .strip_suffix("es")
        .filter(|b| ["s", "x", "ch", "sh"].iter().any(|e| b.ends_with(e)) && b.chars().count() >= 3)
    {
        base = b.to_string();
    } else if let Some(b) = base
        .strip_suffix('s')
        .filter(|b| !b.ends_with('s') && !b.ends_with('u') && b.chars().count() >= 3)
    {
        base = b.to_string();
    }
    if let Some(b) = base.strip_suffix('e') {
        if b.chars().count() >= 3 && !b.ends_with('e') {
            base = b.to_string();
        }
    }
    base
}

impl Corpus {
    /// Load from TOML texts.
    ///
    /// # Errors
    /// [`CorpusError`] when either text is not the expected TOML shape.
    pub fn load(examples: &str, synonyms: &str) -> Result<Self, CorpusError> {
        let ex: ExamplesFile = toml::from_str(examples).map_err(|e| CorpusError(e.to_string()))?;
        let syn: SynonymsFile = toml::from_str(synonyms).map_err(|e| CorpusError(e.to_string()))?;
        let mut map: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for g in syn.groups {
            let stems: BTreeSet<String> = g.iter().map(|w| stem(&w.to_lowercase())).collect();
            for w in &stems {
                map.entry(w.clone())
                    .or_default()
                    .extend(stems.iter().cloned());
            }
        }
        Ok(Corpus {
            examples: ex.examples,
            synonyms: map,
        })
    }

    /// The shipped corpus.
    ///
    /// # Errors
    /// Only if the shipped files are broken (a unit test pins that they are not).
    pub fn shipped() -> Result<Self, CorpusError> {
        Corpus::load(SHIPPED_EXAMPLES, SHIPPED_SYNONYMS)
    }

    /// The intent's words plus their synonyms.
    pub fn expand(&self, intent: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for t in tokens(intent) {
            if let Some(group) = self.synonyms.get(&t) {
                out.extend(group.iter().cloned());
            }
            out.insert(t);
        }
        out
    }

    /// Up to `n` examples most relevant to `intent`, among those whose
    /// calls are all `allowed` (tool names) or builtins. Ordered from the
    /// least to the most relevant: a small coder model weighs the last
    /// example most, so the best one goes last.
    ///
    /// An example scores, for each word of the intent, that word's
    /// rarity over the corpus (`ln(1 + N / df)`) when it is among the
    /// example's tags (times 2) or its intent's words (times 1) — or, when
    /// it is not, half the best such score of one of its synonyms. Each
    /// intent word counts once, so rare words decide: "the files that call
    /// X" is about calling, which few examples teach, more than about
    /// files, which most mention. A word the example's intent has only as
    /// part of a file's name (`todo` of `todo.txt`, not its extension)
    /// counts a quarter: an example's file names are placeholders, so "the
    /// TODO lines of meeting.txt" is not about "the open items of todo.txt".
    pub fn retrieve(
        &self,
        intent: &str,
        n: usize,
        allowed: &dyn Fn(&str) -> bool,
    ) -> Vec<&Example> {
        let direct: BTreeSet<String> = tokens(intent).into_iter().collect();
        let keys: Vec<(BTreeSet<String>, BTreeSet<String>, BTreeSet<String>)> = self
            .examples
            .iter()
            .map(|e| {
                let tags: BTreeSet<String> =
                    e.tags.iter().map(|t| stem(&t.to_lowercase())).collect();
                let words: BTreeSet<String> = tokens(&e.intent).into_iter().collect();
                let names = name_only_words(&e.intent);
                (tags, words, names)
            })
            .collect();
        let total = keys.len().max(1) as f64;
        let idf = |t: &str| {
            let df = keys
                .iter()
                .filter(|(tags, words, _)| tags.contains(t) || words.contains(t))
                .count()
                .max(1) as f64;
            (1.0 + total / df).ln()
        };
        // Each intent word with its synonyms (itself excluded).
        let groups: Vec<(&String, Vec<&String>)> = direct
            .iter()
            .map(|w| {
                let syn = self
                    .synonyms
                    .get(w)
                    .map(|g| g.iter().filter(|s| *s != w).collect())
                    .unwrap_or_default();
                (w, syn)
            })
            .collect();
        let mut scored: Vec<(f64, usize, &Example)> = self
            .examples
            .iter()
            .zip(&keys)
            .enumerate()
            .filter(|(_, (e, _))| {
                called_names(&e.program)
                    .iter()
                    .all(|c| is_builtin(c) || allowed(c))
            })
            .map(|(i, (e, (tags, words, names)))| {
                let hit = |t: &str| {
                    let m = if tags.contains(t) {
                        2.0
                    } else if names.contains(t) {
                        0.25
                    } else if words.contains(t) {
                        1.0
                    } else {
                        0.0
                    };
                    if m > 0.0 {
                        m * idf(t)
                    } else {
                        0.0
                    }
                };
                let score: f64 = groups
                    .iter()
                    .map(|(w, syn)| {
                        let own = hit(w);
                        if own > 0.0 {
                            return own;
                        }
                        0.5 * syn.iter().map(|s| hit(s)).fold(0.0, f64::max)
                    })
                    .sum();
                (score, i, e)
            })
            .filter(|(s, _, _)| *s > 0.0)
            .collect();
        // Highest score first, then file order; keep n; then reverse.
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.truncate(n);
        scored.reverse();
        scored.into_iter().map(|(_, _, e)| e).collect()
    }
}

/// The builtins of the language: the validator's table (docs/ARCHITECTURE.md
/// "The language").
pub use lackpy_policy::lang::BUILTINS;

/// True for a builtin name.
pub fn is_builtin(name: &str) -> bool {
    BUILTINS.contains(&name)
}

/// Names called as `name(` (not `.method(`) in a program text, outside
/// string literals. A lexical approximation, good enough for corpus
/// filtering and hints; the validator is the authority.
pub fn called_names(program: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let chars: Vec<char> = strip_strings(program).chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let mut j = i;
            while j < chars.len() && chars[j] == ' ' {
                j += 1;
            }
            let after_dot = start > 0 && chars[start - 1] == '.';
            if j < chars.len() && chars[j] == '(' && !after_dot && !is_keyword(&word) {
                out.insert(word);
            }
        } else {
            i += 1;
        }
    }
    out
}

fn is_keyword(w: &str) -> bool {
    matches!(
        w,
        "if" | "elif"
            | "for"
            | "in"
            | "while"
            | "and"
            | "or"
            | "not"
            | "return"
            | "lambda"
            | "print_"
            | "else"
            | "is"
    )
}

/// The text with the contents of string literals blanked (quotes kept), so
/// lexical scans do not see words inside strings. Handles `'`, `"` and
/// triple quotes, with backslash escapes; f-string replacement fields are
/// blanked too (an approximation).
pub fn strip_strings(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == '#' {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
            continue;
        }
        if c == '\'' || c == '"' {
            let triple = i + 2 < b.len() && b[i + 1] == c && b[i + 2] == c;
            let q = if triple { 3 } else { 1 };
            for _ in 0..q {
                out.push(c);
            }
            i += q;
            while i < b.len() {
                if b[i] == '\\' {
                    i += 2;
                    out.push(' ');
                    continue;
                }
                if b[i] == c && (!triple || (i + 2 < b.len() && b[i + 1] == c && b[i + 2] == c)) {
                    for _ in 0..q {
                        out.push(c);
                    }
                    i += q;
                    break;
                }
                if !triple && b[i] == '\n' {
                    break;
                }
                out.push(if b[i] == '\n' { '\n' } else { ' ' });
                i += 1;
            }
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn corpus() -> Corpus {
        match Corpus::shipped() {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn shipped_corpus_is_big_enough() {
        let c = corpus();
        assert!(c.examples.len() >= 40, "{}", c.examples.len());
        for e in &c.examples {
            assert!(!e.tags.is_empty(), "{}", e.intent);
            assert!(!e.program.trim().is_empty());
        }
    }

    /// The four built-in file tools as a validator namespace.
    pub(crate) fn file_tools_ns() -> lackpy_policy::Namespace {
        let t = |name: &str, args: &[&str], w: u8, d: u8| lackpy_policy::ToolEntry {
            name: name.into(),
            target: name.into(),
            args: args.iter().map(|a| a.to_string()).collect(),
            grade: lackpy_policy::Grade { w, d },
        };
        lackpy_policy::Namespace {
            tools: vec![
                t("read_file", &["path"], 1, 0),
                t("find_files", &["pattern"], 1, 0),
                t("write_file", &["path", "content"], 1, 2),
                t("edit_file", &["path", "old_str", "new_str"], 1, 2),
                t("find_definitions", &["name"], 1, 0),
                t("find_callers", &["name"], 1, 0),
            ],
        }
    }

    #[test]
    fn shipped_corpus_validates() {
        let ns = file_tools_ns();
        let limits = lackpy_policy::Limits::default();
        for e in &corpus().examples {
            let r = lackpy_policy::validate(&e.program, &ns, &limits);
            assert!(r.is_ok(), "{}: {:?}", e.intent, r.err());
        }
    }

    /// One held-out intent of `scripts/eval` (`eval/heldout/intents.toml`).
    #[derive(serde::Deserialize)]
    pub(crate) struct HeldoutIntent {
        pub intent: String,
        pub program: String,
        pub workspace: String,
    }

    /// `eval/heldout/intents.toml`.
    #[derive(serde::Deserialize)]
    pub(crate) struct Heldout {
        pub intents: Vec<HeldoutIntent>,
    }

    /// The eval's held-out intents, parsed (for the tests that check them):
    /// `intents.toml` and the fresh set `fresh.toml` (`scripts/eval --set fresh`).
    pub(crate) fn heldout() -> Heldout {
        let mut all = Heldout {
            intents: Vec::new(),
        };
        for text in [
            include_str!("../eval/heldout/intents.toml"),
            include_str!("../eval/heldout/fresh.toml"),
        ] {
            let set: Heldout = toml::from_str(text).unwrap_or_else(|e| panic!("{e}"));
            all.intents.extend(set.intents);
        }
        all
    }

    /// The eval's held-out intents never appear in the corpus: no equal
    /// intent, no intent sharing most of its words with an example's, and
    /// no equal program. (`scripts/eval` scores only these intents.)
    #[test]
    fn heldout_intents_are_not_in_the_corpus() {
        let f = heldout();
        assert!(f.intents.len() >= 100, "{}", f.intents.len());
        let spaces: BTreeSet<&str> = f.intents.iter().map(|i| i.workspace.as_str()).collect();
        assert!(spaces.len() >= 2, "{spaces:?}");
        let words = |s: &str| -> BTreeSet<String> { tokens(s).into_iter().collect() };
        let c = corpus();
        for h in &f.intents {
            let hw = words(&h.intent);
            for e in &c.examples {
                let ew = words(&e.intent);
                let inter = hw.intersection(&ew).count();
                let union = hw.union(&ew).count().max(1);
                assert!(
                    crate::templates::normalise_intent(&h.intent)
                        != crate::templates::normalise_intent(&e.intent)
                        && inter * 10 < union * 6
                        && h.program.trim() != e.program.trim(),
                    "held-out {:?} copies example {:?}",
                    h.intent,
                    e.intent
                );
            }
        }
        let code_intel = f
            .intents
            .iter()
            .filter(|i| {
                i.program.contains("find_definitions") || i.program.contains("find_callers")
            })
            .count();
        assert!(code_intel >= 10, "{code_intel}");
    }

    /// A question for one field of a definition or call site retrieves an
    /// example that indexes that field, as the best (last) example.
    #[test]
    fn field_questions_retrieve_a_field_example() {
        let c = corpus();
        let all = |_: &str| true;
        for (intent, field) in [
            ("which file defines Scheduler", "[\"file\"]"),
            ("on what line is Scheduler defined", "[\"line\"]"),
            ("how many times is Scheduler called", "len(find_callers("),
        ] {
            let ex = c.retrieve(intent, 6, &all);
            let best = ex.last().map(|e| e.program.as_str()).unwrap_or("");
            assert!(best.contains(field), "{intent}: {best}");
        }
    }

    /// The corpus names nothing of the eval's workspaces: no path of a
    /// fixture file below a directory, no data file's name, and no name a
    /// fixture's Python code defines (the examples teach patterns, never
    /// the eval's answers).
    #[test]
    fn corpus_names_nothing_of_the_eval_workspaces() {
        #[derive(serde::Deserialize)]
        struct Ws {
            files: BTreeMap<String, String>,
        }
        let mut names: BTreeSet<String> = BTreeSet::new();
        for text in [
            include_str!("../eval/heldout/shop.toml"),
            include_str!("../eval/heldout/proj.toml"),
        ] {
            let ws: Ws = toml::from_str(text).unwrap_or_else(|e| panic!("{e}"));
            assert!(!ws.files.is_empty());
            for (path, content) in &ws.files {
                if path.contains('/') {
                    names.insert(path.clone());
                }
                let base = path.rsplit('/').next().unwrap_or(path);
                if [".csv", ".tsv", ".log", ".ini"]
                    .iter()
                    .any(|e| base.ends_with(e))
                {
                    names.insert(base.to_string());
                }
                if path.ends_with(".py") {
                    for line in content.lines() {
                        let l = line.trim_start();
                        let Some(rest) =
                            l.strip_prefix("def ").or_else(|| l.strip_prefix("class "))
                        else {
                            continue;
                        };
                        let name: String = rest
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect();
                        // Dunder methods are the language's, and `main` and
                        // `value` plain words, not the fixture's.
                        if name.len() > 3
                            && !name.starts_with("__")
                            && !["main", "value"].contains(&name.as_str())
                        {
                            names.insert(name);
                        }
                    }
                }
            }
        }
        assert!(names.contains("data/orders.csv") && names.contains("parse_line"));
        let c = corpus();
        for e in &c.examples {
            for n in &names {
                let word = |t: &str| {
                    t.match_indices(n.as_str()).any(|(i, _)| {
                        let before = t[..i].chars().next_back();
                        let after = t[i + n.len()..].chars().next();
                        let edge =
                            |c: Option<char>| c.is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
                        edge(before) && edge(after)
                    })
                };
                assert!(
                    !word(&e.intent) && !word(&e.program),
                    "example {:?} names {n:?} of an eval workspace",
                    e.intent
                );
            }
        }
    }

    #[test]
    fn tokenise_and_stem() {
        assert_eq!(
            tokens("Count the lines in notes/todo.txt"),
            ["count", "lin", "not", "todo", "txt"]
        );
        assert_eq!(stem("files"), stem("file"));
        assert_eq!(stem("class"), "class");
        assert_eq!(stem("classes"), "class");
        assert_eq!(stem("lines"), stem("line"));
        assert_eq!(stem("reading"), "read");
        assert_eq!(stem("string"), "string");
        assert_eq!(stem("status"), "status");
        // Every form of a word gets one key.
        for w in ["replacing", "replaced", "replaces"] {
            assert_eq!(stem(w), stem("replace"), "{w}");
        }
        for (a, b) in [
            ("writing", "write"),
            ("summing", "sum"),
            ("names", "name"),
            ("matches", "match"),
            ("sizes", "size"),
            ("parsing", "parse"),
            ("counted", "count"),
        ] {
            assert_eq!(stem(a), stem(b), "{a} {b}");
        }
    }

    #[test]
    fn retrieval_picks_relevant_examples_best_last() {
        let c = corpus();
        let all = |_: &str| true;
        let got = c.retrieve("how many lines does notes.txt have", 6, &all);
        assert_eq!(got.len(), 6);
        let best = got.last().map(|e| e.intent.as_str()).unwrap_or("");
        assert!(best.contains("line"), "{best}");
        // Synonyms: "biggest" reaches "largest".
        let got = c.retrieve("the biggest markdown document", 3, &all);
        assert!(
            got.iter()
                .any(|e| e.intent.contains("largest") || e.intent.contains("size")),
            "{got:?}"
        );
    }

    #[test]
    fn a_file_name_word_of_an_example_counts_little() {
        assert_eq!(
            name_only_words("list the open items of todo.txt that are not done"),
            BTreeSet::from(["todo".to_string()])
        );
        // The extension, and a word also used outside the name, are not
        // name-only.
        assert_eq!(
            name_only_words("count the notes in notes/week.md"),
            BTreeSet::from(["week".to_string()])
        );
        assert!(name_only_words("sum the numbers").is_empty());
        // "TODO lines" is about lines holding TODO, not about a file named
        // todo.txt: the example that only names such a file is not the best.
        let c = corpus();
        let all = |_: &str| true;
        let got = c.retrieve("collect the TODO lines from notes/meeting.txt", 6, &all);
        let best = got.last().map(|e| e.intent.as_str()).unwrap_or("");
        assert!(!best.contains("todo.txt"), "{got:#?}");
    }

    #[test]
    fn retrieval_respects_profile_tools() {
        let c = corpus();
        let read_only = |n: &str| n == "read_file" || n == "find_files";
        for e in c.retrieve(
            "write a summary file of all notes and replace text",
            10,
            &read_only,
        ) {
            assert!(
                !e.program.contains("write_file") && !e.program.contains("edit_file"),
                "{}",
                e.intent
            );
        }
    }

    #[test]
    fn called_names_skips_methods_and_strings() {
        let names = called_names(
            "x = read_file(\"open(a)\")\ny = x.split(\",\")\nlen(y) # foo(z)\nf\"{g(1)}\"",
        );
        assert_eq!(names.into_iter().collect::<Vec<_>>(), ["len", "read_file"]);
    }
}
