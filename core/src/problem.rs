//! The problem the solvers see, behind one small trait.
//!
//! A solver knows nothing of tiles or GPUs: it reads domains, unary costs,
//! transition costs and the adjacency rule through [`Problem`]. That keeps
//! the search strategy apart from the search space and the cost model, and
//! lets the tests hand the solvers random problems. The problem built from
//! a graph, a spec and the cost model is [`crate::built::ScheduleProblem`].

use crate::domain::Domain;
use crate::state::StateIndex;

/// A chain of layers with candidate domains, unary and transition costs
/// and an adjacency rule. Edge `e` joins layer `e` to layer `e + 1`.
pub trait Problem<const W: usize> {
    /// Number of layers.
    fn layer_count(&self) -> usize;
    /// The states layer `layer` may take before search.
    fn domain(&self, layer: usize) -> Domain<W>;
    /// Cost of `state` at `layer`.
    fn unary(&self, layer: usize, state: StateIndex) -> f32;
    /// Cost of `from` at layer `edge` followed by `to` at layer `edge + 1`.
    fn transition(&self, edge: usize, from: StateIndex, to: StateIndex) -> f32;
    /// Whether `to` at layer `edge + 1` may follow `from` at layer `edge`.
    fn compatible(&self, edge: usize, from: StateIndex, to: StateIndex) -> bool;
    /// The transition cost of a compatible pair, or `None` if `to` may not
    /// follow `from`: both answers at once, for the solvers' inner loops.
    fn step(&self, edge: usize, from: StateIndex, to: StateIndex) -> Option<f32> {
        if self.compatible(edge, from, to) {
            Some(self.transition(edge, from, to))
        } else {
            None
        }
    }
    /// True if no transition cost is negative, which lets WFC's lookahead
    /// stop at a neighbour's cheapest state when it follows for free.
    fn transitions_nonnegative(&self) -> bool {
        false
    }
    /// True if every pair across `edge` is compatible and costs nothing, so
    /// that solvers may skip the pairwise work there.
    fn edge_is_free(&self, _edge: usize) -> bool {
        false
    }
}

/// Total cost of an assignment (one state per layer), or `None` if it
/// leaves a domain or breaks the adjacency rule.
pub fn evaluate<P: Problem<W>, const W: usize>(p: &P, states: &[StateIndex]) -> Option<f32> {
    if states.len() != p.layer_count() {
        return None;
    }
    let mut total = 0.0f32;
    for (i, &s) in states.iter().enumerate() {
        if !p.domain(i).contains(s) {
            return None;
        }
        total += p.unary(i, s);
        if i > 0 {
            let prev = *states.get(i - 1)?;
            if !p.compatible(i - 1, prev, s) {
                return None;
            }
            total += p.transition(i - 1, prev, s);
        }
    }
    Some(total)
}
