//! One module per subcommand; each exposes `run(&Args) -> Result<()>`.
//!
//! - [`schedule`]: schedule a model on a spec (WFC and the exact DP).
//! - [`profile`]: time the CUDA kernels' configurations on a GPU.
//! - [`calibrate`]: fit the cost model to the records, with a held-out report.
//! - [`report`]: judge a cost model against records.
//! - [`tune`]: measure only the model's top-k configurations.
//! - [`judge`]: measure several runs' choices side by side, against the
//!   exhaustive best.
//!
//! A new command gets a module here and a variant of
//! [`crate::cli::Command`].

pub mod calibrate;
pub mod judge;
pub mod profile;
pub mod report;
pub mod schedule;
pub mod tune;
