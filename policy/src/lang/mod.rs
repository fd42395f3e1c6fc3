//! The lackpy language: parse → validate → grade.
//!
//! [`validate`] is the only way to obtain a [`Program`]. It runs, in order:
//! 1. the size cap (`limits.source_bytes`, `SourceTooLarge`);
//! 2. a linear pre-scan bounding nesting (`limits.max_depth`,
//!    `NestingTooDeep`; see [`prescan`]) so neither the parser nor any tree
//!    walk can exhaust the stack;
//! 3. the parser (`SyntaxError`): `fastparse` for the common subset,
//!    rustpython-parser for everything else (the trees are identical);
//! 4. an iterative first pass: NFKC-normalises every identifier in place (as
//!    CPython does, so `ｏｐｅｎ` *is* `open`), collects the assigned names
//!    and re-checks the tree's depth;
//! 5. the whitelist check (see `check.rs`), which reports *every*
//!    violation, sorted by position (`SyntaxError`s first: a program
//!    CPython refuses to compile gets its `SyntaxError` as the first error),
//!    each with a deterministic hint;
//! 6. the grade: the join of the grades of the tools the program calls.
//!
//! The name tables (builtins, method allowlist, forbidden names) live in
//! [`tables`] and are re-exported here.

mod check;
mod escapes;
mod fastparse;
mod indent;
mod names;
mod names_table;
mod numlit;
pub mod prescan;
pub mod surrogate;
mod syntax;
pub mod tables;
mod walk;

pub use tables::{
    forbidden_hint, is_builtin, method_allowed, method_allowed_any, BUILTINS, FORBIDDEN_NAMES,
    METHODS, TYPE_NAMES,
};

use crate::wire::{ErrorInfo, ErrorKind, Limits};
use rustpython_parser::{ast, text_size::TextSize, Mode};
use serde::Serialize;
use std::collections::BTreeSet;
use unicode_normalization::UnicodeNormalization;
use walk::NodeMut;

/// Grade of a program or tool: world coupling `w` and effects `d`, each 0–3.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Grade {
    /// World coupling.
    pub w: u8,
    /// Effects.
    pub d: u8,
}

impl Grade {
    /// Element-wise maximum (the lattice join).
    pub fn join(self, other: Grade) -> Grade {
        Grade {
            w: self.w.max(other.w),
            d: self.d.max(other.d),
        }
    }
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

impl ToolEntry {
    /// A tool visible under its own name, with these declared arguments.
    pub fn new(name: &str, args: &[&str], grade: Grade) -> ToolEntry {
        ToolEntry {
            name: name.to_string(),
            target: name.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            grade,
        }
    }
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

/// A validated program, ready to interpret. Identifiers in `body` are
/// already NFKC-normalised.
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
    /// Surrogate mode: a string literal held a lone surrogate escape, and
    /// `source` has it rewritten to a placeholder (see [`surrogate`]).
    pub surrogates: bool,
    line_starts: Vec<u32>,
    shifts: Vec<surrogate::Shift>,
}

impl Program {
    /// 1-based (line, column) of a byte offset into the source; the column
    /// counts characters of the program as written (before any surrogate
    /// escape was rewritten).
    pub fn locate(&self, offset: TextSize) -> (u32, u32) {
        let (line, col) = locate(&self.source, &self.line_starts, u32::from(offset));
        (line, surrogate::unshift(&self.shifts, line, col))
    }
}

/// Byte offsets where lines start. As CPython's tokenizer (universal
/// newlines), a lone `\r` ends a line as `\n` and `\r\n` do.
fn line_starts(source: &str) -> Vec<u32> {
    let b = source.as_bytes();
    let mut v = vec![0u32];
    for (i, &c) in b.iter().enumerate() {
        if c == b'\n' || (c == b'\r' && b.get(i + 1) != Some(&b'\n')) {
            v.push(u32::try_from(i + 1).unwrap_or(u32::MAX));
        }
    }
    v
}

fn locate(source: &str, starts: &[u32], off: u32) -> (u32, u32) {
    let line_idx = match starts.binary_search(&off) {
        Ok(i) => i,
        Err(i) => i.saturating_sub(1),
    };
    let start = starts.get(line_idx).copied().unwrap_or(0) as usize;
    let mut end = (off as usize).min(source.len());
    // CPython's tokenizer reads CRLF as LF: a caret on the LF of a CRLF
    // (a NEWLINE token) is just past the line's last character.
    if end > start
        && source.as_bytes().get(end - 1) == Some(&b'\r')
        && source.as_bytes().get(end) == Some(&b'\n')
    {
        end -= 1;
    }
    let col = source.get(start..end).map_or_else(
        || {
            String::from_utf8_lossy(&source.as_bytes()[start.min(end)..end])
                .chars()
                .count()
        },
        |s| s.chars().count(),
    );
    (
        u32::try_from(line_idx + 1).unwrap_or(u32::MAX),
        u32::try_from(col + 1).unwrap_or(u32::MAX),
    )
}

/// A validation error at a byte offset of `source`.
fn error_at(
    source: &str,
    starts: &[u32],
    off: usize,
    type_name: &str,
    message: String,
    hint: Option<String>,
) -> ErrorInfo {
    // CPython 3.11 raises an f-string's errors once the parser has read
    // the whole (concatenated) string: its caret is on the token after it.
    let (off, message) = if type_name == "SyntaxError"
        && (message.starts_with("f-string: ")
            || message.starts_with("f-string expression part")
            || message.starts_with("(unicode error) "))
    {
        let message = if message == "f-string: invalid conversion character" {
            "f-string: invalid conversion character: expected 's', 'r', or 'a'".to_string()
        } else if message == "f-string: unexpected EOF while parsing"
            && syntax::fstring_expr_has_hash(source, off)
        {
            "f-string expression part cannot include '#'".to_string()
        } else if message == "f-string: expecting '}'" {
            syntax::fstring_unclosed(source, off).unwrap_or(message)
        } else if message == "f-string: empty expression not allowed" {
            // CPython names what follows the empty field's expression.
            let end = (off + 1).min(source.len());
            let after = (0..=end)
                .rev()
                .find_map(|e| source.get(..e))
                .and_then(|head| head.rfind('{'))
                .and_then(|b| source.get(b + 1..))
                .and_then(|r| r.trim_start_matches([' ', '\t']).chars().next());
            match after {
                Some(c @ ('!' | ':' | '=')) => {
                    format!("f-string: expression required before '{c}'")
                }
                _ => message,
            }
        } else {
            message
        };
        (syntax::after_strings(source, off), message)
    } else {
        (off, message)
    };
    let (line, col) = locate(source, starts, u32::try_from(off).unwrap_or(u32::MAX));
    // CPython raises its indentation errors as SyntaxError's subclasses.
    let type_name = if type_name == "SyntaxError" {
        syntax::error_type(&message)
    } else {
        type_name
    };
    ErrorInfo {
        kind: ErrorKind::Validation,
        type_name: type_name.to_string(),
        message,
        line: Some(line),
        col: Some(col),
        hint,
    }
}

/// The deepest source nesting ever accepted, whatever `limits.max_depth`
/// says. Why: the parser and pass 2 recurse once per bracket level (about
/// 1.5 KiB of stack per level in debug builds, less in release), so 200
/// levels need well under 1 MiB of stack; the default 100 fits in 256 KiB.
pub const HARD_MAX_DEPTH: usize = 200;

/// Validate raw program bytes: non-UTF-8 input is an `EncodingError`.
///
/// # Errors
/// As [`validate`], plus `EncodingError` (positioned at the first bad byte).
pub fn validate_bytes(
    src: &[u8],
    ns: &Namespace,
    limits: &Limits,
) -> Result<Program, Vec<ErrorInfo>> {
    if let Some(e) = too_large(src.len(), limits) {
        return Err(vec![e]);
    }
    match std::str::from_utf8(src) {
        Ok(s) => validate(s, ns, limits),
        Err(e) => {
            let good = e.valid_up_to();
            let prefix = std::str::from_utf8(&src[..good]).unwrap_or_default();
            let starts = line_starts(prefix);
            let bad = src.get(good).copied().unwrap_or(0);
            Err(vec![error_at(
                prefix,
                &starts,
                good,
                "EncodingError",
                format!(
                    "program is not valid UTF-8: invalid byte 0x{bad:02x} at byte offset {good}"
                ),
                Some("save the program as UTF-8 text".to_string()),
            )])
        }
    }
}

fn too_large(len: usize, limits: &Limits) -> Option<ErrorInfo> {
    if (len as u64) <= limits.source_bytes {
        return None;
    }
    let message = format!(
        "program is {len} bytes; the limit (source_bytes) is {} bytes",
        limits.source_bytes
    );
    let e = ErrorInfo::new(ErrorKind::Validation, "SourceTooLarge", message);
    Some(e.at(1, 1).with_hint("split the work into smaller programs"))
}

/// Parse, validate and grade `source` against `ns` under `limits`
/// (`source_bytes`, `max_depth`).
///
/// Stack: call it on a thread with at least 1 MiB of stack (any main
/// thread or default Rust/tokio thread qualifies); see [`HARD_MAX_DEPTH`].
///
/// # Errors
/// Every violation found, each an [`ErrorInfo`] of kind `validation`,
/// sorted by position, `SyntaxError`s first.
pub fn validate(source: &str, ns: &Namespace, limits: &Limits) -> Result<Program, Vec<ErrorInfo>> {
    validate_with_predefined(source, ns, limits, &[])
}

/// The error a front end reports for a rejected program: the first of
/// [`validate`]'s errors (they are sorted by position, `SyntaxError`s
/// first), or a generic
/// `ValidationError` should the list be empty.
pub fn first_error(errors: Vec<ErrorInfo>) -> ErrorInfo {
    errors.into_iter().next().unwrap_or_else(|| {
        ErrorInfo::new(ErrorKind::Validation, "ValidationError", "invalid program")
    })
}

/// Like [`validate`], with `predefined` names that are already assigned
/// before the program starts (a session's variables from earlier cells), so
/// reading them is not an `UnknownName`. A predefined name that breaks the
/// naming rules (a `_` prefix) or is a builtin or tool name is ignored: it
/// cannot be a variable.
///
/// # Errors
/// As [`validate`].
pub fn validate_with_predefined(
    source: &str,
    ns: &Namespace,
    limits: &Limits,
    predefined: &[String],
) -> Result<Program, Vec<ErrorInfo>> {
    if let Some(e) = too_large(source.len(), limits) {
        return Err(vec![e]);
    }
    // CPython accepts (and ignores) a UTF-8 byte-order mark.
    let source = source.strip_prefix('\u{feff}').unwrap_or(source);
    // A text given in memory (`compile()`, `exec()`) whose last line ends
    // with CRLF reaches CPython's tokenizer with one more line:
    // `translate_newlines` turns the CRLF into LF, then, looking at the NUL
    // after it, adds the newline it adds to a text without one. So
    // `x = 1\` then CRLF compiles, and an unterminated string is detected
    // one line further on. The same extra line here (offsets unchanged).
    let crlf_end;
    let source = if source.ends_with("\r\n") {
        crlf_end = format!("{source}\n");
        crlf_end.as_str()
    } else {
        source
    };
    let starts = line_starts(source);
    if let Some(pos) = source.find('\0') {
        return Err(vec![error_at(
            source,
            &starts,
            pos,
            "SyntaxError",
            "source code cannot contain null bytes".to_string(),
            None,
        )]);
    }
    // Lone surrogate escapes become placeholders (surrogate mode); errors
    // found in the rewritten text are mapped back to the columns as written.
    let rewritten = surrogate::rewrite(source);
    let shifts = rewritten.shifts;
    if let (Some(_), Some(at)) = (&rewritten.text, rewritten.real_placeholder) {
        return Err(vec![error_at(
            source,
            &starts,
            at,
            "ForbiddenSyntax",
            "a string literal holds a character of U+10F800..U+10FFFF in a program that also has a lone surrogate escape (\\ud800-\\udfff)".to_string(),
            Some("lackpy stands in for surrogates with these private-use characters; a program may use one or the other, not both".to_string()),
        )]);
    }
    let surrogates = rewritten.text.is_some();
    let owned;
    let (source, starts) = match rewritten.text {
        Some(t) => {
            owned = t;
            let s = line_starts(&owned);
            (owned.as_str(), s)
        }
        None => (source, starts),
    };
    match check_rewritten(source, &starts, ns, limits, predefined, false) {
        Ok((body, grade, calls)) => Ok(Program {
            source: source.to_string(),
            body,
            grade,
            calls,
            surrogates,
            line_starts: starts,
            shifts,
        }),
        Err(mut errors) => {
            for e in &mut errors {
                // (Column 0 is CPython's caret on a DEDENT token.)
                if let (Some(line), Some(col @ 1..)) = (e.line, e.col) {
                    e.col = Some(surrogate::unshift(&shifts, line, col));
                }
            }
            Err(errors)
        }
    }
}

/// The repeated keyword argument (ASCII) rustpython-parser's error `e`
/// names, as (offset, name), when it is one.
fn repeated_keyword(source: &str, e: &rustpython_parser::ParseError) -> Option<(usize, String)> {
    let rustpython_parser::ParseErrorType::Lexical(
        rustpython_parser::lexer::LexicalErrorType::DuplicateKeywordArgumentError(name),
    ) = &e.error
    else {
        return None;
    };
    let off = u32::from(e.offset) as usize;
    (name.is_ascii()
        && source
            .get(off..)
            .is_some_and(|t| t.starts_with(name.as_str())))
    .then(|| (off, name.clone()))
}

/// How many repeated keyword arguments [`repeated_keywords`] renames at
/// most before it takes the first one as the answer.
const MAX_REPEATED_KEYWORDS: usize = 16;

/// A program with a repeated keyword argument (`f(a=1, a=2)`), which
/// rustpython-parser refuses as it parses and CPython 3.11 only in its
/// compiler, after its parser and symbol table: each repeated keyword is
/// renamed (same length, a name no other keyword of the text has) until
/// the text parses, and the program is checked again, so a parser or
/// symbol-table error anywhere, or a compiler error earlier in the text,
/// comes first as in CPython. Its errors, `keyword argument repeated: a`
/// among them.
fn repeated_keywords(
    source: &str,
    starts: &[u32],
    ns: &Namespace,
    limits: &Limits,
    predefined: &[String],
) -> Vec<ErrorInfo> {
    let mut text = source.to_string();
    let mut repeated = Vec::new();
    let parse = |t: &str| rustpython_parser::parse(t, Mode::Module, "<program>").map(drop);
    let mut result = parse(&text);
    while let Err(e) = &result {
        let Some((off, name)) = repeated_keyword(&text, e) else {
            break;
        };
        if repeated.len() >= MAX_REPEATED_KEYWORDS {
            break;
        }
        // `qq`, `zz`, ...: a name no word of the text spells (and no
        // keyword of Python: none repeats one letter).
        let taken = |f: &str| {
            text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|w| w == f)
        };
        let Some(fresh) = ["q", "z", "j", "k", "v", "w", "x", "y"]
            .iter()
            .map(|c| c.repeat(name.len()))
            .find(|f| !taken(f))
        else {
            break;
        };
        text.replace_range(off..off + name.len(), &fresh);
        repeated.push(error_at(
            source,
            starts,
            off,
            "SyntaxError",
            format!("keyword argument repeated: {name}"),
            Some("the program must be valid Python 3.11 syntax".to_string()),
        ));
        result = parse(&text);
    }
    let Some(first) = repeated.first().cloned() else {
        return Vec::new();
    };
    match &result {
        // A parse error elsewhere: CPython's parser raises it first.
        Err(e) if repeated_keyword(&text, e).is_none() => {
            return match check_rewritten(&text, starts, ns, limits, predefined, false) {
                Err(errors) if !errors.is_empty() => errors,
                _ => vec![first],
            };
        }
        // Too many to rename: the first is the answer.
        Err(_) => return vec![first],
        Ok(()) => {}
    }
    let mut errors = match check_rewritten(&text, starts, ns, limits, predefined, false) {
        Ok(_) => Vec::new(),
        // The renamed keywords' own (subset) errors are not the program's.
        Err(errors) => errors
            .into_iter()
            .filter(|e| !repeated.iter().any(|r| (r.line, r.col) == (e.line, e.col)))
            .collect(),
    };
    errors.extend(repeated);
    errors.sort_by_key(|e| (check::phase(e), e.line, e.col));
    errors
}

/// Steps 2–6 of [`validate`] on the (possibly rewritten) source. `probe`:
/// the text is one group of strings checked alone (`fstring_group_error`).
fn check_rewritten(
    source: &str,
    starts: &[u32],
    ns: &Namespace,
    limits: &Limits,
    predefined: &[String],
    probe: bool,
) -> Result<(Vec<ast::Stmt>, Grade, Vec<String>), Vec<ErrorInfo>> {
    // However high a profile sets `max_depth`, source nesting stays under
    // HARD_MAX_DEPTH: the check pass recurses once per level.
    let max_depth = (limits.max_depth as usize).min(HARD_MAX_DEPTH);
    let bracket_problem = match prescan::scan(source, max_depth) {
        Ok(p) => p,
        Err(t) => return Err(vec![too_deep(source, starts, t.offset, t.what, max_depth)]),
    };
    // Tabs in indentation are measured as CPython does (`indent`): the
    // parser reads the text with them as spaces (same offsets), and a line
    // CPython's tokenizer refuses is its error unless the parser fails first.
    let indent = indent::check(source);
    let (parse_text, indent_error) = match &indent {
        indent::Indent::Unchanged => (source, None),
        indent::Indent::Rewritten(t) => (t.as_str(), None),
        indent::Indent::Error {
            text,
            line_start,
            tab,
        } => (text.as_str(), Some((*line_start, *tab))),
    };
    let indentation_error = |line_start: usize, tab: bool| {
        let (message, at) = if tab {
            (
                "inconsistent use of tabs and spaces in indentation",
                line_start,
            )
        } else {
            // CPython's caret is just past the end of the line.
            let line = source.get(line_start..).unwrap_or("");
            let end = line.find(['\n', '\r']).unwrap_or(line.len());
            (
                "unindent does not match any outer indentation level",
                line_start + end,
            )
        };
        vec![error_at(
            source,
            starts,
            at,
            "SyntaxError",
            message.to_string(),
            Some("the program must be valid Python 3.11 syntax".to_string()),
        )]
    };
    let parsed = match fastparse::parse(parse_text) {
        Some(body) => {
            #[cfg(debug_assertions)]
            check_fast_parse(parse_text, &body);
            Ok(body)
        }
        None => rustpython_parser::parse(parse_text, Mode::Module, "<program>").map(|m| match m {
            ast::Mod::Module(m) => m.body,
            _ => Vec::new(),
        }),
    };
    // (CPython's tokenizer meets the indentation only after its parser
    // has failed on an earlier statement's parser-phase error, if any.)
    let parsed_ok = match (parsed, indent_error) {
        (Ok(body), Some((line_start, tab))) => {
            return Err(
                match parser_error_before(body, source, starts, ns, line_start, max_depth) {
                    Some((_, e)) => vec![e],
                    None => indentation_error(line_start, tab),
                },
            );
        }
        (Err(e), Some((line_start, tab))) if u32::from(e.offset) as usize >= line_start => {
            return Err(
                match earlier_parser_error(parse_text, source, starts, ns, line_start, max_depth) {
                    Some((_, e)) => vec![e],
                    None => indentation_error(line_start, tab),
                },
            );
        }
        (parsed, _) => parsed,
    };
    // A pre-scan problem as the SyntaxError at its own offset.
    let scan_error = |p: &prescan::BracketProblem| {
        let msg = p.message(|o| locate(source, starts, u32::try_from(o).unwrap_or(u32::MAX)).0);
        vec![error_at(
            source,
            starts,
            p.offset(),
            "SyntaxError",
            msg,
            Some("the program must be valid Python 3.11 syntax".to_string()),
        )]
    };
    let mut body = match parsed_ok {
        Ok(b) => b,
        Err(e) if repeated_keyword(source, &e).is_some() => {
            return Err(repeated_keywords(source, starts, ns, limits, predefined));
        }
        Err(e) => {
            let off = u32::from(e.offset) as usize;
            // CPython's tokenizer errors come first: after a parser error
            // it tokenizes the rest of the text, and the first tokenizer
            // error anywhere is the answer
            // (`_PyPegen_tokenize_full_source_to_check_for_errors`). The
            // candidates, as (start, caret, message); the earliest wins.
            let mut tokenizer: Vec<(usize, usize, String)> = Vec::new();
            // A malformed number literal (message and caret).
            if let Some(n) = numlit::first_error(source) {
                tokenizer.push((n.start, n.offset, n.message));
            }
            // An emoji the lexer took as a name, where no name may stand.
            if let rustpython_parser::ParseErrorType::UnrecognizedToken(
                rustpython_parser::Tok::Name { name },
                _,
            ) = &e.error
            {
                if let Some(c) = emoji_name(name) {
                    tokenizer.push((off, off, names::invalid_character_message(c)));
                }
            }
            // A non-ASCII character that cannot be part of a name: CPython
            // words it by the character and points at it (the lexer's error
            // is located just past it).
            if let rustpython_parser::ParseErrorType::Lexical(
                rustpython_parser::lexer::LexicalErrorType::UnrecognizedToken { tok },
            ) = &e.error
            {
                let at = off.saturating_sub(tok.len_utf8());
                if !tok.is_ascii() && source.get(at..off).is_some_and(|t| t.starts_with(*tok)) {
                    tokenizer.push((at, at, names::invalid_character_message(*tok)));
                }
            }
            // An invalid character further on (emoji, smart quotes, ...).
            if let Some((at, c)) = syntax::first_invalid_char(source) {
                tokenizer.push((at, at, names::invalid_character_message(c)));
            }
            // A bracket mismatch or an unterminated string.
            if let Some(p) = bracket_problem.as_ref().filter(|p| {
                !matches!(
                    p,
                    prescan::BracketProblem::FstringBackslash { .. }
                        | prescan::BracketProblem::NeverClosed { .. }
                )
            }) {
                let msg =
                    p.message(|o| locate(source, starts, u32::try_from(o).unwrap_or(u32::MAX)).0);
                tokenizer.push((p.offset(), p.offset(), msg));
            }
            // A backslash that does not end its line: the error, when the
            // parser fetches it; else the end of the tokenizer's scan.
            // (Past the failure only its second pass fetches it, and a
            // literal's bad escape or an f-string's error before the
            // failure ends the first.)
            let stray = syntax::first_stray_backslash(source);
            let literal_first = || {
                escapes::first_bad_escape(source).is_some_and(|u| u.offset < off)
                    || (!probe
                        && syntax::fstring_groups_before(source, off)
                            .into_iter()
                            .take(MAX_FSTRING_PROBES)
                            .any(|(start, end)| {
                                fstring_group_error(source, starts, ns, limits, start, end)
                                    .is_some()
                            }))
            };
            if let Some(bs) = stray.filter(|&bs| {
                bs <= off || (syntax::reads_token(source, off, bs) && !literal_first())
            }) {
                tokenizer.push((
                    bs,
                    bs + 1,
                    "unexpected character after line continuation character".to_string(),
                ));
            }
            // Except after a tokenizer error of the lexer's own (it stops
            // there) or an unexpected indent (CPython raises it without
            // tokenizing further): then only what comes before counts.
            // (An f-string's error is the parser's in CPython 3.11.)
            // (Nor is a literal's bad escape: CPython's parser decodes it.)
            let bad_escape = matches!(
                &e.error,
                rustpython_parser::ParseErrorType::Lexical(
                    rustpython_parser::lexer::LexicalErrorType::UnicodeError
                        | rustpython_parser::lexer::LexicalErrorType::StringError
                )
            );
            let stops = match &e.error {
                rustpython_parser::ParseErrorType::Lexical(l) => {
                    !matches!(
                        l,
                        rustpython_parser::lexer::LexicalErrorType::FStringError(_)
                    ) && !bad_escape
                }
                rustpython_parser::ParseErrorType::UnrecognizedToken(t, _) => {
                    *t == rustpython_parser::Tok::Indent
                }
                _ => false,
            };
            if let Some((_, at, message)) = tokenizer
                .into_iter()
                .filter(|t| (!stops || t.0 <= off) && stray.is_none_or(|bs| t.0 <= bs))
                .min_by_key(|t| t.0)
            {
                return Err(vec![error_at(
                    source,
                    starts,
                    at,
                    "SyntaxError",
                    message,
                    Some("the program must be valid Python 3.11 syntax".to_string()),
                )]);
            }
            // An earlier statement's parser-phase error (`1 = 2`), unless a
            // literal's bad escape comes before it.
            let earlier = earlier_parser_error(parse_text, source, starts, ns, off, max_depth);
            let earlier_at = earlier.as_ref().map_or(usize::MAX, |(at, _)| *at);
            // A literal's bad escape before the failure: CPython's parser
            // decoded it on its way there.
            let escape = escapes::first_bad_escape(source)
                .filter(|u| (bad_escape || u.offset < off) && u.offset < earlier_at);
            // So with an f-string's error in a group of strings read before
            // the failure (`f'{d['key']}'`: `key` fails the parse after the
            // group `f'{d['`), unless a bad escape comes first.
            let fstring_error = matches!(
                &e.error,
                rustpython_parser::ParseErrorType::Lexical(
                    rustpython_parser::lexer::LexicalErrorType::FStringError(_)
                )
            );
            if !probe && !fstring_error {
                let escape_at = escape.as_ref().map_or(usize::MAX, |u| u.offset);
                if let Some(err) = syntax::fstring_groups_before(source, off)
                    .into_iter()
                    .take(MAX_FSTRING_PROBES)
                    .take_while(|(start, end)| *start < earlier_at && *end < escape_at)
                    .find_map(|(start, end)| {
                        fstring_group_error(source, starts, ns, limits, start, end)
                    })
                {
                    return Err(vec![err]);
                }
            }
            if let Some(u) = escape {
                return Err(vec![escape_error(source, starts, u)]);
            }
            if let Some((_, e)) = earlier {
                return Err(vec![e]);
            }
            // A replacement field's expression that does not parse: CPython
            // 3.11 words and places it as the parse of `(expr)` alone.
            // A backslash in a field's expression is found as the field is
            // read, before the field is compiled.
            if let rustpython_parser::ParseErrorType::Lexical(
                rustpython_parser::lexer::LexicalErrorType::FStringError(f),
            ) = &e.error
            {
                let expr = syntax::fstring_field_expr(source, off);
                if let Some(p @ prescan::BracketProblem::FstringBackslash { offset }) =
                    &bracket_problem
                {
                    if *offset <= off + expr.map_or(0, str::len) {
                        return Err(scan_error(p));
                    }
                }
                // (A `#` in it is refused as the field is read.)
                if let Some((body, at, message)) = expr
                    .filter(|_| !syntax::fstring_expr_has_hash(source, off))
                    .filter(|_| {
                        matches!(f, rustpython_parser::FStringErrorType::InvalidExpression(_))
                    })
                    .and_then(syntax::fstring_field_error)
                {
                    let head = body.get(..at).unwrap_or(&body);
                    let line = locate(source, starts, u32::try_from(off).unwrap_or(u32::MAX)).0
                        as usize
                        + head.matches('\n').count();
                    let col = head.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
                    return Err(vec![ErrorInfo {
                        kind: ErrorKind::Validation,
                        type_name: "SyntaxError".to_string(),
                        message,
                        line: Some(u32::try_from(line).unwrap_or(u32::MAX)),
                        col: Some(u32::try_from(col).unwrap_or(u32::MAX)),
                        hint: Some("the program must be valid Python 3.11 syntax".to_string()),
                    }]);
                }
            }
            // CPython's specific wording for the commonest mistakes.
            let (at, message, col0) = match syntax::refine(source, off, &e.error) {
                Some(r) => (r.offset, r.message, r.col0),
                None => (off, syntax_message(&e.error), false),
            };
            let line_of = |o: usize| locate(source, starts, u32::try_from(o).unwrap_or(u32::MAX)).0;
            if let Some(p) = bracket_problem.as_ref().filter(|p| match p {
                // CPython says a bracket was never closed when its parser
                // reads to the end inside it, or when the last token it read
                // is on a later line than the bracket
                // (`_PyPegen_tokenize_full_source_to_check_for_errors`).
                prescan::BracketProblem::NeverClosed { offset, .. } => {
                    syntax::at_end(source, off)
                        || syntax::furthest_read(source, off)
                            .is_none_or(|o| line_of(o) > line_of(*offset))
                }
                _ => false,
            }) {
                return Err(scan_error(p));
            }
            let off = at;
            let mut err = error_at(
                source,
                starts,
                off,
                "SyntaxError",
                message,
                Some("the program must be valid Python 3.11 syntax".to_string()),
            );
            if col0 {
                err.col = Some(0);
            }
            return Err(vec![err]);
        }
    };
    // An escape the parser took and CPython 3.11 refuses (`\N{SHAKING
    // FACE}`, Unicode 15): CPython raises it while parsing, before any
    // compiler error and any of the subset's rules.
    if let Some(u) = escapes::first_bad_escape(source) {
        walk::dismantle(body);
        return Err(vec![escape_error(source, starts, u)]);
    }
    // CPython 3.11 rejects a backslash in an f-string field's expression
    // (`f'{"a\\n"}'`), which the parser accepts.
    if let Some(p @ prescan::BracketProblem::FstringBackslash { .. }) = &bracket_problem {
        return Err(scan_error(p));
    }
    // Pass 1 (iterative): normalise identifiers, collect assigned names,
    // bound the depth. The AST bound has a little slack over the pre-scan's
    // (which is the primary check) because the two count slightly differently.
    let ast_limit = max_depth + 8;
    let mut emoji = None;
    let (mut assigned, deep_at) = first_pass(&mut body, ast_limit, &mut emoji);
    for name in predefined {
        if is_predefinable(name, ns) {
            assigned.insert(name.clone());
        }
    }
    if let Some(off) = deep_at {
        walk::dismantle(body);
        return Err(vec![too_deep(
            source,
            starts,
            off,
            "expressions",
            max_depth,
        )]);
    }
    if let Some((start, c)) = emoji {
        walk::dismantle(body);
        let at = source
            .get(start..)
            .and_then(|t| t.find(c))
            .map_or(start, |i| start + i);
        return Err(vec![error_at(
            source,
            starts,
            at,
            "SyntaxError",
            names::invalid_character_message(c),
            Some("the program must be valid Python 3.11 syntax".to_string()),
        )]);
    }
    let mut checker = check::Checker::new(source, starts, ns, &assigned);
    checker.body(&body);
    let (mut errors, calls) = checker.finish();
    if !errors.is_empty() {
        // CPython compiles nothing past a SyntaxError (`break` outside a
        // loop, assigning to a literal, a repeated keyword): that is its
        // answer for the program, whatever subset rule an earlier line breaks.
        // Its SyntaxErrors come phase by phase (parser, symbol table,
        // compiler), each phase's in the order of the text.
        errors.sort_by_key(|(off, e)| (check::phase(e), *off));
        return Err(errors.into_iter().map(|(_, e)| e).collect());
    }
    let grade = calls
        .iter()
        .filter_map(|c| ns.get(c))
        .fold(Grade::default(), |g, t| g.join(t.grade));
    Ok((body, grade, calls))
}

/// At most this many groups of strings holding an f-string, before a parse
/// failure, are checked alone for an f-string error (each check is linear
/// in its group; the bound keeps a hostile text's error path linear too).
const MAX_FSTRING_PROBES: usize = 256;

/// The f-string error CPython 3.11 raises for the group of strings at
/// `start..end` of `source`, if any: the group is checked alone, in
/// parentheses (linear in the group: no copy of the text before it). An
/// error CPython places on the token after the group (the closing
/// parenthesis here) is placed on the source's; one inside a field (its
/// column is the field's own, as CPython's) is moved to the group's line.
fn fstring_group_error(
    source: &str,
    starts: &[u32],
    ns: &Namespace,
    limits: &Limits,
    start: usize,
    end: usize,
) -> Option<ErrorInfo> {
    let group = source.get(start..end)?;
    let probe = format!("({group})\n");
    let close = group.len() + 1;
    let probe_starts = line_starts(&probe);
    let errors = check_rewritten(&probe, &probe_starts, ns, limits, &[], true).err()?;
    let mut err = errors.into_iter().next()?;
    if err.type_name != "SyntaxError" || !err.message.starts_with("f-string") {
        return None;
    }
    let (close_line, close_col) = locate(
        &probe,
        &probe_starts,
        u32::try_from(close).unwrap_or(u32::MAX),
    );
    if (err.line, err.col) == (Some(close_line), Some(close_col)) {
        let at = syntax::after_strings(source, start);
        let (line, col) = locate(source, starts, u32::try_from(at).unwrap_or(u32::MAX));
        err.line = Some(line);
        err.col = Some(col);
    } else {
        let (group_line, _) = locate(source, starts, u32::try_from(start).unwrap_or(u32::MAX));
        err.line = err
            .line
            .map(|l| l.saturating_add(group_line.saturating_sub(1)));
    }
    Some(err)
}

/// CPython's SyntaxError for a literal's bad escape (caret after the string(s)).
/// The parse of `text`, or None when it does not parse.
fn parse_body(text: &str) -> Option<Vec<ast::Stmt>> {
    match fastparse::parse(text) {
        Some(body) => Some(body),
        None => match rustpython_parser::parse(text, Mode::Module, "<program>") {
            Ok(ast::Mod::Module(m)) => Some(m.body),
            Ok(_) => Some(Vec::new()),
            Err(_) => None,
        },
    }
}

/// The first of CPython's parser-phase SyntaxErrors (an invalid assignment
/// target, an unparenthesized generator argument, ...: `check::phase` 0)
/// that the checker finds in `body` before byte `limit`.
fn parser_error_before(
    mut body: Vec<ast::Stmt>,
    source: &str,
    starts: &[u32],
    ns: &Namespace,
    limit: usize,
    max_depth: usize,
) -> Option<(usize, ErrorInfo)> {
    let mut emoji = None;
    let (assigned, deep_at) = first_pass(&mut body, max_depth + 8, &mut emoji);
    if deep_at.is_some() {
        walk::dismantle(body);
        return None;
    }
    let mut checker = check::Checker::new(source, starts, ns, &assigned);
    checker.body(&body);
    walk::dismantle(body);
    let (errors, _) = checker.finish();
    errors
        .into_iter()
        .filter(|(off, e)| *off < limit && check::phase(e) == 0)
        .min_by_key(|(off, _)| *off)
}

/// CPython's answer for a program its parser fails on at byte `off` when
/// an earlier statement holds one of its parser-phase errors that
/// rustpython-parser accepts (`1 = 2`, `f(a for a in b, c)`): CPython's
/// parser is stricter, so its first pass already fails there, and its
/// second pass raises that statement's `invalid_*` error, which only a
/// tokenizer error replaces. The statements before the failing line are
/// parsed alone (cut there; or there with a `pass` at the line's
/// indentation, for a block left empty; or at the last statement starting
/// in column 0) and checked. At most three parses of the text.
fn earlier_parser_error(
    parse_text: &str,
    source: &str,
    starts: &[u32],
    ns: &Namespace,
    off: usize,
    max_depth: usize,
) -> Option<(usize, ErrorInfo)> {
    let (line, top) = syntax::statement_cuts(parse_text, off);
    if line == 0 {
        return None;
    }
    let head = parse_text.get(..line)?;
    let indent: String = parse_text
        .get(line..)?
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    let body = parse_body(head)
        .or_else(|| parse_body(&format!("{head}{indent}pass\n")))
        .or_else(|| {
            if top == 0 || top == line {
                return None;
            }
            parse_body(parse_text.get(..top)?)
        })?;
    parser_error_before(body, source, starts, ns, line, max_depth)
}

fn escape_error(source: &str, starts: &[u32], u: escapes::BadEscape) -> ErrorInfo {
    let hint = if u.message.ends_with("unknown Unicode character name") {
        "CPython 3.11 knows the character names of Unicode 14.0; write the character itself or a \\U escape"
    } else {
        "the program must be valid Python 3.11 syntax"
    };
    error_at(
        source,
        starts,
        u.offset,
        "SyntaxError",
        u.message,
        Some(hint.to_string()),
    )
}

/// Debug builds only: the fast parser must build exactly rustpython-parser's
/// tree (every test in the workspace then doubles as a differential test).
#[cfg(debug_assertions)]
fn check_fast_parse(source: &str, fast: &[ast::Stmt]) {
    let reference = rustpython_parser::parse(source, Mode::Module, "<program>");
    match reference {
        Ok(ast::Mod::Module(m)) => {
            debug_assert_eq!(fast, &m.body[..], "fast parser disagrees on {source:?}");
        }
        other => debug_assert!(
            false,
            "fast parser accepted what rustpython-parser rejects: {source:?}: {other:?}"
        ),
    }
}

/// Whether `name` may be bound before a program starts: an ASCII or
/// NFKC-normal identifier, no `_` prefix, not a builtin or tool.
pub fn is_predefinable(name: &str, ns: &Namespace) -> bool {
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    (first.is_alphabetic() || first == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
        && !name.starts_with('_')
        && name.nfkc().eq(name.chars())
        && !is_keyword(name)
        && !tables::is_builtin(name)
        && ns.get(name).is_none()
}

fn is_keyword(name: &str) -> bool {
    matches!(
        name,
        "False"
            | "None"
            | "True"
            | "and"
            | "as"
            | "assert"
            | "async"
            | "await"
            | "break"
            | "class"
            | "continue"
            | "def"
            | "del"
            | "elif"
            | "else"
            | "except"
            | "finally"
            | "for"
            | "from"
            | "global"
            | "if"
            | "import"
            | "in"
            | "is"
            | "lambda"
            | "nonlocal"
            | "not"
            | "or"
            | "pass"
            | "raise"
            | "return"
            | "try"
            | "while"
            | "with"
            | "yield"
    )
}

fn too_deep(source: &str, starts: &[u32], off: usize, what: &str, max: usize) -> ErrorInfo {
    error_at(
        source,
        starts,
        off,
        "NestingTooDeep",
        format!("program nests deeper than the limit (max_depth) of {max} levels ({what})"),
        Some("assign intermediate results to variables instead of nesting expressions".to_string()),
    )
}

/// rustpython-parser's message, except that its own wording ("Got
/// unexpected token ...") is CPython's plain `invalid syntax`.
fn syntax_message(e: &rustpython_parser::ParseErrorType) -> String {
    let s = e.to_string();
    if s.is_empty()
        || s.contains("Got unexpected")
        || s.contains("Got invalid")
        || s.contains("Got extraneous")
    {
        "invalid syntax".to_string()
    } else {
        s
    }
}

/// NFKC-normalise an identifier in place (ASCII is already normal).
fn normalize(id: &mut ast::Identifier) {
    if !id.as_str().is_ascii() {
        let n: String = id.as_str().nfkc().collect();
        *id = ast::Identifier::new(n);
    }
}

fn normalize_args(a: &mut ast::Arguments, assigned: &mut BTreeSet<String>) {
    let (with_defaults, star) = walk::params_mut(a);
    for awd in with_defaults {
        normalize(&mut awd.def.arg);
        assigned.insert(awd.def.arg.as_str().to_string());
    }
    for arg in star {
        normalize(&mut arg.arg);
        assigned.insert(arg.arg.as_str().to_string());
    }
}

/// A name the parser made of one emoji-presentation character (`⏩ = 1`):
/// rustpython-parser's lexer takes such a character as a name, CPython's
/// tokenizer refuses it ("invalid character").
fn emoji_name(id: &str) -> Option<char> {
    let mut cs = id.chars();
    match (cs.next(), cs.next()) {
        (Some(c), None) if !c.is_ascii() && unic_emoji_char::is_emoji_presentation(c) => Some(c),
        _ => None,
    }
}

/// Pass 1. Returns the assigned names and, if the tree is deeper than
/// `limit`, the offset of the first node past it; notes in `emoji` the
/// first emoji name (the start of its node, and the character).
fn first_pass(
    body: &mut [ast::Stmt],
    limit: usize,
    emoji: &mut Option<(usize, char)>,
) -> (BTreeSet<String>, Option<usize>) {
    use rustpython_parser::ast::Ranged;
    let mut note = |at: usize, id: &str| {
        if emoji.is_none() {
            *emoji = emoji_name(id).map(|c| (at, c));
        }
    };
    let mut assigned = BTreeSet::new();
    let mut stack: Vec<(NodeMut<'_>, usize)> = body
        .iter_mut()
        .rev()
        .map(|s| (NodeMut::Stmt(s), 1))
        .collect();
    let mut kids = Vec::new();
    while let Some((node, depth)) = stack.pop() {
        let start = match &node {
            NodeMut::Stmt(s) => u32::from(s.range().start()) as usize,
            NodeMut::Expr(e) => u32::from(e.range().start()) as usize,
        };
        if depth > limit {
            return (assigned, Some(start));
        }
        match node {
            NodeMut::Expr(e) => {
                match &mut *e {
                    ast::Expr::Name(n) => {
                        note(start, n.id.as_str());
                        normalize(&mut n.id);
                        if !matches!(n.ctx, ast::ExprContext::Load) {
                            assigned.insert(n.id.as_str().to_string());
                        }
                    }
                    ast::Expr::Attribute(a) => {
                        note(start, a.attr.as_str());
                        normalize(&mut a.attr);
                    }
                    ast::Expr::Call(c) => {
                        for k in &mut c.keywords {
                            if let Some(id) = k.arg.as_mut() {
                                note(start, id.as_str());
                                normalize(id);
                            }
                        }
                    }
                    ast::Expr::Lambda(l) => {
                        for p in &l.args.args {
                            note(start, p.def.arg.as_str());
                        }
                        normalize_args(&mut l.args, &mut assigned);
                    }
                    _ => {}
                }
                walk::children(NodeMut::Expr(e), &mut kids);
            }
            NodeMut::Stmt(s) => {
                match &mut *s {
                    ast::Stmt::FunctionDef(f) => normalize_args(&mut f.args, &mut assigned),
                    ast::Stmt::AsyncFunctionDef(f) => normalize_args(&mut f.args, &mut assigned),
                    _ => {}
                }
                walk::children(NodeMut::Stmt(s), &mut kids);
            }
        }
        stack.extend(kids.drain(..).rev().map(|k| (k, depth + 1)));
    }
    (assigned, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locate_counts_characters() {
        let src = "x = 1\nyé = ab\n";
        let s = line_starts(src);
        assert_eq!(locate(src, &s, 0), (1, 1));
        assert_eq!(locate(src, &s, 6), (2, 1));
        // 'ab' starts after "yé = " (é is 2 bytes).
        assert_eq!(locate(src, &s, 12), (2, 6));
    }
}
