//! The problem the solvers see, behind one small trait.
//!
//! A solver knows nothing of tiles or GPUs: it reads domains, unary costs,
//! transition costs and the adjacency rule through [`Problem`]. That keeps
//! the search strategy apart from the search space and the cost model, and
//! lets the tests hand the solvers random problems. The problem built from
//! a graph, a spec and the cost model is [`crate::built::ScheduleProblem`].
//!
//! The layers and edges form a DAG: edge `e` joins [`Edge::from`] to
//! [`Edge::to`], producer first, layers in topological order. By default
//! (and in every problem that does not say otherwise) the DAG is a chain:
//! edge `e` joins layer `e` to layer `e + 1`. Solvers find the edges of a
//! layer with [`incident`], which needs no allocation.

use crate::domain::Domain;
pub use crate::graph::Edge;
use crate::state::StateIndex;

/// Layers with candidate domains, unary and transition costs and an
/// adjacency rule on the edges of a DAG (a chain unless [`Problem::edge`]
/// says otherwise). In the costs and the rule, `from` is a state of the
/// edge's producer ([`Edge::from`]) and `to` one of its consumer
/// ([`Edge::to`]).
pub trait Problem<const W: usize> {
    /// Number of layers.
    fn layer_count(&self) -> usize;
    /// The states layer `layer` may take before search.
    fn domain(&self, layer: usize) -> Domain<W>;
    /// Cost of `state` at `layer`.
    fn unary(&self, layer: usize, state: StateIndex) -> f32;
    /// Number of edges; by default a chain's, `layer_count - 1`.
    fn edge_count(&self) -> usize {
        self.layer_count().saturating_sub(1)
    }
    /// The layers edge `edge` joins (`from < to`, both below
    /// `layer_count`), or `None` past the last edge. By default a chain's:
    /// edge `e` joins layer `e` to layer `e + 1`.
    fn edge(&self, edge: usize) -> Option<Edge> {
        (edge < self.edge_count()).then_some(Edge { from: edge, to: edge + 1 })
    }
    /// Whether the edges are exactly a chain's (edge `e` joins layer `e`
    /// to `e + 1`, and there are `layer_count - 1` of them). The solvers
    /// take their chain paths then. The default checks every edge; a
    /// problem that knows the answer may say it at once, but must agree
    /// with [`Problem::edge`].
    fn is_chain(&self) -> bool {
        chain_edges(self)
    }
    /// Cost of `from` at the edge's producer followed by `to` at its
    /// consumer.
    fn transition(&self, edge: usize, from: StateIndex, to: StateIndex) -> f32;
    /// Whether `to` at the edge's consumer may follow `from` at its
    /// producer.
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

/// Whether the edges of `p` are exactly a chain's, checked edge by edge
/// (what [`Problem::is_chain`] answers by default).
pub fn chain_edges<P: Problem<W> + ?Sized, const W: usize>(p: &P) -> bool {
    let count = p.edge_count();
    count == p.layer_count().saturating_sub(1) && (0..count).all(|e| p.edge(e) == Some(Edge { from: e, to: e + 1 }))
}

/// The edges of `p` that touch `layer`, as `(edge index, edge)` in edge
/// order: on a chain the edge from the layer before, then the one to the
/// layer after; otherwise every edge is looked at once.
pub fn incident<P: Problem<W> + ?Sized, const W: usize>(p: &P, layer: usize) -> Incident<'_, P, W> {
    let count = p.edge_count();
    let (next, end) = if p.is_chain() { (layer.saturating_sub(1), count.min(layer + 1)) } else { (0, count) };
    Incident { p, layer, next, end }
}

/// Iterator over the edges of a layer (see [`incident`]).
pub struct Incident<'p, P: ?Sized, const W: usize> {
    p: &'p P,
    layer: usize,
    next: usize,
    end: usize,
}

impl<P: Problem<W> + ?Sized, const W: usize> Iterator for Incident<'_, P, W> {
    type Item = (usize, Edge);

    fn next(&mut self) -> Option<(usize, Edge)> {
        while self.next < self.end {
            let e = self.next;
            self.next += 1;
            if let Some(edge) = self.p.edge(e) {
                if edge.from == self.layer || edge.to == self.layer {
                    return Some((e, edge));
                }
            }
        }
        None
    }
}

/// Total cost of an assignment (one state per layer), or `None` if it
/// leaves a domain or breaks the adjacency rule on some edge. Layer by
/// layer, its unary cost is added and then the transitions of the edges
/// into it, in edge order (on a chain: unary 0, unary 1, edge 0, unary 2,
/// edge 1, ...).
pub fn evaluate<P: Problem<W>, const W: usize>(p: &P, states: &[StateIndex]) -> Option<f32> {
    if states.len() != p.layer_count() {
        return None;
    }
    let chain = p.is_chain();
    let count = p.edge_count();
    let mut total = 0.0f32;
    for (i, &s) in states.iter().enumerate() {
        if !p.domain(i).contains(s) {
            return None;
        }
        total += p.unary(i, s);
        // On a chain the one edge into layer i is edge i - 1.
        let range = if chain { i.saturating_sub(1)..i.min(count) } else { 0..count };
        for e in range {
            let edge = p.edge(e)?;
            if edge.to != i {
                continue;
            }
            let prev = *states.get(edge.from)?;
            if !p.compatible(e, prev, s) {
                return None;
            }
            total += p.transition(e, prev, s);
        }
    }
    Some(total)
}
