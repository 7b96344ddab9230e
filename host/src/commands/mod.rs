//! One module per subcommand; each exposes `run(&Args) -> Result<()>` and
//! does only argument handling and output: the work is in the library's
//! other modules.
//!
//! - [`schedule`]: schedule a model on a spec (WFC and the exact DP), and
//!   with `--measure` run the schedule on the GPU.
//! - [`profile`]: time the kernel families' configurations on a GPU.
//! - [`calibrate`]: fit the cost model to the records, with a held-out report.
//! - [`report`]: judge a cost model against records.
//! - [`tune`]: measure only the model's top-k configurations.
//! - [`judge`]: measure several runs' choices side by side, against the
//!   exhaustive best.
//! - [`merge`]: one run folder from the shards of a run measured apart.
//! - [`partitions`]: judge a cost model on several partitions of one GPU.
//! - [`tenants`]: two tenants on partitions of one GPU: the split, their
//!   schedules, and with `--measure` both at once on the GPU.
//!
//! A new command gets a module here, a variant of
//! [`crate::cli::Command`] and a line in [`run`].

pub mod calibrate;
pub mod judge;
pub mod merge;
pub mod partitions;
pub mod profile;
pub mod report;
pub mod schedule;
pub mod tenants;
pub mod tune;

use crate::cli::Command;
use anyhow::Result;

/// Runs one subcommand.
pub fn run(command: &Command) -> Result<()> {
    match command {
        Command::Schedule(args) => schedule::run(args),
        Command::Profile(args) => profile::run(args),
        Command::Calibrate(args) => calibrate::run(args),
        Command::Report(args) => report::run(args),
        Command::Tune(args) => tune::run(args),
        Command::Judge(args) => judge::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Partitions(args) => partitions::run(args),
        Command::Tenants(args) => tenants::run(args),
    }
}
