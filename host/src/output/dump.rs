//! The reduced problem as JSON (`--dump-problem FILE`), so that a solver
//! outside this tool can check the optimum.
//!
//! ```text
//! format "hwwfc-problem", version 1, spec, model, cost_unit "us"
//! layers[]    index, name, kind, op (shape as in --json), candidates,
//!             states[]: the surviving states in increasing index order:
//!               index, tile_m tile_n tile_k warps_m warps_n stages split_k pingpong placement layout, unary_us
//! edges[]     from, to (layer indices, producer first),
//!             transition_us: matrix, rows = the producer's surviving states in order,
//!             columns = the consumer's; null where the pair is incompatible
//! optimum     states (state indices, one per layer), cost_us, solver ("exact" or
//!             "wfc") and optimal (true for the exact solver's answer; false where the
//!             DAG's loop cutset was over the exact solver's budget and WFC's schedule
//!             is given instead, its gap to the optimum unknown)
//! ```
//!
//! The total cost of an assignment is the sum of its states' `unary_us` and
//! of the `transition_us` entries of every edge (on a chain, between
//! consecutive layers).

use super::json::OpJson;
use crate::input::model_file::HostGraph;
use crate::solve::{HostProblem, HostSolution};
use hwwfc_core::{Problem, StateIndex};
use serde::Serialize;

/// Version of the dump format.
pub const DUMP_VERSION: u32 = 2;

#[derive(Serialize)]
struct StateJson {
    index: StateIndex,
    tile_m: u16,
    tile_n: u16,
    tile_k: u16,
    warps_m: u8,
    warps_n: u8,
    stages: u8,
    split_k: u8,
    pingpong: bool,
    placement: &'static str,
    layout: &'static str,
    unary_us: f32,
}

#[derive(Serialize)]
struct LayerJson {
    index: usize,
    name: String,
    kind: &'static str,
    op: OpJson,
    candidates: usize,
    states: Vec<StateJson>,
}

#[derive(Serialize)]
struct EdgeJson {
    from: usize,
    to: usize,
    transition_us: Vec<Vec<Option<f32>>>,
}

#[derive(Serialize)]
struct OptimumJson {
    states: Vec<StateIndex>,
    cost_us: f32,
    solver: &'static str,
    optimal: bool,
}

/// The best schedule known for a dump.
pub enum Best {
    /// The exact solver's optimum.
    Optimal(HostSolution),
    /// WFC's schedule, where the exact solver could not run.
    Wfc(HostSolution),
}

#[derive(Serialize)]
struct DumpJson {
    format: &'static str,
    version: u32,
    spec: String,
    model: String,
    cost_unit: &'static str,
    layers: Vec<LayerJson>,
    edges: Vec<EdgeJson>,
    optimum: OptimumJson,
}

/// The dump of `problem` (built from `graph`) with its optimum, as JSON
/// text.
pub fn render(
    spec: &str,
    model: &str,
    graph: &HostGraph,
    problem: &HostProblem,
    best: &Best,
) -> anyhow::Result<String> {
    let (optimum, solver, optimal) = match best {
        Best::Optimal(s) => (s, "exact", true),
        Best::Wfc(s) => (s, "wfc", false),
    };
    let layers = graph
        .layers()
        .iter()
        .zip(problem.layers())
        .enumerate()
        .map(|(index, (layer, plan))| LayerJson {
            index,
            name: layer.name.to_string(),
            kind: layer.op.kind().name(),
            op: OpJson::from(&layer.op),
            candidates: plan.candidates.len(),
            states: plan
                .domain
                .iter()
                .filter_map(|s| {
                    let st = plan.state(s)?;
                    Some(StateJson {
                        index: s,
                        tile_m: st.tile.m,
                        tile_n: st.tile.n,
                        tile_k: st.tile.k,
                        warps_m: st.warps_m,
                        warps_n: st.warps_n,
                        stages: st.stages,
                        split_k: st.split_k,
                        pingpong: st.pingpong,
                        placement: st.placement.name(),
                        layout: st.layout.name(),
                        unary_us: plan.unary(s),
                    })
                })
                .collect(),
        })
        .collect();
    let edges = graph
        .edges()
        .enumerate()
        .map(|(index, e)| {
            let from = problem.domain(e.from);
            let to = problem.domain(e.to);
            let transition_us = from
                .iter()
                .map(|a| {
                    to.iter()
                        .map(|b| problem.compatible(index, a, b).then(|| problem.transition(index, a, b)))
                        .collect()
                })
                .collect();
            EdgeJson { from: e.from, to: e.to, transition_us }
        })
        .collect();
    let dump = DumpJson {
        format: "hwwfc-problem",
        version: DUMP_VERSION,
        spec: spec.to_string(),
        model: model.to_string(),
        cost_unit: "us",
        layers,
        edges,
        optimum: OptimumJson { states: optimum.states.to_vec(), cost_us: optimum.cost, solver, optimal },
    };
    let mut text = serde_json::to_string(&dump)?;
    text.push('\n');
    Ok(text)
}
