//! One module per subcommand. Each exposes `Args` (clap) and
//! `main(Args) -> anyhow::Result<i32>` returning the exit status:
//! 0 ok, 1 runtime/tool/limit error, 2 validation error,
//! 3 usage or configuration error, 4 internal error.

pub mod common;
pub mod delegate;
pub mod doctor;
pub mod escape;
pub mod mcp;
pub mod profile;
pub mod run;
pub mod serve;
pub mod tools;
pub mod trace;
pub mod validate;
pub mod worker;
