//! The checks of HW-WFC's fuzz targets, on stable Rust. Each takes
//! arbitrary bytes and panics (the fuzzer's signal) only where the code
//! under test breaks a promise. The cargo-fuzz targets of `fuzz/` call
//! them under libFuzzer; `tests/regressions.rs` replays the committed
//! corpus and crash inputs through them in `cargo xtask test`.
//!
//! - [`core_checks`]: the wire format, the solvers on random chains, and
//!   specs, models and coefficients received in the wire format, built,
//!   solved and encoded (`hwwfc-core`);
//! - [`host_checks`]: the host's spec, model, coefficient and workloads
//!   files (`hwwfc::input`).
//!
//! `cargo xtask fuzz` runs each target for a bounded time (see
//! `fuzz/README.md`).

pub mod core_checks;
pub mod host_checks;
