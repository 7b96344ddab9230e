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
    let spec = spec_file::load(&args.spec)?.cut(&args.partition)?;
    let model = model_file::load(&args.model, args.seq)?;
    let coefficients =
        coefficients_file::for_spec(args.coefficients.as_deref(), &spec.spec.name, args.allow_other_gpu)?;
    let solvers = match args.solver {
        SolverChoice::Wfc => Solvers { wfc: true, exact: false },
        SolverChoice::Exact => Solvers { wfc: false, exact: true },
        SolverChoice::Both => Solvers { wfc: true, exact: true },
    };
    let options = hwwfc_core::BuildOptions { fusion: !args.no_fusion };
    let outcome = solve::run(&model.graph, &spec.spec, &coefficients.coefficients, solvers, options)?;

    if let Some(path) = &args.dump_problem {
        // The exact optimum where the exact solver can find it; else (a
        // DAG whose loop cutset is over the budget) WFC's schedule, marked
        // as not proven optimal, for an outside solver to judge.
        let best = match (&outcome.exact, &outcome.wfc) {
            (Some(run), _) => output::dump::Best::Optimal(run.solution.clone()),
            (None, wfc) => match (solve::solve_exact(&outcome.problem, &model.graph), wfc) {
                (Ok((solution, _)), _) => output::dump::Best::Optimal(solution),
                (Err(_), Some(w)) if outcome.exact_skipped.is_some() || !solvers.exact => {
                    output::dump::Best::Wfc(w.solution.clone())
                }
                (Err(e), _) => return Err(e),
            },
        };
        let text = output::dump::render(&spec.spec.name, &model.name, &model.graph, &outcome.problem, &best)?;
        atomic_write::write(path, text.as_bytes())?;
    }

    let view = ScheduleView { spec: &spec, model: &model, coefficients: &coefficients, outcome: &outcome };
    let text = if args.json { output::json::render(&view)? } else { output::table::render(&view) };
    output::write_stdout(&text)?;
    if args.measure {
        measure(args, &spec.spec, &model, &outcome)?;
    }
    Ok(())
}

/// `--measure`: the schedule end to end on the GPU, and each layer's best
/// ([`crate::profile::chain::measure_schedule`]).
fn measure(
    args: &ScheduleArgs,
    spec: &hwwfc_core::HardwareSpec,
    model: &model_file::LoadedModel,
    outcome: &solve::Outcome,
) -> Result<()> {
    use crate::family;
    use hwwfc_core::Problem;
    if !spec.space.is_cuda() {
        anyhow::bail!("--measure runs the CUDA kernels: use a spec of the cuda or hopper space (such as h200)");
    }
    // The exact schedule where it ran, else WFC's.
    let solution = match (&outcome.exact, &outcome.wfc) {
        (Some(e), _) => &e.solution,
        (None, Some(w)) => &w.solution,
        (None, None) => anyhow::bail!("no schedule to measure"),
    };
    let mut states = Vec::new();
    for (i, &s) in solution.states.iter().enumerate() {
        let plan = outcome.problem.layer(i).ok_or_else(|| anyhow::anyhow!("layer {i} missing"))?;
        states.push((s, *plan.state(s).ok_or_else(|| anyhow::anyhow!("state {s} missing"))?));
    }
    let layers = crate::profile::kernels::of_schedule(&model.graph, &states)?;
    let predicted: f64 =
        (0..outcome.problem.layer_count()).map(|i| outcome.problem.unary(i, solution.states[i]) as f64).sum();
    // Every configuration of every layer's shape, for the per-layer best
    // (none with --chain-only).
    let out = args.measure_out.clone().unwrap_or_else(|| format!("measure-{}", model.name).into());
    let m = crate::profile::chain::measure_schedule(
        args.gpu,
        &layers,
        spec,
        out.clone(),
        format!("measure-{}", model.name),
        !args.chain_only,
    )?;
    if args.chain_only {
        println!("\nmeasured on GPU {}, the chain alone:", args.gpu);
        for l in &m.layers {
            let kind = l.workload.op().map(|o| o.kind()).unwrap_or(hwwfc_core::OpKind::MatMul);
            println!("  {}  {}", l.workload.name(), family::for_config(kind, &l.scheduled).label(&l.scheduled));
        }
    } else {
        print_layers(args.gpu, &out, &m);
    }
    println!(
        "\nend to end: {:.2} us measured (median of {}), {:.2} us predicted",
        m.chain.median_us, m.chain.repeats, predicted
    );
    println!(
        "the same chain with the vendor's library: {:.2} us (median of {}; cuBLAS ran {} of the {} kernels, the others \
         are our kernels as scheduled); the schedule takes {:.1}% of its time",
        m.vendor_chain.median_us,
        m.vendor_chain.repeats,
        m.vendor_layers,
        m.layers.len(),
        m.chain.median_us / m.vendor_chain.median_us * 100.0
    );
    Ok(())
}

/// Each kernel of a measured schedule against its shape's measured best,
/// and their sums against the end-to-end time.
fn print_layers(gpu: usize, out: &std::path::Path, m: &crate::profile::chain::ScheduleTiming) {
    use crate::family;
    println!("\nmeasured on GPU {gpu} ({}):", out.display());
    let (mut sum_chosen, mut sum_best) = (0.0, 0.0);
    let mut rows = Vec::new();
    for l in &m.layers {
        let kind = l.workload.op().map(|o| o.kind()).unwrap_or(hwwfc_core::OpKind::MatMul);
        sum_chosen += l.scheduled_us.unwrap_or(f64::NAN);
        sum_best += l.best.map_or(f64::NAN, |b| b.1);
        rows.push([
            l.workload.name().to_string(),
            family::for_config(kind, &l.scheduled).label(&l.scheduled),
            format!("{:.2}", l.scheduled_us.unwrap_or(f64::NAN)),
            format!("{:.2}", l.best.map_or(f64::NAN, |b| b.1)),
            l.best.map_or("-".into(), |b| family::for_config(kind, &b.0).label(&b.0)),
        ]);
    }
    // Columns as wide as their widest cell (a fused kernel's name and label
    // are long).
    let header = ["kernel", "scheduled", "time_us", "best_us", "best config"].map(String::from);
    let mut width = header.clone().map(|h| h.len());
    for row in &rows {
        for (w, cell) in width.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let [name, chosen, t, best, best_config] = row;
        println!(
            "{name:<w0$}  {chosen:<w1$}  {t:>w2$}  {best:>w3$}  {best_config}",
            w0 = width[0],
            w1 = width[1],
            w2 = width[2],
            w3 = width[3]
        );
    }
    println!(
        "\nsum of the scheduled kernels alone {:.2} us; sum of each kernel's measured best {:.2} us ({:.1}% of the \
         end-to-end time)",
        sum_chosen,
        sum_best,
        sum_best / m.chain.median_us * 100.0
    );
}
