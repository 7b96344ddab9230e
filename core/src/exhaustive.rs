//! The oracle: plain enumeration of every combination of states.
//!
//! Exponential, with no pruning on purpose: it shares no logic with the
//! other solvers, so the tests can hold them to it on small instances.

use crate::problem::{evaluate, Problem};
use crate::solution::{precheck, Solution, SolveError};
use crate::state::StateIndex;

/// The optimal schedule found by enumerating every combination, refusing
/// problems with more than `limit` combinations. Ties go to the
/// lexicographically first combination.
/// Combinations whose total is not finite are skipped; if every feasible
/// one is such, the error is [`SolveError::NonFiniteCost`].
pub fn solve<P: Problem<W>, const L: usize, const W: usize>(p: &P, limit: u64) -> Result<Solution<L>, SolveError> {
    let n = precheck::<P, L, W>(p)?;
    let mut total: u64 = 1;
    for i in 0..n {
        total = total.saturating_mul(p.domain(i).len() as u64);
    }
    if total > limit {
        return Err(SolveError::TooManyCombinations { limit });
    }
    let mut current: heapless::Vec<StateIndex, L> = heapless::Vec::new();
    for i in 0..n {
        let first = p.domain(i).first_state().ok_or(SolveError::Infeasible { layer: i })?;
        current.push(first).map_err(|_| SolveError::TooManyLayers { capacity: L })?;
    }
    let mut best: Option<Solution<L>> = None;
    // Whether some assignment is feasible but has a non-finite total.
    let mut non_finite = false;
    loop {
        if let Some(cost) = evaluate(p, &current) {
            if !cost.is_finite() {
                non_finite = true;
            } else if best.as_ref().is_none_or(|b| cost < b.cost) {
                best = Some(Solution { states: current.clone(), cost });
            }
        }
        // Advance the odometer, last layer fastest.
        let mut i = n;
        loop {
            if i == 0 {
                return best.ok_or(if non_finite {
                    SolveError::NonFiniteCost { layer: n - 1 }
                } else {
                    SolveError::Infeasible { layer: 0 }
                });
            }
            i -= 1;
            let d = p.domain(i);
            let Some(slot) = current.get_mut(i) else {
                return Err(SolveError::Empty);
            };
            if let Some(next) = d.iter().find(|&s| s > *slot) {
                *slot = next;
                break;
            }
            *slot = d.first_state().unwrap_or(0);
        }
    }
}
