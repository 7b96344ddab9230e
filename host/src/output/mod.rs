//! What the commands print and write: the schedule table, its JSON form,
//! the problem dump for outside solvers, and a profiling run's plan.

pub mod dump;
pub mod json;
pub mod plan;
pub mod table;

use crate::input::coefficients_file::LoadedCoefficients;
use crate::input::model_file::LoadedModel;
use crate::input::spec_file::LoadedSpec;
use crate::solve::Outcome;
use anyhow::{Context, Result};
use std::io::Write;

/// Everything a schedule report shows.
#[derive(Debug, Clone, Copy)]
pub struct ScheduleView<'a> {
    /// The spec scheduled on.
    pub spec: &'a LoadedSpec,
    /// The model scheduled.
    pub model: &'a LoadedModel,
    /// The cost model's coefficients.
    pub coefficients: &'a LoadedCoefficients,
    /// The problem and the solvers' results.
    pub outcome: &'a Outcome,
}

/// Writes `text` to stdout. A closed pipe (`hwwfc ... | head`) is not an
/// error: the reader has what it wanted.
pub fn write_stdout(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("cannot write to stdout"),
    }
}
