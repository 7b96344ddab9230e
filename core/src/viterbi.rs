//! Viterbi dynamic programming over a chain, the exact solver's chain
//! path (`exact`) and the DAG solver's (`exact_dag`).
//!
//! `best[i][b]` is the cheapest cost of layers `0..=i` ending in state `b`;
//! each layer relaxes every compatible pair once, so the work is
//! `sum |D_i| * |D_{i+1}|` and the answer is optimal. Ties go to the lower
//! state index at every layer, so the result is deterministic.

use crate::domain::Domain;
use crate::problem::Problem;
use crate::propagate;
use crate::solution::{precheck, Solution, SolveError};
use crate::state::StateIndex;

/// Viterbi on a chain: the optimum, and the pairs of states relaxed.
pub(crate) fn solve<P: Problem<W>, const L: usize, const W: usize>(p: &P) -> Result<(Solution<L>, u32), SolveError> {
    let n = precheck::<P, L, W>(p)?;
    let mut relaxations: u32 = 0;
    // back[i][b]: the best predecessor of state b at layer i.
    let mut back = [[[0 as StateIndex; 64]; W]; L];
    let mut best = [[f32::INFINITY; 64]; W];
    let first = p.domain(0);
    for s in &first {
        set(&mut best, s, p.unary(0, s));
    }
    let mut prev_domain = first;
    for i in 1..n {
        let domain = p.domain(i);
        let edge = i - 1;
        let mut next = [[f32::INFINITY; 64]; W];
        let back_i = back.get_mut(i).ok_or(SolveError::TooManyLayers { capacity: L })?;
        if p.edge_is_free(edge) {
            // Every pair allowed at no cost: the best predecessor is shared.
            let (arg, min) = argmin(&best, &prev_domain);
            for b in &domain {
                relaxations = relaxations.saturating_add(1);
                set(&mut next, b, min + p.unary(i, b));
                set_back(back_i, b, arg);
            }
        } else {
            for b in &domain {
                let mut min = f32::INFINITY;
                let mut arg = 0;
                for a in &prev_domain {
                    relaxations = relaxations.saturating_add(1);
                    let Some(t) = p.step(edge, a, b) else {
                        continue;
                    };
                    let c = get(&best, a) + t;
                    if c < min {
                        min = c;
                        arg = a;
                    }
                }
                set(&mut next, b, min + p.unary(i, b));
                set_back(back_i, b, arg);
            }
        }
        best = next;
        prev_domain = domain;
    }
    let (mut s, cost) = argmin(&best, &prev_domain);
    if !cost.is_finite() {
        // No finite total: either no schedule at all, or every schedule's
        // total is non-finite (a NaN or infinite transition, or overflow).
        return Err(if reachable(p, n) {
            SolveError::NonFiniteCost { layer: n - 1 }
        } else {
            SolveError::Infeasible { layer: n - 1 }
        });
    }
    let mut states: heapless::Vec<StateIndex, L> = heapless::Vec::new();
    for _ in 0..n {
        states.push(0).map_err(|_| SolveError::TooManyLayers { capacity: L })?;
    }
    for i in (0..n).rev() {
        if let Some(slot) = states.get_mut(i) {
            *slot = s;
        }
        if i > 0 {
            s = back.get(i).map(|b| get_back(b, s)).unwrap_or(0);
        }
    }
    Ok((Solution { states, cost }, relaxations))
}

/// Whether some assignment satisfies the adjacency rule, costs aside.
fn reachable<P: Problem<W>, const W: usize>(p: &P, n: usize) -> bool {
    let mut reached = p.domain(0);
    for i in 1..n {
        let domain = p.domain(i);
        reached = if p.edge_is_free(i - 1) {
            if reached.is_empty() {
                Domain::EMPTY
            } else {
                domain
            }
        } else {
            propagate::supported_successors(p, i - 1, &reached, &domain)
        };
    }
    !reached.is_empty()
}

fn get<const W: usize>(t: &[[f32; 64]; W], s: StateIndex) -> f32 {
    let i = s as usize;
    t.get(i / 64).and_then(|w| w.get(i % 64)).copied().unwrap_or(f32::INFINITY)
}

fn set<const W: usize>(t: &mut [[f32; 64]; W], s: StateIndex, v: f32) {
    let i = s as usize;
    if let Some(slot) = t.get_mut(i / 64).and_then(|w| w.get_mut(i % 64)) {
        *slot = v;
    }
}

fn get_back<const W: usize>(t: &[[StateIndex; 64]; W], s: StateIndex) -> StateIndex {
    let i = s as usize;
    t.get(i / 64).and_then(|w| w.get(i % 64)).copied().unwrap_or(0)
}

fn set_back<const W: usize>(t: &mut [[StateIndex; 64]; W], s: StateIndex, v: StateIndex) {
    let i = s as usize;
    if let Some(slot) = t.get_mut(i / 64).and_then(|w| w.get_mut(i % 64)) {
        *slot = v;
    }
}

/// The lowest-cost state of `domain` (lowest index on ties) and its cost.
fn argmin<const W: usize>(t: &[[f32; 64]; W], domain: &Domain<W>) -> (StateIndex, f32) {
    let mut arg = 0;
    let mut min = f32::INFINITY;
    for s in domain {
        let c = get(t, s);
        if c < min {
            min = c;
            arg = s;
        }
    }
    (arg, min)
}
