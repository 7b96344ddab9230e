//! Timing launches with CUDA events: warm-up, then repeats, each after a
//! write of a buffer larger than the L2 (so that no repeat finds its inputs
//! cached), with the median, extremes and spread of the repeats.

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaSlice, DevicePtrMut, DriverError};

use super::Gpu;

/// How many runs to make of one configuration.
#[derive(Clone, Copy, Debug)]
pub struct TimingPolicy {
    /// Untimed runs first.
    pub warmup: u32,
    /// Fewest timed runs.
    pub min_repeats: u32,
    /// Most timed runs.
    pub max_repeats: u32,
    /// Timed runs stop growing once they add up to this many milliseconds.
    pub target_ms: f32,
}

impl Default for TimingPolicy {
    fn default() -> Self {
        TimingPolicy { warmup: 2, min_repeats: 5, max_repeats: 25, target_ms: 40.0 }
    }
}

/// The statistics of the timed runs, in microseconds.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct Timing {
    /// Median.
    pub median_us: f64,
    /// Fastest.
    pub min_us: f64,
    /// Slowest.
    pub max_us: f64,
    /// Interquartile range over the median.
    pub spread: f64,
    /// Timed runs.
    pub repeats: u32,
}

impl Timing {
    /// Statistics of `samples` (microseconds, at least one).
    pub fn from_samples(mut samples: Vec<f64>) -> Timing {
        samples.sort_by(|a, b| a.total_cmp(b));
        let n = samples.len();
        let q = |p: f64| -> f64 {
            if n == 0 {
                return f64::NAN;
            }
            let x = p * (n - 1) as f64;
            let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
            let w = x - lo as f64;
            samples[lo] * (1.0 - w) + samples[hi] * w
        };
        let median = q(0.5);
        Timing {
            median_us: median,
            min_us: samples.first().copied().unwrap_or(f64::NAN),
            max_us: samples.last().copied().unwrap_or(f64::NAN),
            spread: (q(0.75) - q(0.25)) / median,
            repeats: n as u32,
        }
    }
}

/// Times `launch` (given the repeat number, to rotate inputs). `first_us`
/// is the duration of an earlier run, used to pick the number of repeats.
pub fn time(
    gpu: &Gpu,
    flush: &mut CudaSlice<u32>,
    policy: &TimingPolicy,
    first_us: f64,
    mut launch: impl FnMut(usize) -> Result<(), DriverError>,
) -> Result<Timing, DriverError> {
    let per = (first_us / 1000.0).max(1e-3);
    let repeats = ((policy.target_ms as f64 / per).ceil() as u32).clamp(policy.min_repeats, policy.max_repeats);
    for i in 0..policy.warmup {
        flush_l2(gpu, flush)?;
        launch(i as usize)?;
    }
    let mut events = Vec::with_capacity(repeats as usize);
    for _ in 0..repeats {
        let start = gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        let end = gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        events.push((start, end));
    }
    for (i, (start, end)) in events.iter().enumerate() {
        flush_l2(gpu, flush)?;
        start.record(&gpu.stream)?;
        launch(policy.warmup as usize + i)?;
        end.record(&gpu.stream)?;
    }
    gpu.stream.synchronize()?;
    let mut samples = Vec::with_capacity(events.len());
    for (start, end) in &events {
        samples.push(start.elapsed_ms(end)? as f64 * 1000.0);
    }
    Ok(Timing::from_samples(samples))
}

/// Writes the whole flush buffer (larger than the L2), evicting the inputs.
pub fn flush_l2(gpu: &Gpu, flush: &mut CudaSlice<u32>) -> Result<(), DriverError> {
    let n = flush.len();
    let (ptr, _guard) = flush.device_ptr_mut(&gpu.stream);
    // SAFETY: `ptr` addresses `n` u32 values owned by `flush`, on this stream.
    unsafe { cudarc::driver::sys::cuMemsetD32Async(ptr, 0x5A5A_5A5A, n, gpu.stream.cu_stream()) }.result()
}
