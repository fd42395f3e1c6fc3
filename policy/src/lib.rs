//! lackpy's pure core. See README.md.
#![warn(missing_docs)]

pub mod config;
pub mod lang;
pub mod wire;

pub use lang::{
    first_error, validate, validate_bytes, validate_with_predefined, Grade, Namespace, Program,
    ToolEntry,
};
pub use wire::{Data, ErrorInfo, ErrorKind, Limits};
