//! A cheap, linear pre-scan that bounds nesting before the parser runs.
//!
//! Why: the parser and every later tree walk must never see a tree deep
//! enough to exhaust the stack (5,000 nested parentheses, `not not not ...`,
//! `-----x`, `x+x+x+...` chains, deep `a if b else ...` chains, deep
//! indentation). The scan tokenises just enough of Python (strings, comments,
//! brackets, operators, line structure) to compute a conservative *upper
//! bound* on the syntax tree's depth, and stops at the first point where the
//! bound exceeds the limit.
//!
//! The bound, per logical line: indentation level, plus for every open
//! bracket one level plus the "chain" tokens of the bracket's current
//! comma-separated segment (binary and unary operators, `.`, postfix calls
//! and subscripts, `if`, `not`, `lambda`), plus the deepest bracket closed in
//! that segment. Operators after a nested bracket count too (left-deep
//! chains put the first operand deepest), which the running maximum covers
//! because every quantity only grows within a segment. `lambda` counts are
//! never reset by commas (`lambda a, b=lambda c, d=...` nests across
//! commas). `and`/`or`/comparisons are flat in the tree and are not counted.
//! Each `elif` nests one level deeper than the branch before it (the parser
//! makes it an `if` inside the previous one's `else`), so the lines of an
//! `if` statement at some indentation also count the `elif`s written so far
//! in its chain, and those of every enclosing chain.

/// Where and why the scan stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooDeep {
    /// Byte offset of the token that crossed the limit.
    pub offset: usize,
    /// What nests: `"brackets/operators"` or `"indentation"`.
    pub what: &'static str,
}

#[derive(Default, Clone, Copy)]
struct Frame {
    /// Chain tokens in the current segment.
    count: usize,
    /// `lambda`s anywhere in this bracket.
    lambdas: usize,
    /// Deepest bracket closed in the current segment (relative depth).
    inner: usize,
    /// Best (largest) finished segment value.
    best: usize,
    /// Byte offset and character of the opening bracket.
    open_at: usize,
    ch: u8,
}

/// A bracket error found by the scan, reported (in CPython's words) when
/// the parser fails, because it pinpoints the cause better than the parser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BracketProblem {
    /// An opening bracket never closed.
    NeverClosed {
        /// Offset of the bracket.
        offset: usize,
        /// The bracket.
        ch: char,
    },
    /// A closing bracket of the wrong kind.
    Mismatch {
        /// Offset of the closing bracket.
        offset: usize,
        /// The closing bracket.
        close: char,
        /// The opening bracket it meets.
        open: char,
        /// Offset of that opening bracket.
        open_offset: usize,
    },
    /// A backslash in an f-string replacement field's expression (3.11
    /// rejects it; 3.12 allows it). Only reported when the parser accepts
    /// the program.
    FstringBackslash {
        /// Offset of the backslash.
        offset: usize,
    },
    /// A string literal without its closing quote(s).
    Unterminated {
        /// Offset of the literal (prefix included).
        offset: usize,
        /// Triple-quoted?
        triple: bool,
        /// Where the scan gave up (end of line, or end of input).
        detected_at: usize,
    },
    /// A closing bracket with nothing open.
    Unmatched {
        /// Offset of the bracket.
        offset: usize,
        /// The bracket.
        ch: char,
    },
}

impl BracketProblem {
    /// Byte offset to report.
    pub fn offset(&self) -> usize {
        match self {
            BracketProblem::NeverClosed { offset, .. }
            | BracketProblem::Mismatch { offset, .. }
            | BracketProblem::Unmatched { offset, .. }
            | BracketProblem::FstringBackslash { offset }
            | BracketProblem::Unterminated { offset, .. } => *offset,
        }
    }

    /// CPython's message (`open_line` is the 1-based line of the opening
    /// bracket of a mismatch, `line` the line of the error).
    pub fn message(&self, line_of: impl Fn(usize) -> u32) -> String {
        match self {
            BracketProblem::NeverClosed { ch, .. } => format!("'{ch}' was never closed"),
            BracketProblem::Mismatch {
                offset,
                close,
                open,
                open_offset,
            } => {
                let (l1, l2) = (line_of(*open_offset), line_of(*offset));
                if l1 == l2 {
                    format!(
                        "closing parenthesis '{close}' does not match opening parenthesis '{open}'"
                    )
                } else {
                    format!("closing parenthesis '{close}' does not match opening parenthesis '{open}' on line {l1}")
                }
            }
            BracketProblem::Unmatched { ch, .. } => format!("unmatched '{ch}'"),
            BracketProblem::FstringBackslash { .. } => {
                "f-string expression part cannot include a backslash".to_string()
            }
            BracketProblem::Unterminated {
                triple,
                detected_at,
                ..
            } => format!(
                "unterminated {}string literal (detected at line {})",
                if *triple { "triple-quoted " } else { "" },
                line_of(*detected_at)
            ),
        }
    }
}

impl Frame {
    fn seg(&self) -> usize {
        self.count + self.lambdas + self.inner
    }
}

struct Scanner<'a> {
    src: &'a [u8],
    limit: usize,
    frames: Vec<Frame>,
    /// Sum over open frames below the top of (their segment value + 1).
    below: usize,
    indent_stack: Vec<usize>,
    /// Per indentation level (0 = the top level, then one per entry of
    /// `indent_stack`): the `elif`s of the `if` chain open at that level.
    elifs: Vec<usize>,
    /// The sum of `elifs`.
    elif_total: usize,
    /// Was the previous significant token an operand end (name, number,
    /// string, closing bracket)? Then `(`/`[` is a postfix call/subscript.
    after_operand: bool,
    /// The first bracket problem seen.
    problem: Option<BracketProblem>,
}

/// Scan `src`; `Err` at the first point where the nesting bound exceeds
/// `limit`, else the first bracket problem seen, if any.
pub fn scan(src: &str, limit: usize) -> Result<Option<BracketProblem>, TooDeep> {
    let mut s = Scanner {
        src: src.as_bytes(),
        limit,
        frames: vec![Frame::default()],
        below: 0,
        indent_stack: Vec::new(),
        elifs: vec![0],
        elif_total: 0,
        after_operand: false,
        problem: None,
    };
    s.run()?;
    // CPython names the innermost bracket still open at the end
    // (`tok->parenstack[tok->level - 1]`).
    if let Some(f) = s.frames.get(1..).and_then(|f| f.last()) {
        if no_problem_but_a_backslash(&s.problem) {
            s.problem = Some(BracketProblem::NeverClosed {
                offset: f.open_at,
                ch: char::from(f.ch),
            });
        }
    }
    Ok(s.problem)
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b >= 0x80
}

fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

impl Scanner<'_> {
    fn depth(&self) -> usize {
        let top = self.frames.last().map_or(0, |f| f.seg() + 1);
        self.indent_stack.len() + self.elif_total + self.below + top
    }

    fn check(&self, offset: usize) -> Result<(), TooDeep> {
        if self.depth() > self.limit {
            return Err(TooDeep {
                offset,
                what: "brackets/operators",
            });
        }
        Ok(())
    }

    fn top(&mut self) -> &mut Frame {
        if self.frames.is_empty() {
            self.frames.push(Frame::default());
        }
        let last = self.frames.len() - 1;
        &mut self.frames[last]
    }

    fn chain(&mut self, offset: usize) -> Result<(), TooDeep> {
        self.top().count += 1;
        self.check(offset)
    }

    fn end_segment(&mut self) {
        let f = self.top();
        f.best = f.best.max(f.seg());
        f.count = 0;
        f.inner = 0;
    }

    fn open(&mut self, offset: usize, ch: u8) -> Result<(), TooDeep> {
        if self.after_operand {
            self.top().count += 1;
        }
        let parent = self.frames.last().map_or(0, |f| f.seg() + 1);
        self.below += parent;
        self.frames.push(Frame {
            open_at: offset,
            ch,
            ..Frame::default()
        });
        self.after_operand = false;
        self.check(offset)
    }

    fn close(&mut self, offset: usize, ch: u8) {
        if self.frames.len() <= 1 {
            // Unbalanced: the parser will report it; remember it for a better message.
            if no_problem_but_a_backslash(&self.problem) {
                self.problem = Some(BracketProblem::Unmatched {
                    offset,
                    ch: char::from(ch),
                });
            }
            self.after_operand = true;
            return;
        }
        if let Some(top) = self.frames.last() {
            let want = match top.ch {
                b'(' => b')',
                b'[' => b']',
                _ => b'}',
            };
            if want != ch && no_problem_but_a_backslash(&self.problem) {
                self.problem = Some(BracketProblem::Mismatch {
                    offset,
                    close: char::from(ch),
                    open: char::from(top.ch),
                    open_offset: top.open_at,
                });
            }
        }
        let Some(done) = self.frames.pop() else {
            return;
        };
        let rel = done.best.max(done.seg()) + 1;
        let parent_val = self.frames.last().map_or(0, |f| f.seg() + 1);
        self.below = self.below.saturating_sub(parent_val);
        let f = self.top();
        f.inner = f.inner.max(rel);
        self.after_operand = true;
    }

    /// Start of a logical line at byte `i`: measure indentation, return the
    /// index of the first significant byte (or of the line end for blank lines).
    fn line_start(&mut self, mut i: usize) -> Result<usize, TooDeep> {
        let start = i;
        let mut width = 0usize;
        while i < self.src.len() {
            match self.src[i] {
                b' ' => width += 1,
                b'\t' => width = (width / 8 + 1) * 8,
                b'\x0c' => width = 0,
                _ => break,
            }
            i += 1;
        }
        // Blank and comment-only lines do not change indentation.
        if i >= self.src.len() || matches!(self.src[i], b'\n' | b'\r' | b'#') {
            return Ok(i);
        }
        while self.indent_stack.last().is_some_and(|&w| w > width) {
            self.indent_stack.pop();
        }
        let current = self.indent_stack.last().copied().unwrap_or(0);
        if width > current {
            self.indent_stack.push(width);
            if self.indent_stack.len() > self.limit {
                return Err(TooDeep {
                    offset: start,
                    what: "indentation",
                });
            }
        }
        self.elif_chain(i, start)?;
        Ok(i)
    }

    /// Account for the statement starting at `i` (its line at `start`) in
    /// the `elif` chain of its indentation level: an `elif` lengthens it,
    /// an `else` keeps it, anything else starts a new statement.
    fn elif_chain(&mut self, i: usize, start: usize) -> Result<(), TooDeep> {
        let level = self.indent_stack.len();
        // Chains of levels left behind (dedented past) are closed.
        for closed in self
            .elifs
            .drain(level.saturating_add(1).min(self.elifs.len())..)
        {
            self.elif_total = self.elif_total.saturating_sub(closed);
        }
        self.elifs.resize(level + 1, 0);
        // The statement's first token: line continuations (`\` at the end
        // of a physical line) and the blanks after them are skipped, or a
        // `\` line before each `elif` would hide it.
        let mut i = i;
        loop {
            let after = match (self.src.get(i), self.src.get(i + 1), self.src.get(i + 2)) {
                (Some(b'\\'), Some(b'\n'), _) => i + 2,
                (Some(b'\\'), Some(b'\r'), Some(b'\n')) => i + 3,
                (Some(b'\\'), Some(b'\r'), _) => i + 2,
                _ => break,
            };
            i = after;
            while self
                .src
                .get(i)
                .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\x0c'))
            {
                i += 1;
            }
        }
        let word_is = |w: &[u8]| {
            self.src.get(i..i + w.len()) == Some(w)
                && !self.src.get(i + w.len()).is_some_and(|b| is_ident_char(*b))
        };
        let (elif, keeps) = (word_is(b"elif"), word_is(b"else"));
        let Some(chain) = self.elifs.get_mut(level) else {
            return Ok(());
        };
        if elif {
            *chain += 1;
            self.elif_total += 1;
            if self.depth() > self.limit {
                return Err(TooDeep {
                    offset: start,
                    what: "elif chain",
                });
            }
        } else if !keeps {
            self.elif_total = self.elif_total.saturating_sub(*chain);
            *chain = 0;
        }
        Ok(())
    }

    fn run(&mut self) -> Result<(), TooDeep> {
        let src = self.src;
        let n = src.len();
        let mut i = self.line_start(0)?;
        while i < n {
            let b = src[i];
            match b {
                b'\n' | b'\r' => {
                    i += 1;
                    if self.frames.len() <= 1 {
                        // End of a logical line.
                        self.frames.clear();
                        self.frames.push(Frame::default());
                        self.below = 0;
                        self.after_operand = false;
                        if b == b'\r' && i < n && src[i] == b'\n' {
                            i += 1;
                        }
                        i = self.line_start(i)?;
                    }
                }
                b'#' => {
                    while i < n && src[i] != b'\n' && src[i] != b'\r' {
                        i += 1;
                    }
                }
                b'\\' => {
                    // Line continuation (or a stray backslash): skip it and the newline.
                    i += 1;
                    if i < n && src[i] == b'\r' {
                        i += 1;
                    }
                    if i < n && src[i] == b'\n' {
                        i += 1;
                    }
                }
                b'"' | b'\'' => {
                    i = self.string(i, false, i)?;
                    self.after_operand = true;
                }
                b'(' | b'[' | b'{' => {
                    self.open(i, b)?;
                    i += 1;
                }
                b')' | b']' | b'}' => {
                    self.close(i, b);
                    i += 1;
                }
                b',' => {
                    self.end_segment();
                    self.after_operand = false;
                    i += 1;
                }
                b'0'..=b'9' => {
                    while i < n && (is_ident_char(src[i]) || src[i] == b'.') {
                        i += 1;
                    }
                    self.after_operand = true;
                }
                b'.' => {
                    if i + 1 < n && src[i + 1].is_ascii_digit() {
                        while i < n && (is_ident_char(src[i]) || src[i] == b'.') {
                            i += 1;
                        }
                        self.after_operand = true;
                    } else {
                        self.chain(i)?;
                        self.after_operand = false;
                        i += 1;
                    }
                }
                _ if is_ident_start(b) => {
                    let start = i;
                    while i < n && is_ident_char(src[i]) {
                        i += 1;
                    }
                    let word = &src[start..i];
                    if i < n && (src[i] == b'"' || src[i] == b'\'') && is_string_prefix(word) {
                        let fstring = word.iter().any(|c| *c == b'f' || *c == b'F');
                        i = self.string(i, fstring, start)?;
                        self.after_operand = true;
                        continue;
                    }
                    match word {
                        b"lambda" => {
                            self.top().lambdas += 1;
                            self.check(start)?;
                            self.after_operand = false;
                        }
                        b"not" | b"if" | b"await" => {
                            self.chain(start)?;
                            self.after_operand = false;
                        }
                        b"and" | b"or" | b"in" | b"is" | b"else" | b"for" | b"yield" => {
                            self.after_operand = false;
                        }
                        _ => self.after_operand = true,
                    }
                }
                b'+' | b'-' | b'*' | b'/' | b'%' | b'@' | b'&' | b'|' | b'^' | b'~' | b'<'
                | b'>' => {
                    // Comparisons are flat in the tree but counting them
                    // only over-estimates; shifts are operators.
                    let cmp = matches!(b, b'<' | b'>') && !(i + 1 < n && src[i + 1] == b);
                    i += 1;
                    // `**`, `//`, `<<`, `>>` are one operator.
                    if i < n && src[i] == b && matches!(b, b'*' | b'/' | b'<' | b'>') {
                        i += 1;
                    }
                    if !cmp {
                        self.chain(i - 1)?;
                    }
                    self.after_operand = false;
                }
                _ => {
                    // `=`, `:`, `;`, `!`, whitespace and anything else.
                    if b == b';' && self.frames.len() <= 1 {
                        self.end_segment();
                        self.frames.clear();
                        self.frames.push(Frame::default());
                        self.below = 0;
                    }
                    if !matches!(b, b' ' | b'\t' | b'\x0c') {
                        self.after_operand = false;
                    }
                    i += 1;
                }
            }
        }
        Ok(())
    }

    /// Skip a string literal whose opening quote is at `i`; return the index
    /// after it. For f-strings, bound the nesting inside replacement fields.
    fn string(
        &mut self,
        mut i: usize,
        fstring: bool,
        prefix_start: usize,
    ) -> Result<usize, TooDeep> {
        let src = self.src;
        let n = src.len();
        let q = src[i];
        let mut closed = false;
        let triple = i + 2 < n && src[i + 1] == q && src[i + 2] == q;
        let start = i;
        i += if triple { 3 } else { 1 };
        // f-string replacement-field accounting.
        let mut braces = 0usize;
        let mut local = 0usize;
        let mut local_max = 0usize;
        // Past the `:` that ends the current top-level field's expression:
        // the format spec, where backslashes are allowed. As in 3.11's
        // fstring_find_expr, only a `:` outside the expression's own
        // brackets and string literals ends it (`{d['a:b']}`, `{ {1: 2} }`,
        // `{x[1:]}` stay in the expression).
        let mut in_spec = false;
        // Brackets opened inside the current field's expression.
        let mut expr_depth = 0usize;
        // The quote of a string literal inside the field's expression.
        let mut inner_quote: Option<u8> = None;
        // In a field nested in a format spec (`{x:{w}}`): the brace level of
        // the field whose spec it is in (its end returns to that spec).
        let mut spec_level = 0usize;
        while i < n {
            let c = src[i];
            if c == b'\\' {
                if fstring && braces > 0 && !in_spec && self.problem.is_none() {
                    self.problem = Some(BracketProblem::FstringBackslash { offset: i });
                }
                // A backslash and a CRLF continue the string as one and an
                // LF do (CPython's tokenizer reads CRLF as LF).
                i += if src.get(i + 1) == Some(&b'\r') && src.get(i + 2) == Some(&b'\n') {
                    3
                } else {
                    2
                };
                continue;
            }
            if c == q {
                if !triple {
                    i += 1;
                    closed = true;
                    break;
                }
                if i + 2 < n && src[i + 1] == q && src[i + 2] == q {
                    i += 3;
                    closed = true;
                    break;
                }
            }
            if !triple && (c == b'\n' || c == b'\r') {
                // Unterminated: the parser reports it.
                break;
            }
            if fstring && braces > 0 && !in_spec {
                // A string literal in the expression: only its backslashes
                // (flagged above) and its closing quote matter.
                if let Some(iq) = inner_quote {
                    if c == iq {
                        inner_quote = None;
                    }
                    i += 1;
                    continue;
                }
                if c == b'\'' || c == b'"' {
                    inner_quote = Some(c);
                    i += 1;
                    continue;
                }
                match c {
                    b'(' | b'[' | b'{' => expr_depth += 1,
                    b')' | b']' => expr_depth = expr_depth.saturating_sub(1),
                    b'}' if expr_depth > 0 => {
                        // The end of a display in the expression, not of the field.
                        expr_depth -= 1;
                        braces = braces.saturating_sub(1);
                        local = local.saturating_sub(1);
                        i += 1;
                        continue;
                    }
                    _ => {}
                }
            }
            if fstring {
                match c {
                    b'{' => {
                        if braces == 0 && i + 1 < n && src[i + 1] == b'{' {
                            i += 2;
                            continue;
                        }
                        if in_spec {
                            // A field nested in the format spec: an expression again.
                            spec_level = braces;
                            in_spec = false;
                            expr_depth = 0;
                        }
                        braces += 1;
                        local += 1;
                    }
                    b'}' if braces > 0 => {
                        braces -= 1;
                        local = local.saturating_sub(1);
                        if braces == 0 {
                            // A replacement field ended: the next one starts afresh.
                            in_spec = false;
                            expr_depth = 0;
                            spec_level = 0;
                            local = 0;
                            local_max = 0;
                        } else if braces == spec_level {
                            // A nested field ended: back in its outer field's spec.
                            in_spec = true;
                            expr_depth = 0;
                            spec_level = 0;
                        }
                    }
                    b':' if braces > 0 && (in_spec || expr_depth == 0) => in_spec = true,
                    b'(' | b'[' if braces > 0 => local += 1,
                    b')' | b']' if braces > 0 => local = local.saturating_sub(1),
                    b'+' | b'-' | b'*' | b'/' | b'%' | b'~' | b'.' if braces > 0 => local_max += 1,
                    _ => {}
                }
                if braces > 0 && (c.is_ascii_alphabetic()) {
                    // `not`, `if`, `lambda` inside a field: count keyword starts cheaply.
                    let rest = &src[i..];
                    let boundary = i == 0 || !is_ident_char(src[i - 1]);
                    if boundary
                        && (rest.starts_with(b"not ")
                            || rest.starts_with(b"if ")
                            || rest.starts_with(b"lambda"))
                    {
                        local_max += 1;
                    }
                }
                local_max = local_max.max(local);
                if self.depth() + local_max > self.limit {
                    return Err(TooDeep {
                        offset: start,
                        what: "brackets/operators",
                    });
                }
            }
            i += 1;
        }
        if !closed && no_problem_but_a_backslash(&self.problem) {
            self.problem = Some(BracketProblem::Unterminated {
                offset: prefix_start,
                triple,
                // One that runs to the end (triple-quoted, or continued
                // by a backslash): CPython counts the line of the text's
                // last character (a final newline starts no line).
                detected_at: if i >= n {
                    n.saturating_sub(1)
                } else {
                    i.min(n)
                },
            });
        }
        Ok(i.min(n))
    }
}

/// No problem recorded yet, or only an f-string backslash (which a bracket
/// or string problem replaces: those are what make the parser fail).
fn no_problem_but_a_backslash(p: &Option<BracketProblem>) -> bool {
    matches!(p, None | Some(BracketProblem::FstringBackslash { .. }))
}

fn is_string_prefix(word: &[u8]) -> bool {
    if word.len() > 2 {
        return false;
    }
    let lower: Vec<u8> = word.iter().map(|c| c.to_ascii_lowercase()).collect();
    matches!(
        lower.as_slice(),
        b"r" | b"u" | b"b" | b"f" | b"br" | b"rb" | b"fr" | b"rf"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fstring_backslash_in_expression_only() {
        for bad in [
            "x = f'{\"a\\n\"!r}'\n",
            // A `:` inside the expression's brackets or string literals
            // does not start the format spec.
            "x = f'{f(1, {2: 3}, c=\"a\\n\"):+}'\n",
            "x = f'{d[1:] + [\"\\n\"]}'\n",
            "x = f'{\"a:b\" + \"\\n\"}'\n",
            "x = f'''{\"}\" + \"\\n\"}'''\n",
            // A field nested in the format spec is an expression too.
            "x = f'{x:{\"\\n\"}}'\n",
            "x = f'{x:>{len(\"\\n\")}}'\n",
            "x = f'{x:{w}{\"\\t\"}}'\n",
        ] {
            assert!(
                matches!(
                    scan(bad, 100),
                    Ok(Some(BracketProblem::FstringBackslash { .. }))
                ),
                "{bad}"
            );
        }
        for ok in [
            "f'{x:\\x3e5}\\n'\n",
            "rf'\\d{x}\\w'\n",
            "f'{d[1:2]}\\t{y!r:>{3}}'\n",
            "f'{d[\"a:b\"]:>5}\\n{ {1: 2}[1]:\\x3e3}'\n",
            "f'{x:{w}\\n}{x:\\n{w}}{x:{ {1: 2}[1] }\\t}{x:{w:\\n}}'\n",
        ] {
            assert_eq!(scan(ok, 100), Ok(None), "{ok}");
        }
    }

    /// An `elif` chain nests one level per `elif` in the parsed tree (each
    /// is an `if` in the previous one's `else`): 20,000 of them in 260 KB
    /// overflowed the supervisor's stack (code intelligence indexing a
    /// program-written file; the MCP `validate` tool on a 64 KiB program).
    #[test]
    fn elif_chains_count_as_nesting() {
        let chain = |n: usize, indent: &str| {
            let mut s = format!("{indent}if a:\n{indent}    x = 1\n");
            for _ in 0..n {
                s.push_str(&format!("{indent}elif a:\n{indent}    x = 1\n"));
            }
            s
        };
        let deep = scan(&chain(20_000, ""), 100).unwrap_err();
        assert_eq!(deep.what, "elif chain");
        assert!(scan(&chain(50, ""), 100).is_ok());
        // Nested chains add up, `else` keeps a chain and any other statement
        // at that level ends it.
        let nested = format!(
            "if a:\n    x = 1\n{}",
            chain(60, "    ").replace("    if", "elif b:\n    if")
        );
        assert!(scan(&nested, 100).is_ok());
        let two = format!("{}else:\n{}", chain(60, ""), chain(60, "    "));
        assert_eq!(scan(&two, 100).unwrap_err().what, "elif chain");
        let apart = format!("{}x = 2\n{}", chain(60, ""), chain(60, ""));
        assert!(scan(&apart, 100).is_ok());
        let after_dedent = format!("def f():\n{}x = 2\n{}", chain(60, "    "), chain(60, ""));
        assert!(scan(&after_dedent, 100).is_ok());
        // A line continuation before each `elif` does not hide it.
        let hidden = chain(20_000, "").replace("elif", "\\\n  elif");
        assert_eq!(scan(&hidden, 100).unwrap_err().what, "elif chain");
        let hidden = chain(20_000, "").replace("elif", "\\\r\n\\\n elif");
        assert_eq!(scan(&hidden, 100).unwrap_err().what, "elif chain");
        // `elif_x = 1` and `elsewhere()` are not keywords.
        let names = format!("if a:\n    x = 1\n{}", "elif_x = 1\n".repeat(500));
        assert!(scan(&names, 100).is_ok());
    }

    #[test]
    fn ordinary_programs_pass() {
        let p = "files = find_files('**/*.py')\nfor f in files:\n    if f.endswith('.py'):\n        print(f\"{f}: {len(read_file(f).splitlines())}\")\n";
        assert_eq!(scan(p, 100), Ok(None));
        let wide = format!(
            "x = [{}]\n",
            (0..5000)
                .map(|i| format!("{i} + 1"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        assert_eq!(scan(&wide, 100), Ok(None));
    }

    #[test]
    fn bombs_are_caught() {
        let parens = format!("{}1{}", "(".repeat(5000), ")".repeat(5000));
        assert!(scan(&parens, 100).is_err());
        assert!(scan(&format!("x = {}1", "-".repeat(5000)), 100).is_err());
        assert!(scan(&format!("x = {}1", "not ".repeat(500)), 100).is_err());
        assert!(scan(&format!("x = 1{}", " + 1".repeat(500)), 100).is_err());
        assert!(scan(&format!("x = 1{}", " if a else 1".repeat(500)), 100).is_err());
        assert!(scan(&format!("x = {}1", "lambda: ".repeat(500)), 100).is_err());
        assert!(scan(
            &format!("x = f\"{{{}1{}}}\"", "(".repeat(500), ")".repeat(500)),
            100
        )
        .is_err());
        let mut deep = String::new();
        for d in 0..200 {
            deep.push_str(&" ".repeat(d));
            deep.push_str("if x:\n");
        }
        assert!(scan(&deep, 100).is_err());
        let flat: String = (0..200)
            .map(|d| format!("{}x = 1\n", " ".repeat(d % 4)))
            .collect();
        assert!(scan(&flat, 100).is_ok());
        assert!(matches!(
            scan("x = (1,\n2\n", 100),
            Ok(Some(BracketProblem::NeverClosed { offset: 4, ch: '(' }))
        ));
        assert!(matches!(
            scan("x = [1)", 100),
            Ok(Some(BracketProblem::Mismatch { offset: 6, .. }))
        ));
        assert!(matches!(
            scan("x = 1)", 100),
            Ok(Some(BracketProblem::Unmatched { offset: 5, ch: ')' }))
        ));
    }
}
