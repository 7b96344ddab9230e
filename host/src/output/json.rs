//! The schedule as one JSON object (`--json`).
//!
//! ```text
//! spec, model            names; spec_origin, spec_source, spec_notes, model_origin, seq (null for a file),
//!                        coefficients ("default" or the file); partition (null, or
//!                        sms, of_sms, sram_per_block_bytes, of_sram_per_block_bytes)
//! layers[]               name, kind, op (the shape: m n k batch | rows cols, dtype, with
//!                        elementwise: add, silu_mul, gelu or norm for an elementwise layer),
//!                        tile_m tile_n tile_k warps_m warps_n stages split_k pingpong placement layout,
//!                        state_index, unary_us, transition_us,
//!                        candidates, states_left, removed {constraint: count}
//! wfc_cost, exact_cost   predicted totals in us (null for a solver not run)
//! greedy_cost            each layer's cheapest state's total, the edges ignored (null where
//!                        that breaks a hard coupling)
//! exact_skipped          why the exact solver did not run beside WFC (a DAG's loop cutset
//!                        over its budget), or null
//! wfc_states, exact_states   chosen state indices per layer (or null)
//! agree, equal_cost, gap_percent   same states? same total within f32 rounding?
//!                        WFC's excess over the optimum in percent (null unless both ran)
//! build_us, wfc_us, exact_us   median times in us; *_repeats: runs measured
//! wfc_stats              {collapses, propagations, removed, backtracks} or null
//! combinations, space_combinations   decimal strings (a u128 may not fit a JSON number)
//! ```
//!
//! The layers show WFC's choice when WFC ran, else the exact one.

use super::ScheduleView;
use crate::input::model_file::Origin as ModelOrigin;
use crate::input::spec_file::Origin as SpecOrigin;
use hwwfc_core::constraint::CONSTRAINT_COUNT;
use hwwfc_core::schedule::Choice;
use hwwfc_core::wfc::WfcStats;
use hwwfc_core::{Constraint, Op, StateIndex};
use serde::ser::SerializeMap;
use serde::Serialize;

/// The shape of a layer.
#[derive(Serialize)]
#[serde(untagged)]
pub enum OpJson {
    /// A matmul.
    MatMul {
        /// Rows of the output.
        m: u32,
        /// Columns of the output.
        n: u32,
        /// Reduction length.
        k: u32,
        /// Independent products.
        batch: u32,
        /// Element type.
        dtype: &'static str,
    },
    /// A softmax.
    Softmax {
        /// Rows.
        rows: u32,
        /// Columns.
        cols: u32,
        /// Element type.
        dtype: &'static str,
    },
    /// An elementwise layer or a row normalisation.
    Elementwise {
        /// What it computes (`add`, `silu_mul`, `gelu`, `norm`).
        elementwise: &'static str,
        /// Rows.
        rows: u32,
        /// Columns.
        cols: u32,
        /// Element type.
        dtype: &'static str,
    },
}

impl From<&Op> for OpJson {
    fn from(op: &Op) -> Self {
        match *op {
            Op::MatMul { m, n, k, batch, dtype } => OpJson::MatMul { m, n, k, batch, dtype: dtype.name() },
            Op::Softmax { rows, cols, dtype } => OpJson::Softmax { rows, cols, dtype: dtype.name() },
            Op::Elementwise { kind, rows, cols, dtype } => {
                OpJson::Elementwise { elementwise: kind.name(), rows, cols, dtype: dtype.name() }
            }
        }
    }
}

/// One layer and its chosen state.
#[derive(Serialize)]
pub struct LayerJson {
    name: String,
    kind: &'static str,
    op: OpJson,
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
    state_index: StateIndex,
    unary_us: f32,
    transition_us: f32,
    candidates: usize,
    states_left: usize,
    removed: RemovedJson,
}

/// States removed per constraint, as an object in the order of
/// [`Constraint::ALL`] (every constraint, zeros included).
pub struct RemovedJson(pub [u16; CONSTRAINT_COUNT]);

impl Serialize for RemovedJson {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(CONSTRAINT_COUNT))?;
        for (c, n) in Constraint::ALL.iter().zip(self.0) {
            map.serialize_entry(c.name(), &n)?;
        }
        map.end()
    }
}

/// WFC's statistics.
#[derive(Serialize)]
pub struct WfcStatsJson {
    collapses: u32,
    propagations: u32,
    removed: u32,
    backtracks: u32,
}

impl From<&WfcStats> for WfcStatsJson {
    fn from(s: &WfcStats) -> Self {
        WfcStatsJson {
            collapses: s.collapses,
            propagations: s.propagations,
            removed: s.removed,
            backtracks: s.backtracks,
        }
    }
}

/// The whole report.
#[derive(Serialize)]
pub struct ScheduleJson {
    spec: String,
    spec_origin: String,
    spec_source: String,
    spec_notes: Option<String>,
    partition: Option<crate::input::partition::Partition>,
    model: String,
    model_origin: String,
    seq: Option<u32>,
    coefficients: String,
    layers: Vec<LayerJson>,
    wfc_cost: Option<f32>,
    exact_cost: Option<f32>,
    exact_skipped: Option<String>,
    greedy_cost: Option<f32>,
    wfc_states: Option<Vec<StateIndex>>,
    exact_states: Option<Vec<StateIndex>>,
    agree: Option<bool>,
    equal_cost: Option<bool>,
    gap_percent: Option<f64>,
    build_us: f64,
    build_repeats: usize,
    wfc_us: Option<f64>,
    wfc_repeats: Option<usize>,
    exact_us: Option<f64>,
    exact_repeats: Option<usize>,
    wfc_stats: Option<WfcStatsJson>,
    combinations: String,
    space_combinations: String,
}

/// A time rounded to nanoseconds (the clock's resolution at best).
fn round_us(us: f64) -> f64 {
    (us * 1000.0).round() / 1000.0
}

/// The report of `v`, ready to serialize.
pub fn report(v: &ScheduleView<'_>) -> ScheduleJson {
    let o = v.outcome;
    let choices: &[Choice] = o.primary().map(|s| s.choices.as_slice()).unwrap_or(&[]);
    let layers = v
        .model
        .graph
        .layers()
        .iter()
        .zip(o.problem.layers())
        .zip(choices)
        .map(|((layer, plan), c)| LayerJson {
            name: layer.name.to_string(),
            kind: layer.op.kind().name(),
            op: OpJson::from(&layer.op),
            tile_m: c.state.tile.m,
            tile_n: c.state.tile.n,
            tile_k: c.state.tile.k,
            warps_m: c.state.warps_m,
            warps_n: c.state.warps_n,
            stages: c.state.stages,
            split_k: c.state.split_k,
            pingpong: c.state.pingpong,
            placement: c.state.placement.name(),
            layout: c.state.layout.name(),
            state_index: c.index,
            unary_us: c.unary_us,
            transition_us: c.transition_us,
            candidates: plan.candidates.len(),
            states_left: plan.domain.len(),
            removed: RemovedJson(plan.removed),
        })
        .collect();
    let (model_origin, seq) = match &v.model.origin {
        ModelOrigin::BuiltIn { seq, .. } => ("built-in".to_string(), Some(*seq)),
        ModelOrigin::File(path) => (path.display().to_string(), None),
    };
    let spec_origin = match &v.spec.origin {
        SpecOrigin::BuiltIn(_) => "built-in".to_string(),
        SpecOrigin::File(path) => path.display().to_string(),
    };
    ScheduleJson {
        spec: v.spec.spec.name.to_string(),
        spec_origin,
        spec_source: v.spec.source.clone(),
        spec_notes: v.spec.notes.clone(),
        partition: v.spec.partition,
        model: v.model.name.clone(),
        model_origin,
        seq,
        coefficients: v.coefficients.origin.to_string(),
        layers,
        wfc_cost: o.wfc.as_ref().map(|r| r.solution.cost),
        exact_cost: o.exact.as_ref().map(|r| r.solution.cost),
        exact_skipped: o.exact_skipped.clone(),
        greedy_cost: o.greedy,
        wfc_states: o.wfc.as_ref().map(|r| r.solution.states.to_vec()),
        exact_states: o.exact.as_ref().map(|r| r.solution.states.to_vec()),
        agree: o.agree(),
        equal_cost: o.equal_cost(),
        gap_percent: o.gap_percent(),
        build_us: round_us(o.build.median_us),
        build_repeats: o.build.repeats,
        wfc_us: o.wfc.as_ref().map(|r| round_us(r.timing.median_us)),
        wfc_repeats: o.wfc.as_ref().map(|r| r.timing.repeats),
        exact_us: o.exact.as_ref().map(|r| round_us(r.timing.median_us)),
        exact_repeats: o.exact.as_ref().map(|r| r.timing.repeats),
        wfc_stats: o.wfc.as_ref().map(|r| WfcStatsJson::from(&r.stats)),
        combinations: o.problem.combinations().to_string(),
        space_combinations: o.problem.space_combinations().to_string(),
    }
}

/// The report of `v` as pretty-printed JSON text (with a final newline).
pub fn render(v: &ScheduleView<'_>) -> anyhow::Result<String> {
    let mut text = serde_json::to_string_pretty(&report(v))?;
    text.push('\n');
    Ok(text)
}
