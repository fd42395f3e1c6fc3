//! Answer cleaning: turn a model's reply into the program text.
//!
//! Small models wrap code in markdown fences, prefix it with "Here is the
//! code:", append explanations, or emit chat-template debris. The cleaner
//! takes the first fenced block when there is one; otherwise it keeps the
//! largest run of lines that parses as Python, preferring to drop prose at
//! the edges. It never invents code: if nothing parses, the trimmed text is
//! returned as is and the validator reports the syntax error.

use rustpython_parser::{parse, Mode};

/// Longest answer the cleaner will search for a parseable region, in lines.
/// Why: the edge search tries O(k²) regions; beyond this the text is
/// returned whole and the validator judges it.
const SEARCH_LINES: usize = 40;

/// Nesting bound for anything handed to the parser. Why: the parser's tree
/// is dropped recursively, so a deep answer (`((((…` or `1+1+1+…`) must never
/// reach it; the validator rejects such programs anyway (default depth 100).
const PARSE_DEPTH: usize = 100;

/// Longest text handed to the parser, in bytes. Why: the answer may be
/// 256 KiB ([`crate::pipeline::MAX_ANSWER_BYTES`]) and the repairs parse
/// it several times per model call: a 256 KiB answer of `x=1;` took 4 s of
/// the supervisor's CPU per delegation. A program is 64 KiB by default
/// (`source_bytes`), so a longer text is judged, as it is, by the
/// validator; an operator who raises `source_bytes` gets no repairs for
/// answers above this size.
const PARSE_BYTES: usize = 64 * 1024;

/// Parse only what the validator's pre-scan says is shallow enough, and
/// at most [`PARSE_BYTES`].
fn parse_bounded(src: &str) -> Option<rustpython_parser::ast::Mod> {
    if src.len() > PARSE_BYTES || lackpy_policy::lang::prescan::scan(src, PARSE_DEPTH).is_err() {
        return None;
    }
    parse(src, Mode::Module, "<answer>").ok()
}

/// The statements of a module that parses within the bounds.
fn statements(src: &str) -> Option<Vec<rustpython_parser::ast::Stmt>> {
    match parse_bounded(src)? {
        rustpython_parser::ast::Mod::Module(m) => Some(m.body),
        _ => None,
    }
}

/// Whether `src` is Python the parser accepts (bounded, not empty).
pub(crate) fn parses(src: &str) -> bool {
    !src.trim().is_empty() && parse_bounded(src).is_some()
}

/// Extract the program from a raw model answer: [`extract`], then cut
/// where the model went on writing the prompt's pattern (a `# Task:` line
/// after code starts a new, unasked cell; leading ones are dropped).
pub fn clean_answer(raw: &str) -> String {
    let program = extract(raw);
    let mut out: Vec<&str> = Vec::new();
    for line in program.lines() {
        let task = line.trim_start().starts_with("# Task:");
        if task && out.iter().all(|l| l.trim().is_empty()) {
            out.clear();
            continue;
        }
        if task {
            break;
        }
        out.push(line);
    }
    let cut = out.join("\n").trim().to_string();
    if cut.is_empty() {
        program
    } else {
        cut
    }
}

/// The program text of a raw answer: the first fenced block, or the
/// largest parseable run of lines.
fn extract(raw: &str) -> String {
    let mut text = raw.replace("\r\n", "\n");
    // Reasoning models: drop <think>…</think>.
    while let (Some(a), Some(b)) = (text.find("<think>"), text.find("</think>")) {
        if b < a {
            break;
        }
        text.replace_range(a..b + "</think>".len(), "");
    }
    for junk in [
        "<|im_end|>",
        "<|endoftext|>",
        "<|im_start|>assistant",
        "<|file_sep|>",
    ] {
        text = text.replace(junk, "");
    }
    if let Some(block) = first_fenced_block(&text) {
        return dedent(block.trim_matches('\n')).trim_end().to_string();
    }
    // An unterminated fence: keep what follows it.
    if let Some(pos) = text.find("```") {
        let after = &text[pos + 3..];
        let after = after.split_once('\n').map_or("", |(_, rest)| rest);
        text = after.to_string();
    }
    let text = dedent(text.trim_matches('\n'));
    let trimmed = text.trim_end();
    if parses(trimmed) {
        return trimmed.to_string();
    }
    let lines: Vec<&str> = trimmed.lines().collect();
    if lines.len() <= SEARCH_LINES {
        // Fewest dropped lines first; among equals, drop leading prose first.
        for dropped in 1..lines.len() {
            for lead in 0..=dropped {
                let trail = dropped - lead;
                let Some(region) = lines.get(lead..lines.len() - trail) else {
                    continue;
                };
                let candidate = region.join("\n");
                if looks_like_code(region) && parses(&candidate) {
                    return candidate.trim_end().to_string();
                }
            }
        }
    }
    trimmed.trim().to_string()
}

/// When a cell ends in an assignment to a plain name (`result = ...`), the
/// value asked for is lost (the cell's value is its last expression): return
/// the program with that name appended as the last line. Deterministic
/// repair of kibitzer's `wrong_output` mode; `None` when not applicable.
pub fn ensure_result(program: &str) -> Option<String> {
    use rustpython_parser::ast;
    let ast::Stmt::Assign(a) = statements(program)?.pop()? else {
        return None;
    };
    let [ast::Expr::Name(n)] = a.targets.as_slice() else {
        return None;
    };
    Some(format!("{}\n{}", program.trim_end(), n.id.as_str()))
}

/// A cell ending in `print(x)` displays nothing as its value: the cell
/// ending in `x` instead. `None` when the last statement is not a
/// one-argument `print` call.
pub fn unprint_result(program: &str) -> Option<String> {
    use rustpython_parser::ast::{self, Ranged};
    let ast::Stmt::Expr(e) = statements(program)?.pop()? else {
        return None;
    };
    let ast::Expr::Call(c) = &*e.value else {
        return None;
    };
    let ast::Expr::Name(f) = &*c.func else {
        return None;
    };
    if f.id.as_str() != "print" || c.args.len() != 1 || !c.keywords.is_empty() {
        return None;
    }
    let stmt = e.range();
    let arg = c.args.first()?.range();
    let (s0, s1) = (usize::from(stmt.start()), usize::from(stmt.end()));
    let (a0, a1) = (usize::from(arg.start()), usize::from(arg.end()));
    let inner = program.get(a0..a1)?;
    Some(format!(
        "{}{}{}",
        program.get(..s0)?,
        inner,
        program.get(s1..)?
    ))
}

/// The name [`collect_prints`] gathers values into.
const COLLECTED: &str = "results";

/// A cell whose last statement is a loop printing what it finds (`for p
/// in ...: if ...: print(p)`) displays values but has none: the same cell
/// gathering them instead — `results = []` before the loop, each
/// one-argument `print(x)` in it as `results.append(x)`, and `results` as
/// the last line. `None` when the last statement is not a `for` loop, when
/// it prints nothing, when any `print` in the cell is not a one-argument
/// statement inside that loop, or when the cell already uses the name.
pub fn collect_prints(program: &str) -> Option<String> {
    use rustpython_parser::ast::{self, Ranged};
    let module = parse_bounded(program)?;
    let ast::Mod::Module(m) = module else {
        return None;
    };
    let last @ ast::Stmt::For(_) = m.body.last()? else {
        return None;
    };
    let code = crate::corpus::strip_strings(program);
    if code
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|w| w == COLLECTED)
    {
        return None;
    }
    // The print statements of the loop, as byte ranges of the call's name.
    fn prints(stmts: &[ast::Stmt], out: &mut Vec<(usize, usize)>) -> bool {
        for st in stmts {
            match st {
                ast::Stmt::Expr(e) => {
                    if let ast::Expr::Call(c) = &*e.value {
                        if let ast::Expr::Name(f) = &*c.func {
                            if f.id.as_str() == "print" {
                                if c.args.len() != 1 || !c.keywords.is_empty() {
                                    return false;
                                }
                                let r = f.range();
                                out.push((usize::from(r.start()), usize::from(r.end())));
                            }
                        }
                    }
                }
                ast::Stmt::For(f) if !(prints(&f.body, out) && prints(&f.orelse, out)) => {
                    return false;
                }
                ast::Stmt::If(i) if !(prints(&i.body, out) && prints(&i.orelse, out)) => {
                    return false;
                }
                _ => {}
            }
        }
        true
    }
    let mut found = Vec::new();
    if !prints(std::slice::from_ref(last), &mut found) || found.is_empty() {
        return None;
    }
    // Every `print(` of the cell (outside strings) is one of those.
    if code.matches("print(").count() != found.len() {
        return None;
    }
    let start = usize::from(last.range().start());
    // The loop starts a line (it is a top-level statement).
    if !program.get(..start)?.ends_with('\n') && start != 0 {
        return None;
    }
    let mut out = String::with_capacity(program.len() + 64);
    out.push_str(program.get(..start)?);
    out.push_str(&format!("{COLLECTED} = []\n"));
    let mut at = start;
    for (a, b) in found {
        out.push_str(program.get(at..a)?);
        out.push_str(&format!("{COLLECTED}.append"));
        at = b;
    }
    out.push_str(program.get(at..)?.trim_end());
    out.push_str(&format!("\n{COLLECTED}"));
    Some(out)
}

/// Why a cleaned answer cannot be a delegated program even if it
/// validates: it must compute something. `(type, message)`:
/// `EmptyProgram` (no statement: empty or only comments), `NoResult` (it
/// does not end in an expression, so its value would be None), `NoToolCall`
/// (it calls no tool at all: whatever it ends in, a constant or names
/// bound to constants, is made up). `None` when the
/// shape is fine or the text does not parse (the validator reports that).
pub fn shape_problem(program: &str, tools: &[String]) -> Option<(&'static str, String)> {
    use rustpython_parser::ast;
    if program.trim().is_empty() {
        return Some(("EmptyProgram", "the answer held no code".into()));
    }
    let body = statements(program)?;
    let Some(last) = body.last() else {
        return Some((
            "EmptyProgram",
            "the cell holds only comments: it computes nothing".into(),
        ));
    };
    let ast::Stmt::Expr(e) = last else {
        return Some((
            "NoResult",
            "the cell does not end in an expression, so it has no value".into(),
        ));
    };
    let calls_tool = crate::corpus::called_names(program)
        .iter()
        .any(|n| tools.iter().any(|t| t == n));
    if !tools.is_empty() && !calls_tool {
        let msg = if is_literal(&e.value) {
            "the cell calls no tool and ends in a constant: the value must come from the tools"
        } else {
            "the cell calls no tool: its value is made up, it must come from the tools"
        };
        return Some(("NoToolCall", msg.into()));
    }
    None
}

fn is_literal(e: &rustpython_parser::ast::Expr) -> bool {
    use rustpython_parser::ast::Expr;
    match e {
        Expr::Constant(_) => true,
        Expr::List(l) => l.elts.iter().all(is_literal),
        Expr::Tuple(t) => t.elts.iter().all(is_literal),
        Expr::Set(s) => s.elts.iter().all(is_literal),
        Expr::Dict(d) => d.keys.iter().flatten().all(is_literal) && d.values.iter().all(is_literal),
        Expr::UnaryOp(u) => is_literal(&u.operand),
        _ => false,
    }
}

/// A literal argument of the wrong type in a call to one of `tools`, by
/// the types their signatures declare (`read_file(path: str)` given `3` or
/// a list): `(message, hint)`. Only `str`, `int`, `float`, `bool`, `list`
/// and `dict` declarations are checked, only for literal arguments.
pub fn literal_arg_problem(
    program: &str,
    tools: &[crate::prompt::ToolDoc],
) -> Option<(String, String)> {
    use rustpython_parser::ast::{self, Constant, Expr};
    let code: Vec<char> = crate::corpus::strip_strings(program).chars().collect();
    let src: Vec<char> = program.chars().collect();
    if code.len() != src.len() {
        return None;
    }
    for t in tools {
        let Some(params) = declared_params(&t.signature) else {
            continue;
        };
        let name: Vec<char> = t.name.chars().collect();
        let mut i = 0;
        while i + name.len() < code.len() {
            let hit = code[i..i + name.len()] == name[..]
                && code[i + name.len()] == '('
                && (i == 0
                    || !(code[i - 1].is_alphanumeric()
                        || code[i - 1] == '_'
                        || code[i - 1] == '.'));
            if !hit {
                i += 1;
                continue;
            }
            // The argument list: up to the matching parenthesis.
            let open = i + name.len();
            let mut depth = 0usize;
            let mut end = None;
            for (j, c) in code.iter().enumerate().skip(open) {
                match c {
                    '(' | '[' | '{' => depth += 1,
                    ')' | ']' | '}' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            end = Some(j);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            i += 1;
            let Some(end) = end else { continue };
            let call: String = std::iter::once('f')
                .chain(src[open..=end].iter().copied())
                .collect();
            if lackpy_policy::lang::prescan::scan(&call, PARSE_DEPTH).is_err() {
                continue;
            }
            let Ok(ast::Mod::Expression(e)) =
                rustpython_parser::parse(&call, rustpython_parser::Mode::Expression, "<call>")
            else {
                continue;
            };
            let Expr::Call(c) = *e.body else { continue };
            let given = c
                .args
                .iter()
                .zip(params.iter())
                .map(|(v, (n, ty))| (v, n.as_str(), ty.as_str()))
                .chain(c.keywords.iter().filter_map(|k| {
                    let n = k.arg.as_ref()?.as_str();
                    params
                        .iter()
                        .find(|(p, _)| p == n)
                        .map(|(p, ty)| (&k.value, p.as_str(), ty.as_str()))
                }));
            for (v, pname, ty) in given {
                let actual = match v {
                    Expr::Constant(k) => match &k.value {
                        Constant::Str(_) => "str",
                        Constant::Int(_) => "int",
                        Constant::Float(_) => "float",
                        Constant::Bool(_) => "bool",
                        Constant::None => "None",
                        _ => continue,
                    },
                    Expr::List(_) | Expr::ListComp(_) => "list",
                    Expr::Dict(_) | Expr::DictComp(_) => "dict",
                    Expr::Tuple(_) => "tuple",
                    Expr::Set(_) => "set",
                    Expr::JoinedStr(_) => "str",
                    _ => continue,
                };
                let ok = actual == ty
                    || (ty == "float" && actual == "int")
                    || !matches!(ty, "str" | "int" | "float" | "bool" | "list" | "dict");
                if !ok {
                    return Some((
                        format!("{}() argument '{pname}' must be {ty}, not {actual}", t.name),
                        format!("call it as {}", t.signature),
                    ));
                }
            }
        }
    }
    None
}

/// Most bytes of a program [`line_index_problem`] (and the pipeline's
/// header-count check) scans. Why: a cell is a
/// few lines; the scan is quadratic in the number of loop variables.
pub(crate) const LINT_BYTES: usize = 16 * 1024;

/// A line of text indexed as if it were a row of fields: in `for row in
/// text.splitlines(): int(row[3])`, `row` is a str and `row[3]` its
/// character 3, so the cell runs and silently computes the wrong number.
/// Finds a name bound by `for NAME in X` where `X` is a `.splitlines()`
/// (possibly sliced) or a name assigned one, used as `int(NAME[k])` or
/// `float(NAME[k])` with a literal `k`. `(message, hint)`; `None` when
/// there is no such use. Lexical, on the program with its strings blanked.
pub fn line_index_problem(program: &str) -> Option<(String, String)> {
    if program.len() > LINT_BYTES {
        return None;
    }
    let code = crate::corpus::strip_strings(program);
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    // Does an iterable's text end in a list of lines?
    let lines_expr = |e: &str, names: &[String]| -> bool {
        let e = e.trim();
        // Without a trailing subscript (`[1:]`): from its matching `[`.
        let mut base = e;
        if e.ends_with(']') {
            let mut depth = 0i32;
            let mut open = None;
            for (k, c) in e.char_indices().rev() {
                match c {
                    ']' | ')' | '}' => depth += 1,
                    '[' | '(' | '{' => {
                        depth -= 1;
                        if depth == 0 {
                            open = Some(k);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            match open {
                // A list display, not a subscript.
                Some(0) | None => return false,
                Some(k) => base = e[..k].trim_end(),
            }
        }
        base.ends_with(".splitlines()") || names.iter().any(|n| n == base)
    };
    // Names assigned a list of lines: `lines = read_file(p).splitlines()`.
    let mut line_lists: Vec<String> = Vec::new();
    for l in code.lines() {
        if let Some((lhs, rhs)) = l.split_once(" = ") {
            let lhs = lhs.trim();
            if !lhs.is_empty() && lhs.chars().all(is_word) && lines_expr(rhs, &line_lists) {
                line_lists.push(lhs.to_string());
            }
        }
    }
    // Loop variables over lines: `for NAME in ITER` up to a `:`, ` if `,
    // or a closing bracket at depth 0.
    // Offsets agree only when blanking kept every byte (no escape, no
    // multi-byte character in a string).
    let aligned = code.len() == program.len();
    let mut vars: Vec<String> = Vec::new();
    let mut table_vars: Vec<String> = Vec::new();
    let mut at = 0;
    while let Some(i) = code[at..].find("for ") {
        let start = at + i;
        at = start + 4;
        if start > 0 && code[..start].chars().next_back().is_some_and(is_word) {
            continue;
        }
        let rest = &code[at..];
        let Some(j) = rest.find(" in ") else { continue };
        let name = rest[..j].trim();
        if name.is_empty() || !name.chars().all(is_word) {
            continue;
        }
        let iter = &rest[j + 4..];
        let mut depth = 0i32;
        let mut end = iter.len();
        for (k, c) in iter.char_indices() {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' if depth == 0 => {
                    end = k;
                    break;
                }
                ')' | ']' | '}' => depth -= 1,
                ':' | '\n' if depth == 0 => {
                    end = k;
                    break;
                }
                _ => {}
            }
            if depth == 0 && iter[k..].starts_with(" if ") {
                end = k;
                break;
            }
        }
        if lines_expr(&iter[..end], &line_lists) && !vars.iter().any(|v| v == name) {
            vars.push(name.to_string());
            // The lines of a table read by name (`read_file("a.csv")`):
            // their first character is never what a task asks for.
            if aligned && names_a_table(program.get(at + j + 4..at + j + 4 + end)) {
                table_vars.push(name.to_string());
            }
        }
    }
    // A `key=lambda NAME: …` of a call whose first argument is a list of
    // lines (`max(text.splitlines()[1:], key=lambda r: float(r[4]))`):
    // NAME is one line too.
    let mut at = 0;
    while let Some(i) = code[at..].find("key=lambda ") {
        let start = at + i;
        at = start + "key=lambda ".len();
        let Some(name) = code[at..].split_once(':').map(|(n, _)| n.trim()) else {
            continue;
        };
        if name.is_empty() || !name.chars().all(is_word) || vars.iter().any(|v| v == name) {
            continue;
        }
        // The call's `(`: the first unmatched one before `key=`.
        let Some(open) =
            unmatched_open(&code[..start]).filter(|&k| code[..k].ends_with(|c: char| is_word(c)))
        else {
            continue;
        };
        // Its first argument: up to the first `,` at depth 0.
        let mut depth = 0i32;
        let mut end = start;
        for (k, c) in code[open + 1..start].char_indices() {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                ',' if depth == 0 => {
                    end = open + 1 + k;
                    break;
                }
                _ => {}
            }
        }
        let first = &code[open + 1..end];
        if lines_expr(first, &line_lists) {
            vars.push(name.to_string());
            if aligned && names_a_table(program.get(open + 1..end)) {
                table_vars.push(name.to_string());
            }
        }
    }
    for v in &vars {
        // `line[5] == "shipped"`: one character never equals a longer
        // string, so the filter silently matches nothing.
        let pat = format!("{v}[");
        for (i, _) in code.match_indices(&pat).filter(|_| aligned) {
            let Some((digits, rest)) = literal_index(&code, i, &pat) else {
                continue;
            };
            let after = &code[i + pat.len()..];
            let rest = rest.trim_start();
            let Some(op) = ["==", "!="].into_iter().find(|o| rest.starts_with(o)) else {
                continue;
            };
            // The literal, read from the program (the scan's copy has its
            // strings blanked; both have the same byte offsets).
            let at = i
                + pat.len()
                + digits.len()
                + 1
                + (after[digits.len() + 1..].len() - rest.len())
                + op.len();
            let lit = program.get(at..).unwrap_or("").trim_start();
            let Some(q) = lit.chars().next().filter(|c| *c == '"' || *c == '\'') else {
                continue;
            };
            let inner: String = lit[1..].chars().take_while(|c| *c != q).collect();
            if inner.chars().count() >= 2 {
                return Some((
                    format!(
                        "{v}[{digits}] {op} {q}{inner}{q}: {v} is a line of text (a str), so {v}[{digits}] is one character of it and never equals {q}{inner}{q}"
                    ),
                    split_hint(v, digits),
                ));
            }
        }
        // `names.add(row[1])`, `counts[row[2]]`: a field taken, one
        // character got. Index 0 and -1 are left alone (a line's first or
        // last character is sometimes what is meant).
        // `set(row[0] for row in …)`, `{row[2] for row in …}`: a
        // generator's or set's item, taken the same way (seen: a count of
        // "distinct products" that counted first characters); not when it
        // is compared (`(l[0] == "#")`).
        for open in [".add(", ".append(", "[", "(", "{"] {
            let pat = format!("{open}{v}[");
            for (i, _) in code.match_indices(&pat) {
                let Some((digits, rest)) = literal_index(&code, i + open.len(), &pat[open.len()..])
                else {
                    continue;
                };
                if (digits == "0" || digits == "-1") && !table_vars.contains(v) {
                    continue;
                }
                let rest = rest.trim_start();
                let compared = ["==", "!=", "<", ">", "in ", "not "]
                    .iter()
                    .any(|op| rest.starts_with(op));
                if matches!(open, "(" | "{") && (compared || !rest.starts_with("for ")) {
                    continue;
                }
                return Some((
                    format!(
                        "{v}[{digits}]: {v} is a line of text (a str), so {v}[{digits}] is one character of it, not a field"
                    ),
                    split_hint(v, digits),
                ));
            }
        }
        for conv in ["int(", "float("] {
            let pat = format!("{conv}{v}[");
            for (i, _) in code.match_indices(&pat) {
                let Some((digits, _)) = literal_index(&code, i, &pat) else {
                    continue;
                };
                return Some((
                    format!(
                        "{conv}{v}[{digits}]): {v} is a line of text (a str), so {v}[{digits}] is one character of it, not a field"
                    ),
                    split_hint(v, digits),
                ));
            }
        }
    }
    None
}

/// The byte offset of the last bracket of `code` left open at its end
/// (`(`, `[` or `{`): the call or display that the text after `code` is
/// inside. Lexical: `code` has its strings blanked.
pub(crate) fn unmatched_open(code: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (k, c) in code.char_indices().rev() {
        match c {
            ')' | ']' | '}' => depth += 1,
            '(' | '[' | '{' if depth == 0 => return Some(k),
            '(' | '[' | '{' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// Whether a piece of the program names a `.csv`/`.tsv` file in a string
/// literal (`read_file("a.csv")`): its lines are a table's.
fn names_a_table(src: Option<&str>) -> bool {
    let src = src.unwrap_or("").to_ascii_lowercase();
    [".csv\"", ".csv'", ".tsv\"", ".tsv'"]
        .iter()
        .any(|x| src.contains(x))
}

/// At `code[i..]`, which starts with `pat` (ending in `[`) not preceded by
/// a word character: the integer index written there (`3`, `-1`) and the
/// text after its `]`.
fn literal_index<'c>(code: &'c str, i: usize, pat: &str) -> Option<(&'c str, &'c str)> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    if i > 0 && code[..i].chars().next_back().is_some_and(is_word) {
        return None;
    }
    let after = &code[i + pat.len()..];
    let n = after
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(after.len());
    let rest = after[n..].strip_prefix(']')?;
    (n > 0).then_some((&after[..n], rest))
}

/// The hint for a line of text indexed as if it were a row of fields.
fn split_hint(v: &str, digits: &str) -> String {
    format!(
        "split the line into its fields first: {v}.split(\",\")[{digits}] (with the file's separator), or loop over rows = [l.split(\",\") for l in lines]"
    )
}

/// `name(a: str, b: int) -> x` → `[(a, str), (b, int)]`; `None` when the
/// signature declares no types.
fn declared_params(sig: &str) -> Option<Vec<(String, String)>> {
    let open = sig.find('(')?;
    let close = sig.rfind(')')?;
    let inner = sig.get(open + 1..close)?;
    let params: Vec<(String, String)> = inner
        .split(',')
        .filter_map(|p| {
            let (n, t) = p.split_once(':')?;
            let t = t.split('=').next().unwrap_or("").trim();
            Some((n.trim().to_string(), t.to_string()))
        })
        .collect();
    (!params.is_empty()).then_some(params)
}

/// A region must start with something code-like (not a prose sentence that
/// happens to parse, like a bare name).
fn looks_like_code(region: &[&str]) -> bool {
    let Some(first) = region.iter().find(|l| !l.trim().is_empty()) else {
        return false;
    };
    let t = first.trim();
    t.contains('(')
        || t.contains('=')
        || t.contains('[')
        || t.starts_with("for ")
        || t.starts_with("if ")
        || t.starts_with('#')
        || region.len() == 1
}

/// Contents of the first ``` fenced block whose info string is empty or
/// names Python.
fn first_fenced_block(text: &str) -> Option<&str> {
    let mut rest = text;
    let mut offset = 0;
    loop {
        let start = rest.find("```")?;
        let after = &rest[start + 3..];
        let (info, body) = after.split_once('\n')?;
        let end = body.find("```")?;
        let block = &body[..end];
        let lang = info.trim().to_lowercase();
        if lang.is_empty()
            || lang == "python"
            || lang == "py"
            || lang == "python3"
            || lang == "lackpy"
        {
            return Some(block);
        }
        let consumed = (rest.len() - body.len()) + end + 3;
        offset += consumed;
        rest = text.get(offset..)?;
    }
}

/// Remove the common leading indentation.
fn dedent(text: &str) -> String {
    let indent = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.len() - l.trim_start_matches([' ', '\t']).len())
        .min()
        .unwrap_or(0);
    if indent == 0 {
        return text.to_string();
    }
    text.lines()
        .map(|l| l.get(indent..).unwrap_or("").to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No false alarm on right answers: the eval's reference programs and
    /// the corpus's examples pass the shape and line-index checks.
    #[test]
    fn right_answers_pass_the_answer_checks() {
        let f = crate::corpus::tests::heldout();
        let corpus = crate::corpus::Corpus::shipped().unwrap_or_else(|e| panic!("{e}"));
        let tools: Vec<String> = [
            "read_file",
            "find_files",
            "find_definitions",
            "find_callers",
            "write_file",
            "edit_file",
        ]
        .iter()
        .map(|t| t.to_string())
        .collect();
        let programs = f
            .intents
            .iter()
            .map(|i| i.program.trim())
            .chain(corpus.examples.iter().map(|e| e.program.trim()));
        for p in programs {
            assert_eq!(shape_problem(p, &tools), None, "{p}");
            assert_eq!(line_index_problem(p), None, "{p}");
        }
    }

    #[test]
    fn a_cell_calling_no_tool_is_made_up() {
        let tools = ["read_file".to_string(), "find_files".to_string()];
        for made_up in ["42", "notes = ['a.txt', 'b.txt']\n[notes]", "x = 3\nx * 2"] {
            assert_eq!(
                shape_problem(made_up, &tools).map(|(t, _)| t),
                Some("NoToolCall"),
                "{made_up}"
            );
        }
        assert_eq!(shape_problem("len(find_files('*.txt'))", &tools), None);
    }

    #[test]
    fn a_line_indexed_as_a_row_is_flagged() {
        for bad in [
            "sum(int(row[3]) for row in read_file('a.csv').splitlines()[1:])",
            "total = 0\nfor line in read_file('a.csv').splitlines():\n    total += float(line[2])\ntotal",
            "lines = read_file('a.csv').splitlines()\nrows = lines[1:]\nmax(int(r[1]) for r in rows)",
            "len([r for r in read_file('a.csv').splitlines()[1:] if r[5] == \"shipped\"])",
            "[l for l in read_file('a.csv').splitlines() if l[1] != 'ab']",
            "names = set()\nfor row in read_file('a.csv').splitlines()[1:]:\n    names.add(row[1])\nsorted(names)",
            "out = []\nfor row in read_file('a.csv').splitlines():\n    out.append(row[2])\nout",
            "c = {}\nfor r in read_file('a.csv').splitlines():\n    c[r[3]] = c.get(r[3], 0) + 1\nc",
            // A table's line: its first character is no field either.
            "[header[0] for header in read_file(\"data/stock.csv\").splitlines() if header.strip()]",
            "[r[-1] for r in read_file('x.TSV').splitlines()[1:]]",
            // A key function's argument is one line too.
            "max(read_file(\"data/orders.csv\").splitlines()[1:], key=lambda r: float(r[4]))[4]",
            "lines = read_file('a.csv').splitlines()\nsorted(lines[1:], key=lambda row: int(row[2]), reverse=True)",
            // A generator's or a set's items.
            "len(set(r[0] for r in read_file(\"data/products.csv\").splitlines()[1:]))",
            "{r[2] for r in read_file('a.csv').splitlines()[1:]}",
            "sorted(set(l[3] for l in read_file('a.md').splitlines()))",
        ] {
            let got = line_index_problem(bad);
            assert!(
                got.as_ref().is_some_and(|(m, h)| m.contains("is a line of text") && h.contains(".split(")),
                "{bad}: {got:?}"
            );
        }
        for good in [
            "sum(int(l.split(',')[3]) for l in read_file('a.csv').splitlines()[1:])",
            "rows = [l.split(',') for l in read_file('a.csv').splitlines()[1:]]\nsum(int(r[3]) for r in rows)",
            "[l for l in read_file('a.md').splitlines() if l[0] == '#']",
            "[l for l in read_file('a.md').splitlines() if l[0] != \"-\"]",
            "for p in find_files('*.csv'):\n    int(p[0])",
            "int(read_file('n.txt').splitlines()[0])",
            "s = set()\nfor l in read_file('a.md').splitlines():\n    s.add(l[0])\ns",
            "d = {}\nfor l in read_file('a.md').splitlines():\n    d[l[-1]] = 1\nd",
            "[l[0] for l in read_file('a.md').splitlines() if l]",
            "[l for l in read_file('a.csv').splitlines() if l[0] != '#']",
            "for row in read_file('a.csv').splitlines():\n    x = row.split(',')\n    out.append(x[2])",
            "max(read_file('a.csv').splitlines()[1:], key=lambda r: float(r.split(',')[4]))",
            "rows = [l.split(',') for l in read_file('a.csv').splitlines()[1:]]\nsorted(rows, key=lambda r: int(r[2]))",
            "sorted(read_file('a.md').splitlines(), key=lambda l: l[0])",
            "sort_by([{'a': 1}], 'a')",
            "set(l[0] for l in read_file('a.md').splitlines() if l)",
            "sum((r[0] == '#') for r in read_file('a.csv').splitlines())",
            "[(r[1], 2) for r in read_file('a.md').splitlines()]",
        ] {
            assert_eq!(line_index_problem(good), None, "{good}");
        }
    }

    #[test]
    fn a_printing_loop_collects_instead() {
        let p = "files = find_files(\"**/*.py\")\nfor path in files:\n    if \"x\" in read_file(path):\n        print(path)\n";
        assert_eq!(
            collect_prints(p).as_deref(),
            Some("files = find_files(\"**/*.py\")\nresults = []\nfor path in files:\n    if \"x\" in read_file(path):\n        results.append(path)\nresults")
        );
        let p = "for p in find_files(\"*.txt\"):\n    for l in read_file(p).splitlines():\n        print(l.strip())";
        assert_eq!(
            collect_prints(p).as_deref(),
            Some("results = []\nfor p in find_files(\"*.txt\"):\n    for l in read_file(p).splitlines():\n        results.append(l.strip())\nresults")
        );
        for p in [
            // Two arguments, a print outside the loop, no print, the name taken, no loop last.
            "for p in find_files(\"*\"):\n    print(p, 1)",
            "print(1)\nfor p in find_files(\"*\"):\n    print(p)",
            "for p in find_files(\"*\"):\n    x = p",
            "results = 1\nfor p in find_files(\"*\"):\n    print(p)",
            "x = [p for p in find_files(\"*\")]\nprint(x)",
        ] {
            assert_eq!(collect_prints(p), None, "{p}");
        }
    }

    #[test]
    fn fences() {
        assert_eq!(clean_answer("```python\nx = 1\nx\n```"), "x = 1\nx");
        assert_eq!(
            clean_answer("Here you go:\n```\nlen(find_files('*'))\n```\nThis counts files."),
            "len(find_files('*'))"
        );
        assert_eq!(
            clean_answer("```bash\nls\n```\n```py\nread_file('a')\n```"),
            "read_file('a')"
        );
        assert_eq!(
            clean_answer("```python\nread_file('a')\n"),
            "read_file('a')"
        );
    }

    #[test]
    fn prose_edges() {
        assert_eq!(
            clean_answer("Sure! Here is the cell:\ncontent = read_file('a.txt')\ncontent\nThis reads the file."),
            "content = read_file('a.txt')\ncontent"
        );
        assert_eq!(clean_answer("  x = 1\n  x\n"), "x = 1\nx");
        assert_eq!(
            clean_answer("<think>hmm</think>read_file('a')<|im_end|>"),
            "read_file('a')"
        );
    }

    #[test]
    fn result_appended_after_final_assignment() {
        assert_eq!(
            ensure_result("x = 1\nresult = [x]\n").as_deref(),
            Some("x = 1\nresult = [x]\nresult")
        );
        assert_eq!(ensure_result("x = 1\nx"), None);
        assert_eq!(ensure_result("a, b = 1, 2"), None);
        assert_eq!(ensure_result("for x in y:\n    z = x"), None);
        assert_eq!(ensure_result("not python ("), None);
    }

    #[test]
    fn deep_answers_never_reach_the_parser() {
        let deep = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
        assert_eq!(clean_answer(&deep), deep);
        let chain = format!("x = {}1\ny = x", "1+".repeat(50_000));
        // No crash; the deep line is never parsed (here it is dropped as
        // unparseable and the validator judges what is left).
        assert_eq!(clean_answer(&chain), "y = x");
        assert_eq!(ensure_result(&format!("y = {}1", "-".repeat(50_000))), None);
    }

    #[test]
    fn garbage_stays_garbage() {
        let g = "I cannot help with that request because reasons";
        assert_eq!(clean_answer(g), g);
        assert_eq!(clean_answer(""), "");
        // Huge answers are not searched.
        let big = "prose line\n".repeat(1000);
        assert_eq!(clean_answer(&big).lines().count(), 1000);
    }

    /// Text over 64 KiB (longer than a default program) is never parsed:
    /// the repairs leave it as it is, for the validator to refuse.
    #[test]
    fn text_over_the_parse_bound_is_not_parsed() {
        let small = format!("{}x", "x = 1\n".repeat(1000));
        assert!(parses(&small));
        assert_eq!(
            ensure_result(&format!("{small}\ny = 2")).as_deref(),
            Some(format!("{small}\ny = 2\ny").as_str())
        );
        let big = format!("{}x", "x = 1\n".repeat(PARSE_BYTES / 6 + 1));
        assert!(big.len() > PARSE_BYTES);
        assert!(!parses(&big));
        assert_eq!(ensure_result(&format!("{big}\ny = 2")), None);
    }

    #[test]
    fn literal_argument_types_follow_the_signatures() {
        let tools: Vec<crate::prompt::ToolDoc> = ["read_file", "write_file", "find_files"]
            .iter()
            .filter_map(|n| crate::prompt::ToolDoc::builtin(n))
            .collect();
        let msg = |p: &str| literal_arg_problem(p, &tools).map(|(m, _)| m);
        assert_eq!(
            msg("x = 1\nread_file(3)").as_deref(),
            Some("read_file() argument 'path' must be str, not int")
        );
        assert_eq!(
            msg("find_files(pattern=['*.py'])").as_deref(),
            Some("find_files() argument 'pattern' must be str, not list")
        );
        assert!(msg("write_file('a', None)").is_some());
        for ok in [
            "read_file('a')",
            "read_file(p)",
            "read_file(f'{d}/x')",
            "len(read_file('read_file(3)'))",
            "x.read_file(3)",
            "my_read_file(3)",
        ] {
            assert_eq!(msg(ok), None, "{ok}");
        }
    }

    #[test]
    fn echoed_task_lines_are_cut() {
        assert_eq!(
            clean_answer("# Task: count\nlen(read_file('a'))\n\n# Task: other\nfind_files('*')"),
            "len(read_file('a'))"
        );
        assert_eq!(clean_answer("x = 1\nx"), "x = 1\nx");
    }
}
