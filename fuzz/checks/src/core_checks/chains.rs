//! Random chains handed straight to the solvers: every solver's answer
//! feasible, the exact ones agreeing with the exhaustive oracle.

use super::{Bytes, SplitMix, CHAIN_WORDS, LAYERS, ORACLE_LIMIT};
use hwwfc_core::problem::evaluate;
use hwwfc_core::propagate::Propagation;
use hwwfc_core::wfc::WfcConfig;
use hwwfc_core::{exact, exhaustive, wfc, Domain, Problem};
use hwwfc_core::{Solution, SolveError, StateIndex};
use std::cell::Cell;
use std::fmt::Debug;

/// A chain problem given by tables, drawn from fuzz bytes. Queries outside
/// the chain are recorded (and answered as impossible) rather than
/// panicking, so that the check can tell a solver that asks them.
#[derive(Debug)]
pub struct Chain {
    /// States in each layer's table.
    pub sizes: Vec<usize>,
    /// Each layer's domain before search.
    pub allowed: Vec<Vec<bool>>,
    /// Unary costs.
    pub unary: Vec<Vec<f32>>,
    /// Per edge, `transition[e][a * sizes[e + 1] + b]`.
    pub transition: Vec<Vec<f32>>,
    /// Per edge, the same indexing.
    pub compatible: Vec<Vec<bool>>,
    /// Per edge, what `edge_is_free` answers.
    pub free: Vec<bool>,
    /// What `transitions_nonnegative` answers.
    pub claims_nonnegative: bool,
    /// Whether the answers above are true (an honest problem), which the
    /// solvers may rely on.
    pub honest: bool,
    /// Whether every cost is a multiple of 1/2 of magnitude at most 64, so
    /// that every total is exact in `f32` whatever the summation order.
    pub tame: bool,
    /// Set when a solver asks about a layer, edge or state that does not exist.
    pub strayed: Cell<bool>,
}

/// A cost for a wild instance: anything an `f32` holds, weighted towards
/// the edges of the range.
fn wild_cost(rng: &mut SplitMix) -> f32 {
    let r = rng.next_u64();
    match r % 16 {
        0 => 0.0,
        1 => -0.0,
        2 => f32::INFINITY,
        3 => f32::NAN,
        4 => f32::MAX,
        5 => f32::MIN_POSITIVE / 2.0,
        6 => -(((r >> 8) % 1000) as f32),
        7 => f32::from_bits((r >> 16) as u32),
        8 => 1.0e30 * ((r >> 8) % 10) as f32,
        _ => ((r >> 8) % 100_000) as f32 / 7.0,
    }
}

/// A cost for a tame instance: a multiple of 1/2 in [-64, 64] (negative
/// only where `negative`).
fn tame_cost(rng: &mut SplitMix, negative: bool, zero_share: u8) -> f32 {
    if rng.chance(zero_share) {
        return 0.0;
    }
    let r = rng.next_u64();
    let v = (r % 129) as f32 / 2.0;
    if negative && r & (1 << 40) != 0 {
        -v
    } else {
        v
    }
}

impl Chain {
    /// The chain `data` describes: a header (layers, mode), then per layer a
    /// size, a domain density and a seed, per edge a rule, a density, a cost
    /// mode and a seed.
    pub fn from_bytes(data: &[u8]) -> Chain {
        let mut r = Bytes::new(data);
        let n = r.below(LAYERS + 4);
        let flags = r.u8();
        let tame = flags & 1 == 0;
        let honest = flags & 2 == 0;
        let negative = flags & 4 != 0;
        let mut sizes = Vec::new();
        let mut allowed = Vec::new();
        let mut unary = Vec::new();
        for _ in 0..n {
            // Mostly small layers; now and then one past a domain word.
            let size = if r.u8() < 224 { 1 + r.below(20) } else { 1 + r.below(Domain::<CHAIN_WORDS>::CAPACITY) };
            let density = r.u8();
            let zeros = r.u8();
            let mut rng = SplitMix(r.u64());
            let a: Vec<bool> = (0..size).map(|_| density == 255 || !rng.chance(density)).collect();
            let u: Vec<f32> = (0..size)
                .map(|_| if tame { tame_cost(&mut rng, negative, zeros) } else { wild_cost(&mut rng) })
                .collect();
            sizes.push(size);
            allowed.push(a);
            unary.push(u);
        }
        let mut transition = Vec::new();
        let mut compatible = Vec::new();
        let mut free = Vec::new();
        for e in 0..n.saturating_sub(1) {
            let (na, nb) = (sizes[e], sizes[e + 1]);
            let rule = r.u8();
            let density = r.u8();
            let zeros = r.u8();
            let mut rng = SplitMix(r.u64());
            let pairs = na * nb;
            let (t, c, f): (Vec<f32>, Vec<bool>, bool) = match rule % 5 {
                // Free: every pair, at no cost.
                0 => (vec![0.0; pairs], vec![true; pairs], honest || rule & 0x80 == 0),
                // Every pair, at a cost.
                1 => (
                    Self::costs(&mut rng, pairs, tame, negative, zeros),
                    vec![true; pairs],
                    !honest && rule & 0x80 != 0,
                ),
                // A band around the diagonal.
                2 => {
                    let width = (density % 4) as usize;
                    let c = (0..pairs).map(|x| ((x / nb) * nb / na.max(1)).abs_diff(x % nb) <= width).collect();
                    (Self::costs(&mut rng, pairs, tame, negative, zeros), c, false)
                }
                // Nothing follows anything.
                3 => (vec![0.0; pairs], vec![false; pairs], !honest && rule & 0x80 != 0),
                // Each pair with a probability.
                _ => {
                    let c = (0..pairs).map(|_| !rng.chance(density)).collect();
                    (Self::costs(&mut rng, pairs, tame, negative, zeros), c, false)
                }
            };
            transition.push(t);
            compatible.push(c);
            free.push(f);
        }
        let nonnegative = transition.iter().flatten().all(|&t| t >= 0.0);
        let claims_nonnegative = if honest { nonnegative && flags & 8 != 0 } else { flags & 8 != 0 };
        // A dishonest chain may still happen to tell the truth.
        let honest = honest || {
            let free_ok = free
                .iter()
                .zip(transition.iter().zip(&compatible))
                .all(|(&f, (t, c))| !f || (t.iter().all(|&x| x == 0.0) && c.iter().all(|&x| x)));
            free_ok && (!claims_nonnegative || nonnegative)
        };
        Chain {
            sizes,
            allowed,
            unary,
            transition,
            compatible,
            free,
            claims_nonnegative,
            honest,
            tame,
            strayed: Cell::new(false),
        }
    }

    fn costs(rng: &mut SplitMix, pairs: usize, tame: bool, negative: bool, zeros: u8) -> Vec<f32> {
        (0..pairs).map(|_| if tame { tame_cost(rng, negative, zeros) } else { wild_cost(rng) }).collect()
    }

    fn stray<T>(&self, value: T) -> T {
        self.strayed.set(true);
        value
    }

    fn pair(&self, edge: usize, from: StateIndex, to: StateIndex) -> Option<usize> {
        let (a, b) = (from as usize, to as usize);
        match (self.sizes.get(edge), self.sizes.get(edge + 1)) {
            (Some(&na), Some(&nb)) if a < na && b < nb => Some(a * nb + b),
            _ => None,
        }
    }

    /// Whether some layer has no state.
    pub fn has_empty_domain(&self) -> bool {
        self.allowed.iter().any(|a| !a.iter().any(|&x| x))
    }

    /// Number of assignments of allowed states.
    pub fn combinations(&self) -> u128 {
        self.allowed.iter().fold(1u128, |acc, a| acc.saturating_mul(a.iter().filter(|&&x| x).count() as u128))
    }
}

impl<const W: usize> Problem<W> for Chain {
    fn layer_count(&self) -> usize {
        self.sizes.len()
    }

    fn domain(&self, layer: usize) -> Domain<W> {
        let Some(allowed) = self.allowed.get(layer) else {
            return self.stray(Domain::EMPTY);
        };
        let mut d = Domain::EMPTY;
        for (s, _) in allowed.iter().enumerate().filter(|(_, &a)| a) {
            assert!(d.insert(s as StateIndex), "chain of {} states in a domain of {}", s + 1, Domain::<W>::CAPACITY);
        }
        d
    }

    fn unary(&self, layer: usize, state: StateIndex) -> f32 {
        match self.unary.get(layer).and_then(|u| u.get(state as usize)) {
            Some(&c) => c,
            None => self.stray(f32::INFINITY),
        }
    }

    fn transition(&self, edge: usize, from: StateIndex, to: StateIndex) -> f32 {
        match self.pair(edge, from, to).and_then(|i| self.transition.get(edge)?.get(i)) {
            Some(&t) => t,
            None => self.stray(f32::INFINITY),
        }
    }

    fn compatible(&self, edge: usize, from: StateIndex, to: StateIndex) -> bool {
        match self.pair(edge, from, to).and_then(|i| self.compatible.get(edge)?.get(i)) {
            Some(&c) => c,
            None => self.stray(false),
        }
    }

    fn transitions_nonnegative(&self) -> bool {
        self.claims_nonnegative
    }

    fn edge_is_free(&self, edge: usize) -> bool {
        match self.free.get(edge) {
            Some(&f) => f,
            None => self.stray(false),
        }
    }
}

/// The WFC settings `data`'s last byte picks: default, no lookahead, or
/// forward checking with a small backtracking budget.
pub(super) fn wfc_configs(extra: u8) -> [WfcConfig; 3] {
    let budget = (extra % 48) as u32;
    [
        WfcConfig::default(),
        WfcConfig { lookahead: false, ..WfcConfig::default() },
        WfcConfig { max_backtracks: budget, propagation: Propagation::Neighbours, lookahead: extra & 0x80 == 0 },
    ]
}

/// The first layer that the solvers' precheck refuses, and why.
fn precheck_error(p: &Chain) -> Option<SolveError> {
    if p.sizes.is_empty() {
        return Some(SolveError::Empty);
    }
    if p.sizes.len() > LAYERS {
        return Some(SolveError::TooManyLayers { capacity: LAYERS });
    }
    for (layer, (allowed, unary)) in p.allowed.iter().zip(&p.unary).enumerate() {
        if !allowed.iter().any(|&a| a) {
            return Some(SolveError::Infeasible { layer });
        }
        if allowed.iter().zip(unary).any(|(&a, c)| a && !c.is_finite()) {
            return Some(SolveError::NonFiniteCost { layer });
        }
    }
    None
}

/// A solver's answer on `p` must be feasible, with a finite cost; where
/// `exact_cost`, the cost is the evaluation of its states.
pub(super) fn assert_feasible<P: Problem<W>, const W: usize>(
    p: &P,
    s: &Solution<LAYERS>,
    what: &str,
    exact_cost: bool,
) {
    assert_eq!(s.states.len(), p.layer_count(), "{what}: one state per layer");
    assert!(s.cost.is_finite(), "{what}: non-finite cost {}", s.cost);
    let eval = evaluate::<_, W>(p, &s.states);
    assert!(eval.is_some(), "{what}: infeasible states {:?}", s.states);
    if exact_cost {
        assert_eq!(eval.map(f32::to_bits), Some(s.cost.to_bits()), "{what}: cost is not the evaluation");
    }
}

/// Solves a random chain with WFC (three settings), exact DP and, when
/// small, the exhaustive oracle: no panic, no overflow, no question about a
/// layer or state that does not exist, and on an honest chain answers that
/// agree: the same refusal before search, exact DP optimal (equal to the
/// oracle), WFC feasible and never below it, feasible exactly when exact DP
/// is (a backtracking budget aside), deterministic.
pub fn solvers(data: &[u8]) {
    let p = Chain::from_bytes(data);
    let extra = data.last().copied().unwrap_or(0);
    let e = exact::solve::<_, LAYERS, CHAIN_WORDS>(&p).map(|(s, _)| s);
    let oracle = (p.combinations() <= ORACLE_LIMIT as u128)
        .then(|| exhaustive::solve::<_, LAYERS, CHAIN_WORDS>(&p, ORACLE_LIMIT));
    let runs: Vec<_> = wfc_configs(extra).iter().map(|c| (*c, wfc::solve::<_, LAYERS, CHAIN_WORDS>(&p, c))).collect();
    assert!(!p.strayed.get(), "a solver asked about a layer, edge or state outside the chain");

    // Deterministic, honest or not.
    assert_eq!(exact::solve::<_, LAYERS, CHAIN_WORDS>(&p).map(|(s, _)| s), e);
    for (cfg, w) in &runs {
        assert_eq!(&wfc::solve::<_, LAYERS, CHAIN_WORDS>(&p, cfg), w, "{cfg:?}");
    }

    if let Some(refusal) = precheck_error(&p) {
        assert_eq!(e, Err(refusal));
        for (cfg, w) in &runs {
            assert_eq!(w.as_ref().map(|_| ()), Err(&refusal), "{cfg:?}");
        }
        if let Some(o) = &oracle {
            assert_eq!(o.as_ref().map(|_| ()), Err(&refusal));
        }
        return;
    }
    // WFC reports the evaluation of its states, whatever the problem says.
    for (cfg, w) in &runs {
        if let Ok((w, _)) = w {
            assert_feasible::<_, CHAIN_WORDS>(&p, w, &format!("wfc {cfg:?}"), true);
        }
    }
    if !p.honest {
        // A problem that misstates its free edges may mislead the solvers,
        // but never into a panic.
        return;
    }
    if let Ok(e) = &e {
        assert_feasible::<_, CHAIN_WORDS>(&p, e, "exact", p.tame);
    }
    match (&e, &oracle) {
        (Ok(e), Some(Ok(o))) => {
            assert_feasible::<_, CHAIN_WORDS>(&p, o, "exhaustive", true);
            if p.tame {
                assert_eq!(e.cost, o.cost, "exact DP is not optimal: {:?} against {:?}", e.states, o.states);
            }
        }
        (Err(SolveError::Infeasible { .. }), Some(Err(SolveError::Infeasible { .. }))) => {}
        (Err(SolveError::NonFiniteCost { .. }), Some(Err(SolveError::NonFiniteCost { .. }))) if !p.tame => {}
        (_, None) => {}
        (e, Some(o)) if !p.tame => {
            // Overflowing totals: the two may round differently at the edge
            // of the range, but never find a schedule the other calls
            // infeasible.
            let infeasible = |r: &Result<Solution<LAYERS>, SolveError>| matches!(r, Err(SolveError::Infeasible { .. }));
            assert_eq!(infeasible(e), infeasible(o), "exact {e:?} exhaustive {o:?}");
        }
        (e, Some(o)) => panic!("exact {e:?} exhaustive {o:?}"),
    }
    for (cfg, w) in &runs {
        let full = cfg.propagation == Propagation::Full;
        match (&e, w) {
            (Ok(e), Ok((w, stats))) => {
                if p.tame {
                    assert!(w.cost >= e.cost, "{cfg:?}: wfc {} below the optimum {}", w.cost, e.cost);
                }
                if full {
                    assert_eq!(stats.backtracks, 0, "{cfg:?}: full propagation undid a choice");
                }
            }
            (Ok(_), Err(SolveError::BacktrackLimit { limit })) if !full => assert_eq!(*limit, cfg.max_backtracks),
            (Ok(_), Err(SolveError::NonFiniteCost { .. })) if !p.tame => {}
            (Err(SolveError::Infeasible { .. }), Err(SolveError::Infeasible { layer })) => {
                assert!(*layer < p.sizes.len());
            }
            (
                Err(SolveError::NonFiniteCost { .. }),
                Err(SolveError::NonFiniteCost { .. } | SolveError::BacktrackLimit { .. }),
            ) if !p.tame => {}
            (Err(SolveError::NonFiniteCost { .. }), Ok(_)) if !p.tame => {}
            (e, w) => panic!("{cfg:?}: exact {e:?} wfc {w:?}"),
        }
    }
}
