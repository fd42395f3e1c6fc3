//! CPython 3.11's wording (and caret) for the commonest syntax errors.
//!
//! Why hand-written: rustpython-parser only says which token it did not
//! expect ("invalid syntax. Got unexpected token ..."), while CPython's PEG
//! parser, on its second pass, tries the `invalid_*` rules of
//! `Grammar/python.gram` and raises their specific messages: `expected ':'`
//! (`invalid_if_stmt`, `invalid_for_stmt`, ...), `expected an indented block
//! after 'X' statement on line N` (the same rules' `NEWLINE !INDENT`
//! alternatives), `Perhaps you forgot a comma?` (`invalid_expression`, inside
//! brackets), `Maybe you meant '==' or ':=' instead of '='?`
//! (`invalid_named_expression`), `':' expected after dictionary key`
//! (`invalid_kvpair`), `expected 'else' after 'if' expression`. Asked only
//! once a program has failed to parse, this module re-tokenizes the text up
//! to a little past the failure (one linear pass, no recursion) and looks at
//! the tokens around the failing one, at the same bracket level, to pick the
//! rule CPython would have matched. When none fits, the message is CPython's
//! plain `invalid syntax` at the parser's position.
//!
//! Also here: the forced `&&':'` after `else`/`try`/`finally`/`def`,
//! `expected 'except' or 'finally' block`, legacy `print x`, a dict key's
//! missing value or starred value, `positional argument follows keyword
//! argument [unpacking]` (caret on the call's `)`), the indentation
//! carets and the SyntaxError subclass of indentation errors
//! ([`error_type`]), `<>` and ASCII characters no token starts with (`$`,
//! `?`: plain `invalid syntax` at them), CPython's NEWLINE caret (at a
//! trailing comment's `#`), and the helpers `mod.rs` uses for CPython's
//! error precedence: whether the parser read to the end inside an unclosed
//! bracket ([`at_end`], [`furthest_read`]), invalid characters further on
//! ([`first_invalid_char`]), and the f-string caret ([`after_strings`]).
//! Every function is linear in the text and never indexes unchecked.

use super::check;
use super::numlit::skip_string;

use rustpython_parser::ParseErrorType;
use rustpython_parser::Tok;

/// CPython's message and the byte offset its caret points at.
pub struct Refined {
    pub offset: usize,
    pub message: String,
    /// CPython's column is 0 (its caret is on a DEDENT token).
    pub col0: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Name,
    Number,
    Str,
    Op,
    Newline,
}

#[derive(Clone, Copy, Debug)]
struct Token {
    start: usize,
    end: usize,
    kind: Kind,
    /// Bracket depth the token sits at (an opener counts at the outer level).
    level: usize,
}

const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// Is `p` one of Python's string prefixes (`r u f b br rb fr rf`, any case)?
fn is_string_prefix(p: Option<&[u8]>) -> bool {
    let Some(p) = p else {
        return false;
    };
    let lower: Vec<u8> = p.iter().map(u8::to_ascii_lowercase).collect();
    matches!(
        lower.as_slice(),
        b"r" | b"u" | b"f" | b"b" | b"br" | b"rb" | b"fr" | b"rf"
    )
}

fn ident_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 128
}

/// Tokens of `src` up to the first logical line ending after `until`
/// (strings, names, numbers, operators, logical newlines; comments and
/// continuation lines skipped). Linear in the text.
fn tokenize(src: &str, until: usize) -> Vec<Token> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut level = 0usize;
    // CPython's NEWLINE token starts where a trailing comment does.
    let mut comment = None;
    while let Some(&c) = b.get(i) {
        let start = i;
        match c {
            b'#' => {
                comment = Some(start);
                while b.get(i).is_some_and(|&c| c != b'\n') {
                    i += 1;
                }
                continue;
            }
            b'\\' if b.get(i + 1) == Some(&b'\n') => {
                i += 2;
                continue;
            }
            b'\n' => {
                i += 1;
                let at = comment.take().unwrap_or(start);
                if level == 0 {
                    // Only one newline per logical line.
                    if out.last().is_some_and(|t: &Token| t.kind != Kind::Newline) {
                        out.push(Token {
                            start: at,
                            end: i,
                            kind: Kind::Newline,
                            level,
                        });
                    }
                    if start > until {
                        break;
                    }
                }
                continue;
            }
            b' ' | b'\t' | b'\r' | b'\x0c' => {
                i += 1;
                continue;
            }
            b'\'' | b'"' => {
                i = skip_string(b, i);
                out.push(Token {
                    start,
                    end: i,
                    kind: Kind::Str,
                    level,
                });
                continue;
            }
            b'0'..=b'9' => {
                // One `.` at most, before any exponent, in a decimal number
                // (`2.5.0` is `2.5` then `.0`, `0x1.5` is `0x1` then `.5`).
                let decimal = !(c == b'0'
                    && matches!(b.get(i + 1), Some(b'x' | b'X' | b'o' | b'O' | b'b' | b'B')));
                let mut dot_ok = decimal;
                while let Some(&d) = b.get(i) {
                    if d == b'.' {
                        if !dot_ok {
                            break;
                        }
                        dot_ok = false;
                    } else if decimal && matches!(d, b'e' | b'E') {
                        dot_ok = false;
                    } else if !(ident_byte(d)
                        || (decimal
                            && matches!(d, b'+' | b'-')
                            && matches!(b.get(i.wrapping_sub(1)), Some(b'e' | b'E'))))
                    {
                        break;
                    }
                    i += 1;
                }
                out.push(Token {
                    start,
                    end: i,
                    kind: Kind::Number,
                    level,
                });
                continue;
            }
            b'.' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                i += 1;
                while b.get(i).is_some_and(|&c| ident_byte(c))
                    || (matches!(b.get(i), Some(b'+' | b'-'))
                        && matches!(b.get(i.wrapping_sub(1)), Some(b'e' | b'E')))
                {
                    i += 1;
                }
                out.push(Token {
                    start,
                    end: i,
                    kind: Kind::Number,
                    level,
                });
                continue;
            }
            c if ident_byte(c) => {
                while b.get(i).is_some_and(|&c| ident_byte(c)) {
                    i += 1;
                }
                // A string prefix (`f'`, `rb"`) belongs to the string.
                if matches!(b.get(i), Some(b'\'' | b'"')) && is_string_prefix(b.get(start..i)) {
                    i = skip_string(b, i);
                    out.push(Token {
                        start,
                        end: i,
                        kind: Kind::Str,
                        level,
                    });
                } else {
                    out.push(Token {
                        start,
                        end: i,
                        kind: Kind::Name,
                        level,
                    });
                }
                continue;
            }
            b'(' | b'[' | b'{' => {
                out.push(Token {
                    start,
                    end: i + 1,
                    kind: Kind::Op,
                    level,
                });
                level += 1;
                i += 1;
                continue;
            }
            b')' | b']' | b'}' => {
                level = level.saturating_sub(1);
                out.push(Token {
                    start,
                    end: i + 1,
                    kind: Kind::Op,
                    level,
                });
                i += 1;
                continue;
            }
            _ => {
                // Operators: the longest of the three-, two- and one-character ones.
                let two = src.get(i..i + 2).unwrap_or("");
                let three = src.get(i..i + 3).unwrap_or("");
                let len = if matches!(three, "**=" | "//=" | ">>=" | "<<=" | "...") {
                    3
                } else if matches!(
                    two,
                    "==" | "!="
                        | "<="
                        | ">="
                        | ":="
                        | "->"
                        | "**"
                        | "//"
                        | "<<"
                        | ">>"
                        | "+="
                        | "-="
                        | "*="
                        | "/="
                        | "%="
                        | "&="
                        | "|="
                        | "^="
                        | "@="
                ) {
                    2
                } else {
                    1
                };
                // Keep to character boundaries on odd input.
                let mut end = i + len;
                while end < b.len() && !src.is_char_boundary(end) {
                    end += 1;
                }
                i = end;
                out.push(Token {
                    start,
                    end,
                    kind: Kind::Op,
                    level,
                });
            }
        }
    }
    // The end of the text ends the last logical line.
    if out.last().is_some_and(|t: &Token| t.kind != Kind::Newline) && level == 0 {
        out.push(Token {
            start: comment.unwrap_or(src.len()),
            end: src.len() + 1,
            kind: Kind::Newline,
            level,
        });
    }
    out
}

struct View<'a> {
    src: &'a str,
    toks: Vec<Token>,
}

impl View<'_> {
    fn text(&self, i: usize) -> &str {
        self.toks
            .get(i)
            .and_then(|t| self.src.get(t.start..t.end))
            .unwrap_or("")
    }
    fn is(&self, i: usize, s: &str) -> bool {
        self.text(i) == s
    }
    fn kind(&self, i: usize) -> Option<Kind> {
        self.toks.get(i).map(|t| t.kind)
    }
    fn level(&self, i: usize) -> usize {
        self.toks.get(i).map_or(0, |t| t.level)
    }
    /// The level of the expression token `i` ends: a closer's inside.
    fn inner(&self, i: usize) -> usize {
        let l = self.level(i);
        if matches!(self.text(i), ")" | "]" | "}") {
            l + 1
        } else {
            l
        }
    }
    fn is_keyword(&self, i: usize) -> bool {
        self.kind(i) == Some(Kind::Name) && KEYWORDS.contains(&self.text(i))
    }
    /// Does token `i` end an expression (an atom, or a closing bracket)?
    fn ends_expr(&self, i: usize) -> bool {
        match self.kind(i) {
            Some(Kind::Name) => {
                !self.is_keyword(i) || matches!(self.text(i), "True" | "False" | "None")
            }
            Some(Kind::Number | Kind::Str) => true,
            Some(Kind::Op) => matches!(self.text(i), ")" | "]" | "}" | "..."),
            _ => false,
        }
    }
    /// Does token `i` start an expression that cannot continue the previous
    /// one (a name, number or string)?
    fn starts_atom(&self, i: usize) -> bool {
        match self.kind(i) {
            Some(Kind::Name) => {
                !self.is_keyword(i) || matches!(self.text(i), "True" | "False" | "None")
            }
            Some(Kind::Number | Kind::Str) => true,
            Some(Kind::Op) => self.text(i) == "...",
            _ => false,
        }
    }
    /// The index just past the bracket group opened at token `j` (its
    /// closer's index plus one), if `j` opens one that is closed.
    fn group_end(&self, j: usize) -> Option<usize> {
        if !matches!(self.text(j), "(" | "[" | "{") {
            return None;
        }
        let lvl = self.level(j);
        (j + 1..self.toks.len())
            .find(|&i| self.level(i) <= lvl)
            .filter(|&c| self.level(c) == lvl && matches!(self.text(c), ")" | "]" | "}"))
            .map(|c| c + 1)
    }
    /// Is token `i` inside the parentheses of a call (`f(`, `x.m(`, `g()(`)?
    fn in_call(&self, i: usize) -> bool {
        let lvl = self.level(i);
        (0..i)
            .rev()
            .find(|&j| self.level(j) < lvl)
            .is_some_and(|j| self.is(j, "(") && j.checked_sub(1).is_some_and(|p| self.ends_expr(p)))
    }
    /// Index of the matching opener of the closer at `i`, walking back.
    fn opener(&self, i: usize) -> Option<usize> {
        let lvl = self.level(i);
        (0..i)
            .rev()
            .find(|&j| self.level(j) == lvl && matches!(self.text(j), "(" | "[" | "{"))
    }
    /// Walk back from token `i` (exclusive) over one expression at `i`'s
    /// level: returns the index of the delimiter before it (or `None` at the
    /// start of the text) and whether a token of `stop` was crossed.
    fn back(&self, i: usize, stop: &[&str]) -> (Option<usize>, bool) {
        self.back_to(i, stop, &[])
    }
    /// As [`View::back`], also stopping at a name of `delims`.
    fn back_to(&self, i: usize, stop: &[&str], delims: &[&str]) -> (Option<usize>, bool) {
        let lvl = self.inner(i);
        let mut j = i;
        let mut crossed = false;
        while j > 0 {
            j -= 1;
            let t = self.text(j);
            if self.level(j) < lvl
                || self.kind(j) == Some(Kind::Newline)
                || matches!(t, "," | ":" | "=" | ":=" | ";")
                || (self.level(j) == lvl && self.kind(j) == Some(Kind::Name) && delims.contains(&t))
            {
                return (Some(j), crossed);
            }
            if self.level(j) > lvl {
                continue;
            }
            if matches!(t, ")" | "]" | "}") {
                match self.opener(j) {
                    Some(o) => j = o,
                    None => return (None, crossed),
                }
                continue;
            }
            if stop.contains(&t) {
                crossed = true;
            }
        }
        (None, crossed)
    }
}

/// The SyntaxError subclass CPython 3.11 raises with `message`:
/// `IndentationError` for its indentation messages (the parser's
/// `RAISE_INDENTATION_ERROR` and the tokenizer's dedent and depth errors),
/// `TabError` for inconsistent tabs and spaces, else `SyntaxError`.
pub fn error_type(message: &str) -> &'static str {
    if message == TAB_ERROR {
        "TabError"
    } else if message == "unexpected indent"
        || message == "unexpected unindent"
        || message == "unindent does not match any outer indentation level"
        || message == "too many levels of indentation"
        || message.starts_with("expected an indented block")
    {
        "IndentationError"
    } else {
        "SyntaxError"
    }
}

/// CPython's message for indentation that mixes tabs and spaces
/// inconsistently (a `TabError`).
const TAB_ERROR: &str = "inconsistent use of tabs and spaces in indentation";

fn message(offset: usize, message: &str) -> Option<Refined> {
    Some(Refined {
        offset,
        message: message.to_string(),
        col0: false,
    })
}

/// CPython's message (and caret) for the parse error `err` at byte `off` of
/// `src`, when one of the rules above applies.
pub fn refine(src: &str, off: usize, err: &ParseErrorType) -> Option<Refined> {
    // A backslash continuing the last line into the end of the text:
    // CPython's tokenizer raises E_EOF there, its caret just past the
    // backslash.
    if let Some(bs) = final_backslash(src).filter(|&bs| off >= bs) {
        return message(bs + 1, "unexpected EOF while parsing");
    }
    match err {
        ParseErrorType::Lexical(rustpython_parser::lexer::LexicalErrorType::IndentationError)
            if header_at_end(src, off) =>
        {
            // rustpython's lexer words a header ending the text (after a
            // comment) as a dedent error; CPython as the missing block.
            let v = View {
                src,
                toks: tokenize(src, off),
            };
            // CPython's caret: the end of the text.
            return indented_block(&v, v.toks.len()).map(|r| Refined {
                offset: end_caret(src),
                col0: false,
                ..r
            });
        }
        ParseErrorType::Lexical(rustpython_parser::lexer::LexicalErrorType::IndentationError) => {
            // CPython's caret is just past the end of the offending line.
            let (ls, le) = line_bounds(src, off);
            let line = src.get(ls..le).unwrap_or("");
            let end = ls + line.trim_end_matches('\r').len();
            return message(end, "unindent does not match any outer indentation level");
        }
        ParseErrorType::Lexical(
            rustpython_parser::lexer::LexicalErrorType::UnrecognizedToken { tok },
        ) if tok.is_ascii() && *tok != '!' && src.get(..off).is_some_and(|h| h.ends_with(*tok)) => {
            // An ASCII character no token starts with (`$`, `?`, a
            // backquote): CPython's tokenizer passes it to the parser as an
            // operator, which refuses it where it stands; rustpython's lexer
            // reports it just past the character (a lone `!` at it).
            return message(off - 1, "invalid syntax");
        }
        ParseErrorType::Lexical(rustpython_parser::lexer::LexicalErrorType::TabError) => {
            // CPython's tokenizer raises it with no column: its caret is
            // at the start of the line.
            return message(line_bounds(src, off).0, TAB_ERROR);
        }
        ParseErrorType::UnrecognizedToken(Tok::Indent, _) => {
            // CPython's caret is on the last character of the indentation.
            let (ls, le) = line_bounds(src, off);
            let line = src.get(ls..le).unwrap_or("");
            let width = line.len() - line.trim_start_matches([' ', '\t', '\x0c']).len();
            return message(ls + width.saturating_sub(1), "unexpected indent");
        }
        _ => {}
    }
    if let ParseErrorType::Lexical(
        rustpython_parser::lexer::LexicalErrorType::PositionalArgumentError,
    ) = err
    {
        // CPython raises it once the call's arguments are read: its caret
        // is on the closing parenthesis.
        let v = View {
            src,
            toks: tokenize(src, off),
        };
        let k = v.toks.iter().position(|t| t.end > off)?;
        let lvl = v.level(k);
        let close = (k..v.toks.len()).find(|&j| v.level(j) < lvl && v.is(j, ")"))?;
        // `**d` before the positional argument: CPython says so.
        let open = v.opener(close)?;
        let unpacking = (open + 1..k)
            .any(|j| v.level(j) == lvl && v.is(j, "**") && (j == open + 1 || v.is(j - 1, ",")));
        return message(
            v.toks.get(close)?.start,
            if unpacking {
                "positional argument follows keyword argument unpacking"
            } else {
                "positional argument follows keyword argument"
            },
        );
    }
    let ParseErrorType::UnrecognizedToken(tok, expected) = err else {
        return None;
    };
    let v = View {
        src,
        toks: tokenize(src, off),
    };
    // The failing token: the first at or after the parser's offset.
    let k = v.toks.iter().position(|t| t.end > off);
    if expected.as_deref() == Some("Indent") {
        return indented_block(&v, k.unwrap_or(v.toks.len()));
    }
    let k = k?;
    // `<>`: one token (NOTEQUAL) to CPython's tokenizer, which its parser
    // refuses where it stands (rustpython's lexer reads `<` then `>`).
    if let (Some(lt), Some(gt)) = (k.checked_sub(1).and_then(|j| v.toks.get(j)), v.toks.get(k)) {
        if v.is(k, ">") && v.is(k - 1, "<") && lt.end == gt.start {
            return message(lt.start, "invalid syntax");
        }
    }
    let newline = matches!(tok, Tok::Newline | Tok::EndOfFile) || v.kind(k) == Some(Kind::Newline);
    if newline {
        let off = match v.toks.get(k) {
            Some(t) if t.kind == Kind::Newline => t.start,
            _ => off,
        };
        return call_kwarg(&v, k)
            .or_else(|| annotation_colon(&v, k))
            .or_else(|| invalid_assignment(&v, k))
            .or_else(|| missing_colon(&v, k, off))
            .or_else(|| missing_else(&v, k))
            .or_else(|| message(off, "invalid syntax"));
    }
    call_kwarg(&v, k)
        .or_else(|| annotation_colon(&v, k))
        .or_else(|| invalid_assignment(&v, k))
        .or_else(|| comprehension_target(&v, k))
        .or_else(|| try_without_handler(&v, k))
        .or_else(|| legacy_print(&v, k))
        .or_else(|| forced_colon(&v, k))
        .or_else(|| dict_value(&v, k))
        .or_else(|| v.is(k, "=").then(|| equals_in_expression(&v, k)).flatten())
        .or_else(|| dict_key(&v, k))
        .or_else(|| missing_comma(&v, k))
        .or_else(|| missing_else(&v, k))
        .or_else(|| message(off, "invalid syntax"))
}

/// The first backslash outside strings and comments that does not end its
/// line: CPython's tokenizer stops there (`E_LINECONT`). When its parser
/// fetches that token, it is the error "unexpected character after line
/// continuation character"; when only the scan for tokenizer errors after
/// a parser error reaches it, the scan ends there without an error, so
/// nothing after it is looked at.
pub fn first_stray_backslash(src: &str) -> Option<usize> {
    let b = src.as_bytes();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'#' => {
                while b.get(i).is_some_and(|&c| c != b'\n' && c != b'\r') {
                    i += 1;
                }
            }
            b'\'' | b'"' => i = skip_string(b, i),
            b'\\' => {
                if matches!(b.get(i + 1), Some(b'\n' | b'\r') | None) {
                    i += 2;
                } else {
                    return Some(i);
                }
            }
            c if ident_byte(c) => {
                let start = i;
                while b.get(i).is_some_and(|&c| ident_byte(c)) {
                    i += 1;
                }
                if matches!(b.get(i), Some(b'\'' | b'"')) && is_string_prefix(b.get(start..i)) {
                    i = skip_string(b, i);
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// Does CPython's parser fetch the token starting at `at`, after failing
/// at the token at `off`? Yes up to where `furthest_read` knows it stops,
/// and for the token just after a failing string (its second pass parses
/// that as an atom, whose `STRING+` looks at the next token) or opening
/// bracket.
pub fn reads_token(src: &str, off: usize, at: usize) -> bool {
    if at <= off || furthest_read(src, off).is_some_and(|f| at <= f) {
        return true;
    }
    let v = View {
        src,
        toks: tokenize(src, off),
    };
    let Some(k) = v.toks.iter().position(|t| t.end > off) else {
        return false;
    };
    v.toks.get(k + 1).is_some_and(|t| t.start == at)
        && (v.kind(k) == Some(Kind::Str) || matches!(v.text(k), "(" | "[" | "{"))
}

/// The offset of a backslash ending the text (before at most one final
/// newline), outside a comment, when there is one: a line continuation
/// into the end of the text. (A `#` anywhere on its line, even in a
/// string, makes it not count: the parser's own error stands.)
fn final_backslash(src: &str) -> Option<usize> {
    let body = src
        .strip_suffix("\r\n")
        .or_else(|| src.strip_suffix('\n'))
        .or_else(|| src.strip_suffix('\r'))
        .unwrap_or(src);
    let bs = body.len().checked_sub(1).filter(|_| body.ends_with('\\'))?;
    let line = body.rsplit(['\n', '\r']).next().unwrap_or(body);
    (!line.contains('#')).then_some(bs)
}

/// Where CPython's ENDMARKER token stands: the end of the text's last
/// line, whatever it holds (spaces, a comment, nothing), not counting one
/// final line ending.
fn end_caret(src: &str) -> usize {
    src.strip_suffix("\r\n")
        .or_else(|| src.strip_suffix('\n'))
        .or_else(|| src.strip_suffix('\r'))
        .unwrap_or(src)
        .len()
}

/// Is the failing token at `off` the last of the text (the parser read up
/// to the end)?
///
/// The failing token itself counts as read past only when the parser's
/// second pass goes on from it: a newline, or the start of an expression
/// (`[1 2`: the `2` is parsed, and the end read); a `;` or `->` there
/// stops it (`f(1, ;` is plain 'invalid syntax' at the `;`).
pub fn at_end(src: &str, off: usize) -> bool {
    let v = View {
        src,
        toks: tokenize(src, off),
    };
    v.toks.iter().position(|t| t.end > off).is_none_or(|k| {
        let goes_on = v.kind(k) == Some(Kind::Newline)
            || v.starts_atom(k)
            || matches!(
                v.text(k),
                "(" | "["
                    | "{"
                    | "-"
                    | "+"
                    | "~"
                    | "*"
                    | "**"
                    | "not"
                    | "lambda"
                    | "await"
                    | "yield"
            );
        goes_on
            && v.toks
                .get(k + 1..)
                .is_none_or(|r| r.iter().all(|t| t.kind == Kind::Newline))
    })
}

/// Where the last token CPython's parser reads lies, when the failing
/// token at `off` is a `=` in an expression: its second pass
/// (`invalid_named_expression`) reads the `bitwise_or` after it and one
/// token more (`None`: that runs to the end of the text); when it is the
/// second of two expressions with no comma between them, the whole second
/// expression and one token more (`invalid_expression`). Otherwise `off`.
pub fn furthest_read(src: &str, off: usize) -> Option<usize> {
    let v = View {
        src,
        toks: tokenize(src, off),
    };
    let Some(k) = v.toks.iter().position(|t| t.end > off) else {
        return Some(off);
    };
    // (At statement level too: the rule parses, then declines to raise.)
    let second_expression = missing_comma(&v, k).is_some()
        || (v.level(k) == 0
            && k.checked_sub(1).is_some_and(|p| v.ends_expr(p))
            && (v.starts_atom(k) || v.is(k, "{")));
    if second_expression {
        // `invalid_expression` parses the second expression whole and
        // reads one token more.
        let lvl = v.level(k);
        let mut j = k + 1;
        while let Some(t) = v.toks.get(j) {
            let x = v.text(j);
            let stop = t.kind == Kind::Newline
                || t.level < lvl
                || (t.level == lvl
                    && (matches!(x, "," | ":" | "=" | ":=" | ";")
                        || (t.kind == Kind::Name
                            && v.is_keyword(j)
                            && !matches!(
                                x,
                                "True" | "False" | "None" | "and" | "or" | "not" | "in" | "is"
                                    | "if" | "else"
                            ))
                        || (v.ends_expr(j - 1) && v.starts_atom(j))))
                // Inside its brackets, where their contents cannot go on
                // (`{ =`, `(a b`, `;`), the parse stops too.
                || (t.level > lvl
                    && (x == ";"
                        || (v.ends_expr(j - 1) && v.starts_atom(j))
                        || (matches!(x, "=" | ":=")
                            && matches!(v.text(j - 1), "(" | "[" | "{" | ","))));
            if stop {
                return Some(t.start);
            }
            j += 1;
        }
        return None;
    }
    if !v.is(k, "=") || equals_in_expression(&v, k).is_none() {
        return Some(off);
    }
    let lvl = v.level(k);
    let mut j = k + 1;
    while let Some(t) = v.toks.get(j) {
        let x = v.text(j);
        let stop = t.kind == Kind::Newline
            || t.level < lvl
            || (t.level == lvl
                && (matches!(
                    x,
                    "," | ":" | "=" | ":=" | "==" | "!=" | "<" | ">" | "<=" | ">=" | ";"
                ) || (t.kind == Kind::Name
                    && v.is_keyword(j)
                    && !matches!(x, "True" | "False" | "None"))
                    || (j > k + 1 && v.ends_expr(j - 1) && v.starts_atom(j))));
        if stop {
            return Some(t.start);
        }
        j += 1;
    }
    None
}

/// The first character outside strings and comments that CPython's
/// tokenizer refuses but rustpython-parser's lexer takes into a name (an
/// emoji), or that a program often holds by mistake (typographic quotes and
/// dashes, no-break spaces, currency, arrows, math and other symbols), with
/// its offset. Linear; `None` when there is none of these.
pub fn first_invalid_char(src: &str) -> Option<(usize, char)> {
    let b = src.as_bytes();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        match c {
            b'#' => {
                while b.get(i).is_some_and(|&c| c != b'\n') {
                    i += 1;
                }
            }
            b'\'' | b'"' => i = skip_string(b, i),
            c if c.is_ascii_alphanumeric() || c == b'_' => {
                // A name, or a string prefix with its string.
                let start = i;
                while b
                    .get(i)
                    .is_some_and(|&c| c.is_ascii_alphanumeric() || c == b'_')
                {
                    i += 1;
                }
                if matches!(b.get(i), Some(b'\'' | b'"')) && is_string_prefix(b.get(start..i)) {
                    i = skip_string(b, i);
                }
            }
            c if c >= 128 => {
                let ch = src.get(i..).and_then(|t| t.chars().next())?;
                let u = u32::from(ch);
                let bad = unic_emoji_char::is_emoji_presentation(ch)
                    || ch.is_whitespace()
                    || matches!(u, 0x2010..=0x2027 | 0x20A0..=0x20CF | 0x2190..=0x22FF | 0x2500..=0x27BF);
                if bad {
                    return Some((i, ch));
                }
                i += ch.len_utf8();
            }
            _ => i += 1,
        }
    }
    None
}

/// The offset of the token after the string literals (adjacent ones
/// concatenated) around `off`: where CPython 3.11 reports an f-string's
/// errors. `off` itself when `off` is in no string.
pub fn after_strings(src: &str, off: usize) -> usize {
    let toks = tokenize(src, off);
    let Some(mut j) = toks.iter().position(|t| t.end > off) else {
        return off;
    };
    // The group may start before the string holding `off`.
    if toks
        .get(j)
        .is_none_or(|t| t.kind != Kind::Str || t.start > off)
    {
        return off;
    }
    while toks.get(j + 1).is_some_and(|t| t.kind == Kind::Str) {
        j += 1;
    }
    toks.get(j + 1)
        .map_or(src.len(), |t| t.start.min(src.len()))
}

/// CPython 3.11's message for the f-string around `off` when one of its
/// replacement fields' expressions runs to the end of the string inside a
/// bracket or a quote (`fstring_find_expr`): "f-string: unmatched '['" for
/// the innermost bracket, "f-string: unterminated string" for a quote.
/// `None` for any other f-string (rustpython-parser's "expecting '}'" then
/// stands, as CPython's).
pub fn fstring_unclosed(src: &str, off: usize) -> Option<String> {
    let toks = tokenize(src, off);
    let t = toks
        .iter()
        .find(|t| t.kind == Kind::Str && t.start <= off && off < t.end)?;
    let s = src.get(t.start..t.end)?;
    let q = s.find(['\'', '"'])?;
    if !s.get(..q)?.contains(['f', 'F']) {
        return None;
    }
    let quote = s.get(q..q + 1)?;
    let triple = s.len() >= q + 6 && s.get(q..)?.starts_with(&quote.repeat(3));
    let ql = if triple { 3 } else { 1 };
    let body = s.get(q + ql..s.len().checked_sub(ql)?)?.as_bytes();
    // Literal text, then fields (a format spec's nested fields one deep).
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'{' if body.get(i + 1) == Some(&b'{') => i += 2,
            b'{' => {
                i = match fstring_field_end(body, i + 1) {
                    FieldEnd::At(e) => e,
                    FieldEnd::Unclosed(m) => return Some(m),
                    FieldEnd::Other => return None,
                };
                if body.get(i) == Some(&b':') {
                    i += 1;
                    while let Some(&c) = body.get(i) {
                        match c {
                            b'{' => {
                                i = match fstring_field_end(body, i + 1) {
                                    FieldEnd::At(e) => e,
                                    FieldEnd::Unclosed(m) => return Some(m),
                                    FieldEnd::Other => return None,
                                };
                                if body.get(i) != Some(&b'}') {
                                    return None;
                                }
                            }
                            b'}' => break,
                            _ => {}
                        }
                        i += 1;
                    }
                }
                i += 1;
            }
            _ => i += 1,
        }
    }
    None
}

/// How a field's expression part ends (`fstring_unclosed`).
enum FieldEnd {
    /// At this offset of the body (a `!`, `:`, `=` or `}`), past a
    /// conversion `!x`.
    At(usize),
    /// At the end of the body inside a bracket or quote: CPython's message.
    Unclosed(String),
    /// Some other error (a backslash, a `#`, an unmatched closer).
    Other,
}

/// One step of a replacement field's scan over the string literals inside
/// it (`quote`: the open literal's quote byte and whether it is tripled),
/// shared by [`fstring_field_end`] and [`fstring_field_expr`]: inside a
/// literal, the index after byte `i` (closing the literal at its end
/// quote); at a quote, the index after it (opening a literal). `None` when
/// byte `i` is outside any literal and opens none.
fn step_quotes(b: &[u8], i: usize, quote: &mut Option<(u8, bool)>) -> Option<usize> {
    let c = *b.get(i)?;
    let tripled = |q: u8| b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q);
    if let Some((q, triple)) = *quote {
        if c == q && !triple {
            *quote = None;
        } else if c == q && tripled(q) {
            *quote = None;
            return Some(i + 3);
        }
        return Some(i + 1);
    }
    if c != b'\'' && c != b'"' {
        return None;
    }
    let triple = tripled(c);
    *quote = Some((c, triple));
    Some(i + if triple { 3 } else { 1 })
}

fn fstring_field_end(body: &[u8], mut i: usize) -> FieldEnd {
    let mut stack: Vec<u8> = Vec::new();
    let mut quote: Option<(u8, bool)> = None;
    while let Some(&c) = body.get(i) {
        if c == b'\\' {
            return FieldEnd::Other;
        }
        if let Some(next) = step_quotes(body, i, &mut quote) {
            i = next;
            continue;
        }
        match c {
            b'#' => return FieldEnd::Other,
            b'(' | b'[' | b'{' => stack.push(c),
            b'!' | b'=' | b'<' | b'>' if stack.is_empty() && body.get(i + 1) == Some(&b'=') => {
                i += 1;
            }
            b'<' | b'>' => {}
            b'!' if stack.is_empty() => return FieldEnd::At(i + 2),
            b':' | b'=' | b'}' if stack.is_empty() => return FieldEnd::At(i),
            b')' | b']' | b'}' if stack.pop().is_none() => return FieldEnd::Other,
            _ => {}
        }
        i += 1;
    }
    match (quote, stack.last()) {
        (Some(_), _) => FieldEnd::Unclosed("f-string: unterminated string".to_string()),
        (None, Some(&open)) => {
            FieldEnd::Unclosed(format!("f-string: unmatched '{}'", open as char))
        }
        (None, None) => FieldEnd::Other,
    }
}

/// The groups of adjacent string literals, at least one of them an
/// f-string, that CPython's parser has read whole by byte `off` (the token
/// after the group starts at or before `off`, or the text ends): their
/// byte ranges, up to a bytes literal after the first string. CPython 3.11 parses an f-string's fields in the action of
/// its `strings` rule, so an error there is raised as soon as the group is
/// read, before the parser meets a mistake further on.
pub fn fstring_groups_before(src: &str, off: usize) -> Vec<(usize, usize)> {
    let toks = tokenize(src, off);
    let is_f = |t: &Token| {
        src.get(t.start..t.end).is_some_and(|s| {
            s.chars()
                .take_while(|c| *c != '\'' && *c != '"')
                .any(|c| c == 'f' || c == 'F')
        })
    };
    let is_bytes = |t: &Token| {
        src.get(t.start..t.end).is_some_and(|s| {
            s.chars()
                .take_while(|c| *c != '\'' && *c != '"')
                .any(|c| c == 'b' || c == 'B')
        })
    };
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(t) = toks.get(i) {
        if t.kind != Kind::Str {
            i += 1;
            continue;
        }
        let start = t.start;
        let mut f = false;
        let mut end = t.end;
        // The group as far as CPython parses it before a bytes literal
        // after the first string ("cannot mix bytes and nonbytes literals"
        // comes when it reaches that one).
        let mut probe_end = None;
        while let Some(s) = toks.get(i).filter(|s| s.kind == Kind::Str) {
            f |= is_f(s);
            if s.start > start && probe_end.is_none() && is_bytes(s) {
                probe_end = Some(end);
            }
            end = s.end;
            i += 1;
        }
        let probe_end = probe_end.unwrap_or(end);
        let read = match toks.get(i) {
            Some(next) => next.start <= off,
            None => end <= off,
        };
        if !read {
            break;
        }
        if f {
            out.push((start, probe_end));
        }
    }
    out
}

/// Does the text end, at `off` (only comments and blank lines after it),
/// with a compound statement's header (its last token a `:`)?
fn header_at_end(src: &str, off: usize) -> bool {
    let toks = tokenize(src, off);
    let last = toks.iter().rev().find(|t| t.kind != Kind::Newline);
    last.is_some_and(|t| src.get(t.start..t.end) == Some(":") && t.end <= off)
        && src.get(off..).is_some_and(|r| {
            r.lines()
                .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
        })
}

/// Does the string literal around `off` hold a `#` in a replacement
/// field's expression part (before its `!`, `:` or `}`)? CPython 3.11's
/// "f-string expression part cannot include '#'".
pub fn fstring_expr_has_hash(src: &str, off: usize) -> bool {
    let toks = tokenize(src, off);
    let Some(t) = toks
        .iter()
        .find(|t| t.kind == Kind::Str && t.start <= off && off < t.end)
    else {
        return false;
    };
    let b = src.as_bytes();
    let mut i = t.start;
    // In a field's expression: the bracket depth inside it.
    let mut field: Option<usize> = None;
    while i < t.end.min(b.len()) {
        let c = b[i];
        match (field, c) {
            (None, b'{') if b.get(i + 1) == Some(&b'{') => i += 1,
            (None, b'{') => field = Some(0),
            (Some(_), b'#') => return true,
            (Some(0), b'!' | b':' | b'}') if b.get(i + 1) != Some(&b'=') => field = None,
            (Some(d), b'(' | b'[' | b'{') => field = Some(d + 1),
            (Some(d), b')' | b']' | b'}') => field = Some(d.saturating_sub(1)),
            _ => {}
        }
        i += 1;
    }
    false
}

/// Where the text before the logical line holding `off` may be cut to be
/// parsed on its own: the start of that line (a physical line start), and
/// the start of the last logical line before it that begins in column 0 (a
/// new top-level statement, or its `else`/`elif`), 0 when there is none.
/// The first is 0 when the line is the first. Linear in the text up to `off`.
pub fn statement_cuts(src: &str, off: usize) -> (usize, usize) {
    let toks = tokenize(src, off);
    let mut line = 0;
    let mut top = 0;
    let mut last_col0 = 0;
    for (k, t) in toks.iter().enumerate() {
        if t.kind != Kind::Newline || t.end > off {
            continue;
        }
        line = t.end;
        top = last_col0;
        if toks
            .get(k + 1)
            .is_some_and(|n| matches!(src.as_bytes().get(n.start.wrapping_sub(1)), Some(b'\n')))
        {
            last_col0 = t.end;
        }
    }
    (line, top)
}

/// Byte bounds of the line holding `off` (without its newline).
fn line_bounds(src: &str, off: usize) -> (usize, usize) {
    let off = off.min(src.len());
    let ls = src
        .get(..off)
        .and_then(|s| s.rfind('\n'))
        .map_or(0, |i| i + 1);
    let le = src
        .get(off..)
        .and_then(|s| s.find('\n'))
        .map_or(src.len(), |i| off + i);
    (ls, le)
}

/// Index of the first token of the logical line holding token `k`.
fn line_start(v: &View<'_>, k: usize) -> usize {
    (0..k)
        .rev()
        .find(|&j| v.kind(j) == Some(Kind::Newline))
        .map_or(0, |j| j + 1)
}

/// `f(a.b=1)`, `f('ok'=)`, `range(0, 2=, 3)`: a call argument that is an
/// expression other than a name, then `=` (the failure at the `=` or just
/// after it). CPython's `invalid_kwarg`: "expression cannot contain
/// assignment, perhaps you meant \"==\"?" at the argument, whatever
/// follows; "cannot assign to True" for `True=`/`False=`/`None=`.
fn call_kwarg(v: &View<'_>, k: usize) -> Option<Refined> {
    let eq = if v.is(k, "=") {
        k
    } else if v.is(k, "for") {
        // `f(a=1 for x in y)`: the parser fails at the `for`.
        let lvl = v.level(k);
        (0..k)
            .rev()
            .take_while(|&j| v.level(j) >= lvl && !(v.level(j) == lvl && v.is(j, ",")))
            .find(|&j| v.level(j) == lvl && v.is(j, "="))?
    } else {
        k.checked_sub(1).filter(|&p| v.is(p, "="))?
    };
    let lvl = v.level(eq);
    if lvl == 0 || !v.in_call(eq) {
        return None;
    }
    let delim = (0..eq)
        .rev()
        .find(|&j| v.level(j) < lvl || (v.level(j) == lvl && v.is(j, ",")))?;
    let mut first = delim + 1;
    // (`a=b=1`, a generator argument: other rules.)
    if first >= eq
        || matches!(v.text(first), "*" | "**")
        || (first..eq).any(|j| v.level(j) == lvl && (v.is(j, "=") || v.is(j, "for")))
    {
        return None;
    }
    if first + 1 == eq && v.kind(first) == Some(Kind::Name) && !v.is_keyword(first) {
        // `f(a=1 for x in y)`: a generator expression after `name=`.
        let close = (eq + 1..v.toks.len()).find(|&j| v.level(j) < lvl);
        let end = close.unwrap_or(v.toks.len());
        if (eq + 1..end).any(|j| v.level(j) == lvl && v.is(j, "for")) {
            return message(
                v.toks.get(first)?.start,
                "invalid syntax. Maybe you meant '==' or ':=' instead of '='?",
            );
        }
        return None;
    }
    // CPython's caret is on the expression inside any parentheses around it.
    let mut end = eq;
    while v.is(first, "(") && v.group_end(first) == Some(end) {
        first += 1;
        end -= 1;
    }
    if first + 1 == eq {
        if matches!(v.text(first), "True" | "False" | "None") {
            return message(
                v.toks.get(first)?.start,
                &format!("cannot assign to {}", v.text(first)),
            );
        }
        if v.kind(first) == Some(Kind::Name) {
            return None;
        }
    }
    message(
        v.toks.get(first)?.start,
        "expression cannot contain assignment, perhaps you meant \"==\"?",
    )
}

/// `x = True =`, `f() = 1 +`: an assignment whose parse fails after one of
/// its `=`, with a target before it that is no target. CPython's
/// `invalid_assignment` (`(star_targets '=')* a=star_expressions '='`)
/// raises "cannot assign to X" at the first invalid target (inside a tuple
/// or list: its first invalid element) whatever follows the `=`; when that
/// is the last element before the first `=`, is a `bitwise_or` (no
/// comparison, `not`, `and`/`or`, conditional, `True`/`False`/`None`) and a
/// `bitwise_or` follows the only `=`, `invalid_named_expression` comes
/// first: "cannot assign to X here. Maybe you meant '==' instead of '='?".
fn invalid_assignment(v: &View<'_>, k: usize) -> Option<Refined> {
    use rustpython_parser::ast::{self, Expr, Ranged};
    let s = line_start(v, k);
    let eqs: Vec<usize> = (s..k)
        .filter(|&j| v.level(j) == 0 && v.is(j, "="))
        .collect();
    let first_eq = *eqs.first()?;
    if (s..k).any(|j| v.level(j) == 0 && (v.is(j, ";") || v.is(j, ":") || v.is(j, "lambda"))) {
        return None;
    }
    if v.kind(s) == Some(Kind::Name)
        && v.is_keyword(s)
        && !matches!(v.text(s), "True" | "False" | "None" | "not")
    {
        return None;
    }
    // The first element of `e` (a target list) that is no target.
    fn invalid(e: &Expr) -> Option<&Expr> {
        match e {
            Expr::Name(_) | Expr::Attribute(_) | Expr::Subscript(_) => None,
            Expr::Starred(x) => invalid(&x.value),
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                elts.iter().find_map(invalid)
            }
            other => Some(other),
        }
    }
    let mut from = s;
    for (n, &eq) in eqs.iter().enumerate() {
        let a = v.toks.get(from)?.start;
        let b = v.toks.get(eq)?.start;
        if from >= eq {
            return None;
        }
        let text = v.src.get(a..b)?;
        let parsed = rustpython_parser::parse(text, rustpython_parser::Mode::Expression, "<t>");
        let Ok(ast::Mod::Expression(m)) = parsed else {
            return None;
        };
        if let Some(bad) = invalid(&m.body) {
            // The element just before the first `=` (the whole target
            // unless it is a bare tuple).
            let bare_tuple = matches!(&*m.body, Expr::Tuple(_)) && v.group_end(from) != Some(eq);
            let last = match &*m.body {
                Expr::Tuple(t) if bare_tuple => t.elts.last()?,
                other => other,
            };
            let mut j = first_eq + 1;
            while matches!(v.text(j), "-" | "+" | "~") {
                j += 1;
            }
            let operand = j < k && (v.starts_atom(j) || matches!(v.text(j), "(" | "[" | "{"));
            let named = n == 0 && eqs.len() == 1 && operand;
            let last_at = a + u32::from(last.range().start()) as usize;
            let bitwise_or = match last {
                Expr::Compare(_)
                | Expr::BoolOp(_)
                | Expr::IfExp(_)
                | Expr::Lambda(_)
                | Expr::Tuple(_)
                | Expr::List(_)
                | Expr::GeneratorExp(_)
                | Expr::Starred(_)
                | Expr::NamedExpr(_) => false,
                Expr::UnaryOp(u) => !matches!(u.op, ast::UnaryOp::Not),
                Expr::Constant(c) => {
                    !matches!(c.value, ast::Constant::Bool(_) | ast::Constant::None)
                }
                _ => true,
            };
            if named && matches!(last, Expr::Name(_)) {
                return message(
                    last_at,
                    "invalid syntax. Maybe you meant '==' or ':=' instead of '='?",
                );
            }
            if named && bitwise_or {
                return message(
                    last_at,
                    &format!(
                        "cannot assign to {} here. Maybe you meant '==' instead of '='?",
                        match last {
                            Expr::Attribute(_) => "attribute",
                            Expr::Subscript(_) => "subscript",
                            other => check::expr_kind(other),
                        }
                    ),
                );
            }
            let at = a + u32::from(bad.range().start()) as usize;
            return message(at, &format!("cannot assign to {}", check::expr_kind(bad)));
        }
        from = eq + 1;
    }
    None
}

/// An annotated assignment's target CPython's parser refuses, found where
/// rustpython-parser fails on the statement. CPython's
/// `invalid_assignment` tries, in order: a tuple or list display (`(a,
/// b)`, `[a]`, in parentheses too) before `':' expression` ("only single
/// target (not tuple) can be annotated"), `a, b` before it (the same), any
/// other expression before it ("illegal target for annotation"), each
/// raised once the expression after the `:` is read, whatever follows it.
/// With no expression after the `:` (`ford in y:`, `f(): pass`), its
/// parser fails at the `:` itself unless the target is a single one.
fn annotation_colon(v: &View<'_>, k: usize) -> Option<Refined> {
    let s = line_start(v, k);
    let colon = (s..=k).find(|&j| v.level(j) == 0 && v.is(j, ":"))?;
    let starts_statement = match v.kind(s)? {
        Kind::Name => !v.is_keyword(s) || matches!(v.text(s), "True" | "False" | "None"),
        Kind::Number | Kind::Str => true,
        Kind::Op => matches!(v.text(s), "(" | "[" | "{" | "-" | "+" | "~" | "..." | "*"),
        Kind::Newline => false,
    };
    // (`x = lambda: ...`, `x = y:`: not an annotation.)
    let plain =
        (s..colon).all(|j| v.level(j) > 0 || !(v.is(j, "lambda") || v.is(j, "=") || v.is(j, ";")));
    if s >= colon || !starts_statement || !plain {
        return None;
    }
    let tuple = (s..colon).any(|j| v.level(j) == 0 && v.is(j, ","));
    // (`*a` alone is no expression: no rule of these applies.)
    if v.is(s, "*") && !tuple {
        return None;
    }
    let expression_after = if k == colon {
        // rustpython-parser stops at the `:` after `a, b`.
        let n = colon + 1;
        v.starts_atom(n)
            || matches!(
                v.text(n),
                "(" | "[" | "{" | "-" | "+" | "~" | "not" | "lambda" | "await"
            )
    } else {
        k > colon + 1
    };
    if !expression_after {
        if k == colon + 1 && !tuple && !single_target(v, s, colon) {
            return message(v.toks.get(colon)?.start, "invalid syntax");
        }
        return None;
    }
    let (at, msg) = if let Some((at, what)) = display_target(v, s, colon) {
        (
            at,
            format!("only single target (not {what}) can be annotated"),
        )
    } else if tuple {
        (
            s,
            "only single target (not tuple) can be annotated".to_string(),
        )
    } else if !single_target(v, s, colon) {
        (s, "illegal target for annotation".to_string())
    } else {
        return None;
    };
    message(v.toks.get(at)?.start, &msg)
}

/// A tuple or list display spanning tokens `s..e`, in parentheses or not
/// (CPython's `invalid_ann_assign_target`): its first token and its kind.
fn display_target(v: &View<'_>, s: usize, e: usize) -> Option<(usize, &'static str)> {
    if v.group_end(s)? != e {
        return None;
    }
    if v.is(s, "[") {
        return Some((s, "list"));
    }
    if !v.is(s, "(") {
        return None;
    }
    let inner = v.level(s) + 1;
    if e == s + 2 || (s + 1..e - 1).any(|j| v.level(j) == inner && v.is(j, ",")) {
        return Some((s, "tuple"));
    }
    display_target(v, s + 1, e - 1)
}

/// Do tokens `s..e` (at level 0) form CPython's `single_target`: a name, a
/// primary ending in `.name` or `[...]`, or one of those in parentheses?
fn single_target(v: &View<'_>, s: usize, e: usize) -> bool {
    let group_end = |j: usize| v.group_end(j).filter(|&n| n <= e);
    if e == s + 1 {
        return v.kind(s) == Some(Kind::Name) && !v.is_keyword(s);
    }
    if v.is(s, "(") && group_end(s) == Some(e) {
        return single_target(v, s + 1, e - 1);
    }
    // The atom.
    let mut i = match v.kind(s) {
        Some(Kind::Name) if !v.is_keyword(s) || matches!(v.text(s), "True" | "False" | "None") => {
            s + 1
        }
        Some(Kind::Number) => s + 1,
        Some(Kind::Str) => {
            let mut i = s;
            while v.kind(i) == Some(Kind::Str) && i < e {
                i += 1;
            }
            i
        }
        Some(Kind::Op) if matches!(v.text(s), "(" | "[" | "{") => match group_end(s) {
            Some(i) => i,
            None => return false,
        },
        _ => return false,
    };
    // Its trailers; the last must be `.name` or a subscript.
    let mut last_ok = false;
    while i < e {
        if v.is(i, ".") && i + 1 < e && v.kind(i + 1) == Some(Kind::Name) && !v.is_keyword(i + 1) {
            i += 2;
            last_ok = true;
        } else if v.is(i, "(") || v.is(i, "[") {
            let sub = v.is(i, "[");
            match group_end(i) {
                Some(n) => i = n,
                None => return false,
            }
            last_ok = sub;
        } else {
            return false;
        }
    }
    last_ok
}

/// `if x` / `for a in b` / `else` ... then a newline: `expected ':'`.
fn missing_colon(v: &View<'_>, k: usize, off: usize) -> Option<Refined> {
    let s = line_start(v, k);
    let head = v.text(s);
    if !matches!(
        head,
        "if" | "elif"
            | "else"
            | "for"
            | "while"
            | "with"
            | "try"
            | "except"
            | "finally"
            | "def"
            | "class"
    ) || v.kind(s) != Some(Kind::Name)
    {
        return None;
    }
    let prev = k.checked_sub(1)?;
    if (s..k).any(|j| v.level(j) == 0 && v.is(j, ":")) {
        return None;
    }
    // A `for` header needs its `in` (`invalid_for_stmt`).
    if head == "for" && !(s..k).any(|j| v.level(j) == 0 && v.is(j, "in")) {
        return None;
    }
    let bare = matches!(head, "else" | "try" | "finally" | "except");
    if (prev == s && bare) || (prev > s && v.ends_expr(prev)) {
        return message(off, "expected ':'");
    }
    None
}

/// `[a, b for ...]`: CPython's `invalid_comprehension`, for a list or set
/// display whose elements run into a `for`.
fn comprehension_target(v: &View<'_>, k: usize) -> Option<Refined> {
    // A `for` that begins a comprehension clause (a target follows).
    let target = (v.kind(k + 1) == Some(Kind::Name) && !v.is_keyword(k + 1))
        || matches!(v.text(k + 1), "(" | "[" | "*");
    if !v.is(k, "for") || v.level(k) == 0 || !target {
        return None;
    }
    let lvl = v.level(k);
    let open = (0..k).rev().find(|&j| v.level(j) < lvl)?;
    if !matches!(v.text(open), "[" | "{" | "(") || open + 1 >= k {
        return None;
    }
    let inside = open + 1..k;
    let comma = inside.clone().any(|j| v.level(j) == lvl && v.is(j, ","));
    // `(*a for ...)`, `{**a for ...}`: a starred element.
    if !comma && matches!(v.text(open + 1), "*" | "**") {
        let msg = if v.is(open + 1, "*") {
            "iterable unpacking cannot be used in comprehension"
        } else if v.is(open, "{") {
            "dict unpacking cannot be used in dict comprehension"
        } else {
            return None;
        };
        return message(v.toks.get(open + 1)?.start, msg);
    }
    let dict = inside.clone().any(|j| v.level(j) == lvl && v.is(j, ":"));
    let keyword = inside
        .clone()
        .any(|j| v.level(j) == lvl && matches!(v.text(j), "for" | "lambda"));
    if !comma || dict || keyword || v.is(open + 1, "*") || v.is(open, "(") {
        return None;
    }
    message(
        v.toks.get(open + 1)?.start,
        "did you forget parentheses around the comprehension target?",
    )
}

/// A `try:` block followed, at its own indentation, by something other
/// than `except` or `finally` (`invalid_try_stmt`).
fn try_without_handler(v: &View<'_>, k: usize) -> Option<Refined> {
    let prev = k.checked_sub(1)?;
    if v.kind(prev) != Some(Kind::Newline) || matches!(v.text(k), "except" | "finally") {
        return None;
    }
    let indent = |i: usize| {
        let at = v.toks.get(i).map_or(0, |t| t.start);
        let (ls, _) = line_bounds(v.src, at);
        at - ls
    };
    let want = indent(k);
    // Walk back over the logical lines: deeper ones are the block's body.
    let mut nl = prev;
    while nl > 0 {
        let s = line_start(v, nl);
        let i = indent(s);
        if i == want {
            if v.is(s, "try") && v.is(s + 1, ":") {
                return message(v.toks.get(k)?.start, "expected 'except' or 'finally' block");
            }
            return None;
        }
        if i < want || s == 0 {
            return None;
        }
        nl = s - 1;
    }
    None
}

/// `print x`: CPython's `invalid_legacy_expression`.
fn legacy_print(v: &View<'_>, k: usize) -> Option<Refined> {
    let prev = k.checked_sub(1)?;
    let name = v.text(prev);
    if v.kind(prev) == Some(Kind::Name) && matches!(name, "print" | "exec") && v.starts_atom(k) {
        return message(
            v.toks.get(prev)?.start,
            &format!("Missing parentheses in call to '{name}'. Did you mean {name}(...)?"),
        );
    }
    None
}

/// `else x`, `try x`, `finally x`, `def f() x`: the grammar's forced
/// `&&':'` after these ("expected ':'" at the token found instead).
fn forced_colon(v: &View<'_>, k: usize) -> Option<Refined> {
    let prev = k.checked_sub(1)?;
    let s = line_start(v, k);
    let bare = prev == s && matches!(v.text(prev), "else" | "try" | "finally");
    let def = v.is(s, "def") && v.is(prev, ")") && v.level(prev) == 0;
    if (bare || def) && v.kind(prev) != Some(Kind::Str) {
        return message(v.toks.get(k)?.start, "expected ':'");
    }
    None
}

/// `{1: }`: a key and `:` with no value (`invalid_kvpair`,
/// `invalid_double_starred_kvpairs`); the caret is on the `:`. `{1: *v}`:
/// a starred value, with the caret on the `*`.
fn dict_value(v: &View<'_>, k: usize) -> Option<Refined> {
    let colon = k.checked_sub(1)?;
    let starred = v.is(k, "*") && !matches!(v.text(k + 1), "}" | "," | "");
    if !v.is(colon, ":")
        || !(starred || matches!(v.text(k), "}" | ","))
        || !v.ends_expr(colon.checked_sub(1)?)
    {
        return None;
    }
    let lvl = v.level(colon);
    let open = (0..colon).rev().find(|&j| v.level(j) < lvl)?;
    if !v.is(open, "{") {
        return None;
    }
    if starred {
        // `{k: *v}`: CPython's invalid_kvpair, at the star.
        return message(
            v.toks.get(k)?.start,
            "cannot use a starred expression in a dictionary value",
        );
    }
    message(
        v.toks.get(colon)?.start,
        "expression expected after dictionary key and ':'",
    )
}

/// A header line followed by no indented block.
fn indented_block(v: &View<'_>, k: usize) -> Option<Refined> {
    // The failing token starts the line after the header (or is the end).
    let mut nl = k;
    while nl > 0 && v.kind(nl) != Some(Kind::Newline) {
        nl -= 1;
    }
    let s = line_start(v, nl);
    let t = v.toks.get(s)?;
    let what = match v.text(s) {
        w @ ("if" | "elif" | "else" | "for" | "while" | "with" | "try" | "except" | "finally") => {
            format!("'{w}' statement")
        }
        "def" => "function definition".to_string(),
        "class" => "class definition".to_string(),
        _ => return None,
    };
    let line = v.src.get(..t.start).map_or(0, |p| p.matches('\n').count()) + 1;
    let at = v.toks.get(nl + 1).map_or(v.src.len(), |t| t.start);
    // At the end of the text, CPython points at its end (past the
    // header and any comment after it).
    let at = if v.toks.get(nl + 1).is_none() {
        end_caret(v.src)
    } else {
        at
    };
    // A next line indented less than the header: CPython's caret is on
    // the DEDENT token, at column 0.
    let indent = |at: usize| {
        let (ls, _) = line_bounds(v.src, at);
        at - ls
    };
    let col0 = v
        .toks
        .get(nl + 1)
        .is_some_and(|n| indent(n.start) < indent(t.start));
    Some(Refined {
        offset: at,
        message: format!("expected an indented block after {what} on line {line}"),
        col0,
    })
}

/// `if x = 1:`, `[a = 1]`: CPython's `invalid_named_expression`.
fn equals_in_expression(v: &View<'_>, k: usize) -> Option<Refined> {
    let (delim, crossed) = v.back_to(
        k,
        &[
            "and", "or", "not", "in", "is", "else", "for", "lambda", "==", "!=", "<", ">", "<=",
            ">=", "await", "yield", "return", "del", "assert", "import", "from", "with", "as",
            "print",
        ],
        &["if", "elif", "while"],
    );
    let first = delim.map_or(0, |d| d + 1);
    // Where the named expression starts: after `if`/`elif`/`while` at the
    // start of a statement, or a `,` / opener inside brackets.
    let ok_start = match delim {
        Some(d) if matches!(v.text(d), "if" | "elif" | "while") => {
            v.level(d) == 0 && line_start(v, d) == d
        }
        Some(d) => v.level(k) > 0 && matches!(v.text(d), "," | "(" | "[" | "{"),
        None => false,
    };
    if !ok_start || crossed || first >= k {
        return None;
    }
    // The right-hand side must begin a `bitwise_or` (not `lambda`, `not`).
    if !(v.starts_atom(k + 1) || matches!(v.text(k + 1), "(" | "[" | "{" | "-" | "+" | "~")) {
        return None;
    }
    // After the right-hand side, no second `=`.
    let lvl = v.level(k);
    let mut j = k + 1;
    while let Some(t) = v.toks.get(j) {
        if t.level < lvl || t.kind == Kind::Newline {
            break;
        }
        if t.level == lvl {
            let x = v.text(j);
            if matches!(x, "=" | ":=") {
                return message(v.toks.get(k)?.start, "invalid syntax");
            }
            if matches!(x, ":" | ",") {
                break;
            }
        }
        j += 1;
    }
    let start = v.toks.get(first)?.start;
    if first + 1 == k && v.kind(first) == Some(Kind::Name) && !v.is_keyword(first) {
        return message(
            start,
            "invalid syntax. Maybe you meant '==' or ':=' instead of '='?",
        );
    }
    if matches!(v.text(first), "True" | "False" | "None" | "(" | "[") {
        return None;
    }
    let last = k - 1;
    let binary = (first + 1..k).any(|j| {
        v.level(j) == lvl
            && v.kind(j) == Some(Kind::Op)
            && !matches!(v.text(j), "." | "(" | "[" | "{" | ")" | "]" | "}")
    }) || matches!(v.text(first), "-" | "+" | "~");
    let kind = if binary {
        "expression"
    } else if first == last && matches!(v.kind(first), Some(Kind::Number | Kind::Str)) {
        let t = v.text(first).to_ascii_lowercase();
        if t.starts_with('f') || t.starts_with("rf") || t.starts_with("fr") {
            "f-string expression"
        } else {
            "literal"
        }
    } else if v.is(last, ")") {
        "function call"
    } else if v.is(last, "]") {
        "subscript"
    } else if last > first && v.kind(last) == Some(Kind::Name) && v.is(last - 1, ".") {
        "attribute"
    } else {
        return None;
    };
    message(
        start,
        &format!("cannot assign to {kind} here. Maybe you meant '==' instead of '='?"),
    )
}

/// Are tokens `i` and `j` at the same bracket level?
fn level_eq(v: &View<'_>, i: usize, j: usize) -> bool {
    v.level(i) == v.level(j)
}

/// `{'a': 1, 'b'}`: CPython's `invalid_kvpair`, after at least one pair.
fn dict_key(v: &View<'_>, k: usize) -> Option<Refined> {
    let lvl = v.inner(k);
    if lvl == 0 {
        return None;
    }
    // The key's last token: the one before the failure, or before an
    // operator there that finds no operand (`'b' + :`, `'b' and :`): the
    // key is then the expression before the operator.
    let prev = k.checked_sub(1)?;
    let operator = |i: usize| {
        (v.kind(i) == Some(Kind::Op)
            && !matches!(
                v.text(i),
                "(" | "[" | "{" | ")" | "]" | "}" | "," | ":" | "..."
            ))
            || matches!(
                v.text(i),
                "and" | "or" | "not" | "in" | "is" | "if" | "else"
            )
    };
    let keyword_after = v.is_keyword(k)
        && !v.starts_atom(k)
        && !matches!(v.text(k), "for" | "if" | "async" | "lambda");
    let e = if v.ends_expr(prev) {
        prev
    } else if operator(prev) && level_eq(v, prev, k) {
        let e = prev.checked_sub(1)?;
        if !v.ends_expr(e) {
            return None;
        }
        e
    } else {
        return None;
    };
    let (delim, crossed) = v.back(e + 1, &["for", "lambda"]);
    let d = delim?;
    if crossed || !v.is(d, ",") || d + 1 > e {
        return None;
    }
    // The enclosing bracket is a `{` holding a `:` at this level before `d`.
    let open = (0..d)
        .rev()
        .find(|&j| v.level(j) < lvl)
        .filter(|&j| v.is(j, "{"))?;
    if !(open + 1..d).any(|j| v.level(j) == lvl && v.is(j, ":"))
        || (open + 1..e).any(|j| v.level(j) == lvl && v.is(j, "for"))
    {
        return None;
    }
    if !(v.starts_atom(k)
        || matches!(v.text(k), "}" | "," | "(" | "[" | "{")
        || (e == prev && (keyword_after || v.is(k, ":=")))
        || e < prev)
        || matches!(v.text(d + 1), "*" | "**")
    {
        return None;
    }
    let last = v.toks.get(e)?;
    // CPython's caret: the key's last character.
    let at = v
        .src
        .get(..last.end)
        .and_then(|s| s.char_indices().next_back())
        .map_or(last.start, |(i, _)| i);
    message(at, "':' expected after dictionary key")
}

/// Two expressions side by side inside brackets: CPython's
/// `invalid_expression` ("Perhaps you forgot a comma?").
fn missing_comma(v: &View<'_>, k: usize) -> Option<Refined> {
    let prev = k.checked_sub(1)?;
    // `a not b`: the parser stops after `not` (which might begin `not in`);
    // `a []`: it stops at the `]` of what it took for a subscript.
    let k = if (v.is(prev, "not") && v.starts_atom(k)) || (v.is(prev, "[") && v.is(k, "]")) {
        prev
    } else {
        k
    };
    // What may begin the second expression here: an atom, `not`, a `{` or
    // a `~` (never a continuation), or the `[` of an empty "subscript".
    let starts = v.starts_atom(k)
        || (v.is(k, "not") && !v.is(k + 1, "in"))
        || v.is(k, "{")
        || (v.is(k, "~")
            && (v.starts_atom(k + 1)
                || matches!(v.text(k + 1), "(" | "[" | "{" | "~" | "-" | "+")))
        || (v.is(k, "[") && v.is(k + 1, "]"));
    if v.level(k) == 0 || !starts || !v.ends_expr(k.checked_sub(1)?) {
        return None;
    }
    let (delim, crossed) = v.back_to(k, &["if", "lambda", "async"], &["for", "else"]);
    let d = delim?;
    if crossed
        || !matches!(
            v.text(d),
            "," | "(" | "[" | "{" | ":" | "=" | "for" | "else"
        )
    {
        return None;
    }
    let mut first = d + 1;
    // `[*a b]`: the starred element's expression (after a `,`, CPython's
    // rules do not get there).
    // A call's `*a b` / `**a b` anywhere in its arguments: their
    // `expression` has the rule too.
    if (v.is(first, "*") && matches!(v.text(d), "(" | "[" | "{"))
        || (matches!(v.text(first), "*" | "**")
            && matches!(v.text(d), "(" | ",")
            && v.in_call(first))
    {
        first += 1;
    } else if matches!(v.text(first), "*" | "**") {
        return None;
    }
    // A comprehension's `for a in b c`: `b` is no `expression`.
    if v.is(d, "for") && (first..k).any(|j| v.level(j) == v.level(k) && v.is(j, "in")) {
        return None;
    }
    // `!(NAME STRING | SOFT_KEYWORD)` at the first expression's start.
    if v.kind(first) == Some(Kind::Name) && !v.is_keyword(first) {
        if v.kind(first + 1) == Some(Kind::Str) {
            return None;
        }
        if soft_keyword_prefix(v.text(first)) {
            // CPython then finds the first expression one token on.
            first += 1;
            let next = v.text(first);
            let ok = v.starts_atom(first) || matches!(next, "[" | "+" | "-" | "~");
            if first >= k || !ok {
                return None;
            }
        }
    }
    message(
        v.toks.get(first)?.start,
        "invalid syntax. Perhaps you forgot a comma?",
    )
}

/// CPython 3.11's `_PyPegen_soft_keyword_token` compares only the name's
/// length of characters, so any prefix of a soft keyword (`c`, `ma`) counts.
fn soft_keyword_prefix(name: &str) -> bool {
    !name.is_empty() && ["match", "case", "_"].iter().any(|k| k.starts_with(name))
}

/// `a if b` with no `else`: CPython's `invalid_expression`.
fn missing_else(v: &View<'_>, k: usize) -> Option<Refined> {
    let lvl = v.inner(k);
    let (delim, _) = v.back(k, &[]);
    let first = delim.map_or(0, |d| d + 1);
    // The last `if` at this level between the delimiter and `k`.
    let mut depth_ok = Vec::new();
    for j in first..k {
        if v.level(j) == lvl && v.kind(j) == Some(Kind::Name) {
            depth_ok.push(j);
        }
    }
    let iff = depth_ok.iter().rev().copied().find(|&j| v.is(j, "if"))?;
    // `a if b else c if d`: the unfinished conditional starts after the
    // last `else` before the `if`.
    let first = depth_ok
        .iter()
        .rev()
        .copied()
        .find(|&j| j < iff && v.is(j, "else"))
        .map_or(first, |e| e + 1);
    // `a if b` then a token that cannot follow: the end of `b`, or an
    // operator left without its right operand (`a if b == else c`).
    let before = k.checked_sub(1)?;
    let dangling = v.kind(before) == Some(Kind::Op)
        && !matches!(
            v.text(before),
            "(" | "[" | "{" | ")" | "]" | "}" | "," | ":" | "."
        )
        && before > iff + 1
        && v.ends_expr(before - 1);
    let ends = v.ends_expr(before) && !matches!(v.text(k), "else" | ":");
    if iff == first || iff + 1 >= k || !(ends || dangling) {
        return None;
    }
    // No `for`, `lambda`, `else` or another `if` at this level (a
    // comprehension's `if`, a finished conditional).
    if (first..k).any(|j| {
        v.level(j) == lvl && matches!(v.text(j), "for" | "lambda" | "else")
            || (j != iff && v.level(j) == lvl && v.is(j, "if"))
    }) {
        return None;
    }
    // The statement keyword at the line start is no expression.
    let head = v.text(first);
    let at_line_start = first == 0 || v.kind(first - 1) == Some(Kind::Newline);
    if delim.is_none_or(|d| v.kind(d) == Some(Kind::Newline))
        && at_line_start
        && KEYWORDS.contains(&head)
    {
        return None;
    }
    message(
        v.toks.get(first)?.start,
        "expected 'else' after 'if' expression",
    )
}

/// The expression part of the f-string replacement field starting at `off`
/// (just after its `{`), as CPython 3.11's `fstring_find_expr` delimits it:
/// up to the first `!` (not `!=`), `:`, `=` (not `==`, `<=`, ...) or `}`
/// outside brackets and quotes. `None` when the text has no such end.
pub fn fstring_field_expr(src: &str, off: usize) -> Option<&str> {
    let b = src.as_bytes();
    let mut i = off;
    let mut depth = 0usize;
    let mut quote: Option<(u8, bool)> = None;
    while let Some(&c) = b.get(i) {
        if let Some(next) = step_quotes(b, i, &mut quote) {
            i = next;
            continue;
        }
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' => depth = depth.saturating_sub(1),
            b'}' if depth > 0 => depth -= 1,
            b'=' | b'!' | b'<' | b'>' if b.get(i + 1) == Some(&b'=') => i += 1,
            b'!' | b':' | b'=' | b'}' if depth == 0 => return src.get(off..i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// CPython 3.11 compiles a replacement field's expression on its own, as
/// the text `(expr)` (`fstring_compile_expr`), so its SyntaxError has the
/// parser's message behind `f-string: `, and its column is the position in
/// that text. Returns the text, the offset in it of CPython's caret and the
/// message, or `None` when the text parses.
pub fn fstring_field_error(expr: &str) -> Option<(String, usize, String)> {
    let body = format!("({expr})");
    let e =
        rustpython_parser::parse(&body, rustpython_parser::Mode::Expression, "<fstring>").err()?;
    // The text's own tokenizer errors come first, worded as at top level.
    let number = super::numlit::first_error(&body).map(|n| (n.start, n.offset, n.message));
    let invalid = first_invalid_char(&body)
        .map(|(at, c)| (at, at, super::names::invalid_character_message(c)));
    if let Some((_, at, message)) = [number, invalid].into_iter().flatten().min_by_key(|t| t.0) {
        return Some((body, at, message));
    }
    let off = (u32::from(e.offset) as usize).min(body.len());
    // A nested f-string's field: CPython reports the innermost one.
    if let ParseErrorType::Lexical(rustpython_parser::lexer::LexicalErrorType::FStringError(
        rustpython_parser::FStringErrorType::InvalidExpression(_),
    )) = &e.error
    {
        if let Some(inner) = fstring_field_expr(&body, off).and_then(fstring_field_error) {
            return Some(inner);
        }
    }
    let (at, msg) = match refine(&body, off, &e.error) {
        Some(r) => (r.offset, r.message),
        None => (off, super::syntax_message(&e.error)),
    };
    Some((body, at, format!("f-string: {msg}")))
}
