//! A bounded, relevant view of the workspace, as prompt text.
//!
//! Small models fail most often by guessing what they cannot see: a CSV's
//! columns, a file's path. The supervisor (never the jailed inferencer
//! worker) builds this view before the model call and the inferencer puts
//! it into the prompt as plain text; the model never sees a tool result.
//!
//! What it holds, within [`MAX_CONTEXT_BYTES`]:
//! - the workspace's files (relative paths) when there are few; otherwise
//!   the files whose path shares a word with the intent, then a directory
//!   outline (each directory with its file count and extensions);
//! - for data files (`.csv`, `.tsv`, `.jsonl`, `.ini`, `.cfg`, `.toml`,
//!   `.log`, `.txt`, `.md`…) that are listed: their first lines (a CSV's
//!   header and first record), each cut to [`MAX_LINE_BYTES`];
//! - after that part, a last section with the lines, values left out, of
//!   the configuration files whose first lines are read (at most
//!   [`MAX_HEADS`] lines of [`MAX_KEYS_BYTES`]); see [`split_view`].
//!
//! Reading is confined: the walk and every read go through
//! `lackpy_beneath` (`openat2` beneath the workspace's descriptor, no
//! symlink followed, in or out), hidden entries, `__pycache__`,
//! `node_modules` and virtual environments are skipped, and the walk is
//! bounded in depth, directories, entries and bytes read.

use crate::corpus::tokens;
use lackpy_beneath::{Dir, Kind};
use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;

/// Largest context text, in bytes. Why: it is copied into every prompt of
/// the delegation; a small model's window is a few thousand tokens.
pub const MAX_CONTEXT_BYTES: usize = 3000;
/// Longest line shown of a data file, in bytes.
pub const MAX_LINE_BYTES: usize = 160;
/// Deepest directory visited.
const MAX_DEPTH: usize = 8;
/// Most directories visited.
const MAX_DIRS: usize = 400;
/// Most files seen in the walk.
const MAX_FILES: usize = 5000;
/// Most entries read from one directory (beyond: the directory is skipped).
const MAX_DIR_ENTRIES: usize = 5000;
/// Bytes read from the start of a data file.
const HEAD_BYTES: usize = 2048;
/// Files listed in full when the workspace has at most this many.
const LIST_ALL: usize = 40;
/// Most intent-matching files listed otherwise.
const MAX_MATCHES: usize = 25;
/// Most data files whose first lines are shown.
const MAX_HEADS: usize = 12;

/// Extensions whose first lines are shown, and how many lines.
fn head_lines(path: &str) -> Option<usize> {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
    Some(match ext.as_str() {
        "csv" | "tsv" => 2,
        "jsonl" | "ndjson" | "log" => 1,
        "ini" | "cfg" | "toml" | "env" | "conf" => 3,
        "txt" | "md" => 1,
        "json" | "yaml" | "yml" => 2,
        _ => return None,
    })
}

fn skipped_dir(name: &str) -> bool {
    name.starts_with('.')
        || matches!(
            name,
            "__pycache__" | "node_modules" | "site-packages" | "target" | "venv" | "env"
        )
}

/// Walk the workspace: relative file paths, sorted, bounded.
/// Directories to visit are kept by name and opened one at a time when
/// their turn comes, at most [`MAX_DIRS`] of them waiting.
/// Why: each waiting directory was held open (a descriptor each), and one
/// directory's listing pushed all its subdirectories (up to
/// [`MAX_DIR_ENTRIES`]): a program-written workspace of 5,000 empty
/// directories held 5,000 of the supervisor's descriptors during every
/// delegation's walk, past a default limit of 1,024, so the opens of
/// every other run of a server failed meanwhile (redteam-12).
fn walk(root: &Dir) -> Vec<String> {
    let mut files = Vec::new();
    let mut stack: Vec<(String, usize)> = Vec::new();
    let mut dirs = 0usize;
    visit(root, "", 0, &mut files, &mut stack, &mut dirs);
    while let Some((prefix, depth)) = stack.pop() {
        if dirs >= MAX_DIRS || files.len() >= MAX_FILES {
            break;
        }
        let Ok(Some(d)) = root.subdir(prefix.trim_end_matches('/'), false) else {
            continue;
        };
        visit(&d, &prefix, depth, &mut files, &mut stack, &mut dirs);
    }
    files.sort();
    files
}

fn visit(
    d: &Dir,
    prefix: &str,
    depth: usize,
    files: &mut Vec<String>,
    stack: &mut Vec<(String, usize)>,
    dirs: &mut usize,
) {
    *dirs += 1;
    let Ok(entries) = d.entries(MAX_DIR_ENTRIES) else {
        return;
    };
    if entries.iter().any(|(n, _)| n == "pyvenv.cfg") {
        return;
    }
    for (name, kind) in entries {
        if name.starts_with('.') || files.len() >= MAX_FILES {
            continue;
        }
        let rel = format!("{prefix}{name}");
        match kind {
            Kind::File => files.push(rel),
            Kind::Dir if depth + 1 < MAX_DEPTH && !skipped_dir(&name) && stack.len() < MAX_DIRS => {
                stack.push((format!("{rel}/"), depth + 1));
            }
            _ => {}
        }
    }
}

/// What [`head`] reads of a file: its first lines, each cut, and the
/// notes its first [`HEAD_BYTES`] give (each without its brackets).
struct Head {
    lines: Vec<String>,
    notes: Vec<String>,
    /// A configuration file's lines, values left out ([`config_keys`]).
    keys: Option<String>,
}

/// The first `n` lines of a file beneath `root`, each cut, with its notes:
/// for a log the words in capitals its first [`HEAD_BYTES`] use
/// ([`level_words`]); for a configuration file its lines, values left out
/// ([`config_keys`]); `None` when it cannot be read as text.
fn head(root: &Dir, rel: &str, n: usize) -> Option<Head> {
    let file = match rel.rsplit_once('/') {
        Some((d, f)) => root.subdir(d, false).ok()??.open_read(f).ok()??,
        None => root.open_read(rel).ok()??,
    };
    let mut buf = Vec::with_capacity(HEAD_BYTES);
    file.take(HEAD_BYTES as u64).read_to_end(&mut buf).ok()?;
    let text = String::from_utf8_lossy(&buf);
    let lines: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(n)
        .map(|l| cut(l, MAX_LINE_BYTES))
        .collect();
    let mut notes = Vec::new();
    if rel.to_ascii_lowercase().ends_with(".log") {
        let levels = level_words(&text);
        if !levels.is_empty() {
            notes.push(format!("words in capitals: {}", levels.join(", ")));
        }
    }
    let keys = is_config_file(rel).then(|| config_keys(&text)).flatten();
    (!lines.is_empty()).then_some(Head { lines, notes, keys })
}

/// Whether `path` names an INI-style configuration file (`.ini`, `.cfg`,
/// `.conf`, `.toml`, `.env`), whose `key = value` lines a cell reads.
pub(crate) fn is_config_file(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    [".ini", ".cfg", ".conf", ".toml", ".env"]
        .iter()
        .any(|e| lower.ends_with(e))
}

/// The heading of the view's last section, the keys of its configuration
/// files (see [`split_view`]).
const KEYS_SECTION: &str = "Keys of configuration files:\n";
/// Most keys named for a configuration file.
const MAX_KEYS: usize = 32;
/// Longest list of a configuration file's lines ([`config_keys`]).
const MAX_KEYS_BYTES: usize = 400;
/// Longest key or section name named.
const MAX_KEY_BYTES: usize = 40;

/// The lines of an INI-style file (`.ini`, `.cfg`, `.conf`, `.toml`,
/// `.env`) in its first [`HEAD_BYTES`] with their values left out, quoted
/// and in file order: `"[shop]", "name = …", "day: …"`, cut to
/// [`MAX_KEYS_BYTES`]. The pipeline names these keys in the retry after a
/// cell failed with a `KeyError` on the file (a small model shown three of
/// its lines guessed `config["timeout"]`, an example's key). Section lines
/// and `key = value` or `key: value` lines count, comments do not, nor
/// does a last line that may be cut; `None` when no key is found.
fn config_keys(text: &str) -> Option<String> {
    let whole = if text.len() >= HEAD_BYTES {
        text.rsplit_once('\n').map_or("", |(w, _)| w)
    } else {
        text
    };
    let name_ok = |k: &str| {
        !k.is_empty()
            && k.len() <= MAX_KEY_BYTES
            && k.chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | ' '))
    };
    let mut shown: Vec<String> = Vec::new();
    let mut keys = 0usize;
    for line in whole.lines() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') || l.starts_with(';') {
            continue;
        }
        if l.starts_with('[') && l.ends_with(']') {
            if name_ok(l.trim_matches(['[', ']']).trim()) {
                shown.push(format!("{l:?}"));
            }
            continue;
        }
        let Some(at) = l.find(['=', ':']) else {
            continue;
        };
        if !name_ok(l[..at].trim()) || keys >= MAX_KEYS {
            continue;
        }
        // The key as written, with its separator and the spaces around it.
        let after = &l[at + 1..];
        let spaces = &after[..after.len() - after.trim_start().len()];
        shown.push(format!("{:?}", format!("{}{spaces}…", &l[..=at])));
        keys += 1;
    }
    if keys == 0 {
        return None;
    }
    Some(cut(&shown.join(", "), MAX_KEYS_BYTES))
}

/// Most words in capitals named for a log.
const MAX_LEVEL_WORDS: usize = 8;

/// The words in capitals (3 to 8 ASCII letters, standing alone) a log's
/// text uses, in order of first use: its level words (`INFO`, `WARN`,
/// `ERROR`), so a program filtering lines by level spells the level as
/// the file does. Words of a last, possibly cut, line are not counted.
fn level_words(text: &str) -> Vec<String> {
    let whole = text.rsplit_once('\n').map_or("", |(w, _)| w);
    let mut out: Vec<String> = Vec::new();
    for w in whole.split(|c: char| !c.is_ascii_alphanumeric()) {
        if (3..=8).contains(&w.len())
            && w.bytes().all(|b| b.is_ascii_uppercase())
            && !out.iter().any(|o| o == w)
        {
            out.push(w.to_string());
            if out.len() >= MAX_LEVEL_WORDS {
                break;
            }
        }
    }
    out
}

fn cut(s: &str, n: usize) -> String {
    if s.len() <= n {
        return s.to_string();
    }
    let end = s.floor_char_boundary(n);
    format!("{}…", &s[..end])
}

/// The workspace view for `intent`, or `None` when the workspace cannot
/// be opened or holds no files.
pub fn workspace_context(workspace: &Path, intent: &str) -> Option<String> {
    let root = Dir::open(workspace).ok()?;
    let files = walk(&root);
    if files.is_empty() {
        return None;
    }
    let words: BTreeSet<String> = tokens(intent)
        .into_iter()
        .filter(|w| w.len() >= 2)
        .collect();
    let matches = |p: &str| tokens(p).iter().any(|t| words.contains(t));
    let mut out = String::new();
    let listed: Vec<&String> = if files.len() <= LIST_ALL {
        out.push_str("Workspace files:\n");
        files.iter().collect()
    } else {
        let m: Vec<&String> = files
            .iter()
            .filter(|p| matches(p))
            .take(MAX_MATCHES)
            .collect();
        if !m.is_empty() {
            out.push_str("Workspace files matching the task:\n");
        }
        m
    };
    for p in &listed {
        out.push_str(&format!("  {p}\n"));
    }
    if files.len() > LIST_ALL {
        out.push_str(&outline(&files));
    }
    // First lines of listed data files: those the intent names first.
    // Those the intent names are chosen first; they are shown in path
    // order, so the view (and with it the start of the prompt) stays the
    // same across intents in a small workspace and an endpoint can reuse
    // its cache of the prompt's prefix.
    let mut data: Vec<&String> = listed
        .iter()
        .copied()
        .filter(|p| head_lines(p).is_some())
        .collect();
    data.sort_by_key(|p| !matches(p));
    data.truncate(MAX_HEADS);
    data.sort();
    let mut heads = String::new();
    let mut keys_section = String::new();
    for p in data {
        let Some(n) = head_lines(p) else { continue };
        if let Some(Head { lines, notes, keys }) = head(&root, p, n) {
            if let Some(k) = keys {
                keys_section.push_str(&format!("  {p}: {k}\n"));
            }
            let mut block = format!(
                "{p}:\n{}\n",
                lines
                    .iter()
                    .map(|l| format!("  {l}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            if let Some(layout) = table_layout(p, &lines) {
                block.push_str(&format!("  ({layout})\n"));
            }
            for note in notes {
                block.push_str(&format!("  ({note})\n"));
            }
            if out.len() + heads.len() + block.len() + 40 > MAX_CONTEXT_BYTES {
                continue;
            }
            heads.push_str(&block);
        }
    }
    if !heads.is_empty() {
        out.push_str("First lines of data files:\n");
        out.push_str(&heads);
    }
    let mut view = cut(out.trim_end(), MAX_CONTEXT_BYTES);
    if !keys_section.is_empty() {
        view.push('\n');
        view.push_str(KEYS_SECTION);
        view.push_str(keys_section.trim_end());
    }
    Some(view)
}

/// The view without its keys section, and the keys section's lines
/// (`path`, then its lines as [`config_keys`] wrote them). Only the first
/// part goes into the prompt: shown there, next to a task naming the file,
/// the keys were taken for a dictionary the cell already had (Qwen2.5-
/// Coder-1.5B wrote `config["currency"]` and `config["shop"]["email"]`:
/// 3 right answers of 3 became wrong); the pipeline names them in a retry
/// after a `KeyError` instead.
pub fn split_view(ctx: &str) -> (&str, Vec<(&str, &str)>) {
    // At a line's start: the view's other lines that could hold the
    // heading's words (paths, a file's first lines) are indented.
    let Some(at) = ctx.find(&format!("\n{KEYS_SECTION}")) else {
        return (ctx, Vec::new());
    };
    let keys = ctx[at + 1 + KEYS_SECTION.len()..]
        .lines()
        .filter_map(|l| l.trim().split_once(": "))
        .collect();
    (ctx[..at].trim_end(), keys)
}

/// Most columns named in a table's layout line.
const MAX_COLUMNS: usize = 24;

/// The layout of a delimited table from its first lines: the separator,
/// that line 0 is the header, and each column's index — what a program
/// splitting lines needs (`line.split(",")[3]`, `lines[1:]`). `None` for
/// files that are not `.csv`/`.tsv` or whose first line holds one column.
fn table_layout(path: &str, lines: &[String]) -> Option<String> {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
    let (sep, sep_name) = match ext.as_str() {
        "csv" => (',', "\",\""),
        "tsv" => ('\t', "\"\\t\""),
        _ => return None,
    };
    let header = lines.first()?;
    let cols: Vec<&str> = header.split(sep).map(str::trim).collect();
    if cols.len() < 2 {
        return None;
    }
    let named: Vec<String> = cols
        .iter()
        .take(MAX_COLUMNS)
        .enumerate()
        .map(|(i, c)| format!("{i} {c}"))
        .collect();
    let more = if cols.len() > MAX_COLUMNS {
        ", …"
    } else {
        ""
    };
    Some(format!(
        "{LAYOUT_HEAD}{sep_name}; line 0 is the header, data rows are lines[1:]; {COLUMNS_HEAD}{}{more}",
        named.join(", ")
    ))
}

/// How [`table_layout`]'s text starts, and where its columns start.
const LAYOUT_HEAD: &str = "fields split by ";
const COLUMNS_HEAD: &str = "columns: ";

/// A layout line of the view as [`table_layout`] wrote it, in its
/// brackets (`(fields split by ","; …; columns: 0 name, 1 price)`): the
/// separator as the view spells it (`","`, `"\t"`) and each column's
/// index and name. `None` for any other line.
pub(crate) fn parse_table_layout(line: &str) -> Option<(&str, Vec<(&str, &str)>)> {
    let layout = line.strip_prefix('(')?.strip_prefix(LAYOUT_HEAD)?;
    let (sep, rest) = layout.split_once("; ")?;
    let (_, cols) = rest.split_once(COLUMNS_HEAD)?;
    let cols = cols
        .trim_end_matches(')')
        .split(", ")
        .filter_map(|c| c.split_once(' '))
        .collect();
    Some((sep, cols))
}

/// Directories with their file counts and extensions.
fn outline(files: &[String]) -> String {
    let mut dirs: std::collections::BTreeMap<&str, (usize, BTreeSet<String>)> =
        std::collections::BTreeMap::new();
    for f in files {
        let dir = f.rsplit_once('/').map_or(".", |(d, _)| d);
        let e = dirs.entry(dir).or_default();
        e.0 += 1;
        if let Some((_, ext)) = f.rsplit_once('.') {
            if !ext.contains('/') && ext.len() <= 8 {
                e.1.insert(format!(".{ext}"));
            }
        }
    }
    let mut s = String::from("Directories (files, extensions):\n");
    for (d, (n, exts)) in dirs.iter().take(40) {
        let exts: Vec<&str> = exts.iter().map(String::as_str).take(6).collect();
        s.push_str(&format!("  {d}/ ({n}: {})\n", exts.join(" ")));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Directories waiting in the walk are not held open: with the
    /// process's descriptors limited to 40 (`prlimit`), a walk over 100
    /// subdirectories still lists every file (before: each subdirectory
    /// was opened when listed, the opens past the limit failed and their
    /// files were silently left out). Runs [`walk_under_few_descriptors`]
    /// in a child of this test binary.
    #[test]
    fn the_walk_holds_no_descriptor_per_waiting_directory() {
        // Both preconditions fail the test when missing: passing without
        // the walk having run would prove nothing (prlimit is util-linux's).
        let exe = std::env::current_exe().unwrap_or_else(|e| panic!("this test's binary: {e}"));
        let out = std::process::Command::new("prlimit")
            .arg("--nofile=40:40")
            .arg(exe)
            .args([
                "--exact",
                "context::tests::walk_under_few_descriptors",
                "--ignored",
                "--test-threads=1",
            ])
            .output()
            .unwrap_or_else(|e| panic!("prlimit (util-linux) is needed to limit descriptors: {e}"));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && text.contains("1 passed"),
            "{text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    #[ignore = "run by the_walk_holds_no_descriptor_per_waiting_directory under prlimit"]
    fn walk_under_few_descriptors() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        for i in 0..100 {
            let sub = d.path().join(format!("d{i:03}"));
            std::fs::create_dir(&sub).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(sub.join("a.csv"), "x\n").unwrap_or_else(|e| panic!("{e}"));
        }
        let root = Dir::open(d.path()).unwrap_or_else(|e| panic!("{e}"));
        let files = walk(&root);
        assert_eq!(files.len(), 100, "{files:?}");
    }

    #[test]
    fn lists_files_and_data_heads() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let w = d.path();
        std::fs::create_dir_all(w.join("data")).ok();
        std::fs::create_dir_all(w.join(".git")).ok();
        std::fs::write(
            w.join("data/orders.csv"),
            "id,customer,qty\n1,ann,2\n2,bo,3\n",
        )
        .ok();
        std::fs::write(w.join(".git/config"), "secret").ok();
        std::fs::write(w.join("README.md"), "# Title\n\ntext\n").ok();
        #[cfg(unix)]
        std::os::unix::fs::symlink("/etc/passwd", w.join("data/pw.csv")).ok();
        let c = workspace_context(w, "total qty of the orders").unwrap_or_default();
        assert!(c.contains("  data/orders.csv\n"), "{c}");
        assert!(c.contains("id,customer,qty\n  1,ann,2"), "{c}");
        assert!(
            !c.contains("2,bo,3"),
            "only the header and the first record: {c}"
        );
        assert!(!c.contains(".git") && !c.contains("secret"), "{c}");
        assert!(!c.contains("root:"), "a symlink is never followed: {c}");
        assert!(c.len() <= MAX_CONTEXT_BYTES);
    }

    #[test]
    fn a_layout_line_reads_back_as_written() {
        let lines = ["town\tcountry".to_string(), "Oslo\tNorway".to_string()];
        let line = format!("({})", table_layout("a.tsv", &lines).unwrap_or_default());
        assert_eq!(
            parse_table_layout(&line),
            Some(("\"\\t\"", vec![("0", "town"), ("1", "country")]))
        );
        assert_eq!(parse_table_layout("(other text; columns: 0 a)"), None);
        assert_eq!(
            parse_table_layout("fields split by \",\"; columns: 0 a"),
            None
        );
    }

    #[test]
    fn tables_get_their_layout() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let w = d.path();
        std::fs::write(w.join("users.csv"), "id,name,role\n1,ann,admin\n").ok();
        std::fs::write(w.join("towns.tsv"), "town\tcountry\nOslo\tNO\n").ok();
        std::fs::write(w.join("one.csv"), "word\nhello\n").ok();
        let c = workspace_context(w, "admins").unwrap_or_default();
        assert!(
            c.contains(
                "users.csv:\n  id,name,role\n  1,ann,admin\n  (fields split by \",\"; line 0 is the header, \
                 data rows are lines[1:]; columns: 0 id, 1 name, 2 role)"
            ),
            "{c}"
        );
        assert!(
            c.contains("(fields split by \"\\t\"; line 0 is the header, data rows are lines[1:]; columns: 0 town, 1 country)"),
            "{c}"
        );
        // One column: nothing to split.
        assert!(
            c.contains("one.csv:\n  word\n  hello\n") && !c.contains("columns: 0 word"),
            "{c}"
        );
        let wide: Vec<String> = (0..40).map(|i| format!("c{i}")).collect();
        let layout = table_layout("w.csv", &[wide.join(",")]).unwrap_or_default();
        assert!(layout.ends_with("23 c23, …"), "{layout}");
    }

    #[test]
    fn logs_get_their_level_words() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let w = d.path();
        std::fs::write(
            w.join("app.log"),
            "09:00 INFO up\n09:01 WARN slow (GET /x)\n09:02 ERROR down: IO\n09:03 INFO up\n09:04 DEBU",
        )
        .ok();
        let c = workspace_context(w, "warnings").unwrap_or_default();
        assert!(
            c.contains("app.log:\n  09:00 INFO up\n  (words in capitals: INFO, WARN, GET, ERROR)"),
            "{c}"
        );
        assert_eq!(
            level_words("no capitals\nOK at all\nLAST"),
            Vec::<String>::new()
        );
    }

    /// A configuration file's lines, values left out, are in the view's
    /// last section, which [`split_view`] takes off: the part that goes
    /// into the system prompt is the same as without it.
    #[test]
    fn configuration_keys_are_a_separate_last_section() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let w = d.path();
        std::fs::create_dir_all(w.join("config")).ok();
        std::fs::write(
            w.join("config/shop.ini"),
            "[shop]\nname = Corner Shop\n# a comment\nopen_hour = 8\n\n[report]\nday: monday\n",
        )
        .ok();
        std::fs::write(w.join(".env"), "export TOKEN=x\n").ok();
        std::fs::write(w.join("app.env"), "export TOKEN=x\nDEBUG=1\n").ok();
        std::fs::write(w.join("notes.txt"), "Keys of configuration files:\n").ok();
        let c = workspace_context(w, "the report day").unwrap_or_default();
        let (view, keys) = split_view(&c);
        assert_eq!(
            keys,
            [
                ("app.env", "\"export TOKEN=…\", \"DEBUG=…\""),
                (
                    "config/shop.ini",
                    "\"[shop]\", \"name = …\", \"open_hour = …\", \"[report]\", \"day: …\""
                )
            ],
            "{c}"
        );
        assert!(view.contains("config/shop.ini:\n  [shop]\n"), "{view}");
        assert!(
            view.contains("notes.txt:\n  Keys of configuration files:"),
            "{view}"
        );
        assert!(
            !view.contains("open_hour") && !view.ends_with('\n'),
            "{view}"
        );
        assert_eq!(split_view(view), (view, Vec::new()));
        // A cut last line counts no key; nothing at all gives no note.
        let long = format!("a = 1\n{}", "b".repeat(HEAD_BYTES));
        assert_eq!(config_keys(&long).as_deref(), Some("\"a = …\""));
        assert_eq!(config_keys("[only]\n# x = 1\n"), None);
        let many: String = (0..100).map(|i| format!("key_number_{i} = 1\n")).collect();
        let k = config_keys(&many).unwrap_or_default();
        assert!(k.len() <= MAX_KEYS_BYTES + 3 && k.ends_with('…'), "{k}");
    }

    #[test]
    fn large_workspace_gets_matches_and_outline() {
        let d = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let w = d.path();
        std::fs::create_dir_all(w.join("src")).ok();
        for i in 0..100 {
            std::fs::write(w.join(format!("src/mod{i}.py")), "x = 1\n").ok();
        }
        std::fs::write(w.join("src/billing.py"), "def bill(): pass\n").ok();
        let c = workspace_context(w, "where is billing handled").unwrap_or_default();
        assert!(c.contains("matching the task:\n  src/billing.py"), "{c}");
        assert!(c.contains("src/ (101: .py)"), "{c}");
        assert!(!c.contains("mod7.py"), "{c}");
        assert!(c.len() <= MAX_CONTEXT_BYTES);
    }
}
