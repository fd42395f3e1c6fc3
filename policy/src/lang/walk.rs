//! Iterative (non-recursive) traversal of the syntax tree: used for the
//! first pass (identifier normalisation, assigned names, depth measurement)
//! and for dismantling a tree too deep to drop recursively.

use rustpython_parser::ast::{self, Expr, Stmt};

/// A mutable reference to a statement or an expression.
pub(crate) enum NodeMut<'a> {
    /// A statement.
    Stmt(&'a mut Stmt),
    /// An expression.
    Expr(&'a mut Expr),
}

/// The parameters of a signature: the positional-only, plain and
/// keyword-only ones (each with its default), then `*args` and `**kwargs`.
pub(crate) fn params_mut(
    a: &mut ast::Arguments,
) -> (
    impl Iterator<Item = &mut ast::ArgWithDefault>,
    impl Iterator<Item = &mut ast::Arg>,
) {
    let ast::Arguments {
        posonlyargs,
        args,
        vararg,
        kwonlyargs,
        kwarg,
        ..
    } = a;
    let with_defaults = posonlyargs
        .iter_mut()
        .chain(args.iter_mut())
        .chain(kwonlyargs.iter_mut());
    let star = vararg.iter_mut().chain(kwarg.iter_mut()).map(|b| &mut **b);
    (with_defaults, star)
}

fn args_children<'a>(a: &'a mut ast::Arguments, out: &mut Vec<NodeMut<'a>>) {
    let (with_defaults, star) = params_mut(a);
    for awd in with_defaults {
        if let Some(d) = awd.default.as_deref_mut() {
            out.push(NodeMut::Expr(d));
        }
        if let Some(an) = awd.def.annotation.as_deref_mut() {
            out.push(NodeMut::Expr(an));
        }
    }
    for arg in star {
        if let Some(an) = arg.annotation.as_deref_mut() {
            out.push(NodeMut::Expr(an));
        }
    }
}

fn stmts<'a>(v: &'a mut [Stmt], out: &mut Vec<NodeMut<'a>>) {
    out.extend(v.iter_mut().map(NodeMut::Stmt));
}

/// Push each of `es`, in order.
fn push<'a, const N: usize>(out: &mut Vec<NodeMut<'a>>, es: [&'a mut Expr; N]) {
    out.extend(es.map(NodeMut::Expr));
}

fn exprs<'a>(v: &'a mut [Expr], out: &mut Vec<NodeMut<'a>>) {
    out.extend(v.iter_mut().map(NodeMut::Expr));
}

fn opt<'a>(e: &'a mut Option<Box<Expr>>, out: &mut Vec<NodeMut<'a>>) {
    if let Some(e) = e.as_deref_mut() {
        out.push(NodeMut::Expr(e));
    }
}

fn comps<'a>(gens: &'a mut [ast::Comprehension], out: &mut Vec<NodeMut<'a>>) {
    for g in gens {
        push(out, [&mut g.target, &mut g.iter]);
        exprs(&mut g.ifs, out);
    }
}

// The sync and async forms of a statement (and `try`/`try*`) are distinct
// AST types with the same fields: one arm cannot bind both, and a function
// would need a trait over them, so their shared walk is a macro.

/// The children of a `def` or `async def`.
macro_rules! def_children {
    ($f:ident, $out:ident) => {{
        args_children(&mut $f.args, $out);
        stmts(&mut $f.body, $out);
        exprs(&mut $f.decorator_list, $out);
        opt(&mut $f.returns, $out);
    }};
}

/// The children of a `for` or `async for`.
macro_rules! for_children {
    ($f:ident, $out:ident) => {{
        $out.push(NodeMut::Expr(&mut $f.target));
        $out.push(NodeMut::Expr(&mut $f.iter));
        stmts(&mut $f.body, $out);
        stmts(&mut $f.orelse, $out);
    }};
}

/// The children of a list, set or generator comprehension.
macro_rules! comp_children {
    ($c:ident, $out:ident) => {{
        $out.push(NodeMut::Expr(&mut $c.elt));
        comps(&mut $c.generators, $out);
    }};
}

/// The children of a `while` or `if`.
macro_rules! cond_children {
    ($c:ident, $out:ident) => {{
        $out.push(NodeMut::Expr(&mut $c.test));
        stmts(&mut $c.body, $out);
        stmts(&mut $c.orelse, $out);
    }};
}

/// The children of a `with` or `async with`.
macro_rules! with_children {
    ($w:ident, $out:ident) => {{
        for it in &mut $w.items {
            $out.push(NodeMut::Expr(&mut it.context_expr));
            opt(&mut it.optional_vars, $out);
        }
        stmts(&mut $w.body, $out);
    }};
}

/// The children of a `try` or `try*`.
macro_rules! try_children {
    ($t:ident, $out:ident) => {{
        stmts(&mut $t.body, $out);
        for h in &mut $t.handlers {
            let ast::ExceptHandler::ExceptHandler(h) = h;
            opt(&mut h.type_, $out);
            stmts(&mut h.body, $out);
        }
        stmts(&mut $t.orelse, $out);
        stmts(&mut $t.finalbody, $out);
    }};
}

/// Push the direct children of `node` (statements and expressions; match
/// patterns and type parameters are skipped: the pre-scan bounds them).
pub(crate) fn children<'a>(node: NodeMut<'a>, out: &mut Vec<NodeMut<'a>>) {
    match node {
        NodeMut::Stmt(s) => match s {
            Stmt::FunctionDef(f) => def_children!(f, out),
            Stmt::AsyncFunctionDef(f) => def_children!(f, out),
            Stmt::ClassDef(c) => {
                exprs(&mut c.bases, out);
                for k in &mut c.keywords {
                    out.push(NodeMut::Expr(&mut k.value));
                }
                stmts(&mut c.body, out);
                exprs(&mut c.decorator_list, out);
            }
            Stmt::Return(r) => opt(&mut r.value, out),
            Stmt::Delete(d) => exprs(&mut d.targets, out),
            Stmt::Assign(a) => {
                exprs(&mut a.targets, out);
                out.push(NodeMut::Expr(&mut a.value));
            }
            Stmt::TypeAlias(t) => push(out, [&mut t.name, &mut t.value]),
            Stmt::AugAssign(a) => push(out, [&mut a.target, &mut a.value]),
            Stmt::AnnAssign(a) => {
                push(out, [&mut a.target, &mut a.annotation]);
                opt(&mut a.value, out);
            }
            Stmt::For(f) => for_children!(f, out),
            Stmt::AsyncFor(f) => for_children!(f, out),
            Stmt::While(w) => cond_children!(w, out),
            Stmt::If(i) => cond_children!(i, out),
            Stmt::With(w) => with_children!(w, out),
            Stmt::AsyncWith(w) => with_children!(w, out),
            Stmt::Match(m) => {
                out.push(NodeMut::Expr(&mut m.subject));
                for c in &mut m.cases {
                    opt(&mut c.guard, out);
                    stmts(&mut c.body, out);
                }
            }
            Stmt::Raise(r) => {
                opt(&mut r.exc, out);
                opt(&mut r.cause, out);
            }
            Stmt::Try(t) => try_children!(t, out),
            Stmt::TryStar(t) => try_children!(t, out),
            Stmt::Assert(a) => {
                out.push(NodeMut::Expr(&mut a.test));
                opt(&mut a.msg, out);
            }
            Stmt::Expr(e) => out.push(NodeMut::Expr(&mut e.value)),
            // Statements without a child statement or expression.
            Stmt::Import(_) | Stmt::ImportFrom(_) | Stmt::Global(_) | Stmt::Nonlocal(_) => {}
            Stmt::Pass(_) | Stmt::Break(_) | Stmt::Continue(_) => {}
        },
        NodeMut::Expr(e) => match e {
            Expr::BoolOp(b) => exprs(&mut b.values, out),
            Expr::NamedExpr(n) => push(out, [&mut n.target, &mut n.value]),
            Expr::BinOp(b) => push(out, [&mut b.left, &mut b.right]),
            Expr::UnaryOp(u) => out.push(NodeMut::Expr(&mut u.operand)),
            Expr::Lambda(l) => {
                args_children(&mut l.args, out);
                out.push(NodeMut::Expr(&mut l.body));
            }
            Expr::IfExp(i) => push(out, [&mut i.test, &mut i.body, &mut i.orelse]),
            Expr::Dict(d) => {
                for k in d.keys.iter_mut().flatten() {
                    out.push(NodeMut::Expr(k));
                }
                exprs(&mut d.values, out);
            }
            Expr::Set(s) => exprs(&mut s.elts, out),
            Expr::ListComp(c) => comp_children!(c, out),
            Expr::SetComp(c) => comp_children!(c, out),
            Expr::DictComp(c) => {
                push(out, [&mut c.key, &mut c.value]);
                comps(&mut c.generators, out);
            }
            Expr::GeneratorExp(c) => comp_children!(c, out),
            Expr::Await(a) => out.push(NodeMut::Expr(&mut a.value)),
            Expr::Yield(y) => opt(&mut y.value, out),
            Expr::YieldFrom(y) => out.push(NodeMut::Expr(&mut y.value)),
            Expr::Compare(c) => {
                out.push(NodeMut::Expr(&mut c.left));
                exprs(&mut c.comparators, out);
            }
            Expr::Call(c) => {
                out.push(NodeMut::Expr(&mut c.func));
                exprs(&mut c.args, out);
                for k in &mut c.keywords {
                    out.push(NodeMut::Expr(&mut k.value));
                }
            }
            Expr::FormattedValue(f) => {
                out.push(NodeMut::Expr(&mut f.value));
                opt(&mut f.format_spec, out);
            }
            Expr::JoinedStr(j) => exprs(&mut j.values, out),
            Expr::Constant(_) | Expr::Name(_) => {}
            Expr::Attribute(a) => out.push(NodeMut::Expr(&mut a.value)),
            Expr::Subscript(s) => push(out, [&mut s.value, &mut s.slice]),
            Expr::Starred(s) => out.push(NodeMut::Expr(&mut s.value)),
            Expr::List(l) => exprs(&mut l.elts, out),
            Expr::Tuple(t) => exprs(&mut t.elts, out),
            Expr::Slice(s) => {
                opt(&mut s.lower, out);
                opt(&mut s.upper, out);
                opt(&mut s.step, out);
            }
        },
    }
}

fn placeholder_expr() -> Expr {
    Expr::Constant(ast::ExprConstant {
        range: Default::default(),
        value: ast::Constant::None,
        kind: None,
    })
}

fn placeholder_stmt() -> Stmt {
    Stmt::Pass(ast::StmtPass {
        range: Default::default(),
    })
}

enum Owned {
    Stmt(Stmt),
    Expr(Expr),
}

/// Drop a statement list without recursion, however deep the tree.
///
/// Why: the derived `Drop` of a 30,000-deep `-----x` chain recurses once per
/// level and would overflow a thread stack.
pub(crate) fn dismantle(body: Vec<Stmt>) {
    let mut work: Vec<Owned> = body.into_iter().map(Owned::Stmt).collect();
    while let Some(mut node) = work.pop() {
        let mut kids = Vec::new();
        {
            let r = match &mut node {
                Owned::Stmt(s) => NodeMut::Stmt(s),
                Owned::Expr(e) => NodeMut::Expr(e),
            };
            children(r, &mut kids);
            for k in kids {
                match k {
                    NodeMut::Stmt(s) => {
                        work.push(Owned::Stmt(std::mem::replace(s, placeholder_stmt())))
                    }
                    NodeMut::Expr(e) => {
                        work.push(Owned::Expr(std::mem::replace(e, placeholder_expr())))
                    }
                }
            }
        }
        drop(node);
    }
}
