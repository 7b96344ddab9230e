//! The Wave-Function-Collapse solver.
//!
//! Every layer starts "in superposition" over its domain. Each step
//! observes the layer of lowest entropy, collapses it to its best state
//! given its neighbours (the layers it shares an edge with: on a chain the
//! layers before and after it, on a DAG its inputs and consumers), and
//! propagates the adjacency constraint along every edge; a
//! contradiction (an emptied domain) undoes the last choice and tries the
//! next state there, within a bounded number of backtracks.
//!
//! Entropy is the Rényi entropy of order 2 of cost-derived weights
//! `w = 1 / (1 + (c - c_min) / scale)`: layers compare by the effective
//! number of choices `(Σw)² / Σw²`, kept incrementally as states leave a
//! domain, so observing costs no logarithm. Ties go to the lower layer
//! index, and a collapse picks the lowest score, then the lower state
//! index: the solver is a deterministic function of its input.
//!
//! Backtracking keeps one frame per decision (layer, state, states already
//! tried) and, on a contradiction, replays the surviving decisions from the
//! root domains: memory stays `O(L * W)`, which suits a device runtime.

use crate::domain::Domain;
use crate::problem::{evaluate, incident, Problem};
use crate::propagate::{self, Propagation, Revisions};
use crate::solution::{precheck, Solution, SolveError};
use crate::state::StateIndex;

/// Settings of the WFC solver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WfcConfig {
    /// Most backtracks before giving up.
    pub max_backtracks: u32,
    /// How far each collapse is propagated.
    pub propagation: Propagation,
    /// Whether a collapse also weighs the best continuation into each
    /// uncollapsed neighbour (one step of lookahead), not only the
    /// transitions to collapsed ones.
    pub lookahead: bool,
}

impl Default for WfcConfig {
    fn default() -> Self {
        WfcConfig { max_backtracks: 64, propagation: Propagation::Full, lookahead: true }
    }
}

/// What a WFC solve did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct WfcStats {
    /// Layers collapsed (replays not counted).
    pub collapses: u32,
    /// Edge revisions made by propagation.
    pub propagations: u32,
    /// States removed by propagation.
    pub removed: u32,
    /// Contradictions undone.
    pub backtracks: u32,
}

#[derive(Clone, Copy)]
struct Frame<const W: usize> {
    layer: usize,
    state: StateIndex,
    tried: Domain<W>,
}

struct Search<'p, P, const L: usize, const W: usize> {
    p: &'p P,
    n: usize,
    /// Whether the problem is a chain (its neighbours are the layers
    /// before and after).
    chain: bool,
    config: WfcConfig,
    root: [Domain<W>; L],
    domains: [Domain<W>; L],
    collapsed: [bool; L],
    // Entropy bookkeeping: per layer, the weight parameters and the sums.
    c_min: [f32; L],
    scale: [f32; L],
    sum_w: [f32; L],
    sum_w2: [f32; L],
    frames: heapless::Vec<Frame<W>, L>,
    stats: WfcStats,
    revisions: Revisions,
}

/// Solves `p` with WFC.
pub fn solve<P: Problem<W>, const L: usize, const W: usize>(
    p: &P,
    config: &WfcConfig,
) -> Result<(Solution<L>, WfcStats), SolveError> {
    let n = precheck::<P, L, W>(p)?;
    let mut s = Search::<P, L, W> {
        p,
        n,
        chain: p.is_chain(),
        config: *config,
        root: [Domain::EMPTY; L],
        domains: [Domain::EMPTY; L],
        collapsed: [false; L],
        c_min: [0.0; L],
        scale: [1.0; L],
        sum_w: [0.0; L],
        sum_w2: [0.0; L],
        frames: heapless::Vec::new(),
        stats: WfcStats::default(),
        revisions: Revisions::default(),
    };
    s.init()?;
    s.run()?;
    let mut states: heapless::Vec<StateIndex, L> = heapless::Vec::new();
    for i in 0..n {
        let d = s.domains.get(i).copied().unwrap_or(Domain::EMPTY);
        let st = d.first_state().ok_or(SolveError::Infeasible { layer: i })?;
        states.push(st).map_err(|_| SolveError::TooManyLayers { capacity: L })?;
    }
    let cost = evaluate(p, &states).ok_or(SolveError::Infeasible { layer: 0 })?;
    if !cost.is_finite() {
        return Err(SolveError::NonFiniteCost { layer: n - 1 });
    }
    let mut stats = s.stats;
    stats.propagations = s.revisions.revisions;
    stats.removed = s.revisions.removed;
    Ok((Solution { states, cost }, stats))
}

impl<P: Problem<W>, const L: usize, const W: usize> Search<'_, P, L, W> {
    fn init(&mut self) -> Result<(), SolveError> {
        for i in 0..self.n {
            let d = self.p.domain(i);
            if let Some(slot) = self.root.get_mut(i) {
                *slot = d;
            }
            let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
            for st in &d {
                let c = self.p.unary(i, st);
                lo = lo.min(c);
                hi = hi.max(c);
            }
            let scale = libm::fabsf(lo).max((hi - lo) * 0.1).max(1.0e-30);
            set(&mut self.c_min, i, lo);
            set(&mut self.scale, i, scale);
        }
        let n = self.n;
        let root = self.root.get_mut(..n).unwrap_or(&mut []);
        let r = propagate::arc_consistency(self.p, root).map_err(|layer| SolveError::Infeasible { layer })?;
        self.revisions.revisions += r.revisions;
        self.revisions.removed += r.removed;
        self.reset_to_root();
        Ok(())
    }

    fn weight(&self, layer: usize, s: StateIndex) -> f32 {
        let c = self.p.unary(layer, s);
        let lo = self.c_min.get(layer).copied().unwrap_or(0.0);
        let scale = self.scale.get(layer).copied().unwrap_or(1.0);
        1.0 / (1.0 + (c - lo) / scale)
    }

    fn reset_to_root(&mut self) {
        self.domains = self.root;
        self.collapsed = [false; L];
        for i in 0..self.n {
            self.recount(i);
        }
    }

    fn recount(&mut self, layer: usize) {
        let d = self.domains.get(layer).copied().unwrap_or(Domain::EMPTY);
        let (mut sw, mut sw2) = (0.0f32, 0.0f32);
        for s in &d {
            let w = self.weight(layer, s);
            sw += w;
            sw2 += w * w;
        }
        set(&mut self.sum_w, layer, sw);
        set(&mut self.sum_w2, layer, sw2);
    }

    /// Lowers the entropy sums of `layer` by the states in `gone`.
    fn forget(&mut self, layer: usize, gone: &Domain<W>) {
        let (mut sw, mut sw2) = (0.0f32, 0.0f32);
        for s in gone {
            let w = self.weight(layer, s);
            sw += w;
            sw2 += w * w;
        }
        if let (Some(a), Some(b)) = (self.sum_w.get_mut(layer), self.sum_w2.get_mut(layer)) {
            *a -= sw;
            *b -= sw2;
        }
    }

    /// The uncollapsed layer with the fewest effective choices.
    fn observe(&self) -> Option<usize> {
        let mut best: Option<(usize, f32)> = None;
        for i in 0..self.n {
            if self.collapsed.get(i).copied().unwrap_or(true) {
                continue;
            }
            let len = self.domains.get(i).map_or(0, |d| d.len());
            let effective = if len <= 1 {
                // Decided already: take it before anything else.
                0.0
            } else {
                let sw = self.sum_w.get(i).copied().unwrap_or(0.0);
                let sw2 = self.sum_w2.get(i).copied().unwrap_or(1.0).max(f32::MIN_POSITIVE);
                sw * sw / sw2
            };
            if best.is_none_or(|(_, e)| effective < e) {
                best = Some((i, effective));
            }
        }
        best.map(|(i, _)| i)
    }

    /// The best state of `candidates` at `layer`, given its neighbours
    /// (every layer that shares an edge with it; their terms are added in
    /// edge order).
    fn choose(&self, layer: usize, candidates: &Domain<W>) -> Option<StateIndex> {
        if self.chain {
            return self.choose_on_chain(layer, candidates);
        }
        let mut scores = [[0.0f32; 64]; W];
        for s in candidates {
            set_score(&mut scores, s, self.p.unary(layer, s));
        }
        for (edge, ends) in incident(self.p, layer) {
            let s_is_to = ends.to == layer;
            let nb = if s_is_to { ends.from } else { ends.to };
            let list = self.shortlist(nb);
            for s in candidates {
                let term = self.neighbour_score(nb, edge, s, s_is_to, list.as_ref());
                let total = score(&scores, s) + term;
                set_score(&mut scores, s, total);
            }
        }
        let mut best: Option<(StateIndex, f32)> = None;
        for s in candidates {
            let score = score(&scores, s);
            if best.is_none_or(|(_, b)| score < b) {
                best = Some((s, score));
            }
        }
        best.map(|(s, _)| s)
    }

    /// [`Search::choose`] on a chain: the same sums, the neighbours being
    /// the layers before and after, without a table of scores.
    fn choose_on_chain(&self, layer: usize, candidates: &Domain<W>) -> Option<StateIndex> {
        let mut best: Option<(StateIndex, f32)> = None;
        let left = if layer > 0 { self.shortlist(layer - 1) } else { None };
        let right = if layer + 1 < self.n { self.shortlist(layer + 1) } else { None };
        for s in candidates {
            let mut score = self.p.unary(layer, s);
            if layer > 0 {
                score += self.neighbour_score(layer - 1, layer - 1, s, true, left.as_ref());
            }
            if layer + 1 < self.n {
                score += self.neighbour_score(layer + 1, layer, s, false, right.as_ref());
            }
            if best.is_none_or(|(_, b)| score < b) {
                best = Some((s, score));
            }
        }
        best.map(|(s, _)| s)
    }

    /// The cheapest states of an uncollapsed neighbour, when transitions
    /// are never negative (so a continuation costs at least its unary cost
    /// and a scan in ascending unary cost can stop early).
    fn shortlist(&self, layer: usize) -> Option<Shortlist> {
        if !self.config.lookahead
            || !self.p.transitions_nonnegative()
            || self.collapsed.get(layer).copied().unwrap_or(true)
        {
            return None;
        }
        let d = self.domains.get(layer).copied().unwrap_or(Domain::EMPTY);
        let mut list = Shortlist::EMPTY;
        for t in &d {
            list.offer(t, self.p.unary(layer, t));
        }
        Some(list)
    }

    /// Cost into neighbour `nb` across `edge` for state `s` of the layer
    /// being collapsed (`s` is the edge's consumer when `s_is_to`):
    /// the transition to a collapsed neighbour, or the cheapest
    /// continuation (transition plus unary cost) into an uncollapsed one.
    /// `shortlist` holds the neighbour's cheapest states, if known.
    fn neighbour_score(
        &self,
        nb: usize,
        edge: usize,
        s: StateIndex,
        s_is_to: bool,
        shortlist: Option<&Shortlist>,
    ) -> f32 {
        let collapsed = self.collapsed.get(nb).copied().unwrap_or(false);
        if (!collapsed && !self.config.lookahead) || self.p.edge_is_free(edge) {
            // A free edge costs nothing and forbids nothing: the term would
            // be the same for every candidate.
            return 0.0;
        }
        let pair = |t: StateIndex| if s_is_to { (t, s) } else { (s, t) };
        if let Some(list) = shortlist {
            // Ascending unary cost: once a state's unary cost alone reaches
            // the best continuation, no later state can beat it.
            let mut min = f32::INFINITY;
            for &(t, u) in list.entries() {
                if u >= min {
                    break;
                }
                let (a, b) = pair(t);
                if let Some(c) = self.p.step(edge, a, b) {
                    min = min.min(c + u);
                }
            }
            if min.is_finite() && min <= list.rest {
                return min;
            }
        }
        let d = self.domains.get(nb).copied().unwrap_or(Domain::EMPTY);
        let mut min = f32::INFINITY;
        for t in &d {
            let (a, b) = pair(t);
            let Some(mut c) = self.p.step(edge, a, b) else {
                continue;
            };
            if !collapsed {
                c += self.p.unary(nb, t);
            }
            min = min.min(c);
        }
        if collapsed || min.is_finite() {
            min
        } else {
            0.0
        }
    }

    /// Collapses `layer` to `s` and propagates; `Err` on a contradiction.
    fn assign(&mut self, layer: usize, s: StateIndex) -> Result<(), usize> {
        let before: [Domain<W>; L] = self.domains;
        if let Some(d) = self.domains.get_mut(layer) {
            *d = Domain::single(s);
        }
        set(&mut self.collapsed, layer, true);
        let n = self.n;
        let doms = self.domains.get_mut(..n).unwrap_or(&mut []);
        let result = propagate::propagate_from(self.p, doms, layer, self.config.propagation, &mut self.revisions);
        for i in 0..n {
            let (Some(old), Some(new)) = (before.get(i), self.domains.get(i)) else {
                continue;
            };
            if old != new {
                let gone = old.difference(new);
                self.forget(i, &gone);
            }
        }
        result
    }

    fn run(&mut self) -> Result<(), SolveError> {
        while let Some(layer) = self.observe() {
            let d = self.domains.get(layer).copied().unwrap_or(Domain::EMPTY);
            let s = self.choose(layer, &d).ok_or(SolveError::Infeasible { layer })?;
            self.stats.collapses += 1;
            self.frames
                .push(Frame { layer, state: s, tried: Domain::EMPTY })
                .map_err(|_| SolveError::TooManyLayers { capacity: L })?;
            if self.assign(layer, s).is_err() {
                self.backtrack()?;
            }
        }
        Ok(())
    }

    /// Undoes decisions until one can take another state without an
    /// immediate contradiction.
    fn backtrack(&mut self) -> Result<(), SolveError> {
        loop {
            let Some(mut frame) = self.frames.pop() else {
                return Err(SolveError::Infeasible { layer: 0 });
            };
            if self.stats.backtracks >= self.config.max_backtracks {
                return Err(SolveError::BacktrackLimit { limit: self.config.max_backtracks });
            }
            self.stats.backtracks += 1;
            frame.tried.insert(frame.state);
            self.replay()?;
            let left = self.domains.get(frame.layer).copied().unwrap_or(Domain::EMPTY).difference(&frame.tried);
            let Some(s) = self.choose(frame.layer, &left) else {
                continue;
            };
            frame.state = s;
            self.stats.collapses += 1;
            self.frames.push(frame).map_err(|_| SolveError::TooManyLayers { capacity: L })?;
            if self.assign(frame.layer, s).is_ok() {
                return Ok(());
            }
        }
    }

    /// Restores the domains implied by the decisions on the stack.
    fn replay(&mut self) -> Result<(), SolveError> {
        self.reset_to_root();
        let frames = self.frames.clone();
        for f in &frames {
            self.assign(f.layer, f.state).map_err(|layer| SolveError::Infeasible { layer })?;
        }
        Ok(())
    }
}

/// States kept by a [`Shortlist`].
const SHORTLIST: usize = 8;

/// The `SHORTLIST` cheapest states of a layer in ascending unary cost (ties
/// in state order), and the lowest unary cost of the states left out.
struct Shortlist {
    entries: [(StateIndex, f32); SHORTLIST],
    len: usize,
    rest: f32,
}

impl Shortlist {
    const EMPTY: Shortlist = Shortlist { entries: [(0, f32::INFINITY); SHORTLIST], len: 0, rest: f32::INFINITY };

    /// Offers state `t` of unary cost `u` (states come in ascending index).
    fn offer(&mut self, t: StateIndex, u: f32) {
        let at = self.entries().iter().position(|&(_, v)| u < v).unwrap_or(self.len);
        if at >= SHORTLIST {
            self.rest = self.rest.min(u);
            return;
        }
        if self.len == SHORTLIST {
            if let Some(&(_, dropped)) = self.entries.last() {
                self.rest = self.rest.min(dropped);
            }
        } else {
            self.len += 1;
        }
        // Shift the tail one place right, `(t, u)` taking slot `at`.
        let mut carry = (t, u);
        for slot in self.entries.iter_mut().take(self.len).skip(at) {
            core::mem::swap(slot, &mut carry);
        }
    }

    fn entries(&self) -> &[(StateIndex, f32)] {
        self.entries.get(..self.len).unwrap_or(&[])
    }
}

fn score<const W: usize>(t: &[[f32; 64]; W], s: StateIndex) -> f32 {
    let i = s as usize;
    t.get(i / 64).and_then(|w| w.get(i % 64)).copied().unwrap_or(f32::INFINITY)
}

fn set_score<const W: usize>(t: &mut [[f32; 64]; W], s: StateIndex, v: f32) {
    let i = s as usize;
    if let Some(slot) = t.get_mut(i / 64).and_then(|w| w.get_mut(i % 64)) {
        *slot = v;
    }
}

fn set<T: Copy, const L: usize>(a: &mut [T; L], i: usize, v: T) {
    if let Some(slot) = a.get_mut(i) {
        *slot = v;
    }
}
