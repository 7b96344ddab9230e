//! Fuzz targets of HW-WFC, and the checks they run.
//!
//! The checks live in two files that compile on stable Rust and are
//! included by path into the regression tests, which replay the committed
//! corpus and crash inputs in `cargo xtask test`:
//!
//! - [`core_checks`] (`core/tests/fuzz_regressions.rs`): the wire format,
//!   the solvers on random chains, and specs, models and coefficients
//!   received in the wire format, built, solved and encoded;
//! - [`host_checks`] (`host/tests/fuzz_regressions.rs`): the host's spec,
//!   model, coefficient and workloads files.
//!
//! `cargo xtask fuzz` runs each target for a bounded time (see README.md).

pub mod core_checks;
pub mod host_checks;
