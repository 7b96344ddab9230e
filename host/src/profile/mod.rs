//! The profiler: real timings of every (workload, configuration) pair on a
//! GPU, each checked for correctness before it is timed, written as soon as
//! it is measured.
//!
//! - [`workload`]: the workloads file (which shapes to measure);
//! - [`config`]: the configurations, taken from the core's candidate space
//!   and constraints, so that what the core can pick is what is measured;
//! - [`record`]: the records file (JSON lines), its reading, resuming and
//!   repair of a truncated last line;
//! - [`runner`]: the measuring loop on the GPU.

pub mod chain;
pub mod config;
pub mod meta;
pub mod record;
pub mod runner;
pub mod workload;
