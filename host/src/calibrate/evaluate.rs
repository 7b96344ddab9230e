//! Predictions of given coefficients on a dataset, per workload.

use super::dataset::{Dataset, WorkloadData};
use super::metrics::{self, Agreement};
use hwwfc_core::{cost, Coefficients, HardwareSpec};

/// The prediction of the core's cost model for every sample of `w`, in
/// microseconds.
pub fn predict(spec: &HardwareSpec, k: &Coefficients, w: &WorkloadData) -> Vec<f64> {
    w.samples.iter().map(|s| cost::unary_cost(spec, k, &w.op, &s.state) as f64).collect()
}

/// The agreement of `k`'s predictions with one workload's measurements.
pub fn agreement(spec: &HardwareSpec, k: &Coefficients, w: &WorkloadData) -> Agreement {
    metrics::agreement(&predict(spec, k, w), &w.times(), &w.families())
}

/// Per-workload agreement of `k` on every workload of `data`.
pub fn per_workload(spec: &HardwareSpec, k: &Coefficients, data: &Dataset) -> Vec<Agreement> {
    data.workloads.iter().map(|w| agreement(spec, k, w)).collect()
}

/// One held-out workload of a cross-validation.
#[derive(Clone, Debug)]
pub struct Fold {
    /// Index of the held-out workload in the dataset.
    pub workload: usize,
    /// Its agreement on the held-out workload.
    pub held_out: Agreement,
    /// The prediction for each of its samples by the fit that did not see
    /// it, in microseconds.
    pub predictions: Vec<f64>,
}

/// Leave-one-workload-out cross-validation: for each workload, fit on all
/// the others (from `start`) and judge the fit on it alone. Folds run in
/// parallel on the available cores; `progress` is called once per fold.
pub fn cross_validate(
    spec: &HardwareSpec,
    data: &Dataset,
    start: &Coefficients,
    opts: &super::fit::FitOptions,
    progress: &(dyn Fn(usize) + Sync),
) -> anyhow::Result<Vec<Fold>> {
    let groups: Vec<usize> = (0..data.workloads.len()).collect();
    cross_validate_groups(spec, data, &groups, start, opts, progress)
}

/// Cross-validation by groups: `groups[i]` is workload `i`'s group (its
/// model family, say); for each group, fit on the workloads of every other
/// group and judge the fit on each workload of the group. With one group
/// per workload this is leave-one-workload-out. Folds run in parallel on
/// the available cores; `progress` is called once per group. Returns one
/// [`Fold`] per workload, in dataset order.
pub fn cross_validate_groups(
    spec: &HardwareSpec,
    data: &Dataset,
    groups: &[usize],
    start: &Coefficients,
    opts: &super::fit::FitOptions,
    progress: &(dyn Fn(usize) + Sync),
) -> anyhow::Result<Vec<Fold>> {
    let n = data.workloads.len();
    if groups.len() != n {
        anyhow::bail!("{} group labels for {n} workloads", groups.len());
    }
    let mut distinct: Vec<usize> = groups.to_vec();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() < 2 {
        anyhow::bail!(
            "cross-validation needs at least two workloads (or groups of them), the records hold {}",
            distinct.len()
        );
    }
    let cores = std::thread::available_parallelism().map_or(2, |t| t.get());
    let threads = cores.clamp(1, distinct.len());
    // The folds share the cores; each fit's loss gets what is left.
    let opts = &super::fit::FitOptions { threads: (cores / threads).max(1), ..*opts };
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<anyhow::Result<Vec<Fold>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| -> anyhow::Result<Vec<Fold>> {
                    let mut out = Vec::new();
                    loop {
                        let f = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(&g) = distinct.get(f) else { return Ok(out) };
                        let train: Vec<&WorkloadData> =
                            data.workloads.iter().zip(groups).filter(|(_, h)| **h != g).map(|(w, _)| w).collect();
                        let fit = super::fit::fit(spec, start, &train, opts)?;
                        for (i, w) in data.workloads.iter().enumerate().filter(|(i, _)| groups[*i] == g) {
                            let predictions = predict(spec, &fit.coefficients, w);
                            let held_out = metrics::agreement(&predictions, &w.times(), &w.families());
                            out.push(Fold { workload: i, held_out, predictions });
                        }
                        progress(f);
                    }
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("a fold panicked")))).collect()
    });
    let mut folds = Vec::new();
    for r in results {
        folds.extend(r?);
    }
    folds.sort_by_key(|f| f.workload);
    Ok(folds)
}
