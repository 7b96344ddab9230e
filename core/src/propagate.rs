//! Arc-consistent propagation of the adjacency constraint along a chain.
//!
//! A state survives only if each neighbouring layer still has a state it
//! may follow (or precede). On a chain, one forward and one backward sweep
//! make every edge arc-consistent; after a change at one layer, sweeps
//! outwards from it restore consistency, stopping where nothing changes.

use crate::domain::Domain;
use crate::problem::Problem;

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

/// States of layer `edge + 1` (in `to`) with a compatible predecessor in
/// `from` (a domain of layer `edge`).
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

/// States of layer `edge` (in `from`) with a compatible successor in `to`
/// (a domain of layer `edge + 1`).
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

/// Revises layer `target` against its neighbour `source` (adjacent).
/// Returns whether `target` changed; `Err(target)` if it became empty.
fn revise<P: Problem<W>, const W: usize>(
    p: &P,
    domains: &mut [Domain<W>],
    source: usize,
    target: usize,
    stats: &mut Revisions,
) -> Result<bool, usize> {
    let (Some(&src), Some(&dst)) = (domains.get(source), domains.get(target)) else {
        return Ok(false);
    };
    stats.revisions += 1;
    let edge = source.min(target);
    if p.edge_is_free(edge) {
        return Ok(false);
    }
    let new = if target > source {
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

/// Makes every edge of the chain arc-consistent. `Err(layer)` names a
/// layer whose domain became (or was) empty.
pub fn arc_consistency<P: Problem<W>, const W: usize>(p: &P, domains: &mut [Domain<W>]) -> Result<Revisions, usize> {
    let mut stats = Revisions::default();
    if let Some(i) = domains.iter().position(|d| d.is_empty()) {
        return Err(i);
    }
    let n = domains.len();
    for i in 1..n {
        revise(p, domains, i - 1, i, &mut stats)?;
    }
    for i in (1..n).rev() {
        revise(p, domains, i, i - 1, &mut stats)?;
    }
    Ok(stats)
}

/// Propagates a change of layer `changed` outwards. `Err(layer)` names a
/// layer whose domain became empty.
pub fn propagate_from<P: Problem<W>, const W: usize>(
    p: &P,
    domains: &mut [Domain<W>],
    changed: usize,
    mode: Propagation,
    stats: &mut Revisions,
) -> Result<(), usize> {
    let n = domains.len();
    // Rightwards.
    let mut i = changed;
    while i + 1 < n {
        let changed_next = revise(p, domains, i, i + 1, stats)?;
        if !changed_next || mode == Propagation::Neighbours {
            break;
        }
        i += 1;
    }
    // Leftwards.
    let mut i = changed;
    while i > 0 {
        let changed_prev = revise(p, domains, i, i - 1, stats)?;
        if !changed_prev || mode == Propagation::Neighbours {
            break;
        }
        i -= 1;
    }
    Ok(())
}
