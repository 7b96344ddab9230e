//! `hwwfc partitions`: one cost model judged on records of several
//! partitions of a GPU, each partition on its own spec (the SMs and the
//! shared-memory budget it was measured with), and how the best
//! configuration moves from one partition to the next, measured and
//! predicted.

use crate::calibrate::dataset;
use crate::calibrate::evaluate;
use crate::calibrate::plot::{self, ShareRow};
use crate::calibrate::report::Means;
use crate::calibrate::session::{self, Loaded};
use crate::cli::PartitionsArgs;
use crate::describe;
use crate::input::coefficients_file::{self, LoadedCoefficients, Origin};
use anyhow::{bail, Result};
use serde_json::{json, Value};

/// One workload on one partition: the measured best configuration and the
/// model's first choice.
struct Choice {
    workload: String,
    best: String,
    best_us: f64,
    chosen: String,
    chosen_us: f64,
}

/// One partition's records judged.
struct Judged {
    label: String,
    partition: Value,
    workloads: usize,
    means: Means,
    choices: Vec<Choice>,
}

/// Runs the command.
pub fn run(args: &PartitionsArgs) -> Result<()> {
    let sets = dataset::load_by_partition(&args.data)?;
    let loaded: Vec<Loaded> =
        sets.into_iter().map(|d| session::with_spec(d, &args.data, args.spec.as_deref())).collect::<Result<_>>()?;
    let Some(first) = loaded.first() else { bail!("{}: no runs", args.data.display()) };
    if let Some(other) = loaded.iter().find(|l| l.data.device.name != first.data.device.name) {
        bail!(
            "{}: records of two GPUs, `{}` and `{}`: compare the partitions of one GPU",
            args.data.display(),
            first.data.device.name,
            other.data.device.name
        );
    }
    let k = coefficients(args, first)?;
    let judged: Vec<Judged> = loaded.iter().map(|l| judge(l, &k.coefficients)).collect();
    if let Some(path) = &args.plot {
        plot(path, &judged, first.data.device.name.as_str())?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&to_json(&judged, &k))?);
    } else {
        print!("{}", tables(&judged, &k));
    }
    Ok(())
}

/// The coefficients asked for, or the spec's built-in calibrated ones, or
/// the defaults; a file of another GPU is refused unless allowed.
fn coefficients(args: &PartitionsArgs, l: &Loaded) -> Result<LoadedCoefficients> {
    let loaded = match &args.coefficients {
        Some(path) => coefficients_file::load(Some(path))?,
        None => coefficients_file::calibrated_for(&l.spec_name)?.unwrap_or_else(LoadedCoefficients::default_model),
    };
    let gpu = Some(l.data.device.name.as_str());
    if let Some(w) = coefficients_file::check_provenance(&loaded, &l.spec_name, gpu, args.allow_other_gpu)? {
        eprintln!("warning: {w}");
    }
    Ok(loaded)
}

fn judge(l: &Loaded, k: &hwwfc_core::Coefficients) -> Judged {
    let agreements = evaluate::per_workload(&l.spec, k, &l.data);
    let choices = l
        .data
        .workloads
        .iter()
        .filter_map(|w| {
            let predicted = evaluate::predict(&l.spec, k, w);
            let times = w.times();
            let best = argmin(&times)?;
            let chosen = argmin(&predicted)?;
            Some(Choice {
                workload: w.workload.name().to_string(),
                best: describe::state(&w.samples[best].state),
                best_us: times[best],
                chosen: describe::state(&w.samples[chosen].state),
                chosen_us: times[chosen],
            })
        })
        .collect();
    let label = match l.data.partition {
        Some(p) => p.to_string(),
        None => "the whole GPU".to_string(),
    };
    let partition = serde_json::to_value(l.data.partition).unwrap_or(Value::Null);
    Judged { label, partition, workloads: agreements.len(), means: Means::of(&agreements), choices }
}

/// Each workload's first choice as a share of its partition's best, a
/// row per partition.
fn plot(path: &std::path::Path, judged: &[Judged], device: &str) -> Result<()> {
    let rows: Vec<ShareRow> = judged
        .iter()
        .map(|j| ShareRow {
            label: j.label.clone(),
            values: j.choices.iter().map(|c| c.best_us / c.chosen_us).collect(),
            mean: j.means.top1_share,
        })
        .collect();
    let title = format!("{device}: the model's first choice on each partition, no refit");
    plot::shares(path, &title, "first choice's time as a share of the partition's best (%)", &rows)
}

/// The index of the least finite value.
fn argmin(v: &[f64]) -> Option<usize> {
    v.iter().enumerate().filter(|(_, x)| x.is_finite()).min_by(|a, b| a.1.total_cmp(b.1)).map(|(i, _)| i)
}

fn tables(judged: &[Judged], k: &LoadedCoefficients) -> String {
    // A borrowed origin already says that it is not refitted.
    let refit = if matches!(k.origin, Origin::Borrowed { .. }) { "" } else { ", no refit" };
    let mut out = format!("Coefficients: {}{refit}; each partition judged on its own spec.\n\n", k.origin);
    out += "| partition | workloads | rho | tau | first choice, share of best | best in top 4 | best in top 8 \
            | top-8 tuning's shortlist |\n";
    out += "|---|---|---|---|---|---|---|---|\n";
    for j in judged {
        let m = &j.means;
        out += &format!(
            "| {} | {} | {:.3} | {:.3} | {:.1}% | {:.1}% | {:.1}% | {:.1}% |\n",
            j.label,
            j.workloads,
            m.rho,
            m.tau,
            100.0 * m.top1_share,
            100.0 * m.top4_share,
            100.0 * m.top8_share,
            100.0 * m.tuned8_share,
        );
    }
    out += "\n(Best in top 8: among the model's first eight; top-8 tuning's shortlist: among the eight `hwwfc tune \
            --top-k 8` measures, the first eight hedged across kernel families.)\n";
    out += "\nPer workload: the measured best configuration on each partition, and the model's first choice \
            (its measured time as a share of the best). `moved` marks a best that differs from the partition \
            above's.\n\n";
    out += "| workload | partition | measured best | us | moved | model's first choice | share of best |\n";
    out += "|---|---|---|---|---|---|---|\n";
    for name in workload_names(judged) {
        let mut above: Option<&str> = None;
        for j in judged {
            let Some(c) = j.choices.iter().find(|c| c.workload == name) else { continue };
            let moved = match above {
                Some(b) if b != c.best => "yes",
                Some(_) => "",
                None => "-",
            };
            out += &format!(
                "| {} | {} | {} | {:.2} | {moved} | {} | {:.1}% |\n",
                c.workload,
                j.label,
                c.best,
                c.best_us,
                if c.chosen == c.best { "the same".to_string() } else { c.chosen.clone() },
                100.0 * c.best_us / c.chosen_us
            );
            above = Some(&c.best);
        }
    }
    out
}

/// Every workload of any partition, in first-seen order.
fn workload_names(judged: &[Judged]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for c in judged.iter().flat_map(|j| &j.choices) {
        if !names.contains(&c.workload) {
            names.push(c.workload.clone());
        }
    }
    names
}

fn to_json(judged: &[Judged], k: &LoadedCoefficients) -> Value {
    let partitions: Vec<Value> = judged
        .iter()
        .map(|j| {
            let m = &j.means;
            json!({
                "partition": j.partition,
                "label": j.label,
                "workloads": j.workloads,
                "mean_rho": m.rho,
                "mean_tau": m.tau,
                "mean_top1_share": m.top1_share,
                "mean_top4_share": m.top4_share,
                "mean_top8_share": m.top8_share,
                "mean_tuned8_share": m.tuned8_share,
                "choices": j.choices.iter().map(|c| json!({
                    "workload": c.workload,
                    "best": c.best,
                    "best_us": c.best_us,
                    "chosen": c.chosen,
                    "chosen_us": c.chosen_us,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({ "coefficients": k.origin.to_string(), "partitions": partitions })
}
