//! The measured top-k strategy: measure only the K configurations the
//! cost model ranks best for each workload (hedged across kernel
//! families: [`super::shortlist`]), side by side (all checked,
//! then timed in turns, repeat by repeat, so that every one sees the same
//! states of the GPU); measure the finalists again the same way
//! ([`super::finalists`]; records in `OUT/confirm/`); keep the fastest of
//! that second pass; and, given exhaustive records, give each choice its
//! share of the exhaustive best.

use super::finalists::{choose, finalists};
use super::rank::ranked;
use super::shortlist::shortlist;
use super::{spec_for_pass, SharedSpecFor};
use crate::calibrate::dataset::Dataset;
use crate::database::{kernel_medians, RunFolder};
use crate::family::{self, Config};
use crate::input::workload_file::Workload;
use crate::profile::{self, GpuList, Options, Select, Summary};
use crate::stats::median;
use anyhow::Result;
use hwwfc_core::{Coefficients, HardwareSpec, Op};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The coefficients that rank a device's configurations, given its spec.
pub type CoefficientsFor = Arc<dyn Fn(&HardwareSpec) -> Coefficients + Send + Sync>;

/// A top-k tuning run.
pub struct TopK {
    /// CUDA device ordinal.
    pub gpu: usize,
    /// The GPUs of a run over several (`None`: `gpu` alone).
    pub gpus: Option<GpuList>,
    /// The workloads (operators only).
    pub workloads: Vec<Workload>,
    /// The output folder: the first pass's run folder, with the second's
    /// in `confirm/`.
    pub out: PathBuf,
    /// Configurations measured per workload (0: all).
    pub top_k: usize,
    /// The spec of the device.
    pub spec_for: SharedSpecFor,
    /// The coefficients of the ranking.
    pub coefficients: CoefficientsFor,
    /// Exhaustive records to share the choices against.
    pub reference: Option<Dataset>,
    /// The partition of the GPU to tune on (none: the whole GPU): the
    /// model ranks for the partition's spec, and both passes measure in
    /// its green context.
    pub partition: crate::input::partition::PartitionArgs,
}

/// One workload's result (a row of `tune.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Tuned {
    /// Workload name.
    pub workload: String,
    /// Shape.
    pub shape: String,
    /// Configurations measured.
    pub measured: usize,
    /// Of which measured a second time (the finalists).
    pub confirmed: usize,
    /// Table indices of the finalists (measured twice; empty when the
    /// fastest stood clear).
    pub finalists: Vec<u16>,
    /// The model's top choice (no measurement).
    pub predicted: String,
    /// Its table index.
    pub predicted_index: u16,
    /// Microseconds to rank every configuration with the model (median).
    pub predict_us: f64,
    /// The fastest measured configuration.
    pub chosen: String,
    /// Its table index.
    pub chosen_index: u16,
    /// Its median time, microseconds (that of the second pass when it was
    /// measured twice).
    pub chosen_us: f64,
    /// Seconds spent measuring this workload (checks and timing, both
    /// passes).
    pub profile_s: f64,
    /// The exhaustive best in the reference records, microseconds.
    pub exhaustive_best_us: Option<f64>,
    /// The chosen configuration's time in the reference records.
    pub reference_chosen_us: Option<f64>,
    /// The predicted configuration's time in the reference records.
    pub reference_predicted_us: Option<f64>,
    /// Exhaustive best over the chosen configuration, both from the
    /// reference records.
    pub share: Option<f64>,
    /// The same for the prediction with no measurement.
    pub predicted_share: Option<f64>,
}

/// What a tuning run gave.
#[derive(Clone, Debug)]
pub struct TuneRun {
    /// One row per workload measured.
    pub rows: Vec<Tuned>,
    /// Seconds compiling, both passes.
    pub compile_s: f64,
    /// Wall seconds, both passes.
    pub seconds: f64,
}

/// The median wall time of 25 runs of `f`, microseconds.
fn median_us(mut f: impl FnMut()) -> f64 {
    let mut samples = Vec::new();
    for _ in 0..25 {
        let t = Instant::now();
        f();
        samples.push(t.elapsed().as_secs_f64() * 1e6);
    }
    median(&samples).unwrap_or(f64::NAN)
}

/// The key of an operator in the per-operator maps of a run: what the
/// selection sees of a workload. A fused epilogue is not part of it (the
/// model ranks the product), so workloads of one product with different
/// epilogues share the model's first choice and their finalists.
fn op_key(op: &Op) -> String {
    format!("{op:?}")
}

/// The finalists of every operator that has some, over the workloads of
/// that operator (first-pass medians by workload name), each once.
fn finals_by_op(workloads: &[Workload], first: &HashMap<String, Vec<(Config, f64)>>) -> HashMap<String, Vec<Config>> {
    let mut finals: HashMap<String, Vec<Config>> = HashMap::new();
    for w in workloads {
        let (Some(op), Some(mine)) = (w.op(), first.get(w.name())) else { continue };
        let f = finals.entry(op_key(&op)).or_default();
        for c in finalists(mine) {
            if !f.iter().any(|k| k.index == c.index) {
                f.push(c);
            }
        }
    }
    finals.retain(|_, f| !f.is_empty());
    finals
}

/// Runs both passes and judges the choices against the reference.
pub fn tune(t: TopK) -> Result<TuneRun> {
    let TopK { gpu, gpus, workloads, out, top_k, spec_for, coefficients, reference, partition } = t;
    let picked: Arc<Mutex<HashMap<String, (Config, f64)>>> = Default::default();
    let picked_in = picked.clone();
    let select: Select = Box::new(move |spec, op, configs| {
        let k = coefficients(spec);
        let rank = || ranked(spec, &k, op, configs.clone());
        let order = rank();
        let t = median_us(|| {
            std::hint::black_box(rank());
        });
        if let (Some((first, _)), Ok(mut p)) = (order.first(), picked_in.lock()) {
            p.insert(op_key(op), (*first, t));
        }
        // The model's first k, hedged across kernel families.
        let predicted: Vec<f64> = order.iter().map(|(_, p)| *p as f64).collect();
        let families: Vec<&str> = order.iter().map(|(c, _)| family::for_config(op.kind(), c).name()).collect();
        shortlist(&predicted, &families, top_k).into_iter().map(|i| order[i].0).collect()
    });
    let pass = |workloads: Vec<Workload>, out: PathBuf, label: String, select: Select| Options {
        select: Some(select),
        interleave: true,
        gpus: gpus.clone(),
        partition,
        ..Options::new(gpu, workloads, out, spec_for_pass(&spec_for), label)
    };
    let summary = profile::run(&Options {
        verbose: true,
        ..pass(workloads.clone(), out.clone(), format!("tune-k{top_k}"), select)
    })?;
    let first = kernel_medians(&RunFolder::new(&out).records()?, &workloads);

    // The second pass: the finalists of every workload that has some.
    let finals = finals_by_op(&workloads, &first);
    let again: Vec<Workload> =
        workloads.iter().filter(|w| w.op().is_some_and(|op| finals.contains_key(&op_key(&op)))).cloned().collect();
    let confirm = RunFolder::new(out.join("confirm"));
    let (second, confirmed) = if again.is_empty() {
        (HashMap::new(), Summary::default())
    } else {
        eprintln!(
            "measuring {} finalists of {} workloads again",
            finals.values().map(Vec::len).sum::<usize>(),
            again.len()
        );
        let select: Select = Box::new(move |_, op, configs| {
            let keep = finals.get(&op_key(op)).cloned().unwrap_or_default();
            configs.into_iter().filter(|c| keep.iter().any(|k| k.index == c.index)).collect()
        });
        let label = format!("tune-k{top_k}-confirm");
        let summary = profile::run(&pass(again.clone(), confirm.path().to_path_buf(), label, select))?;
        (kernel_medians(&confirm.records()?, &again), summary)
    };
    let mut seconds: HashMap<&str, f64> = HashMap::new();
    for (n, s) in summary.workload_seconds.iter().chain(confirmed.workload_seconds.iter()) {
        *seconds.entry(n.as_str()).or_default() += *s;
    }
    let picked = picked.lock().map(|p| p.clone()).unwrap_or_default();
    let mut rows = Vec::new();
    for w in &workloads {
        let Some(op) = w.op() else { continue };
        let key = op_key(&op);
        let Some(mine) = first.get(w.name()) else { continue };
        let again = second.get(w.name()).map_or(&[][..], Vec::as_slice);
        let Some((chosen, chosen_us)) = choose(mine, again) else { continue };
        let (predicted, predict_us) = picked.get(&key).copied().unwrap_or((chosen, f64::NAN));
        let reference_w = reference.as_ref().and_then(|d| d.workloads.iter().find(|x| x.workload.name() == w.name()));
        let time_of = |c: &Config| {
            reference_w.and_then(|rw| rw.samples.iter().find(|s| s.state == c.state()).map(|s| s.time_us()))
        };
        let best = reference_w.and_then(|rw| rw.times().into_iter().reduce(f64::min));
        let (rc, rp) = (time_of(&chosen), time_of(&predicted));
        rows.push(Tuned {
            workload: w.name().to_string(),
            shape: w.shape(),
            measured: mine.len(),
            confirmed: again.len(),
            finalists: finalists(mine).iter().map(|c| c.index).collect(),
            predicted: family::for_config(op.kind(), &predicted).label(&predicted),
            predicted_index: predicted.index,
            predict_us,
            chosen: family::for_config(op.kind(), &chosen).label(&chosen),
            chosen_index: chosen.index,
            chosen_us,
            profile_s: seconds.get(w.name()).copied().unwrap_or(0.0),
            exhaustive_best_us: best,
            reference_chosen_us: rc,
            reference_predicted_us: rp,
            share: best.zip(rc).map(|(b, c)| b / c),
            predicted_share: best.zip(rp).map(|(b, p)| b / p),
        });
    }
    Ok(TuneRun {
        rows,
        compile_s: summary.compile_seconds + confirmed.compile_seconds,
        seconds: summary.seconds + confirmed.seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwwfc_core::space::{self, SpaceKind};
    use hwwfc_core::OpKind;

    fn workloads() -> Vec<Workload> {
        serde_json::from_str(
            r#"[{"name": "plain", "kind": "matmul", "m": 64, "n": 64, "k": 64},
                {"name": "fused", "kind": "matmul", "m": 64, "n": 64, "k": 64, "epilogue": "add"},
                {"name": "other", "kind": "matmul", "m": 128, "n": 64, "k": 64}]"#,
        )
        .expect("workloads")
    }

    #[test]
    fn finalists_are_keyed_as_the_selection_sees_the_operator() {
        let ws = workloads();
        let c: Vec<Config> = space::states(SpaceKind::Cuda, OpKind::MatMul)
            .iter()
            .take(4)
            .enumerate()
            .map(|(i, s)| Config::new(i as u16, s))
            .collect();
        let first: HashMap<String, Vec<(Config, f64)>> = [
            ("plain".to_string(), vec![(c[0], 10.0), (c[1], 10.2), (c[2], 20.0)]),
            ("fused".to_string(), vec![(c[0], 11.0), (c[2], 11.1), (c[3], 30.0)]),
            // A clear winner: no finalists.
            ("other".to_string(), vec![(c[0], 10.0), (c[1], 20.0)]),
        ]
        .into_iter()
        .collect();
        let finals = finals_by_op(&ws, &first);
        // The selection is handed the operator alone; the product with a
        // fused epilogue is the same operator.
        let key = op_key(&ws[0].op().expect("an operator"));
        assert_eq!(key, op_key(&ws[1].op().expect("an operator")));
        assert_eq!(finals.len(), 1, "{finals:?}");
        let mut got: Vec<u16> = finals[&key].iter().map(|c| c.index).collect();
        got.sort_unstable();
        assert_eq!(got, vec![c[0].index, c[1].index, c[2].index]);
    }
}
