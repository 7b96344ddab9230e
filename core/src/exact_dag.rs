//! The exact solver for any DAG: min-sum message passing on a forest,
//! conditioned on a loop cutset.
//!
//! On a chain this is [`crate::exact::solve`] (Viterbi), the
//! same answer and the same states. A DAG whose undirected interaction
//! graph has cycles (a residual connection, parallel branches that join
//! again) is no chain and no tree, and Viterbi's sweep does not apply.
//! There:
//!
//! 1. The domains are made arc-consistent ([`crate::propagate`]): that
//!    removes no state of any feasible assignment, and often decides
//!    infeasibility at once.
//! 2. A loop cutset is chosen greedily: edges are joined in edge order with
//!    a union-find over the layers not yet cut, and the first edge that
//!    closes a cycle puts one of its ends (the one with more edges left,
//!    the later one on ties) into the cutset; this repeats until the edges
//!    left form a forest. Free edges ([`Problem::edge_is_free`]) cost
//!    nothing and forbid nothing, so they are left out from the start.
//! 3. Every assignment of the cutset's layers is enumerated (odometer
//!    order, the lowest cut layer slowest), unless there are more of them
//!    than the caller's budget, which is the typed error
//!    [`SolveError::TooManyCombinations`] before any work. With the cut
//!    layers fixed, their edges become unary terms of their neighbours
//!    (or constants, between two cut layers), and each tree of the forest
//!    is solved exactly by min-sum dynamic programming: leaves first, each
//!    layer sends its parent, for every parent state, the cheapest cost of
//!    its subtree (the work is `|D_child| * |D_parent|` per tree edge),
//!    and the root takes its cheapest state.
//! 4. The cheapest assignment over all cutset assignments is the optimum.
//!    If there is none with a finite total, the same search with every
//!    cost taken as zero tells an infeasible problem
//!    ([`SolveError::Infeasible`]) from one whose feasible totals are all
//!    non-finite ([`SolveError::NonFiniteCost`]).
//!
//! The work is the number of cutset assignments times the forest's
//! pairwise work: exponential in the cutset only. A residual block has a
//! cutset of one layer per skip edge, so the budget bounds the work.
//!
//! Ties are deterministic: the first cutset assignment in enumeration order
//! with the lowest total wins; within it, each tree's root takes its
//! lowest-index cheapest state and every other layer its lowest-index
//! cheapest state given its parent's.
//!
//! Memory is `O(L * W)` on the stack: a cost table and a back-pointer table
//! per layer. Edges whose layers are not below `layer_count` are ignored.

use crate::domain::Domain;
use crate::problem::{incident, Edge, Problem};
use crate::propagate;
use crate::solution::{precheck, Solution, SolveError};
use crate::state::StateIndex;
use crate::viterbi;

/// The default budget of cutset assignments, which [`crate::exact::solve`] uses
/// when its problem is not a chain.
pub const DEFAULT_BUDGET: u64 = 1 << 16;

/// Statistics of an exact DAG solve.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DagStats {
    /// Layers in the loop cutset (0 on a chain or a tree).
    pub cutset_layers: u32,
    /// Assignments of the cutset enumerated (1 without a cutset).
    pub assignments: u64,
    /// Pairs of states relaxed, over every assignment.
    pub relaxations: u64,
}

/// The optimal schedule of a DAG of at most `L` layers, enumerating at
/// most `budget` assignments of a loop cutset (see the module's page). On
/// a chain, Viterbi's answer.
pub fn solve<P: Problem<W>, const L: usize, const W: usize>(
    p: &P,
    budget: u64,
) -> Result<(Solution<L>, DagStats), SolveError> {
    if p.is_chain() {
        let (s, relaxations) = viterbi::solve::<P, L, W>(p)?;
        let stats = DagStats { cutset_layers: 0, assignments: 1, relaxations: relaxations as u64 };
        return Ok((s, stats));
    }
    solve_general::<P, L, W>(p, budget)
}

/// The search on a graph that is not a chain (kept out of line, so that
/// the chain path's stack does not hold its tables).
#[inline(never)]
pub(crate) fn solve_general<P: Problem<W>, const L: usize, const W: usize>(
    p: &P,
    budget: u64,
) -> Result<(Solution<L>, DagStats), SolveError> {
    let n = precheck::<P, L, W>(p)?;
    let mut domains = [Domain::<W>::EMPTY; L];
    for (i, d) in domains.iter_mut().enumerate().take(n) {
        *d = p.domain(i);
    }
    let view = domains.get_mut(..n).unwrap_or(&mut []);
    propagate::arc_consistency(p, view).map_err(|layer| SolveError::Infeasible { layer })?;
    let mut s = Search::<P, L, W> {
        p,
        n,
        domains,
        cut: [false; L],
        parent: [usize::MAX; L],
        parent_edge: [0; L],
        order: [0; L],
        placed: 0,
        stats: DagStats::default(),
    };
    s.choose_cutset();
    let mut total: u64 = 1;
    for i in 0..n {
        if s.cut.get(i).copied().unwrap_or(false) {
            s.stats.cutset_layers += 1;
            total = total.saturating_mul(s.domains.get(i).map_or(0, |d| d.len()) as u64);
        }
    }
    if total > budget {
        return Err(SolveError::TooManyCombinations { limit: budget });
    }
    s.build_forest();
    if let Some((states, cost)) = s.enumerate(false) {
        let mut out: heapless::Vec<StateIndex, L> = heapless::Vec::new();
        for &st in states.iter().take(n) {
            out.push(st).map_err(|_| SolveError::TooManyLayers { capacity: L })?;
        }
        return Ok((Solution { states: out, cost }, s.stats));
    }
    // No finite total: is there any assignment at all?
    let feasible = s.enumerate(true).is_some();
    Err(if feasible { SolveError::NonFiniteCost { layer: n - 1 } } else { SolveError::Infeasible { layer: n - 1 } })
}

/// A cost per state of one layer.
type Table<const W: usize> = [[f32; 64]; W];
/// A state per state of one layer.
type Back<const W: usize> = [[StateIndex; 64]; W];

struct Search<'p, P, const L: usize, const W: usize> {
    p: &'p P,
    n: usize,
    domains: [Domain<W>; L],
    /// Layers of the loop cutset.
    cut: [bool; L],
    /// Each forest layer's parent (`usize::MAX` at a root) and the edge to it.
    parent: [usize; L],
    parent_edge: [usize; L],
    /// The forest's layers, parents before children.
    order: [usize; L],
    placed: usize,
    stats: DagStats,
}

impl<P: Problem<W>, const L: usize, const W: usize> Search<'_, P, L, W> {
    /// The edge `e`, if it joins two layers of the problem and is not free.
    fn live_edge(&self, e: usize) -> Option<Edge> {
        let ends = self.p.edge(e)?;
        (ends.from < self.n && ends.to < self.n && ends.from != ends.to && !self.p.edge_is_free(e)).then_some(ends)
    }

    fn is_cut(&self, layer: usize) -> bool {
        self.cut.get(layer).copied().unwrap_or(true)
    }

    /// Edges of `layer` to layers outside the cutset.
    fn open_degree(&self, layer: usize) -> usize {
        (0..self.p.edge_count())
            .filter_map(|e| self.live_edge(e))
            .filter(|ends| {
                (ends.from == layer && !self.is_cut(ends.to)) || (ends.to == layer && !self.is_cut(ends.from))
            })
            .count()
    }

    /// Grows the cutset until the edges between uncut layers form a forest.
    fn choose_cutset(&mut self) {
        loop {
            let mut root = [0usize; L];
            for (i, r) in root.iter_mut().enumerate() {
                *r = i;
            }
            let mut closing = None;
            for e in 0..self.p.edge_count() {
                let Some(ends) = self.live_edge(e) else {
                    continue;
                };
                if self.is_cut(ends.from) || self.is_cut(ends.to) {
                    continue;
                }
                let (a, b) = (find(&mut root, ends.from), find(&mut root, ends.to));
                if a == b {
                    closing = Some(ends);
                    break;
                }
                if let Some(r) = root.get_mut(a.max(b)) {
                    *r = a.min(b);
                }
            }
            let Some(ends) = closing else {
                return;
            };
            let pick = if self.open_degree(ends.from) > self.open_degree(ends.to) { ends.from } else { ends.to };
            if let Some(c) = self.cut.get_mut(pick) {
                *c = true;
            }
        }
    }

    /// Roots each tree of the forest at its lowest layer and lists the
    /// layers breadth first.
    fn build_forest(&mut self) {
        let mut seen = [false; L];
        for r in 0..self.n {
            if self.is_cut(r) || seen.get(r).copied().unwrap_or(true) {
                continue;
            }
            set(&mut seen, r, true);
            self.place(r);
            let mut head = self.placed - 1;
            while head < self.placed {
                let u = self.order.get(head).copied().unwrap_or(0);
                head += 1;
                for (e, _) in incident(self.p, u) {
                    let Some(ends) = self.live_edge(e) else {
                        continue;
                    };
                    let v = if ends.from == u { ends.to } else { ends.from };
                    if self.is_cut(v) || seen.get(v).copied().unwrap_or(true) {
                        continue;
                    }
                    set(&mut seen, v, true);
                    set(&mut self.parent, v, u);
                    set(&mut self.parent_edge, v, e);
                    self.place(v);
                }
            }
        }
    }

    fn place(&mut self, layer: usize) {
        if let Some(slot) = self.order.get_mut(self.placed) {
            *slot = layer;
            self.placed += 1;
        }
    }

    fn unary(&self, zero: bool, layer: usize, s: StateIndex) -> f32 {
        if zero {
            0.0
        } else {
            self.p.unary(layer, s)
        }
    }

    /// The transition across `e` (joining `ends`) between `s` at `layer`
    /// and `t` at the other end; `None` if forbidden.
    fn step(&self, zero: bool, e: usize, ends: Edge, layer: usize, s: StateIndex, t: StateIndex) -> Option<f32> {
        let (a, b) = if ends.from == layer { (s, t) } else { (t, s) };
        let c = self.p.step(e, a, b)?;
        Some(if zero { 0.0 } else { c })
    }

    /// Enumerates the cutset's assignments; the cheapest finite assignment
    /// and its total, if any. With `zero`, every cost counts as nothing
    /// (a feasibility test).
    fn enumerate(&mut self, zero: bool) -> Option<([StateIndex; L], f32)> {
        let n = self.n;
        let mut fixed = [0 as StateIndex; L];
        for i in 0..n {
            if self.is_cut(i) {
                set(&mut fixed, i, self.domains.get(i)?.first_state()?);
            }
        }
        let mut best: Option<([StateIndex; L], f32)> = None;
        let mut table = [[[f32::INFINITY; 64]; W]; L];
        let mut back = [[[0 as StateIndex; 64]; W]; L];
        loop {
            self.stats.assignments += 1;
            if let Some(found) = self.conditioned(zero, &fixed, &mut table, &mut back) {
                if best.as_ref().is_none_or(|(_, c)| found.1 < *c) {
                    best = Some(found);
                }
            }
            // Advance the odometer, the last cut layer fastest.
            let mut i = n;
            loop {
                if i == 0 {
                    return best;
                }
                i -= 1;
                if !self.is_cut(i) {
                    continue;
                }
                let d = self.domains.get(i).copied().unwrap_or(Domain::EMPTY);
                let slot = fixed.get_mut(i)?;
                if let Some(next) = d.iter().find(|&s| s > *slot) {
                    *slot = next;
                    break;
                }
                *slot = d.first_state().unwrap_or(0);
            }
        }
    }

    /// The forest solved with the cut layers at `fixed`: the cheapest
    /// assignment and its total, if finite.
    fn conditioned(
        &mut self,
        zero: bool,
        fixed: &[StateIndex; L],
        table: &mut [Table<W>; L],
        back: &mut [Back<W>; L],
    ) -> Option<([StateIndex; L], f32)> {
        let n = self.n;
        let mut constant = 0.0f32;
        for i in 0..n {
            if self.is_cut(i) {
                constant += self.unary(zero, i, *fixed.get(i)?);
            }
        }
        // Unary terms; edges to cut layers fold into them.
        for &v in self.order.iter().take(self.placed) {
            let d = self.domains.get(v).copied()?;
            let t = table.get_mut(v)?;
            *t = [[f32::INFINITY; 64]; W];
            for s in &d {
                set_cost(t, s, self.unary(zero, v, s));
            }
        }
        for e in 0..self.p.edge_count() {
            let Some(ends) = self.live_edge(e) else {
                continue;
            };
            match (self.is_cut(ends.from), self.is_cut(ends.to)) {
                (true, true) => {
                    let (a, b) = (*fixed.get(ends.from)?, *fixed.get(ends.to)?);
                    constant += self.step(zero, e, ends, ends.from, a, b)?;
                }
                (false, false) => {}
                (from_cut, _) => {
                    let (v, c) = if from_cut { (ends.to, ends.from) } else { (ends.from, ends.to) };
                    let t_c = *fixed.get(c)?;
                    let d = self.domains.get(v).copied()?;
                    let t = table.get_mut(v)?;
                    for s in &d {
                        let add = self.step(zero, e, ends, v, s, t_c).unwrap_or(f32::INFINITY);
                        set_cost(t, s, cost(t, s) + add);
                    }
                }
            }
        }
        // Messages, leaves first.
        for k in (0..self.placed).rev() {
            let v = *self.order.get(k)?;
            let u = *self.parent.get(v)?;
            if u == usize::MAX {
                continue;
            }
            let e = *self.parent_edge.get(v)?;
            let ends = self.p.edge(e)?;
            let (du, dv) = (self.domains.get(u).copied()?, self.domains.get(v).copied()?);
            let tv = *table.get(v)?;
            let mut msg = [[f32::INFINITY; 64]; W];
            let bv = back.get_mut(v)?;
            for su in &du {
                let (mut min, mut arg) = (f32::INFINITY, 0);
                for sv in &dv {
                    self.stats.relaxations += 1;
                    let Some(t) = self.step(zero, e, ends, u, su, sv) else {
                        continue;
                    };
                    let c = cost(&tv, sv) + t;
                    if c < min {
                        min = c;
                        arg = sv;
                    }
                }
                set_cost(&mut msg, su, min);
                set_back(bv, su, arg);
            }
            let tu = table.get_mut(u)?;
            for su in &du {
                set_cost(tu, su, cost(tu, su) + cost(&msg, su));
            }
        }
        // Roots, then every other layer from its parent's state.
        let mut states = *fixed;
        let mut total = constant;
        for &v in self.order.iter().take(self.placed) {
            let u = *self.parent.get(v)?;
            let s = if u == usize::MAX {
                let d = self.domains.get(v).copied()?;
                let t = table.get(v)?;
                let (mut min, mut arg) = (f32::INFINITY, 0);
                for s in &d {
                    if cost(t, s) < min {
                        min = cost(t, s);
                        arg = s;
                    }
                }
                total += min;
                arg
            } else {
                get_back(back.get(v)?, *states.get(u)?)
            };
            set(&mut states, v, s);
        }
        total.is_finite().then_some((states, total))
    }
}

/// The representative of `x`'s set (with path halving).
fn find<const L: usize>(root: &mut [usize; L], mut x: usize) -> usize {
    loop {
        let Some(&up) = root.get(x) else {
            return x;
        };
        if up == x {
            return x;
        }
        let grand = root.get(up).copied().unwrap_or(up);
        if let Some(r) = root.get_mut(x) {
            *r = grand;
        }
        x = grand;
    }
}

fn set<T: Copy, const L: usize>(a: &mut [T; L], i: usize, v: T) {
    if let Some(slot) = a.get_mut(i) {
        *slot = v;
    }
}

fn cost<const W: usize>(t: &Table<W>, s: StateIndex) -> f32 {
    let i = s as usize;
    t.get(i / 64).and_then(|w| w.get(i % 64)).copied().unwrap_or(f32::INFINITY)
}

fn set_cost<const W: usize>(t: &mut Table<W>, s: StateIndex, v: f32) {
    let i = s as usize;
    if let Some(slot) = t.get_mut(i / 64).and_then(|w| w.get_mut(i % 64)) {
        *slot = v;
    }
}

fn get_back<const W: usize>(t: &Back<W>, s: StateIndex) -> StateIndex {
    let i = s as usize;
    t.get(i / 64).and_then(|w| w.get(i % 64)).copied().unwrap_or(0)
}

fn set_back<const W: usize>(t: &mut Back<W>, s: StateIndex, v: StateIndex) {
    let i = s as usize;
    if let Some(slot) = t.get_mut(i / 64).and_then(|w| w.get_mut(i % 64)) {
        *slot = v;
    }
}
