//! The one integration-test binary of this crate (one link instead of
//! 2); each file of `tests/` is a module here.

mod conformance;
mod globals;
mod rng;
