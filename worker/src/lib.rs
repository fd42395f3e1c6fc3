//! lackpy's executor worker: the interpreter (`interp`), and the child side
//! of the jail and IPC. See README.md.
#![warn(missing_docs)]

pub mod interp;
pub mod ipc;
pub mod jail;
pub mod role;
pub mod zygote;
