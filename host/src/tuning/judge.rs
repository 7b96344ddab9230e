//! Judging tuning runs on a common bench: the configurations that several
//! runs chose, the model's first choice and the exhaustive search's
//! finalists, measured afresh side by side in several passes, each run's
//! choice given its share of the fastest reference.
//!
//! Judging a choice by the records of the exhaustive search that also
//! picked the best favours that search: its best is the minimum of a few
//! hundred noisy medians, so it is partly luck, and a choice made from
//! other measurements (or the same search run again) comes out below 100%
//! even when it is the same configuration. The judge measures every
//! candidate afresh instead, in several passes (each compiling and loading
//! the kernels again, the order turned by one place each pass), and takes
//! the median over the passes. The reference is the fastest of the
//! exhaustive runs' finalists and choices; a share above 100% means a
//! choice beat them all.

use super::top_k::Tuned;
use super::{spec_for_pass, SharedSpecFor};
use crate::database::{kernel_medians, RunFolder};
use crate::family::{self, Config};
use crate::input::workload_file::Workload;
use crate::profile::{self, Options, Select};
use crate::stats::median;
use anyhow::Result;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

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

/// `items` turned left by `by` places (the measuring order of a pass).
pub fn rotated<T: Clone>(items: &[T], by: usize) -> Vec<T> {
    if items.is_empty() {
        return Vec::new();
    }
    let k = by % items.len();
    items[k..].iter().chain(items[..k].iter()).cloned().collect()
}

/// A workload's configuration, by workload name and table index.
pub type CandidateKey = (String, u16);

/// What the passes measured.
#[derive(Clone, Debug, Default)]
pub struct Bench {
    /// Each candidate's median in each pass where it succeeded,
    /// microseconds.
    pub times: HashMap<CandidateKey, Vec<f64>>,
    /// Each candidate's label.
    pub labels: HashMap<CandidateKey, String>,
}

impl Bench {
    /// The judged time of a candidate: the median over its passes.
    pub fn judged_us(&self, key: &CandidateKey) -> Option<f64> {
        self.times.get(key).and_then(|v| median(v))
    }
}

/// Measures the candidates of `per` (by workload name) on GPU `gpu` in
/// `passes` passes, each into `out/pass-N/`, turning the order by one
/// place each pass.
pub fn measure(
    gpu: usize,
    workloads: &[Workload],
    per: &BTreeMap<String, Candidates>,
    passes: usize,
    out: &Path,
    spec_for: &SharedSpecFor,
) -> Result<Bench> {
    let by_op: HashMap<String, Vec<u16>> = workloads
        .iter()
        .filter_map(|w| Some((format!("{:?}", w.op()?), per.get(w.name())?.all.iter().copied().collect())))
        .collect();
    let by_op = Arc::new(by_op);
    let mut bench = Bench::default();
    for pass in 0..passes {
        let folder = RunFolder::new(out.join(format!("pass-{pass}")));
        let order = by_op.clone();
        let select: Select = Box::new(move |_, op, configs| {
            let keep = order.get(&format!("{op:?}")).cloned().unwrap_or_default();
            let kept: Vec<Config> =
                keep.iter().filter_map(|i| configs.iter().find(|c| c.index == *i).copied()).collect();
            rotated(&kept, pass)
        });
        let opts = Options {
            select: Some(select),
            interleave: true,
            ..Options::new(
                gpu,
                workloads.to_vec(),
                folder.path().to_path_buf(),
                spec_for_pass(spec_for),
                format!("judge-{pass}"),
            )
        };
        eprintln!("pass {} of {}", pass + 1, passes);
        profile::run(&opts)?;
        for (name, v) in kernel_medians(&folder.records()?, workloads) {
            let kind = workloads.iter().find(|w| w.name() == name).and_then(|w| w.op()).map(|op| op.kind());
            for (c, t) in v {
                if let Some(kind) = kind {
                    bench
                        .labels
                        .entry((name.clone(), c.index))
                        .or_insert_with(|| family::for_config(kind, &c).label(&c));
                }
                bench.times.entry((name.clone(), c.index)).or_default().push(t);
            }
        }
    }
    Ok(bench)
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
