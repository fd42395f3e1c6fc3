//! The interpreter's internal error: a Python exception, an exceeded limit,
//! a tool failure, or an internal fault, plus the source position that raised it.

use lackpy_policy::wire::{ErrorInfo, ErrorKind};

/// What went wrong.
#[derive(Debug, Clone, PartialEq)]
pub enum ExcKind {
    /// A Python exception of this type.
    Py(&'static str),
    /// A limit (`fuel`, `memory`, ...).
    Limit(&'static str),
    /// A tool failure with this type name.
    Tool(String),
    /// An interpreter fault.
    Internal,
}

/// A raised error.
#[derive(Debug, Clone, PartialEq)]
pub struct Exc {
    /// Kind and type.
    pub kind: ExcKind,
    /// CPython's message.
    pub msg: String,
    /// Byte offset of the expression or statement that raised, once known.
    pub pos: Option<u32>,
}

/// Result of interpreter operations; the error is boxed to keep `Ok` paths small.
pub type InterpResult<T> = Result<T, Box<Exc>>;

impl Exc {
    /// A Python exception.
    pub fn py(ty: &'static str, msg: impl Into<String>) -> Box<Exc> {
        Box::new(Exc {
            kind: ExcKind::Py(ty),
            msg: msg.into(),
            pos: None,
        })
    }
    /// A limit error.
    pub fn limit(name: &'static str, msg: impl Into<String>) -> Box<Exc> {
        Box::new(Exc {
            kind: ExcKind::Limit(name),
            msg: msg.into(),
            pos: None,
        })
    }
    /// An internal error.
    pub fn internal(msg: impl Into<String>) -> Box<Exc> {
        Box::new(Exc {
            kind: ExcKind::Internal,
            msg: msg.into(),
            pos: None,
        })
    }
    /// Convert to the contract's error object (position resolved by the caller).
    pub fn to_info(&self) -> ErrorInfo {
        match &self.kind {
            ExcKind::Py(t) => ErrorInfo::new(ErrorKind::Runtime, *t, self.msg.clone()),
            ExcKind::Limit(t) => ErrorInfo::new(ErrorKind::Limit, *t, self.msg.clone()),
            ExcKind::Tool(t) => ErrorInfo::new(ErrorKind::Tool, t.clone(), self.msg.clone()),
            ExcKind::Internal => {
                ErrorInfo::new(ErrorKind::Internal, "InternalError", self.msg.clone())
            }
        }
    }
}

/// `TypeError(msg)`.
pub fn type_err(msg: impl Into<String>) -> Box<Exc> {
    Exc::py("TypeError", msg)
}

/// `ValueError(msg)`.
pub fn value_err(msg: impl Into<String>) -> Box<Exc> {
    Exc::py("ValueError", msg)
}
