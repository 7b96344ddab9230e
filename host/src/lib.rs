//! `hwwfc`: the host side of HW-WFC, as a library under the command line.
//!
//! The binary (`main.rs`) parses the arguments and calls [`commands`]; the
//! fuzz targets and the tests call the same modules. From the inputs up:
//!
//! ```text
//! input/         spec, model, coefficient and workloads files, and the built-ins
//! solve.rs       building the problem and running the solvers, timed
//! tenants.rs     two tenants on partitions of one GPU: the split and their schedules
//! output/        the schedule table, its JSON form, the problem dump
//! gpu/           the CUDA device, NVRTC, typed kernel launches, cuBLAS, event timing
//! family/        kernel families: one module per family behind one interface
//! database/      the run folder: records, run metadata, the writer, the reader, resume
//! profile/       the measuring loop over workloads and families, and its faults
//! tuning/        ranking by the cost model, finalists, side-by-side passes
//! calibrate/     the dataset, metrics, fitting (argmin), cross-validation, reports, plots
//! commands/      one module per subcommand: arguments in, tables and files out
//! cli.rs         the subcommands and their options
//! stats.rs       the median and quantiles of samples
//! timing.rs      median-of-repeats timing of host code
//! describe.rs    short text forms of layers and states
//! atomic_write.rs  files written via a temporary file and a rename
//! ```
//!
//! Arrows point down the list only as far as the layers allow: `commands`
//! uses everything, nothing uses `commands`; `profile`, `tuning` and
//! `calibrate` use `database`, `family`, `gpu` and `input`; `gpu` and
//! `input` use only the core. `ARCHITECTURE.md` at the repository root
//! draws the whole picture.

#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

pub mod atomic_write;
pub mod calibrate;
pub mod cli;
pub mod commands;
pub mod database;
pub mod describe;
pub mod family;
pub mod gpu;
pub mod input;
pub mod output;
pub mod profile;
pub mod solve;
pub mod stats;
pub mod tenants;
pub mod timing;
pub mod tuning;
