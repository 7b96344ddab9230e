//! `hwwfc tune`: measure only the K configurations the calibrated model
//! ranks best, keep the fastest, and compare with exhaustive records (the
//! strategy is [`crate::tuning::top_k`]); prints the table and writes
//! `OUT/tune.json`.

use crate::calibrate::dataset;
use crate::cli::TuneArgs;
use crate::input::{coefficients_file, spec_file, workload_file};
use crate::tuning::finalists::CONFIRM_TOLERANCE;
use crate::tuning::top_k::{self, TopK, Tuned};
use crate::tuning::SharedSpecFor;
use anyhow::{Context, Result};
use hwwfc_core::{Coefficients, HardwareSpec};
use std::sync::Arc;

/// Runs the command.
pub fn run(args: &TuneArgs) -> Result<()> {
    let workloads: Vec<_> = workload_file::load(&args.workloads)?.into_iter().filter(|w| w.op().is_some()).collect();
    let loaded = match &args.coefficients {
        Some(p) => Some(coefficients_file::load(Some(p))?),
        None => None,
    };
    let given = loaded.as_ref().map(|l| l.coefficients);
    let spec_arg = match &args.spec {
        Some(s) => Some(spec_file::load(s)?.whole()?),
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
    let coefficients = Arc::new(move |spec: &HardwareSpec| -> Coefficients {
        given
            .or_else(|| coefficients_file::calibrated_for(&spec.name).ok().flatten().map(|c| c.coefficients))
            .unwrap_or_default()
    });
    let spec_for: SharedSpecFor = Arc::new(move |info: &crate::gpu::DeviceInfo| -> Result<HardwareSpec> {
        let spec = match &spec_arg {
            Some(s) => s.clone(),
            None => spec_file::builtin_for_device(&info.name)?,
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
    });
    let run = top_k::tune(TopK {
        gpu: args.gpu,
        gpus: args.gpus.clone(),
        workloads,
        out: out.clone(),
        top_k,
        spec_for,
        coefficients,
        reference,
        partition: args.partition,
    })?;
    print_table(&run.rows, top_k, run.compile_s);
    let json = serde_json::json!({
        "top_k": top_k,
        "compile_s": run.compile_s,
        "seconds": run.seconds,
        "confirm_tolerance": CONFIRM_TOLERANCE,
        "reference": args.reference.as_ref().map(|p| p.display().to_string()),
        "workloads": run.rows,
    });
    crate::atomic_write::write(&out.join("tune.json"), (serde_json::to_string_pretty(&json)? + "\n").as_bytes())
        .context("writing tune.json")?;
    Ok(())
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
