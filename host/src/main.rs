//! `hwwfc`: the command line of HW-WFC.
//!
//! ```text
//! main.rs            argument parsing and dispatch
//! cli.rs             the subcommands and their options
//! commands/          one module per subcommand (schedule, profile, calibrate, report, tune)
//! input/             spec, model and coefficient files, and the built-ins
//! solve.rs           building the problem and running the solvers, timed
//! timing.rs          median-of-repeats timing
//! describe.rs        short text forms of layers and states
//! output/            the table, the JSON report, the problem dump
//! atomic_write.rs    files written via a temporary file and a rename
//! gpu/               the CUDA device, NVRTC compilation, event timing (cudarc)
//! profile/           workloads, configurations, records, the measuring loop
//! calibrate/         the dataset, metrics, fitting (argmin), cross-validation, reports, plots
//! ```
//!
//! Every failure is one line on stderr starting with `error:` and a
//! non-zero exit status.

#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used, clippy::panic))]

mod atomic_write;
mod calibrate;
mod cli;
mod commands;
mod describe;
mod gpu;
mod input;
mod output;
mod profile;
mod solve;
mod timing;

use clap::Parser;
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let result = match &cli.command {
        cli::Command::Schedule(args) => commands::schedule::run(args),
        cli::Command::Profile(args) => commands::profile::run(args),
        cli::Command::Calibrate(args) => commands::calibrate::run(args),
        cli::Command::Report(args) => commands::report::run(args),
        cli::Command::Tune(args) => commands::tune::run(args),
        cli::Command::Judge(args) => commands::judge::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // `{:#}` joins the causes with ": "; keep it to one line.
            let message = format!("{e:#}").replace('\n', " ");
            let _ = writeln!(std::io::stderr(), "error: {message}");
            ExitCode::FAILURE
        }
    }
}
