//! `hwwfc calibrate`: profile (resuming what is there), fit the cost
//! model on every record, write the coefficients, and report the fit's
//! held-out quality.

use crate::calibrate::{fit, session};
use crate::cli::{CalibrateArgs, ProfileArgs};
use anyhow::{Context, Result};
use hwwfc_core::cost::COEFFICIENTS_VERSION;
use hwwfc_core::wire::{self, Message};
use hwwfc_core::Coefficients;
use std::path::PathBuf;

/// Runs the command.
pub fn run(args: &CalibrateArgs) -> Result<()> {
    let data_dir: PathBuf = match &args.data {
        Some(d) => d.clone(),
        None => {
            let out = args.out.clone().unwrap_or_else(|| PathBuf::from("calib-data/gpu"));
            let profile = ProfileArgs {
                gpu: args.gpu,
                workloads: args.workloads.clone().unwrap_or_else(|| PathBuf::from("calib-data/workloads.json")),
                out: out.clone(),
                spec: args.spec.clone(),
                label: None,
                warmup: 2,
                min_repeats: 5,
                max_repeats: 25,
                target_ms: 40.0,
                quiet: false,
                interleave: false,
                kernels: Vec::new(),
                shard: None,
                gpus: args.gpus.clone(),
                partition: args.partition,
                plan: false,
                json: false,
                compile: None,
                compile_sample: None,
            };
            super::profile::run(&profile)?;
            out
        }
    };
    let out = args.out.clone().unwrap_or_else(|| data_dir.clone());
    // Refused before the fit, which takes a while, rather than after it.
    if out.exists() && !out.is_dir() {
        anyhow::bail!(
            "{}: not a folder (it receives coefficients.json, coefficients.postcard, REPORT.md and plots/)",
            out.display()
        );
    }
    let l = session::load(&data_dir, args.spec.as_deref())?;
    let all: Vec<_> = l.data.workloads.iter().collect();
    eprintln!(
        "fitting on {} workloads ({} configurations)...",
        all.len(),
        all.iter().map(|w| w.samples.len()).sum::<usize>()
    );
    let f = fit::fit(&l.spec, &Coefficients::default(), &all, &fit::FitOptions::default())?;
    eprintln!("loss {:.4} -> {:.4} in {} iterations", f.initial_loss, f.loss, f.iterations);
    std::fs::create_dir_all(&out).with_context(|| format!("{}: cannot create", out.display()))?;
    write_coefficients(&out, &l, &f)?;
    if !args.no_report {
        let report = session::cross_validation_report(&l, &fit::FitOptions::default())?;
        let title = format!("Cost model on {}: held-out evaluation", l.data.device.name);
        session::write_files(&l, &report, &f.coefficients, &out.join("REPORT.md"), &out.join("plots"), &title)?;
        session::print(&report);
    }
    eprintln!("wrote {}", out.join("coefficients.json").display());
    Ok(())
}

fn write_coefficients(out: &std::path::Path, l: &session::Loaded, f: &fit::Fit) -> Result<()> {
    let runs: Vec<String> = l.data.runs.iter().map(|p| p.display().to_string()).collect();
    let json = serde_json::json!({
        "format_version": COEFFICIENTS_VERSION,
        "gpu": l.data.device.name,
        "spec": l.spec_name,
        "fitted": {
            "records": runs,
            "workloads": l.data.workloads.len(),
            "configurations": l.data.workloads.iter().map(|w| w.samples.len()).sum::<usize>(),
            "loss": "mean over workloads of the mean squared log error of time",
            "initial_loss": f.initial_loss,
            "final_loss": f.loss,
            "iterations": f.iterations,
            "minimizer": "argmin Nelder-Mead, restarted from its best point",
        },
        "coefficients": f.coefficients,
    });
    crate::atomic_write::write(
        &out.join("coefficients.json"),
        (serde_json::to_string_pretty(&json)? + "\n").as_bytes(),
    )?;
    let mut buf = vec![0u8; Coefficients::MAX_ENCODED_LEN];
    let bytes = wire::to_slice(&f.coefficients, &mut buf).map_err(|e| anyhow::anyhow!("encoding: {e}"))?;
    crate::atomic_write::write(&out.join("coefficients.postcard"), bytes)
}
