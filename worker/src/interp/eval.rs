//! The evaluator: statements, expressions, iteration, subscripts, calls to
//! tools and key functions, repr/str, and the Value <-> Data boundary.

use num_bigint::BigInt;
use num_traits::{Signed, ToPrimitive};
use std::cell::RefCell;
use std::rc::Rc;

use lackpy_policy::wire::{Data, Limits, MAX_DATA_DEPTH};

use super::budget::{mem_check, mem_check_n, tick};
use super::compile::{
    Args, Code, Comp, CompKind, CompareOp, Elt, Expr, ExprKind, FPart, KeyPart, Stmt, StmtKind,
    Target,
};
use super::err::{type_err, value_err, Exc, ExcKind, InterpResult};
use super::format::{float_repr, format_value, str_repr_into, str_repr_len};
use super::iter::{GenState, Iter};
use super::methods::Method;
use super::ops::{self, binop, compare, eq, BinOp, OrderOp};
use super::value::{hash_value, Dict, DictObj, Func, RangeV, Value, ViewKind, MAX_REPR_REC, SLOT};
use super::{Output, ToolHost};

/// Control flow out of a statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Fall through.
    Normal,
    /// `break`.
    Break,
    /// `continue`.
    Continue,
}

/// Positional arguments, stored inline for small calls (no allocation).
pub type Pos = smallvec::SmallVec<[Value; 3]>;

/// One positional argument, written in place (`smallvec![v]` pushed it
/// through an out-of-line `push`).
#[inline]
pub fn pos1(v: Value) -> Pos {
    // The slots past the length are never read or dropped (None has no drop).
    Pos::from_buf_and_len([v, Value::None, Value::None], 1)
}

/// Two positional arguments, written in place (see [`pos1`]).
#[inline]
pub fn pos2(v: Value, w: Value) -> Pos {
    Pos::from_buf_and_len([v, w, Value::None], 2)
}

/// Evaluated call arguments.
#[derive(Debug, Default)]
pub struct CallArgs {
    /// Positional.
    pub pos: Pos,
    /// Keyword.
    pub kw: Vec<(Rc<str>, Value)>,
}

impl CallArgs {
    /// Refuse keyword arguments.
    ///
    /// # Errors
    /// TypeError naming the function.
    pub fn no_kw(&self, fname: &str) -> InterpResult<()> {
        if !self.kw.is_empty() {
            return Err(type_err(format!("{fname}() takes no keyword arguments")));
        }
        Ok(())
    }
    /// Take a keyword argument by name.
    pub fn take_kw(&mut self, name: &str) -> Option<Value> {
        let i = self.kw.iter().position(|(k, _)| &**k == name)?;
        Some(self.kw.remove(i).1)
    }
    /// Unpack the arguments of a function CPython 3.11 parses with Argument
    /// Clinic (`_PyArg_UnpackKeywords`), with its checks, messages and
    /// order: the first `posonly` parameters are positional-only, `names`
    /// follow (positional-or-keyword up to `maxpos`, keyword-only after),
    /// the first `minpos` are required. Returns one slot per parameter.
    ///
    /// # Errors
    /// CPython's TypeErrors for too many, missing, duplicated or unknown
    /// arguments.
    pub fn clinic(
        &mut self,
        fname: &str,
        posonly: usize,
        names: &[&str],
        minpos: usize,
        maxpos: usize,
    ) -> InterpResult<Vec<Option<Value>>> {
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        let nargs = self.pos.len();
        let total = nargs + self.kw.len();
        let maxargs = posonly + names.len();
        if total > maxargs {
            return Err(type_err(format!(
                "{fname}() takes at most {maxargs} {}argument{} ({total} given)",
                if nargs == 0 { "keyword " } else { "" },
                plural(maxargs)
            )));
        }
        if nargs > maxpos {
            if maxpos == 0 {
                return Err(type_err(format!("{fname}() takes no positional arguments")));
            }
            return Err(type_err(format!(
                "{fname}() takes {} {maxpos} positional argument{} ({nargs} given)",
                if minpos < maxpos {
                    "at most"
                } else {
                    "exactly"
                },
                plural(maxpos)
            )));
        }
        let minposonly = posonly.min(minpos);
        if nargs < minposonly {
            return Err(type_err(format!(
                "{fname}() takes {} {minposonly} positional argument{} ({nargs} given)",
                if minposonly < maxpos {
                    "at least"
                } else {
                    "exactly"
                },
                plural(minposonly)
            )));
        }
        let mut out: Vec<Option<Value>> = std::mem::take(&mut self.pos)
            .into_iter()
            .map(Some)
            .collect();
        for i in out.len()..posonly {
            if i < minpos {
                return Err(type_err(format!(
                    "{fname}() missing required argument (pos {})",
                    i + 1
                )));
            }
            out.push(None);
        }
        for (j, name) in names.iter().enumerate() {
            let i = posonly + j;
            if i < out.len() {
                continue;
            }
            let v = self.take_kw(name);
            if v.is_none() && i < minpos {
                return Err(type_err(format!(
                    "{fname}() missing required argument '{name}' (pos {})",
                    i + 1
                )));
            }
            out.push(v);
        }
        // Leftover keywords: first a parameter given both positionally and
        // by name (in parameter order, whatever the keywords' order), then
        // the first unknown keyword, as `_PyArg_UnpackKeywords` checks.
        if !self.kw.is_empty() {
            let given = names
                .iter()
                .take(nargs.saturating_sub(posonly))
                .position(|n| self.kw.iter().any(|(k, _)| **k == **n));
            if let Some(j) = given {
                return Err(type_err(format!(
                    "argument for {fname}() given by name ('{}') and position ({})",
                    names.get(j).copied().unwrap_or_default(),
                    posonly + j + 1
                )));
            }
        }
        self.no_more_kw(fname)?;
        Ok(out)
    }
    /// Refuse any keyword left over.
    ///
    /// # Errors
    /// TypeError `'x' is an invalid keyword argument for f()`.
    pub fn no_more_kw(&self, fname: &str) -> InterpResult<()> {
        if let Some((k, _)) = self.kw.first() {
            return Err(type_err(format!(
                "'{k}' is an invalid keyword argument for {fname}()"
            )));
        }
        Ok(())
    }
}

/// The interpreter state of one run.
pub struct Interp<'a> {
    /// The compiled program.
    pub code: &'a Code,
    /// Variable slots.
    pub slots: Vec<Option<Value>>,
    /// Tool host.
    pub host: &'a mut dyn ToolHost,
    /// Print sink.
    pub out: &'a mut dyn Output,
    /// Limits of the run.
    pub limits: &'a Limits,
    /// Tool calls made.
    pub tool_calls: u64,
    /// Bytes printed.
    pub out_bytes: u64,
    /// Dynamic nesting (generators, key functions).
    pub depth: u32,
}

/// `d.get(key, default)` without building an argument vector (the same
/// lookup `dict.get` makes: TypeError for an unhashable key).
#[inline]
fn dict_get(d: &DictObj, key: &Value, default: &Value) -> InterpResult<Value> {
    // The default is borrowed, not moved: moving a just-computed value
    // through memory stalls on store forwarding.
    let h = hash_value(key)?;
    Ok(match d.d.borrow().get_h(h, key) {
        Some(v) => v.clone(),
        None => default.clone(),
    })
}

/// Where starred items are unpacked, which words CPython's error for a
/// non-iterable `*x`.
#[derive(Clone, Copy)]
enum Star<'f> {
    /// A list or tuple display (and a call with more than one positional
    /// item): `Value after * must be an iterable`.
    Display,
    /// A set display: `'int' object is not iterable`.
    Set,
    /// The arguments of a call (the callee's name, for a lone `*x`).
    Call(&'f dyn Fn() -> String),
}

fn at(mut e: Box<Exc>, pos: u32) -> Box<Exc> {
    if e.pos.is_none() {
        e.pos = Some(pos);
    }
    e
}

impl<'a> Interp<'a> {
    fn depth_err(&self) -> Box<Exc> {
        Exc::limit(
            "depth",
            format!(
                "depth limit exceeded: evaluation nests deeper than {} levels",
                self.limits.max_depth
            ),
        )
    }

    /// Enter one level of dynamic nesting.
    ///
    /// # Errors
    /// `depth` limit.
    pub fn enter(&mut self) -> InterpResult<()> {
        super::budget::stack_check("")?;
        self.depth += 1;
        if self.depth > self.limits.max_depth.max(1) * 2 {
            self.depth -= 1;
            return Err(self.depth_err());
        }
        Ok(())
    }

    /// Leave a level entered with [`Interp::enter`].
    pub fn leave(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    // ---------------------------------------------------------------- statements

    /// Run a block.
    ///
    /// # Errors
    /// Whatever the statements raise.
    pub fn exec_block(&mut self, body: &[Stmt]) -> InterpResult<Flow> {
        for s in body {
            let f = self.exec(s)?;
            if f != Flow::Normal {
                return Ok(f);
            }
        }
        Ok(Flow::Normal)
    }

    fn exec(&mut self, s: &Stmt) -> InterpResult<Flow> {
        tick(1).map_err(|e| at(e, s.pos))?;
        match &s.k {
            StmtKind::Expr(e) => {
                self.eval(e)?;
            }
            StmtKind::Assign(ts, e) => {
                let v = self.eval(e)?;
                if ts.len() == 1 {
                    self.assign(&ts[0], v).map_err(|e| at(e, s.pos))?;
                } else {
                    for t in ts {
                        self.assign(t, v.clone()).map_err(|e| at(e, s.pos))?;
                    }
                }
            }
            StmtKind::Aug(t, op, e) => self.aug(t, *op, e).map_err(|e| at(e, s.pos))?,
            StmtKind::For(t, it, body, orelse) => {
                let itv = self.eval(it)?;
                // GET_ITER / FOR_ITER errors are located at the `for`.
                let mut iter = self.iterate(&itv).map_err(|e| at(e, s.pos))?;
                drop(itv);
                loop {
                    let Some(v) = self.next_fast(&mut iter).map_err(|e| at(e, s.pos))? else {
                        return self.exec_block(orelse);
                    };
                    tick(1).map_err(|e| at(e, s.pos))?;
                    self.assign(t, v).map_err(|e| at(e, s.pos))?;
                    if self.exec_block(body)? == Flow::Break {
                        break;
                    }
                }
            }
            StmtKind::If(c, body, orelse) => {
                let v = self.eval(c)?;
                return if v.truthy() {
                    self.exec_block(body)
                } else {
                    self.exec_block(orelse)
                };
            }
            StmtKind::Pass => {}
            StmtKind::Break => return Ok(Flow::Break),
            StmtKind::Continue => return Ok(Flow::Continue),
        }
        Ok(Flow::Normal)
    }

    fn aug(&mut self, t: &Target, op: BinOp, e: &Expr) -> InterpResult<()> {
        match t {
            Target::Name(slot) => {
                let mut cur = self.load(*slot)?;
                let rhs = self.eval(e)?;
                if let (BinOp::Add, Value::Str(xs), Value::Str(ys)) = (op, &mut cur, &rhs) {
                    // `s += t`: appended in place when the variable holds
                    // the only other reference (CPython's in-place resize),
                    // so a loop of appends is linear, not quadratic. No
                    // other name or container can see the change.
                    // The slot's reference is dropped first (it is put back
                    // below whatever happens).
                    if let Some(held) = self.slots.get_mut(*slot as usize) {
                        *held = None;
                        if let Some(xm) = Rc::get_mut(xs) {
                            // Memory as for a new str of the whole text (a
                            // grow may move it); fuel for the added bytes.
                            let grown = mem_check((xm.len() + ys.len()) as u64)
                                .and_then(|()| tick(1 + ys.len() as u64 / 256));
                            if grown.is_ok() {
                                xm.append_grow(ys);
                            }
                            *held = Some(cur);
                            return grown;
                        }
                        *held = Some(cur.clone());
                    }
                }
                let v = self.inplace(op, cur, &rhs)?;
                self.slots[*slot as usize] = Some(v);
            }
            Target::Sub(oe, ie) => {
                let obj = self.eval(oe)?;
                let idx = self.eval(ie)?;
                let cur = self.getitem(&obj, &idx)?;
                let rhs = self.eval(e)?;
                let v = self.inplace(op, cur, &rhs)?;
                self.setitem(&obj, idx, v)?;
            }
            Target::Slice(oe, lo, hi, st) => {
                let obj = self.eval(oe)?;
                let (lo, hi, st) = (
                    self.eval_opt(lo.as_ref())?,
                    self.eval_opt(hi.as_ref())?,
                    self.eval_opt(st.as_ref())?,
                );
                let cur = self.get_slice(&obj, &lo, &hi, &st)?;
                let rhs = self.eval(e)?;
                let v = self.inplace(op, cur, &rhs)?;
                self.set_slice(&obj, &lo, &hi, &st, v)?;
            }
            Target::SliceTuple(oe, parts) => {
                let obj = self.eval(oe)?;
                let key = self.slice_tuple_key(parts)?;
                self.slice_tuple_item(&obj, key, None)?;
            }
            Target::Unpack(..) => return Err(Exc::internal("augmented assignment to a tuple")),
        }
        Ok(())
    }

    /// Does CPython's type of `v` have sequence methods (`tp_as_sequence`)
    /// but no repeat? (range, dict, set, dict views.)
    fn sequence_without_repeat(v: &Value) -> bool {
        matches!(v, Value::Range(_) | Value::Dict(_) | Value::Set(_)) || v.as_view().is_some()
    }

    /// `a op= b`: lists extend in place for `+=`.
    fn inplace(&mut self, op: BinOp, cur: Value, rhs: &Value) -> InterpResult<Value> {
        if op == BinOp::Add {
            if let Value::List(l) = &cur {
                if matches!(rhs, Value::Iter(_)) {
                    // list.extend: appended one by one (a generator reading
                    // the list sees it grow).
                    self.items_into(rhs, &mut |v| {
                        l.grow(1);
                        l.v.borrow_mut().push(v);
                        Ok(())
                    })?;
                    return Ok(cur);
                }
                let items = self.collect(rhs)?;
                tick(1 + items.len() as u64 / 8)?;
                mem_check_n(items.len() as u64, SLOT as u64)?;
                l.grow(items.len());
                l.v.borrow_mut().extend(items);
                return Ok(cur);
            }
        }
        if let (BinOp::Mul, Value::List(l)) = (op, &cur) {
            // The count is read only for a list (`None *= 10**20` is a
            // TypeError, not the count's OverflowError).
            if let Some(n) = ops::repeat_count(rhs)? {
                let len = l.v.borrow().len();
                let total = (len as u64).saturating_mul(n as u64);
                mem_check_n(total, SLOT as u64)?;
                tick(1 + total / 16)?;
                let mut v = l.v.borrow_mut();
                if n == 0 || len == 0 {
                    l.shrink(v.len());
                    v.clear();
                } else {
                    let orig: Vec<Value> = v.clone();
                    for _ in 1..n {
                        v.extend(orig.iter().cloned());
                    }
                    l.grow(len * (n - 1));
                }
                drop(v);
                return Ok(cur);
            }
        }
        if let (BinOp::Sub, Value::Set(_), Value::Set(_)) = (op, &cur, rhs) {
            // set_isub: the set itself loses the other's items (other
            // names for it see the change), as difference_update.
            let args = CallArgs {
                pos: std::iter::once(rhs.clone()).collect(),
                kw: Vec::new(),
            };
            self.call_known_method(&cur, super::methods::Method::DifferenceUpdate, args)?;
            return Ok(cur);
        }
        if op == BinOp::Mul && Self::sequence_without_repeat(&cur) {
            // PyNumber_InPlaceMultiply: a left operand with sequence methods
            // but no repeat (range, dict, set, dict views) is never repeated
            // by the right one, as `a * b` would be.
            return Err(type_err(format!(
                "unsupported operand type(s) for *=: '{}' and '{}'",
                cur.type_name(),
                rhs.type_name()
            )));
        }
        let r = if op == BinOp::Sub && (cur.as_view().is_some() || rhs.as_view().is_some()) {
            self.view_sub(&cur, rhs)
        } else {
            binop(op, &cur, rhs)
        };
        r.map_err(|mut e| {
            let pre = format!("unsupported operand type(s) for {}:", op.sym());
            if e.kind == ExcKind::Py("TypeError") && e.msg.starts_with(&pre) {
                e.msg = format!(
                    "unsupported operand type(s) for {}=:{}",
                    op.sym(),
                    &e.msg[pre.len()..]
                );
            }
            e
        })
    }

    /// Assign a value to a target.
    ///
    /// # Errors
    /// Unpacking and item-assignment errors.
    #[inline]
    pub fn assign(&mut self, t: &Target, v: Value) -> InterpResult<()> {
        // Plain names are by far the commonest target: no call for them.
        if let Target::Name(slot) = t {
            if let Some(s) = self.slots.get_mut(*slot as usize) {
                *s = Some(v);
                return Ok(());
            }
        }
        self.assign_slow(t, v)
    }

    fn assign_slow(&mut self, t: &Target, v: Value) -> InterpResult<()> {
        match t {
            Target::Name(slot) => {
                self.slots[*slot as usize] = Some(v);
                Ok(())
            }
            Target::Sub(oe, ie) => {
                let obj = self.eval(oe)?;
                let idx = self.eval(ie)?;
                self.setitem(&obj, idx, v)
            }
            Target::Slice(oe, lo, hi, st) => {
                let obj = self.eval(oe)?;
                let (lo, hi, st) = (
                    self.eval_opt(lo.as_ref())?,
                    self.eval_opt(hi.as_ref())?,
                    self.eval_opt(st.as_ref())?,
                );
                self.set_slice(&obj, &lo, &hi, &st, v)
            }
            Target::SliceTuple(oe, parts) => {
                let obj = self.eval(oe)?;
                let key = self.slice_tuple_key(parts)?;
                self.slice_tuple_item(&obj, key, Some(v))
            }
            Target::Unpack(ts, star) => {
                let items: Vec<Value> = match &v {
                    Value::Tuple(t) => t.v.clone(),
                    Value::List(l) => l.v.borrow().clone(),
                    _ => {
                        if !self.is_iterable(&v) {
                            return Err(type_err(format!(
                                "cannot unpack non-iterable {} object",
                                v.type_name()
                            )));
                        }
                        // Stop early like CPython: at most n+1 items when no star.
                        let mut it = self.iterate(&v)?;
                        let mut out = Vec::new();
                        while let Some(x) = self.next(&mut it)? {
                            out.push(x);
                            if star.is_none() && out.len() > ts.len() {
                                break;
                            }
                        }
                        out
                    }
                };
                match star {
                    None => {
                        if items.len() > ts.len() {
                            return Err(value_err(format!(
                                "too many values to unpack (expected {})",
                                ts.len()
                            )));
                        }
                        if items.len() < ts.len() {
                            return Err(value_err(format!(
                                "not enough values to unpack (expected {}, got {})",
                                ts.len(),
                                items.len()
                            )));
                        }
                        for (t, x) in ts.iter().zip(items) {
                            self.assign(t, x)?;
                        }
                    }
                    Some(si) => {
                        let need = ts.len() - 1;
                        if items.len() < need {
                            return Err(value_err(format!(
                                "not enough values to unpack (expected at least {need}, got {})",
                                items.len()
                            )));
                        }
                        let after = ts.len() - si - 1;
                        let mut items = items;
                        let tail = items.split_off(items.len() - after);
                        let mid = items.split_off(*si);
                        for (t, x) in ts[..*si].iter().zip(items) {
                            self.assign(t, x)?;
                        }
                        self.assign(&ts[*si], Value::list(mid))?;
                        for (t, x) in ts[si + 1..].iter().zip(tail) {
                            self.assign(t, x)?;
                        }
                    }
                }
                Ok(())
            }
        }
    }

    // ---------------------------------------------------------------- expressions

    #[inline]
    fn load(&self, slot: u32) -> InterpResult<Value> {
        match self.slots.get(slot as usize) {
            Some(Some(v)) => Ok(v.clone()),
            _ => {
                let name = self.code.names.get(slot as usize).map_or("?", |n| n);
                // Slots that are not the module's variables belong to a
                // comprehension (or a lambda): read before their clause
                // binds them, they are unbound locals.
                if self.code.globals.iter().all(|(_, s)| *s != slot) {
                    return Err(Exc::py(
                        "UnboundLocalError",
                        format!(
                            "cannot access local variable '{name}' where it is not associated with a value"
                        ),
                    ));
                }
                Err(Exc::py(
                    "NameError",
                    format!("name '{name}' is not defined"),
                ))
            }
        }
    }

    /// The items of a subscript tuple holding a slice, evaluated in order as
    /// CPython builds the tuple (a slice's bounds included); `None` stands
    /// for a slice.
    fn slice_tuple_key(&mut self, parts: &[KeyPart]) -> InterpResult<Vec<Option<Value>>> {
        let mut key = Vec::with_capacity(parts.len());
        for p in parts {
            key.push(match p {
                KeyPart::Expr(e) => Some(self.eval(e)?),
                KeyPart::Slice(lo, hi, st) => {
                    self.eval_opt(lo.as_ref())?;
                    self.eval_opt(hi.as_ref())?;
                    self.eval_opt(st.as_ref())?;
                    None
                }
            });
        }
        Ok(key)
    }

    /// Read (`store` None) or store `obj[key]` for a tuple key holding a
    /// slice, which no lackpy type accepts: a dict hashes the tuple's items
    /// in order (`unhashable type: 'slice'` at the first slice unless an
    /// earlier item fails), anything else fails as for any tuple key
    /// (`list indices must be integers or slices, not tuple`, `'NoneType'
    /// object is not subscriptable`, ...).
    fn slice_tuple_item(
        &mut self,
        obj: &Value,
        key: Vec<Option<Value>>,
        store: Option<Value>,
    ) -> InterpResult<()> {
        if let Value::Dict(_) = obj {
            for k in &key {
                match k {
                    Some(v) => {
                        hash_value(v)?;
                    }
                    None => return Err(type_err("unhashable type: 'slice'")),
                }
            }
        }
        let key = Value::tuple(key.into_iter().map(|k| k.unwrap_or(Value::None)).collect());
        match store {
            None => {
                self.getitem(obj, &key)?;
            }
            Some(v) => self.setitem(obj, key, v)?,
        }
        Err(Exc::internal("a tuple key holding a slice was accepted"))
    }

    fn eval_opt(&mut self, e: Option<&Expr>) -> InterpResult<Value> {
        match e {
            Some(e) => self.eval(e),
            None => Ok(Value::None),
        }
    }

    /// Evaluate an expression.
    ///
    /// # Errors
    /// Whatever it raises, positioned at the innermost expression.
    #[inline]
    pub fn eval(&mut self, e: &Expr) -> InterpResult<Value> {
        match &e.k {
            ExprKind::Const(v) => Ok(v.clone()),
            ExprKind::Name(s) => self.load(*s).map_err(|x| at(x, e.pos)),
            _ => self.eval_slow(e).map_err(|x| at(x, e.pos)),
        }
    }

    /// Evaluate an operand of a binary operator: `Ok(i)` for a small int
    /// (read in place for a name or a constant: no clone), else the value.
    #[inline]
    fn int_operand(&mut self, e: &Expr) -> InterpResult<Result<i64, Value>> {
        let v = match &e.k {
            ExprKind::Const(Value::Int(i)) => return Ok(Ok(*i)),
            ExprKind::Name(s) => match self.slots.get(*s as usize) {
                Some(Some(Value::Int(i))) => return Ok(Ok(*i)),
                _ => self.eval(e)?,
            },
            _ => self.eval(e)?,
        };
        Ok(match v {
            Value::Int(i) => Ok(i),
            v => Err(v),
        })
    }

    fn eval_slow(&mut self, e: &Expr) -> InterpResult<Value> {
        Ok(match &e.k {
            ExprKind::Const(v) => v.clone(),
            ExprKind::Name(s) => self.load(*s)?,
            ExprKind::Bin(op, a, b) => {
                // Small-int arithmetic (`i * 2 + 1`, `i % 37`) without
                // cloning and dropping the operands or calling `binop`.
                let x = self.int_operand(a)?;
                let y = self.int_operand(b)?;
                // Read in place, not moved into a pair first: the pair was
                // written and re-read through the stack (a store-forwarding
                // stall on every `i * 2 + 1` in the profile).
                if let (Ok(xi), Ok(yi)) = (&x, &y) {
                    if let Some(r) = ops::int_binop(*op, *xi, *yi) {
                        return Ok(Value::Int(r));
                    }
                }
                let (mut x, y) = (int_or_value(x), int_or_value(y));
                // `str + str` whose left side is a temporary nothing else
                // holds (`str(i) + ':'`): appended in place when short (the
                // same checks as `binop`; no new object is observable).
                if let (BinOp::Add, Value::Str(xs), Value::Str(ys)) = (*op, &mut x, &y) {
                    if let Some(xm) = Rc::get_mut(xs) {
                        if xm.can_append_inline(ys.len()) {
                            let n = (xm.len() + ys.len()) as u64;
                            mem_check(n)?;
                            tick(1 + n / 256)?;
                            if xm.append_inline(ys) {
                                return Ok(x);
                            }
                        }
                    }
                }
                if *op == BinOp::Sub && (x.as_view().is_some() || y.as_view().is_some()) {
                    self.view_sub(&x, &y)?
                } else {
                    binop(*op, &x, &y)?
                }
            }
            ExprKind::Cmp(first, rest) => {
                let mut left = self.eval(first)?;
                for (i, (op, re)) in rest.iter().enumerate() {
                    let right = self.eval(re)?;
                    let ok = self.cmp(*op, &left, &right)?;
                    if !ok {
                        return Ok(Value::Bool(false));
                    }
                    if i + 1 < rest.len() {
                        left = right;
                    }
                }
                Value::Bool(true)
            }
            ExprKind::And(vs) => {
                let mut last = Value::None;
                for v in vs {
                    last = self.eval(v)?;
                    if !last.truthy() {
                        return Ok(last);
                    }
                }
                last
            }
            ExprKind::Or(vs) => {
                let mut last = Value::None;
                for v in vs {
                    last = self.eval(v)?;
                    if last.truthy() {
                        return Ok(last);
                    }
                }
                last
            }
            ExprKind::Not(x) => Value::Bool(!self.eval(x)?.truthy()),
            ExprKind::Neg(x) => ops::neg(&self.eval(x)?)?,
            ExprKind::Pos(x) => ops::pos(&self.eval(x)?)?,
            ExprKind::IfExp(c, a, b) => {
                if self.eval(c)?.truthy() {
                    self.eval(a)?
                } else {
                    self.eval(b)?
                }
            }
            ExprKind::List(es) => Value::list(self.elts(es)?),
            ExprKind::Tuple(es) => Value::tuple(self.elts(es)?),
            ExprKind::Set(es) => {
                let items = self.elts_in(es, Star::Set)?;
                let mut d = Dict::new();
                for x in items {
                    d.insert(x, Value::None)?;
                }
                // 3 or more constants: CPython builds a frozenset constant
                // and merges it into the new set.
                if es.len() >= 3 && es.iter().all(const_elt) {
                    Value::set_display(d)
                } else {
                    Value::set(d)
                }
            }
            ExprKind::Dict(items) => {
                let mut d = Dict::new();
                for (k, v) in items {
                    match k {
                        Some(k) => {
                            let kv = self.eval(k)?;
                            let vv = self.eval(v)?;
                            // BUILD_MAP: located at the display.
                            d.insert(kv, vv)?;
                        }
                        None => {
                            let m = self.eval(v)?;
                            self.merge_mapping(&mut d, &m)?;
                        }
                    }
                }
                Value::dict(d)
            }
            ExprKind::Sub(o, i) => {
                let obj = self.eval(o)?;
                let idx = self.eval(i)?;
                self.getitem(&obj, &idx)?
            }
            ExprKind::Slice(o, lo, hi, st) => {
                let obj = self.eval(o)?;
                let lo = self.eval_opt(lo.as_deref())?;
                let hi = self.eval_opt(hi.as_deref())?;
                let st = self.eval_opt(st.as_deref())?;
                self.get_slice(&obj, &lo, &hi, &st)?
            }
            ExprKind::SliceTuple(o, parts) => {
                let obj = self.eval(o)?;
                let key = self.slice_tuple_key(parts)?;
                self.slice_tuple_item(&obj, key, None)?;
                return Err(Exc::internal("a tuple key holding a slice was accepted"));
            }
            ExprKind::Attr(o, name) => {
                let obj = self.eval(o)?;
                return Err(Exc::py(
                    "AttributeError",
                    format!("'{}' object has no attribute '{name}'", obj.type_name()),
                ));
            }
            ExprKind::Builtin(b, args) => {
                tick(1)?;
                if let ([Elt::One(x)], true) = (args.pos.as_slice(), args.kw.is_empty()) {
                    let v = self.eval(x)?;
                    if let Some(r) = fast_builtin1(*b, &v) {
                        return r;
                    }
                    return self.call_builtin(
                        *b,
                        CallArgs {
                            pos: pos1(v),
                            kw: Vec::new(),
                        },
                    );
                }
                let a = self.args(args, &|| b.name().to_string())?;
                self.call_builtin(*b, a)?
            }
            ExprKind::Tool(name, args) => {
                tick(1)?;
                let a = self.args(args, &|| name.to_string())?;
                self.call_tool(name, a)?
            }
            ExprKind::Method(recv, m, args) => {
                if let Some(cs) = &args.consts {
                    return self.method_const_args(recv, *m, cs);
                }
                tick(1)?;
                let r = self.eval(recv)?;
                // LOAD_METHOD comes before the arguments: a missing method
                // is an AttributeError even when an argument would raise.
                if !super::methods::has_method(&r, *m) {
                    return Err(Exc::py(
                        "AttributeError",
                        format!("'{}' object has no attribute '{}'", r.type_name(), m.name()),
                    ));
                }
                let a = match (args.pos.as_slice(), args.kw.is_empty()) {
                    ([], true) => CallArgs::default(),
                    ([Elt::One(x)], true) => {
                        let v = self.eval(x)?;
                        // `d.get(k)`: looked up here, no argument vector.
                        if let (Method::Get, Value::Dict(d)) = (*m, &r) {
                            return dict_get(d, &v, &Value::None);
                        }
                        CallArgs {
                            pos: pos1(v),
                            kw: Vec::new(),
                        }
                    }
                    ([Elt::One(x), Elt::One(y)], true) => {
                        let v = self.eval(x)?;
                        let w = self.eval(y)?;
                        // `d.get(k, default)` (the counting idiom).
                        if let (Method::Get, Value::Dict(d)) = (*m, &r) {
                            return dict_get(d, &v, &w);
                        }
                        CallArgs {
                            pos: pos2(v, w),
                            kw: Vec::new(),
                        }
                    }
                    _ => {
                        let a = self.args(args, &|| format!("{}.{}", r.type_name(), m.name()))?;
                        // `x.m(*args)` / `x.m(**kw)`: CPython 3.11 calls the bound method.
                        let bound = args.pos.iter().any(|e| matches!(e, Elt::Star(_)))
                            || args.kw.iter().any(|(n, _)| n.is_none());
                        if bound {
                            super::methods::bound_call_checks(&r, *m, &a)?;
                        }
                        a
                    }
                };
                let mut r = r;
                if let Value::Str(rs) = &mut r {
                    if let Some(ps) = Rc::get_mut(rs) {
                        if let Some(done) =
                            super::methods::str_method_in_place(ps, *m, &a.pos, a.kw.is_empty())
                        {
                            return done.map(|()| r);
                        }
                    }
                }
                self.call_known_method(&r, *m, a)?
            }
            ExprKind::Comp(c) => self.comprehension(c)?,
            ExprKind::FStr(parts) => {
                let mut s = String::new();
                self.fstring(parts, &mut s)?;
                Value::str(s)
            }
            ExprKind::Lambda(i) => Value::Func(Rc::new(Func::Lambda(*i))),
            ExprKind::BuiltinRef(b) => Value::Func(Rc::new(Func::Builtin(*b))),
            ExprKind::MethodRef(recv, m) => {
                let r = self.eval(recv)?;
                if !super::methods::has_method(&r, *m) {
                    return Err(Exc::py(
                        "AttributeError",
                        format!("'{}' object has no attribute '{}'", r.type_name(), m.name()),
                    ));
                }
                Value::Func(Rc::new(Func::Method(r, *m)))
            }
        })
    }

    /// A method call whose arguments are all constants (`w.startswith(('a',
    /// 'b'))`, `w.upper()`, `d.get('k', 0)`): on a variable holding a str,
    /// the receiver is read in place; a temporary str is rewritten in place
    /// (`w.upper().replace('A', 'x')`) and `d.get` looks up with the
    /// constants borrowed; the rest get copies. The same order, ticks and
    /// errors as the general arm. Out of line: `eval_slow`'s stack frame,
    /// which every nested expression pays for, stays as it was.
    #[inline(never)]
    fn method_const_args(&mut self, recv: &Expr, m: Method, cs: &[Value]) -> InterpResult<Value> {
        if let ExprKind::Name(s) = recv.k {
            if let Some(Some(rv @ Value::Str(ps))) = self.slots.get(s as usize) {
                if let Some(r) = super::methods::str_method_borrowed(rv, ps, m, cs) {
                    return r;
                }
            }
        }
        tick(1)?;
        let mut r = self.eval(recv)?;
        // LOAD_METHOD comes before the arguments (see the general arm).
        if !super::methods::has_method(&r, m) {
            return Err(Exc::py(
                "AttributeError",
                format!("'{}' object has no attribute '{}'", r.type_name(), m.name()),
            ));
        }
        if let Value::Str(rs) = &mut r {
            if let Some(ps) = Rc::get_mut(rs) {
                if let Some(done) = super::methods::str_method_in_place(ps, m, cs, true) {
                    return done.map(|()| r);
                }
            }
        }
        if let (Method::Get, Value::Dict(d)) = (m, &r) {
            match cs {
                [k] => return dict_get(d, k, &Value::None),
                [k, w] => return dict_get(d, k, w),
                _ => {}
            }
        }
        let a = CallArgs {
            pos: cs.iter().cloned().collect(),
            kw: Vec::new(),
        };
        self.call_known_method(&r, m, a)
    }

    fn elts(&mut self, es: &[Elt]) -> InterpResult<Vec<Value>> {
        self.elts_in(es, Star::Display)
    }

    fn elts_in(&mut self, es: &[Elt], star: Star<'_>) -> InterpResult<Vec<Value>> {
        let mut out = Vec::with_capacity(es.len());
        for e in es {
            match e {
                Elt::One(x) => out.push(self.eval(x)?),
                Elt::Star(x) => {
                    let v = self.eval(x)?;
                    if !self.is_iterable(&v) {
                        let what = match star {
                            Star::Call(f) if es.len() == 1 => format!("{}() argument after *", f()),
                            Star::Set => {
                                return Err(type_err(format!(
                                    "'{}' object is not iterable",
                                    v.type_name()
                                )))
                            }
                            _ => "Value after *".to_string(),
                        };
                        // LIST_EXTEND / CALL_FUNCTION_EX: located at the
                        // display or call, not at the starred value.
                        return Err(type_err(format!(
                            "{what} must be an iterable, not {}",
                            v.type_name()
                        )));
                    }
                    let items = self.collect(&v)?;
                    // Every starred part adds to one vector: the whole of it
                    // (and the part being copied in) counts, not each part alone.
                    mem_check_n(
                        (out.len() as u64).saturating_add(2 * items.len() as u64),
                        SLOT as u64,
                    )?;
                    out.extend(items);
                }
            }
        }
        Ok(out)
    }

    fn args(&mut self, a: &Args, callee: &dyn Fn() -> String) -> InterpResult<CallArgs> {
        let mut pos = Pos::new();
        if a.pos.iter().all(|e| matches!(e, Elt::One(_))) {
            for e in &a.pos {
                if let Elt::One(x) = e {
                    pos.push(self.eval(x)?);
                }
            }
        } else {
            pos.extend(self.elts_in(&a.pos, Star::Call(callee))?);
        }
        let mut kw = Vec::with_capacity(a.kw.len());
        for (name, e) in &a.kw {
            let v = self.eval(e)?;
            match name {
                Some(n) => {
                    if kw.iter().any(|(k, _): &(Rc<str>, Value)| k == n) {
                        return Err(type_err(format!(
                            "{}() got multiple values for keyword argument '{n}'",
                            callee()
                        )));
                    }
                    kw.push((n.clone(), v))
                }
                None => match &v {
                    Value::Dict(d) => {
                        for (k, x) in d.d.borrow().iter() {
                            match k {
                                Value::Str(s) => {
                                    if kw.iter().any(|(k, _)| **k == *s.as_str()) {
                                        return Err(type_err(format!(
                                            "{}() got multiple values for keyword argument '{}'",
                                            callee(),
                                            s.as_str()
                                        )));
                                    }
                                    kw.push((Rc::from(s.as_str()), x.clone()))
                                }
                                _ => return Err(type_err("keywords must be strings")),
                            }
                        }
                    }
                    _ => {
                        return Err(type_err(format!(
                            "{}() argument after ** must be a mapping, not {}",
                            callee(),
                            v.type_name()
                        )))
                    }
                },
            }
        }
        Ok(CallArgs { pos, kw })
    }

    fn merge_mapping(&mut self, d: &mut Dict, m: &Value) -> InterpResult<()> {
        match m {
            Value::Dict(src) => {
                let src = src.d.borrow();
                tick(1 + src.len() as u64)?;
                mem_check_n(src.len() as u64, super::value::ENTRY as u64)?;
                d.merge_from(&src);
                Ok(())
            }
            _ => Err(type_err(format!(
                "'{}' object is not a mapping",
                m.type_name()
            ))),
        }
    }

    fn cmp(&mut self, op: CompareOp, a: &Value, b: &Value) -> InterpResult<bool> {
        Ok(match op {
            CompareOp::Eq => eq(a, b)?,
            CompareOp::Ne => !eq(a, b)?,
            CompareOp::Lt => compare(OrderOp::Lt, a, b)?,
            CompareOp::Le => compare(OrderOp::Le, a, b)?,
            CompareOp::Gt => compare(OrderOp::Gt, a, b)?,
            CompareOp::Ge => compare(OrderOp::Ge, a, b)?,
            CompareOp::Is => a.is(b),
            CompareOp::IsNot => !a.is(b),
            CompareOp::In => self.contains(b, a)?,
            CompareOp::NotIn => !self.contains(b, a)?,
        })
    }

    /// `x in container`.
    ///
    /// # Errors
    /// TypeError for non-containers.
    pub fn contains(&mut self, container: &Value, x: &Value) -> InterpResult<bool> {
        match container {
            Value::List(l) => {
                let n = l.v.borrow().len();
                let mut i = 0;
                while i < n {
                    let item = match l.v.borrow().get(i) {
                        Some(v) => v.clone(),
                        None => break,
                    };
                    tick(1)?;
                    if item.is(x) || eq(&item, x)? {
                        return Ok(true);
                    }
                    i += 1;
                }
                Ok(false)
            }
            Value::Tuple(t) => {
                for item in &t.v {
                    tick(1)?;
                    if item.is(x) || eq(item, x)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Value::Str(s) => match x {
                Value::Str(sub) => {
                    tick(1 + s.len() as u64 / 64)?;
                    Ok(s.as_str().contains(sub.as_str()))
                }
                _ => Err(type_err(format!(
                    "'in <string>' requires string as left operand, not {}",
                    x.type_name()
                ))),
            },
            Value::Dict(d) | Value::Keys(d) => d.d.borrow().contains(x),
            // CPython looks a set up as a frozenset; no set holds one.
            Value::Set(_) if matches!(x, Value::Set(_)) => Ok(false),
            Value::Set(s) => s.d.borrow().contains(x),
            Value::Items(d) => {
                let Value::Tuple(t) = x else { return Ok(false) };
                if t.v.len() != 2 {
                    return Ok(false);
                }
                let d = d.d.borrow();
                match d.get(&t.v[0])? {
                    Some(v) => Ok(v.is(&t.v[1]) || eq(v, &t.v[1])?),
                    None => Ok(false),
                }
            }
            Value::Range(r) => {
                let i: i128 = match x {
                    Value::Int(i) => *i as i128,
                    Value::Bool(b) => *b as i128,
                    Value::Float(f) if f.fract() == 0.0 && f.abs() < 1e30 => *f as i128,
                    Value::Big(b) => match b.to_i128() {
                        Some(v) => v,
                        None => return Ok(false),
                    },
                    Value::Float(_) => return Ok(false),
                    other => {
                        // CPython falls back to iteration with ==.
                        let _ = other;
                        return Ok(false);
                    }
                };
                let (start, stop, step) = (r.start, r.stop, r.step);
                let inside = if step > 0 {
                    i >= start && i < stop
                } else {
                    i <= start && i > stop
                };
                Ok(inside && (i - start) % step == 0)
            }
            Value::Values(_) | Value::Iter(_) => {
                let mut it = self.iterate(container)?;
                while let Some(item) = self.next(&mut it)? {
                    tick(1)?;
                    if item.is(x) || eq(&item, x)? {
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            _ => Err(type_err(format!(
                "argument of type '{}' is not iterable",
                container.type_name()
            ))),
        }
    }

    // ---------------------------------------------------------------- subscripts

    /// `obj[idx]`.
    ///
    /// # Errors
    /// IndexError, KeyError, TypeError as CPython.
    pub fn getitem(&mut self, obj: &Value, idx: &Value) -> InterpResult<Value> {
        match obj {
            Value::List(l) => {
                let l = l.v.borrow();
                let i = seq_index(idx, l.len(), "list")?;
                l.get(i)
                    .cloned()
                    .ok_or_else(|| Exc::py("IndexError", "list index out of range"))
            }
            Value::Tuple(t) => {
                let i = seq_index(idx, t.v.len(), "tuple")?;
                t.v.get(i)
                    .cloned()
                    .ok_or_else(|| Exc::py("IndexError", "tuple index out of range"))
            }
            Value::Str(s) => {
                let i = match idx {
                    Value::Int(_) | Value::Bool(_) | Value::Big(_) => {
                        seq_index(idx, s.nchars, "string")?
                    }
                    _ => {
                        return Err(type_err(format!(
                            "string indices must be integers, not '{}'",
                            idx.type_name()
                        )))
                    }
                };
                let c = s
                    .char_at(i)
                    .ok_or_else(|| Exc::py("IndexError", "string index out of range"))?;
                Ok(Value::str(c))
            }
            Value::Dict(d) => {
                let d = d.d.borrow();
                match d.get(idx)? {
                    Some(v) => Ok(v.clone()),
                    None => Err(Exc::py("KeyError", self.repr(idx)?)),
                }
            }
            Value::Range(r) => {
                let oob = || Exc::py("IndexError", "range object index out of range");
                let i: i128 = match idx {
                    Value::Int(i) => *i as i128,
                    Value::Bool(b) => *b as i128,
                    Value::Big(b) => b.to_i128().ok_or_else(oob)?,
                    _ => {
                        return Err(type_err(format!(
                            "range indices must be integers or slices, not {}",
                            idx.type_name()
                        )))
                    }
                };
                let n = r.len128();
                let i = if i < 0 { i + n } else { i };
                if i < 0 || i >= n {
                    return Err(oob());
                }
                Ok(Value::from_i128(r.start + r.step * i))
            }
            _ => Err(type_err(format!(
                "'{}' object is not subscriptable",
                obj.type_name()
            ))),
        }
    }

    fn setitem(&mut self, obj: &Value, idx: Value, v: Value) -> InterpResult<()> {
        match obj {
            Value::List(l) => {
                let mut l = l.v.borrow_mut();
                let n = l.len();
                let i = match idx {
                    // An index beyond a C ssize_t cannot be converted at all.
                    Value::Big(ref b) if b.to_i64().is_none() => {
                        return Err(Exc::py(
                            "IndexError",
                            "cannot fit 'int' into an index-sized integer",
                        ))
                    }
                    Value::Int(_) | Value::Bool(_) | Value::Big(_) => seq_index(&idx, n, "list")
                        .map_err(|_| Exc::py("IndexError", "list assignment index out of range"))?,
                    _ => {
                        return Err(type_err(format!(
                            "list indices must be integers or slices, not {}",
                            idx.type_name()
                        )))
                    }
                };
                match l.get_mut(i) {
                    Some(slot) => {
                        let old = std::mem::replace(slot, v);
                        drop(l);
                        drop(old);
                        Ok(())
                    }
                    None => Err(Exc::py("IndexError", "list assignment index out of range")),
                }
            }
            Value::Dict(d) => {
                let h = hash_value(&idx)?;
                d.d.borrow_mut().insert_h(h, idx, v);
                Ok(())
            }
            // CPython's PyObject_SetItem converts an int key to a C ssize_t
            // for any type with sequence methods (str, tuple, range, set,
            // dict views) before finding that it cannot assign.
            Value::Str(_)
            | Value::Tuple(_)
            | Value::Range(_)
            | Value::Set(_)
            | Value::Keys(_)
            | Value::Values(_)
            | Value::Items(_)
                if matches!(idx, Value::Big(_)) =>
            {
                Err(Exc::py(
                    "IndexError",
                    "cannot fit 'int' into an index-sized integer",
                ))
            }
            _ => Err(type_err(format!(
                "'{}' object does not support item assignment",
                obj.type_name()
            ))),
        }
    }

    fn get_slice(
        &mut self,
        obj: &Value,
        lo: &Value,
        hi: &Value,
        st: &Value,
    ) -> InterpResult<Value> {
        match obj {
            Value::List(l) => {
                let l = l.v.borrow();
                let (start, step, len) = slice_plan(lo, hi, st, l.len())?;
                tick(1 + len as u64 / 16)?;
                mem_check_n(len as u64, SLOT as u64)?;
                let items = (0..len).filter_map(|k| l.get(slice_at(start, step, k)).cloned());
                Ok(Value::list(items.collect()))
            }
            Value::Tuple(t) => {
                let (start, step, len) = slice_plan(lo, hi, st, t.v.len())?;
                tick(1 + len as u64 / 16)?;
                mem_check_n(len as u64, SLOT as u64)?;
                let items = (0..len).filter_map(|k| t.v.get(slice_at(start, step, k)).cloned());
                Ok(Value::tuple(items.collect()))
            }
            Value::Str(s) => {
                let (start, stop, step) = slice_adjust(lo, hi, st, s.nchars)?;
                tick(1 + s.len() as u64 / 64)?;
                if step == 1 {
                    if start >= stop {
                        return Ok(Value::str(""));
                    }
                    let (a, b) = (s.byte_offset(start as usize), s.byte_offset(stop as usize));
                    return Ok(Value::str(&s.as_str()[a..b]));
                }
                // Built straight from the text (no per-character index or
                // char vectors): at most 4 bytes a character, and never more
                // than the whole text.
                let len = slice_len(start, stop, step);
                mem_check(
                    (len as u64)
                        .saturating_mul(4)
                        .min(s.len() as u64)
                        .saturating_add(super::value::OBJ as u64),
                )?;
                let text: String = if s.is_ascii() {
                    let b = s.as_bytes();
                    (0..len)
                        .filter_map(|k| b.get(slice_at(start, step, k)).map(|c| char::from(*c)))
                        .collect()
                } else if step > 0 {
                    s.as_str()
                        .chars()
                        .skip(start as usize)
                        .step_by(step as usize)
                        .take(len)
                        .collect()
                } else {
                    s.as_str()
                        .chars()
                        .rev()
                        .skip(s.nchars.saturating_sub(1).saturating_sub(start as usize))
                        .step_by(step.unsigned_abs() as usize)
                        .take(len)
                        .collect()
                };
                Ok(Value::str(text))
            }
            Value::Range(r) => {
                let (start, stop, step) = slice_adjust128(lo, hi, st, r.len128())?;
                let n = if step > 0 {
                    if stop > start {
                        (stop - start - 1) / step + 1
                    } else {
                        0
                    }
                } else if start > stop {
                    (start - stop - 1) / (-step) + 1
                } else {
                    0
                };
                let nstart = r.start + start * r.step;
                let nstep = r.step * step;
                let _ = n;
                let nstop = r.start + stop * r.step;
                Ok(Value::Range(Rc::new(RangeV {
                    start: nstart,
                    stop: nstop,
                    step: nstep,
                })))
            }
            Value::Dict(_) => Err(type_err("unhashable type: 'slice'")),
            _ => Err(type_err(format!(
                "'{}' object is not subscriptable",
                obj.type_name()
            ))),
        }
    }

    fn set_slice(
        &mut self,
        obj: &Value,
        lo: &Value,
        hi: &Value,
        st: &Value,
        v: Value,
    ) -> InterpResult<()> {
        let Value::List(l) = obj else {
            // A dict hashes the key, and slices are unhashable.
            if matches!(obj, Value::Dict(_)) {
                return Err(type_err("unhashable type: 'slice'"));
            }
            return Err(type_err(format!(
                "'{}' object does not support item assignment",
                obj.type_name()
            )));
        };
        // CPython checks the slice (types, a zero step) before the value.
        let (_, _, step) = slice_adjust(lo, hi, st, l.v.borrow().len())?;
        let items = if !self.is_iterable(&v) {
            let extended = step != 1;
            return Err(type_err(if extended {
                "must assign iterable to extended slice"
            } else {
                "can only assign an iterable"
            }));
        } else {
            self.collect(&v)?
        };
        let n = l.v.borrow().len();
        let (start, stop, step) = slice_adjust(lo, hi, st, n)?;
        if step == 1 {
            let start = start as usize;
            let stop = (stop.max(start as i64)) as usize;
            l.grow(items.len());
            let removed: Vec<Value> = l.v.borrow_mut().splice(start..stop, items).collect();
            l.shrink(removed.len());
            drop(removed);
            return Ok(());
        }
        let idx = slice_indices(lo, hi, st, n)?;
        if idx.len() != items.len() {
            return Err(value_err(format!(
                "attempt to assign sequence of size {} to extended slice of size {}",
                items.len(),
                idx.len()
            )));
        }
        let mut lv = l.v.borrow_mut();
        for (i, x) in idx.into_iter().zip(items) {
            lv[i] = x;
        }
        Ok(())
    }

    // ---------------------------------------------------------------- iteration

    /// Can `iter()` be applied?
    pub fn is_iterable(&self, v: &Value) -> bool {
        matches!(
            v,
            Value::List(_)
                | Value::Tuple(_)
                | Value::Str(_)
                | Value::Dict(_)
                | Value::Set(_)
                | Value::Range(_)
                | Value::Keys(_)
                | Value::Values(_)
                | Value::Items(_)
                | Value::Iter(_)
        )
    }

    /// `iter(v)`.
    ///
    /// # Errors
    /// `TypeError: 'int' object is not iterable`.
    pub fn iterate(&mut self, v: &Value) -> InterpResult<Iter> {
        Ok(match v {
            Value::List(l) => Iter::List(l.clone(), 0),
            Value::Tuple(t) => Iter::Tuple(t.clone(), 0),
            Value::Str(s) => Iter::Str(s.clone(), 0),
            Value::Range(r) => Iter::Range {
                cur: r.start,
                left: r.len(),
                step: r.step,
            },
            Value::Dict(d) => {
                let dd = d.d.borrow();
                Iter::Dict(d.clone(), 0, dd.len(), ViewKind::Keys, dd.len())
            }
            Value::Keys(_) | Value::Values(_) | Value::Items(_) => {
                let Some((d, k)) = v.as_view() else {
                    return Err(Exc::internal("not a view"));
                };
                let dd = d.d.borrow();
                Iter::Dict(d.clone(), 0, dd.len(), k, dd.len())
            }
            Value::Set(s) => {
                s.in_order()?;
                Iter::Set(s.clone(), 0, s.d.borrow().len())
            }
            Value::Iter(i) => Iter::Shared(i.clone()),
            _ => {
                return Err(type_err(format!(
                    "'{}' object is not iterable",
                    v.type_name()
                )))
            }
        })
    }

    /// [`Interp::next`] with the two commonest cases (a range, a list)
    /// inlined into the loops that call it; the same results.
    ///
    /// # Errors
    /// Whatever producing the next item raises.
    #[inline]
    pub fn next_fast(&mut self, it: &mut Iter) -> InterpResult<Option<Value>> {
        match it {
            Iter::Range { cur, left, step } => {
                if *left == 0 {
                    return Ok(None);
                }
                let v = *cur;
                *left -= 1;
                if *left > 0 {
                    *cur += *step;
                }
                Ok(Some(Value::from_i128(v)))
            }
            Iter::List(l, i) => {
                let v = l.v.borrow();
                match v.get(*i) {
                    Some(x) => {
                        *i += 1;
                        Ok(Some(x.clone()))
                    }
                    None => Ok(None),
                }
            }
            _ => self.next(it),
        }
    }

    /// Advance an iterator.
    ///
    /// # Errors
    /// Whatever producing the next item raises.
    pub fn next(&mut self, it: &mut Iter) -> InterpResult<Option<Value>> {
        match it {
            Iter::List(l, i) => {
                let v = l.v.borrow();
                match v.get(*i) {
                    Some(x) => {
                        *i += 1;
                        Ok(Some(x.clone()))
                    }
                    None => Ok(None),
                }
            }
            Iter::Range { cur, left, step } => {
                if *left == 0 {
                    return Ok(None);
                }
                let v = *cur;
                *left -= 1;
                if *left > 0 {
                    *cur += *step;
                }
                Ok(Some(Value::from_i128(v)))
            }
            Iter::Tuple(t, i) => match t.v.get(*i) {
                Some(x) => {
                    *i += 1;
                    Ok(Some(x.clone()))
                }
                None => Ok(None),
            },
            Iter::Str(s, b) => match s.as_str()[*b..].chars().next() {
                Some(c) => {
                    *b += c.len_utf8();
                    Ok(Some(Value::str(c)))
                }
                None => Ok(None),
            },
            Iter::Dict(d, pos, size, kind, left) => {
                // CPython's dictiter: the size check, then the next live
                // entry by position; one found when as many as the dict
                // held at the start were already yielded means keys were
                // replaced (same size). New entries past the position are
                // yielded; the end is final.
                let dd = d.d.borrow();
                if dd.len() != *size {
                    *size = usize::MAX;
                    return Err(Exc::py(
                        "RuntimeError",
                        "dictionary changed size during iteration",
                    ));
                }
                while *pos < dd.raw_len() {
                    let p = *pos;
                    *pos += 1;
                    if let Some((k, v)) = dd.raw_get(p) {
                        if *left == 0 {
                            *pos = usize::MAX;
                            return Err(Exc::py(
                                "RuntimeError",
                                "dictionary keys changed during iteration",
                            ));
                        }
                        *left -= 1;
                        return Ok(Some(match kind {
                            ViewKind::Keys => k.clone(),
                            ViewKind::Values => v.clone(),
                            ViewKind::Items => Value::tuple(vec![k.clone(), v.clone()]),
                        }));
                    }
                }
                *pos = usize::MAX;
                Ok(None)
            }
            Iter::Set(s, pos, size) => {
                let dd = s.d.borrow();
                if dd.len() != *size {
                    *size = usize::MAX;
                    return Err(Exc::py("RuntimeError", "Set changed size during iteration"));
                }
                while *pos < dd.raw_len() {
                    let p = *pos;
                    *pos += 1;
                    if let Some((k, _)) = dd.raw_get(p) {
                        return Ok(Some(k.clone()));
                    }
                }
                Ok(None)
            }
            Iter::Rev(seq, i) => {
                if *i == 0 {
                    return Ok(None);
                }
                *i -= 1;
                let idx = *i;
                let v = match seq {
                    Value::List(l) => {
                        let l = l.v.borrow();
                        if idx >= l.len() {
                            *i = 0;
                            return Ok(None);
                        }
                        l[idx].clone()
                    }
                    Value::Tuple(t) => t.v[idx].clone(),
                    Value::Str(s) => {
                        Value::str(s.char_at(idx).map(String::from).unwrap_or_default())
                    }
                    Value::Range(r) => r.at(idx),
                    _ => return Ok(None),
                };
                Ok(Some(v))
            }
            Iter::RevDict(d, pos, size, kind) => {
                let dd = d.d.borrow();
                if dd.len() != *size {
                    *size = usize::MAX;
                    return Err(Exc::py(
                        "RuntimeError",
                        "dictionary changed size during iteration",
                    ));
                }
                while *pos > 0 {
                    *pos -= 1;
                    if let Some((k, v)) = dd.raw_get(*pos) {
                        return Ok(Some(match kind {
                            ViewKind::Keys => k.clone(),
                            ViewKind::Values => v.clone(),
                            ViewKind::Items => Value::tuple(vec![k.clone(), v.clone()]),
                        }));
                    }
                }
                Ok(None)
            }
            Iter::Enumerate(inner, n) => {
                self.enter()?;
                let r = self.next(inner);
                self.leave();
                match r? {
                    Some(v) => {
                        let i = n.clone();
                        *n = binop(BinOp::Add, n, &Value::Int(1))?;
                        Ok(Some(Value::tuple(vec![i, v])))
                    }
                    None => Ok(None),
                }
            }
            Iter::Zip(its, strict) => {
                if its.is_empty() {
                    return Ok(None);
                }
                self.enter()?;
                let r = self.zip_next(its, *strict);
                self.leave();
                if matches!(r, Ok(None)) {
                    *it = Iter::Done;
                }
                r
            }
            Iter::Shared(rc) => {
                let Ok(mut inner) = rc.try_borrow_mut() else {
                    return Err(value_err("generator already executing"));
                };
                self.enter()?;
                let r = self.next(&mut inner);
                self.leave();
                r
            }
            Iter::Gen(g) => {
                self.enter()?;
                let r = self.gen_next(g);
                self.leave();
                r
            }
            Iter::Done => Ok(None),
        }
    }

    fn zip_next(&mut self, its: &mut [Iter], strict: bool) -> InterpResult<Option<Value>> {
        let mut out = Vec::with_capacity(its.len());
        for (k, it) in its.iter_mut().enumerate() {
            match self.next(it)? {
                Some(v) => out.push(v),
                None => {
                    if strict {
                        if k > 0 {
                            let s = if k == 1 { " " } else { "s 1-" };
                            return Err(value_err(format!(
                                "zip() argument {} is shorter than argument{s}{}",
                                k + 1,
                                k
                            )));
                        }
                        // First exhausted: every other must be exhausted too.
                        for (j, rest) in its.iter_mut().enumerate().skip(1) {
                            if self.next(rest)?.is_some() {
                                let s = if j == 1 { " " } else { "s 1-" };
                                return Err(value_err(format!(
                                    "zip() argument {} is longer than argument{s}{}",
                                    j + 1,
                                    j
                                )));
                            }
                        }
                    }
                    return Ok(None);
                }
            }
        }
        Ok(Some(Value::tuple(out)))
    }

    /// Materialise an iterable into a vector (charging fuel and memory).
    ///
    /// # Errors
    /// TypeError for non-iterables; limits.
    pub fn collect(&mut self, v: &Value) -> InterpResult<Vec<Value>> {
        match v {
            Value::List(l) => {
                let l = l.v.borrow();
                tick(1 + l.len() as u64 / 16)?;
                mem_check_n(l.len() as u64, SLOT as u64)?;
                Ok(l.clone())
            }
            Value::Tuple(t) => {
                tick(1 + t.v.len() as u64 / 16)?;
                mem_check_n(t.v.len() as u64, SLOT as u64)?;
                Ok(t.v.clone())
            }
            Value::Range(r) => {
                // list(), tuple(), sorted() ... take len() first (CPython's
                // length hint), which must fit a C ssize_t.
                if r.len128() > i64::MAX as i128 {
                    return Err(Exc::py(
                        "OverflowError",
                        "Python int too large to convert to C ssize_t",
                    ));
                }
                let n = r.len() as u64;
                mem_check_n(n, SLOT as u64)?;
                tick(1 + n / 4)?;
                Ok((0..r.len()).map(|i| r.at(i)).collect())
            }
            _ => {
                // A generator expression (`''.join(f(x) for x in xs)`) runs
                // to the end here: resume it in a loop with its variables
                // swapped in once, not once per item.
                if let Value::Iter(rc) = v {
                    if let Ok(mut inner) = rc.try_borrow_mut() {
                        match &mut *inner {
                            Iter::Gen(g) => return self.collect_gen(g),
                            // The reversed range's length hint, as above.
                            Iter::Rev(Value::Range(r), _) if r.len128() > i64::MAX as i128 => {
                                return Err(Exc::py(
                                    "OverflowError",
                                    "Python int too large to convert to C ssize_t",
                                ));
                            }
                            _ => {}
                        }
                    }
                }
                let mut it = self.iterate(v)?;
                let mut out = Vec::new();
                while let Some(x) = self.next(&mut it)? {
                    tick(1)?;
                    if out.len() % 1024 == 1023 {
                        mem_check_n(out.len() as u64, SLOT as u64)?;
                    }
                    out.push(x);
                }
                Ok(out)
            }
        }
    }

    /// `a - b` where either side is a dict view: as CPython's
    /// `dictviews_sub`, when either side is a keys or items view the result
    /// is `set(a)` with every item of the iterable `b` discarded (so
    /// `d.keys() - ["a"]` and `[1, 2] - d.keys()` work); otherwise (values
    /// views only) the usual unsupported-operand TypeError.
    ///
    /// # Errors
    /// TypeError for non-iterables, unhashable items; limits.
    fn view_sub(&mut self, a: &Value, b: &Value) -> InterpResult<Value> {
        let keyish = |v: &Value| matches!(v.as_view(), Some((_, ViewKind::Keys | ViewKind::Items)));
        if !keyish(a) && !keyish(b) {
            return binop(BinOp::Sub, a, b);
        }
        let mut d = Dict::new();
        for x in self.collect(a)? {
            tick(1)?;
            d.insert(x, Value::None)?;
        }
        // CPython's `dictviews_sub`: the left side made a set (a keys view
        // as `set(the dict)`, sized once; a set copied; anything else added
        // item by item), then `difference_update` with the right side.
        let mut model = match a {
            Value::Set(s) => s.model_copy(),
            Value::Keys(_) => super::value::model_presized(&d),
            _ => super::value::model_adding(&d),
        };
        let mut it = self.iterate(b)?;
        while let Some(x) = self.next(&mut it)? {
            tick(1)?;
            super::setorder::remove_key(&mut d, &mut model, &x)?;
        }
        if let Some(m) = model.as_mut() {
            m.after_removals();
        }
        Ok(Value::set_with(d, model))
    }

    /// [`Interp::collect`] of a generator: the same steps, fuel, memory
    /// checks, depth and final state as pulling its items one by one
    /// through the shared iterator (two levels entered per item, one tick
    /// in the generator and one in the collecting loop per item, a memory
    /// check every 1024 items; an error or the end marks it done, a limit
    /// hit while collecting leaves it resumable).
    fn collect_gen(&mut self, g: &mut GenState) -> InterpResult<Vec<Value>> {
        let mut out = Vec::new();
        // One `for` without `if` over a sized iterator (`str(i) for i in
        // range(n)`): exactly as many items as it has left, so the vector
        // is sized once, as a list comprehension's is (when the memory
        // budget allows it; otherwise it grows as before).
        if let ([gen], [it], false) = (&g.comp.gens[..], &g.iters[..], g.done) {
            let n = if gen.ifs.is_empty() { sized_len(it) } else { 0 };
            if n > 0 && mem_check_n(n as u64, SLOT as u64).is_ok() {
                out.reserve_exact(n);
            }
        }
        self.drive_gen(g, &mut |x| {
            tick(1)?;
            if out.len() % 1024 == 1023 {
                mem_check_n(out.len() as u64, SLOT as u64)?;
            }
            out.push(x);
            Ok(true)
        })?;
        Ok(out)
    }

    /// When `v` is a generator not already running: resume it in a loop
    /// (its variables swapped in once, not once per item), each item to
    /// `sink` until the end or until `sink` returns false, with the same
    /// steps, fuel, depth and final state as pulling its items one by one
    /// through the shared iterator (see [`Interp::collect_gen`]). `sink`
    /// must not evaluate program code (the generator's variables are in
    /// place while it runs). None for anything else.
    pub fn fold_gen(
        &mut self,
        v: &Value,
        sink: &mut dyn FnMut(Value) -> InterpResult<bool>,
    ) -> Option<InterpResult<()>> {
        let Value::Iter(rc) = v else {
            return None;
        };
        let mut inner = rc.try_borrow_mut().ok()?;
        match &mut *inner {
            Iter::Gen(g) => Some(self.drive_gen(g, sink)),
            _ => None,
        }
    }

    /// [`Interp::fold_gen`] of a generator's state: two levels entered, as
    /// the shared iterator and the generator enter per item.
    fn drive_gen(
        &mut self,
        g: &mut GenState,
        sink: &mut dyn FnMut(Value) -> InterpResult<bool>,
    ) -> InterpResult<()> {
        self.enter()?;
        if let Err(e) = self.enter() {
            self.leave();
            return Err(e);
        }
        let r = self.drive_gen_in(g, sink);
        self.leave();
        self.leave();
        r
    }

    fn drive_gen_in(
        &mut self,
        g: &mut GenState,
        sink: &mut dyn FnMut(Value) -> InterpResult<bool>,
    ) -> InterpResult<()> {
        if g.done {
            return Ok(());
        }
        let c = g.comp.clone();
        for (s, v) in c.slots.iter().zip(g.saved.iter_mut()) {
            std::mem::swap(&mut self.slots[*s as usize], v);
        }
        let mut finished = false;
        let r = if let ([gen], 1) = (&c.gens[..], g.iters.len()) {
            let (r, fin) = self.drive_gen1(g, &c, gen, sink);
            finished = fin;
            r
        } else {
            loop {
                match self.gen_step(g, &c) {
                    Ok(Some(x)) => match sink(x) {
                        Ok(true) => {}
                        // Stopped early: the generator stays resumable.
                        Ok(false) => break Ok(()),
                        Err(e) => break Err(e),
                    },
                    Ok(None) => {
                        finished = true;
                        break Ok(());
                    }
                    Err(e) => {
                        finished = true;
                        break Err(e);
                    }
                }
            }
        };
        for (s, v) in c.slots.iter().zip(g.saved.iter_mut()) {
            std::mem::swap(&mut self.slots[*s as usize], v);
        }
        if finished {
            g.done = true;
            g.iters.clear();
            g.saved.iter_mut().for_each(|v| *v = None);
        }
        r
    }

    /// [`Interp::drive_gen_in`]'s loop for a generator of one `for` (the
    /// commonest: `str(i) for i in range(n)`): [`Interp::gen_step`]'s steps
    /// inlined, without its per-item level bookkeeping, the same fuel,
    /// order and error positions. Returns the result and whether the
    /// generator is finished (exhausted or raised; not when `sink` stopped
    /// it or failed).
    fn drive_gen1(
        &mut self,
        g: &mut GenState,
        c: &Comp,
        gen: &super::compile::Gen,
        sink: &mut dyn FnMut(Value) -> InterpResult<bool>,
    ) -> (InterpResult<()>, bool) {
        'outer: loop {
            let Some(it) = g.iters.last_mut() else {
                return (Ok(()), true);
            };
            let v = match self.next_fast(it) {
                Ok(Some(v)) => v,
                Ok(None) => {
                    g.iters.pop();
                    return (Ok(()), true);
                }
                Err(e) => return (Err(at(e, c.pos)), true),
            };
            if let Err(e) = tick(1) {
                return (Err(e), true);
            }
            if let Err(e) = self.assign(&gen.target, v) {
                return (Err(at(e, gen.tpos)), true);
            }
            for cond in &gen.ifs {
                match self.eval(cond) {
                    Ok(x) if x.truthy() => {}
                    Ok(_) => continue 'outer,
                    Err(e) => return (Err(e), true),
                }
            }
            let x = match self.eval(&c.elt) {
                Ok(x) => x,
                Err(e) => return (Err(e), true),
            };
            match sink(x) {
                Ok(true) => {}
                // Stopped early: the generator stays resumable.
                Ok(false) => return (Ok(()), false),
                Err(e) => return (Err(e), false),
            }
        }
    }

    /// Nesting of an iterator chain (enumerate(enumerate(...))).
    pub fn iter_depth(it: &Iter, lvl: usize) -> usize {
        if lvl > 10_000 {
            return lvl;
        }
        match it {
            Iter::Shared(r) => r
                .try_borrow()
                .map_or(lvl + 1, |i| Self::iter_depth(&i, lvl + 1)),
            Iter::Enumerate(b, _) => Self::iter_depth(b, lvl + 1),
            Iter::Zip(v, _) => v
                .iter()
                .map(|i| Self::iter_depth(i, lvl + 1))
                .max()
                .unwrap_or(lvl),
            Iter::Gen(g) => g
                .iters
                .first()
                .map_or(lvl, |i| Self::iter_depth(i, lvl + 1)),
            _ => lvl,
        }
    }

    /// Wrap an iterator in a new shared iterator value, refusing absurd chains.
    ///
    /// # Errors
    /// `depth` limit.
    pub fn iter_value(&mut self, it: Iter) -> InterpResult<Value> {
        if Self::iter_depth(&it, 0) > self.limits.max_depth as usize {
            return Err(self.depth_err());
        }
        mem_check(64)?;
        Ok(Value::Iter(Rc::new(RefCell::new(it))))
    }

    // ---------------------------------------------------------------- comprehensions

    fn comprehension(&mut self, c: &Rc<Comp>) -> InterpResult<Value> {
        let first_v = self.eval(&c.gens[0].iter)?;
        // Iteration errors (and SET_ADD/MAP_ADD's) are located at the
        // comprehension, unpacking errors at the target, as in CPython.
        let first = self.iterate(&first_v).map_err(|e| at(e, c.pos))?;
        drop(first_v);
        if c.kind == CompKind::Gen {
            let g = GenState {
                comp: c.clone(),
                iters: vec![first],
                saved: vec![None; c.slots.len()],
                done: false,
            };
            return self.iter_value(Iter::Gen(Box::new(g)));
        }
        self.enter()?;
        let saved: Vec<Option<Value>> = c
            .slots
            .iter()
            .map(|s| self.slots[*s as usize].take())
            .collect();
        let r = match c.kind {
            CompKind::List => {
                let mut out = Vec::new();
                // One `for` without `if`: the result has exactly as many
                // items as the source, so size it once (when the memory
                // budget allows it; otherwise grow as before).
                if c.gens.len() == 1 && c.gens[0].ifs.is_empty() {
                    let n = sized_len(&first);
                    if n > 0 && mem_check_n(n as u64, SLOT as u64).is_ok() {
                        out.reserve_exact(n);
                    }
                }
                let r = if c.gens.len() == 1 {
                    // The same steps as `comp_loop` with the push inlined
                    // (no dynamic call per element).
                    self.list_comp1(c, first, &mut out)
                } else {
                    self.comp_loop(c, 0, first, &mut |me, c| {
                        let v = me.eval(&c.elt)?;
                        if out.len() % 1024 == 1023 {
                            mem_check_n(out.len() as u64, SLOT as u64)?;
                        }
                        out.push(v);
                        Ok(())
                    })
                };
                r.map(|_| Value::list(out))
            }
            CompKind::Set => {
                let mut d = Dict::new();
                let r = self.comp_loop(c, 0, first, &mut |me, c| {
                    let v = me.eval(&c.elt)?;
                    d.insert(v, Value::None).map_err(|e| at(e, c.pos))?;
                    Ok(())
                });
                r.map(|_| Value::set(d))
            }
            CompKind::Dict => {
                let mut d = Dict::new();
                let r = self.comp_loop(c, 0, first, &mut |me, c| {
                    let k = me.eval(&c.elt)?;
                    let v = match &c.val {
                        Some(ve) => me.eval(ve)?,
                        None => Value::None,
                    };
                    d.insert(k, v).map_err(|e| at(e, c.pos))?;
                    Ok(())
                });
                r.map(|_| Value::dict(d))
            }
            CompKind::Gen => Err(Exc::internal("generator in comp loop")),
        };
        for (s, v) in c.slots.iter().zip(saved) {
            self.slots[*s as usize] = v;
        }
        self.leave();
        r
    }

    fn list_comp1(&mut self, c: &Comp, mut it: Iter, out: &mut Vec<Value>) -> InterpResult<()> {
        let g = &c.gens[0];
        'outer: while let Some(v) = self.next_fast(&mut it).map_err(|e| at(e, c.pos))? {
            tick(1)?;
            self.assign(&g.target, v).map_err(|e| at(e, g.tpos))?;
            for cond in &g.ifs {
                if !self.eval(cond)?.truthy() {
                    continue 'outer;
                }
            }
            let v = self.eval(&c.elt)?;
            if out.len() % 1024 == 1023 {
                mem_check_n(out.len() as u64, SLOT as u64)?;
            }
            out.push(v);
        }
        Ok(())
    }

    fn comp_loop(
        &mut self,
        c: &Comp,
        level: usize,
        mut it: Iter,
        emit: &mut dyn FnMut(&mut Self, &Comp) -> InterpResult<()>,
    ) -> InterpResult<()> {
        let g = &c.gens[level];
        'outer: while let Some(v) = self.next_fast(&mut it).map_err(|e| at(e, c.pos))? {
            tick(1)?;
            self.assign(&g.target, v).map_err(|e| at(e, g.tpos))?;
            for cond in &g.ifs {
                if !self.eval(cond)?.truthy() {
                    continue 'outer;
                }
            }
            if level + 1 < c.gens.len() {
                let nv = self.eval(&c.gens[level + 1].iter)?;
                let nit = self.iterate(&nv).map_err(|e| at(e, c.pos))?;
                self.comp_loop(c, level + 1, nit, emit)?;
            } else {
                emit(self, c)?;
            }
        }
        Ok(())
    }

    fn gen_next(&mut self, g: &mut GenState) -> InterpResult<Option<Value>> {
        if g.done {
            return Ok(None);
        }
        let c = g.comp.clone();
        // Swap the generator's variables in (and back out afterwards).
        for (s, v) in c.slots.iter().zip(g.saved.iter_mut()) {
            std::mem::swap(&mut self.slots[*s as usize], v);
        }
        let r = self.gen_step(g, &c);
        for (s, v) in c.slots.iter().zip(g.saved.iter_mut()) {
            std::mem::swap(&mut self.slots[*s as usize], v);
        }
        if !matches!(r, Ok(Some(_))) {
            g.done = true;
            g.iters.clear();
            g.saved.iter_mut().for_each(|v| *v = None);
        }
        r
    }

    fn gen_step(&mut self, g: &mut GenState, c: &Comp) -> InterpResult<Option<Value>> {
        'outer: loop {
            let lvl = match g.iters.len() {
                0 => return Ok(None),
                n => n - 1,
            };
            let gen = &c.gens[lvl];
            let next = {
                let Some(it) = g.iters.last_mut() else {
                    return Ok(None);
                };
                self.next_fast(it).map_err(|e| at(e, c.pos))?
            };
            let Some(v) = next else {
                g.iters.pop();
                continue;
            };
            tick(1)?;
            self.assign(&gen.target, v).map_err(|e| at(e, gen.tpos))?;
            for cond in &gen.ifs {
                if !self.eval(cond)?.truthy() {
                    continue 'outer;
                }
            }
            if lvl + 1 < c.gens.len() {
                let nv = self.eval(&c.gens[lvl + 1].iter)?;
                let nit = self.iterate(&nv).map_err(|e| at(e, c.pos))?;
                g.iters.push(nit);
                continue;
            }
            return Ok(Some(self.eval(&c.elt)?));
        }
    }

    // ---------------------------------------------------------------- calls

    /// Call a key function with one argument.
    ///
    /// # Errors
    /// Whatever the function raises; TypeError when not callable.
    pub fn call_func(&mut self, f: &Value, arg: Value) -> InterpResult<Value> {
        let Value::Func(func) = f else {
            return Err(type_err(format!(
                "'{}' object is not callable",
                f.type_name()
            )));
        };
        self.enter()?;
        let r = match &**func {
            Func::Lambda(i) => match self.code.lambdas.get(*i) {
                Some(l) => {
                    let slot = l.param as usize;
                    let old = self.slots[slot].replace(arg);
                    let r = self.eval(&l.body);
                    self.slots[slot] = old;
                    r
                }
                None => Err(Exc::internal("unknown lambda")),
            },
            Func::Builtin(b) => self.call_builtin(
                *b,
                CallArgs {
                    pos: pos1(arg),
                    kw: Vec::new(),
                },
            ),
            Func::Method(recv, m) => {
                let a = CallArgs {
                    pos: pos1(arg),
                    kw: Vec::new(),
                };
                super::methods::bound_call_checks(recv, *m, &a)
                    .and_then(|()| self.call_method(recv, *m, a))
            }
        };
        self.leave();
        r
    }

    fn call_tool(&mut self, name: &str, a: CallArgs) -> InterpResult<Value> {
        self.tool_calls += 1;
        if self.tool_calls > self.limits.tool_calls {
            return Err(Exc::limit(
                "tool_calls",
                format!(
                    "tool call limit exceeded: the program made more than {} tool calls",
                    self.limits.tool_calls
                ),
            ));
        }
        let mut args = Vec::with_capacity(a.pos.len());
        for v in &a.pos {
            args.push(self.data_of(v, false)?);
        }
        let mut kwargs = Vec::with_capacity(a.kw.len());
        for (k, v) in &a.kw {
            kwargs.push((k.to_string(), self.data_of(v, false)?));
        }
        if super::surrogate::on() {
            let all = args.iter().chain(kwargs.iter().map(|(_, d)| d));
            if let Some(e) = all.filter_map(super::surrogate::data_error).next() {
                return Err(e);
            }
        }
        match self.host.call(name, args, kwargs) {
            Ok(d) if super::surrogate::on() && super::surrogate::data_has_placeholder(&d) => {
                Err(Box::new(Exc {
                    kind: ExcKind::Tool("ToolFailed".to_string()),
                    msg: format!("the result of {name}() holds a character of U+10F800..U+10FFFF, which this program (it has a lone surrogate escape such as '\\ud800') uses to stand for surrogates"),
                    pos: None,
                }))
            }
            Ok(d) => from_data(&d, 0),
            Err(f) => Err(Box::new(Exc {
                kind: ExcKind::Tool(f.type_name),
                msg: f.message,
                pos: None,
            })),
        }
    }

    /// Convert a value to plain data. With `lenient`, non-plain values
    /// (ranges, views, iterators) become their repr; otherwise TypeError.
    ///
    /// # Errors
    /// TypeError for non-plain values; `depth` limit for deep/cyclic values.
    pub fn data_of(&mut self, v: &Value, lenient: bool) -> InterpResult<Data> {
        let mut seen = Vec::new();
        self.data_rec(v, lenient, 0, &mut seen)
    }

    fn data_rec(
        &mut self,
        v: &Value,
        lenient: bool,
        depth: usize,
        seen: &mut Vec<usize>,
    ) -> InterpResult<Data> {
        let id = match v {
            Value::List(l) => Rc::as_ptr(l) as usize,
            Value::Dict(d) => Rc::as_ptr(d) as usize,
            _ => 0,
        };
        if id != 0 {
            if seen.contains(&id) {
                if lenient {
                    return Ok(Data::Str(if matches!(v, Value::List(_)) {
                        "[...]".into()
                    } else {
                        "{...}".into()
                    }));
                }
                return Err(value_err(
                    "a value that contains itself cannot be passed to a tool",
                ));
            }
            seen.push(id);
            let r = self.data_inner(v, lenient, depth, seen);
            seen.pop();
            return r;
        }
        self.data_inner(v, lenient, depth, seen)
    }

    fn data_inner(
        &mut self,
        v: &Value,
        lenient: bool,
        depth: usize,
        seen: &mut Vec<usize>,
    ) -> InterpResult<Data> {
        super::budget::stack_check("")?;
        if depth > MAX_DATA_DEPTH {
            return Err(Exc::limit(
                "depth",
                format!("depth limit exceeded: value nests deeper than {MAX_DATA_DEPTH} levels (or contains itself)"),
            ));
        }
        tick(1)?;
        Ok(match v {
            Value::None => Data::None,
            Value::Bool(b) => Data::Bool(*b),
            Value::Int(i) => Data::Int(*i),
            Value::Big(b) => Data::BigInt(b.to_string()),
            Value::Float(f) => Data::Float(*f),
            Value::Str(s) => Data::Str(s.as_str().to_string()),
            Value::List(l) => {
                let items = l.v.borrow().clone();
                Data::List(
                    items
                        .iter()
                        .map(|x| self.data_rec(x, lenient, depth + 1, seen))
                        .collect::<InterpResult<_>>()?,
                )
            }
            Value::Tuple(t) => Data::Tuple(
                t.v.iter()
                    .map(|x| self.data_rec(x, lenient, depth + 1, seen))
                    .collect::<InterpResult<_>>()?,
            ),
            Value::Set(s) => {
                s.in_order()?;
                let items: Vec<Value> = s.d.borrow().keys().cloned().collect();
                Data::Set(
                    items
                        .iter()
                        .map(|x| self.data_rec(x, lenient, depth + 1, seen))
                        .collect::<InterpResult<_>>()?,
                )
            }
            Value::Dict(d) => {
                let items: Vec<(Value, Value)> =
                    d.d.borrow()
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                let mut out = Vec::with_capacity(items.len());
                for (k, x) in items {
                    out.push((
                        self.data_rec(&k, lenient, depth + 1, seen)?,
                        self.data_rec(&x, lenient, depth + 1, seen)?,
                    ));
                }
                Data::Dict(out)
            }
            other => {
                if lenient {
                    Data::Str(self.repr(other)?)
                } else {
                    return Err(type_err(format!(
                        "a '{}' value cannot be passed to a tool (only None, bool, int, float, str, list, tuple, dict and set can)",
                        other.type_name()
                    )));
                }
            }
        })
    }

    // ---------------------------------------------------------------- text

    fn fstring(&mut self, parts: &[FPart], s: &mut String) -> InterpResult<()> {
        for p in parts {
            match p {
                FPart::Lit(t) => s.push_str(t),
                FPart::Val(e, None, Some(spec)) if matches!(&spec[..], [FPart::Lit(_)]) => {
                    // A literal spec: try the fast numeric path first.
                    let v = self.eval(e)?;
                    let spec_s = match spec.first() {
                        Some(FPart::Lit(t)) => &**t,
                        _ => "",
                    };
                    // Formatting errors carry no position here: CPython
                    // reports them at the start of the whole f-string
                    // (the caller's position), not at the value's line.
                    if super::format::format_simple_into(&v, spec_s, s)? {
                        mem_check(s.len() as u64)?;
                        continue;
                    }
                    let text = format_value(&v, spec_s, &|x| self.str_of_simple(x))?;
                    mem_check((s.len() + text.len()) as u64)?;
                    s.push_str(&text);
                }
                FPart::Val(e, conv, spec) => {
                    let v = self.eval(e)?;
                    let v = match conv {
                        Some('r') => Value::str(self.repr(&v)?),
                        Some('s') => Value::str(self.to_str(&v)?),
                        Some('a') => {
                            let mut o = String::new();
                            self.repr_into(
                                &v,
                                &mut o,
                                &mut Vec::new(),
                                0,
                                true,
                                self.limits.memory_bytes as usize,
                            )?;
                            Value::str(o)
                        }
                        _ => v,
                    };
                    let spec_s: std::borrow::Cow<str> = match spec.as_deref() {
                        Some([FPart::Lit(t)]) => std::borrow::Cow::Borrowed(&**t),
                        Some(sp) => {
                            let mut t = String::new();
                            self.fstring(sp, &mut t)?;
                            std::borrow::Cow::Owned(t)
                        }
                        None => std::borrow::Cow::Borrowed(""),
                    };
                    if spec_s.is_empty() {
                        if let Value::Str(x) = &v {
                            mem_check((s.len() + x.len()) as u64)?;
                            s.push_str(x.as_str());
                            continue;
                        }
                    }
                    let text = format_value(&v, &spec_s, &|x| self.str_of_simple(x))?;
                    mem_check((s.len() + text.len()) as u64)?;
                    s.push_str(&text);
                }
            }
        }
        Ok(())
    }

    fn str_of_simple(&self, v: &Value) -> InterpResult<String> {
        match v {
            Value::Str(s) => Ok(s.as_str().to_string()),
            Value::Int(i) => Ok(i.to_string()),
            Value::Float(f) => Ok(float_repr(*f)),
            Value::Bool(b) => Ok(if *b { "True".into() } else { "False".into() }),
            Value::None => Ok("None".into()),
            _ => {
                let mut o = String::new();
                self.repr_into(
                    v,
                    &mut o,
                    &mut Vec::new(),
                    0,
                    false,
                    self.limits.memory_bytes as usize,
                )?;
                Ok(o)
            }
        }
    }

    /// `str(v)`.
    ///
    /// # Errors
    /// RecursionError, ValueError (int digit limit), memory limit.
    pub fn to_str(&self, v: &Value) -> InterpResult<String> {
        self.str_of_simple(v)
    }

    /// `repr(v)`.
    ///
    /// # Errors
    /// RecursionError, ValueError (int digit limit), memory limit.
    pub fn repr(&self, v: &Value) -> InterpResult<String> {
        let mut o = String::new();
        self.repr_into(
            v,
            &mut o,
            &mut Vec::new(),
            0,
            false,
            self.limits.memory_bytes as usize,
        )?;
        Ok(o)
    }

    /// Render `repr(v)` into `out`, stopping with a `memory` limit error past `budget` bytes.
    ///
    /// # Errors
    /// As [`Interp::repr`].
    pub fn repr_into(
        &self,
        v: &Value,
        out: &mut String,
        seen: &mut Vec<usize>,
        depth: usize,
        ascii: bool,
        budget: usize,
    ) -> InterpResult<()> {
        if out.len() > budget {
            return Err(Exc::limit(
                "memory",
                format!("memory limit exceeded: a rendered value is longer than {budget} bytes"),
            ));
        }
        // The text rendered so far counts against the memory budget too
        // (a shared value repeated inside a container renders many times
        // over what it is charged).
        mem_check(out.capacity() as u64)?;
        if depth > MAX_REPR_REC {
            return Err(Exc::py(
                "RecursionError",
                "maximum recursion depth exceeded while getting the repr of an object",
            ));
        }
        super::budget::stack_check(" while getting the repr of an object")?;
        match v {
            Value::None => out.push_str("None"),
            Value::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
            Value::Int(i) => out.push_str(&i.to_string()),
            Value::Big(b) => out.push_str(&big_to_str(b)?),
            Value::Float(f) => out.push_str(&float_repr(*f)),
            Value::Str(s) => {
                tick(1 + s.len() as u64 / 256)?;
                // A long text's rendering is sized before it is written
                // (escapes make it up to 10 bytes a character).
                if s.len() > 4096 {
                    // At least its bytes and quotes; then the escapes, counted
                    // no further than the budget allows.
                    mem_check((out.capacity().max(out.len() + s.len() + 2)) as u64)?;
                    let cap = budget
                        .saturating_sub(out.len())
                        .min(usize::try_from(super::budget::mem_left()).unwrap_or(usize::MAX));
                    let need = out
                        .len()
                        .saturating_add(str_repr_len(s.as_str(), ascii, cap));
                    if need > budget {
                        return Err(Exc::limit(
                            "memory",
                            format!(
                                "memory limit exceeded: a rendered value is longer than {budget} bytes"
                            ),
                        ));
                    }
                    mem_check(need.max(out.capacity()) as u64)?;
                }
                str_repr_into(s.as_str(), out, ascii)
            }
            Value::List(l) => {
                let id = Rc::as_ptr(l) as usize;
                if seen.contains(&id) {
                    out.push_str("[...]");
                    return Ok(());
                }
                seen.push(id);
                out.push('[');
                let items = l.v.borrow();
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    tick(1)?;
                    self.repr_into(x, out, seen, depth + 1, ascii, budget)?;
                }
                out.push(']');
                seen.pop();
            }
            Value::Tuple(t) => {
                if t.v.is_empty() {
                    out.push_str("()");
                    return Ok(());
                }
                // A tuple reached again through a list inside it: `(...)`.
                let id = Rc::as_ptr(t) as usize;
                if seen.contains(&id) {
                    out.push_str("(...)");
                    return Ok(());
                }
                seen.push(id);
                out.push('(');
                for (i, x) in t.v.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    tick(1)?;
                    self.repr_into(x, out, seen, depth + 1, ascii, budget)?;
                }
                if t.v.len() == 1 {
                    out.push(',');
                }
                out.push(')');
                seen.pop();
            }
            Value::Dict(d) => {
                let id = Rc::as_ptr(d) as usize;
                if seen.contains(&id) {
                    out.push_str("{...}");
                    return Ok(());
                }
                seen.push(id);
                out.push('{');
                let dd = d.d.borrow();
                for (i, (k, x)) in dd.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    tick(1)?;
                    self.repr_into(k, out, seen, depth + 1, ascii, budget)?;
                    out.push_str(": ");
                    self.repr_into(x, out, seen, depth + 1, ascii, budget)?;
                }
                out.push('}');
                seen.pop();
            }
            Value::Set(s) => {
                s.in_order()?;
                let dd = s.d.borrow();
                if dd.is_empty() {
                    out.push_str("set()");
                    return Ok(());
                }
                out.push('{');
                for (i, k) in dd.keys().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    tick(1)?;
                    self.repr_into(k, out, seen, depth + 1, ascii, budget)?;
                }
                out.push('}');
            }
            Value::Range(r) => {
                if r.step == 1 {
                    out.push_str(&format!("range({}, {})", r.start, r.stop));
                } else {
                    out.push_str(&format!("range({}, {}, {})", r.start, r.stop, r.step));
                }
            }
            Value::Keys(_) | Value::Values(_) | Value::Items(_) => {
                let Some((d, kind)) = v.as_view() else {
                    return Err(Exc::internal("not a view"));
                };
                // The view, not its dict, is what is being rendered (as in
                // CPython, the dict inside renders in full once): its id is
                // the dict's address plus 1..3, which no (8-aligned) `Rc`
                // address equals.
                let (name, tag) = match kind {
                    ViewKind::Keys => ("dict_keys", 1),
                    ViewKind::Values => ("dict_values", 2),
                    ViewKind::Items => ("dict_items", 3),
                };
                let id = (Rc::as_ptr(d) as usize).wrapping_add(tag);
                if seen.contains(&id) {
                    out.push_str("...");
                    return Ok(());
                }
                seen.push(id);
                out.push_str(name);
                out.push_str("([");
                let dd = d.d.borrow();
                for (i, (k, x)) in dd.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    tick(1)?;
                    match kind {
                        ViewKind::Keys => self.repr_into(k, out, seen, depth + 1, ascii, budget)?,
                        ViewKind::Values => {
                            self.repr_into(x, out, seen, depth + 1, ascii, budget)?
                        }
                        ViewKind::Items => {
                            out.push('(');
                            self.repr_into(k, out, seen, depth + 1, ascii, budget)?;
                            out.push_str(", ");
                            self.repr_into(x, out, seen, depth + 1, ascii, budget)?;
                            out.push(')');
                        }
                    }
                }
                out.push_str("])");
                seen.pop();
            }
            Value::Iter(it) => {
                let name = match it.try_borrow() {
                    Ok(i) => i.type_name(),
                    Err(_) => "generator",
                };
                if name == "generator" {
                    out.push_str("<generator object <genexpr> at 0x7f0000000000>");
                } else {
                    out.push_str(&format!("<{name} object at 0x7f0000000000>"));
                }
            }
            Value::Func(f) => match &**f {
                Func::Lambda(_) => out.push_str("<function <lambda> at 0x7f0000000000>"),
                Func::Builtin(b) => out.push_str(&format!("<built-in function {}>", b.name())),
                Func::Method(r, m) => out.push_str(&format!(
                    "<built-in method {} of {} object at 0x7f0000000000>",
                    m.name(),
                    r.type_name()
                )),
            },
        }
        Ok(())
    }
}

/// Items left in a range, list or tuple iterator (0 for any other: not
/// known without running it). A list can still change while it is
/// iterated, so this sizes a reservation, never a loop.
fn sized_len(it: &Iter) -> usize {
    match it {
        Iter::Range { left, .. } => *left,
        Iter::List(l, i) => l.v.borrow().len().saturating_sub(*i),
        Iter::Tuple(t, i) => t.v.len().saturating_sub(*i),
        _ => 0,
    }
}

/// Single-argument builtins that need no interpreter state, without
/// building an argument vector. `None` means "take the general path".
fn fast_builtin1(b: super::compile::Builtin, v: &Value) -> Option<InterpResult<Value>> {
    use super::compile::Builtin as B;
    Some(Ok(match (b, v) {
        (B::Len, Value::Str(s)) => Value::Int(s.nchars as i64),
        (B::Len, Value::List(l)) => Value::Int(l.v.borrow().len() as i64),
        (B::Len, Value::Tuple(t)) => Value::Int(t.v.len() as i64),
        (B::Len, Value::Dict(d)) => Value::Int(d.d.borrow().len() as i64),
        (B::Len, Value::Set(d)) => Value::Int(d.d.borrow().len() as i64),
        (B::Str, Value::Str(_)) => v.clone(),
        (B::Str, Value::Int(i)) => Value::str(*i),
        (B::Int, Value::Int(_)) => v.clone(),
        (B::Float, Value::Float(_)) => v.clone(),
        (B::Float, Value::Int(i)) => Value::Float(*i as f64),
        (B::Bool, _) => Value::Bool(v.truthy()),
        (B::Abs, Value::Int(i)) if *i != i64::MIN => Value::Int(i.abs()),
        (B::Abs, Value::Float(f)) => Value::new_float(f.abs()),
        _ => return None,
    }))
}

/// `str(int)` for big ints, with CPython 3.11's 4300-digit limit.
///
/// # Errors
/// ValueError beyond the limit.
pub fn big_to_str(b: &BigInt) -> InterpResult<String> {
    // 4300 decimal digits need about 14284 bits; anything with more than
    // 14300 bits has more than 4300 digits, so refuse without converting
    // (the conversion itself is quadratic).
    if b.bits() > 14_300 {
        return Err(value_err(
            "Exceeds the limit (4300 digits) for integer string conversion; use sys.set_int_max_str_digits() to increase the limit",
        ));
    }
    if b.bits() > 14_200 {
        let s = b.abs().to_string();
        if s.len() > 4300 {
            return Err(value_err(
                "Exceeds the limit (4300 digits) for integer string conversion; use sys.set_int_max_str_digits() to increase the limit",
            ));
        }
        tick(s.len() as u64 / 8)?;
        return Ok(b.to_string());
    }
    Ok(b.to_string())
}

/// Convert plain data into a value.
///
/// # Errors
/// `depth` limit on absurdly deep data; malformed big ints.
pub fn from_data(d: &Data, depth: usize) -> InterpResult<Value> {
    super::budget::stack_check("")?;
    if depth > MAX_DATA_DEPTH {
        return Err(Exc::limit(
            "depth",
            format!(
                "depth limit exceeded: a tool result nests deeper than {MAX_DATA_DEPTH} levels"
            ),
        ));
    }
    Ok(match d {
        Data::None => Value::None,
        Data::Bool(b) => Value::Bool(*b),
        Data::Int(i) => Value::Int(*i),
        Data::BigInt(s) => Value::from_big(
            s.parse::<BigInt>()
                .map_err(|_| Exc::internal("malformed big integer from a tool"))?,
        ),
        Data::Float(f) => Value::Float(*f),
        Data::Str(s) => Value::str(s.as_str()),
        Data::List(v) => Value::list(
            v.iter()
                .map(|x| from_data(x, depth + 1))
                .collect::<InterpResult<_>>()?,
        ),
        Data::Tuple(v) => Value::tuple(
            v.iter()
                .map(|x| from_data(x, depth + 1))
                .collect::<InterpResult<_>>()?,
        ),
        Data::Set(v) => {
            let mut dd = Dict::new();
            for x in v {
                dd.insert(from_data(x, depth + 1)?, Value::None)?;
            }
            Value::set(dd)
        }
        Data::Dict(v) => {
            let mut dd = Dict::new();
            for (k, x) in v {
                dd.insert(from_data(k, depth + 1)?, from_data(x, depth + 1)?)?;
            }
            Value::dict(dd)
        }
    })
}

/// Index into a sequence of length `n` (negative from the end).
///
/// # Errors
/// TypeError for non-int indices, IndexError when out of range.
pub fn seq_index(idx: &Value, n: usize, what: &str) -> InterpResult<usize> {
    let i = match idx {
        Value::Int(i) => *i,
        Value::Bool(b) => *b as i64,
        Value::Big(_) => {
            return Err(Exc::py(
                "IndexError",
                "cannot fit 'int' into an index-sized integer",
            ))
        }
        _ => {
            let w = if what == "range object" {
                "range"
            } else {
                what
            };
            return Err(type_err(format!(
                "{w} indices must be integers or slices, not {}",
                idx.type_name()
            )));
        }
    };
    let r = if i < 0 { i + n as i64 } else { i };
    if r < 0 || r >= n as i64 {
        let w = match what {
            "list" => "list index out of range",
            "tuple" => "tuple index out of range",
            "string" => "string index out of range",
            _ => "range object index out of range",
        };
        return Err(Exc::py("IndexError", w));
    }
    Ok(r as usize)
}

fn slice_arg(v: &Value) -> InterpResult<Option<i64>> {
    Ok(match v {
        Value::None => None,
        Value::Int(i) => Some(*i),
        Value::Bool(b) => Some(*b as i64),
        Value::Big(b) => Some(if b.is_negative() {
            i64::MIN / 2
        } else {
            i64::MAX / 2
        }),
        _ => {
            return Err(type_err(
                "slice indices must be integers or None or have an __index__ method",
            ))
        }
    })
}

/// CPython's `PySlice_AdjustIndices`: (start, stop, step) clamped to `n`.
///
/// # Errors
/// ValueError for a zero step; TypeError for bad bounds.
pub fn slice_adjust(lo: &Value, hi: &Value, st: &Value, n: usize) -> InterpResult<(i64, i64, i64)> {
    // CPython clamps the step to [-PY_SSIZE_T_MAX, PY_SSIZE_T_MAX].
    let step = slice_arg(st)?.unwrap_or(1).max(-i64::MAX);
    if step == 0 {
        return Err(value_err("slice step cannot be zero"));
    }
    let n = n as i128;
    let (ds, de) = if step < 0 { (n - 1, -1) } else { (0, n) };
    // Adjusted bounds lie in -1..=n, which fits i64.
    let adj = |v: Option<i64>, default: i128| {
        adjust_bound(v.map(i128::from), default, n, step < 0) as i64
    };
    Ok((adj(slice_arg(lo)?, ds), adj(slice_arg(hi)?, de), step))
}

/// One slice bound adjusted to a sequence of length `n` (CPython's
/// `PySlice_AdjustIndices`): negative counts from the end, then clamped.
fn adjust_bound(v: Option<i128>, default: i128, n: i128, backwards: bool) -> i128 {
    match v {
        None => default,
        Some(mut x) => {
            if x < 0 {
                x += n;
                if x < 0 {
                    x = if backwards { -1 } else { 0 };
                }
            } else if x >= n {
                x = if backwards { n - 1 } else { n };
            }
            x
        }
    }
}

/// [`slice_adjust`] for sequences whose length may exceed i64 (ranges).
///
/// # Errors
/// As [`slice_adjust`].
pub fn slice_adjust128(
    lo: &Value,
    hi: &Value,
    st: &Value,
    n: i128,
) -> InterpResult<(i128, i128, i128)> {
    let arg = |v: &Value| -> InterpResult<Option<i128>> {
        Ok(match v {
            Value::None => None,
            Value::Int(i) => Some(*i as i128),
            Value::Bool(b) => Some(*b as i128),
            Value::Big(b) => Some(b.to_i128().unwrap_or(if b.is_negative() {
                -(1i128 << 110)
            } else {
                1i128 << 110
            })),
            _ => {
                return Err(type_err(
                    "slice indices must be integers or None or have an __index__ method",
                ))
            }
        })
    };
    let step = arg(st)?.unwrap_or(1);
    if step == 0 {
        return Err(value_err("slice step cannot be zero"));
    }
    let adj = |v: Option<i128>, default: i128| adjust_bound(v, default, n, step < 0);
    let (ds, de) = if step < 0 { (n - 1, -1) } else { (0, n) };
    Ok((adj(arg(lo)?, ds), adj(arg(hi)?, de), step))
}

fn slice_len(start: i64, stop: i64, step: i64) -> usize {
    if step > 0 {
        if stop > start {
            ((stop - start - 1) / step + 1) as usize
        } else {
            0
        }
    } else if start > stop {
        ((start - stop - 1) / (-step) + 1) as usize
    } else {
        0
    }
}

/// `(start, step, len)` of the slice `[lo:hi:st]` of a sequence of length `n`.
///
/// # Errors
/// As [`slice_adjust`].
pub fn slice_plan(lo: &Value, hi: &Value, st: &Value, n: usize) -> InterpResult<(i64, i64, usize)> {
    let (start, stop, step) = slice_adjust(lo, hi, st, n)?;
    Ok((start, step, slice_len(start, stop, step)))
}

/// The index of the `k`-th item a slice planned by [`slice_plan`] selects.
#[inline]
pub fn slice_at(start: i64, step: i64, k: usize) -> usize {
    (start + k as i64 * step) as usize
}

/// The indices a slice selects from a sequence of length `n`.
///
/// # Errors
/// As [`slice_adjust`].
pub fn slice_indices(lo: &Value, hi: &Value, st: &Value, n: usize) -> InterpResult<Vec<usize>> {
    let (start, stop, step) = slice_adjust(lo, hi, st, n)?;
    let len = slice_len(start, stop, step);
    Ok((0..len)
        .map(|k| (start + k as i64 * step) as usize)
        .collect())
}

/// Shortcut used by builtins: an i64 out of an int-like value.
pub fn as_i64(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Bool(b) => Some(*b as i64),
        Value::Big(b) => b.to_i64(),
        _ => None,
    }
}

/// An operand from [`Interp::int_operand`] as a value.
#[inline]
fn int_or_value(x: Result<i64, Value>) -> Value {
    match x {
        Ok(i) => Value::Int(i),
        Err(v) => v,
    }
}

/// An item of a display that CPython's compiler sees as a constant (after
/// folding `-1` and tuples of constants).
fn const_elt(e: &Elt) -> bool {
    match e {
        Elt::One(x) => match &x.k {
            ExprKind::Const(_) => true,
            ExprKind::Neg(y) | ExprKind::Pos(y) => {
                matches!(
                    &y.k,
                    ExprKind::Const(
                        Value::Int(_) | Value::Big(_) | Value::Float(_) | Value::Bool(_)
                    )
                )
            }
            _ => false,
        },
        Elt::Star(_) => false,
    }
}
