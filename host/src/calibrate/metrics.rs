//! How well a predicted cost ranks measured times.

use statrs::statistics::{Data, OrderStatistics, RankTieBreaker};

/// Agreement of a prediction with measurements over one workload's
/// configurations.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Agreement {
    /// Spearman's rank correlation.
    pub rho: f64,
    /// Kendall's tau-b.
    pub tau: f64,
    /// Measured time of the predicted best over the measured best, minus
    /// one (0 when the prediction picks the fastest).
    pub regret_top1: f64,
    /// Measured best over the best measured among the predicted top 1.
    pub top1_share: f64,
    /// The same among the predicted top 4.
    pub top4_share: f64,
    /// The same among the predicted top 8.
    pub top8_share: f64,
    /// The same among the eight that top-8 tuning measures (the model's
    /// first eight, hedged across kernel families:
    /// [`crate::tuning::shortlist`]).
    pub tuned8_share: f64,
}

fn ranks(v: &[f64]) -> Vec<f64> {
    // statrs panics on NaN; a NaN prediction ranks last.
    let clean: Vec<f64> = v.iter().map(|x| if x.is_nan() { f64::INFINITY } else { *x }).collect();
    Data::new(clean).ranks(RankTieBreaker::Average)
}

fn pearson(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let (mut cov, mut va, mut vb) = (0.0, 0.0, 0.0);
    for (x, y) in a.iter().zip(b) {
        cov += (x - ma) * (y - mb);
        va += (x - ma).powi(2);
        vb += (y - mb).powi(2);
    }
    if va == 0.0 || vb == 0.0 {
        return 0.0;
    }
    cov / (va * vb).sqrt()
}

/// Spearman's rho: Pearson's correlation of the ranks (ties averaged).
pub fn spearman(a: &[f64], b: &[f64]) -> f64 {
    pearson(&ranks(a), &ranks(b))
}

/// Kendall's tau-b (ties in either list handled), over all pairs.
pub fn kendall(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (mut concordant, mut discordant, mut ties_a, mut ties_b) = (0i64, 0i64, 0i64, 0i64);
    for i in 0..n {
        for j in i + 1..n {
            let da = a[i].partial_cmp(&a[j]);
            let db = b[i].partial_cmp(&b[j]);
            match (da, db) {
                (Some(std::cmp::Ordering::Equal), Some(std::cmp::Ordering::Equal)) => {}
                (Some(std::cmp::Ordering::Equal), _) => ties_a += 1,
                (_, Some(std::cmp::Ordering::Equal)) => ties_b += 1,
                (Some(x), Some(y)) if x == y => concordant += 1,
                (Some(_), Some(_)) => discordant += 1,
                _ => {}
            }
        }
    }
    let n0 = (concordant + discordant) as f64;
    let denom = ((n0 + ties_a as f64) * (n0 + ties_b as f64)).sqrt();
    if denom == 0.0 {
        0.0
    } else {
        (concordant - discordant) as f64 / denom
    }
}

/// Measured best over the best measured time among the `k` configurations
/// predicted fastest (1 when the true best is among them).
pub fn best_in_top_k(predicted: &[f64], measured: &[f64], k: usize) -> f64 {
    let mut order = crate::tuning::shortlist::cheapest_first(predicted);
    order.truncate(k.max(1));
    best_among(measured, &order)
}

/// Measured best over the best measured time among the configurations
/// at `picked` (indices).
pub fn best_among(measured: &[f64], picked: &[usize]) -> f64 {
    let best = measured.iter().copied().fold(f64::INFINITY, f64::min);
    best / picked.iter().filter_map(|&i| measured.get(i).copied()).fold(f64::INFINITY, f64::min)
}

/// Every agreement figure of `predicted` against `measured` (same order),
/// the configurations' kernel families `family` (same order) telling
/// top-8 tuning's shortlist.
pub fn agreement<F: PartialEq>(predicted: &[f64], measured: &[f64], family: &[F]) -> Agreement {
    let top1 = best_in_top_k(predicted, measured, 1);
    Agreement {
        rho: spearman(predicted, measured),
        tau: kendall(predicted, measured),
        regret_top1: 1.0 / top1 - 1.0,
        top1_share: top1,
        top4_share: best_in_top_k(predicted, measured, 4),
        top8_share: best_in_top_k(predicted, measured, 8),
        tuned8_share: best_among(measured, &crate::tuning::shortlist::shortlist(predicted, family, 8)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perfect_reversed_and_tied() {
        let m = [1.0, 2.0, 3.0, 4.0, 5.0];
        let one = [0u8; 5];
        let a = agreement(&m, &m, &one);
        assert!((a.rho - 1.0).abs() < 1e-12 && (a.tau - 1.0).abs() < 1e-12);
        assert_eq!((a.regret_top1, a.top8_share, a.tuned8_share), (0.0, 1.0, 1.0));
        let r: Vec<f64> = m.iter().rev().copied().collect();
        let a = agreement(&r, &m, &one);
        assert!((a.rho + 1.0).abs() < 1e-12 && (a.tau + 1.0).abs() < 1e-12);
        assert!((a.regret_top1 - 4.0).abs() < 1e-12);
        assert!((a.top4_share - 0.5).abs() < 1e-12);
        assert_eq!(spearman(&[1.0, 1.0, 1.0], &m[..3]), 0.0);
    }

    #[test]
    fn matches_known_values() {
        // scipy.stats.spearmanr / kendalltau on these lists.
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let b = [2.0, 1.0, 4.0, 3.0, 6.0, 5.0];
        assert!((spearman(&a, &b) - 0.8285714285714286).abs() < 1e-12);
        assert!((kendall(&a, &b) - 0.6).abs() < 1e-12);
        let c = [1.0, 2.0, 2.0, 3.0];
        let d = [1.0, 3.0, 2.0, 4.0];
        assert!((kendall(&c, &d) - 0.9128709291752769).abs() < 1e-12);
        assert!((spearman(&c, &d) - 0.9486832980505138).abs() < 1e-12);
    }

    #[test]
    fn nan_predictions_rank_last_without_panicking() {
        let a = agreement(&[f64::NAN, 1.0, 2.0], &[3.0, 1.0, 2.0], &[0u8; 3]);
        assert!((a.rho - 1.0).abs() < 1e-12);
    }
}
