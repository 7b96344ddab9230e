//! `hwwfc tune`: measure only the K configurations the calibrated model
//! ranks best, keep the fastest, and compare with exhaustive records.

use crate::calibrate::dataset;
use crate::cli::TuneArgs;
use crate::gpu::TimingPolicy;
use crate::input::{coefficients_file, spec_file};
use crate::profile::config::Config;
use crate::profile::record::{self, Source, Status};
use crate::profile::{runner, workload};
use anyhow::{Context, Result};
use hwwfc_core::{cost, Coefficients, HardwareSpec, Op};
use serde::Serialize;
use std::collections::HashMap;
use std::time::Instant;

/// The configurations of `op` ranked by predicted cost, cheapest first
/// (ties by table index).
pub fn ranked(spec: &HardwareSpec, k: &Coefficients, op: &Op, configs: Vec<Config>) -> Vec<(Config, f32)> {
    let mut v: Vec<(Config, f32)> =
        configs.into_iter().map(|c| (c, cost::unary_cost(spec, k, op, &c.state()))).collect();
    v.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.index.cmp(&b.0.index)));
    v
}

/// One workload's result.
#[derive(Clone, Debug, Serialize)]
pub struct Tuned {
    /// Workload name.
    pub workload: String,
    /// Shape.
    pub shape: String,
    /// Configurations measured.
    pub measured: usize,
    /// The model's top choice (no measurement).
    pub predicted: String,
    /// Microseconds to rank every configuration with the model (median).
    pub predict_us: f64,
    /// The fastest measured configuration.
    pub chosen: String,
    /// Its median time, microseconds.
    pub chosen_us: f64,
    /// Seconds spent measuring this workload (checks and timing).
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
    let opts = runner::Options {
        gpu: args.gpu,
        workloads: workloads.clone(),
        out: out.clone(),
        spec_for: Box::new(move |info| {
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
        }),
        run_label: format!("tune-k{top_k}"),
        policy: TimingPolicy::default(),
        commit: env!("HWWFC_COMMIT").to_string(),
        verbose: true,
        select: Some(Box::new(move |spec, op, configs| {
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
        })),
        cublas: false,
    };
    let summary = runner::run(&opts)?;
    let records = record::read_all(&out.join("records.jsonl"))?;
    let reference = match &args.reference {
        Some(dir) => Some(dataset::load(dir)?),
        None => None,
    };
    let seconds: HashMap<&str, f64> = summary.workload_seconds.iter().map(|(n, s)| (n.as_str(), *s)).collect();
    let picked = picked.lock().map(|p| p.clone()).unwrap_or_default();
    let mut rows = Vec::new();
    for w in &workloads {
        let Some(op) = w.op() else { continue };
        let kind = op.kind();
        let mine: Vec<_> = records
            .iter()
            .filter(|r| r.source == Source::Kernel && r.status == Status::Ok && r.workload.name() == w.name())
            .filter_map(|r| Some((r.config?, r.timing.as_ref()?.median_us)))
            .collect();
        let Some(&(chosen, chosen_us)) = mine.iter().min_by(|a, b| a.1.total_cmp(&b.1)) else { continue };
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
            predicted: predicted.label(kind),
            predict_us,
            chosen: chosen.label(kind),
            chosen_us,
            profile_s: seconds.get(w.name()).copied().unwrap_or(0.0),
            exhaustive_best_us: best,
            reference_chosen_us: rc,
            reference_predicted_us: rp,
            share: best.zip(rc).map(|(b, c)| b / c),
            predicted_share: best.zip(rp).map(|(b, p)| b / p),
        });
    }
    print_table(&rows, top_k, summary.compile_seconds);
    let json = serde_json::json!({
        "top_k": top_k,
        "compile_s": summary.compile_seconds,
        "seconds": summary.seconds,
        "reference": args.reference.as_ref().map(|p| p.display().to_string()),
        "workloads": rows,
    });
    crate::atomic_write::write(&out.join("tune.json"), (serde_json::to_string_pretty(&json)? + "\n").as_bytes())
        .context("writing tune.json")?;
    Ok(())
}

fn print_table(rows: &[Tuned], top_k: usize, compile_s: f64) {
    let k = if top_k == 0 { "all".to_string() } else { top_k.to_string() };
    println!("top-{k} tuning (compilation: {compile_s:.1} s for all workloads, in parallel)\n");
    println!(
        "{:<30} {:>16} {:>4} {:>24} {:>11} {:>9} {:>9} {:>10}",
        "workload", "shape", "n", "chosen", "time_us", "profile_s", "share", "predicted"
    );
    for r in rows {
        let pct = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{:.1}%", v * 100.0));
        println!(
            "{:<30} {:>16} {:>4} {:>24} {:>11.2} {:>9.2} {:>9} {:>10}",
            r.workload,
            r.shape,
            r.measured,
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
