//! The checks of the core's fuzz targets. Each takes arbitrary bytes, runs
//! the core on what they describe, and panics (the fuzzer's signal) only
//! where the core breaks a promise: a panic or an arithmetic overflow of
//! its own (the targets and the regression tests build with overflow
//! checks), a schedule that breaks a constraint or misstates its cost, an
//! answer that differs between solvers where it may not, an error that
//! is not the typed one the inputs call for, or an encoding that does not
//! decode to itself.
//!
//! Shared by the fuzz targets (`fuzz/fuzz_targets/`) and by
//! `fuzz/checks/tests/regressions.rs`, which replays the committed corpus
//! and crash inputs on stable Rust.

use hwwfc_core::built::BuildError;
use hwwfc_core::cost::{Coefficients, COEFFICIENTS_VERSION, COEFFICIENT_COUNT};
use hwwfc_core::dtype::DType;
use hwwfc_core::layer::{Layer, Op};
use hwwfc_core::problem::evaluate;
use hwwfc_core::propagate::Propagation;
use hwwfc_core::schedule::Schedule;
use hwwfc_core::space::{self, SpaceKind};
use hwwfc_core::spec::{HardwareSpec, PeakCompute};
use hwwfc_core::wfc::WfcConfig;
use hwwfc_core::wire::{self, Message, WireError, WIRE_VERSION};
use hwwfc_core::{constraint, exact, exhaustive, presets, wfc, Domain, Graph, Problem, ScheduleProblem};
use hwwfc_core::{Solution, SolveError, StateIndex};
use std::cell::Cell;
use std::fmt::Debug;

/// Layer capacity of the solvers on fuzzed problems.
pub const LAYERS: usize = 16;
/// Domain words of the random chains (128 states a layer).
pub const CHAIN_WORDS: usize = 2;
/// Domain words of the built problems (the CUDA space has 480 states).
pub const BUILD_WORDS: usize = 8;
/// Most combinations handed to the exhaustive oracle.
pub const ORACLE_LIMIT: u64 = 20_000;

/// Reads fuzz bytes front to back; zeros once they run out, so every input
/// describes some instance.
pub struct Bytes<'a> {
    data: &'a [u8],
}

impl<'a> Bytes<'a> {
    /// A reader of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Bytes { data }
    }

    /// The next byte.
    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((b, rest)) => {
                self.data = rest;
                *b
            }
            None => 0,
        }
    }

    /// The next two bytes, little-endian.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    /// The next four bytes, little-endian.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    /// The next eight bytes, little-endian.
    pub fn u64(&mut self) -> u64 {
        (self.u32() as u64) | ((self.u32() as u64) << 32)
    }

    /// A number in `0..n` (`n` at least 1).
    pub fn below(&mut self, n: usize) -> usize {
        self.u8() as usize % n.max(1)
    }

    /// One bit.
    pub fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }
}

/// SplitMix64: fills the large tables of an instance from one seed.
pub struct SplitMix(u64);

impl SplitMix {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// True with probability `p / 256`.
    pub fn chance(&mut self, p: u8) -> bool {
        ((self.next_u64() & 0xff) as u8) < p
    }
}

// ---------------------------------------------------------------------
// Wire decoding.

/// Decodes `data` as every message type of the wire format (and again with
/// each kind's header put in front, so that the fuzzer need not find it):
/// a value that decodes must take at most its `MAX_ENCODED_LEN`, encode into
/// that many bytes, decode from its encoding to the same encoding, and
/// refuse a buffer one byte short with `BufferTooSmall`; bytes that do not
/// decode must say why with the error their header calls for.
pub fn wire_decode(data: &[u8]) {
    decode_all(data);
    for kind in 1..=4u8 {
        let mut framed = Vec::with_capacity(data.len() + 2);
        framed.extend_from_slice(&[WIRE_VERSION, kind]);
        framed.extend_from_slice(data);
        decode_all(&framed);
    }
    // Coefficients behind their whole header, the cost model's byte too.
    let mut framed = Vec::with_capacity(data.len() + 3);
    framed.extend_from_slice(&[WIRE_VERSION, wire::Kind::Coefficients as u8, COEFFICIENTS_VERSION]);
    framed.extend_from_slice(data);
    decode_all(&framed);
}

fn decode_all(bytes: &[u8]) {
    if let Some(s) = roundtrip::<HardwareSpec>(bytes) {
        // A decoded spec is validated before use; validation never panics.
        let _ = s.validate();
    }
    if let Some(g) = roundtrip::<Graph<64>>(bytes) {
        let _ = g.validate();
        for layer in g.layers() {
            // Shapes are not checked yet: their figures must not overflow.
            let _ = (layer.op.validate(), layer.op.output_bytes(), layer.op.flops());
            let _ = (hwwfc_core::cost::input_bytes(&layer.op), layer.op.output_dims());
        }
    }
    if let Some(g) = roundtrip::<Graph<8>>(bytes) {
        let _ = g.validate();
    }
    if let Some(k) = roundtrip::<Coefficients>(bytes) {
        let _ = k.validate();
    }
    if let Some(s) = roundtrip::<Schedule<64>>(bytes) {
        states_from_outside(&s);
    }
    roundtrip::<Schedule<8>>(bytes);
}

/// The constraints and the cost model on the states of a decoded schedule,
/// which need not come from any candidate table (a runtime may hand them
/// back, and records on the host carry such states): no overflow, no panic.
fn states_from_outside(s: &Schedule<64>) {
    let ops = [
        Op::MatMul { m: 4096, n: 4096, k: 4096, batch: 1, dtype: DType::F16 },
        Op::MatMul { m: 77, n: 197, k: 96, batch: 12, dtype: DType::Bf16 },
        Op::Softmax { rows: 3, cols: 77, dtype: DType::F32 },
    ];
    let specs = [presets::stress_gpu(), presets::toy_gpu(), base_spec(&mut Bytes::new(&[2]))];
    let k = Coefficients::default();
    for (i, c) in s.choices.iter().enumerate() {
        let prev = s.choices.get(i.wrapping_sub(1)).map_or(c.state, |p| p.state);
        for spec in &specs {
            for op in &ops {
                let _ = constraint::check(spec, op, &c.state);
                let _ = hwwfc_core::resource::usage(op, &c.state);
                let _ = hwwfc_core::resource::row_bytes(op, &c.state);
                let _ = hwwfc_core::cost::occupancy(spec, op, &c.state);
                let _ = hwwfc_core::cost::grid(spec, op, &c.state);
                let _ = hwwfc_core::cost::unary_cost(spec, &k, op, &c.state);
                let _ = hwwfc_core::cost::transition_cost(spec, &k, op.output_bytes(), (&prev, &c.state), true);
                let _ = (space::applicable(op, &c.state), space::index_of(spec.space, op.kind(), &c.state));
            }
        }
        let _ = constraint::compatible(&prev, &c.state);
    }
}

fn encode<T: Message>(value: &T) -> Result<Vec<u8>, WireError> {
    let mut buf = vec![0u8; T::MAX_ENCODED_LEN];
    wire::to_slice(value, &mut buf).map(|b| b.to_vec())
}

fn roundtrip<T: Message + Debug>(bytes: &[u8]) -> Option<T> {
    match wire::from_bytes::<T>(bytes) {
        Ok(value) => {
            assert!(bytes.len() <= T::MAX_ENCODED_LEN, "{} bytes decode, above MAX_ENCODED_LEN", bytes.len());
            let first = encode(&value).expect("a decoded value encodes within MAX_ENCODED_LEN");
            let again: T = wire::from_bytes(&first).expect("an encoding decodes");
            assert_eq!(encode(&again), Ok(first.clone()), "encoding is not stable: {value:?}");
            let mut short = vec![0u8; first.len() - 1];
            assert_eq!(wire::to_slice(&value, &mut short).map(|b| b.len()), Err(WireError::BufferTooSmall));
            Some(value)
        }
        Err(e) => {
            let expected = match (bytes, T::COST_MODEL_VERSION) {
                ([] | [_], _) => Some(WireError::Truncated),
                ([v, ..], _) if *v != WIRE_VERSION => Some(WireError::UnsupportedVersion { found: *v }),
                ([_, k, ..], _) if *k != T::KIND as u8 => Some(WireError::WrongKind { found: *k }),
                ([_, _, m, ..], Some(expected)) if *m != expected => {
                    Some(WireError::CostModelVersion { found: *m, expected })
                }
                _ => None,
            };
            match expected {
                Some(x) => assert_eq!(e, x, "{bytes:?}"),
                None => assert!(
                    matches!(e, WireError::UnexpectedEnd | WireError::Malformed | WireError::TrailingBytes),
                    "{e:?} for a body"
                ),
            }
            None
        }
    }
}

// ---------------------------------------------------------------------
// Random chains handed straight to the solvers.

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
fn wfc_configs(extra: u8) -> [WfcConfig; 3] {
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
fn assert_feasible<P: Problem<W>, const W: usize>(p: &P, s: &Solution<LAYERS>, what: &str, exact_cost: bool) {
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

// ---------------------------------------------------------------------
// Built problems: specs, models and coefficients as a runtime receives
// them (in the wire format), then build, solve and encode.

/// A number for a spec field: mostly plausible, now and then zero, one,
/// a power of two or anything a `u32` holds.
fn size(r: &mut Bytes, typical: u32) -> u32 {
    match r.u8() {
        0..=7 => 0,
        8..=15 => 1,
        16..=23 => u32::MAX,
        24..=31 => r.u32(),
        32..=47 => 1 << (r.u8() % 32),
        48..=79 => typical.saturating_mul(1 + r.below(8) as u32),
        80..=111 => (typical / (1 + r.below(64) as u32)).max(1),
        _ => typical,
    }
}

/// A rate for a spec field: mostly plausible, now and then zero, negative,
/// subnormal, huge or not a number.
fn rate(r: &mut Bytes, typical: f32) -> f32 {
    match r.u8() {
        0..=3 => 0.0,
        4..=7 => -typical,
        8..=11 => f32::NAN,
        12..=15 => f32::INFINITY,
        16..=19 => f32::MAX,
        20..=23 => f32::MIN_POSITIVE / 4.0,
        24..=31 => f32::from_bits(r.u32()),
        32..=63 => typical * (1 + r.below(1000)) as f32,
        64..=95 => typical / (1 + r.below(1000)) as f32,
        _ => typical,
    }
}

fn base_spec(r: &mut Bytes) -> HardwareSpec {
    match r.u8() % 3 {
        0 => presets::stress_gpu(),
        1 => presets::toy_gpu(),
        // An H200's figures, on the CUDA space.
        _ => HardwareSpec {
            name: heapless::String::try_from("h200").unwrap_or_default(),
            space: SpaceKind::Cuda,
            sram_per_block_bytes: 232_448,
            sram_per_sm_bytes: 233_472,
            alignment_bytes: 16,
            dram_bandwidth_gbps: 4800.0,
            peak_tflops: PeakCompute { f16: 989.0, bf16: 989.0, f32: 67.0 },
            sm_count: 132,
            l2_bytes: 50 * 1024 * 1024,
            launch_overhead_us: 3.0,
            max_threads_per_block: 1024,
            max_threads_per_sm: 2048,
            max_blocks_per_sm: 32,
            registers_per_sm: 65536,
        },
    }
}

/// A spec drawn from `r`: a preset with some fields replaced.
pub fn spec_from(r: &mut Bytes) -> HardwareSpec {
    let mut s = base_spec(r);
    // Each group of fields is replaced in about one spec of four.
    let edits = r.u8() & r.u8();
    if edits & 1 != 0 {
        s.space = if r.bool() { SpaceKind::Cuda } else { SpaceKind::Tiles };
    }
    if edits & 2 != 0 {
        s.sram_per_block_bytes = size(r, s.sram_per_block_bytes);
        s.sram_per_sm_bytes = size(r, s.sram_per_sm_bytes);
        s.alignment_bytes = size(r, s.alignment_bytes);
    }
    if edits & 4 != 0 {
        s.dram_bandwidth_gbps = rate(r, s.dram_bandwidth_gbps);
        s.peak_tflops.f16 = rate(r, s.peak_tflops.f16);
        s.peak_tflops.bf16 = rate(r, s.peak_tflops.bf16);
        s.peak_tflops.f32 = rate(r, s.peak_tflops.f32);
        s.launch_overhead_us = rate(r, s.launch_overhead_us);
    }
    if edits & 8 != 0 {
        s.sm_count = size(r, s.sm_count);
        s.l2_bytes = size(r, s.l2_bytes);
    }
    if edits & 16 != 0 {
        s.max_threads_per_block = size(r, s.max_threads_per_block);
        s.max_threads_per_sm = size(r, s.max_threads_per_sm);
        s.max_blocks_per_sm = size(r, s.max_blocks_per_sm);
        s.registers_per_sm = size(r, s.registers_per_sm);
    }
    if edits & 0x60 == 0x60 {
        s.name.clear();
    }
    s
}

/// A dimension of a layer: mostly a plausible size, now and then zero, one
/// or at the edge of `u32`.
fn dim(r: &mut Bytes) -> u32 {
    match r.u8() {
        0 => 0,
        1 => u32::MAX,
        2 => r.u32(),
        3 => 1 << (r.u8() % 32),
        4..=40 => 1,
        41..=100 => 1 + r.u8() as u32,
        101..=120 => 1 + r.u16() as u32 % 8192,
        121..=170 => (64 << r.below(7)) + r.below(3) as u32,
        _ => 64 << r.below(5),
    }
}

fn dtype(r: &mut Bytes) -> DType {
    [DType::F16, DType::Bf16, DType::F32][r.below(3)]
}

/// A graph as it travels in the wire format (the same bytes as a
/// [`Graph`]), but with no check: it may hold anything a sender can write.
#[derive(serde::Serialize)]
struct RawGraph {
    layers: Vec<RawLayer>,
}

#[derive(serde::Serialize)]
struct RawLayer {
    name: String,
    op: Op,
}

/// The layers drawn from `r`: up to `LAYERS + 2`, with names that are
/// sometimes repeated or too long and shapes that are sometimes invalid.
fn layers_from(r: &mut Bytes) -> Vec<RawLayer> {
    let n = r.below(LAYERS + 3);
    (0..n)
        .map(|i| {
            let name = match r.u8() {
                0..=3 => String::new(),
                4..=7 => "x".repeat(25),
                8..=15 => "layer".to_string(),
                _ => format!("l{i}"),
            };
            let op = if r.u8() % 4 == 0 {
                Op::Softmax { rows: dim(r), cols: dim(r), dtype: dtype(r) }
            } else {
                Op::MatMul {
                    m: dim(r),
                    n: dim(r),
                    k: dim(r),
                    batch: if r.u8() % 4 == 0 { dim(r) } else { 1 },
                    dtype: dtype(r),
                }
            };
            RawLayer { name, op }
        })
        .collect()
}

/// Coefficients drawn from `r`: the defaults, some scaled or replaced.
pub fn coefficients_from(r: &mut Bytes) -> Coefficients {
    let mut a = Coefficients::default().to_array();
    if r.u8() % 4 != 0 {
        return Coefficients::from_array(a);
    }
    for c in a.iter_mut().take(COEFFICIENT_COUNT) {
        *c = match r.u8() {
            0..=3 => 0.0,
            4..=7 => -*c,
            8..=11 => f32::NAN,
            12..=15 => f32::INFINITY,
            16..=23 => *c * 1.0e6,
            24..=31 => *c * 1.0e-6,
            32..=35 => f32::MAX,
            36..=39 => f32::MIN_POSITIVE,
            40..=71 => *c * (1 + r.below(16)) as f32,
            72..=103 => *c / (1 + r.below(16)) as f32,
            _ => *c,
        };
    }
    Coefficients::from_array(a)
}

fn frame<T: serde::Serialize>(kind: wire::Kind, value: &T) -> Vec<u8> {
    let mut buf = vec![0u8; 1 << 16];
    buf[0] = WIRE_VERSION;
    buf[1] = kind as u8;
    let mut header = wire::HEADER_LEN;
    if kind == wire::Kind::Coefficients {
        buf[header] = COEFFICIENTS_VERSION;
        header += 1;
    }
    let used = postcard::to_slice(value, &mut buf[header..]).expect("64 KiB hold any drawn message").len();
    buf.truncate(header + used);
    buf
}

/// Draws a spec, a model and coefficients from `data`, encodes them as a
/// device runtime receives them, then decodes, builds, solves and encodes
/// the schedule: decoding and building refuse exactly the invalid inputs,
/// with the error of the first problem; a built problem keeps only states
/// that pass every constraint, with finite costs, and accounts for every
/// state it removed; both solvers' schedules are feasible, exact DP's the
/// cheapest (the oracle's where small), and every schedule survives the
/// wire unchanged.
pub fn schedule_pipeline(data: &[u8]) {
    let mut r = Bytes::new(data);
    let spec = spec_from(&mut r);
    let layers = layers_from(&mut r);
    let k = coefficients_from(&mut r);
    let extra = r.u8();

    // The wire, as the C ABI and the firmware receive their inputs.
    let spec_bytes = frame(wire::Kind::Spec, &spec);
    let graph_bytes = frame(wire::Kind::Graph, &RawGraph { layers });
    let k_bytes = frame(wire::Kind::Coefficients, &k);
    let spec: HardwareSpec = wire::from_bytes(&spec_bytes).expect("a spec decodes from its own encoding");
    let k: Coefficients = wire::from_bytes(&k_bytes).expect("coefficients decode from their encoding");
    let graph = match wire::from_bytes::<Graph<LAYERS>>(&graph_bytes) {
        Ok(g) => g,
        Err(e) => {
            assert!(matches!(e, WireError::Malformed | WireError::UnexpectedEnd), "{e:?}");
            return;
        }
    };
    // The same layers, pushed one by one, are refused at the same layer.
    let mut pushed = Graph::<LAYERS>::new();
    let push_error = graph.layers().iter().find_map(|l: &Layer| pushed.push(&l.name, l.op).err());
    let built = ScheduleProblem::<LAYERS, BUILD_WORDS>::build(&graph, &spec, &k);
    let expected = match (spec.validate(), graph.validate(), k.validate()) {
        (Err(e), _, _) => Some(BuildError::Spec(e)),
        (Ok(()), Err(e), _) => {
            if let Some(p) = push_error {
                assert_eq!(p, e, "push and validate disagree");
            }
            Some(BuildError::Graph(e))
        }
        (Ok(()), Ok(()), Err(name)) => Some(BuildError::Coefficient(name)),
        _ => None,
    };
    if expected.is_none() {
        assert_eq!(push_error, None, "validate accepts a graph that push refuses");
    }
    let problem = match (built, expected) {
        (Err(e), Some(x)) => return assert_eq!(e, x),
        (Ok(_), Some(x)) => panic!("built despite {x:?}"),
        (Err(e), None) => return check_build_error(&graph, &spec, e),
        (Ok(p), None) => p,
    };
    check_problem(&graph, &spec, &problem);
    solve_built(&problem, extra);
}

fn check_build_error(graph: &Graph<LAYERS>, spec: &HardwareSpec, e: BuildError) {
    match e {
        BuildError::Infeasible { layer, constraint: c } if c != constraint::Constraint::Adjacency => {
            let op = graph.layer(layer).expect("the layer exists").op;
            let states = space::states(spec.space, op.kind());
            let left = states.iter().filter(|s| space::applicable(&op, s) && constraint::check(spec, &op, s).is_ok());
            assert_eq!(left.count(), 0, "layer {layer} called infeasible by {c:?} keeps states");
        }
        BuildError::Infeasible { layer, .. } | BuildError::NonFiniteCost { layer } => assert!(layer < graph.len()),
        other => panic!("unexpected build error {other:?} on valid inputs"),
    }
}

fn check_problem(graph: &Graph<LAYERS>, spec: &HardwareSpec, p: &ScheduleProblem<LAYERS, BUILD_WORDS>) {
    assert_eq!(p.layer_count(), graph.len());
    for (i, (plan, layer)) in p.layers().iter().zip(graph.layers()).enumerate() {
        assert_eq!(plan.op, layer.op);
        assert_eq!(
            plan.domain.difference(&plan.candidates),
            Domain::EMPTY,
            "layer {i}: a state outside the candidates"
        );
        assert!(!plan.domain.is_empty(), "layer {i}: built with an empty domain");
        for s in &plan.domain {
            let state = plan.state(s).expect("a domain state is in the table");
            assert!(space::applicable(&plan.op, state));
            assert_eq!(constraint::check(spec, &plan.op, state), Ok(()), "layer {i} keeps state {s}");
            assert!(plan.unary(s).is_finite(), "layer {i} state {s}: cost {}", plan.unary(s));
        }
        let removed: usize = plan.removed.iter().map(|&r| r as usize).sum();
        assert_eq!(removed, plan.candidates.len() - plan.domain.len(), "layer {i}: removals unaccounted");
    }
}

fn solve_built(p: &ScheduleProblem<LAYERS, BUILD_WORDS>, extra: u8) {
    let e = exact::solve::<_, LAYERS, BUILD_WORDS>(p).map(|(s, _)| s);
    let oracle = (p.combinations() <= ORACLE_LIMIT as u128)
        .then(|| exhaustive::solve::<_, LAYERS, BUILD_WORDS>(p, ORACLE_LIMIT));
    let rel = |a: f32, b: f32| (a - b).abs() <= 1.0e-4 * a.abs().max(b.abs()).max(1.0);
    match &e {
        Ok(e) => {
            assert_feasible::<_, BUILD_WORDS>(p, e, "exact", false);
            let eval = evaluate::<_, BUILD_WORDS>(p, &e.states).unwrap_or(f32::NAN);
            assert!(rel(eval, e.cost), "exact cost {} against its evaluation {eval}", e.cost);
            check_schedule(p, e);
        }
        // Built problems are arc-consistent and their costs finite, but a
        // total of huge finite costs may still overflow.
        Err(SolveError::NonFiniteCost { .. }) => {}
        Err(other) => panic!("exact DP on a built problem: {other:?}"),
    }
    if let (Ok(e), Some(Ok(o))) = (&e, &oracle) {
        assert!(rel(e.cost, o.cost), "exact {} against the oracle {}", e.cost, o.cost);
    }
    for cfg in wfc_configs(extra) {
        match (&e, wfc::solve::<_, LAYERS, BUILD_WORDS>(p, &cfg)) {
            (Ok(e), Ok((w, _))) => {
                assert_feasible::<_, BUILD_WORDS>(p, &w, "wfc", true);
                assert!(w.cost >= e.cost || rel(w.cost, e.cost), "{cfg:?}: wfc {} below exact {}", w.cost, e.cost);
                check_schedule(p, &w);
            }
            // A total at the edge of the range may overflow in one order
            // of summation and not in another.
            (Err(SolveError::NonFiniteCost { .. }), Ok((w, _))) => {
                assert_feasible::<_, BUILD_WORDS>(p, &w, "wfc", true)
            }
            (_, Err(SolveError::BacktrackLimit { .. })) if cfg.propagation == Propagation::Neighbours => {}
            (_, Err(SolveError::NonFiniteCost { .. })) => {}
            (e, w) => panic!("{cfg:?}: exact {e:?} wfc {w:?}"),
        }
    }
}

/// A schedule made from a solution describes it, and survives the wire.
fn check_schedule(p: &ScheduleProblem<LAYERS, BUILD_WORDS>, s: &Solution<LAYERS>) {
    let schedule = Schedule::from_solution(p, s).expect("a solution of the problem makes a schedule");
    assert_eq!(schedule.choices.len(), s.states.len());
    for (i, (c, &idx)) in schedule.choices.iter().zip(&s.states).enumerate() {
        let plan = &p.layers()[i];
        assert_eq!(c.index, idx);
        assert_eq!(Some(&c.state), plan.state(idx));
        assert_eq!(c.unary_us.to_bits(), plan.unary(idx).to_bits());
        assert!(c.transition_us.is_finite() && c.transition_us >= 0.0);
    }
    let bytes = encode(&schedule).expect("a schedule encodes");
    let back: Schedule<LAYERS> = wire::from_bytes(&bytes).expect("a schedule decodes");
    assert_eq!(encode(&back), Ok(bytes));
}
