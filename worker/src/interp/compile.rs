//! Lowering of the validated rustpython AST into the interpreter's own
//! tree: names become slot indices (comprehension and lambda variables get
//! slots of their own, so they never leak), calls are resolved to a
//! builtin, a tool or an allowlisted method, and constants become values.
//!
//! Anything the validator should have rejected is an internal error here;
//! it is never evaluated.

use num_bigint::BigInt;
use rustpython_parser::ast::{self, Ranged};
use std::collections::HashMap;
use std::rc::Rc;

use super::err::{Exc, InterpResult};
use super::methods::Method;
use super::ops::BinOp;
use super::value::Value;

named_enum! {
    /// The builtin functions of the language.
    Builtin:
    Len = "len", Range = "range", Enumerate = "enumerate", Zip = "zip", Sorted = "sorted",
    Reversed = "reversed", Min = "min", Max = "max", Sum = "sum", Any = "any", All = "all",
    Abs = "abs", Round = "round", Str = "str", Int = "int", Float = "float", Bool = "bool",
    List = "list", Dict = "dict", Set = "set", Tuple = "tuple", Isinstance = "isinstance",
    Print = "print", Repr = "repr", SortBy = "sort_by",
}

/// A compiled expression with the byte offset it starts at.
#[derive(Debug)]
pub struct Expr {
    /// What it is.
    pub k: ExprKind,
    /// Source offset (for error lines).
    pub pos: u32,
}

/// Comparison operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompareOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Is,
    IsNot,
    In,
    NotIn,
}

/// Expression kinds.
#[derive(Debug)]
pub enum ExprKind {
    Const(Value),
    Name(u32),
    List(Vec<Elt>),
    Tuple(Vec<Elt>),
    Set(Vec<Elt>),
    Dict(Vec<(Option<Expr>, Expr)>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    Neg(Box<Expr>),
    Pos(Box<Expr>),
    Not(Box<Expr>),
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Cmp(Box<Expr>, Vec<(CompareOp, Expr)>),
    IfExp(Box<Expr>, Box<Expr>, Box<Expr>),
    Sub(Box<Expr>, Box<Expr>),
    Slice(
        Box<Expr>,
        Option<Box<Expr>>,
        Option<Box<Expr>>,
        Option<Box<Expr>>,
    ),
    /// `obj[a, lo:hi]`: a tuple key holding a slice (no lackpy type takes one).
    SliceTuple(Box<Expr>, Vec<KeyPart>),
    Attr(Box<Expr>, Rc<str>),
    Builtin(Builtin, Box<Args>),
    Tool(Rc<str>, Box<Args>),
    Method(Box<Expr>, Method, Box<Args>),
    Comp(Rc<Comp>),
    FStr(Vec<FPart>),
    Lambda(usize),
    BuiltinRef(Builtin),
    MethodRef(Box<Expr>, Method),
}

/// An element of a display or call: plain or `*starred`.
#[derive(Debug)]
pub enum Elt {
    /// A value.
    One(Expr),
    /// `*iterable`.
    Star(Expr),
}

/// Call arguments.
#[derive(Debug, Default)]
pub struct Args {
    /// Positional (possibly starred).
    pub pos: Vec<Elt>,
    /// Keyword (`None` name means `**mapping`).
    pub kw: Vec<(Option<Rc<str>>, Expr)>,
    /// The positional arguments' values when every argument is a plain
    /// positional constant (`w.startswith(('a', 'b'))`, `s.replace('A',
    /// 'x')`, `w.upper()`): a method call passes them borrowed, with no
    /// argument vector to build and drop.
    pub consts: Option<Box<[Value]>>,
}

/// Kind of comprehension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompKind {
    /// `[..]`
    List,
    /// `{..}`
    Set,
    /// `{k: v ..}`
    Dict,
    /// `(..)`
    Gen,
}

/// A comprehension or generator expression.
#[derive(Debug)]
pub struct Comp {
    /// Which kind.
    pub kind: CompKind,
    /// Element (or key, for dicts).
    pub elt: Expr,
    /// Value (dicts only).
    pub val: Option<Expr>,
    /// `for` clauses, outermost first.
    pub gens: Vec<Gen>,
    /// Slots of the variables it binds (saved/restored by lazy generators).
    pub slots: Vec<u32>,
    /// Source offset.
    pub pos: u32,
}

/// One `for target in iter if ...` clause.
#[derive(Debug)]
pub struct Gen {
    /// Loop target.
    pub target: Target,
    /// Where the target is (unpacking errors are located there).
    pub tpos: u32,
    /// Iterable.
    pub iter: Expr,
    /// Conditions.
    pub ifs: Vec<Expr>,
}

/// Part of an f-string.
#[derive(Debug)]
pub enum FPart {
    /// Literal text.
    Lit(Rc<str>),
    /// A replacement field.
    Val(Expr, Option<char>, Option<Vec<FPart>>),
}

/// An item of a subscript tuple that holds a slice (`x[:, 0]`).
#[derive(Debug)]
pub enum KeyPart {
    /// An ordinary item.
    Expr(Expr),
    /// `lo:hi:step`.
    Slice(Option<Expr>, Option<Expr>, Option<Expr>),
}

/// Assignment targets.
#[derive(Debug)]
pub enum Target {
    /// A variable.
    Name(u32),
    /// `obj[idx]`.
    Sub(Expr, Expr),
    /// `obj[lo:hi:step]`.
    Slice(Expr, Option<Expr>, Option<Expr>, Option<Expr>),
    /// `obj[a, lo:hi]`: a tuple key holding a slice.
    SliceTuple(Expr, Vec<KeyPart>),
    /// `a, *b, c` (index of the starred element).
    Unpack(Vec<Target>, Option<usize>),
}

/// Statement kinds.
#[derive(Debug)]
pub enum StmtKind {
    Expr(Expr),
    Assign(Vec<Target>, Expr),
    Aug(Target, BinOp, Expr),
    For(Target, Expr, Vec<Stmt>, Vec<Stmt>),
    If(Expr, Vec<Stmt>, Vec<Stmt>),
    Pass,
    Break,
    Continue,
}

/// A compiled statement.
#[derive(Debug)]
pub struct Stmt {
    /// What it is.
    pub k: StmtKind,
    /// Source offset.
    pub pos: u32,
}

/// A lambda used as a key function.
#[derive(Debug)]
pub struct Lambda {
    /// Slot of its parameter.
    pub param: u32,
    /// Body.
    pub body: Expr,
}

/// A compiled program.
#[derive(Debug)]
pub struct Code {
    /// Statements.
    pub body: Vec<Stmt>,
    /// Number of variable slots.
    pub nslots: usize,
    /// Name of each slot (for NameError).
    pub names: Vec<Rc<str>>,
    /// Lambdas, by index.
    pub lambdas: Vec<Lambda>,
    /// Top-level variables and their slots, in slot order.
    pub globals: Vec<(Rc<str>, u32)>,
}

struct Cx<'a> {
    globals: HashMap<String, u32>,
    scopes: Vec<HashMap<String, u32>>,
    names: Vec<Rc<str>>,
    lambdas: Vec<Lambda>,
    tools: &'a dyn Fn(&str) -> bool,
    /// The program text (for line-sensitive error positions).
    source: &'a str,
    /// Equal constants share one value (see [`Cx::intern`]).
    consts: HashMap<String, Value>,
}

fn bad(what: &str) -> Box<Exc> {
    Exc::internal(format!(
        "construct not supported by the interpreter: {what}"
    ))
}

fn off<N: Ranged>(r: &N) -> u32 {
    u32::from(r.start())
}

impl Cx<'_> {
    /// Where CPython 3.11 locates an attribute access (and a method call
    /// through it) that starts at `start`: the start, unless the attribute
    /// name sits on a later line (`(rows\n  .split(","))`), then the name.
    fn attr_pos(&self, start: u32, a: &ast::ExprAttribute) -> u32 {
        let end = u32::from(a.range.end());
        let name = end.saturating_sub(u32::try_from(a.attr.len()).unwrap_or(0));
        let between = self.source.get(start as usize..name as usize);
        if between.is_some_and(|t| t.contains('\n')) {
            name
        } else {
            start
        }
    }
}

impl<'a> Cx<'a> {
    /// The shared value of constant `v`. CPython's compiler gives equal
    /// constants of one compilation one object, across the module and its
    /// comprehensions and lambdas (its per-compile constant cache):
    /// `x = "a b"; y = "a b"; x is y` is True, so are equal tuples of
    /// constants and equal big ints. Values `is` already compares by value
    /// (None, bools, strings of at most one character, i64, floats) are
    /// left alone.
    fn intern(&mut self, v: Value) -> Value {
        match const_key(&v) {
            Some(key) => self.consts.entry(key).or_insert(v).clone(),
            None => v,
        }
    }

    fn new_slot(&mut self, name: &str) -> u32 {
        let s = self.names.len() as u32;
        self.names.push(Rc::from(name));
        s
    }

    fn lookup(&mut self, name: &str) -> u32 {
        for sc in self.scopes.iter().rev() {
            if let Some(s) = sc.get(name) {
                return *s;
            }
        }
        if let Some(s) = self.globals.get(name) {
            return *s;
        }
        let s = self.new_slot(name);
        self.globals.insert(name.to_string(), s);
        s
    }

    fn stmts(&mut self, body: &[ast::Stmt]) -> InterpResult<Vec<Stmt>> {
        body.iter().map(|s| self.stmt(s)).collect()
    }

    fn stmt(&mut self, s: &ast::Stmt) -> InterpResult<Stmt> {
        let pos = off(s);
        let k = match s {
            ast::Stmt::Expr(e) => StmtKind::Expr(self.expr(&e.value)?),
            ast::Stmt::Assign(a) => {
                let v = self.expr(&a.value)?;
                let ts = a
                    .targets
                    .iter()
                    .map(|t| self.target(t))
                    .collect::<InterpResult<Vec<_>>>()?;
                StmtKind::Assign(ts, v)
            }
            ast::Stmt::AugAssign(a) => {
                let op = binop(&a.op)?;
                let v = self.expr(&a.value)?;
                let t = self.target(&a.target)?;
                if matches!(t, Target::Unpack(..)) {
                    return Err(bad("augmented assignment to a tuple"));
                }
                StmtKind::Aug(t, op, v)
            }
            ast::Stmt::For(f) => {
                let it = self.expr(&f.iter)?;
                let t = self.target(&f.target)?;
                StmtKind::For(t, it, self.stmts(&f.body)?, self.stmts(&f.orelse)?)
            }
            ast::Stmt::If(i) => StmtKind::If(
                self.expr(&i.test)?,
                self.stmts(&i.body)?,
                self.stmts(&i.orelse)?,
            ),
            ast::Stmt::Pass(_) => StmtKind::Pass,
            ast::Stmt::Break(_) => StmtKind::Break,
            ast::Stmt::Continue(_) => StmtKind::Continue,
            _ => return Err(bad("statement")),
        };
        Ok(Stmt { k, pos })
    }

    fn target(&mut self, t: &ast::Expr) -> InterpResult<Target> {
        Ok(match t {
            ast::Expr::Name(n) => Target::Name(self.lookup(n.id.as_str())),
            ast::Expr::Subscript(s) => {
                let obj = self.expr(&s.value)?;
                match &*s.slice {
                    ast::Expr::Slice(sl) => Target::Slice(
                        obj,
                        self.opt(sl.lower.as_deref())?,
                        self.opt(sl.upper.as_deref())?,
                        self.opt(sl.step.as_deref())?,
                    ),
                    other => match self.slice_tuple(other)? {
                        Some(parts) => Target::SliceTuple(obj, parts),
                        None => Target::Sub(obj, self.key(other)?),
                    },
                }
            }
            ast::Expr::Tuple(ast::ExprTuple { elts, .. })
            | ast::Expr::List(ast::ExprList { elts, .. }) => {
                let mut v = Vec::new();
                let mut star = None;
                for (i, e) in elts.iter().enumerate() {
                    if let ast::Expr::Starred(st) = e {
                        if star.is_some() {
                            return Err(bad("multiple starred targets"));
                        }
                        star = Some(i);
                        v.push(self.target(&st.value)?);
                    } else {
                        v.push(self.target(e)?);
                    }
                }
                Target::Unpack(v, star)
            }
            _ => return Err(bad("assignment target")),
        })
    }

    /// Bind the names of a comprehension target in the current (innermost) scope.
    fn bind_target(&mut self, t: &ast::Expr, slots: &mut Vec<u32>) -> InterpResult<()> {
        match t {
            ast::Expr::Name(n) => {
                // A name bound by two clauses (`for x in a for x in x`) is
                // one local of the comprehension, as in CPython.
                if self
                    .scopes
                    .last()
                    .is_some_and(|sc| sc.contains_key(n.id.as_str()))
                {
                    return Ok(());
                }
                let s = self.new_slot(n.id.as_str());
                if let Some(sc) = self.scopes.last_mut() {
                    sc.insert(n.id.to_string(), s);
                }
                slots.push(s);
            }
            ast::Expr::Tuple(ast::ExprTuple { elts, .. })
            | ast::Expr::List(ast::ExprList { elts, .. }) => {
                for e in elts {
                    self.bind_target(e, slots)?;
                }
            }
            ast::Expr::Starred(s) => self.bind_target(&s.value, slots)?,
            _ => {}
        }
        Ok(())
    }

    fn opt(&mut self, e: Option<&ast::Expr>) -> InterpResult<Option<Expr>> {
        e.map(|e| self.expr(e)).transpose()
    }

    /// The items of a subscript key that is a tuple holding a slice
    /// (`x[:, 0]`, `d[1:2, 3]`); `None` for any other key.
    fn slice_tuple(&mut self, key: &ast::Expr) -> InterpResult<Option<Vec<KeyPart>>> {
        let ast::Expr::Tuple(t) = key else {
            return Ok(None);
        };
        if !t.elts.iter().any(|e| matches!(e, ast::Expr::Slice(_))) {
            return Ok(None);
        }
        let mut parts = Vec::with_capacity(t.elts.len());
        for e in &t.elts {
            parts.push(match e {
                ast::Expr::Slice(sl) => KeyPart::Slice(
                    self.opt(sl.lower.as_deref())?,
                    self.opt(sl.upper.as_deref())?,
                    self.opt(sl.step.as_deref())?,
                ),
                other => KeyPart::Expr(self.expr(other)?),
            });
        }
        Ok(Some(parts))
    }

    /// A subscript's key: `d[*k]` (3.11, PEP 646) is `d[(*k,)]`.
    fn key(&mut self, key: &ast::Expr) -> InterpResult<Expr> {
        match key {
            ast::Expr::Starred(s) => Ok(Expr {
                k: ExprKind::Tuple(vec![Elt::Star(self.expr(&s.value)?)]),
                pos: off(key),
            }),
            other => self.expr(other),
        }
    }

    fn exprs(&mut self, es: &[ast::Expr]) -> InterpResult<Vec<Expr>> {
        es.iter().map(|e| self.expr(e)).collect()
    }

    fn boxed(&mut self, e: &ast::Expr) -> InterpResult<Box<Expr>> {
        Ok(Box::new(self.expr(e)?))
    }

    fn elts(&mut self, es: &[ast::Expr]) -> InterpResult<Vec<Elt>> {
        es.iter()
            .map(|e| match e {
                ast::Expr::Starred(s) => Ok(Elt::Star(self.expr(&s.value)?)),
                e => Ok(Elt::One(self.expr(e)?)),
            })
            .collect()
    }

    fn expr(&mut self, e: &ast::Expr) -> InterpResult<Expr> {
        let pos = off(e);
        let k = match e {
            ast::Expr::Constant(c) => ExprKind::Const(self.intern(constant(&c.value)?)),
            ast::Expr::Name(n) => ExprKind::Name(self.lookup(n.id.as_str())),
            ast::Expr::List(l) => ExprKind::List(self.elts(&l.elts)?),
            ast::Expr::Tuple(t) => {
                let es = self.elts(&t.elts)?;
                // Fold all-constant tuples, as CPython does.
                if es.iter().all(|e| {
                    matches!(
                        e,
                        Elt::One(Expr {
                            k: ExprKind::Const(_),
                            ..
                        })
                    )
                }) {
                    let vals = es
                        .into_iter()
                        .filter_map(|e| match e {
                            Elt::One(Expr {
                                k: ExprKind::Const(v),
                                ..
                            }) => Some(v),
                            _ => None,
                        })
                        .collect();
                    ExprKind::Const(self.intern(Value::tuple(vals)))
                } else {
                    ExprKind::Tuple(es)
                }
            }
            ast::Expr::Set(s) => ExprKind::Set(self.elts(&s.elts)?),
            ast::Expr::Dict(d) => {
                let mut items = Vec::new();
                for (k, v) in d.keys.iter().zip(d.values.iter()) {
                    let k = self.opt(k.as_ref())?;
                    items.push((k, self.expr(v)?));
                }
                ExprKind::Dict(items)
            }
            ast::Expr::BinOp(b) => {
                ExprKind::Bin(binop(&b.op)?, self.boxed(&b.left)?, self.boxed(&b.right)?)
            }
            ast::Expr::UnaryOp(u) => {
                let o = self.boxed(&u.operand)?;
                match u.op {
                    ast::UnaryOp::Not => ExprKind::Not(o),
                    ast::UnaryOp::USub => {
                        // Fold negative numeric literals.
                        if let ExprKind::Const(
                            c @ (Value::Int(_) | Value::Float(_) | Value::Big(_)),
                        ) = &o.k
                        {
                            ExprKind::Const(super::ops::neg(c)?)
                        } else {
                            ExprKind::Neg(o)
                        }
                    }
                    ast::UnaryOp::UAdd => ExprKind::Pos(o),
                    ast::UnaryOp::Invert => return Err(bad("~")),
                }
            }
            ast::Expr::BoolOp(b) => {
                let vs = self.exprs(&b.values)?;
                match b.op {
                    ast::BoolOp::And => ExprKind::And(vs),
                    ast::BoolOp::Or => ExprKind::Or(vs),
                }
            }
            ast::Expr::Compare(c) => {
                let left = self.boxed(&c.left)?;
                let mut rest = Vec::new();
                for (op, r) in c.ops.iter().zip(c.comparators.iter()) {
                    let k = match op {
                        ast::CmpOp::Eq => CompareOp::Eq,
                        ast::CmpOp::NotEq => CompareOp::Ne,
                        ast::CmpOp::Lt => CompareOp::Lt,
                        ast::CmpOp::LtE => CompareOp::Le,
                        ast::CmpOp::Gt => CompareOp::Gt,
                        ast::CmpOp::GtE => CompareOp::Ge,
                        ast::CmpOp::Is => CompareOp::Is,
                        ast::CmpOp::IsNot => CompareOp::IsNot,
                        ast::CmpOp::In => CompareOp::In,
                        ast::CmpOp::NotIn => CompareOp::NotIn,
                    };
                    rest.push((k, self.expr(r)?));
                }
                ExprKind::Cmp(left, rest)
            }
            ast::Expr::IfExp(i) => ExprKind::IfExp(
                self.boxed(&i.test)?,
                self.boxed(&i.body)?,
                self.boxed(&i.orelse)?,
            ),
            ast::Expr::Subscript(s) => {
                let obj = self.boxed(&s.value)?;
                match &*s.slice {
                    ast::Expr::Slice(sl) => ExprKind::Slice(
                        obj,
                        self.opt(sl.lower.as_deref())?.map(Box::new),
                        self.opt(sl.upper.as_deref())?.map(Box::new),
                        self.opt(sl.step.as_deref())?.map(Box::new),
                    ),
                    other => match self.slice_tuple(other)? {
                        Some(parts) => ExprKind::SliceTuple(obj, parts),
                        None => ExprKind::Sub(obj, Box::new(self.key(other)?)),
                    },
                }
            }
            ast::Expr::Attribute(a) => {
                let k = ExprKind::Attr(self.boxed(&a.value)?, Rc::from(a.attr.as_str()));
                return Ok(Expr {
                    k,
                    pos: self.attr_pos(pos, a),
                });
            }
            ast::Expr::Call(c) => return self.call(c, pos),
            ast::Expr::ListComp(c) => {
                ExprKind::Comp(self.comp(CompKind::List, &c.elt, None, &c.generators, pos)?)
            }
            ast::Expr::SetComp(c) => {
                ExprKind::Comp(self.comp(CompKind::Set, &c.elt, None, &c.generators, pos)?)
            }
            ast::Expr::GeneratorExp(c) => {
                ExprKind::Comp(self.comp(CompKind::Gen, &c.elt, None, &c.generators, pos)?)
            }
            ast::Expr::DictComp(c) => ExprKind::Comp(self.comp(
                CompKind::Dict,
                &c.key,
                Some(&c.value),
                &c.generators,
                pos,
            )?),
            ast::Expr::JoinedStr(j) => ExprKind::FStr(self.fparts(&j.values)?),
            ast::Expr::FormattedValue(_) => ExprKind::FStr(self.fparts(std::slice::from_ref(e))?),
            ast::Expr::Starred(_) => return Err(bad("starred expression here")),
            _ => return Err(bad("expression")),
        };
        Ok(Expr { k, pos })
    }

    fn fparts(&mut self, vals: &[ast::Expr]) -> InterpResult<Vec<FPart>> {
        let mut out = Vec::new();
        for v in vals {
            match v {
                ast::Expr::Constant(ast::ExprConstant {
                    value: ast::Constant::Str(s),
                    ..
                }) => {
                    if !s.is_empty() {
                        out.push(FPart::Lit(Rc::from(s.as_str())));
                    }
                }
                ast::Expr::FormattedValue(f) => {
                    let e = self.expr(&f.value)?;
                    let conv = match f.conversion {
                        ast::ConversionFlag::None => None,
                        ast::ConversionFlag::Str => Some('s'),
                        ast::ConversionFlag::Repr => Some('r'),
                        ast::ConversionFlag::Ascii => Some('a'),
                    };
                    let spec = match &f.format_spec {
                        Some(sp) => {
                            let mut parts = match &**sp {
                                ast::Expr::JoinedStr(j) => self.fparts(&j.values)?,
                                other => self.fparts(std::slice::from_ref(other))?,
                            };
                            for p in parts.iter_mut() {
                                if let FPart::Lit(t) = p {
                                    if t.contains('\\') {
                                        *t = Rc::from(unescape(t).as_str());
                                    }
                                }
                            }
                            Some(parts)
                        }
                        None => None,
                    };
                    out.push(FPart::Val(e, conv, spec));
                }
                ast::Expr::JoinedStr(j) => out.extend(self.fparts(&j.values)?),
                _ => return Err(bad("f-string part")),
            }
        }
        Ok(out)
    }

    fn comp(
        &mut self,
        kind: CompKind,
        elt: &ast::Expr,
        val: Option<&ast::Expr>,
        gens: &[ast::Comprehension],
        pos: u32,
    ) -> InterpResult<Rc<Comp>> {
        let mut out = Vec::new();
        let mut slots = Vec::new();
        let base = self.scopes.len();
        for (i, g) in gens.iter().enumerate() {
            if g.is_async {
                return Err(bad("async comprehension"));
            }
            // The first iterable is evaluated in the enclosing scope.
            let iter = if i == 0 {
                self.expr(&g.iter)?
            } else {
                Expr {
                    k: ExprKind::Const(Value::None),
                    pos: 0,
                }
            };
            if i == 0 {
                self.scopes.push(HashMap::new());
                // Every target of every clause is a local of the
                // comprehension from its start (CPython's symbol table):
                // a later clause's name read in an earlier clause's
                // condition or a later iterable is an unbound local
                // (`UnboundLocalError`), not the enclosing variable.
                for g in gens {
                    self.bind_target(&g.target, &mut slots)?;
                }
            }
            let iter = if i == 0 { iter } else { self.expr(&g.iter)? };
            let target = self.target(&g.target)?;
            let ifs = self.exprs(&g.ifs)?;
            out.push(Gen {
                target,
                tpos: off(&g.target),
                iter,
                ifs,
            });
        }
        let elt = self.expr(elt)?;
        let val = self.opt(val)?;
        self.scopes.truncate(base);
        Ok(Rc::new(Comp {
            kind,
            elt,
            val,
            gens: out,
            slots,
            pos,
        }))
    }

    fn args(&mut self, c: &ast::ExprCall) -> InterpResult<Args> {
        let mut pos = self.elts(&c.args)?;
        // `f(x for x in xs)`: CPython's generator expression starts at the
        // call's `(` (where its iteration errors are located).
        if let ([ast::Expr::GeneratorExp(g)], [Elt::One(e)]) = (&c.args[..], &mut pos[..]) {
            let start = off(g);
            let before = self.source.get(..start as usize).unwrap_or("");
            let trimmed = before.trim_end();
            let own_paren = self.source.as_bytes().get(start as usize) == Some(&b'(');
            if !own_paren && trimmed.ends_with('(') {
                let paren = u32::try_from(trimmed.len() - 1).unwrap_or(start);
                e.pos = paren;
                if let ExprKind::Comp(comp) = &mut e.k {
                    if let Some(comp) = Rc::get_mut(comp) {
                        comp.pos = paren;
                    }
                }
            }
        }
        let mut kw = Vec::new();
        for k in &c.keywords {
            let name = k.arg.as_ref().map(|a| Rc::from(a.as_str()));
            let is_key = name.as_deref() == Some("key");
            let v = if is_key {
                self.key_func(&k.value)?
            } else {
                self.expr(&k.value)?
            };
            kw.push((name, v));
        }
        let consts = if kw.is_empty() {
            pos.iter()
                .map(|e| match e {
                    Elt::One(Expr {
                        k: ExprKind::Const(v),
                        ..
                    }) => Some(v.clone()),
                    _ => None,
                })
                .collect::<Option<Box<[Value]>>>()
        } else {
            None
        };
        Ok(Args { pos, kw, consts })
    }

    /// A `key=` value: a lambda, a builtin name or a bound method.
    fn key_func(&mut self, e: &ast::Expr) -> InterpResult<Expr> {
        let pos = off(e);
        match e {
            ast::Expr::Lambda(l) => {
                let a = &l.args;
                if a.args.len() + a.posonlyargs.len() != 1
                    || a.vararg.is_some()
                    || a.kwarg.is_some()
                    || !a.kwonlyargs.is_empty()
                {
                    return Err(bad("lambda with other than one parameter"));
                }
                let p = a
                    .posonlyargs
                    .iter()
                    .chain(a.args.iter())
                    .next()
                    .ok_or_else(|| bad("lambda"))?;
                let slot = self.new_slot(p.def.arg.as_str());
                let mut sc = HashMap::new();
                sc.insert(p.def.arg.to_string(), slot);
                self.scopes.push(sc);
                let body = self.expr(&l.body);
                self.scopes.pop();
                let body = body?;
                self.lambdas.push(Lambda { param: slot, body });
                Ok(Expr {
                    k: ExprKind::Lambda(self.lambdas.len() - 1),
                    pos,
                })
            }
            ast::Expr::Name(n) if self.is_unbound_builtin(n.id.as_str()) => {
                let b = Builtin::from_name(n.id.as_str()).ok_or_else(|| bad("key"))?;
                Ok(Expr {
                    k: ExprKind::BuiltinRef(b),
                    pos,
                })
            }
            ast::Expr::Attribute(a) => match Method::from_name(a.attr.as_str()) {
                Some(m) => Ok(Expr {
                    k: ExprKind::MethodRef(self.boxed(&a.value)?, m),
                    pos,
                }),
                None => self.expr(e),
            },
            _ => self.expr(e),
        }
    }

    /// The second argument of `isinstance`: a type name, or a tuple, list or
    /// set display holding type names (nested ones too). The call decides
    /// what is valid: a tuple of types (`isinstance` then raises CPython's
    /// TypeError for a list or a set).
    fn type_expr(&mut self, e: &ast::Expr) -> InterpResult<Option<Expr>> {
        let pos = off(e);
        let is_type = |n: &str| lackpy_policy::lang::TYPE_NAMES.contains(&n);
        match e {
            ast::Expr::Name(n) if is_type(n.id.as_str()) => {
                let b = Builtin::from_name(n.id.as_str()).ok_or_else(|| bad("type"))?;
                Ok(Some(Expr {
                    k: ExprKind::BuiltinRef(b),
                    pos,
                }))
            }
            ast::Expr::Tuple(ast::ExprTuple { elts, .. })
            | ast::Expr::List(ast::ExprList { elts, .. })
            | ast::Expr::Set(ast::ExprSet { elts, .. }) => {
                let mut v = Vec::new();
                for x in elts {
                    match self.type_expr(x)? {
                        Some(te) => v.push(Elt::One(te)),
                        None => match self.elts(std::slice::from_ref(x))?.pop() {
                            Some(elt) => v.push(elt),
                            None => return Err(bad("type")),
                        },
                    }
                }
                let k = if matches!(e, ast::Expr::List(_)) {
                    ExprKind::List(v)
                } else if matches!(e, ast::Expr::Set(_)) {
                    ExprKind::Set(v)
                } else {
                    ExprKind::Tuple(v)
                };
                Ok(Some(Expr { k, pos }))
            }
            _ => Ok(None),
        }
    }

    fn is_unbound_builtin(&self, name: &str) -> bool {
        Builtin::from_name(name).is_some() && !(self.tools)(name)
    }

    fn call(&mut self, c: &ast::ExprCall, mut pos: u32) -> InterpResult<Expr> {
        let k = match &*c.func {
            ast::Expr::Name(n) => {
                let name = n.id.as_str();
                if (self.tools)(name) {
                    // A `key=` function given to a tool is refused when the
                    // call converts its arguments to plain data.
                    ExprKind::Tool(Rc::from(name), Box::new(self.args(c)?))
                } else if let Some(b) = Builtin::from_name(name) {
                    // `key=` is compiled as a function for every callee
                    // (the validator allows it anywhere): those without a
                    // `key` parameter then raise CPython's TypeError.
                    let mut args = self.args(c)?;
                    if b == Builtin::Isinstance {
                        // Type names as the second argument; with the wrong
                        // number of arguments anywhere (the validator allows
                        // them there too), so the call raises CPython's
                        // arity TypeError rather than a NameError.
                        let n = c.args.len();
                        for (i, x) in c.args.iter().enumerate() {
                            if i == 1 || n != 2 {
                                if let (Some(t), Some(slot)) =
                                    (self.type_expr(x)?, args.pos.get_mut(i))
                                {
                                    *slot = Elt::One(t);
                                }
                            }
                        }
                    }
                    ExprKind::Builtin(b, Box::new(args))
                } else {
                    return Err(bad(&format!("call of '{name}'")));
                }
            }
            ast::Expr::Attribute(a) => {
                let recv = self.boxed(&a.value)?;
                // CPython 3.11 locates a method call at its attribute
                // (LOAD_METHOD/CALL), except a call with `*`/`**`
                // arguments (CALL_FUNCTION_EX at the call).
                let spread = c.args.iter().any(|x| matches!(x, ast::Expr::Starred(_)))
                    || c.keywords.iter().any(|k| k.arg.is_none());
                if !spread {
                    pos = self.attr_pos(pos, a);
                }
                match Method::from_name(a.attr.as_str()) {
                    Some(m) => ExprKind::Method(recv, m, Box::new(self.args(c)?)),
                    None => {
                        // Not allowlisted: evaluating it raises AttributeError.
                        ExprKind::Attr(recv, Rc::from(a.attr.as_str()))
                    }
                }
            }
            _ => return Err(bad("call of a non-name")),
        };
        Ok(Expr { k, pos })
    }
}

/// Decode backslash escapes the parser leaves in f-string format specs.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut cs = s.chars().peekable();
    while let Some(c) = cs.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let hex = |cs: &mut std::iter::Peekable<std::str::Chars>, n: usize| -> Option<char> {
            let h: String = (0..n).filter_map(|_| cs.next()).collect();
            u32::from_str_radix(&h, 16).ok().and_then(char::from_u32)
        };
        match cs.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('\\') => out.push('\\'),
            Some('\'') => out.push('\''),
            Some('"') => out.push('"'),
            Some('x') => out.extend(hex(&mut cs, 2)),
            Some('u') => out.extend(hex(&mut cs, 4)),
            Some('U') => out.extend(hex(&mut cs, 8)),
            Some(o) => {
                out.push('\\');
                out.push(o);
            }
            None => out.push('\\'),
        }
    }
    out
}

fn binop(op: &ast::Operator) -> InterpResult<BinOp> {
    Ok(match op {
        ast::Operator::Add => BinOp::Add,
        ast::Operator::Sub => BinOp::Sub,
        ast::Operator::Mult => BinOp::Mul,
        ast::Operator::Div => BinOp::Div,
        ast::Operator::FloorDiv => BinOp::FloorDiv,
        ast::Operator::Mod => BinOp::Mod,
        _ => return Err(bad("operator")),
    })
}

/// The key under which constant `v` is shared (its type and value, as
/// CPython's `_PyCode_ConstantKey`: `1` and `True`, `0.0` and `-0.0` differ),
/// or `None` for values `is` already compares by value.
fn const_key(v: &Value) -> Option<String> {
    fn key(v: &Value, out: &mut String) -> Option<()> {
        use std::fmt::Write as _;
        match v {
            Value::None => out.push('N'),
            Value::Bool(b) => out.push(if *b { 'T' } else { 'F' }),
            Value::Int(i) => write!(out, "i{i};").ok()?,
            Value::Big(b) => write!(out, "b{b};").ok()?,
            Value::Float(f) => write!(out, "f{};", f.to_bits()).ok()?,
            Value::Str(s) => write!(out, "s{}:{}", s.len(), s.as_str()).ok()?,
            Value::Tuple(t) => {
                out.push('(');
                for x in &t.v {
                    key(x, out)?;
                }
                out.push(')');
            }
            _ => return None,
        }
        Some(())
    }
    let shared = match v {
        Value::Str(s) => s.len() > 1,
        Value::Big(_) => true,
        Value::Tuple(t) => !t.v.is_empty(),
        _ => false,
    };
    if !shared {
        return None;
    }
    let mut out = String::new();
    key(v, &mut out)?;
    Some(out)
}

fn constant(c: &ast::Constant) -> InterpResult<Value> {
    Ok(match c {
        ast::Constant::None => Value::None,
        ast::Constant::Bool(b) => Value::Bool(*b),
        ast::Constant::Str(s) => Value::str(s.as_str()),
        ast::Constant::Int(i) => {
            let text = i.to_string();
            match text.parse::<i64>() {
                Ok(v) => Value::Int(v),
                Err(_) => {
                    Value::from_big(text.parse::<BigInt>().map_err(|_| bad("integer literal"))?)
                }
            }
        }
        ast::Constant::Float(f) => Value::Float(*f),
        ast::Constant::Tuple(t) => {
            Value::tuple(t.iter().map(constant).collect::<InterpResult<Vec<_>>>()?)
        }
        _ => return Err(bad("constant")),
    })
}

/// Compile a validated program (`source` is its text, for error
/// positions). `is_tool` says whether a name is a tool.
///
/// # Errors
/// An internal error for a construct the validator should have rejected.
pub fn compile(
    body: &[ast::Stmt],
    source: &str,
    is_tool: &dyn Fn(&str) -> bool,
) -> InterpResult<Code> {
    let mut cx = Cx {
        source,
        globals: HashMap::new(),
        scopes: Vec::new(),
        names: Vec::new(),
        lambdas: Vec::new(),
        tools: is_tool,
        consts: HashMap::new(),
    };
    // Pre-bind every assigned global so `key=len` style checks see them.
    let body = cx.stmts(body)?;
    let mut globals: Vec<(Rc<str>, u32)> = cx
        .globals
        .iter()
        .map(|(n, s)| (Rc::from(n.as_str()), *s))
        .collect();
    globals.sort_by_key(|(_, s)| *s);
    Ok(Code {
        body,
        globals,
        nslots: cx.names.len(),
        names: cx.names,
        lambdas: cx.lambdas,
    })
}
