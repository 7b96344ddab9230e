//! The statistics of samples the host takes: quantiles by linear
//! interpolation between order statistics, and the median among them.
//! Every median in the host (of kernel timings, of host-side timings, of
//! several measuring passes) is this one.

/// The `p`-quantile (`0 <= p <= 1`) of `samples`, interpolating linearly
/// between the two nearest order statistics; `None` for no samples. NaNs
/// sort last.
pub fn quantile(samples: &[f64], p: f64) -> Option<f64> {
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    quantile_of_sorted(&s, p)
}

/// [`quantile`] of samples already sorted ascending.
pub fn quantile_of_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let x = p.clamp(0.0, 1.0) * (n - 1) as f64;
    let (lo, hi) = (x.floor() as usize, x.ceil() as usize);
    let w = x - lo as f64;
    Some(sorted.get(lo)? * (1.0 - w) + sorted.get(hi)? * w)
}

/// The median of `samples`: the middle one, or the mean of the two middle
/// ones for an even count; `None` for no samples.
pub fn median(samples: &[f64]) -> Option<f64> {
    quantile(samples, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_of_odd_even_and_no_samples() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    #[test]
    fn quantiles_interpolate() {
        let s = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&s, 0.0), Some(1.0));
        assert_eq!(quantile(&s, 1.0), Some(5.0));
        assert_eq!(quantile(&s, 0.25), Some(2.0));
        assert_eq!(quantile(&[1.0, 2.0], 0.25), Some(1.25));
    }
}
