//! Timing launches with CUDA events: warm-up, then repeats, each after a
//! write of a buffer larger than the L2 (so that no repeat finds its inputs
//! cached), with the median, extremes and spread of the repeats; several
//! launches can take turns, repeat by repeat.

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaSlice, DevicePtrMut, DriverError};

use super::Gpu;

/// Bytes written between timed runs to evict the L2 (the flush buffer
/// [`flush_l2`] writes).
pub const FLUSH_BYTES: usize = 256 << 20;

/// How many runs to make of one configuration.
#[derive(Clone, Copy, Debug, serde::Serialize)]
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
        let q = |p: f64| crate::stats::quantile_of_sorted(&samples, p).unwrap_or(f64::NAN);
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

/// A GPU's stopwatch: its flush buffer and the policy of every timing.
pub struct Timer<'g> {
    gpu: &'g Gpu,
    flush: CudaSlice<u32>,
    /// Warm-up and repeats of [`Timer::time`] and [`Timer::time_side_by_side`].
    pub policy: TimingPolicy,
}

impl<'g> Timer<'g> {
    /// A timer on `gpu`, with its flush buffer ([`FLUSH_BYTES`]) allocated.
    pub fn new(gpu: &'g Gpu, policy: TimingPolicy) -> Result<Timer<'g>, DriverError> {
        Ok(Timer { gpu, flush: gpu.stream.alloc_zeros(FLUSH_BYTES / 4)?, policy })
    }

    /// One launch (after a flush), in microseconds: what picks the number
    /// of repeats of the timings that follow.
    pub fn once(&mut self, launch: impl FnMut(usize) -> Result<(), DriverError>) -> Result<f64, DriverError> {
        let policy = TimingPolicy { warmup: 0, min_repeats: 1, max_repeats: 1, target_ms: 0.0 };
        Ok(time(self.gpu, &mut self.flush, &policy, 1.0, launch)?.median_us)
    }

    /// Times `launch` under the policy ([`time`]).
    pub fn time(
        &mut self,
        first_us: f64,
        launch: impl FnMut(usize) -> Result<(), DriverError>,
    ) -> Result<Timing, DriverError> {
        time(self.gpu, &mut self.flush, &self.policy, first_us, launch)
    }

    /// Times `launch` under another `policy` than the timer's.
    pub fn time_under(
        &mut self,
        policy: &TimingPolicy,
        first_us: f64,
        launch: impl FnMut(usize) -> Result<(), DriverError>,
    ) -> Result<Timing, DriverError> {
        time(self.gpu, &mut self.flush, policy, first_us, launch)
    }

    /// Times several launches side by side under the policy
    /// ([`time_interleaved`]).
    pub fn time_side_by_side(
        &mut self,
        first_us: &[f64],
        launch: impl FnMut(usize, usize) -> Result<(), DriverError>,
    ) -> Result<Vec<Timing>, DriverError> {
        time_interleaved(self.gpu, &mut self.flush, &self.policy, first_us, launch)
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
    let mut all = time_interleaved(gpu, flush, policy, &[first_us], |_, i| launch(i))?;
    Ok(all.remove(0))
}

/// How many timed runs `policy` gives a launch of `first_us`.
pub fn repeats(policy: &TimingPolicy, first_us: f64) -> u32 {
    let per = (first_us / 1000.0).max(1e-3);
    ((policy.target_ms as f64 / per).ceil() as u32)
        .clamp(policy.min_repeats, policy.max_repeats.max(policy.min_repeats))
}

/// The order of the launches of [`time_interleaved`]: `(which, repeat)`
/// pairs, warm-ups first (each launch's own, in turn), then round by round
/// every launch that still has repeats left, each round starting one
/// launch further along, so that slow changes of the GPU's state (its
/// clocks, most likely, under its power limit) fall on all of them alike.
pub fn interleaved_order(warmup: u32, repeats: &[u32]) -> Vec<(usize, u32)> {
    let n = repeats.len();
    let mut order = Vec::new();
    for w in 0..warmup {
        order.extend((0..n).map(|j| (j, w)));
    }
    let rounds = repeats.iter().copied().max().unwrap_or(0);
    for r in 0..rounds {
        for s in 0..n {
            let j = (s + r as usize) % n;
            if r < repeats[j] {
                order.push((j, warmup + r));
            }
        }
    }
    order
}

/// Times several launches side by side: `launch(which, repeat)` runs
/// launch `which`, its repeat number rotating the inputs; `first_us[which]`
/// is the duration of an earlier run of it, which picks its number of
/// repeats. The launches take turns in the order of
/// [`interleaved_order`], each after a flush of the L2. Returns one
/// [`Timing`] per launch.
pub fn time_interleaved(
    gpu: &Gpu,
    flush: &mut CudaSlice<u32>,
    policy: &TimingPolicy,
    first_us: &[f64],
    mut launch: impl FnMut(usize, usize) -> Result<(), DriverError>,
) -> Result<Vec<Timing>, DriverError> {
    let counts: Vec<u32> = first_us.iter().map(|t| repeats(policy, *t)).collect();
    let order = interleaved_order(policy.warmup, &counts);
    let mut events = Vec::with_capacity(order.len());
    for &(j, i) in &order {
        flush_l2(gpu, flush)?;
        if i < policy.warmup {
            launch(j, i as usize)?;
            continue;
        }
        let start = gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        let end = gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
        start.record(&gpu.stream)?;
        launch(j, i as usize)?;
        end.record(&gpu.stream)?;
        events.push((j, start, end));
    }
    gpu.stream.synchronize()?;
    let mut samples = vec![Vec::new(); first_us.len()];
    for (j, start, end) in &events {
        samples[*j].push(start.elapsed_ms(end)? as f64 * 1000.0);
    }
    Ok(samples.into_iter().map(Timing::from_samples).collect())
}

/// Writes the whole flush buffer (larger than the L2), evicting the inputs.
pub fn flush_l2(gpu: &Gpu, flush: &mut CudaSlice<u32>) -> Result<(), DriverError> {
    let n = flush.len();
    let (ptr, _guard) = flush.device_ptr_mut(&gpu.stream);
    // SAFETY: `ptr` addresses `n` u32 values owned by `flush`, on this stream.
    unsafe { cudarc::driver::sys::cuMemsetD32Async(ptr, 0x5A5A_5A5A, n, gpu.stream.cu_stream()) }.result()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_follow_the_policy() {
        let p = TimingPolicy { warmup: 2, min_repeats: 5, max_repeats: 25, target_ms: 40.0 };
        assert_eq!(repeats(&p, 1.0), 25);
        assert_eq!(repeats(&p, 4000.0), 10);
        assert_eq!(repeats(&p, 1e6), 5);
    }

    #[test]
    fn interleaving_warms_each_then_takes_turns() {
        let order = interleaved_order(1, &[2, 3, 1]);
        // Warm-ups; round 0 from launch 0; round 1 from launch 1 (launch 2
        // has no repeat left); round 2 from launch 2 (only launch 1 has).
        assert_eq!(order, vec![(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (1, 2), (0, 2), (1, 3)]);
        // Every launch gets its warm-ups and exactly its repeats.
        let counts = [4u32, 1, 7, 3];
        let order = interleaved_order(2, &counts);
        for (j, n) in counts.iter().enumerate() {
            assert_eq!(order.iter().filter(|x| x.0 == j && x.1 < 2).count(), 2);
            assert_eq!(order.iter().filter(|x| x.0 == j && x.1 >= 2).count(), *n as usize);
        }
        assert!(interleaved_order(3, &[]).is_empty());
    }
}
