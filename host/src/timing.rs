//! Timing by the median of many repeats.
//!
//! A single run of a solver takes microseconds, below the noise of one
//! measurement, so each is repeated until [`BUDGET`] has passed or
//! [`MAX_REPEATS`] runs are done (at least [`MIN_REPEATS`]), each run timed
//! on its own; the median resists the outliers (a page fault, a context
//! switch) that a mean would absorb. Results go through
//! [`std::hint::black_box`] so the optimizer cannot drop the work.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Wall-clock time spent repeating one measurement, at most (after the
/// minimum number of repeats).
pub const BUDGET: Duration = Duration::from_millis(100);
/// Most repeats of one measurement.
pub const MAX_REPEATS: usize = 10_000;
/// Fewest repeats of one measurement.
pub const MIN_REPEATS: usize = 3;

/// The median time of a repeated run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    /// Median of the runs, in microseconds.
    pub median_us: f64,
    /// Runs measured.
    pub repeats: usize,
}

/// Times `f` by the median of repeated runs (after one warm-up run).
pub fn median_of_repeats<T>(mut f: impl FnMut() -> T) -> Timing {
    black_box(f());
    let mut samples: Vec<f64> = Vec::with_capacity(1024);
    let start = Instant::now();
    while samples.len() < MAX_REPEATS && (samples.len() < MIN_REPEATS || start.elapsed() < BUDGET) {
        let t = Instant::now();
        black_box(f());
        samples.push(t.elapsed().as_secs_f64() * 1.0e6);
    }
    Timing { median_us: crate::stats::median(&samples).unwrap_or(0.0), repeats: samples.len() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_within_bounds() {
        let t = median_of_repeats(|| 1 + 1);
        assert!(t.repeats >= MIN_REPEATS && t.repeats <= MAX_REPEATS);
        assert!(t.median_us >= 0.0);
    }
}
