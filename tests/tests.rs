//! The one integration test binary (ripgrep's layout: one link instead of
//! many). Each module drives the real `lackpy` binary.

mod util;
mod escapes;
mod mcp;
mod sessions;
mod fuzz_smoke;
mod jail;
mod run;
mod delegate;
mod layer_matrix;
mod providers;
mod serve;
mod mcp_source;
