//! The one integration test binary (ripgrep's layout: one link instead of
//! many). Each module drives the real `lackpy` binary.

mod delegate;
mod escapes;
mod first_hour;
mod fuzz_smoke;
mod jail;
mod layer_matrix;
mod mcp;
mod mcp_remote;
mod mcp_source;
mod mcp_util;
mod providers;
mod run;
mod serve;
mod serve_http;
mod serve_scale;
mod sessions;
mod supervisor_side;
mod terminal;
mod ts_sdk;
mod util;
