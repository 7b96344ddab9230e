//! `hwwfc`: the command line of HW-WFC. The work is done by the library
//! (`lib.rs`); this parses the arguments, runs the subcommand, and turns a
//! failure into one line on stderr starting with `error:` and a non-zero
//! exit status.

use clap::Parser;
use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = hwwfc::cli::Cli::parse();
    match hwwfc::commands::run(&cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // `{:#}` joins the causes with ": "; keep it to one line.
            let message = format!("{e:#}").replace('\n', " ");
            let _ = writeln!(std::io::stderr(), "error: {message}");
            ExitCode::FAILURE
        }
    }
}
