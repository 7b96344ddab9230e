//! One module per subcommand; each exposes `run(&Args) -> Result<()>`.
//!
//! - [`schedule`]: schedule a model on a spec (WFC and the exact DP).
//! - [`profile`]: time the CUDA kernels' configurations on a GPU.
//! - [`calibrate`]: fit the cost model to the records, with a held-out report.
//! - [`report`]: judge a cost model against records.
//! - [`tune`]: measure only the model's top-k configurations.
//!
//! Commands to come (`profile` on a GPU, `calibrate`, `report`, `tune`)
//! get a module here and a variant of [`crate::cli::Command`].

pub mod calibrate;
pub mod profile;
pub mod report;
pub mod schedule;
pub mod tune;
