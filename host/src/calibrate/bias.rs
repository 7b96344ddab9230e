//! Where a model is biased: per class of configuration (the operator, the
//! kernel's placement and its variants, the tiles or blocks each slot of
//! the busiest SM runs in turn, the pipeline depth), the mean log of
//! measured over predicted time, over each workload's configurations near
//! its best (those a choice is made among). A class predicted too fast
//! has a positive mean, one predicted too slow a negative mean; a class
//! whose mean differs from its neighbours' is where the model's form
//! misses something that a refit of the coefficients cannot fix.

use super::dataset::Dataset;
use hwwfc_core::{cost, HardwareSpec, Op, Placement, State};
use serde::Serialize;
use std::collections::BTreeMap;

/// Configurations within this factor of their workload's measured best
/// are counted.
pub const NEAR_BEST: f64 = 1.5;

/// Classes with fewer configurations than this are left out.
pub const MIN_SAMPLES: usize = 10;

/// One class of configuration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BiasRow {
    /// The class, such as `matmul tma ping-pong, 2-3 tiles per slot, 4 stages`
    /// (a slot: one of the busiest SM's resident blocks, which runs its
    /// blocks, or the persistent kernel's tiles, one after another).
    pub class: String,
    /// Configurations counted.
    pub samples: usize,
    /// Mean of `ln(measured / predicted)`.
    pub mean_log_ratio: f64,
}

/// How many blocks (tiles, for the persistent Hopper matmul) one slot of
/// the busiest SM runs in turn, in buckets.
fn per_slot_bucket(n: u64) -> &'static str {
    match n {
        0 | 1 => "1",
        2..=3 => "2-3",
        4..=7 => "4-7",
        _ => "8+",
    }
}

/// The class of `state` on `op`.
pub fn class_of(spec: &HardwareSpec, op: &Op, state: &State) -> String {
    let per_slot = cost::grid(spec, op, state).per_slot() as u64;
    let mut s = format!("{} {}", op.kind().name(), state.placement.name());
    if state.pingpong {
        s += " ping-pong";
    }
    if state.split_k > 1 {
        s += &format!(" split {}", state.split_k);
    }
    let unit = if state.placement == Placement::Tma { "tile" } else { "block" };
    let bucket = per_slot_bucket(per_slot);
    let plural = if bucket == "1" { "" } else { "s" };
    s += &format!(", {bucket} {unit}{plural} per slot");
    if matches!(op, Op::MatMul { .. }) {
        s += &format!(", {} stages", state.stages);
    }
    s
}

/// The bias of `predictions` (per workload of `data`, per sample, in
/// microseconds) by class, classes in name order.
pub fn by_class(spec: &HardwareSpec, data: &Dataset, predictions: &[Vec<f64>]) -> Vec<BiasRow> {
    let mut sums: BTreeMap<String, (usize, f64)> = BTreeMap::new();
    for (w, predicted) in data.workloads.iter().zip(predictions) {
        let times = w.times();
        let best = times.iter().copied().fold(f64::INFINITY, f64::min);
        for ((s, t), p) in w.samples.iter().zip(&times).zip(predicted) {
            if *t > NEAR_BEST * best || !(p.is_finite() && *p > 0.0) {
                continue;
            }
            let e = sums.entry(class_of(spec, &w.op, &s.state)).or_insert((0, 0.0));
            e.0 += 1;
            e.1 += (t / p).ln();
        }
    }
    sums.into_iter()
        .filter(|(_, (n, _))| *n >= MIN_SAMPLES)
        .map(|(class, (n, sum))| BiasRow { class, samples: n, mean_log_ratio: sum / n as f64 })
        .collect()
}

/// The rows as a markdown section.
pub fn table(rows: &[BiasRow]) -> String {
    let mut s = format!(
        "\n## Bias by configuration class\n\nThe mean of ln(measured / predicted) over each workload's configurations \
         within {NEAR_BEST} times its best, per class (at least {MIN_SAMPLES} configurations): positive, predicted too \
         fast; negative, too slow.\n\n| class | configurations | mean ln(measured / predicted) |\n|---|---:|---:|\n"
    );
    for r in rows {
        s += &format!("| {} | {} | {:+.3} |\n", r.class, r.samples, r.mean_log_ratio);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data() -> (HardwareSpec, Dataset) {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../calib-data/h200/run4");
        let data = super::super::dataset::load(&dir).unwrap();
        (crate::input::spec_file::load("h200").unwrap().whole().unwrap(), data)
    }

    #[test]
    fn predictions_at_half_the_time_show_ln_2_in_every_class() {
        let (spec, data) = data();
        let half: Vec<Vec<f64>> = data.workloads.iter().map(|w| w.times().iter().map(|t| t / 2.0).collect()).collect();
        let rows = by_class(&spec, &data, &half);
        assert!(rows.len() > 5, "{rows:?}");
        for r in &rows {
            assert!(r.samples >= MIN_SAMPLES);
            assert!((r.mean_log_ratio - 2f64.ln()).abs() < 1e-9, "{r:?}");
        }
        // Only the configurations near each workload's best are counted.
        let near: usize = data
            .workloads
            .iter()
            .map(|w| {
                let t = w.times();
                let best = t.iter().copied().fold(f64::INFINITY, f64::min);
                t.iter().filter(|x| **x <= NEAR_BEST * best).count()
            })
            .sum();
        let counted: usize = rows.iter().map(|r| r.samples).sum();
        assert!(counted <= near && counted > near / 2, "{counted} of {near}");
        assert!(table(&rows).contains("| +0.693 |"));
    }

    #[test]
    fn a_class_predicted_too_slow_is_negative_and_the_others_zero() {
        let (spec, data) = data();
        let predictions: Vec<Vec<f64>> = data
            .workloads
            .iter()
            .map(|w| {
                w.times().iter().zip(&w.samples).map(|(t, s)| if s.state.pingpong { t * 1.5 } else { *t }).collect()
            })
            .collect();
        let rows = by_class(&spec, &data, &predictions);
        assert!(rows.iter().any(|r| r.class.contains("ping-pong")));
        for r in &rows {
            let want = if r.class.contains("ping-pong") { -(1.5f64.ln()) } else { 0.0 };
            assert!((r.mean_log_ratio - want).abs() < 1e-9, "{r:?}");
        }
    }

    #[test]
    fn classes_name_the_kernel_variant_and_the_tiles_per_slot() {
        let (spec, data) = data();
        let w = data.workloads.iter().find(|w| w.samples.iter().any(|s| s.state.split_k > 1)).unwrap();
        let s = w.samples.iter().find(|s| s.state.split_k > 1).unwrap();
        let c = class_of(&spec, &w.op, &s.state);
        assert!(c.starts_with("matmul tma") && c.contains(&format!("split {}", s.state.split_k)), "{c}");
        assert!(c.contains(" per slot") && c.ends_with(&format!("{} stages", s.state.stages)), "{c}");
    }
}
