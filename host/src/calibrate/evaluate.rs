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
    metrics::agreement(&predict(spec, k, w), &w.times())
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
/// parallel on the available cores.
pub fn cross_validate(
    spec: &HardwareSpec,
    data: &Dataset,
    start: &Coefficients,
    opts: &super::fit::FitOptions,
    progress: &(dyn Fn(usize) + Sync),
) -> anyhow::Result<Vec<Fold>> {
    let n = data.workloads.len();
    if n < 2 {
        anyhow::bail!("cross-validation needs at least two workloads, the records hold {n}");
    }
    let threads = std::thread::available_parallelism().map_or(2, |t| t.get()).clamp(1, n);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Vec<anyhow::Result<Vec<Fold>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| -> anyhow::Result<Vec<Fold>> {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= n {
                            return Ok(out);
                        }
                        let train: Vec<&WorkloadData> =
                            data.workloads.iter().enumerate().filter(|(j, _)| *j != i).map(|(_, w)| w).collect();
                        let fit = super::fit::fit(spec, start, &train, opts)?;
                        let w = &data.workloads[i];
                        let predictions = predict(spec, &fit.coefficients, w);
                        let held_out = metrics::agreement(&predictions, &w.times());
                        out.push(Fold { workload: i, held_out, predictions });
                        progress(i);
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
