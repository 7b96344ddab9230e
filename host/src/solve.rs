//! Building the scheduling problem of a model on a spec and running the
//! solvers on it, each timed by the median of many repeats: what
//! `hwwfc schedule` (and its `--dump-problem`) prints, apart from the
//! printing, which is [`crate::output`]'s.

use crate::describe;
use crate::input::model_file::HostGraph;
use crate::timing::{self, Timing};
use anyhow::{anyhow, Result};
use hwwfc_core::constraint::{self, CONSTRAINT_COUNT};
use hwwfc_core::exact::{self, ExactStats};
use hwwfc_core::space;
use hwwfc_core::wfc::{self, WfcConfig, WfcStats};
use hwwfc_core::{BuildError, BuildOptions, Problem, StateIndex};
use hwwfc_core::{
    Coefficients, Constraint, HardwareSpec, Op, Schedule, ScheduleProblem, Solution, SolveError, HOST_DOMAIN_WORDS,
    HOST_MAX_LAYERS,
};
use std::hint::black_box;

/// The problem type of the host build (about 130 KB: keep it boxed).
pub type HostProblem = ScheduleProblem<HOST_MAX_LAYERS, HOST_DOMAIN_WORDS>;
/// A solution of a [`HostProblem`].
pub type HostSolution = Solution<HOST_MAX_LAYERS>;
/// A schedule of a [`HostProblem`].
pub type HostSchedule = Schedule<HOST_MAX_LAYERS>;

/// Relative difference of two totals below which they count as equal: a
/// few units in the last place of an `f32` sum over up to 64 layers.
pub const EQUAL_COST_TOLERANCE: f64 = 1.0e-6;

/// Which solvers to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Solvers {
    /// Run WFC.
    pub wfc: bool,
    /// Run the exact DP.
    pub exact: bool,
}

/// What one solver returned, and how long it took.
#[derive(Debug, Clone)]
pub struct SolverRun<S> {
    /// The solution (state indices and total cost).
    pub solution: HostSolution,
    /// The same as a schedule (states and per-layer costs).
    pub schedule: HostSchedule,
    /// The solver's statistics.
    pub stats: S,
    /// Median solve time.
    pub timing: Timing,
}

/// The problem and the results of the solvers that ran.
#[derive(Debug)]
pub struct Outcome {
    /// The problem after the constraints.
    pub problem: Box<HostProblem>,
    /// Median build time of the problem.
    pub build: Timing,
    /// WFC's result, if it ran.
    pub wfc: Option<SolverRun<WfcStats>>,
    /// The exact DP's result, if it ran.
    pub exact: Option<SolverRun<ExactStats>>,
    /// Why the exact solver was not run beside WFC: a DAG whose loop
    /// cutset has more assignments than its budget (asked for alone, that
    /// is an error instead).
    pub exact_skipped: Option<String>,
    /// Greedy choice for comparison: each layer's cheapest state, the
    /// edges ignored; its total, or `None` where that breaks a hard
    /// coupling (an epilogue state after a producer state that cannot
    /// fuse it).
    pub greedy: Option<f32>,
}

impl Outcome {
    /// The schedule to report: WFC's if it ran, else the exact one.
    pub fn primary(&self) -> Option<&HostSchedule> {
        self.wfc.as_ref().map(|r| &r.schedule).or(self.exact.as_ref().map(|r| &r.schedule))
    }

    /// Whether WFC and the exact DP chose the same states (`None` unless
    /// both ran).
    pub fn agree(&self) -> Option<bool> {
        Some(self.wfc.as_ref()?.solution.states == self.exact.as_ref()?.solution.states)
    }

    /// Whether WFC's total equals the optimum within the rounding of `f32`
    /// sums ([`EQUAL_COST_TOLERANCE`]), even if the states differ (`None`
    /// unless both ran): two solvers that add the same costs in another
    /// order may pick different states of one cost.
    pub fn equal_cost(&self) -> Option<bool> {
        let w = self.wfc.as_ref()?.solution.cost as f64;
        let e = self.exact.as_ref()?.solution.cost as f64;
        Some((w - e).abs() <= EQUAL_COST_TOLERANCE * e.abs())
    }

    /// How much more WFC's schedule costs than the optimum, in percent
    /// (`None` unless both ran).
    pub fn gap_percent(&self) -> Option<f64> {
        let w = self.wfc.as_ref()?.solution.cost as f64;
        let e = self.exact.as_ref()?.solution.cost as f64;
        Some(if e > 0.0 { (w - e) / e * 100.0 } else { 0.0 })
    }
}

/// Builds the problem (with `options`) and runs `solvers` on it.
pub fn run(
    graph: &HostGraph,
    spec: &HardwareSpec,
    k: &Coefficients,
    solvers: Solvers,
    options: BuildOptions,
) -> Result<Outcome> {
    let problem =
        HostProblem::build_with(graph, spec, k, options).map(Box::new).map_err(|e| build_error(e, graph, spec))?;
    let build = timing::median_of_repeats(|| {
        HostProblem::build_with(black_box(graph), black_box(spec), black_box(k), black_box(options))
    });
    let greedy = greedy(&problem);
    let wfc = if solvers.wfc { Some(run_wfc(&problem, graph)?) } else { None };
    let mut exact_skipped = None;
    let exact = match solvers.exact {
        false => None,
        true => match exact::solve::<_, HOST_MAX_LAYERS, HOST_DOMAIN_WORDS>(&*problem) {
            Err(SolveError::TooManyCombinations { limit }) if solvers.wfc => {
                exact_skipped = Some(format!(
                    "not run: the DAG's loop cutset has more than {limit} assignments to enumerate \
                     (WFC's schedule is shown; its gap to the optimum is not known)"
                ));
                None
            }
            Err(e) => return Err(solve_error("exact", e, graph)),
            Ok((solution, stats)) => Some(time_exact(&problem, solution, stats)?),
        },
    };
    Ok(Outcome { problem, build, wfc, exact, exact_skipped, greedy })
}

/// The total of each layer's cheapest state (the lowest index of equal
/// ones), or `None` where that assignment breaks a hard coupling.
pub fn greedy(problem: &HostProblem) -> Option<f32> {
    let states: Vec<StateIndex> = (0..problem.layer_count())
        .map(|i| problem.domain(i).iter().min_by(|a, b| problem.unary(i, *a).total_cmp(&problem.unary(i, *b))))
        .collect::<Option<_>>()?;
    hwwfc_core::problem::evaluate(problem, &states)
}

/// Builds the problem; an error names the layer it concerns.
pub fn build(graph: &HostGraph, spec: &HardwareSpec, k: &Coefficients) -> Result<Box<HostProblem>> {
    HostProblem::build(graph, spec, k).map(Box::new).map_err(|e| build_error(e, graph, spec))
}

fn run_wfc(problem: &HostProblem, graph: &HostGraph) -> Result<SolverRun<WfcStats>> {
    let config = WfcConfig::default();
    let (solution, stats) = wfc::solve::<_, HOST_MAX_LAYERS, HOST_DOMAIN_WORDS>(problem, &config)
        .map_err(|e| solve_error("WFC", e, graph))?;
    let timing = timing::median_of_repeats(|| {
        wfc::solve::<_, HOST_MAX_LAYERS, HOST_DOMAIN_WORDS>(black_box(problem), black_box(&config))
    });
    let schedule = to_schedule(problem, &solution)?;
    Ok(SolverRun { solution, schedule, stats, timing })
}

/// The exact solver's run: its answer, and its time over repeats.
fn time_exact(problem: &HostProblem, solution: HostSolution, stats: ExactStats) -> Result<SolverRun<ExactStats>> {
    let timing =
        timing::median_of_repeats(|| exact::solve::<_, HOST_MAX_LAYERS, HOST_DOMAIN_WORDS>(black_box(problem)));
    let schedule = to_schedule(problem, &solution)?;
    Ok(SolverRun { solution, schedule, stats, timing })
}

/// The optimum of `problem` by the exact DP, untimed.
pub fn solve_exact(problem: &HostProblem, graph: &HostGraph) -> Result<(HostSolution, ExactStats)> {
    exact::solve::<_, HOST_MAX_LAYERS, HOST_DOMAIN_WORDS>(problem).map_err(|e| solve_error("exact", e, graph))
}

fn to_schedule(problem: &HostProblem, solution: &HostSolution) -> Result<HostSchedule> {
    Schedule::from_solution(problem, solution)
        .ok_or_else(|| anyhow!("internal error: the solver returned states that are not the problem's"))
}

/// `layer `NAME` (SHAPE)`, or `layer INDEX` if the graph has no such layer.
fn layer_label(graph: &HostGraph, index: usize) -> String {
    match graph.layer(index) {
        Some(l) => format!("layer `{}` ({})", l.name, describe::op(&l.op)),
        None => format!("layer {index}"),
    }
}

fn solve_error(solver: &str, e: SolveError, graph: &HostGraph) -> anyhow::Error {
    match e {
        SolveError::Infeasible { layer } => {
            anyhow!("{solver} solver: no feasible schedule; {} has no state left", layer_label(graph, layer))
        }
        SolveError::NonFiniteCost { layer } => {
            anyhow!("{solver} solver: {}: the cost model gave a non-finite cost", layer_label(graph, layer))
        }
        other => anyhow!("{solver} solver: {other}"),
    }
}

/// States of `op`'s candidate space removed by each unary constraint.
pub fn unary_removals(spec: &HardwareSpec, op: &Op) -> (usize, [usize; CONSTRAINT_COUNT]) {
    let mut candidates = 0;
    let mut counts = [0usize; CONSTRAINT_COUNT];
    for state in space::states(spec.space, op.kind()).iter().filter(|s| space::applicable(op, s)) {
        candidates += 1;
        if let Err(c) = constraint::check(spec, op, state) {
            if let Some(n) = counts.get_mut(c.index()) {
                *n += 1;
            }
        }
    }
    (candidates, counts)
}

fn build_error(e: BuildError, graph: &HostGraph, spec: &HardwareSpec) -> anyhow::Error {
    match e {
        BuildError::Infeasible { layer, constraint } => {
            let label = layer_label(graph, layer);
            let detail = match graph.layer(layer) {
                Some(l) if constraint != Constraint::Adjacency => {
                    let (candidates, counts) = unary_removals(spec, &l.op);
                    let counts = counts.map(|n| n as u64);
                    format!(" (of {candidates} candidates: {})", describe::removed(&counts))
                }
                _ => String::new(),
            };
            anyhow!("{label}: every state removed; `{constraint}` removed the last one{detail}")
        }
        BuildError::NonFiniteCost { layer } => {
            anyhow!("{}: the cost model gave a non-finite cost", layer_label(graph, layer))
        }
        BuildError::TooManyStates { layer, states, capacity } => {
            anyhow!("{}: {states} candidate states exceed the domain capacity of {capacity}", layer_label(graph, layer))
        }
        other => anyhow!("{other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwwfc_core::{models, presets};

    #[test]
    fn default_run_agrees() {
        let graph = models::builtin::<HOST_MAX_LAYERS>("attention", None).unwrap();
        let out = run(
            &graph,
            &presets::stress_gpu(),
            &Coefficients::default(),
            Solvers { wfc: true, exact: true },
            BuildOptions::default(),
        )
        .unwrap();
        assert_eq!(out.agree(), Some(true));
        assert_eq!(out.gap_percent(), Some(0.0));
        assert_eq!(out.equal_cost(), Some(true));
        assert_eq!(out.primary().unwrap().choices.len(), 6);
    }

    #[test]
    fn infeasible_layer_is_named() {
        let graph = models::builtin::<HOST_MAX_LAYERS>("attention", None).unwrap();
        let mut spec = presets::stress_gpu();
        spec.alignment_bytes = 4096;
        let e = build(&graph, &spec, &Coefficients::default()).unwrap_err().to_string();
        assert!(e.starts_with("layer `in_proj` (matmul 512x512x128 f16): every state removed; `alignment`"), "{e}");
    }
}
