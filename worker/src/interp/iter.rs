//! Iterator objects: the lazy ones a program can hold (enumerate, zip,
//! reversed, generator expressions, iterators over containers).

use std::rc::Rc;

use super::compile::Comp;
use super::value::{DictObj, List, PyStr, SetObj, Tuple, Value, ViewKind};

/// State of a lazy generator expression.
#[derive(Debug)]
pub struct GenState {
    /// The comprehension.
    pub comp: Rc<Comp>,
    /// One active iterator per `for` clause that has started.
    pub iters: Vec<Iter>,
    /// Saved values of the generator's own variables while suspended.
    pub saved: Vec<Option<Value>>,
    /// Finished?
    pub done: bool,
}

/// An iterator.
#[derive(Debug)]
pub enum Iter {
    /// Over a live list.
    List(Rc<List>, usize),
    /// Over a tuple.
    Tuple(Rc<Tuple>, usize),
    /// Over a str (byte offset).
    Str(Rc<PyStr>, usize),
    /// Over a range.
    Range {
        /// Next value.
        cur: i128,
        /// Values left.
        left: usize,
        /// Step.
        step: i128,
    },
    /// Over a dict (entry position, size at start, entries left to yield).
    Dict(Rc<DictObj>, usize, usize, ViewKind, usize),
    /// Over a set.
    Set(Rc<SetObj>, usize, usize),
    /// `reversed(seq)`: next index to yield is `i - 1`.
    Rev(Value, usize),
    /// `reversed(dict or view)`: over the live dict from the end (raw entry
    /// position to look at next is `pos - 1`, size at start).
    RevDict(Rc<DictObj>, usize, usize, ViewKind),
    /// `enumerate`.
    Enumerate(Box<Iter>, Value),
    /// `zip`.
    Zip(Vec<Iter>, bool),
    /// A shared iterator object (an `Iter` value iterated again).
    Shared(Rc<std::cell::RefCell<Iter>>),
    /// A generator expression.
    Gen(Box<GenState>),
    /// Exhausted.
    Done,
}

impl Iter {
    /// The Python type name of this iterator.
    pub fn type_name(&self) -> &'static str {
        match self {
            Iter::List(..) => "list_iterator",
            Iter::Tuple(..) => "tuple_iterator",
            Iter::Str(..) => "str_ascii_iterator",
            Iter::Range { .. } => "range_iterator",
            Iter::Dict(_, _, _, ViewKind::Keys, _) => "dict_keyiterator",
            Iter::Dict(_, _, _, ViewKind::Values, _) => "dict_valueiterator",
            Iter::Dict(_, _, _, ViewKind::Items, _) => "dict_itemiterator",
            Iter::Set(..) => "set_iterator",
            Iter::Rev(Value::List(_), _) => "list_reverseiterator",
            Iter::Rev(Value::Range(_), _) => "range_iterator",
            Iter::Rev(..) => "reversed",
            Iter::RevDict(_, _, _, ViewKind::Keys) => "dict_reversekeyiterator",
            Iter::RevDict(_, _, _, ViewKind::Values) => "dict_reversevalueiterator",
            Iter::RevDict(_, _, _, ViewKind::Items) => "dict_reverseitemiterator",
            Iter::Enumerate(..) => "enumerate",
            Iter::Zip(..) => "zip",
            Iter::Shared(s) => match s.try_borrow() {
                Ok(i) => i.type_name(),
                Err(_) => "generator",
            },
            Iter::Gen(_) => "generator",
            Iter::Done => "iterator",
        }
    }
}
