//! Pass 2: the whitelist check. Recursive, which is safe because pass 1
//! bounded the tree's depth. Every violation is recorded (with its byte
//! offset for sorting) and the walk continues, so authors see them all.

use super::tables::{self, forbidden_hint, is_builtin, method_allowed, method_allowed_any};
use super::{error_at, Namespace};
use crate::wire::ErrorInfo;
use rustpython_parser::ast::{self, Constant, Expr, ExprContext, Operator, Ranged, Stmt, UnaryOp};
use std::collections::BTreeSet;

/// The shipped builtin tools (for a hint when a profile does not grant one).
const SHIPPED_TOOLS: &[&str] = &["read_file", "find_files", "write_file", "edit_file"];

/// Shipped tools whose declared arguments are all required: a call to one
/// of them (by target name) must pass every argument.
const STR_ARG_TOOLS: &[&str] = tables::BUILTIN_TOOLS;

/// CPython 3.11's limit on decimal digits in an int literal / int↔str conversion.
const MAX_STR_DIGITS: usize = 4300;

pub(crate) struct Checker<'a> {
    src: &'a str,
    starts: &'a [u32],
    ns: &'a Namespace,
    assigned: &'a BTreeSet<String>,
    errors: Vec<(usize, ErrorInfo)>,
    calls: Vec<String>,
    loop_depth: usize,
    /// The function scopes around the node being checked (a `key=` lambda,
    /// a comprehension), innermost last: where CPython's symbol table and
    /// compiler place `yield` and `await`.
    scopes: Vec<Scope>,
    /// Offsets of the targets CPython words "cannot assign to X here. Maybe
    /// you meant '==' instead of '='?" (see [`Checker::here_targets`]).
    here: Vec<usize>,
}

const YIELD_HINT: &str = "build a list and make it the last expression";

#[derive(Clone, Copy)]
enum Scope {
    Lambda,
    /// What CPython calls it ("list comprehension", ...) and its offset.
    Comprehension(&'static str, usize),
}

fn off<T: Ranged>(node: &T) -> usize {
    u32::from(node.range().start()) as usize
}

/// Does the `(` at `start` close at `end - 1` (`src[start..end]` is one
/// parenthesized expression)? Brackets inside string literals and comments
/// are skipped.
fn wraps_in_parens(src: &str, start: usize, end: usize) -> bool {
    let b = src.as_bytes();
    if b.get(start) != Some(&b'(') {
        return false;
    }
    let mut depth = 0usize;
    let mut i = start;
    while i < end.min(b.len()) {
        match b[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1 == end;
                }
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            q @ (b'\'' | b'"') => {
                let triple = b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q);
                i += if triple { 3 } else { 1 };
                while i < b.len() {
                    if b[i] == b'\\' {
                        i += 2;
                        continue;
                    }
                    if b[i] == q
                        && (!triple || (b.get(i + 1) == Some(&q) && b.get(i + 2) == Some(&q)))
                    {
                        i += if triple { 2 } else { 0 };
                        break;
                    }
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// The first byte at or after `at` that is not whitespace, a line
/// continuation or a comment.
fn next_significant(src: &str, mut at: usize) -> Option<u8> {
    let b = src.as_bytes();
    while let Some(&c) = b.get(at) {
        match c {
            b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | b'\\' => at += 1,
            b'#' => {
                while b.get(at).is_some_and(|&c| c != b'\n') {
                    at += 1;
                }
            }
            _ => return Some(c),
        }
    }
    None
}

/// Byte offset of the first `\uXXXX` / `\UXXXXXXXX` escape of a surrogate
/// (U+D800..U+DFFF) in the source of a string literal (or of implicitly
/// concatenated literals, comments between them included). Raw literals
/// have no escapes.
fn surrogate_escape(src: &str) -> Option<usize> {
    let b = src.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            q @ (b'\'' | b'"') => {
                let (raw, _, close) = super::surrogate::literal_open(b, i, q);
                i += close.len();
                while i < b.len() && !b[i..].starts_with(close) {
                    if b[i] == b'\\' {
                        let digits = match b.get(i + 1) {
                            Some(b'u') if !raw => 4,
                            Some(b'U') if !raw => 8,
                            _ => 0,
                        };
                        let hex = src.get(i + 2..i + 2 + digits).unwrap_or("");
                        if digits > 0 && hex.len() == digits {
                            if let Ok(cp) = u32::from_str_radix(hex, 16) {
                                if (0xD800..=0xDFFF).contains(&cp) {
                                    return Some(i);
                                }
                            }
                        }
                        i += 2;
                    } else {
                        i += 1;
                    }
                }
                i += close.len();
            }
            _ => i += 1,
        }
    }
    None
}

/// The construct name and hint of a forbidden operator, if it is one.
fn operator_violation(op: Operator) -> Option<(&'static str, &'static str)> {
    const BIT_HINT: &str = "bit operators are not available; for sets use union(), intersection(), difference() or symmetric_difference()";
    match op {
        Operator::Pow => Some(("the power operator `**`", "multiply explicitly (x * x)")),
        Operator::MatMult => Some((
            "the matrix multiplication operator `@`",
            "multiply explicitly",
        )),
        Operator::BitOr => Some(("the bitwise operator `|`", BIT_HINT)),
        Operator::BitXor => Some(("the bitwise operator `^`", BIT_HINT)),
        Operator::BitAnd => Some(("the bitwise operator `&`", BIT_HINT)),
        Operator::LShift => Some(("the shift operator `<<`", "multiply explicitly")),
        Operator::RShift => Some(("the shift operator `>>`", "use // to divide")),
        _ => None,
    }
}

/// Statically known type of a receiver expression, if any.
fn static_type(e: &Expr) -> Option<&'static str> {
    match e {
        Expr::Constant(c) => Some(match c.value {
            Constant::Str(_) => "str",
            Constant::Int(_) => "int",
            Constant::Bool(_) => "bool",
            Constant::Float(_) => "float",
            Constant::None => "NoneType",
            Constant::Tuple(_) => "tuple",
            Constant::Bytes(_) => "bytes",
            Constant::Complex { .. } => "complex",
            Constant::Ellipsis => "ellipsis",
        }),
        Expr::JoinedStr(_) => Some("str"),
        Expr::List(_) | Expr::ListComp(_) => Some("list"),
        Expr::Dict(_) | Expr::DictComp(_) => Some("dict"),
        Expr::Set(_) | Expr::SetComp(_) => Some("set"),
        Expr::Tuple(_) => Some("tuple"),
        _ => None,
    }
}

/// CPython's name for an expression in "cannot assign to ..." messages.
pub(crate) fn expr_kind(e: &Expr) -> &'static str {
    match e {
        Expr::Constant(c) => match c.value {
            Constant::None => "None",
            Constant::Bool(true) => "True",
            Constant::Bool(false) => "False",
            Constant::Ellipsis => "ellipsis",
            _ => "literal",
        },
        Expr::Call(_) => "function call",
        Expr::Compare(_) => "comparison",
        Expr::BoolOp(_) | Expr::BinOp(_) | Expr::UnaryOp(_) => "expression",
        Expr::IfExp(_) => "conditional expression",
        Expr::Lambda(_) => "lambda",
        Expr::Dict(_) => "dict literal",
        Expr::Set(_) => "set display",
        Expr::ListComp(_) => "list comprehension",
        Expr::SetComp(_) => "set comprehension",
        Expr::DictComp(_) => "dict comprehension",
        Expr::GeneratorExp(_) => "generator expression",
        Expr::JoinedStr(_) | Expr::FormattedValue(_) => "f-string expression",
        Expr::NamedExpr(_) => "named expression",
        Expr::Tuple(_) => "tuple",
        Expr::List(_) => "list",
        Expr::Starred(_) => "starred",
        Expr::Await(_) => "await expression",
        Expr::Yield(_) | Expr::YieldFrom(_) => "yield expression",
        _ => "expression",
    }
}

/// Levenshtein distance, for "did you mean" hints (short strings only).
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Up to three close matches for `name` among `candidates`, best first.
fn close_matches<'c>(name: &str, candidates: impl Iterator<Item = &'c str>) -> Vec<&'c str> {
    if name.chars().count() > 64 {
        return Vec::new();
    }
    let lname = name.to_lowercase();
    let mut scored: Vec<(usize, &str)> = candidates
        .filter(|c| *c != name)
        .filter_map(|c| {
            let lc = c.to_lowercase();
            let d = distance(&lname, &lc);
            // Close means a typo or two: one edit per four characters.
            let limit = (name.chars().count() / 4).max(1);
            let (short, long) = if lc.len() < lname.len() {
                (&lc, &lname)
            } else {
                (&lname, &lc)
            };
            if d <= limit {
                Some((d, c))
            } else if short.len() >= 4
                && short.len() * 2 >= long.len()
                && long.contains(short.as_str())
            {
                // A name inside the other (`files` / `find_files`), when
                // it is most of it (`all` is not close to `find_callers`).
                Some((limit + 1, c))
            } else {
                None
            }
        })
        .collect();
    scored.sort();
    scored.dedup();
    scored.into_iter().take(3).map(|(_, c)| c).collect()
}

/// Hints for methods authors often reach for that are not on the list.
fn method_hint(method: &str) -> Option<&'static str> {
    Some(match method {
        "format" | "format_map" => "use an f-string: f\"{name}: {value}\"",
        "encode" | "decode" => "bytes are not available; work with str values",
        "translate" | "maketrans" => "use replace() for each character",
        "contains" | "has_key" | "includes" => "use the `in` operator: `x in items`",
        "len" | "length" | "size" | "count_items" => "use len(x)",
        "push" | "add_item" => "use append() for lists, add() for sets",
        "trim" => "use strip()",
        "to_upper" | "toupper" | "touppercase" => "use upper()",
        "to_lower" | "tolower" | "tolowercase" => "use lower()",
        "sort_by" | "sorted" => "use sort_by(items, \"field\") or sorted(items, key=...)",
        "read" | "readlines" | "write" => "use the read_file / write_file tools",
        _ => return None,
    })
}

impl<'a> Checker<'a> {
    pub(crate) fn new(
        src: &'a str,
        starts: &'a [u32],
        ns: &'a Namespace,
        assigned: &'a BTreeSet<String>,
    ) -> Self {
        Checker {
            src,
            starts,
            ns,
            assigned,
            errors: Vec::new(),
            calls: Vec::new(),
            loop_depth: 0,
            scopes: Vec::new(),
            here: Vec::new(),
        }
    }

    pub(crate) fn finish(self) -> (Vec<(usize, ErrorInfo)>, Vec<String>) {
        (self.errors, self.calls)
    }

    fn err(&mut self, at: usize, ty: &str, message: String, hint: Option<String>) {
        let e = error_at(self.src, self.starts, at, ty, message, hint);
        self.errors.push((at, e));
    }

    fn forbid(&mut self, at: usize, construct: &str, hint: &str) {
        self.err(
            at,
            "ForbiddenSyntax",
            format!("{construct} is not allowed"),
            Some(hint.to_string()),
        );
    }

    fn is_tool(&self, name: &str) -> bool {
        self.ns.get(name).is_some()
    }

    fn tool_list(&self) -> String {
        if self.ns.tools.is_empty() {
            return "available tools: (none)".to_string();
        }
        let names: Vec<&str> = self
            .ns
            .tools
            .iter()
            .take(30)
            .map(|t| t.name.as_str())
            .collect();
        format!("available tools: {}", names.join(", "))
    }

    pub(crate) fn body(&mut self, body: &[Stmt]) {
        for s in body {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        let at = off(s);
        match s {
            Stmt::Expr(e) => self.expr(&e.value),
            Stmt::Assign(a) => {
                self.here = self.here_targets(a);
                let before = self.errors.len();
                for t in &a.targets {
                    self.target(t, true);
                }
                self.here.clear();
                let invalid = self.errors.get(before..).is_some_and(|new| {
                    new.iter().any(|(_, e)| {
                        e.type_name == "SyntaxError" && e.message.starts_with("cannot assign to ")
                    })
                });
                if invalid {
                    if let Some((at, message)) = self.chained_named_expression(a) {
                        self.err(at, "SyntaxError", message, None);
                    }
                }
                self.expr(&a.value);
            }
            Stmt::AugAssign(a) => {
                if let Some((what, hint)) = operator_violation(a.op) {
                    self.forbid(at, &format!("augmented assignment with {what}"), hint);
                }
                if matches!(&*a.target, Expr::Name(_) | Expr::Attribute(_) | Expr::Subscript(_)) {
                    self.expr(&a.target);
                } else {
                    self.err(
                        off(&*a.target),
                        "SyntaxError",
                        format!("'{}' is an illegal expression for augmented assignment", expr_kind(&a.target)),
                        None,
                    );
                }
                self.expr(&a.value);
            }
            Stmt::For(f) => {
                self.target(&f.target, true);
                self.expr(&f.iter);
                self.loop_depth += 1;
                self.body(&f.body);
                self.loop_depth -= 1;
                self.body(&f.orelse);
            }
            Stmt::If(i) => {
                self.expr(&i.test);
                self.body(&i.body);
                self.body(&i.orelse);
            }
            Stmt::Pass(_) => {}
            Stmt::Break(_) => {
                if self.loop_depth == 0 {
                    self.err(at, "SyntaxError", "'break' outside loop".to_string(), None);
                }
            }
            Stmt::Continue(_) => {
                if self.loop_depth == 0 {
                    self.err(at, "SyntaxError", "'continue' not properly in loop".to_string(), None);
                }
            }
            Stmt::Import(_) | Stmt::ImportFrom(_) => self.forbid(
                at,
                "`import`",
                "tools and builtins are already loaded; call them directly",
            ),
            Stmt::FunctionDef(f) => {
                for d in &f.decorator_list {
                    self.forbid(off(d), "a decorator", "write the steps inline; functions cannot be defined");
                }
                self.forbid(at, "`def` (function definition)", "write the steps inline; functions cannot be defined");
            }
            Stmt::AsyncFunctionDef(f) => {
                for d in &f.decorator_list {
                    self.forbid(off(d), "a decorator", "write the steps inline; functions cannot be defined");
                }
                self.forbid(at, "`async def`", "write the steps inline; functions cannot be defined");
            }
            Stmt::ClassDef(c) => {
                for d in &c.decorator_list {
                    self.forbid(off(d), "a decorator", "write the steps inline; classes cannot be defined");
                }
                self.forbid(at, "`class`", "use dicts and lists for structured data; classes cannot be defined");
            }
            // (There are no functions: CPython's compiler refuses these.)
            Stmt::Return(_) => self.err(
                at,
                "SyntaxError",
                "'return' outside function".to_string(),
                Some("the value of the last expression statement is the program's result".to_string()),
            ),
            Stmt::Delete(_) => self.forbid(at, "`del`", "reassign the variable or build a new collection instead"),
            Stmt::TypeAlias(_) => self.forbid(at, "a `type` alias", "assign values to variables directly"),
            Stmt::AnnAssign(a) => {
                // CPython's parser refuses a target that is not a name, an
                // attribute or a subscript (invalid_ann_assign_target).
                let target = match a.target.as_ref() {
                    Expr::Name(_) | Expr::Attribute(_) | Expr::Subscript(_) => None,
                    Expr::Tuple(_) => Some("only single target (not tuple) can be annotated"),
                    Expr::List(_) => Some("only single target (not list) can be annotated"),
                    _ => Some("illegal target for annotation"),
                };
                match target {
                    Some(m) => self.err(off(a.target.as_ref()), "SyntaxError", m.to_string(), None),
                    None => self.forbid(at, "an annotated assignment", "drop the annotation: x = value"),
                }
            }
            Stmt::AsyncFor(_) => self.forbid(at, "`async for`", "use a plain for loop"),
            Stmt::While(_) => self.forbid(
                at,
                "a `while` loop",
                "iterate over a finite collection with for (for item in items: / for i in range(n):)",
            ),
            Stmt::With(_) | Stmt::AsyncWith(_) => self.forbid(
                at,
                "`with`",
                "call the tools directly: read_file(path) returns a file's text",
            ),
            Stmt::Match(_) => self.forbid(at, "`match`", "use if/elif/else"),
            Stmt::Raise(_) => self.forbid(
                at,
                "`raise`",
                "errors cannot be raised; make a value describing the problem the last expression",
            ),
            Stmt::Try(_) | Stmt::TryStar(_) => {
                self.forbid(at, "`try`", "errors propagate; check values with if instead")
            }
            Stmt::Assert(_) => self.forbid(
                at,
                "`assert`",
                "check the condition with if and make the result the last expression",
            ),
            Stmt::Global(_) => self.forbid(at, "`global`", "there is one scope; assign variables directly"),
            Stmt::Nonlocal(_) => self.err(
                at,
                "SyntaxError",
                "nonlocal declaration not allowed at module level".to_string(),
                Some("there is one scope; assign variables directly".to_string()),
            ),
        }
    }

    /// Check an identifier used as a name (any context) for `_` and the forbidden list.
    /// Returns false when an error was recorded.
    fn name_ok(&mut self, at: usize, id: &str) -> bool {
        let variable = || tables::VARIABLE_OK_NAMES.contains(&id) && self.assigned.contains(id);
        if let Some(hint) = forbidden_hint(id).filter(|_| !variable()) {
            self.err(
                at,
                "ForbiddenName",
                format!("'{id}' is not available"),
                Some(hint.to_string()),
            );
            return false;
        }
        if id.starts_with('_') {
            self.err(
                at,
                "UnderscoreName",
                format!("name '{id}' starts with an underscore; such names are not allowed"),
                Some(if id.chars().all(|c| c == '_') {
                    "use a plain name such as `item` or `i` instead of '_'".to_string()
                } else {
                    "use names that do not start with '_'; use dict keys (d[\"key\"]) for data"
                        .to_string()
                }),
            );
            return false;
        }
        true
    }

    fn unknown_name_hint(&self, id: &str) -> String {
        let fixed = tables::UNKNOWN_NAME_HINTS
            .iter()
            .find(|(n, _)| *n == id)
            .map(|(_, h)| *h);
        let candidates = self
            .ns
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .chain(tables::BUILTINS.iter().copied())
            .chain(self.assigned.iter().map(String::as_str));
        let close = close_matches(id, candidates);
        let mut parts = Vec::new();
        if let Some(h) = fixed {
            parts.push(h.to_string());
        }
        if SHIPPED_TOOLS.contains(&id) {
            parts.push(format!(
                "{id} is a tool the active profile does not grant; use a profile or --tools list that includes it"
            ));
        }
        if !close.is_empty() {
            parts.push(format!("did you mean {}?", close.join(", ")));
        }
        parts.push(self.tool_list());
        parts.join("; ")
    }

    /// A name read as a value (not a callee, `store` false) or assigned to
    /// (`store` true).
    fn name_use(&mut self, at: usize, id: &str, store: bool) {
        if !self.name_ok(at, id) {
            return;
        }
        if self.is_tool(id) || is_builtin(id) {
            let what = if self.is_tool(id) { "tool" } else { "builtin" };
            let (ty, message, hint) = if store {
                (
                    "AssignToBuiltin",
                    format!("cannot assign to {what} '{id}'"),
                    "choose another variable name".to_string(),
                )
            } else {
                (
                    "BuiltinAsValue",
                    format!("{what} '{id}' can only be called, not used as a value"),
                    format!("call it: {id}(...)"),
                )
            };
            self.err(at, ty, message, Some(hint));
        } else if !store && !self.assigned.contains(id) {
            let hint = self.unknown_name_hint(id);
            self.err(
                at,
                "UnknownName",
                format!(
                    "name '{id}' is not defined: not a tool of the active profile, an allowed builtin, or a variable assigned in the program"
                ),
                Some(hint),
            );
        }
    }

    fn attr_ok(&mut self, at: usize, attr: &str) -> bool {
        if attr.starts_with('_') {
            self.err(
                at,
                "UnderscoreName",
                format!(
                    "attribute '{attr}' starts with an underscore; such attributes are not allowed"
                ),
                Some(
                    "use dict keys (d[\"key\"]) for data; only allowlisted methods can be called"
                        .to_string(),
                ),
            );
            return false;
        }
        true
    }

    fn expr(&mut self, e: &Expr) {
        let at = off(e);
        match e {
            Expr::BoolOp(b) => b.values.iter().for_each(|v| self.expr(v)),
            Expr::NamedExpr(n) => {
                self.forbid(
                    at,
                    "the walrus operator `:=`",
                    "assign on its own line first: x = value",
                );
                self.expr(&n.value);
            }
            Expr::BinOp(b) => {
                if let Some((what, hint)) = operator_violation(b.op) {
                    self.forbid(at, what, hint);
                } else if b.op == Operator::Mod
                    && matches!(
                        &*b.left,
                        Expr::JoinedStr(_)
                            | Expr::Constant(ast::ExprConstant {
                                value: Constant::Str(_),
                                ..
                            })
                    )
                {
                    self.forbid(
                        at,
                        "`%`-formatting of a string",
                        "use an f-string: f\"{name}: {value}\"",
                    );
                }
                self.expr(&b.left);
                self.expr(&b.right);
            }
            Expr::UnaryOp(u) => {
                if u.op == UnaryOp::Invert {
                    self.forbid(
                        at,
                        "the bitwise operator `~`",
                        "bit operators are not available; use - or not",
                    );
                }
                self.expr(&u.operand);
            }
            Expr::Lambda(_) => self.forbid(
                at,
                "`lambda` outside a key= argument",
                "use sort_by(items, \"field\") or pass the lambda as key=",
            ),
            Expr::IfExp(i) => {
                self.expr(&i.test);
                self.expr(&i.body);
                self.expr(&i.orelse);
            }
            Expr::Dict(d) => {
                for k in d.keys.iter().flatten() {
                    self.expr(k);
                }
                d.values.iter().for_each(|v| self.expr(v));
            }
            Expr::Set(s) => self.elts(&s.elts),
            Expr::ListComp(c) => {
                self.comprehension(&c.generators, "list comprehension", at);
                self.comp_elt(&c.elt);
                self.scopes.pop();
            }
            Expr::SetComp(c) => {
                self.comprehension(&c.generators, "set comprehension", at);
                self.comp_elt(&c.elt);
                self.scopes.pop();
            }
            Expr::GeneratorExp(c) => {
                self.comprehension(&c.generators, "generator expression", at);
                self.comp_elt(&c.elt);
                self.scopes.pop();
            }
            Expr::DictComp(c) => {
                self.comprehension(&c.generators, "dict comprehension", at);
                self.expr(&c.key);
                self.expr(&c.value);
                self.scopes.pop();
            }
            // CPython's compiler and symbol table refuse these outside an
            // (async) function; only a lambda makes `yield` valid Python.
            Expr::Await(_) => {
                let (at, message) = match self.scopes.last() {
                    Some(Scope::Comprehension(_, c)) => (
                        *c,
                        "asynchronous comprehension outside of an asynchronous function",
                    ),
                    Some(Scope::Lambda) => (at, "'await' outside async function"),
                    None => (at, "'await' outside function"),
                };
                let hint = "call tools directly; they return their results";
                self.err(
                    at,
                    "SyntaxError",
                    message.to_string(),
                    Some(hint.to_string()),
                );
            }
            Expr::Yield(_) | Expr::YieldFrom(_) => match self.scopes.last() {
                Some(Scope::Lambda) => self.forbid(at, "`yield`", YIELD_HINT),
                Some(Scope::Comprehension(kind, _)) => {
                    let message = format!("'yield' inside {kind}");
                    self.err(at, "SyntaxError", message, Some(YIELD_HINT.to_string()));
                }
                None => self.err(
                    at,
                    "SyntaxError",
                    "'yield' outside function".to_string(),
                    Some(YIELD_HINT.to_string()),
                ),
            },
            Expr::Compare(c) => {
                self.expr(&c.left);
                c.comparators.iter().for_each(|v| self.expr(v));
            }
            Expr::Call(c) => self.call(c),
            Expr::FormattedValue(f) => {
                self.expr(&f.value);
                if let Some(spec) = &f.format_spec {
                    self.expr(spec);
                }
            }
            Expr::JoinedStr(j) => j.values.iter().for_each(|v| self.expr(v)),
            Expr::Constant(c) => self.constant(at, e, &c.value),
            Expr::Attribute(a) => {
                if !self.attr_ok(at, a.attr.as_str()) {
                    self.expr(&a.value);
                    return;
                }
                match a.ctx {
                    ExprContext::Load => {
                        let attr = a.attr.as_str();
                        if let Some(t) = static_type(&a.value) {
                            self.err(
                                at,
                                "AttributeNotAllowed",
                                format!("attribute '{attr}' of a {t} cannot be read; only allowlisted methods can be called"),
                                Some("call a method, e.g. x.upper(); use dict keys (d[\"key\"]) for data".to_string()),
                            );
                        } else if method_allowed_any(attr) {
                            self.err(
                                at,
                                "AttributeNotAllowed",
                                format!("method '{attr}' can only be called, not used as a value"),
                                Some(format!("call it: x.{attr}(...)")),
                            );
                        }
                    }
                    _ => self.forbid(
                        at,
                        "assignment to an attribute",
                        "store values in a dict: d[\"key\"] = value",
                    ),
                }
                self.expr(&a.value);
            }
            Expr::Subscript(s) => {
                self.expr(&s.value);
                match &*s.slice {
                    // `d[*k]` (3.11, PEP 646): the key is the tuple `(*k,)`.
                    Expr::Starred(st) => self.expr(&st.value),
                    key => self.expr(key),
                }
            }
            Expr::Starred(_) => {
                self.err(
                    at,
                    "SyntaxError",
                    "can't use starred expression here".to_string(),
                    None,
                );
            }
            Expr::Name(n) => self.name_use(at, n.id.as_str(), n.ctx != ExprContext::Load),
            Expr::List(l) if l.ctx == ExprContext::Load => self.elts(&l.elts),
            Expr::Tuple(t) if t.ctx == ExprContext::Load => self.elts(&t.elts),
            Expr::List(_) | Expr::Tuple(_) => self.target(e, true),
            Expr::Slice(s) => {
                for p in [&s.lower, &s.upper, &s.step].into_iter().flatten() {
                    self.expr(p);
                }
            }
        }
    }

    /// Elements of a display: starred elements are allowed here.
    /// A comprehension's element: `[*a for a in b]` is CPython's
    /// `invalid_comprehension`.
    fn comp_elt(&mut self, elt: &Expr) {
        match elt {
            Expr::Starred(st) => {
                self.err(
                    off(elt),
                    "SyntaxError",
                    "iterable unpacking cannot be used in comprehension".to_string(),
                    None,
                );
                self.expr(&st.value);
            }
            other => self.expr(other),
        }
    }

    fn elts(&mut self, elts: &[Expr]) {
        for v in elts {
            match v {
                Expr::Starred(s) => self.expr(&s.value),
                other => self.expr(other),
            }
        }
    }

    /// The targets of `a` that CPython's `invalid_named_expression` rule
    /// (Grammar/python.gram) reports with "here. Maybe you meant '=='...":
    /// one `=` only, the target (or an element of an unparenthesized tuple
    /// target) not a list, tuple or True/None/False, and the value starting
    /// with a `bitwise_or` (not `lambda`, `not`, `*`, `yield`).
    fn here_targets(&self, a: &ast::StmtAssign) -> Vec<usize> {
        let [t] = &a.targets[..] else {
            return Vec::new();
        };
        let value = self.src.get(off(&*a.value)..).unwrap_or("");
        let word = |w: &str| {
            value
                .strip_prefix(w)
                .is_some_and(|r| !r.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
        };
        if word("lambda") || word("not") || word("yield") || value.starts_with('*') {
            return Vec::new();
        }
        let candidates: Vec<&Expr> = match t {
            Expr::Tuple(tu)
                if !wraps_in_parens(self.src, off(t), u32::from(t.range().end()) as usize) =>
            {
                tu.elts.iter().collect()
            }
            other => vec![other],
        };
        candidates
            .into_iter()
            .filter(|e| {
                // Not a list, tuple or generator, and a `bitwise_or`.
                !matches!(
                    e,
                    Expr::List(_)
                        | Expr::Tuple(_)
                        | Expr::GeneratorExp(_)
                        | Expr::Starred(_)
                        | Expr::Compare(_)
                        | Expr::BoolOp(_)
                        | Expr::IfExp(_)
                        | Expr::Lambda(_)
                        | Expr::NamedExpr(_)
                ) && !matches!(e, Expr::UnaryOp(u) if u.op == UnaryOp::Not) && !matches!(e, Expr::Constant(c) if matches!(c.value, Constant::None | Constant::Bool(_)))
                    && !self.src.get(off(*e)..).is_some_and(|r| r.starts_with('('))
            })
            .map(off)
            .collect()
    }

    /// A chained assignment CPython's parser refuses (an invalid target)
    /// whose first target is followed by `=` and an expression of lower
    /// precedence than `bitwise_or` (`x = a < b = 1`, `x = a if b else c =
    /// 1`): on its second pass `invalid_named_expression` reads the
    /// statement's start as `NAME '=' bitwise_or` not followed by `=` and
    /// raises "Maybe you meant '==' or ':='" at the first target (for a
    /// subscript or attribute there, "cannot assign to subscript here.
    /// Maybe you meant '==' ..."), before `invalid_assignment` names the
    /// invalid target.
    fn chained_named_expression(&self, a: &ast::StmtAssign) -> Option<(usize, String)> {
        let [t0, t1, ..] = &a.targets[..] else {
            return None;
        };
        let t1_text = self.src.get(off(t1)..).unwrap_or("");
        let word = |w: &str| {
            t1_text
                .strip_prefix(w)
                .is_some_and(|r| !r.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
        };
        if word("not") || word("lambda") || word("yield") || t1_text.starts_with('*') {
            return None;
        }
        // Its leading `bitwise_or` is followed by a comparison, `and`,
        // `or`, `if` or a comma, not by the next `=`.
        // Parenthesized (a tuple's range holds its parentheses, a group's
        // does not).
        let parens = |e: &Expr| {
            let (start, end) = (off(e), u32::from(e.range().end()) as usize);
            let before = self
                .src
                .get(..start)
                .and_then(|h| h.trim_end().chars().last());
            let after = self
                .src
                .get(end..)
                .and_then(|t| t.trim_start().chars().next());
            wraps_in_parens(self.src, start, end) || (before == Some('(') && after == Some(')'))
        };
        let lower = matches!(
            t1,
            Expr::Compare(_) | Expr::BoolOp(_) | Expr::IfExp(_) | Expr::Tuple(_)
        ) && !parens(t1);
        if !lower {
            return None;
        }
        // The expression just before the first `=`: the first target, or
        // the last element of an unparenthesized tuple there.
        let c = match t0 {
            Expr::Tuple(t) if !parens(t0) => t.elts.last()?,
            other => other,
        };
        let here = |kind: &str| {
            Some((
                off(c),
                format!("cannot assign to {kind} here. Maybe you meant '==' instead of '='?"),
            ))
        };
        match c {
            Expr::Name(_) if parens(c) => here("name"),
            Expr::Name(_) => Some((
                off(c),
                "invalid syntax. Maybe you meant '==' or ':=' instead of '='?".to_string(),
            )),
            Expr::Attribute(_) => here("attribute"),
            Expr::Subscript(_) => here("subscript"),
            _ => None,
        }
    }

    /// An assignment target (`=`, `for`, comprehension), with CPython's
    /// compile-time rules. `top` is false inside a tuple/list target.
    fn target(&mut self, e: &Expr, top: bool) {
        let at = off(e);
        match e {
            Expr::Name(_) | Expr::Attribute(_) | Expr::Subscript(_) => self.expr(e),
            Expr::Tuple(ast::ExprTuple { elts, .. }) | Expr::List(ast::ExprList { elts, .. }) => {
                let stars = elts
                    .iter()
                    .filter(|x| matches!(x, Expr::Starred(_)))
                    .count();
                if stars > 1 {
                    self.err(
                        at,
                        "SyntaxError",
                        "multiple starred expressions in assignment".to_string(),
                        None,
                    );
                }
                for x in elts {
                    match x {
                        Expr::Starred(s) => self.target(&s.value, false),
                        other => self.target(other, false),
                    }
                }
            }
            Expr::Starred(s) => {
                if top {
                    self.err(
                        at,
                        "SyntaxError",
                        "starred assignment target must be in a list or tuple".to_string(),
                        None,
                    );
                } else {
                    self.target(&s.value, false);
                }
            }
            other => {
                let here = if self.here.contains(&at) {
                    " here. Maybe you meant '==' instead of '='?"
                } else {
                    ""
                };
                self.err(
                    at,
                    "SyntaxError",
                    format!("cannot assign to {}{here}", expr_kind(other)),
                    None,
                )
            }
        }
    }

    fn constant(&mut self, at: usize, e: &Expr, c: &Constant) {
        match c {
            Constant::Bytes(_) => self.forbid(
                at,
                "a bytes literal",
                "bytes are not available; work with str values",
            ),
            Constant::Complex { .. } => {
                self.forbid(at, "a complex number literal", "use int and float values")
            }
            Constant::Ellipsis => {
                self.forbid(at, "`...` (Ellipsis)", "use pass for an empty block")
            }
            // `surrogate::rewrite` turned every lone surrogate escape into a
            // placeholder before parsing; one it missed would reach the
            // parser, which makes it U+FFFD where CPython keeps the
            // surrogate. A safety net: refuse rather than run different text.
            Constant::Str(v) if v.contains('\u{FFFD}') => {
                let r = e.range();
                let start = u32::from(r.start()) as usize;
                let text = self
                    .src
                    .get(start..u32::from(r.end()) as usize)
                    .unwrap_or("");
                if let Some(i) = surrogate_escape(text) {
                    self.err(
                        start + i,
                        "ForbiddenSyntax",
                        "a lone surrogate escape (\\ud800-\\udfff) in a string literal is not supported".to_string(),
                        Some("lackpy strings hold Unicode scalar values only; write the character itself or another code point".to_string()),
                    );
                }
            }
            Constant::Int(_) => {
                let r = e.range();
                let text = self
                    .src
                    .get(u32::from(r.start()) as usize..u32::from(r.end()) as usize)
                    .unwrap_or("");
                let lower = text.to_ascii_lowercase();
                let radix =
                    lower.starts_with("0x") || lower.starts_with("0o") || lower.starts_with("0b");
                if !radix {
                    let digits = text.bytes().filter(u8::is_ascii_digit).count();
                    if digits > MAX_STR_DIGITS {
                        self.err(
                            at,
                            "SyntaxError",
                            format!(
                                "Exceeds the limit ({MAX_STR_DIGITS} digits) for integer string conversion: value has {digits} digits; use sys.set_int_max_str_digits() to increase the limit - Consider hexadecimal for big integer literals to avoid decimal conversion limits."
                            ),
                            None,
                        );
                    }
                }
            }
            _ => {}
        }
    }

    /// The for clauses of a comprehension; from the first clause's target on,
    /// its scope is pushed (the caller pops it after the element).
    fn comprehension(&mut self, gens: &[ast::Comprehension], kind: &'static str, at: usize) {
        for (i, g) in gens.iter().enumerate() {
            if g.is_async {
                self.forbid(
                    off(&g.target),
                    "an async comprehension",
                    "use a plain for clause",
                );
            }
            self.expr(&g.iter);
            if i == 0 {
                self.scopes.push(Scope::Comprehension(kind, at));
            }
            self.target(&g.target, true);
            g.ifs.iter().for_each(|v| self.expr(v));
        }
    }

    fn call(&mut self, c: &ast::ExprCall) {
        let fat = off(&*c.func);
        let mut isinstance = false;
        match &*c.func {
            Expr::Name(n) => {
                let id = n.id.as_str();
                if self.name_ok(fat, id) {
                    if self.is_tool(id) {
                        if !self.calls.iter().any(|x| x == id) {
                            self.calls.push(id.to_string());
                        }
                        self.tool_signature(fat, id, c);
                    } else if is_builtin(id) {
                        isinstance = id == "isinstance";
                    } else if self.assigned.contains(id) {
                        self.err(
                            fat,
                            "UnknownName",
                            format!("'{id}' is a variable, not a tool or builtin; only tools, builtins and methods can be called"),
                            Some(self.tool_list()),
                        );
                    } else {
                        let hint = self.unknown_name_hint(id);
                        self.err(
                            fat,
                            "UnknownName",
                            format!(
                                "'{id}' is not a tool of the active profile or an allowed builtin"
                            ),
                            Some(hint),
                        );
                    }
                }
            }
            Expr::Attribute(a) => {
                let m = a.attr.as_str();
                // Receiver first: its errors sort before the method's at the same offset.
                self.expr(&a.value);
                if self.attr_ok(fat, m) {
                    let ok = match static_type(&a.value) {
                        Some(t) => method_allowed(t, m),
                        None => method_allowed_any(m),
                    };
                    if !ok {
                        let on = static_type(&a.value)
                            .map(|t| format!("{t} "))
                            .unwrap_or_default();
                        let hint = method_hint(m).map(str::to_string).unwrap_or_else(|| {
                            let cands: Vec<&str> = match static_type(&a.value) {
                                Some(t) => tables::METHODS
                                    .iter()
                                    .filter(|(ty, _)| *ty == t || (t == "bool" && *ty == "int"))
                                    .flat_map(|(_, ms)| ms.iter().copied())
                                    .collect(),
                                None => tables::METHODS.iter().flat_map(|(_, ms)| ms.iter().copied()).collect(),
                            };
                            let close = close_matches(m, cands.into_iter());
                            if close.is_empty() {
                                "only allowlisted methods of str, list, dict, set, tuple, range, int and float can be called".to_string()
                            } else {
                                format!("did you mean {}?", close.join(", "))
                            }
                        });
                        self.err(
                            fat,
                            "MethodNotAllowed",
                            format!("{on}method '{m}' is not allowed"),
                            Some(hint),
                        );
                    }
                }
            }
            other => {
                self.forbid(
                    fat,
                    "calling a computed value",
                    "only tools, builtins and methods can be called",
                );
                self.expr(other);
            }
        }
        let n_args = c.args.len() + c.keywords.len();
        for (i, a) in c.args.iter().enumerate() {
            // Type names are values only as `isinstance`'s second argument,
            // or anywhere in a call with the wrong number of arguments (which
            // then raises CPython's arity TypeError).
            if isinstance && (i == 1 || c.args.len() != 2) {
                if self.type_spec(a) {
                    continue;
                }
                if holds_type_name(a, 0) {
                    // Nested tuples are valid in CPython; a list of types
                    // raises its TypeError when called.
                    self.type_display(a, 0);
                    continue;
                }
            }
            if let Expr::GeneratorExp(g) = a {
                let (start, end) = (off(a), usize::from(a.range().end()));
                // Unparenthesized, a generator expression must be the call's
                // only argument, with no trailing comma (`f(x for x in y, )`).
                // `(x) for x in y` starts with a `(` that is not its own.
                if !wraps_in_parens(self.src, start, end)
                    && (n_args > 1 || next_significant(self.src, end) == Some(b','))
                {
                    self.err(
                        off(&*g.elt),
                        "SyntaxError",
                        "Generator expression must be parenthesized".to_string(),
                        None,
                    );
                }
            }
            match a {
                Expr::Starred(s) => self.expr(&s.value),
                other => self.expr(other),
            }
        }
        for k in &c.keywords {
            match &k.arg {
                Some(name) => {
                    let name = name.as_str();
                    if name.starts_with('_') {
                        self.err(
                            off(&k.value),
                            "UnderscoreName",
                            format!("keyword argument '{name}' starts with an underscore"),
                            Some("use names that do not start with '_'".to_string()),
                        );
                    }
                    if name == "key" {
                        self.key_value(&k.value);
                    } else {
                        self.expr(&k.value);
                    }
                }
                None => self.expr(&k.value),
            }
        }
    }

    /// A tool call against the tool's declared arguments: not more
    /// positional arguments than declared, keyword names that exist and
    /// are not given twice; for the shipped tools (all of whose arguments
    /// are required) every argument present. A tool declared without arguments, or a call with `*args`
    /// or `**kwargs`, is not checked (its signature is not known here).
    fn tool_signature(&mut self, at: usize, id: &str, c: &ast::ExprCall) {
        let Some(tool) = self.ns.get(id) else {
            return;
        };
        let declared = &tool.args;
        if declared.is_empty()
            || c.args.iter().any(|a| matches!(a, Expr::Starred(_)))
            || c.keywords.iter().any(|k| k.arg.is_none())
        {
            return;
        }
        let shipped = STR_ARG_TOOLS.contains(&tool.target.as_str());
        let sig = format!("{id}({})", declared.join(", "));
        let n = declared.len();
        let plural = |k: usize| if k == 1 { "" } else { "s" };
        if c.args.len() > n {
            self.err(
                at,
                "ArgumentError",
                format!(
                    "{id}() takes {n} argument{} but {} were given",
                    plural(n),
                    c.args.len()
                ),
                Some(format!("call it as {sig}")),
            );
            return;
        }
        let mut given: Vec<&str> = declared[..c.args.len()]
            .iter()
            .map(String::as_str)
            .collect();
        for k in &c.keywords {
            let Some(name) = k.arg.as_ref().map(|a| a.as_str()) else {
                continue;
            };
            if !declared.iter().any(|d| d == name) {
                self.err(
                    off(&k.value),
                    "ArgumentError",
                    format!("{id}() got an unexpected keyword argument '{name}'"),
                    Some(format!("call it as {sig}")),
                );
                return;
            }
            if given.contains(&name) {
                self.err(
                    off(&k.value),
                    "ArgumentError",
                    format!("{id}() got multiple values for argument '{name}'"),
                    Some(format!("call it as {sig}")),
                );
                return;
            }
            given.push(name);
        }
        if !shipped {
            return;
        }
        let missing: Vec<&str> = declared
            .iter()
            .map(String::as_str)
            .filter(|d| !given.contains(d))
            .collect();
        if !missing.is_empty() {
            self.err(
                at,
                "ArgumentError",
                format!(
                    "{id}() missing {} required argument{}: {}",
                    missing.len(),
                    plural(missing.len()),
                    missing
                        .iter()
                        .map(|m| format!("'{m}'"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Some(format!("call it as {sig}")),
            );
        }
        // Literal argument types are left to the tools' own checks at run
        // time (and to `delegate`'s answer checks, which know the declared
        // types): the supervisor's refusal of a wrongly typed argument is
        // part of the security tests.
    }

    /// `isinstance`'s second argument: a type name or a tuple of them.
    fn type_spec(&self, e: &Expr) -> bool {
        let is_type =
            |e: &Expr| matches!(e, Expr::Name(n) if tables::TYPE_NAMES.contains(&n.id.as_str()));
        match e {
            Expr::Tuple(t) => !t.elts.is_empty() && t.elts.iter().all(is_type),
            other => is_type(other),
        }
    }

    /// A tuple, list or set display holding type names (`(list, (tuple,
    /// str))`, `[int]`, `{int}`) as `isinstance`'s second argument: the type names stand,
    /// every other element is checked as an ordinary expression.
    fn type_display(&mut self, e: &Expr, depth: usize) {
        match e {
            Expr::Name(n) if tables::TYPE_NAMES.contains(&n.id.as_str()) => {}
            Expr::Tuple(ast::ExprTuple { elts, .. })
            | Expr::List(ast::ExprList { elts, .. })
            | Expr::Set(ast::ExprSet { elts, .. })
                if depth < MAX_TYPE_DISPLAY_DEPTH =>
            {
                for x in elts {
                    self.type_display(x, depth + 1);
                }
            }
            other => self.expr(other),
        }
    }

    /// The value of a `key=` keyword: a one-parameter lambda, a builtin name,
    /// a bound allowlisted method, or any ordinary expression.
    fn key_value(&mut self, v: &Expr) {
        let at = off(v);
        match v {
            Expr::Lambda(l) => {
                let a = &l.args;
                let simple = a.posonlyargs.is_empty()
                    && a.args.len() == 1
                    && a.vararg.is_none()
                    && a.kwonlyargs.is_empty()
                    && a.kwarg.is_none()
                    && a.args.iter().all(|p| p.default.is_none());
                if !simple {
                    self.forbid(
                        at,
                        "a key= lambda that does not take exactly one plain parameter",
                        "write key=lambda item: item[\"field\"] (one parameter, no defaults)",
                    );
                    // Still check defaults: they may smuggle forbidden names.
                    for p in a
                        .posonlyargs
                        .iter()
                        .chain(a.args.iter())
                        .chain(a.kwonlyargs.iter())
                    {
                        if let Some(d) = &p.default {
                            self.expr(d);
                        }
                    }
                }
                for p in a
                    .posonlyargs
                    .iter()
                    .chain(a.args.iter())
                    .chain(a.kwonlyargs.iter())
                {
                    self.name_use(off(&p.def), p.def.arg.as_str(), true);
                }
                self.scopes.push(Scope::Lambda);
                self.expr(&l.body);
                self.scopes.pop();
            }
            Expr::Name(n) if is_builtin(n.id.as_str()) && n.ctx == ExprContext::Load => {}
            Expr::Attribute(a) if matches!(&*a.value, Expr::Name(n) if tables::TYPE_NAMES.contains(&n.id.as_str())) =>
            {
                let m = a.attr.as_str();
                self.err(
                    at,
                    "BuiltinAsValue",
                    format!("unbound method '{m}' of a builtin type cannot be used as a key"),
                    Some(format!("write key=lambda v: v.{m}()")),
                );
            }
            Expr::Attribute(a)
                if a.ctx == ExprContext::Load && method_allowed_any(a.attr.as_str()) =>
            {
                if self.attr_ok(at, a.attr.as_str()) {
                    if let Some(t) = static_type(&a.value) {
                        if !method_allowed(t, a.attr.as_str()) {
                            self.err(
                                at,
                                "MethodNotAllowed",
                                format!("{t} method '{}' is not allowed", a.attr.as_str()),
                                None,
                            );
                        }
                    }
                }
                self.expr(&a.value);
            }
            Expr::Attribute(a) if a.ctx == ExprContext::Load => {
                self.expr(&a.value);
                let m = a.attr.as_str();
                if self.attr_ok(at, m) {
                    let hint =
                        method_hint(m).unwrap_or("only allowlisted methods can be used as key=");
                    self.err(
                        at,
                        "MethodNotAllowed",
                        format!("method '{m}' is not allowed"),
                        Some(hint.to_string()),
                    );
                }
            }
            other => self.expr(other),
        }
    }
}

/// How deep [`holds_type_name`] and `Checker::type_display` look into
/// nested displays (the pre-scan bounds the nesting well below it).
const MAX_TYPE_DISPLAY_DEPTH: usize = 64;

/// Whether `e` is a tuple or list display holding a type name, at any
/// depth (as `isinstance`'s second argument).
fn holds_type_name(e: &Expr, depth: usize) -> bool {
    match e {
        Expr::Tuple(ast::ExprTuple { elts, .. })
        | Expr::List(ast::ExprList { elts, .. })
        | Expr::Set(ast::ExprSet { elts, .. })
            if depth < MAX_TYPE_DISPLAY_DEPTH =>
        {
            elts.iter().any(|x| {
                matches!(x, Expr::Name(n) if tables::TYPE_NAMES.contains(&n.id.as_str()))
                    || holds_type_name(x, depth + 1)
            })
        }
        _ => false,
    }
}

/// When CPython 3.11 raises error `e`: 0 its tokenizer or parser (every
/// SyntaxError not named below: invalid targets, generator-expression
/// arguments, unpacking in a comprehension, bad escapes, ...), 1 its
/// symbol table's walk (`'yield' inside ... comprehension`), 2 the symbol
/// table's analysis after it (`nonlocal` at module level), 3 its compiler
/// (`break`/`return`/`yield`/`await` outside their scope, starred targets,
/// a repeated keyword argument). The subset's own errors come after all of
/// them (4): CPython's answer for such a program is its SyntaxError.
pub(crate) fn phase(e: &ErrorInfo) -> u8 {
    if !matches!(
        e.type_name.as_str(),
        "SyntaxError" | "IndentationError" | "TabError"
    ) {
        return 4;
    }
    let m = e.message.as_str();
    if m.starts_with("'yield' inside ") {
        1
    } else if m == "nonlocal declaration not allowed at module level" {
        2
    } else if matches!(
        m,
        "'break' outside loop"
            | "'continue' not properly in loop"
            | "'return' outside function"
            | "'yield' outside function"
            | "'await' outside function"
            | "'await' outside async function"
            | "asynchronous comprehension outside of an asynchronous function"
            | "multiple starred expressions in assignment"
            | "starred assignment target must be in a list or tuple"
            | "can't use starred expression here"
    ) || m.starts_with("keyword argument repeated: ")
    {
        3
    } else {
        0
    }
}
