//! `hwwfc schedule`: load a spec, a model and coefficients; build the
//! problem; solve it with WFC and/or the exact DP; print a table or JSON;
//! optionally dump the reduced problem.

use crate::atomic_write;
use crate::cli::{ScheduleArgs, SolverChoice};
use crate::input::{coefficients_file, model_file, spec_file};
use crate::output::{self, ScheduleView};
use crate::solve::{self, Solvers};
use anyhow::Result;

/// Runs the command.
pub fn run(args: &ScheduleArgs) -> Result<()> {
    let spec = spec_file::load(&args.spec)?;
    let model = model_file::load(&args.model, args.seq)?;
    // Calibrated coefficients, where the binary has them for this spec,
    // unless a file is given.
    let coefficients = match (&args.coefficients, coefficients_file::calibrated_for(&spec.spec.name)?) {
        (None, Some(calibrated)) => calibrated,
        (path, _) => coefficients_file::load(path.as_deref())?,
    };
    let solvers = match args.solver {
        SolverChoice::Wfc => Solvers { wfc: true, exact: false },
        SolverChoice::Exact => Solvers { wfc: false, exact: true },
        SolverChoice::Both => Solvers { wfc: true, exact: true },
    };
    let outcome = solve::run(&model.graph, &spec.spec, &coefficients.coefficients, solvers)?;

    if let Some(path) = &args.dump_problem {
        let optimum = match &outcome.exact {
            Some(run) => run.solution.clone(),
            None => solve::solve_exact(&outcome.problem, &model.graph)?.0,
        };
        let text = output::dump::render(&spec.spec.name, &model.name, &model.graph, &outcome.problem, &optimum)?;
        atomic_write::write(path, text.as_bytes())?;
    }

    let view = ScheduleView { spec: &spec, model: &model, coefficients: &coefficients, outcome: &outcome };
    let text = if args.json { output::json::render(&view)? } else { output::table::render(&view) };
    output::write_stdout(&text)
}
