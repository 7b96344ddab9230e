//! How far WFC lands from the optimum: solves 2000 random chains (fixed
//! seed) of four sizes with WFC (lookahead on and off, and with forward
//! checking) and with exact DP, and prints one row per size and setting.
//!
//! The gap of an instance is `(wfc - exact) / max(exact, 1)`; "optimal"
//! means within a relative 1e-5 of exact DP. "infeasible" is the share of
//! instances without any schedule (exact DP and WFC agree on it);
//! "failed" the share of feasible ones where WFC returned an error.
//!
//! `cargo run --release -p hwwfc-core --example optimality_gap`

#[path = "../tests/support/mod.rs"]
mod support;

use hwwfc_core::propagate::Propagation;
use hwwfc_core::wfc::WfcConfig;
use hwwfc_core::{exact, wfc, SolveError};

const L: usize = 32;
const SIZES: [(usize, usize); 4] = [(4, 8), (8, 16), (16, 36), (32, 64)];
const PER_SIZE: usize = 500;
const SEED: u64 = 0x5eed;

fn main() {
    let configs = [
        ("lookahead", WfcConfig::default()),
        ("no lookahead", WfcConfig { lookahead: false, ..WfcConfig::default() }),
        ("forward checking", WfcConfig { propagation: Propagation::Neighbours, ..WfcConfig::default() }),
    ];
    println!(
        "{:<8} {:<17} {:>9} {:>10} {:>8} {:>10} {:>10} {:>7}",
        "chain", "wfc", "instances", "infeasible", "optimal", "mean gap", "max gap", "failed"
    );
    let mut totals = vec![(0usize, 0usize, 0usize, 0.0f64, 0.0f64, 0usize); configs.len()];
    for (i, &(layers, states)) in SIZES.iter().enumerate() {
        let problems = support::sample(&support::chains(layers..=layers, states..=states), SEED + i as u64, PER_SIZE);
        let optima: Vec<Option<f32>> = problems
            .iter()
            .map(|p| match exact::solve::<_, L, 1>(p) {
                Ok((s, _)) => Some(s.cost),
                Err(SolveError::Infeasible { .. }) => None,
                Err(e) => panic!("exact DP: {e}"),
            })
            .collect();
        let infeasible = optima.iter().filter(|o| o.is_none()).count();
        for (c, (name, cfg)) in configs.iter().enumerate() {
            let (mut optimal, mut failed, mut sum, mut max) = (0usize, 0usize, 0.0f64, 0.0f64);
            for (p, opt) in problems.iter().zip(&optima) {
                let w = wfc::solve::<_, L, 1>(p, cfg);
                match (opt, w) {
                    (Some(e), Ok((w, _))) => {
                        let gap = (w.cost as f64 - *e as f64) / (e.abs() as f64).max(1.0);
                        if support::close(w.cost, *e, 1e-5) {
                            optimal += 1;
                        }
                        sum += gap.max(0.0);
                        max = max.max(gap);
                    }
                    (Some(_), Err(_)) => failed += 1,
                    (None, Err(SolveError::Infeasible { .. })) => {}
                    (None, other) => panic!("WFC on an infeasible instance: {other:?}"),
                }
            }
            let feasible = PER_SIZE - infeasible;
            let solved = feasible - failed;
            row(&format!("{layers}x{states}"), name, PER_SIZE, infeasible, optimal, solved, sum, max, failed);
            let t = &mut totals[c];
            *t = (t.0 + PER_SIZE, t.1 + infeasible, t.2 + optimal, t.3 + sum, t.4.max(max), t.5 + failed);
        }
    }
    for ((name, _), t) in configs.iter().zip(&totals) {
        let solved = t.0 - t.1 - t.5;
        row("all", name, t.0, t.1, t.2, solved, t.3, t.4, t.5);
    }
}

#[allow(clippy::too_many_arguments)]
fn row(
    chain: &str,
    wfc: &str,
    n: usize,
    infeasible: usize,
    optimal: usize,
    solved: usize,
    sum: f64,
    max: f64,
    failed: usize,
) {
    let feasible = (n - infeasible).max(1) as f64;
    println!(
        "{:<8} {:<17} {:>9} {:>9.1}% {:>7.1}% {:>9.4}% {:>9.3}% {:>6.1}%",
        chain,
        wfc,
        n,
        100.0 * infeasible as f64 / n as f64,
        100.0 * optimal as f64 / feasible,
        100.0 * sum / solved.max(1) as f64,
        100.0 * max,
        100.0 * failed as f64 / feasible,
    );
}
