//! Arc-consistent propagation of the adjacency constraint.
//!
//! A state survives only if each neighbouring layer (every layer it shares
//! an edge with) still has a state it may follow (or precede).
//!
//! On a chain, one forward and one backward sweep make every edge
//! arc-consistent; after a change at one layer, sweeps outwards from it
//! restore consistency, stopping where nothing changes.
//!
//! On any other DAG, propagation is AC-3 over layers: a worklist (a
//! fixed-capacity bitset) holds the layers whose domains changed, and each
//! one taken from it (lowest index first) revises every neighbour across
//! every edge they share; a neighbour that loses a state joins the
//! worklist. At the fixpoint every state has a support on every edge. The
//! bitset tracks [`TRACKED_LAYERS`] layers; layers beyond it count as
//! always changed, which costs revisions but not correctness.

use crate::domain::Domain;
use crate::problem::{incident, Edge, Problem};

/// Layers the worklist of the DAG propagation tracks one by one.
pub const TRACKED_LAYERS: usize = 256;

/// How far a change is propagated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Propagation {
    /// Until every edge is arc-consistent again.
    Full,
    /// To the immediate neighbours only (forward checking): cheaper, but a
    /// contradiction may surface only later, and then needs backtracking.
    Neighbours,
}

/// What a propagation did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Revisions {
    /// Edge revisions performed.
    pub revisions: u32,
    /// States removed.
    pub removed: u32,
}

/// States of the consumer of `edge` (in `to`) with a compatible
/// predecessor in `from` (a domain of its producer).
pub fn supported_successors<P: Problem<W>, const W: usize>(
    p: &P,
    edge: usize,
    from: &Domain<W>,
    to: &Domain<W>,
) -> Domain<W> {
    let mut out = *to;
    for b in to {
        if !from.iter().any(|a| p.compatible(edge, a, b)) {
            out.remove(b);
        }
    }
    out
}

/// States of the producer of `edge` (in `from`) with a compatible
/// successor in `to` (a domain of its consumer).
pub fn supported_predecessors<P: Problem<W>, const W: usize>(
    p: &P,
    edge: usize,
    from: &Domain<W>,
    to: &Domain<W>,
) -> Domain<W> {
    let mut out = *from;
    for a in from {
        if !to.iter().any(|b| p.compatible(edge, a, b)) {
            out.remove(a);
        }
    }
    out
}

/// Revises layer `target` against its neighbour `source` on a chain.
/// Returns whether `target` changed; `Err(target)` if it became empty.
fn revise<P: Problem<W>, const W: usize>(
    p: &P,
    domains: &mut [Domain<W>],
    source: usize,
    target: usize,
    stats: &mut Revisions,
) -> Result<bool, usize> {
    let edge = source.min(target);
    revise_edge(p, domains, edge, Edge { from: edge, to: edge + 1 }, target, stats)
}

/// Revises layer `target`, one end of `edge` (which joins the layers of
/// `ends`), against the other end. Returns whether `target` changed;
/// `Err(target)` if it became empty.
fn revise_edge<P: Problem<W>, const W: usize>(
    p: &P,
    domains: &mut [Domain<W>],
    edge: usize,
    ends: Edge,
    target: usize,
    stats: &mut Revisions,
) -> Result<bool, usize> {
    let source = if target == ends.to { ends.from } else { ends.to };
    let (Some(&src), Some(&dst)) = (domains.get(source), domains.get(target)) else {
        return Ok(false);
    };
    stats.revisions += 1;
    if p.edge_is_free(edge) {
        return Ok(false);
    }
    let new = if target == ends.to {
        supported_successors(p, edge, &src, &dst)
    } else {
        supported_predecessors(p, edge, &dst, &src)
    };
    if new == dst {
        return Ok(false);
    }
    stats.removed += (dst.len() - new.len()) as u32;
    if let Some(d) = domains.get_mut(target) {
        *d = new;
    }
    if new.is_empty() {
        Err(target)
    } else {
        Ok(true)
    }
}

/// The layers whose changes are still to be propagated.
struct Worklist {
    bits: [u64; TRACKED_LAYERS / 64],
    /// Layers from here on are not tracked: always taken as changed.
    untracked: usize,
    /// Where the scan for the next untracked layer resumes.
    cursor: usize,
}

impl Worklist {
    /// An empty worklist over `n` layers.
    fn new(n: usize) -> Self {
        Worklist { bits: [0; TRACKED_LAYERS / 64], untracked: n, cursor: TRACKED_LAYERS.min(n) }
    }

    fn insert(&mut self, layer: usize) {
        if let Some(w) = self.bits.get_mut(layer / 64) {
            *w |= 1 << (layer % 64);
        } else {
            // Untracked: the scan past the bitset must see it again.
            self.cursor = self.cursor.min(layer);
        }
    }

    /// The lowest tracked layer in the list, else the next untracked one.
    fn pop(&mut self) -> Option<usize> {
        for (i, w) in self.bits.iter_mut().enumerate() {
            if *w != 0 {
                let bit = w.trailing_zeros() as usize;
                *w &= *w - 1;
                return Some(i * 64 + bit);
            }
        }
        if self.cursor < self.untracked {
            self.cursor += 1;
            return Some(self.cursor - 1);
        }
        None
    }
}

/// AC-3 from the layers in `work` until no domain changes.
fn fixpoint<P: Problem<W>, const W: usize>(
    p: &P,
    domains: &mut [Domain<W>],
    work: &mut Worklist,
    stats: &mut Revisions,
) -> Result<(), usize> {
    while let Some(layer) = work.pop() {
        for (e, ends) in incident(p, layer) {
            let target = if ends.from == layer { ends.to } else { ends.from };
            if revise_edge(p, domains, e, ends, target, stats)? {
                work.insert(target);
            }
        }
    }
    Ok(())
}

/// Makes every edge arc-consistent. `Err(layer)` names a layer whose
/// domain became (or was) empty.
pub fn arc_consistency<P: Problem<W>, const W: usize>(p: &P, domains: &mut [Domain<W>]) -> Result<Revisions, usize> {
    let mut stats = Revisions::default();
    if let Some(i) = domains.iter().position(|d| d.is_empty()) {
        return Err(i);
    }
    let n = domains.len();
    if !p.is_chain() {
        let mut work = Worklist::new(n);
        for i in 0..n {
            work.insert(i);
        }
        fixpoint(p, domains, &mut work, &mut stats)?;
        return Ok(stats);
    }
    for i in 1..n {
        revise(p, domains, i - 1, i, &mut stats)?;
    }
    for i in (1..n).rev() {
        revise(p, domains, i, i - 1, &mut stats)?;
    }
    Ok(stats)
}

/// Propagates a change of layer `changed` outwards: until every edge is
/// arc-consistent again ([`Propagation::Full`]), or only into the layers
/// that share an edge with it ([`Propagation::Neighbours`]). `Err(layer)`
/// names a layer whose domain became empty.
pub fn propagate_from<P: Problem<W>, const W: usize>(
    p: &P,
    domains: &mut [Domain<W>],
    changed: usize,
    mode: Propagation,
    stats: &mut Revisions,
) -> Result<(), usize> {
    let n = domains.len();
    if !p.is_chain() {
        if mode == Propagation::Neighbours {
            for (e, ends) in incident(p, changed) {
                let target = if ends.from == changed { ends.to } else { ends.from };
                revise_edge(p, domains, e, ends, target, stats)?;
            }
            return Ok(());
        }
        let mut work = Worklist::new(n);
        work.insert(changed);
        return fixpoint(p, domains, &mut work, stats);
    }
    if mode == Propagation::Neighbours {
        // The two neighbours in the order of their edges, as on a DAG: the
        // same revisions, and on a wipe-out the same first empty layer.
        if let Some(prev) = changed.checked_sub(1) {
            revise(p, domains, changed, prev, stats)?;
        }
        if changed + 1 < n {
            revise(p, domains, changed, changed + 1, stats)?;
        }
        return Ok(());
    }
    // Rightwards.
    let mut i = changed;
    while i + 1 < n {
        if !revise(p, domains, i, i + 1, stats)? {
            break;
        }
        i += 1;
    }
    // Leftwards.
    let mut i = changed;
    while i > 0 {
        if !revise(p, domains, i, i - 1, stats)? {
            break;
        }
        i -= 1;
    }
    Ok(())
}
