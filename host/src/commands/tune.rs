//! `hwwfc tune`: measure only the K configurations the calibrated model
//! ranks best, keep the fastest, and compare with exhaustive records.
//!
//! Both passes time a workload's configurations side by side: all are
//! checked, then timed in turns, repeat by repeat, so that every one sees
//! the same states of the GPU. On the H200 one configuration measured up
//! to 14% apart from one pass to another (Llama 3's output projection at
//! 8192 tokens on a 128x128x64 tile: 824 us in one, 941 us in another;
//! most likely its clocks under the power limit), more than the gaps between the best few configurations. The
//! configurations whose first median is within [`CONFIRM_TOLERANCE`] of
//! the fastest are measured once more (records in `OUT/confirm/`), and
//! the fastest median of that second pass wins.

use crate::calibrate::dataset;
use crate::cli::TuneArgs;
use crate::gpu::TimingPolicy;
use crate::input::{coefficients_file, spec_file};
use crate::profile::config::Config;
use crate::profile::record::{self, Source, Status};
use crate::profile::{runner, workload};
use anyhow::{Context, Result};
use hwwfc_core::{cost, Coefficients, HardwareSpec, Op};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

/// The configurations of `op` ranked by predicted cost, cheapest first
/// (ties by table index).
pub fn ranked(spec: &HardwareSpec, k: &Coefficients, op: &Op, configs: Vec<Config>) -> Vec<(Config, f32)> {
    let mut v: Vec<(Config, f32)> =
        configs.into_iter().map(|c| (c, cost::unary_cost(spec, k, op, &c.state()))).collect();
    v.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.index.cmp(&b.0.index)));
    v
}

/// Configurations whose first median is within this share of the fastest
/// are measured a second time, side by side, before the choice.
pub const CONFIRM_TOLERANCE: f64 = 0.05;

/// The configurations of one workload's first pass `(config, median)` worth
/// a second measurement: those within [`CONFIRM_TOLERANCE`] of the fastest,
/// none where only one is.
pub fn finalists(first: &[(Config, f64)]) -> Vec<Config> {
    let Some(best) = first.iter().map(|x| x.1).reduce(f64::min) else { return Vec::new() };
    let close: Vec<Config> = first.iter().filter(|x| x.1 <= best * (1.0 + CONFIRM_TOLERANCE)).map(|x| x.0).collect();
    if close.len() > 1 {
        close
    } else {
        Vec::new()
    }
}

/// The choice among a workload's first pass and the side-by-side second
/// measurements of its finalists: the finalist of the fastest second
/// median (its first where the second is missing, as after a failed
/// launch), or the fastest first median when there were no finalists.
/// Returns the configuration and the time it is chosen by.
pub fn choose(first: &[(Config, f64)], second: &[(Config, f64)]) -> Option<(Config, f64)> {
    let finals = finalists(first);
    let pooled = |(c, t): &(Config, f64)| {
        let again = second.iter().find(|x| x.0.index == c.index).map(|x| x.1);
        (*c, again.unwrap_or(*t))
    };
    first
        .iter()
        .filter(|x| finals.is_empty() || finals.iter().any(|f| f.index == x.0.index))
        .map(pooled)
        .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.index.cmp(&b.0.index)))
}

/// One workload's result.
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

fn median_us(mut f: impl FnMut()) -> f64 {
    let mut samples = Vec::new();
    for _ in 0..25 {
        let t = Instant::now();
        f();
        samples.push(t.elapsed().as_secs_f64() * 1e6);
    }
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Runs the command.
pub fn run(args: &TuneArgs) -> Result<()> {
    let workloads: Vec<_> = workload::load(&args.workloads)?.into_iter().filter(|w| w.op().is_some()).collect();
    let loaded = match &args.coefficients {
        Some(p) => Some(coefficients_file::load(Some(p))?),
        None => None,
    };
    let given = loaded.as_ref().map(|l| l.coefficients);
    let spec_arg = match &args.spec {
        Some(s) => Some(spec_file::load(s)?.spec),
        None => None,
    };
    // Read before the GPU work, so that a bad folder fails at once.
    let reference = match &args.reference {
        Some(dir) => Some(dataset::load(dir)?),
        None => None,
    };
    let top_k = args.top_k;
    let allow_other_gpu = args.allow_other_gpu;
    let out = args.out.clone().unwrap_or_else(|| format!("tune-k{top_k}").into());
    let coefficients_in = move |spec: &HardwareSpec| -> Coefficients {
        given
            .or_else(|| coefficients_file::calibrated_for(&spec.name).ok().flatten().map(|c| c.coefficients))
            .unwrap_or_default()
    };
    let picked: std::sync::Arc<std::sync::Mutex<HashMap<String, (Config, f64)>>> = Default::default();
    let picked_in = picked.clone();
    let spec_for = move |info: &crate::gpu::DeviceInfo| -> Result<HardwareSpec> {
        let spec = match &spec_arg {
            Some(s) => s.clone(),
            None => super::profile::builtin_for_device(info)?,
        };
        // Coefficients of another GPU would rank this one's
        // configurations wrongly.
        if let Some(l) = &loaded {
            if let Some(warning) =
                coefficients_file::check_provenance(l, &spec.name, Some(info.name.as_str()), allow_other_gpu)?
            {
                eprintln!("warning: {warning}");
            }
        }
        Ok(spec)
    };
    let spec_for = std::sync::Arc::new(spec_for);
    let spec_for_first = spec_for.clone();
    let pass = |workloads: Vec<workload::Workload>,
                out: PathBuf,
                spec_for: runner::SpecFor,
                label: String,
                select,
                interleave| {
        runner::Options {
            gpu: args.gpu,
            workloads,
            out,
            spec_for,
            run_label: label,
            policy: TimingPolicy::default(),
            commit: env!("HWWFC_COMMIT").to_string(),
            verbose: true,
            select: Some(select),
            cublas: false,
            interleave,
        }
    };
    let select: runner::Select = Box::new(move |spec, op, configs| {
        let k = coefficients_in(spec);
        let rank = || ranked(spec, &k, op, configs.clone());
        let order = rank();
        let t = median_us(|| {
            std::hint::black_box(rank());
        });
        if let (Some((first, _)), Ok(mut p)) = (order.first(), picked_in.lock()) {
            p.insert(format!("{op:?}"), (*first, t));
        }
        let n = if top_k == 0 { order.len() } else { top_k.min(order.len()) };
        order.into_iter().take(n).map(|(c, _)| c).collect()
    });
    let opts = pass(
        workloads.clone(),
        out.clone(),
        Box::new(move |info| spec_for_first(info)),
        format!("tune-k{top_k}"),
        select,
        true,
    );
    let summary = runner::run(&opts)?;
    let first = measured(&record::read_all(&out.join("records.jsonl"))?, &workloads);

    // The second pass: the finalists of every workload that has some.
    let finals: HashMap<String, Vec<Config>> = workloads
        .iter()
        .filter_map(|w| Some((format!("{:?}", w.op()?), finalists(first.get(w.name())?))))
        .filter(|(_, f)| !f.is_empty())
        .collect();
    let again: Vec<_> = workloads
        .iter()
        .filter(|w| w.op().is_some_and(|op| finals.contains_key(&format!("{op:?}"))))
        .cloned()
        .collect();
    let confirm_dir = out.join("confirm");
    let (second, confirm) = if again.is_empty() {
        (HashMap::new(), runner::Summary::default())
    } else {
        eprintln!(
            "measuring {} finalists of {} workloads again",
            finals.values().map(Vec::len).sum::<usize>(),
            again.len()
        );
        let select: runner::Select = Box::new(move |_, op, configs| {
            let keep = finals.get(&format!("{op:?}")).cloned().unwrap_or_default();
            configs.into_iter().filter(|c| keep.iter().any(|k| k.index == c.index)).collect()
        });
        let label = format!("tune-k{top_k}-confirm");
        let opts = runner::Options {
            verbose: false,
            ..pass(again.clone(), confirm_dir.clone(), Box::new(move |info| spec_for(info)), label, select, true)
        };
        let summary = runner::run(&opts)?;
        (measured(&record::read_all(&confirm_dir.join("records.jsonl"))?, &again), summary)
    };
    let mut seconds: HashMap<&str, f64> = HashMap::new();
    for (n, s) in summary.workload_seconds.iter().chain(confirm.workload_seconds.iter()) {
        *seconds.entry(n.as_str()).or_default() += *s;
    }
    let picked = picked.lock().map(|p| p.clone()).unwrap_or_default();
    let mut rows = Vec::new();
    for w in &workloads {
        let Some(op) = w.op() else { continue };
        let kind = op.kind();
        let Some(mine) = first.get(w.name()) else { continue };
        let again = second.get(w.name()).map_or(&[][..], Vec::as_slice);
        let Some((chosen, chosen_us)) = choose(mine, again) else { continue };
        let (predicted, predict_us) = picked.get(&format!("{op:?}")).copied().unwrap_or((chosen, f64::NAN));
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
            predicted: predicted.label(kind),
            predicted_index: predicted.index,
            predict_us,
            chosen: chosen.label(kind),
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
    let compile_s = summary.compile_seconds + confirm.compile_seconds;
    print_table(&rows, top_k, compile_s);
    let json = serde_json::json!({
        "top_k": top_k,
        "compile_s": compile_s,
        "seconds": summary.seconds + confirm.seconds,
        "confirm_tolerance": CONFIRM_TOLERANCE,
        "reference": args.reference.as_ref().map(|p| p.display().to_string()),
        "workloads": rows,
    });
    crate::atomic_write::write(&out.join("tune.json"), (serde_json::to_string_pretty(&json)? + "\n").as_bytes())
        .context("writing tune.json")?;
    Ok(())
}

/// Each workload's successful kernel measurements `(config, median)`, by
/// workload name.
pub fn measured(records: &[record::Record], workloads: &[workload::Workload]) -> HashMap<String, Vec<(Config, f64)>> {
    let mut by: HashMap<String, Vec<(Config, f64)>> = HashMap::new();
    for r in records.iter().filter(|r| r.source == Source::Kernel && r.status == Status::Ok) {
        if let (Some(c), Some(t)) = (r.config, r.timing.as_ref()) {
            if workloads.iter().any(|w| w.name() == r.workload.name()) {
                by.entry(r.workload.name().to_string()).or_default().push((c, t.median_us));
            }
        }
    }
    by
}

fn print_table(rows: &[Tuned], top_k: usize, compile_s: f64) {
    let k = if top_k == 0 { "all".to_string() } else { top_k.to_string() };
    println!("top-{k} tuning (compilation: {compile_s:.1} s for all workloads, in parallel)\n");
    println!(
        "{:<30} {:>16} {:>5} {:>24} {:>11} {:>9} {:>9} {:>10}",
        "workload", "shape", "n", "chosen", "time_us", "profile_s", "share", "predicted"
    );
    for r in rows {
        let pct = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{:.1}%", v * 100.0));
        println!(
            "{:<30} {:>16} {:>5} {:>24} {:>11.2} {:>9.2} {:>9} {:>10}",
            r.workload,
            r.shape,
            if r.confirmed > 0 { format!("{}+{}", r.measured, r.confirmed) } else { r.measured.to_string() },
            r.chosen,
            r.chosen_us,
            r.profile_s,
            pct(r.share),
            pct(r.predicted_share)
        );
    }
    let shares: Vec<f64> = rows.iter().filter_map(|r| r.share).collect();
    let pshares: Vec<f64> = rows.iter().filter_map(|r| r.predicted_share).collect();
    if !shares.is_empty() {
        println!(
            "\nmean share of the exhaustive best: {:.2}% (measured top-{k}), {:.2}% (model's first choice, no measurement)",
            shares.iter().sum::<f64>() / shares.len() as f64 * 100.0,
            pshares.iter().sum::<f64>() / pshares.len().max(1) as f64 * 100.0
        );
    }
    println!("profiling time: {:.1} s", rows.iter().map(|r| r.profile_s).sum::<f64>());
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwwfc_core::space::{self, SpaceKind};
    use hwwfc_core::OpKind;

    fn configs(n: usize) -> Vec<Config> {
        let states = space::states(SpaceKind::Cuda, OpKind::MatMul);
        states.iter().take(n).enumerate().map(|(i, s)| Config::new(i as u16, s)).collect()
    }

    #[test]
    fn only_close_configurations_are_finalists() {
        let c = configs(4);
        let first = [(c[0], 10.0), (c[1], 10.35), (c[2], 10.5), (c[3], 9.9)];
        let f: Vec<u16> = finalists(&first).iter().map(|x| x.index).collect();
        // Within 5% of 9.9: up to 10.395.
        assert_eq!(f, vec![c[0].index, c[1].index, c[3].index]);
        // A clear winner needs no second look.
        assert!(finalists(&[(c[0], 10.0), (c[1], 11.0)]).is_empty());
        assert!(finalists(&[]).is_empty());
    }

    #[test]
    fn the_second_measurement_decides_between_finalists() {
        let c = configs(3);
        let first = [(c[0], 10.0), (c[1], 10.1), (c[2], 12.0)];
        // Without a second pass: the fastest first median.
        assert_eq!(choose(&first, &[]).map(|x| x.0.index), Some(c[0].index));
        // The side-by-side second pass decides: it finds the first one
        // slower.
        let (pick, t) = choose(&first, &[(c[0], 10.6), (c[1], 10.5)]).expect("a choice");
        assert_eq!(pick.index, c[1].index);
        assert_eq!(t, 10.5);
        // A finalist without a second time competes with its first.
        let (pick, t) = choose(&first, &[(c[1], 10.5)]).expect("a choice");
        assert_eq!((pick.index, t), (c[0].index, 10.0));
        // A configuration outside the finalists is never chosen, whatever
        // its second time.
        let (pick, _) = choose(&first, &[(c[0], 10.0), (c[1], 10.0), (c[2], 1.0)]).expect("a choice");
        assert_ne!(pick.index, c[2].index);
        assert!(choose(&[], &[]).is_none());
    }
}
