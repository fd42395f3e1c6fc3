//! The one integration test binary (ripgrep's layout: one link instead of
//! many). Each module drives the real `lackpy` binary.

mod util;
mod mcp;
mod escapes;
mod fuzz_smoke;
mod layer_matrix;
mod jail;
mod run;
mod delegate;
mod providers;
