//! The profiler: real timings of every (workload, configuration) pair on a
//! GPU, each checked for correctness before it is timed, written as soon as
//! it is measured.
//!
//! - [`options`]: what a run is asked ([`Options`]) and what it did
//!   ([`Summary`]);
//! - [`task`]: one record to make, and a run's tasks per workload;
//! - [`plan`]: the records still to make, given what the run folder holds
//!   and the run's shard;
//! - [`estimate`]: each task's predicted device time, from the cost model
//!   and the timing policy;
//! - [`shard`]: the work dealt into equal parts for several processes;
//! - [`deal`]: workloads dealt to the workers of a run over several GPUs
//!   as they free up, one writer for all;
//! - [`compiled`]: the run's kernels, compiled in parallel before measuring;
//! - [`runner`]: the loop over workloads, with its progress bar and log;
//! - [`context`]: the state of a run in progress and the steps every
//!   workload shares;
//! - [`measure`]: one workload of a kernel family: check, time, baseline;
//! - [`anchors`]: the transpose and the copy, measured for scale;
//! - [`faults`]: what a failure on the GPU path becomes (a failed record
//!   and the run going on, or the end of the run), and the memory check
//!   before a workload's buffers are allocated;
//! - [`kernels`]: a schedule as the kernels it runs (an elementwise layer
//!   in its producer's epilogue runs in that matmul's kernel);
//! - [`chain`]: a whole schedule run back to back (`schedule --measure`);
//! - [`tenants`]: two tenants' schedules at once, each in a green context
//!   of its own (`tenants --measure`).
//!
//! The records and metadata go to a [`crate::database::RunFolder`]; the
//! kernels are reached through [`crate::family`].

pub mod anchors;
pub mod chain;
pub mod compiled;
pub mod context;
pub mod deal;
pub mod estimate;
pub mod faults;
pub mod kernels;
pub mod measure;
pub mod options;
pub mod plan;
pub mod runner;
pub mod shard;
pub mod task;
pub mod tenants;

pub use options::{GpuList, Options, Select, SpecFor, Summary};
pub use runner::run;
