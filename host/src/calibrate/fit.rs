//! Fitting the cost model's coefficients to measured times.
//!
//! The loss is the squared error of log time, averaged per workload and
//! then over workloads (each workload weighs the same, whatever its number
//! of configurations). Log time makes the fit care about ratios, which is
//! what ranking needs, and keeps the absolute scale the schedules add up.
//!
//! Coefficients stay physical through their parameterization: shares
//! (efficiencies, the L2 miss rate) through a logistic, the overlap
//! exponent as `1 + exp`, everything else through `exp`. Coefficients the
//! data cannot see (layout changes, DRAM-streamed tiles, strided softmax:
//! the CUDA kernels have none) keep their values. The loss is a sum of
//! squares of per-sample residuals, so the minimizer is Levenberg-Marquardt
//! (the Jacobian by forward differences, the normal equations solved with
//! `nalgebra`'s Cholesky), which converges in tens of Jacobians where a
//! simplex takes thousands of steps, followed by one run of `argmin`'s
//! Nelder-Mead from where it stopped, which leaves the basin a
//! gradient step cannot (held out, leave-one-workload-out on the 30
//! workloads of `calib-data/h200/run*`: rho 0.934 and the first choice at
//! 96.9% of the best, against 0.929 and 96.6% with the descent alone);
//! where the descent finds no step at all, Nelder-Mead restarts from its
//! best point until it stops improving. A weak prior around the defaults
//! (see [`PRIOR_WEIGHT`]) keeps the coefficients the data does not
//! determine where physics puts them.

use super::dataset::WorkloadData;
use anyhow::{anyhow, bail, Result};
use argmin::core::{CostFunction, Executor, State};
use argmin::solver::neldermead::NelderMead;
use hwwfc_core::cost::{self, COEFFICIENT_COUNT, COEFFICIENT_NAMES};
use hwwfc_core::{Coefficients, HardwareSpec};
use nalgebra::DVector;

/// How a coefficient maps to an unbounded parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Map {
    /// In (0, 1): logistic.
    Share,
    /// Above 1: `1 + exp`.
    AboveOne,
    /// Positive: `exp`.
    Positive,
}

/// The coefficients fitted, and how each is kept physical.
const FITTED: [(&str, Map); 34] = [
    ("compute_efficiency", Map::Share),
    ("memory_efficiency", Map::Share),
    ("l2_bandwidth_ratio", Map::Positive),
    ("l2_miss_rate", Map::Share),
    ("memory_latency_us", Map::Positive),
    ("warp_tile_half", Map::Positive),
    ("warps_half", Map::Positive),
    ("step_latency_us", Map::Positive),
    ("block_overhead_us", Map::Positive),
    ("block_dispatch_us", Map::Positive),
    ("softmax_efficiency", Map::Share),
    ("softmax_warps_half", Map::Positive),
    ("softmax_step_latency_us", Map::Positive),
    ("softmax_block_overhead_us", Map::Positive),
    ("reduce_us_per_warp", Map::Positive),
    ("scalar_load_us", Map::Positive),
    ("store_efficiency", Map::Share),
    ("launch_scale", Map::Positive),
    ("overlap_exponent", Map::AboveOne),
    ("smem_bytes_per_flop", Map::Positive),
    ("combine_ops", Map::Positive),
    ("tma_efficiency", Map::Share),
    ("tma_tile_overhead_us", Map::Positive),
    ("split_sync_us", Map::Positive),
    ("split_partial_us_per_kib", Map::Positive),
    ("sm_bytes_per_flop", Map::Positive),
    ("tma_overlap_exponent", Map::AboveOne),
    ("tma_sm_bytes_per_flop", Map::Positive),
    ("tma_latency_us", Map::Positive),
    ("tma_step_exponent", Map::AboveOne),
    ("wgmma_n_half", Map::Positive),
    ("pingpong_efficiency", Map::Share),
    ("tma_stage_power", Map::Positive),
    ("dram_latency_ratio", Map::AboveOne),
];

fn slot(name: &str) -> Option<usize> {
    COEFFICIENT_NAMES.iter().position(|n| *n == name)
}

fn to_param(map: Map, v: f64) -> f64 {
    match map {
        Map::Share => {
            let v = v.clamp(1e-6, 1.0 - 1e-6);
            (v / (1.0 - v)).ln()
        }
        Map::AboveOne => (v - 1.0).max(1e-6).ln(),
        Map::Positive => v.max(1e-12).ln(),
    }
}

fn from_param(map: Map, p: f64) -> f64 {
    match map {
        Map::Share => 1.0 / (1.0 + (-p).exp()),
        Map::AboveOne => 1.0 + p.exp(),
        Map::Positive => p.exp(),
    }
}

/// The parameters of `k`.
pub fn params(k: &Coefficients) -> DVector<f64> {
    let a = k.to_array();
    DVector::from_iterator(
        FITTED.len(),
        FITTED.iter().map(|(name, map)| to_param(*map, slot(name).map_or(1.0, |i| a[i] as f64))),
    )
}

/// The coefficients of parameters `p`, the others taken from `base`.
pub fn coefficients(p: &DVector<f64>, base: &Coefficients) -> Coefficients {
    let mut a: [f32; COEFFICIENT_COUNT] = base.to_array();
    for ((name, map), v) in FITTED.iter().zip(p.iter()) {
        if let Some(i) = slot(name) {
            a[i] = from_param(*map, *v) as f32;
        }
    }
    Coefficients::from_array(a)
}

/// What the loss (the mean over workloads of the mean squared log error)
/// compares the predictions with: each workload's measured log times,
/// computed once for the many evaluations of a fit.
struct Targets<'a> {
    workloads: &'a [&'a WorkloadData],
    /// Per workload, per sample: the log of the measured time.
    log_times: Vec<Vec<f64>>,
}

impl<'a> Targets<'a> {
    /// The targets of `workloads`.
    fn new(workloads: &'a [&'a WorkloadData]) -> Self {
        let log_times = workloads.iter().map(|w| w.samples.iter().map(|s| s.time_us().ln()).collect()).collect();
        Targets { workloads, log_times }
    }

    /// `f` of each workload's index, the workloads shared among `threads`
    /// threads, in workload order whatever the threads.
    fn per_workload<T: Send + Clone + Default>(&self, threads: usize, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
        let n = self.workloads.len();
        let mut out = vec![T::default(); n];
        let chunk = n.div_ceil(threads.clamp(1, n.max(1)));
        let fill = |first: usize, part: &mut [T]| {
            for (i, o) in part.iter_mut().enumerate() {
                *o = f(first + i);
            }
        };
        if chunk >= n {
            fill(0, &mut out);
        } else {
            std::thread::scope(|s| {
                for (i, part) in out.chunks_mut(chunk).enumerate() {
                    let fill = &fill;
                    s.spawn(move || fill(i * chunk, part));
                }
            });
        }
        out
    }

    /// The log error of `k`'s prediction for each sample of workload `i`
    /// (30 where the prediction is not a positive number).
    fn log_errors<'s>(
        &'s self,
        spec: &'s HardwareSpec,
        k: &'s Coefficients,
        i: usize,
    ) -> impl Iterator<Item = f64> + 's {
        let w = self.workloads[i];
        w.samples.iter().zip(&self.log_times[i]).map(move |(s, ln_t)| {
            let pred = cost::unary_cost(spec, k, &w.op, &s.state) as f64;
            if pred.is_finite() && pred > 0.0 {
                pred.ln() - ln_t
            } else {
                30.0
            }
        })
    }

    /// The loss of `k`, its workloads shared among `threads` threads. The
    /// per-workload errors are added in workload order whatever the
    /// threads, so the loss, and so the fit, is the same bits on any
    /// machine.
    fn loss(&self, spec: &HardwareSpec, k: &Coefficients, threads: usize) -> f64 {
        let errors = self.per_workload(threads, |i| {
            let sum = self.log_errors(spec, k, i).fold(0.0, |acc, r| acc + r * r);
            sum / self.workloads[i].samples.len().max(1) as f64
        });
        errors.iter().sum::<f64>() / self.workloads.len().max(1) as f64
    }

    /// The weighted residuals of `k`, workload after workload: each
    /// sample's log error times `1 / sqrt(samples x workloads)`, so that
    /// their sum of squares is [`Targets::loss`]. The same bits on any
    /// number of threads.
    fn residuals(&self, spec: &HardwareSpec, k: &Coefficients, threads: usize) -> Vec<f64> {
        let n = self.workloads.len().max(1);
        self.per_workload(threads, |i| {
            let scale = 1.0 / ((self.workloads[i].samples.len().max(1) * n) as f64).sqrt();
            self.log_errors(spec, k, i).map(|r| scale * r).collect::<Vec<f64>>()
        })
        .concat()
    }
}

/// Weight of the prior: the squared distance of the parameters from those
/// of the defaults (log-normal around the datasheet values). It keeps a
/// coefficient the training data cannot see (the scalar-load time when no
/// workload has odd rows, say) at its physical default instead of letting
/// the minimizer drift it.
pub const PRIOR_WEIGHT: f64 = 1e-3;

struct Objective<'a> {
    spec: &'a HardwareSpec,
    base: Coefficients,
    prior: DVector<f64>,
    targets: &'a Targets<'a>,
    threads: usize,
}

impl CostFunction for Objective<'_> {
    type Param = DVector<f64>;
    type Output = f64;

    fn cost(&self, p: &Self::Param) -> Result<f64, argmin::core::Error> {
        let k = coefficients(p, &self.base);
        let l = self.targets.loss(self.spec, &k, self.threads) + PRIOR_WEIGHT * (p - &self.prior).norm_squared();
        Ok(if l.is_finite() { l } else { f64::MAX })
    }
}

/// The loss with the prior: the sum of squares of the residuals and of
/// the prior's.
fn objective(residuals: &[f64], p: &DVector<f64>, prior: &DVector<f64>) -> f64 {
    let l = residuals.iter().map(|r| r * r).sum::<f64>() + PRIOR_WEIGHT * (p - prior).norm_squared();
    if l.is_finite() {
        l
    } else {
        f64::MAX
    }
}

/// Step of the forward differences of the Jacobian, in parameter units
/// (logs and logits).
const JACOBIAN_STEP: f64 = 1e-3;

/// Levenberg-Marquardt on the residuals from `p`: each step solves
/// `(J'J + lambda diag(J'J)) d = -J'r` (the Jacobian by forward
/// differences), taken where it lowers the loss; `lambda` falls after a
/// step taken and grows after one refused. It stops when a step gains
/// less than a millionth of the loss, or none can be found.
fn levenberg_marquardt(
    spec: &HardwareSpec,
    base: &Coefficients,
    targets: &Targets,
    prior: &DVector<f64>,
    mut p: DVector<f64>,
    opts: &FitOptions,
) -> Descent {
    let np = p.len();
    let residuals = |q: &DVector<f64>| targets.residuals(spec, &coefficients(q, base), opts.threads);
    let mut r = residuals(&p);
    let mut loss = objective(&r, &p, prior);
    let mut lambda = 1e-3;
    let (mut iterations, mut steps) = (0, 0);
    while iterations < opts.lm_iters {
        iterations += 1;
        // J'J and J'r, the prior's rows included.
        let columns: Vec<Vec<f64>> = (0..np)
            .map(|i| {
                let mut q = p.clone();
                q[i] += JACOBIAN_STEP;
                residuals(&q).iter().zip(&r).map(|(a, b)| (a - b) / JACOBIAN_STEP).collect()
            })
            .collect();
        let mut jtj = nalgebra::DMatrix::<f64>::zeros(np, np);
        let mut jtr = DVector::<f64>::zeros(np);
        for i in 0..np {
            jtr[i] = columns[i].iter().zip(&r).map(|(a, b)| a * b).sum::<f64>() + PRIOR_WEIGHT * (p[i] - prior[i]);
            for j in 0..=i {
                let v = columns[i].iter().zip(&columns[j]).map(|(a, b)| a * b).sum::<f64>()
                    + if i == j { PRIOR_WEIGHT } else { 0.0 };
                jtj[(i, j)] = v;
                jtj[(j, i)] = v;
            }
        }
        let mut stepped = false;
        while lambda < 1e10 {
            let mut m = jtj.clone();
            for d in 0..np {
                m[(d, d)] += lambda * jtj[(d, d)].max(1e-12);
            }
            let Some(chol) = m.cholesky() else {
                lambda *= 4.0;
                continue;
            };
            let q = &p - chol.solve(&jtr);
            let rq = residuals(&q);
            let lq = objective(&rq, &q, prior);
            if lq < loss {
                let gain = (loss - lq) / loss;
                p = q;
                r = rq;
                loss = lq;
                lambda = (lambda / 3.0).max(1e-12);
                steps += 1;
                stepped = gain > 1e-6;
                break;
            }
            lambda *= 4.0;
        }
        if !stepped {
            break;
        }
    }
    Descent { params: p, loss, iterations, steps }
}

/// Where a descent ended.
struct Descent {
    params: DVector<f64>,
    /// The objective there (with the prior).
    loss: f64,
    /// Iterations run (each a Jacobian).
    iterations: u64,
    /// Steps taken.
    steps: u64,
}

/// A fit's result.
#[derive(Clone, Debug)]
pub struct Fit {
    /// The fitted coefficients.
    pub coefficients: Coefficients,
    /// The loss at the start.
    pub initial_loss: f64,
    /// The loss at the end.
    pub loss: f64,
    /// Nelder-Mead iterations over all restarts.
    pub iterations: u64,
}

/// Settings of the minimizer.
#[derive(Clone, Copy, Debug)]
pub struct FitOptions {
    /// Most Levenberg-Marquardt iterations (each a Jacobian).
    pub lm_iters: u64,
    /// Iterations of one Nelder-Mead run.
    pub max_iters: u64,
    /// Most restarts from the best point.
    pub restarts: u32,
    /// Threads that share each evaluation of the loss (the result does not
    /// depend on them).
    pub threads: usize,
}

impl Default for FitOptions {
    fn default() -> Self {
        let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
        FitOptions { lm_iters: 100, max_iters: 1500, restarts: 4, threads }
    }
}

/// Fits the coefficients to `workloads`, starting from `start`.
pub fn fit(spec: &HardwareSpec, start: &Coefficients, workloads: &[&WorkloadData], opts: &FitOptions) -> Result<Fit> {
    if workloads.is_empty() || workloads.iter().map(|w| w.samples.len()).sum::<usize>() < 2 * FITTED.len() {
        bail!(
            "too few records to fit: {} workloads with {} measured configurations (at least {} needed)",
            workloads.len(),
            workloads.iter().map(|w| w.samples.len()).sum::<usize>(),
            2 * FITTED.len()
        );
    }
    let targets = Targets::new(workloads);
    let initial_loss = targets.loss(spec, start, opts.threads);
    let prior = params(&Coefficients::default());
    let lm = levenberg_marquardt(spec, start, &targets, &prior, params(start), opts);
    let (mut best, mut best_loss, mut iterations) = (lm.params, lm.loss, lm.iterations);
    // After a descent, one Nelder-Mead run from its end (it leaves a basin
    // the descent stops in); where the descent found no step down (a loss
    // flat or broken around the start), the restarts as before.
    let restarts = if lm.steps > 0 { 1 } else { opts.restarts + 1 };
    for _ in 0..restarts {
        // A simplex of unit steps in parameter space around the best point.
        let mut simplex = vec![best.clone()];
        for i in 0..best.len() {
            let mut v = best.clone();
            v[i] += 0.5;
            simplex.push(v);
        }
        let solver = NelderMead::new(simplex).with_sd_tolerance(1e-7).map_err(|e| anyhow!("{e}"))?;
        let problem = Objective {
            spec,
            base: *start,
            prior: params(&Coefficients::default()),
            targets: &targets,
            threads: opts.threads,
        };
        let res = Executor::new(problem, solver)
            .configure(|s| s.max_iters(opts.max_iters))
            .run()
            .map_err(|e| anyhow!("fit: {e}"))?;
        iterations += res.state().get_iter();
        let (Some(p), cost) = (res.state().get_best_param().cloned(), res.state().get_best_cost()) else {
            break;
        };
        let improved = cost < best_loss * (1.0 - 1e-4);
        if cost < best_loss {
            best = p;
            best_loss = cost;
        }
        if !improved {
            break;
        }
    }
    Ok(Fit { coefficients: coefficients(&best, start), initial_loss, loss: best_loss, iterations })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loss_is_the_same_bits_on_any_number_of_threads() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../calib-data/h200/run1");
        let data = super::super::dataset::load(&dir).unwrap();
        let all: Vec<&WorkloadData> = data.workloads.iter().collect();
        let spec = crate::input::spec_file::load("h200").unwrap().whole().unwrap();
        let targets = Targets::new(&all);
        let one = targets.loss(&spec, &Coefficients::default(), 1);
        assert!(one.is_finite() && one > 0.0, "{one}");
        for threads in [2, 3, 7, all.len() + 5] {
            assert_eq!(targets.loss(&spec, &Coefficients::default(), threads).to_bits(), one.to_bits(), "{threads}");
        }
        // Another model's coefficients give another loss.
        let k = Coefficients { compute_efficiency: 0.5, ..Coefficients::default() };
        assert_ne!(targets.loss(&spec, &k, 2), one);
    }

    #[test]
    fn levenberg_marquardt_finds_the_coefficients_that_made_the_times() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../calib-data/h200/run1");
        let mut data = super::super::dataset::load(&dir).unwrap();
        let spec = crate::input::spec_file::load("h200").unwrap().whole().unwrap();
        // Times made by known coefficients, away from the defaults.
        let truth = Coefficients {
            compute_efficiency: 0.6,
            memory_efficiency: 0.7,
            step_latency_us: 0.3,
            block_overhead_us: 2.0,
            ..Coefficients::default()
        };
        data.workloads.truncate(8);
        for w in &mut data.workloads {
            for s in &mut w.samples {
                s.times_us = vec![cost::unary_cost(&spec, &truth, &w.op, &s.state) as f64];
            }
        }
        let all: Vec<&WorkloadData> = data.workloads.iter().collect();
        let targets = Targets::new(&all);
        let start = Coefficients::default();
        let prior = params(&start);
        let before = targets.loss(&spec, &start, 2);
        let d = levenberg_marquardt(&spec, &start, &targets, &prior, params(&start), &FitOptions::default());
        assert!(d.steps > 0 && d.iterations <= FitOptions::default().lm_iters);
        // The prior pulls toward the defaults, so the minimum is near the
        // truth, not on it: at least as low as the truth's objective.
        let at_truth = objective(&targets.residuals(&spec, &truth, 2), &params(&truth), &prior);
        assert!(d.loss <= at_truth * 1.001, "{} at the end, {at_truth} at the truth, {before} at the start", d.loss);
        // The residuals' sum of squares is the loss.
        let r = targets.residuals(&spec, &start, 3);
        let sum: f64 = r.iter().map(|x| x * x).sum();
        assert!((sum - before).abs() <= 1e-9 * before, "{sum} vs {before}");
    }

    #[test]
    fn every_fitted_name_is_a_coefficient_once() {
        for (i, (name, _)) in FITTED.iter().enumerate() {
            assert!(slot(name).is_some(), "{name} is not a coefficient");
            assert!(FITTED[..i].iter().all(|(n, _)| n != name), "{name} twice");
        }
    }

    #[test]
    fn parameters_round_trip_and_stay_physical() {
        let k = Coefficients::default();
        let back = coefficients(&params(&k), &k);
        for (a, b) in k.to_array().iter().zip(back.to_array().iter()) {
            assert!((a - b).abs() <= 1e-5 * a.abs().max(1.0), "{a} vs {b}");
        }
        let wild = DVector::from_element(FITTED.len(), 40.0);
        let c = coefficients(&wild, &k);
        assert!(c.validate().is_ok(), "{c:?}");
        assert!(c.compute_efficiency <= 1.0 && c.overlap_exponent > 1.0);
        let low = coefficients(&DVector::from_element(FITTED.len(), -40.0), &k);
        assert!(low.compute_efficiency >= 0.0 && low.overlap_exponent >= 1.0);
    }
}
