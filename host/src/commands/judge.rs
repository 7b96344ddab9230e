//! `hwwfc judge`: measure the configurations that several tuning runs
//! chose, side by side on one bench, and give each run its share of the
//! exhaustive search's best (the method is [`crate::tuning::judge`]);
//! prints the table and writes `OUT/judge.json`.

use crate::cli::JudgeArgs;
use crate::input::{spec_file, workload_file};
use crate::tuning::judge::{self, Candidates};
use crate::tuning::top_k::Tuned;
use crate::tuning::SharedSpecFor;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The part of a `tune.json` the judge reads.
#[derive(Debug, Deserialize)]
struct TuneFile {
    top_k: usize,
    workloads: Vec<Tuned>,
}

/// One tuning run to judge.
#[derive(Debug)]
struct Run {
    /// The folder's name (`k8`, ...).
    label: String,
    file: TuneFile,
}

fn load_run(dir: &Path) -> Result<Run> {
    let path = dir.join("tune.json");
    let text = std::fs::read_to_string(&path).with_context(|| format!("{}: cannot read", path.display()))?;
    let file: TuneFile = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not a tune.json of this version (it needs chosen_index, predicted_index, finalists)",
            path.display()
        )
    })?;
    let label = dir.file_name().map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned());
    Ok(Run { label, file })
}

/// One candidate's measurements.
#[derive(Debug, Serialize)]
struct Judged {
    index: u16,
    label: String,
    /// Its median in each pass, microseconds (a failed pass is left out).
    pass_us: Vec<f64>,
    /// The median over the passes.
    judged_us: f64,
}

/// One run's choice, judged.
#[derive(Debug, Serialize)]
struct Verdict {
    index: u16,
    label: String,
    judged_us: Option<f64>,
    /// Reference over `judged_us`.
    share: Option<f64>,
}

/// Runs the command.
pub fn run(args: &JudgeArgs) -> Result<()> {
    if args.passes == 0 {
        bail!("--passes must be at least 1");
    }
    if args.runs.is_empty() {
        bail!("--runs needs at least one tune folder");
    }
    let workloads: Vec<_> = workload_file::load(&args.workloads)?.into_iter().filter(|w| w.op().is_some()).collect();
    let runs: Vec<Run> = args.runs.iter().map(|d| load_run(d)).collect::<Result<_>>()?;
    let mut labels = BTreeSet::new();
    for r in &runs {
        if !labels.insert(r.label.clone()) {
            bail!("two runs are named {}: give folders of different names", r.label);
        }
    }
    // Per workload: its candidates.
    let mut per: BTreeMap<String, Candidates> = BTreeMap::new();
    for w in &workloads {
        let rows: Vec<(usize, &Tuned)> = runs
            .iter()
            .filter_map(|r| r.file.workloads.iter().find(|x| x.workload == w.name()).map(|x| (r.file.top_k, x)))
            .collect();
        if !rows.is_empty() {
            per.insert(w.name().to_string(), judge::candidates(&rows));
        }
    }
    if per.is_empty() {
        bail!("no workload of {} appears in the runs' tune.json", args.workloads.display());
    }
    let judged_workloads: Vec<workload_file::Workload> =
        workloads.iter().filter(|w| per.contains_key(w.name())).cloned().collect();
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("judge"));
    let n_candidates: usize = per.values().map(|c| c.all.len()).sum();
    eprintln!(
        "judging {} runs: {} candidates of {} workloads, {} passes",
        runs.len(),
        n_candidates,
        per.len(),
        args.passes
    );
    let spec_arg = match &args.spec {
        Some(s) => Some(spec_file::load(s)?.whole()?),
        None => None,
    };
    let spec_for: SharedSpecFor = Arc::new(move |info: &crate::gpu::DeviceInfo| match &spec_arg {
        Some(s) => Ok(s.clone()),
        None => spec_file::builtin_for_device(&info.name),
    });
    let bench = judge::measure(args.gpu, &judged_workloads, &per, args.passes, &out, &spec_for)?;

    // Verdicts.
    let mut rows = Vec::new();
    let mut shares: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for w in &judged_workloads {
        let Some(c) = per.get(w.name()) else { continue };
        let key = |i: u16| (w.name().to_string(), i);
        let judged_of = |i: u16| bench.judged_us(&key(i));
        let reference = c.reference.iter().filter_map(|i| judged_of(*i)).reduce(f64::min);
        let verdict = |i: u16| {
            let j = judged_of(i);
            Verdict {
                index: i,
                label: bench.labels.get(&key(i)).cloned().unwrap_or_else(|| format!("#{i}")),
                judged_us: j,
                share: reference.zip(j).map(|(r, j)| r / j),
            }
        };
        let mut choices: BTreeMap<String, Verdict> = BTreeMap::new();
        for r in &runs {
            if let Some(row) = r.file.workloads.iter().find(|x| x.workload == w.name()) {
                if !choices.contains_key("model") {
                    choices.insert("model".into(), verdict(row.predicted_index));
                }
                choices.insert(r.label.clone(), verdict(row.chosen_index));
            }
        }
        for (name, v) in &choices {
            if let Some(s) = v.share {
                shares.entry(name.clone()).or_default().push(s);
            }
        }
        let judged: Vec<Judged> = c
            .all
            .iter()
            .filter_map(|i| {
                Some(Judged {
                    index: *i,
                    label: bench.labels.get(&key(*i))?.clone(),
                    pass_us: bench.times.get(&key(*i))?.clone(),
                    judged_us: judged_of(*i)?,
                })
            })
            .collect();
        rows.push(serde_json::json!({
            "workload": w.name(),
            "shape": w.shape(),
            "reference_us": reference,
            "reference_from": c.reference,
            "candidates": judged,
            "choices": choices,
        }));
    }
    let means: BTreeMap<&String, f64> =
        shares.iter().map(|(k, v)| (k, v.iter().sum::<f64>() / v.len().max(1) as f64)).collect();
    print_table(&rows, &means);
    let json = serde_json::json!({
        "passes": args.passes,
        "runs": args.runs.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
        "statistic": "median over passes of each pass's median; reference: the fastest of the exhaustive runs' choices and finalists",
        "mean_share": means,
        "workloads": rows,
    });
    crate::atomic_write::write(&out.join("judge.json"), (serde_json::to_string_pretty(&json)? + "\n").as_bytes())
        .context("writing judge.json")?;
    Ok(())
}

fn print_table(rows: &[serde_json::Value], means: &BTreeMap<&String, f64>) {
    let names: Vec<&String> = means.keys().copied().collect();
    print!("{:<30} {:>12}", "workload", "reference_us");
    for n in &names {
        print!(" {n:>8}");
    }
    println!();
    for r in rows {
        let reference = r["reference_us"].as_f64().map_or("-".into(), |v| format!("{v:.2}"));
        print!("{:<30} {:>12}", r["workload"].as_str().unwrap_or("?"), reference);
        for n in &names {
            let s = r["choices"][n.as_str()]["share"].as_f64();
            print!(" {:>8}", s.map_or("-".into(), |v| format!("{:.1}%", v * 100.0)));
        }
        println!();
    }
    print!("{:<30} {:>12}", "mean share", "");
    for n in &names {
        print!(" {:>8}", format!("{:.2}%", means[n] * 100.0));
    }
    println!();
}
