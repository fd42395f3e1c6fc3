//! A fast parser for the common shape of lackpy programs, producing exactly
//! the tree rustpython-parser would.
//!
//! Why: rustpython-parser's LALR driver moves ~100-byte symbols on every
//! shift and reduce and re-parses every f-string field with a fresh parser;
//! for a typical 20-line program that is ~70 µs, more than the whole
//! validation budget. This recursive-descent parser handles the subset
//! lackpy programs are written in (ASCII code, single-line plain and `f`
//! strings without backslashes, decimal literals, the allowed statements
//! and expressions) and builds the same `ast` nodes with the same byte
//! ranges.
//!
//! It never reports an error. Anything outside that subset, and every
//! malformed program, makes [`parse`] return `None`, and the caller falls
//! back to rustpython-parser, which then decides (and words any
//! `SyntaxError`). So the fast path can only change speed, never the
//! verdict or the tree: debug builds check every fast result against
//! rustpython-parser (see `lang::parse_module`), and the policy tests run
//! both parsers over the whole corpus.
//!
//! Recursion is bounded by [`MAX_NEST`]: deeper programs take the fallback.

use rustpython_parser::ast::{
    self, bigint::BigInt, BoolOp, CmpOp, Constant, ConversionFlag, Expr, ExprContext, Operator,
    Stmt, UnaryOp,
};
use rustpython_parser::text_size::{TextRange, TextSize};

/// Deepest expression nesting the fast path handles: nested expressions
/// (operands of brackets, calls, subscripts, lambdas, conditional
/// expressions, f-string fields) plus `not`/unary/star chains. Why these
/// numbers: typical programs nest fewer than 8 levels; one level costs up to
/// ~3.5 KiB of stack in release builds (~15 KiB unoptimised), so the bound
/// keeps this parser under ~120 KiB either way, well inside the 256 KiB the
/// tests give `validate`. Deeper programs take the fallback, whose LALR
/// driver does not recurse; the result is the same tree either way.
const MAX_NEST: u32 = if cfg!(debug_assertions) { 8 } else { 32 };

/// Most keyword arguments of one call, or parameters of one lambda, checked
/// for duplicates by linear scan; longer lists take the fallback.
const MAX_LINEAR_SCAN: usize = 16;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum K {
    Name,
    Int,
    Float,
    Str,
    FStr,
    Newline,
    Indent,
    Dedent,
    Eof,
    LPar,
    RPar,
    LSqb,
    RSqb,
    LBrace,
    RBrace,
    Colon,
    Comma,
    Dot,
    Assign,
    Plus,
    Minus,
    Star,
    DoubleStar,
    Slash,
    DoubleSlash,
    Percent,
    EqEq,
    NotEq,
    Lt,
    LtE,
    Gt,
    GtE,
    PlusEq,
    MinusEq,
    StarEq,
    SlashEq,
    DoubleSlashEq,
    PercentEq,
    If,
    Elif,
    Else,
    For,
    In,
    Not,
    And,
    Or,
    Is,
    Lambda,
    Pass,
    Break,
    Continue,
    True,
    False,
    None,
}

#[derive(Clone, Copy, Debug)]
struct Tok {
    kind: K,
    start: u32,
    end: u32,
}

/// Parse `src` as a module, or `None` when it is outside the fast subset
/// (or malformed): the caller then uses rustpython-parser.
pub(crate) fn parse(src: &str) -> Option<Vec<Stmt>> {
    // Offsets are u32 (TextSize); larger inputs take the fallback.
    if u32::try_from(src.len()).is_err() {
        return None;
    }
    // rustpython's lexer ends a line (and a comment) at a lone `\r`; the
    // tokenizer here only knows `\n`.
    if src.contains('\r') {
        return None;
    }
    let toks = tokenize(src, 0, src.len(), false)?;
    let mut p = Parser {
        src,
        toks,
        pos: 0,
        prev_end: 0,
        depth: 0,
    };
    let mut body = Vec::new();
    while p.peek() != K::Eof {
        body.push(p.statement()?);
    }
    Some(body)
}

fn keyword(word: &[u8]) -> Option<Option<K>> {
    // Some(Some(k)): a supported keyword; Some(None): a keyword (or soft
    // keyword) the fast path does not handle; None: an identifier.
    Some(Some(match word {
        b"if" => K::If,
        b"elif" => K::Elif,
        b"else" => K::Else,
        b"for" => K::For,
        b"in" => K::In,
        b"not" => K::Not,
        b"and" => K::And,
        b"or" => K::Or,
        b"is" => K::Is,
        b"lambda" => K::Lambda,
        b"pass" => K::Pass,
        b"break" => K::Break,
        b"continue" => K::Continue,
        b"True" => K::True,
        b"False" => K::False,
        b"None" => K::None,
        b"as" | b"assert" | b"async" | b"await" | b"class" | b"def" | b"del" | b"except"
        | b"finally" | b"from" | b"global" | b"import" | b"nonlocal" | b"raise" | b"return"
        | b"try" | b"while" | b"with" | b"yield" | b"match" | b"case" | b"type" => {
            return Some(None)
        }
        _ => return None,
    }))
}

fn u(i: usize) -> u32 {
    // Callers checked that the source length fits in u32.
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// Tokenise `src[from..to]`. `nested` (an f-string field) means the text is
/// inside brackets: no NEWLINE/INDENT/DEDENT tokens.
fn tokenize(src: &str, from: usize, to: usize, nested: bool) -> Option<Vec<Tok>> {
    let b = src.as_bytes().get(..to)?;
    let n = to;
    let mut toks: Vec<Tok> = Vec::with_capacity((to - from) / 3 + 4);
    let mut indents: Vec<u32> = vec![0];
    let mut parens: u32 = u32::from(nested);
    let mut i = from;
    let mut line_start = !nested;
    let push = |toks: &mut Vec<Tok>, kind: K, s: usize, e: usize| {
        toks.push(Tok {
            kind,
            start: u(s),
            end: u(e),
        })
    };
    while i < n {
        if line_start {
            let mut j = i;
            while j < n && b[j] == b' ' {
                j += 1;
            }
            if j == n {
                break;
            }
            match b[j] {
                b'\n' => {
                    i = j + 1;
                    continue;
                }
                b'#' => {
                    while j < n && b[j] != b'\n' {
                        j += 1;
                    }
                    i = j;
                    continue;
                }
                _ => {}
            }
            let w = u(j - i);
            let cur = *indents.last()?;
            if w > cur {
                indents.push(w);
                push(&mut toks, K::Indent, j, j);
            } else {
                while w < *indents.last()? {
                    indents.pop();
                    push(&mut toks, K::Dedent, j, j);
                }
                if w != *indents.last()? {
                    return None;
                }
            }
            i = j;
            line_start = false;
            continue;
        }
        let c = b[i];
        let next = b.get(i + 1).copied().unwrap_or(0);
        let (kind, len) = match c {
            b' ' => {
                i += 1;
                continue;
            }
            b'\n' => {
                if nested {
                    return None;
                }
                if parens == 0 {
                    push(&mut toks, K::Newline, i, i + 1);
                    line_start = true;
                }
                i += 1;
                continue;
            }
            b'#' => {
                if nested {
                    return None;
                }
                while i < n && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'a'..=b'z' | b'A'..=b'Z' => {
                let mut j = i + 1;
                while j < n && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                let word = &b[i..j];
                if j < n && (b[j] == b'"' || b[j] == b'\'') {
                    // A string prefix: only `f`/`F` is handled here.
                    if word == b"f" || word == b"F" {
                        let e = string_end(b, j, n, nested)?;
                        push(&mut toks, K::FStr, i, e);
                        i = e;
                        continue;
                    }
                    return None;
                }
                let kind = match keyword(word) {
                    Some(Some(k)) => k,
                    Some(None) => return None,
                    None => K::Name,
                };
                (kind, j - i)
            }
            b'0'..=b'9' => {
                let mut j = i + 1;
                while j < n && b[j].is_ascii_digit() {
                    j += 1;
                }
                let mut kind = K::Int;
                if j < n && b[j] == b'.' {
                    let mut k = j + 1;
                    while k < n && b[k].is_ascii_digit() {
                        k += 1;
                    }
                    if k == j + 1 {
                        return None;
                    }
                    kind = K::Float;
                    j = k;
                }
                if j < n && (b[j] == b'e' || b[j] == b'E') {
                    // An exponent: `e`, an optional sign, at least one digit.
                    let mut k = j + 1;
                    if k < n && (b[k] == b'+' || b[k] == b'-') {
                        k += 1;
                    }
                    let digits = k;
                    while k < n && b[k].is_ascii_digit() {
                        k += 1;
                    }
                    if k == digits {
                        return None;
                    }
                    kind = K::Float;
                    j = k;
                }
                if kind == K::Int && c == b'0' && j > i + 1 {
                    return None;
                }
                if j < n && (b[j].is_ascii_alphanumeric() || b[j] == b'_' || b[j] == b'.') {
                    return None;
                }
                (kind, j - i)
            }
            b'"' | b'\'' => {
                let e = string_end(b, i, n, nested)?;
                push(&mut toks, K::Str, i, e);
                i = e;
                continue;
            }
            b'(' | b'[' | b'{' => {
                parens += 1;
                (
                    match c {
                        b'(' => K::LPar,
                        b'[' => K::LSqb,
                        _ => K::LBrace,
                    },
                    1,
                )
            }
            b')' | b']' | b'}' => {
                parens = parens.checked_sub(1)?;
                if nested && parens == 0 {
                    return None;
                }
                (
                    match c {
                        b')' => K::RPar,
                        b']' => K::RSqb,
                        _ => K::RBrace,
                    },
                    1,
                )
            }
            b':' if next != b'=' => (K::Colon, 1),
            b',' => (K::Comma, 1),
            b'.' if !next.is_ascii_digit() && next != b'.' => (K::Dot, 1),
            b'=' => {
                if next == b'=' {
                    (K::EqEq, 2)
                } else {
                    (K::Assign, 1)
                }
            }
            b'!' if next == b'=' => (K::NotEq, 2),
            b'<' if next != b'<' => {
                if next == b'=' {
                    (K::LtE, 2)
                } else {
                    (K::Lt, 1)
                }
            }
            b'>' if next != b'>' => {
                if next == b'=' {
                    (K::GtE, 2)
                } else {
                    (K::Gt, 1)
                }
            }
            b'+' => {
                if next == b'=' {
                    (K::PlusEq, 2)
                } else {
                    (K::Plus, 1)
                }
            }
            b'-' if next != b'>' => {
                if next == b'=' {
                    (K::MinusEq, 2)
                } else {
                    (K::Minus, 1)
                }
            }
            b'*' => match next {
                b'=' => (K::StarEq, 2),
                b'*' if b.get(i + 2) != Some(&b'=') => (K::DoubleStar, 2),
                b'*' => return None,
                _ => (K::Star, 1),
            },
            b'/' => match next {
                b'=' => (K::SlashEq, 2),
                b'/' if b.get(i + 2) == Some(&b'=') => (K::DoubleSlashEq, 3),
                b'/' => (K::DoubleSlash, 2),
                _ => (K::Slash, 1),
            },
            b'%' => {
                if next == b'=' {
                    (K::PercentEq, 2)
                } else {
                    (K::Percent, 1)
                }
            }
            // Tabs, backslashes, `;`, `@`, bit operators, `:=`, `->`,
            // `...`, non-ASCII outside strings, control characters: the
            // fallback handles them.
            _ => return None,
        };
        push(&mut toks, kind, i, i + len);
        i += len;
    }
    if nested {
        push(&mut toks, K::Eof, n, n);
        return Some(toks);
    }
    if parens != 0 {
        return None;
    }
    if toks
        .last()
        .is_some_and(|t| t.kind != K::Newline && t.kind != K::Dedent)
    {
        push(&mut toks, K::Newline, n, n);
    }
    while indents.len() > 1 {
        indents.pop();
        push(&mut toks, K::Dedent, n, n);
    }
    push(&mut toks, K::Eof, n, n);
    Some(toks)
}

/// End (exclusive) of the single-line, backslash-free string literal whose
/// opening quote is at `q`; `None` for anything else (triple quotes,
/// escapes, a quote inside an f-string field, unterminated).
fn string_end(b: &[u8], q: usize, n: usize, nested: bool) -> Option<usize> {
    if nested {
        return None;
    }
    let quote = b[q];
    if b.get(q + 1) == Some(&quote) && b.get(q + 2) == Some(&quote) {
        return None;
    }
    let mut j = q + 1;
    while j < n {
        match b[j] {
            c if c == quote => return Some(j + 1),
            // Only the escapes `unescape` handles; the rest take the fallback.
            b'\\' if b.get(j + 1).is_some_and(|e| SIMPLE_ESCAPES.contains(e)) => j += 2,
            b'\\' | b'\n' | b'\r' => return None,
            _ => j += 1,
        }
    }
    None
}

/// Escape letters handled on the fast path (`\\ \' \" \n \t \r`).
const SIMPLE_ESCAPES: &[u8] = b"\\'\"ntr";

/// Append `text` (string literal content whose escapes `string_end`
/// vetted) to `out`, resolving escapes as rustpython-parser does.
fn unescape(text: &str, out: &mut String) {
    if !text.contains('\\') {
        out.push_str(text);
        return;
    }
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => {}
        }
    }
}

fn range(s: u32, e: u32) -> TextRange {
    TextRange::new(TextSize::from(s), TextSize::from(e))
}

fn constant(value: Constant, r: TextRange) -> Expr {
    Expr::Constant(ast::ExprConstant {
        value,
        kind: None,
        range: r,
    })
}

/// rustpython-parser's `set_context`.
fn set_context(e: Expr, ctx: ExprContext) -> Expr {
    match e {
        Expr::Name(mut n) => {
            n.ctx = ctx;
            Expr::Name(n)
        }
        Expr::Tuple(mut t) => {
            t.elts = t.elts.into_iter().map(|x| set_context(x, ctx)).collect();
            t.ctx = ctx;
            Expr::Tuple(t)
        }
        Expr::List(mut l) => {
            l.elts = l.elts.into_iter().map(|x| set_context(x, ctx)).collect();
            l.ctx = ctx;
            Expr::List(l)
        }
        Expr::Attribute(mut a) => {
            a.ctx = ctx;
            Expr::Attribute(a)
        }
        Expr::Subscript(mut s) => {
            s.ctx = ctx;
            Expr::Subscript(s)
        }
        Expr::Starred(mut s) => {
            s.value = Box::new(set_context(*s.value, ctx));
            s.ctx = ctx;
            Expr::Starred(s)
        }
        other => other,
    }
}

struct Parser<'s> {
    src: &'s str,
    toks: Vec<Tok>,
    pos: usize,
    /// End of the last consumed token (lalrpop's `@R`).
    prev_end: u32,
    depth: u32,
}

impl Parser<'_> {
    fn peek(&self) -> K {
        self.toks.get(self.pos).map_or(K::Eof, |t| t.kind)
    }

    fn peek2(&self) -> K {
        self.toks.get(self.pos + 1).map_or(K::Eof, |t| t.kind)
    }

    fn start(&self) -> u32 {
        self.toks.get(self.pos).map_or(self.prev_end, |t| t.start)
    }

    fn bump(&mut self) -> Option<Tok> {
        let t = *self.toks.get(self.pos)?;
        self.pos += 1;
        self.prev_end = t.end;
        Some(t)
    }

    fn expect(&mut self, k: K) -> Option<Tok> {
        if self.peek() == k {
            self.bump()
        } else {
            None
        }
    }

    fn text(&self, t: Tok) -> &str {
        self.src.get(t.start as usize..t.end as usize).unwrap_or("")
    }

    fn r(&self, start: u32) -> TextRange {
        range(start, self.prev_end)
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_NEST).then_some(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    // ---- statements ----

    fn statement(&mut self) -> Option<Stmt> {
        match self.peek() {
            K::If => self.if_stmt(),
            K::For => self.for_stmt(),
            _ => {
                let s = self.simple_stmt()?;
                self.expect(K::Newline)?;
                Some(s)
            }
        }
    }

    fn suite(&mut self) -> Option<Vec<Stmt>> {
        // Blocks nest by recursion too: they count towards MAX_NEST.
        self.enter()?;
        let body = self.suite_inner();
        self.leave();
        body
    }

    fn suite_inner(&mut self) -> Option<Vec<Stmt>> {
        if self.peek() == K::Newline {
            self.bump()?;
            self.expect(K::Indent)?;
            let mut body = Vec::new();
            while self.peek() != K::Dedent {
                body.push(self.statement()?);
            }
            self.bump()?;
            Some(body)
        } else {
            let s = self.simple_stmt()?;
            self.expect(K::Newline)?;
            Some(vec![s])
        }
    }

    fn if_stmt(&mut self) -> Option<Stmt> {
        let start = self.start();
        self.bump()?;
        let test = self.test()?;
        self.expect(K::Colon)?;
        let body = self.suite()?;
        let mut elifs = Vec::new();
        while self.peek() == K::Elif {
            let at = self.start();
            self.bump()?;
            let t = self.test()?;
            self.expect(K::Colon)?;
            let b = self.suite()?;
            elifs.push((at, t, b));
        }
        let mut last = if self.peek() == K::Else {
            self.bump()?;
            self.expect(K::Colon)?;
            self.suite()?
        } else {
            Vec::new()
        };
        // As rustpython-parser: every `elif` ends where the whole statement does.
        let end = last
            .last()
            .or_else(|| elifs.last().and_then(|e| e.2.last()))
            .or_else(|| body.last())
            .map(|s| u32::from(ast::Ranged::end(s)))?;
        for (at, t, b) in elifs.into_iter().rev() {
            last = vec![Stmt::If(ast::StmtIf {
                test: Box::new(t),
                body: b,
                orelse: last,
                range: range(at, end),
            })];
        }
        Some(Stmt::If(ast::StmtIf {
            test: Box::new(test),
            body,
            orelse: last,
            range: range(start, end),
        }))
    }

    fn for_stmt(&mut self) -> Option<Stmt> {
        let start = self.start();
        self.bump()?;
        let target = self.generic_list(false)?;
        self.expect(K::In)?;
        let iter = self.generic_list(true)?;
        self.expect(K::Colon)?;
        let body = self.suite()?;
        let orelse = if self.peek() == K::Else {
            self.bump()?;
            self.expect(K::Colon)?;
            self.suite()?
        } else {
            Vec::new()
        };
        let end = orelse
            .last()
            .or_else(|| body.last())
            .map(|s| u32::from(ast::Ranged::end(s)))?;
        Some(Stmt::For(ast::StmtFor {
            target: Box::new(set_context(target, ExprContext::Store)),
            iter: Box::new(iter),
            body,
            orelse,
            type_comment: None,
            range: range(start, end),
        }))
    }

    fn simple_stmt(&mut self) -> Option<Stmt> {
        let start = self.start();
        match self.peek() {
            K::Pass => {
                self.bump()?;
                return Some(Stmt::Pass(ast::StmtPass {
                    range: self.r(start),
                }));
            }
            K::Break => {
                self.bump()?;
                return Some(Stmt::Break(ast::StmtBreak {
                    range: self.r(start),
                }));
            }
            K::Continue => {
                self.bump()?;
                return Some(Stmt::Continue(ast::StmtContinue {
                    range: self.r(start),
                }));
            }
            _ => {}
        }
        let first = self.generic_list(true)?;
        let op = match self.peek() {
            K::Assign => {
                let mut values = vec![first];
                while self.peek() == K::Assign {
                    self.bump()?;
                    values.push(self.generic_list(true)?);
                }
                let value = values.pop()?;
                let targets = values
                    .into_iter()
                    .map(|t| set_context(t, ExprContext::Store))
                    .collect();
                return Some(Stmt::Assign(ast::StmtAssign {
                    targets,
                    value: Box::new(value),
                    type_comment: None,
                    range: self.r(start),
                }));
            }
            K::PlusEq => Operator::Add,
            K::MinusEq => Operator::Sub,
            K::StarEq => Operator::Mult,
            K::SlashEq => Operator::Div,
            K::DoubleSlashEq => Operator::FloorDiv,
            K::PercentEq => Operator::Mod,
            _ => {
                return Some(Stmt::Expr(ast::StmtExpr {
                    value: Box::new(first),
                    range: self.r(start),
                }))
            }
        };
        self.bump()?;
        let value = self.generic_list(true)?;
        Some(Stmt::AugAssign(ast::StmtAugAssign {
            target: Box::new(set_context(first, ExprContext::Store)),
            op,
            value: Box::new(value),
            range: self.r(start),
        }))
    }

    // ---- expression lists ----

    fn starts_expr(k: K) -> bool {
        matches!(
            k,
            K::Name
                | K::Int
                | K::Float
                | K::Str
                | K::FStr
                | K::LPar
                | K::LSqb
                | K::LBrace
                | K::Plus
                | K::Minus
                | K::Star
                | K::Not
                | K::Lambda
                | K::True
                | K::False
                | K::None
        )
    }

    /// `*expr` (rustpython's StarExpr).
    fn star_expr(&mut self) -> Option<Expr> {
        let start = self.start();
        self.bump()?;
        self.enter()?;
        let value = self.arith();
        self.leave();
        let value = value?;
        Some(Expr::Starred(ast::ExprStarred {
            value: Box::new(value),
            ctx: ExprContext::Load,
            range: self.r(start),
        }))
    }

    /// One element of a list: `test` (when `tests`) or `arith`, or a star expression.
    fn element(&mut self, tests: bool) -> Option<Expr> {
        if self.peek() == K::Star {
            self.star_expr()
        } else if tests {
            self.test()
        } else {
            self.arith()
        }
    }

    /// rustpython's GenericList: TestList (`tests`) or ExpressionList.
    fn generic_list(&mut self, tests: bool) -> Option<Expr> {
        let start = self.start();
        let first = self.element(tests)?;
        if self.peek() != K::Comma {
            return Some(first);
        }
        let mut elts = vec![first];
        while self.peek() == K::Comma {
            self.bump()?;
            if !Self::starts_expr(self.peek()) {
                break;
            }
            elts.push(self.element(tests)?);
        }
        Some(Expr::Tuple(ast::ExprTuple {
            elts,
            ctx: ExprContext::Load,
            range: self.r(start),
        }))
    }

    // ---- expressions ----

    fn test(&mut self) -> Option<Expr> {
        self.enter()?;
        let e = self.test_inner();
        self.leave();
        e
    }

    fn test_inner(&mut self) -> Option<Expr> {
        if self.peek() == K::Lambda {
            return self.lambda();
        }
        let start = self.start();
        let body = self.or_test()?;
        if self.peek() != K::If {
            return Some(body);
        }
        self.bump()?;
        let test = self.or_test()?;
        self.expect(K::Else)?;
        let orelse = self.test()?;
        Some(Expr::IfExp(ast::ExprIfExp {
            test: Box::new(test),
            body: Box::new(body),
            orelse: Box::new(orelse),
            range: self.r(start),
        }))
    }

    fn lambda(&mut self) -> Option<Expr> {
        let start = self.start();
        self.bump()?;
        let pstart = self.start();
        let mut args: Vec<ast::ArgWithDefault> = Vec::new();
        loop {
            let t = self.expect(K::Name)?;
            let name = self.text(t);
            if name.starts_with('_')
                || args.len() >= MAX_LINEAR_SCAN
                || args.iter().any(|a| a.def.arg.as_str() == name)
            {
                return None;
            }
            let def = ast::Arg {
                arg: ast::Identifier::new(name),
                annotation: None,
                type_comment: None,
                range: range(t.start, t.end),
            };
            args.push(ast::ArgWithDefault {
                def,
                default: None,
                range: ast::OptionalRange::<TextRange>::from(range(t.start, t.end)),
            });
            match self.peek() {
                K::Comma if self.peek2() == K::Name => {
                    self.bump()?;
                }
                K::Colon => break,
                _ => return None,
            }
        }
        let pend = self.prev_end;
        self.expect(K::Colon)?;
        let body = self.test()?;
        Some(Expr::Lambda(ast::ExprLambda {
            args: Box::new(ast::Arguments {
                posonlyargs: Vec::new(),
                args,
                vararg: None,
                kwonlyargs: Vec::new(),
                kwarg: None,
                range: ast::OptionalRange::<TextRange>::from(range(pstart, pend)),
            }),
            body: Box::new(body),
            range: self.r(start),
        }))
    }

    fn or_test(&mut self) -> Option<Expr> {
        let start = self.start();
        let first = self.and_test()?;
        if self.peek() != K::Or {
            return Some(first);
        }
        let mut values = vec![first];
        while self.peek() == K::Or {
            self.bump()?;
            values.push(self.and_test()?);
        }
        Some(Expr::BoolOp(ast::ExprBoolOp {
            op: BoolOp::Or,
            values,
            range: self.r(start),
        }))
    }

    fn and_test(&mut self) -> Option<Expr> {
        let start = self.start();
        let first = self.not_test()?;
        if self.peek() != K::And {
            return Some(first);
        }
        let mut values = vec![first];
        while self.peek() == K::And {
            self.bump()?;
            values.push(self.not_test()?);
        }
        Some(Expr::BoolOp(ast::ExprBoolOp {
            op: BoolOp::And,
            values,
            range: self.r(start),
        }))
    }

    fn not_test(&mut self) -> Option<Expr> {
        if self.peek() != K::Not {
            return self.comparison();
        }
        let start = self.start();
        self.bump()?;
        self.enter()?;
        let operand = self.not_test();
        self.leave();
        Some(Expr::UnaryOp(ast::ExprUnaryOp {
            op: UnaryOp::Not,
            operand: Box::new(operand?),
            range: self.r(start),
        }))
    }

    fn comparison(&mut self) -> Option<Expr> {
        let start = self.start();
        let left = self.arith()?;
        let mut ops = Vec::new();
        let mut comparators = Vec::new();
        loop {
            let op = match self.peek() {
                K::EqEq => CmpOp::Eq,
                K::NotEq => CmpOp::NotEq,
                K::Lt => CmpOp::Lt,
                K::LtE => CmpOp::LtE,
                K::Gt => CmpOp::Gt,
                K::GtE => CmpOp::GtE,
                K::In => CmpOp::In,
                K::Not if self.peek2() == K::In => {
                    self.bump()?;
                    CmpOp::NotIn
                }
                K::Is if self.peek2() == K::Not => {
                    self.bump()?;
                    CmpOp::IsNot
                }
                K::Is => CmpOp::Is,
                _ => break,
            };
            self.bump()?;
            ops.push(op);
            comparators.push(self.arith()?);
        }
        if ops.is_empty() {
            return Some(left);
        }
        Some(Expr::Compare(ast::ExprCompare {
            left: Box::new(left),
            ops,
            comparators,
            range: self.r(start),
        }))
    }

    fn arith(&mut self) -> Option<Expr> {
        let start = self.start();
        let mut left = self.term()?;
        loop {
            let op = match self.peek() {
                K::Plus => Operator::Add,
                K::Minus => Operator::Sub,
                _ => return Some(left),
            };
            self.bump()?;
            let right = self.term()?;
            left = Expr::BinOp(ast::ExprBinOp {
                left: Box::new(left),
                op,
                right: Box::new(right),
                range: self.r(start),
            });
        }
    }

    fn term(&mut self) -> Option<Expr> {
        let start = self.start();
        let mut left = self.factor()?;
        loop {
            let op = match self.peek() {
                K::Star => Operator::Mult,
                K::Slash => Operator::Div,
                K::DoubleSlash => Operator::FloorDiv,
                K::Percent => Operator::Mod,
                _ => return Some(left),
            };
            self.bump()?;
            let right = self.factor()?;
            left = Expr::BinOp(ast::ExprBinOp {
                left: Box::new(left),
                op,
                right: Box::new(right),
                range: self.r(start),
            });
        }
    }

    fn factor(&mut self) -> Option<Expr> {
        let op = match self.peek() {
            K::Plus => UnaryOp::UAdd,
            K::Minus => UnaryOp::USub,
            _ => {
                let e = self.atom_expr()?;
                // `**` (forbidden anyway) takes the fallback.
                return (self.peek() != K::DoubleStar).then_some(e);
            }
        };
        let start = self.start();
        self.bump()?;
        self.enter()?;
        let operand = self.factor();
        self.leave();
        Some(Expr::UnaryOp(ast::ExprUnaryOp {
            op,
            operand: Box::new(operand?),
            range: self.r(start),
        }))
    }

    fn atom_expr(&mut self) -> Option<Expr> {
        let start = self.start();
        let mut e = self.atom()?;
        loop {
            match self.peek() {
                K::LPar => {
                    self.bump()?;
                    let (args, keywords) = self.call_args()?;
                    e = Expr::Call(ast::ExprCall {
                        func: Box::new(e),
                        args,
                        keywords,
                        range: self.r(start),
                    });
                }
                K::LSqb => {
                    self.bump()?;
                    let slice = self.subscript_list()?;
                    self.expect(K::RSqb)?;
                    e = Expr::Subscript(ast::ExprSubscript {
                        value: Box::new(e),
                        slice: Box::new(slice),
                        ctx: ExprContext::Load,
                        range: self.r(start),
                    });
                }
                K::Dot => {
                    self.bump()?;
                    let t = self.expect(K::Name)?;
                    let attr = ast::Identifier::new(self.text(t));
                    e = Expr::Attribute(ast::ExprAttribute {
                        value: Box::new(e),
                        attr,
                        ctx: ExprContext::Load,
                        range: self.r(start),
                    });
                }
                _ => return Some(e),
            }
        }
    }

    /// Arguments after `(`, through `)`.
    fn call_args(&mut self) -> Option<(Vec<Expr>, Vec<ast::Keyword>)> {
        let mut args = Vec::new();
        let mut keywords: Vec<ast::Keyword> = Vec::new();
        let mut double_starred = false;
        while self.peek() != K::RPar {
            let start = self.start();
            match self.peek() {
                K::Star => {
                    self.bump()?;
                    let value = self.test()?;
                    if double_starred {
                        return None;
                    }
                    args.push(Expr::Starred(ast::ExprStarred {
                        value: Box::new(value),
                        ctx: ExprContext::Load,
                        range: self.r(start),
                    }));
                }
                K::DoubleStar => {
                    self.bump()?;
                    let value = self.test()?;
                    double_starred = true;
                    keywords.push(ast::Keyword {
                        arg: None,
                        value,
                        range: self.r(start),
                    });
                }
                K::Name if self.peek2() == K::Assign => {
                    let t = self.bump()?;
                    self.bump()?;
                    let name = self.text(t);
                    // The duplicate check below is quadratic: long keyword
                    // lists take the fallback (which hashes).
                    if keywords.len() >= MAX_LINEAR_SCAN
                        || keywords
                            .iter()
                            .any(|k| k.arg.as_ref().is_some_and(|a| a.as_str() == name))
                    {
                        return None;
                    }
                    let arg = ast::Identifier::new(name);
                    let value = self.test()?;
                    keywords.push(ast::Keyword {
                        arg: Some(arg),
                        value,
                        range: self.r(start),
                    });
                }
                _ => {
                    let mut value = self.test()?;
                    if self.peek() == K::For {
                        let generators = self.comp_for()?;
                        value = Expr::GeneratorExp(ast::ExprGeneratorExp {
                            elt: Box::new(value),
                            generators,
                            range: self.r(start),
                        });
                    }
                    if !keywords.is_empty() {
                        return None;
                    }
                    args.push(value);
                }
            }
            match self.peek() {
                K::Comma => {
                    self.bump()?;
                }
                K::RPar => {}
                _ => return None,
            }
        }
        self.bump()?;
        Some((args, keywords))
    }

    fn subscript_list(&mut self) -> Option<Expr> {
        let start = self.start();
        let first = self.subscript()?;
        if self.peek() != K::Comma {
            return Some(first);
        }
        let mut elts = vec![first];
        while self.peek() == K::Comma {
            self.bump()?;
            if self.peek() == K::RSqb {
                break;
            }
            elts.push(self.subscript()?);
        }
        Some(Expr::Tuple(ast::ExprTuple {
            elts,
            ctx: ExprContext::Load,
            range: self.r(start),
        }))
    }

    fn subscript(&mut self) -> Option<Expr> {
        let start = self.start();
        let lower = match self.peek() {
            K::Colon => None,
            K::Star => return self.star_expr(),
            _ => {
                let e = self.test()?;
                if self.peek() != K::Colon {
                    return Some(e);
                }
                Some(Box::new(e))
            }
        };
        self.bump()?;
        let upper = if Self::starts_test(self.peek()) {
            Some(Box::new(self.test()?))
        } else {
            None
        };
        let step = if self.peek() == K::Colon {
            self.bump()?;
            if Self::starts_test(self.peek()) {
                Some(Box::new(self.test()?))
            } else {
                None
            }
        } else {
            None
        };
        Some(Expr::Slice(ast::ExprSlice {
            lower,
            upper,
            step,
            range: self.r(start),
        }))
    }

    fn starts_test(k: K) -> bool {
        k != K::Star && Self::starts_expr(k)
    }

    fn comp_for(&mut self) -> Option<Vec<ast::Comprehension>> {
        let mut gens = Vec::new();
        while self.peek() == K::For {
            let start = self.start();
            self.bump()?;
            let target = self.generic_list(false)?;
            self.expect(K::In)?;
            let iter = self.or_test()?;
            let mut ifs = Vec::new();
            while self.peek() == K::If {
                self.bump()?;
                ifs.push(self.or_test()?);
            }
            gens.push(ast::Comprehension {
                target: set_context(target, ExprContext::Store),
                iter,
                ifs,
                is_async: false,
                range: ast::OptionalRange::<TextRange>::from(self.r(start)),
            });
        }
        Some(gens)
    }

    fn atom(&mut self) -> Option<Expr> {
        let start = self.start();
        match self.peek() {
            K::Name => {
                let t = self.bump()?;
                Some(Expr::Name(ast::ExprName {
                    id: ast::Identifier::new(self.text(t)),
                    ctx: ExprContext::Load,
                    range: range(t.start, t.end),
                }))
            }
            K::Int => {
                let t = self.bump()?;
                let v: BigInt = self.text(t).parse().ok()?;
                Some(constant(Constant::Int(v), range(t.start, t.end)))
            }
            K::Float => {
                let t = self.bump()?;
                let v: f64 = self.text(t).parse().ok()?;
                Some(constant(Constant::Float(v), range(t.start, t.end)))
            }
            K::True | K::False | K::None => {
                let t = self.bump()?;
                let v = match t.kind {
                    K::True => Constant::Bool(true),
                    K::False => Constant::Bool(false),
                    _ => Constant::None,
                };
                Some(constant(v, range(t.start, t.end)))
            }
            K::Str | K::FStr => self.strings(),
            K::LPar => self.paren(start),
            K::LSqb => self.list(start),
            K::LBrace => self.brace(start),
            _ => None,
        }
    }

    fn paren(&mut self, start: u32) -> Option<Expr> {
        self.bump()?;
        if self.peek() == K::RPar {
            self.bump()?;
            return Some(Expr::Tuple(ast::ExprTuple {
                elts: Vec::new(),
                ctx: ExprContext::Load,
                range: self.r(start),
            }));
        }
        let first = self.element(true)?;
        let starred = matches!(first, Expr::Starred(_));
        match self.peek() {
            K::For if !starred => {
                let generators = self.comp_for()?;
                self.expect(K::RPar)?;
                Some(Expr::GeneratorExp(ast::ExprGeneratorExp {
                    elt: Box::new(first),
                    generators,
                    range: self.r(start),
                }))
            }
            K::RPar if !starred => {
                self.bump()?;
                Some(first)
            }
            K::Comma => {
                let mut elts = vec![first];
                while self.peek() == K::Comma {
                    self.bump()?;
                    if self.peek() == K::RPar {
                        break;
                    }
                    elts.push(self.element(true)?);
                }
                self.expect(K::RPar)?;
                Some(Expr::Tuple(ast::ExprTuple {
                    elts,
                    ctx: ExprContext::Load,
                    range: self.r(start),
                }))
            }
            _ => None,
        }
    }

    fn list(&mut self, start: u32) -> Option<Expr> {
        self.bump()?;
        let mut elts = Vec::new();
        if self.peek() != K::RSqb {
            let first = self.element(true)?;
            if self.peek() == K::For && !matches!(first, Expr::Starred(_)) {
                let generators = self.comp_for()?;
                self.expect(K::RSqb)?;
                return Some(Expr::ListComp(ast::ExprListComp {
                    elt: Box::new(first),
                    generators,
                    range: self.r(start),
                }));
            }
            elts.push(first);
            while self.peek() == K::Comma {
                self.bump()?;
                if self.peek() == K::RSqb {
                    break;
                }
                elts.push(self.element(true)?);
            }
        }
        self.expect(K::RSqb)?;
        Some(Expr::List(ast::ExprList {
            elts,
            ctx: ExprContext::Load,
            range: self.r(start),
        }))
    }

    fn brace(&mut self, start: u32) -> Option<Expr> {
        self.bump()?;
        let mut keys: Vec<Option<Expr>> = Vec::new();
        let mut values = Vec::new();
        if self.peek() == K::RBrace {
            self.bump()?;
            return Some(Expr::Dict(ast::ExprDict {
                keys,
                values,
                range: self.r(start),
            }));
        }
        if self.peek() != K::DoubleStar {
            let first = self.element(true)?;
            let starred = matches!(first, Expr::Starred(_));
            if self.peek() != K::Colon {
                // A set display or comprehension.
                if self.peek() == K::For && !starred {
                    let generators = self.comp_for()?;
                    self.expect(K::RBrace)?;
                    return Some(Expr::SetComp(ast::ExprSetComp {
                        elt: Box::new(first),
                        generators,
                        range: self.r(start),
                    }));
                }
                let mut elts = vec![first];
                while self.peek() == K::Comma {
                    self.bump()?;
                    if self.peek() == K::RBrace {
                        break;
                    }
                    elts.push(self.element(true)?);
                }
                self.expect(K::RBrace)?;
                return Some(Expr::Set(ast::ExprSet {
                    elts,
                    range: self.r(start),
                }));
            }
            if starred {
                return None;
            }
            self.bump()?;
            let value = self.test()?;
            if self.peek() == K::For {
                let generators = self.comp_for()?;
                self.expect(K::RBrace)?;
                return Some(Expr::DictComp(ast::ExprDictComp {
                    key: Box::new(first),
                    value: Box::new(value),
                    generators,
                    range: self.r(start),
                }));
            }
            keys.push(Some(first));
            values.push(value);
            match self.peek() {
                K::Comma => {
                    self.bump()?;
                }
                K::RBrace => {}
                _ => return None,
            }
        }
        while self.peek() != K::RBrace {
            if self.peek() == K::DoubleStar {
                self.bump()?;
                keys.push(None);
                values.push(self.arith()?);
            } else {
                let k = self.test()?;
                self.expect(K::Colon)?;
                keys.push(Some(k));
                values.push(self.test()?);
            }
            match self.peek() {
                K::Comma => {
                    self.bump()?;
                }
                K::RBrace => {}
                _ => return None,
            }
        }
        self.bump()?;
        Some(Expr::Dict(ast::ExprDict {
            keys,
            values,
            range: self.r(start),
        }))
    }

    /// One or more adjacent string literals (rustpython's `parse_strings`).
    fn strings(&mut self) -> Option<Expr> {
        let first = self.pos;
        while matches!(self.peek(), K::Str | K::FStr) {
            self.bump()?;
        }
        let toks: Vec<Tok> = self.toks.get(first..self.pos)?.to_vec();
        let (s0, e0) = (toks.first()?.start, toks.last()?.end);
        let whole = range(s0, e0);
        if toks.iter().all(|t| t.kind == K::Str) {
            let mut value = String::new();
            for t in &toks {
                unescape(
                    self.src.get(t.start as usize + 1..t.end as usize - 1)?,
                    &mut value,
                );
            }
            return Some(constant(Constant::Str(value), whole));
        }
        let mut values = Vec::new();
        let mut current = String::new();
        let mut have_current = false;
        for t in &toks {
            if t.kind == K::Str {
                unescape(
                    self.src.get(t.start as usize + 1..t.end as usize - 1)?,
                    &mut current,
                );
                have_current = true;
                continue;
            }
            self.fstring(*t, &mut values, &mut current, &mut have_current, whole)?;
        }
        if have_current {
            values.push(constant(Constant::Str(current), whole));
        }
        Some(Expr::JoinedStr(ast::ExprJoinedStr {
            values,
            range: whole,
        }))
    }

    /// The parts of one `f"..."` token, merged into `values`/`current` as
    /// rustpython's `parse_strings` does.
    fn fstring(
        &mut self,
        t: Tok,
        values: &mut Vec<Expr>,
        current: &mut String,
        have_current: &mut bool,
        whole: TextRange,
    ) -> Option<()> {
        let src = self.src;
        let b = src.as_bytes();
        let tok_range = range(t.start, t.end);
        // Content between `f"` and the closing quote.
        let (mut i, end) = (t.start as usize + 2, t.end as usize - 1);
        let mut lit_start = i;
        while i < end {
            match b[i] {
                // An escape pair (vetted by `string_end`): part of the literal.
                b'\\' => i += 2,
                b'{' if b.get(i + 1) == Some(&b'{') && i + 1 < end => {
                    unescape(src.get(lit_start..i + 1)?, current);
                    *have_current = true;
                    i += 2;
                    lit_start = i;
                }
                b'}' if b.get(i + 1) == Some(&b'}') && i + 1 < end => {
                    unescape(src.get(lit_start..i + 1)?, current);
                    *have_current = true;
                    i += 2;
                    lit_start = i;
                }
                b'}' => return None,
                b'{' => {
                    if lit_start < i {
                        unescape(src.get(lit_start..i)?, current);
                        *have_current = true;
                    }
                    let (field, next) = self.field(i + 1, end, tok_range)?;
                    if *have_current {
                        values.push(constant(Constant::Str(std::mem::take(current)), whole));
                        *have_current = false;
                    }
                    values.push(field);
                    i = next;
                    lit_start = i;
                }
                _ => i += 1,
            }
        }
        if lit_start < end {
            unescape(src.get(lit_start..end)?, current);
            *have_current = true;
        }
        Some(())
    }

    /// A replacement field whose expression starts at `loc` (just after
    /// `{`); returns the FormattedValue and the offset after its `}`.
    fn field(&mut self, loc: usize, end: usize, tok_range: TextRange) -> Option<(Expr, usize)> {
        let b = self.src.as_bytes();
        let mut depth = Vec::new();
        let mut j = loc;
        let expr_end;
        loop {
            if j >= end {
                return None;
            }
            match b[j] {
                c @ (b'(' | b'[') => depth.push(c),
                close @ (b')' | b']') => {
                    let open = if close == b')' { b'(' } else { b'[' };
                    if depth.pop()? != open {
                        return None;
                    }
                }
                b'}' | b'!' | b':' if depth.is_empty() => {
                    expr_end = j;
                    break;
                }
                b'{' | b'}' | b'!' | b'"' | b'\'' | b'=' | b'#' | b'\\' => return None,
                _ => {}
            }
            j += 1;
        }
        if self.src.get(loc..expr_end)?.trim().is_empty() {
            return None;
        }
        let mut conversion = ConversionFlag::None;
        if b[j] == b'!' {
            conversion = match b.get(j + 1)? {
                b's' => ConversionFlag::Str,
                b'a' => ConversionFlag::Ascii,
                b'r' => ConversionFlag::Repr,
                _ => return None,
            };
            j += 2;
            if j >= end || !matches!(b[j], b'}' | b':') {
                return None;
            }
        }
        let mut format_spec = None;
        if b[j] == b':' {
            let s = j + 1;
            let mut k = s;
            while k < end && b[k] != b'}' {
                if b[k] == b'{' {
                    return None;
                }
                k += 1;
            }
            if k >= end {
                return None;
            }
            let mut spec_values = Vec::new();
            if k > s {
                spec_values.push(constant(
                    Constant::Str(self.src.get(s..k)?.to_string()),
                    tok_range,
                ));
            }
            format_spec = Some(Box::new(Expr::JoinedStr(ast::ExprJoinedStr {
                values: spec_values,
                range: tok_range,
            })));
            j = k;
        }
        // b[j] == b'}' here.
        let value = self.sub_expression(loc, expr_end)?;
        Some((
            Expr::FormattedValue(ast::ExprFormattedValue {
                value: Box::new(value),
                conversion,
                format_spec,
                range: tok_range,
            }),
            j + 1,
        ))
    }

    /// Parse `src[from..to]` as rustpython does an f-string field: as
    /// `(expr)`, which must be a single plain expression.
    fn sub_expression(&mut self, from: usize, to: usize) -> Option<Expr> {
        let toks = tokenize(self.src, from, to, true)?;
        let mut sub = Parser {
            src: self.src,
            toks,
            pos: 0,
            prev_end: u(from),
            depth: self.depth,
        };
        let e = sub.test()?;
        (sub.peek() == K::Eof).then_some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::parse;
    use rustpython_parser::{ast, Mode};

    /// rustpython-parser's body, or None when it rejects the program.
    fn reference(src: &str) -> Option<Vec<ast::Stmt>> {
        match rustpython_parser::parse(src, Mode::Module, "<program>") {
            Ok(ast::Mod::Module(m)) => Some(m.body),
            _ => None,
        }
    }

    /// The fast parser either declines or builds rustpython-parser's exact tree.
    fn agree(src: &str) -> bool {
        match parse(src) {
            Some(fast) => {
                let Some(slow) = reference(src) else {
                    panic!("fast parser accepted a program rustpython-parser rejects: {src:?}");
                };
                assert_eq!(fast, slow, "trees differ for {src:?}");
                true
            }
            None => false,
        }
    }

    fn corpus() -> Vec<(String, String)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/conformance");
        let mut out = Vec::new();
        if let Ok(rd) = std::fs::read_dir(&dir) {
            for e in rd.flatten() {
                let p = e.path();
                if p.extension().is_some_and(|x| x == "py") {
                    if let Ok(s) = std::fs::read_to_string(&p) {
                        out.push((p.display().to_string(), s));
                    }
                }
            }
        }
        out.sort();
        out
    }

    #[test]
    fn conformance_corpus_agrees() {
        let corpus = corpus();
        let mut fast = 0;
        for (name, src) in &corpus {
            if agree(src) {
                fast += 1;
            } else if std::env::var_os("SHOW_DECLINED").is_some() {
                eprintln!("declined: {name}");
            }
        }
        eprintln!("fast path took {fast} of {} programs", corpus.len());
        assert!(
            corpus.is_empty() || fast * 2 > corpus.len(),
            "{fast} of {}",
            corpus.len()
        );
    }

    /// Line-level and byte-level mutations of the corpus: the fast parser
    /// must decline whatever rustpython-parser rejects, and agree otherwise.
    #[test]
    fn mutated_corpus_agrees() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        #[rustfmt::skip]
        const INSERTS: &[&str] = &[
            " ", "\n", "(", ")", "[", "]", "{", "}", ":", ",", "=", "==", "-", "*", "**", "\"",
            "'", "f\"", "{x}", "not ", " in ", " if ", " else ", "lambda a: ", "for ", "  ",
            "\n    ", ".", "0", "1.5", "#", "x", "!r", "!", "%", "//", "+=", "\r", "\r\n", "\t",
            "\x0c", "é", "\\", "\\\n", "_", ";", "\"\"\"", "\'\'\'", "1e5", "0x1", "f'{", "!r}",
            ":>3}", "{{", "\\n", "\\{", "u'", "r\"", "b'", "elif ", "else:", "match ",
        ];
        let (mut n, mut fast) = (0, 0);
        for (_, src) in corpus() {
            let lines: Vec<&str> = src.split_inclusive('\n').collect();
            for k in 0..lines.len() {
                // Prefix of k lines, and the program without line k.
                let prefix: String = lines[..k].concat();
                let without: String = lines
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != k)
                    .map(|(_, l)| *l)
                    .collect();
                for v in [prefix, without] {
                    n += 1;
                    fast += usize::from(agree(&v));
                }
            }
            for _ in 0..24 {
                let bytes = src.as_bytes();
                if bytes.is_empty() {
                    break;
                }
                let at = (next() as usize) % bytes.len();
                let mut v = bytes.to_vec();
                if next() % 2 == 0 {
                    v.remove(at);
                } else {
                    let ins = INSERTS[(next() as usize) % INSERTS.len()];
                    v.splice(at..at, ins.bytes());
                }
                if let Ok(v) = String::from_utf8(v) {
                    n += 1;
                    fast += usize::from(agree(&v));
                }
            }
        }
        eprintln!("mutations: fast path took {fast} of {n}");
    }

    #[test]
    fn edge_cases_agree() {
        let cases = [
            "",
            "\n\n",
            "# only a comment",
            "x = 1",
            "x = 1\n",
            "x = y = 1,\n",
            "x, y = 1, 2\n",
            "a, *b = c\n",
            "[a, b] = c\n",
            "x[1:2, ::3] = y[:]\n",
            "x[a, b,]\n",
            "x[1,]\n",
            "x[*a]\n",
            "d = {}\ns = {1, 2,}\nt = ()\nu = (1,)\nv = (1, *w)\n",
            "d = {**a, 'k': 1, **b}\n",
            "d = {k: v for k, v in x.items() if v if k}\n",
            "s = {x for x in y}\nl = [*a, *b]\n",
            "g = (x for x in y)\nh = sum(x for x in y)\ni = f(x for x in y)\n",
            "f(a, *b, c=1, *d, **e)\n",
            "f(a)(b)[c].d(e=f)\n",
            "x = a if b else c if d else e\n",
            "x = not not a\ny = - - + a\n",
            "x = a < b <= c == d != e > f >= g in h not in i is j is not k\n",
            "x = a or b or c and d and not e\n",
            "x = a + b - c * d / e // f % g\n",
            "x = -1\ny = +2.5\nz = 0\nw = 00\n",
            "x = 123456789012345678901234567890\n",
            "x = 1.0\ny = 10.25\n",
            "x = 1e5\ny = 2.5E-3\nz = 1e+2\nw = 0e0\nv = 00e1\nu = 1e400\nt = 1e-400\n",
            "x = 1e\n",
            "x = 1e+\n",
            "x = 1e5j\n",
            "x = 1e5.real\n",
            "x = 1e_5\n",
            "x = 1.e5\n",
            "s = 'a' \"b\" 'c'\n",
            "s = ''\nt = \"\"\n",
            "s = f''\nt = f'{x}' ''\n",
            "s = f'a{x}b{y!r}c{z:>10}d{w!s:^{3}}'\n",
            "s = f'{x:}' f'{y!a}'\n",
            "s = f'{{}}{{{x}}}}}'\n",
            "s = f'{x[1:2]}{d[\"k\"]}'\n",
            "s = f'{ x + 1 }'\n",
            "s = f'{x:%H:%M}'\n",
            "s = 'é' f'ü{x}ß'\n",
            "s = 'tab\there'\n",
            "s = f'{a, b}'\n",
            "s = f'{x for x in y}'\n",
            "s = f'{}'\n",
            "s = f'{ }'\n",
            "s = f'{x'\n",
            "s = f'}'\n",
            "s = f'{x!}'\n",
            "s = f'{x!z}'\n",
            "s = f'{x)}'\n",
            "s = f'{(x}'\n",
            "s = f'{lambda x: 1}'\n",
            "s = f'{(lambda x: 1)(2)}'\n",
            "s = f'{x:{y}}'\n",
            "s = f'{x=}'\n",
            "f(key=lambda kv: kv[1], reverse=True)\n",
            "f(key=lambda a, b: a)\n",
            "f(key=lambda a, a: a)\n",
            "f(key=lambda a,: a)\n",
            "f(a=1, a=2)\n",
            "f(a=1, b)\n",
            "f(**a, *b)\n",
            "f(*a, b)\n",
            "if a:\n    b\nelif c:\n    d\nelif e:\n    f\nelse:\n    g\n",
            "if a:\n    b\nelif c:\n    d\n",
            "if a: b\nelse: c\n",
            "if a:\n    if b:\n        c\n    else:\n        d\nx = 1\n",
            "for i, x in enumerate(y):\n    if x:\n        continue\n    break\nelse:\n    pass\n",
            "for x, in y:\n    pass\n",
            "for x in a, b:\n    pass\n",
            "for *a, b in c:\n    pass\n",
            "if a:\n  b\n # comment\n  c\n\n\n",
            "if a:\n    b\n  c\n",
            "  x = 1\n",
            "x = (1 +\n     2)\n",
            "x = [\n    1,\n    # c\n    2,\n]\n",
            "x += 1\ny -= 2\nz *= 3\nw /= 4\nv //= 5\nu %= 6\n",
            "x.y += 1\nx[0] //= 2\n",
            "(a, b) += 1\n",
            "f() = 1\n",
            "x = 1 if 2\n",
            "x = (yield)\n",
            "x = [*a for a in b]\n",
            "x = (*a)\n",
            "x = {*a: 1}\n",
            "x = {1: 2 3: 4}\n",
            "x = {1: 2, 3}\n",
            "x = a.b.c(d)[e]\n",
            "x = 1if y else 2\n",
            "x = 1 .real\n",
            "print(x) # trailing\n",
            "x = 1\n\n\n# end",
            "if x:\n    pass\n# c\nelse:\n    pass\n",
            "x = [i for i in range(3) for j in range(i) if i if j]\n",
            "x = [i for i in a if b else c]\n",
            "x = [i for i in lambda: 1]\n",
            "x = (i for i in a), 1\n",
            "x = a[b][c:d][::e]\n",
            "x = a[lambda: 1]\n",
            "x = a[:, 1]\n",
            "x = not a in b\n",
            "x = a not b\n",
            "x = 'a' in f'{b}'\n",
            "isinstance(x, (int, str))\n",
            "s = '\\n'.join(x)\nt = \"a\\tb\\\\c\\'d\\\"e\\r\"\n",
            "s = f'\\n{x}\\\\{y}\\t' 'z\\n'\n",
            "s = f'{x}\\{y}'\n",
            "s = f'{x:\\n}'\n",
            "s = f'{x\\n}'\n",
            "s = '\\x41\\u00e9\\0'\n",
            "s = 'a\\\nb'\n",
            "x = 1 + \\\n 2\n",
            "x = a\ny = b\n\n\nz = c",
            "x = 1 # c\ry = 2\n",
            "# c\ry = 2\n",
            "x = 1\r\ny = 2\r\n",
        ];
        for c in cases {
            if !agree(c) {
                eprintln!("declined: {c:?}");
            }
        }
    }

    /// At and just past `MAX_NEST`, every recursive construct parses (or
    /// declines) on a 256 KiB stack, in debug builds too.
    #[test]
    fn nesting_at_the_limit_fits_a_small_stack() {
        let n = super::MAX_NEST as usize;
        let mut programs = Vec::new();
        for k in [n - 2, n - 1, n, n + 1, n + 10] {
            programs.push(format!("x = {}y{}\n", "(".repeat(k), ")".repeat(k)));
            programs.push(format!("x = {}y{}\n", "[".repeat(k), "]".repeat(k)));
            programs.push(format!("x = {}y{}\n", "{".repeat(k), "}".repeat(k)));
            programs.push(format!("x = {}y{}\n", "f(".repeat(k), ")".repeat(k)));
            programs.push(format!("x = {}y\n", "-".repeat(k)));
            programs.push(format!("x = {}y\n", "not ".repeat(k)));
            programs.push(format!("x = {}y\n", "a if b else ".repeat(k)));
            programs.push(format!("x = {}y\n", "lambda a: ".repeat(k)));
            programs.push(format!("x = {}y{}\n", "d[".repeat(k), "]".repeat(k)));
            programs.push(format!("x = f'{{{}y{}}}'\n", "(".repeat(k), ")".repeat(k)));
            programs.push(
                (0..k)
                    .map(|d| format!("{}if x:\n", " ".repeat(d)))
                    .collect::<String>()
                    + &" ".repeat(k)
                    + "pass\n",
            );
            programs.push(
                (0..k)
                    .map(|d| format!("{}for x in y: \n", " ".repeat(d)))
                    .collect::<String>()
                    + &" ".repeat(k)
                    + "f(d[(lambda a: -a)(x)])\n",
            );
        }
        let handle = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                let mut fast = 0;
                for p in &programs {
                    // Only the fast parser here: the reference parser needs a
                    // bigger stack for these.
                    if let Some(body) = parse(p) {
                        fast += 1;
                        super::super::walk::dismantle(body);
                    }
                }
                fast
            })
            .expect("spawn");
        let fast = handle.join().expect("no stack overflow");
        assert!(fast > 0);
    }

    /// Random programs from the fast subset's grammar (with random spacing,
    /// comments, line breaks inside brackets, trailing commas): nearly all
    /// take the fast path, and every tree must equal rustpython-parser's.
    #[test]
    fn generated_programs_agree() {
        let mut g = Gen(0x2545_f491_4f6c_dd1d);
        let (mut n, mut fast) = (0, 0);
        for _ in 0..3000 {
            let mut src = String::new();
            g.block(&mut src, 0, 0);
            n += 1;
            let ok = agree(&src);
            fast += usize::from(ok);
            if !ok && std::env::var_os("SHOW_DECLINED").is_some() {
                let valid = reference(&src).is_some();
                eprintln!("declined (valid: {valid}): {src:?}");
            }
        }
        eprintln!("generated: fast path took {fast} of {n}");
        assert!(fast * 10 > n * 8, "{fast} of {n}");
    }

    struct Gen(u64);

    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        fn pick<'a>(&mut self, v: &[&'a str]) -> &'a str {
            v[self.below(v.len() as u64) as usize]
        }
        fn sp(&mut self, out: &mut String, nested: bool) {
            match self.below(12) {
                0 => out.push_str("  "),
                1 if nested => out.push_str("\n   "),
                2 if nested => out.push_str(" # c\n "),
                3..=6 => out.push(' '),
                _ => {}
            }
        }
        fn name(&mut self, out: &mut String) {
            let n = self.pick(&[
                "a", "b", "xs", "item", "n1", "key", "f", "d", "len", "print",
            ]);
            out.push_str(n);
        }
        fn string(&mut self, out: &mut String, depth: u32) {
            let q = if self.below(2) == 0 { '"' } else { '\'' };
            let f = self.below(3) == 0 && depth < 3;
            if f {
                out.push('f');
            }
            out.push(q);
            for _ in 0..self.below(4) {
                match self.below(9) {
                    0 => out.push_str("\\n"),
                    1 => out.push_str("\\t"),
                    2 if q == '"' => out.push_str("it's"),
                    3 => out.push('é'),
                    4 if f => out.push_str("{{}}"),
                    5 | 6 if f => {
                        out.push('{');
                        self.sp(out, false);
                        out.push_str(self.pick(&[
                            "x",
                            "len(xs)",
                            "d[k]",
                            "a + 1",
                            "xs[1:]",
                            "f(a, b)",
                            "x.strip()",
                            "-a",
                            "a if b else c",
                            "not a",
                            "[x for x in xs]",
                            "(a, b)[0]",
                            "{1, 2}",
                            "(x for x in xs)",
                            "a < b",
                            "g(*a, **k)",
                            "xs[::2]",
                        ]));
                        self.sp(out, false);
                        out.push_str(self.pick(&["", "", "!r", "!s", "!a"]));
                        out.push_str(self.pick(&["", "", ":>10", ":.2f", ":", ":%H:%M"]));
                        out.push('}');
                    }
                    _ => out.push_str(self.pick(&["x", " ", "abc", ":", "#", "="])),
                }
            }
            out.push(q);
        }
        fn atom(&mut self, out: &mut String, depth: u32, nested: bool) {
            let choice = if depth > 4 {
                self.below(4)
            } else {
                self.below(16)
            };
            match choice {
                0 | 1 => self.name(out),
                2 => out.push_str(self.pick(&["0", "1", "42", "10.5", "0.25", "True", "None"])),
                3 => {
                    self.string(out, depth);
                    if self.below(4) == 0 {
                        out.push(' ');
                        self.sp(out, nested);
                        self.string(out, depth);
                    }
                }
                4 | 5 => {
                    // Call with positional, starred, keyword and ** arguments.
                    self.name(out);
                    out.push('(');
                    let k = self.below(4);
                    for i in 0..k {
                        self.sp(out, true);
                        match self.below(6) {
                            0 if i == 0 && k == 1 => {
                                self.expr(out, depth + 1, true);
                                out.push_str(" for a in b");
                            }
                            1 => {
                                out.push('*');
                                self.expr(out, depth + 1, true);
                            }
                            _ => self.expr(out, depth + 1, true),
                        }
                        out.push(',');
                    }
                    if self.below(2) == 0 {
                        out.push_str(self.pick(&[
                            " key=lambda kv: kv[1]",
                            " reverse=True",
                            " sep=''",
                        ]));
                    } else if k > 0 && self.below(2) == 0 {
                        out.pop();
                    }
                    out.push(')');
                }
                6 => {
                    out.push('[');
                    let k = self.below(4);
                    for i in 0..k {
                        self.sp(out, true);
                        self.expr(out, depth + 1, true);
                        if i + 1 < k || self.below(2) == 0 {
                            out.push(',');
                        }
                    }
                    out.push(']');
                }
                7 => {
                    out.push('[');
                    self.expr(out, depth + 1, true);
                    out.push_str(self.pick(&[
                        " for x in xs",
                        " for i, x in enumerate(xs)",
                        " for a, *b in c",
                    ]));
                    if self.below(2) == 0 {
                        out.push_str(" if ");
                        self.expr(out, depth + 1, true);
                    }
                    out.push(']');
                }
                8 => {
                    out.push('{');
                    let k = self.below(3);
                    for _ in 0..k {
                        self.sp(out, true);
                        if self.below(4) == 0 {
                            out.push_str("**");
                            self.name(out);
                        } else {
                            self.string(out, depth + 1);
                            out.push_str(": ");
                            self.expr(out, depth + 1, true);
                        }
                        out.push(',');
                    }
                    out.push('}');
                }
                9 => {
                    out.push_str(self.pick(&[
                        "{k: v for k, v in d.items()}",
                        "{x for x in xs if x}",
                        "{1, 2}",
                        "(x for x in xs)",
                    ]));
                }
                10 => {
                    out.push('(');
                    self.expr(out, depth + 1, true);
                    out.push_str(self.pick(&[")", ",)", ", b)", ", *b)"]));
                }
                11 | 12 => {
                    self.name(out);
                    match self.below(4) {
                        0 => out.push_str(".strip()"),
                        1 => {
                            out.push('[');
                            self.expr(out, depth + 1, true);
                            out.push(']');
                        }
                        2 => out.push_str(
                            self.pick(&["[1:]", "[:2]", "[::-1]", "[a:b:c]", "[1, 2]", "[a:]"]),
                        ),
                        _ => out.push_str(".get(key, 0)"),
                    }
                }
                _ => out.push_str("()"),
            }
        }
        /// An expression that may follow a binary operator (no lambda,
        /// no conditional expression).
        fn operand(&mut self, out: &mut String, depth: u32, nested: bool) {
            if self.below(3) == 0 {
                out.push_str(self.pick(&["-", "+", "- "]));
            }
            self.atom(out, depth, nested);
            if self.below(3) == 0 {
                out.push_str(self.pick(&[" + ", " * ", " < ", " and ", " or ", " % "]));
                self.operand(out, depth + 1, nested);
            }
        }
        fn expr(&mut self, out: &mut String, depth: u32, nested: bool) {
            if depth > 6 {
                self.name(out);
                return;
            }
            match self.below(10) {
                0 => {
                    out.push_str(self.pick(&["not ", "-", "+", "- "]));
                    self.atom(out, depth + 1, nested);
                }
                1 | 2 => {
                    self.atom(out, depth + 1, nested);
                    out.push(' ');
                    self.sp(out, nested);
                    out.push_str(self.pick(&[
                        "+", "-", "*", "/", "//", "%", "==", "!=", "<", "<=", ">", ">=", "in",
                        "not in", "is", "is not", "and", "or",
                    ]));
                    out.push(' ');
                    self.operand(out, depth + 1, nested);
                }
                3 => {
                    self.atom(out, depth + 1, nested);
                    out.push_str(" if ");
                    self.atom(out, depth + 1, nested);
                    out.push_str(" else ");
                    self.expr(out, depth + 1, nested);
                }
                4 => {
                    out.push_str("lambda v: ");
                    self.expr(out, depth + 1, nested);
                }
                _ => self.atom(out, depth, nested),
            }
        }
        fn block(&mut self, out: &mut String, indent: usize, depth: u32) {
            let k = 1 + self.below(4);
            for i in 0..k {
                let pad = " ".repeat(indent);
                out.push_str(&pad);
                // The first statement of a block is a real one.
                let choice = match self.below(if depth < 2 { 14 } else { 10 }) {
                    4 | 5 if i == 0 => 6,
                    c => c,
                };
                match choice {
                    0 | 1 => {
                        self.name(out);
                        out.push_str(
                            self.pick(&[" = ", " += ", " -= ", " *= ", " //= ", " = b = "]),
                        );
                        self.expr(out, 0, false);
                    }
                    2 => {
                        out.push_str(self.pick(&[
                            "a, b = ",
                            "a, *b = ",
                            "[a, b] = ",
                            "d[k] = ",
                            "d[k] += ",
                            "x, = ",
                        ]));
                        self.expr(out, 0, false);
                        if self.below(2) == 0 {
                            out.push_str(", 1");
                        }
                    }
                    3 => out.push_str(self.pick(&["pass", "break", "continue"])),
                    4 => out.push_str("# a comment"),
                    5 => {}
                    10 | 11 => {
                        out.push_str("if ");
                        self.expr(out, 0, false);
                        out.push_str(":\n");
                        self.block(out, indent + 4, depth + 1);
                        while self.below(3) == 0 {
                            out.push_str(&pad);
                            out.push_str("elif ");
                            self.expr(out, 0, false);
                            out.push_str(":\n");
                            self.block(out, indent + 4, depth + 1);
                        }
                        if self.below(2) == 0 {
                            out.push_str(&pad);
                            out.push_str("else:\n");
                            self.block(out, indent + 4, depth + 1);
                        }
                        continue;
                    }
                    12 | 13 => {
                        out.push_str(self.pick(&["for x in ", "for i, x in ", "for x, in "]));
                        self.expr(out, 0, false);
                        if self.below(3) == 0 {
                            out.push_str(": pass\n");
                        } else {
                            out.push_str(":\n");
                            self.block(out, indent + 4, depth + 1);
                        }
                        if self.below(3) == 0 {
                            out.push_str(&pad);
                            out.push_str("else:\n");
                            self.block(out, indent + 4, depth + 1);
                        }
                        continue;
                    }
                    _ => self.expr(out, 0, false),
                }
                if self.below(5) == 0 {
                    out.push_str("  # trailing");
                }
                out.push('\n');
            }
        }
    }
}
