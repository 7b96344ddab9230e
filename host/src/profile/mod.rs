//! The profiler: real timings of every (workload, configuration) pair on a
//! GPU, each checked for correctness before it is timed, written as soon as
//! it is measured.
//!
//! - [`workload`]: the workloads file (which shapes to measure);
//! - [`config`]: the configurations, taken from the core's candidate space
//!   and constraints, so that what the core can pick is what is measured;
//! - [`record`]: the records file (JSON lines), its reading, resuming and
//!   repair of a truncated last line;
//! - [`runner`]: the measuring loop on the GPU;
//! - [`faults`]: what a failure on the GPU path becomes (a failed record
//!   and the run going on, or the end of the run), and the memory check
//!   before a workload's buffers are allocated.

pub mod chain;
pub mod config;
pub mod faults;
pub mod meta;
pub mod record;
pub mod runner;
pub mod workload;
