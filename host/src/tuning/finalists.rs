//! The second look: configurations whose first measurement is within
//! [`CONFIRM_TOLERANCE`] of the fastest are measured again, side by side,
//! and the fastest of that second pass wins.
//!
//! On the H200 one configuration measured up to 14% apart from one pass to
//! another (Llama 3's output projection at 8192 tokens on a 128x128x64
//! tile: 824 us in one, 941 us in another; most likely its clocks under
//! the power limit), more than the gaps between the best few
//! configurations.

use crate::family::Config;

/// Configurations whose first median is within this share of the fastest
/// are measured a second time, side by side, before the choice.
pub const CONFIRM_TOLERANCE: f64 = 0.05;

/// The configurations of one workload's first pass `(config, median)` worth
/// a second measurement: those within [`CONFIRM_TOLERANCE`] of the fastest,
/// none where only one is.
pub fn finalists(first: &[(Config, f64)]) -> Vec<Config> {
    let Some(best) = first.iter().map(|x| x.1).reduce(f64::min) else { return Vec::new() };
    let close: Vec<Config> = first.iter().filter(|x| x.1 <= best * (1.0 + CONFIRM_TOLERANCE)).map(|x| x.0).collect();
    if close.len() > 1 {
        close
    } else {
        Vec::new()
    }
}

/// The choice among a workload's first pass and the side-by-side second
/// measurements of its finalists: the finalist of the fastest second
/// median (its first where the second is missing, as after a failed
/// launch), or the fastest first median when there were no finalists.
/// Returns the configuration and the time it is chosen by.
pub fn choose(first: &[(Config, f64)], second: &[(Config, f64)]) -> Option<(Config, f64)> {
    let finals = finalists(first);
    let pooled = |(c, t): &(Config, f64)| {
        let again = second.iter().find(|x| x.0.index == c.index).map(|x| x.1);
        (*c, again.unwrap_or(*t))
    };
    first
        .iter()
        .filter(|x| finals.is_empty() || finals.iter().any(|f| f.index == x.0.index))
        .map(pooled)
        .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.index.cmp(&b.0.index)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwwfc_core::space::{self, SpaceKind};
    use hwwfc_core::OpKind;

    fn configs(n: usize) -> Vec<Config> {
        let states = space::states(SpaceKind::Cuda, OpKind::MatMul);
        states.iter().take(n).enumerate().map(|(i, s)| Config::new(i as u16, s)).collect()
    }

    #[test]
    fn only_close_configurations_are_finalists() {
        let c = configs(4);
        let first = [(c[0], 10.0), (c[1], 10.35), (c[2], 10.5), (c[3], 9.9)];
        let f: Vec<u16> = finalists(&first).iter().map(|x| x.index).collect();
        // Within 5% of 9.9: up to 10.395.
        assert_eq!(f, vec![c[0].index, c[1].index, c[3].index]);
        // A clear winner needs no second look.
        assert!(finalists(&[(c[0], 10.0), (c[1], 11.0)]).is_empty());
        assert!(finalists(&[]).is_empty());
    }

    #[test]
    fn the_second_measurement_decides_between_finalists() {
        let c = configs(3);
        let first = [(c[0], 10.0), (c[1], 10.1), (c[2], 12.0)];
        // Without a second pass: the fastest first median.
        assert_eq!(choose(&first, &[]).map(|x| x.0.index), Some(c[0].index));
        // The side-by-side second pass decides: it finds the first one
        // slower.
        let (pick, t) = choose(&first, &[(c[0], 10.6), (c[1], 10.5)]).expect("a choice");
        assert_eq!(pick.index, c[1].index);
        assert_eq!(t, 10.5);
        // A finalist without a second time competes with its first.
        let (pick, t) = choose(&first, &[(c[1], 10.5)]).expect("a choice");
        assert_eq!((pick.index, t), (c[0].index, 10.0));
        // A configuration outside the finalists is never chosen, whatever
        // its second time.
        let (pick, _) = choose(&first, &[(c[0], 10.0), (c[1], 10.0), (c[2], 1.0)]).expect("a choice");
        assert_ne!(pick.index, c[2].index);
        assert!(choose(&[], &[]).is_none());
    }
}
