//! `hwwfc judge`: measure the configurations that several tuning runs
//! chose, side by side on one bench, and give each run its share of the
//! exhaustive search's best.
//!
//! Judging a choice by the records of the exhaustive search that also
//! picked the best favours that search: its best is the minimum of a few
//! hundred noisy medians, so it is partly luck, and a choice made from
//! other measurements (or the same search run again) comes out below 100%
//! even when it is the same configuration. The judge measures every
//! candidate afresh instead: the configurations each run chose, the
//! model's first choice, and the exhaustive search's finalists, in several
//! passes (each compiling and loading the kernels again, the order turned
//! by one place each pass), and takes the median over the passes. The
//! reference is the fastest of the exhaustive runs' finalists and choices;
//! a share above 100% means a choice beat them all.

use super::tune::{self, Tuned};
use crate::cli::JudgeArgs;
use crate::gpu::TimingPolicy;
use crate::profile::config::Config;
use crate::profile::{record, runner, workload};
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

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

/// The configurations to measure for one workload, by table index, and the
/// subset the reference is taken from (the exhaustive runs' choices and
/// finalists; every candidate when no run was exhaustive).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Candidates {
    /// Every configuration to measure.
    pub all: BTreeSet<u16>,
    /// Those the reference is the fastest of.
    pub reference: BTreeSet<u16>,
}

/// The candidates of one workload from each run's row `(top_k, row)`.
pub fn candidates(rows: &[(usize, &Tuned)]) -> Candidates {
    let mut c = Candidates::default();
    for (top_k, r) in rows {
        c.all.insert(r.chosen_index);
        c.all.insert(r.predicted_index);
        if *top_k == 0 {
            c.reference.insert(r.chosen_index);
            c.reference.extend(r.finalists.iter().copied());
        }
    }
    c.all.extend(c.reference.iter().copied());
    if c.reference.is_empty() {
        c.reference = c.all.clone();
    }
    c
}

/// The median of `v` (the mean of the middle two for an even count).
pub fn median(v: &[f64]) -> Option<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(s[n / 2]),
        _ => Some((s[n / 2 - 1] + s[n / 2]) / 2.0),
    }
}

/// `items` turned left by `by` places (the measuring order of a pass).
pub fn rotated<T: Clone>(items: &[T], by: usize) -> Vec<T> {
    if items.is_empty() {
        return Vec::new();
    }
    let k = by % items.len();
    items[k..].iter().chain(items[..k].iter()).cloned().collect()
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
    let workloads: Vec<_> = workload::load(&args.workloads)?.into_iter().filter(|w| w.op().is_some()).collect();
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
            per.insert(w.name().to_string(), candidates(&rows));
        }
    }
    if per.is_empty() {
        bail!("no workload of {} appears in the runs' tune.json", args.workloads.display());
    }
    let judged_workloads: Vec<workload::Workload> =
        workloads.iter().filter(|w| per.contains_key(w.name())).cloned().collect();
    let by_op: HashMap<String, Vec<u16>> = judged_workloads
        .iter()
        .filter_map(|w| Some((format!("{:?}", w.op()?), per.get(w.name())?.all.iter().copied().collect())))
        .collect();
    let by_op = std::sync::Arc::new(by_op);
    let out = args.out.clone().unwrap_or_else(|| PathBuf::from("judge"));
    let n_candidates: usize = per.values().map(|c| c.all.len()).sum();
    eprintln!(
        "judging {} runs: {} candidates of {} workloads, {} passes",
        runs.len(),
        n_candidates,
        per.len(),
        args.passes
    );

    let mut times: HashMap<(String, u16), Vec<f64>> = HashMap::new();
    let mut labels_of: HashMap<(String, u16), String> = HashMap::new();
    let spec_arg = match &args.spec {
        Some(s) => Some(crate::input::spec_file::load(s)?.spec),
        None => None,
    };
    for pass in 0..args.passes {
        let dir = out.join(format!("pass-{pass}"));
        let order = by_op.clone();
        let select: runner::Select = Box::new(move |_, op, configs| {
            let keep = order.get(&format!("{op:?}")).cloned().unwrap_or_default();
            let kept: Vec<Config> =
                keep.iter().filter_map(|i| configs.iter().find(|c| c.index == *i).copied()).collect();
            rotated(&kept, pass)
        });
        let spec_arg = spec_arg.clone();
        let opts = runner::Options {
            gpu: args.gpu,
            workloads: judged_workloads.clone(),
            out: dir.clone(),
            spec_for: Box::new(move |info| match &spec_arg {
                Some(s) => Ok(s.clone()),
                None => super::profile::builtin_for_device(info),
            }),
            run_label: format!("judge-{pass}"),
            policy: TimingPolicy::default(),
            commit: env!("HWWFC_COMMIT").to_string(),
            verbose: false,
            select: Some(select),
            cublas: false,
            interleave: true,
        };
        eprintln!("pass {} of {}", pass + 1, args.passes);
        runner::run(&opts)?;
        let records = record::read_all(&dir.join("records.jsonl"))?;
        for (name, v) in tune::measured(&records, &judged_workloads) {
            let kind = judged_workloads.iter().find(|w| w.name() == name).and_then(|w| w.op()).map(|op| op.kind());
            for (c, t) in v {
                if let Some(kind) = kind {
                    labels_of.entry((name.clone(), c.index)).or_insert_with(|| c.label(kind));
                }
                times.entry((name.clone(), c.index)).or_default().push(t);
            }
        }
    }

    // Verdicts.
    let mut rows = Vec::new();
    let mut shares: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for w in &judged_workloads {
        let Some(c) = per.get(w.name()) else { continue };
        let key = |i: u16| (w.name().to_string(), i);
        let judged_of = |i: u16| times.get(&key(i)).and_then(|v| median(v));
        let reference = c.reference.iter().filter_map(|i| judged_of(*i)).reduce(f64::min);
        let verdict = |i: u16| {
            let j = judged_of(i);
            Verdict {
                index: i,
                label: labels_of.get(&key(i)).cloned().unwrap_or_else(|| format!("#{i}")),
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
                    label: labels_of.get(&key(*i))?.clone(),
                    pass_us: times.get(&key(*i))?.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn row(chosen: u16, predicted: u16, finalists: &[u16]) -> Tuned {
        Tuned {
            workload: "w".into(),
            shape: "1x1x1".into(),
            measured: 1,
            confirmed: 0,
            finalists: finalists.to_vec(),
            predicted: String::new(),
            predicted_index: predicted,
            predict_us: 1.0,
            chosen: String::new(),
            chosen_index: chosen,
            chosen_us: 1.0,
            profile_s: 0.0,
            exhaustive_best_us: None,
            reference_chosen_us: None,
            reference_predicted_us: None,
            share: None,
            predicted_share: None,
        }
    }

    #[test]
    fn the_reference_comes_from_the_exhaustive_runs_only() {
        let (k0, k8) = (row(5, 9, &[5, 6, 7]), row(3, 9, &[3, 4]));
        let c = candidates(&[(0, &k0), (8, &k8)]);
        assert_eq!(c.all.iter().copied().collect::<Vec<_>>(), vec![3, 5, 6, 7, 9]);
        // k8's finalists are not candidates, only its choice; the model's
        // first choice is measured but is no reference.
        assert_eq!(c.reference.iter().copied().collect::<Vec<_>>(), vec![5, 6, 7]);
        // Without an exhaustive run, every candidate is a reference.
        let c = candidates(&[(8, &k8)]);
        assert_eq!(c.reference, c.all);
    }

    #[test]
    fn medians_and_rotations() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(rotated(&[1, 2, 3], 1), vec![2, 3, 1]);
        assert_eq!(rotated(&[1, 2, 3], 4), vec![2, 3, 1]);
        assert!(rotated::<u8>(&[], 2).is_empty());
    }
}
