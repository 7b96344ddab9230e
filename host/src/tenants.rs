//! Two tenants sharing one GPU, each on its own partition of the SMs (such
//! as two CUDA green contexts): the split of the SMs between them and the
//! schedule of each for its partition, chosen from the cost model's
//! predictions alone (no GPU).
//!
//! For every split (tenant A gets `a` SMs, a multiple of the granularity;
//! tenant B the largest multiple of it that the rest holds, the SMs beyond
//! that left idle) both models are solved exactly on their partitions'
//! specs ([`hwwfc_core::HardwareSpec::partition`]), and the split of least
//! makespan (the larger of the two predicted times) wins; of two equal
//! makespans, the one whose tenants finish closer together. Beside the
//! partition schedules, the plan keeps each model's whole-GPU schedule,
//! with its predicted time on the whole GPU and on the tenant's partition,
//! which is what a tenant that ignored its partition would run.
//!
//! A partition's spec describes a tenant that runs alone on its SMs (the
//! DRAM bandwidth and the L2 stay the whole GPU's), so the predicted
//! makespan of two tenants at once takes no account of what they take from
//! each other in DRAM and the L2.

use crate::input::model_file::HostGraph;
use crate::solve::{self, HostProblem, EQUAL_COST_TOLERANCE};
use anyhow::{Context, Result};
use hwwfc_core::cost;
use hwwfc_core::problem;
use hwwfc_core::schedule::Choice;
use hwwfc_core::{Coefficients, HardwareSpec, Layout, StateIndex};
use serde::Serialize;
use std::fmt;

/// SMs per partition step when none is given: what the CUDA driver rounds
/// a green context's SMs to on Hopper.
pub const DEFAULT_GRANULARITY: u32 = 8;

/// How the SMs may be split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SplitOptions {
    /// Every partition holds a multiple of this many SMs (at least one
    /// step).
    pub granularity: u32,
    /// Tenant A's SMs, forced (`--split`); `None` lets the plan choose.
    pub forced_a: Option<u32>,
}

impl Default for SplitOptions {
    fn default() -> Self {
        SplitOptions { granularity: DEFAULT_GRANULARITY, forced_a: None }
    }
}

/// Why the SMs cannot be split as asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitError {
    /// A granularity of zero SMs.
    ZeroGranularity,
    /// The GPU has too few SMs for two partitions of one step each.
    TooFewSms {
        /// SMs of the whole GPU.
        total: u32,
        /// The granularity.
        granularity: u32,
    },
    /// The forced split is not a multiple of the granularity.
    NotAMultiple {
        /// Tenant A's SMs asked for.
        a: u32,
        /// The granularity.
        granularity: u32,
    },
    /// The forced split leaves one tenant less than one step of SMs.
    NoRoom {
        /// Tenant A's SMs asked for.
        a: u32,
        /// SMs of the whole GPU.
        total: u32,
        /// The granularity.
        granularity: u32,
    },
}

impl fmt::Display for SplitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            SplitError::ZeroGranularity => f.write_str("--granularity 0: a partition needs at least one SM"),
            SplitError::TooFewSms { total, granularity } => write!(
                f,
                "{total} SMs cannot be split into two partitions of at least {granularity} SMs each (--granularity {granularity})"
            ),
            SplitError::NotAMultiple { a, granularity } => {
                write!(f, "--split {a}: not a multiple of the granularity, {granularity} SMs")
            }
            SplitError::NoRoom { a, total, granularity } => write!(
                f,
                "--split {a}: of {total} SMs, tenant {} would get fewer than {granularity} (each tenant needs at least {granularity})",
                if a < granularity { "A" } else { "B" }
            ),
        }
    }
}

impl std::error::Error for SplitError {}

/// One way of splitting the SMs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Split {
    /// Tenant A's SMs.
    pub a: u32,
    /// Tenant B's SMs.
    pub b: u32,
    /// SMs that neither tenant gets (the rest below one step).
    pub idle: u32,
}

/// Every split of `total` SMs in steps of `granularity`: tenant A from one
/// step up, tenant B the largest multiple of the step that the rest holds,
/// both at least one step.
pub fn splits(total: u32, granularity: u32) -> Result<Vec<Split>, SplitError> {
    if granularity == 0 {
        return Err(SplitError::ZeroGranularity);
    }
    let mut out = Vec::new();
    let mut a = granularity;
    while a < total {
        let b = (total - a) / granularity * granularity;
        if b < granularity {
            break;
        }
        out.push(Split { a, b, idle: total - a - b });
        a = a.saturating_add(granularity);
    }
    if out.is_empty() {
        return Err(SplitError::TooFewSms { total, granularity });
    }
    Ok(out)
}

/// The split that `--split a` forces, checked against the granularity.
pub fn forced_split(total: u32, granularity: u32, a: u32) -> Result<Split, SplitError> {
    if granularity == 0 {
        return Err(SplitError::ZeroGranularity);
    }
    if a < granularity || a >= total || (total - a) < granularity {
        return Err(SplitError::NoRoom { a, total, granularity });
    }
    if a % granularity != 0 {
        return Err(SplitError::NotAMultiple { a, granularity });
    }
    let b = (total - a) / granularity * granularity;
    Ok(Split { a, b, idle: total - a - b })
}

/// One row of the split table: both tenants' predicted times on their
/// partitions.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SplitRow {
    /// The split.
    pub split: Split,
    /// Tenant A's predicted time on its partition, microseconds.
    pub a_us: f64,
    /// Tenant B's predicted time on its partition, microseconds.
    pub b_us: f64,
}

impl SplitRow {
    /// The predicted makespan: the larger of the two times.
    pub fn makespan_us(&self) -> f64 {
        self.a_us.max(self.b_us)
    }

    /// How far apart the two tenants finish.
    pub fn difference_us(&self) -> f64 {
        (self.a_us - self.b_us).abs()
    }
}

/// The row of least makespan (of two within [`EQUAL_COST_TOLERANCE`], the
/// one of smaller difference, then the first); `None` for no rows.
pub fn best_row(rows: &[SplitRow]) -> Option<usize> {
    let mut best: Option<usize> = None;
    for (i, row) in rows.iter().enumerate() {
        let Some(b) = best.and_then(|b| rows.get(b)) else {
            best = Some(i);
            continue;
        };
        let (m, bm) = (row.makespan_us(), b.makespan_us());
        let tie = (m - bm).abs() <= EQUAL_COST_TOLERANCE * bm.abs().max(m.abs());
        if (!tie && m < bm) || (tie && row.difference_us() < b.difference_us()) {
            best = Some(i);
        }
    }
    best
}

/// A schedule of one tenant and its predicted time.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TenantSchedule {
    /// SMs of the spec it was solved on.
    pub solved_on_sms: u32,
    /// The chosen state of each layer, with its predicted costs there.
    pub choices: Vec<Choice>,
    /// The predicted total, microseconds.
    pub predicted_us: f64,
}

impl TenantSchedule {
    /// The chosen state indices, in layer order.
    pub fn states(&self) -> Vec<StateIndex> {
        self.choices.iter().map(|c| c.index).collect()
    }
}

/// How a whole-GPU schedule's time on a partition was predicted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Evaluation {
    /// By the partition's problem: every state is allowed there.
    Problem,
    /// By the cost model on the partition's spec directly, layer by layer
    /// and edge by edge: some state is not allowed on the partition (the
    /// prediction is the model's extrapolation).
    Direct,
}

/// One tenant of the plan.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TenantPlan {
    /// SMs of its partition.
    pub sms: u32,
    /// Its schedule for its partition.
    pub partition: TenantSchedule,
    /// Its schedule for the whole GPU, predicted on the whole GPU.
    pub whole: TenantSchedule,
    /// The whole-GPU schedule's predicted time on the partition,
    /// microseconds.
    pub whole_on_partition_us: f64,
    /// How that time was predicted.
    pub whole_on_partition_by: Evaluation,
}

impl TenantPlan {
    /// Whether the partition's schedule is the whole GPU's.
    pub fn same_states(&self) -> bool {
        self.partition.states() == self.whole.states()
    }
}

/// The plan of two tenants.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    /// SMs of the whole GPU.
    pub total_sms: u32,
    /// The SM step of a partition.
    pub granularity: u32,
    /// Whether the split was forced (`--split`).
    pub forced: bool,
    /// Every split with both tenants' predicted times.
    pub splits: Vec<SplitRow>,
    /// The row of `splits` chosen (or forced).
    pub chosen: usize,
    /// Tenant A.
    pub a: TenantPlan,
    /// Tenant B.
    pub b: TenantPlan,
}

impl Plan {
    /// The chosen split.
    pub fn split(&self) -> Option<&SplitRow> {
        self.splits.get(self.chosen)
    }

    /// Predicted makespan of both partition schedules at once.
    pub fn concurrent_us(&self) -> f64 {
        self.a.partition.predicted_us.max(self.b.partition.predicted_us)
    }

    /// Predicted time of both whole-GPU schedules one after the other on
    /// the whole GPU.
    pub fn sequential_us(&self) -> f64 {
        self.a.whole.predicted_us + self.b.whole.predicted_us
    }

    /// Predicted speedup of the tenants at once over one after the other.
    pub fn predicted_speedup(&self) -> f64 {
        self.sequential_us() / self.concurrent_us()
    }
}

/// A model solved exactly on one spec: the problem and its schedule.
struct Solved {
    problem: Box<HostProblem>,
    schedule: TenantSchedule,
}

fn solve_on(graph: &HostGraph, spec: &HardwareSpec, k: &Coefficients) -> Result<Solved> {
    let problem = solve::build(graph, spec, k)?;
    let (solution, _) = solve::solve_exact(&problem, graph)?;
    let schedule = hwwfc_core::Schedule::from_solution(&problem, &solution).ok_or_else(|| {
        anyhow::anyhow!("internal error: the exact solver returned states that are not the problem's")
    })?;
    let choices = schedule.choices.iter().copied().collect();
    Ok(Solved {
        problem,
        schedule: TenantSchedule { solved_on_sms: spec.sm_count, choices, predicted_us: solution.cost as f64 },
    })
}

/// The predicted time of `states` on `spec` by the cost model directly,
/// as [`hwwfc_core::ScheduleProblem::build`] would count it had no
/// constraint removed a state: each layer's unary cost, its rewrites from
/// and to the model's row-major input and output, and the rewrite of every
/// edge whose two states need one. `None` if a state is not in its layer's
/// table or the lengths differ.
pub fn direct_cost(graph: &HostGraph, spec: &HardwareSpec, k: &Coefficients, states: &[StateIndex]) -> Option<f64> {
    if states.len() != graph.len() {
        return None;
    }
    let state_of = |i: usize| -> Option<&'static hwwfc_core::State> {
        let layer = graph.layer(i)?;
        hwwfc_core::space::states(spec.space, layer.op.kind()).get(*states.get(i)? as usize)
    };
    let mut total = 0.0f64;
    for (i, layer) in graph.layers().iter().enumerate() {
        let state = state_of(i)?;
        let mut c = cost::unary_cost(spec, k, &layer.op, state) as f64;
        if state.layout != Layout::RowMajor {
            if graph.inputs(i).is_empty() {
                c += cost::rewrite_cost(spec, k, cost::input_bytes(&layer.op)) as f64;
            }
            if !graph.has_consumers(i) {
                c += cost::rewrite_cost(spec, k, layer.op.output_bytes()) as f64;
            }
        }
        total += c;
    }
    for edge in graph.edges() {
        let (from, to) = (state_of(edge.from)?, state_of(edge.to)?);
        let bytes = graph.layer(edge.from)?.op.output_bytes();
        total += cost::transition_cost(spec, k, bytes, (from, to), graph.edge_transposed(edge)) as f64;
    }
    Some(total)
}

/// The predicted time of the whole-GPU schedule `whole` on a partition
/// whose problem is `part` (of spec `spec`).
fn on_partition(
    graph: &HostGraph,
    spec: &HardwareSpec,
    k: &Coefficients,
    part: &HostProblem,
    whole: &TenantSchedule,
) -> Result<(f64, Evaluation)> {
    let states = whole.states();
    if let Some(c) = problem::evaluate(part, &states) {
        return Ok((c as f64, Evaluation::Problem));
    }
    let c = direct_cost(graph, spec, k, &states)
        .ok_or_else(|| anyhow::anyhow!("internal error: the whole-GPU schedule does not fit the model's layers"))?;
    Ok((c, Evaluation::Direct))
}

/// Plans two tenants, `a` and `b` (labelled by `names` in errors), on
/// `whole`, the spec of the whole GPU: every split's predicted times, the
/// chosen (or forced) split, and both tenants' partition and whole-GPU
/// schedules.
pub fn plan(
    whole: &HardwareSpec,
    k: &Coefficients,
    (a, b): (&HostGraph, &HostGraph),
    names: (&str, &str),
    options: SplitOptions,
) -> Result<Plan> {
    let total = whole.sm_count;
    let table = splits(total, options.granularity)?;
    let forced = match options.forced_a {
        Some(sms) => Some(forced_split(total, options.granularity, sms)?),
        None => None,
    };
    let cut = |sms: u32| -> Result<HardwareSpec> {
        whole.partition(Some(sms), None).map_err(|e| anyhow::anyhow!("spec `{}`: {e}", whole.name))
    };
    let whole_a = solve_on(a, whole, k).with_context(|| format!("tenant A ({}) on the whole GPU", names.0))?;
    let whole_b = solve_on(b, whole, k).with_context(|| format!("tenant B ({}) on the whole GPU", names.1))?;
    let mut rows = Vec::with_capacity(table.len());
    for split in &table {
        let (spec_a, spec_b) = (cut(split.a)?, cut(split.b)?);
        let sa =
            solve_on(a, &spec_a, k).with_context(|| format!("tenant A ({}) on {} of {total} SMs", names.0, split.a))?;
        let sb =
            solve_on(b, &spec_b, k).with_context(|| format!("tenant B ({}) on {} of {total} SMs", names.1, split.b))?;
        rows.push(SplitRow { split: *split, a_us: sa.schedule.predicted_us, b_us: sb.schedule.predicted_us });
    }
    let chosen = match forced {
        Some(f) => rows.iter().position(|r| r.split == f),
        None => best_row(&rows),
    }
    .ok_or_else(|| anyhow::anyhow!("internal error: no split chosen among {} rows", rows.len()))?;
    let split = rows.get(chosen).map(|r| r.split).ok_or_else(|| anyhow::anyhow!("internal error: no row {chosen}"))?;
    let tenant = |graph: &HostGraph, sms: u32, whole_solved: Solved, label: &str| -> Result<TenantPlan> {
        let spec = cut(sms)?;
        let part = solve_on(graph, &spec, k).with_context(|| format!("tenant {label} on {sms} of {total} SMs"))?;
        let (whole_on_partition_us, by) = on_partition(graph, &spec, k, &part.problem, &whole_solved.schedule)?;
        Ok(TenantPlan {
            sms,
            partition: part.schedule,
            whole: whole_solved.schedule,
            whole_on_partition_us,
            whole_on_partition_by: by,
        })
    };
    let plan_a = tenant(a, split.a, whole_a, "A")?;
    let plan_b = tenant(b, split.b, whole_b, "B")?;
    Ok(Plan {
        total_sms: total,
        granularity: options.granularity,
        forced: forced.is_some(),
        splits: rows,
        chosen,
        a: plan_a,
        b: plan_b,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::spec_file;
    use hwwfc_core::{models, HOST_MAX_LAYERS};

    fn h200() -> HardwareSpec {
        spec_file::load("h200").unwrap().spec
    }

    fn llama(seq: u32) -> HostGraph {
        models::builtin::<HOST_MAX_LAYERS>("llama3-8b-block", Some(seq)).unwrap()
    }

    fn h200_plan(options: SplitOptions) -> Plan {
        let spec = h200();
        plan(&spec, &Coefficients::default(), (&llama(2048), &llama(1)), ("prefill", "decode"), options).unwrap()
    }

    #[test]
    fn splits_step_by_the_granularity() {
        let s = splits(132, 8).unwrap();
        assert_eq!(s.first(), Some(&Split { a: 8, b: 120, idle: 4 }));
        assert_eq!(s.last(), Some(&Split { a: 120, b: 8, idle: 4 }));
        assert_eq!(s.len(), 15);
        for x in &s {
            assert_eq!(x.a % 8, 0);
            assert_eq!(x.b % 8, 0);
            assert!(x.a >= 8 && x.b >= 8);
            assert_eq!(x.a + x.b + x.idle, 132);
            assert!(x.idle < 8);
        }
        // A total that is a multiple of the step leaves nothing idle.
        assert!(splits(64, 16).unwrap().iter().all(|x| x.idle == 0 && x.a + x.b == 64));
        assert_eq!(splits(1, 1), Err(SplitError::TooFewSms { total: 1, granularity: 1 }));
        assert_eq!(splits(15, 8), Err(SplitError::TooFewSms { total: 15, granularity: 8 }));
        assert_eq!(splits(16, 8).unwrap(), vec![Split { a: 8, b: 8, idle: 0 }]);
        assert_eq!(splits(132, 0), Err(SplitError::ZeroGranularity));
    }

    #[test]
    fn bad_forced_splits_are_refused() {
        assert_eq!(forced_split(132, 8, 64), Ok(Split { a: 64, b: 64, idle: 4 }));
        assert_eq!(forced_split(132, 8, 60), Err(SplitError::NotAMultiple { a: 60, granularity: 8 }));
        for a in [0, 4, 128, 132, 200] {
            let e = forced_split(132, 8, a).unwrap_err();
            assert!(matches!(e, SplitError::NoRoom { .. }), "{a}: {e}");
        }
        assert!(forced_split(132, 8, 0).unwrap_err().to_string().contains("tenant A"));
        assert!(forced_split(132, 8, 128).unwrap_err().to_string().contains("tenant B"));
        let spec = h200();
        let e = plan(
            &spec,
            &Coefficients::default(),
            (&llama(2048), &llama(1)),
            ("a", "b"),
            SplitOptions { granularity: 8, forced_a: Some(132) },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("--split 132"), "{e}");
    }

    #[test]
    fn the_chosen_split_has_the_least_makespan() {
        let p = h200_plan(SplitOptions::default());
        assert!(!p.forced);
        assert_eq!(p.total_sms, 132);
        assert_eq!(p.splits.len(), 15);
        let chosen = p.split().unwrap();
        for row in &p.splits {
            assert!(chosen.makespan_us() <= row.makespan_us() * (1.0 + EQUAL_COST_TOLERANCE), "{row:?}");
            assert_eq!(row.split.a % 8, 0);
            assert_eq!(row.split.b % 8, 0);
        }
        assert_eq!((p.a.sms, p.b.sms), (chosen.split.a, chosen.split.b));
        assert_eq!(p.a.partition.predicted_us, chosen.a_us);
        assert_eq!(p.b.partition.predicted_us, chosen.b_us);
        // The prefill wants more SMs than the decode step.
        assert!(p.a.sms > p.b.sms, "{:#?}", p.splits);
        // A schedule solved for the partition is at least as good there as
        // the whole GPU's, which is at least as good on the whole GPU.
        for t in [&p.a, &p.b] {
            assert!(t.partition.predicted_us <= t.whole_on_partition_us * (1.0 + 1e-6));
            assert!(t.whole.predicted_us <= t.whole_on_partition_us);
            assert_eq!(t.whole_on_partition_by, Evaluation::Problem);
            assert_eq!(t.whole.solved_on_sms, 132);
            assert_eq!(t.partition.solved_on_sms, t.sms);
        }
        assert_eq!(p.concurrent_us(), chosen.makespan_us());
        assert!(p.predicted_speedup() > 0.0);
    }

    #[test]
    fn a_forced_split_is_kept() {
        let p = h200_plan(SplitOptions { granularity: 8, forced_a: Some(64) });
        assert!(p.forced);
        assert_eq!((p.a.sms, p.b.sms), (64, 64));
        assert_eq!(p.split().unwrap().split, Split { a: 64, b: 64, idle: 4 });
        let coarse = h200_plan(SplitOptions { granularity: 32, forced_a: None });
        assert_eq!(coarse.splits.len(), 3);
        assert!(coarse.splits.iter().all(|r| r.split.a % 32 == 0 && r.split.b % 32 == 0));
    }

    #[test]
    fn ties_go_to_the_smaller_difference() {
        let row = |a: u32, a_us: f64, b_us: f64| SplitRow { split: Split { a, b: 16 - a, idle: 0 }, a_us, b_us };
        let rows = [row(4, 10.0, 2.0), row(8, 10.0, 9.0), row(12, 10.0, 5.0), row(2, 11.0, 11.0)];
        assert_eq!(best_row(&rows), Some(1));
        let rows = [row(4, 10.0, 2.0), row(8, 9.0, 1.0)];
        assert_eq!(best_row(&rows), Some(1));
        assert_eq!(best_row(&[]), None);
    }

    #[test]
    fn direct_cost_is_the_problems_own() {
        let k = Coefficients::default();
        // On the a100 spec no kernel reads K-major: the DAG's scores pay a
        // transpose on the edge from K, which both prices must count.
        for spec in [h200(), spec_file::load("a100").unwrap().spec] {
            let dag = models::builtin::<HOST_MAX_LAYERS>("llama3-8b-dag", Some(256)).unwrap();
            for graph in [llama(2048), llama(1), dag] {
                let whole = solve_on(&graph, &spec, &k).unwrap();
                let part_spec = spec.partition(Some(40), None).unwrap();
                let part = solve_on(&graph, &part_spec, &k).unwrap();
                let states = whole.schedule.states();
                let by_problem = problem::evaluate(&*part.problem, &states).unwrap() as f64;
                let direct = direct_cost(&graph, &part_spec, &k, &states).unwrap();
                assert!((by_problem - direct).abs() <= 1e-4 * by_problem, "{by_problem} against {direct}");
            }
        }
        let spec = h200();
        assert_eq!(direct_cost(&llama(1), &spec, &k, &[0]), None);
        assert_eq!(direct_cost(&llama(1), &spec, &k, &[u16::MAX; 7]), None);
    }

    #[test]
    fn a_model_that_does_not_fit_is_named() {
        let mut spec = h200();
        spec.alignment_bytes = 1 << 20;
        let e =
            plan(&spec, &Coefficients::default(), (&llama(2048), &llama(1)), ("prefill", "decode"), Default::default())
                .unwrap_err();
        let text = format!("{e:#}");
        assert!(text.starts_with("tenant A (prefill) on the whole GPU: layer `qkv_proj`"), "{text}");
    }
}
