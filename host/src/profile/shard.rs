//! Dealing a run's work into `N` shards for `N` processes (on as many
//! hosts): every (workload, configuration) key goes to exactly one shard,
//! the shards balanced by predicted time, the same way on every host.
//!
//! The dealing is the longest-first greedy: keys in decreasing predicted
//! seconds (ties by key), each to the shard with the least work so far
//! (ties to the lowest shard). It depends only on the workloads, the spec,
//! the timing policy and the binary's coefficients, never on what a run
//! folder already holds, so a resumed shard keeps its keys.

use std::fmt;
use std::str::FromStr;

/// Shard `index` of `count` (`I/N` on the command line, `0 <= I < N`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, from 0.
    pub index: u32,
    /// How many shards the work is dealt into.
    pub count: u32,
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("`{s}` is not a shard: I/N with 0 <= I < N, such as 0/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// The shard of every item, given each item's sort key and predicted
/// seconds: the longest first, each to the least loaded shard.
pub fn deal<K: Ord>(items: &[(K, f64)], count: u32) -> Vec<u32> {
    let count = count.max(1) as usize;
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by(|&a, &b| items[b].1.total_cmp(&items[a].1).then_with(|| items[a].0.cmp(&items[b].0)));
    let mut load = vec![0.0f64; count];
    let mut shard = vec![0u32; items.len()];
    for i in order {
        let (least, _) =
            load.iter().enumerate().min_by(|a, b| a.1.total_cmp(b.1).then_with(|| a.0.cmp(&b.0))).unwrap_or((0, &0.0));
        load[least] += items[i].1.max(0.0);
        shard[i] = least as u32;
    }
    shard
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_refuse_what_is_not_one() {
        assert_eq!("2/8".parse::<Shard>(), Ok(Shard { index: 2, count: 8 }));
        assert_eq!("0/1".parse::<Shard>().unwrap().to_string(), "0/1");
        for bad in ["8/8", "1/0", "-1/4", "a/4", "3", "1/2/3", ""] {
            let e = bad.parse::<Shard>().unwrap_err();
            assert!(e.contains("is not a shard") && e.contains(&format!("`{bad}`")), "{e}");
        }
    }

    #[test]
    fn dealing_is_deterministic_disjoint_and_balanced() {
        // 200 items of very different lengths.
        let items: Vec<(u32, f64)> = (0..200u32).map(|i| (i, ((i * 7919) % 101) as f64 + 0.5)).collect();
        let a = deal(&items, 4);
        assert_eq!(a, deal(&items, 4));
        let mut load = [0.0; 4];
        for (s, (_, t)) in a.iter().zip(&items) {
            load[*s as usize] += t;
        }
        let total: f64 = load.iter().sum();
        let (lo, hi) = load.iter().fold((f64::MAX, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
        // Longest-first greedy: no shard exceeds another by more than the
        // longest item.
        assert!(hi - lo <= 101.0, "{load:?}");
        assert!((total - items.iter().map(|i| i.1).sum::<f64>()).abs() < 1e-9);
        // One shard takes everything.
        assert!(deal(&items, 1).iter().all(|&s| s == 0));
    }
}
