//! Shared test support: a problem given by explicit tables, and proptest
//! strategies that generate random chains of them.
//!
//! Included by the integration tests (`mod support;`), the benchmarks and
//! the examples (`#[path = "../tests/support/mod.rs"] mod support;`).

#![allow(dead_code)]

use hwwfc_core::space::SpaceKind;
use hwwfc_core::{presets, Domain, HardwareSpec, Problem, StateIndex};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use std::ops::RangeInclusive;

/// One layer's `(unary costs, allowed)`.
pub type LayerTable = (Vec<f32>, Vec<bool>);

/// One edge's `(transition costs, compatibility, reported free)`.
pub type EdgeTable = (Vec<f32>, Vec<bool>, bool);

/// A chain problem given by explicit tables. Layer `i` has states
/// `0..sizes[i]`, of which `allowed[i]` are in its domain; edge `e` joins
/// layer `e` to layer `e + 1`, with row-major `sizes[e] x sizes[e + 1]`
/// tables of transition costs and compatibility.
#[derive(Clone, Debug, PartialEq)]
pub struct DenseProblem {
    /// States in each layer's table.
    pub sizes: Vec<usize>,
    /// The domain of each layer before search.
    pub allowed: Vec<Vec<bool>>,
    /// Unary cost of each state of each layer.
    pub unary: Vec<Vec<f32>>,
    /// Per edge, `transition[e][a * sizes[e + 1] + b]`.
    pub transition: Vec<Vec<f32>>,
    /// Per edge, `compatible[e][a * sizes[e + 1] + b]`.
    pub compatible: Vec<Vec<bool>>,
    /// Per edge, whether it is reported free through `edge_is_free`
    /// (only ever set on edges that are fully compatible and cost nothing).
    pub free: Vec<bool>,
}

impl DenseProblem {
    /// A chain with every state allowed, every pair compatible and every
    /// cost zero; no edge is reported free.
    pub fn new(sizes: &[usize]) -> Self {
        let edges: Vec<usize> = sizes.windows(2).map(|w| w[0] * w[1]).collect();
        DenseProblem {
            sizes: sizes.to_vec(),
            allowed: sizes.iter().map(|&s| vec![true; s]).collect(),
            unary: sizes.iter().map(|&s| vec![0.0; s]).collect(),
            transition: edges.iter().map(|&n| vec![0.0; n]).collect(),
            compatible: edges.iter().map(|&n| vec![true; n]).collect(),
            free: vec![false; edges.len()],
        }
    }

    /// Assembles a chain from per-layer `(unary costs, allowed)` and
    /// per-edge `(transition costs, compatibility, free)` tables.
    pub fn from_parts(layers: Vec<LayerTable>, edges: Vec<EdgeTable>) -> Self {
        let sizes: Vec<usize> = layers.iter().map(|(u, _)| u.len()).collect();
        assert_eq!(edges.len(), sizes.len().saturating_sub(1));
        let mut p = DenseProblem::new(&sizes);
        for (i, (u, a)) in layers.into_iter().enumerate() {
            assert_eq!(a.len(), u.len());
            p.unary[i] = u;
            p.allowed[i] = a;
        }
        for (e, (t, c, free)) in edges.into_iter().enumerate() {
            assert_eq!(t.len(), sizes[e] * sizes[e + 1]);
            assert_eq!(c.len(), t.len());
            p.transition[e] = t;
            p.compatible[e] = c;
            if free {
                p.declare_free(e);
            }
        }
        p
    }

    /// Number of layers.
    pub fn len(&self) -> usize {
        self.sizes.len()
    }

    /// Whether the chain has no layers.
    pub fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }

    /// Sets the unary cost of `state` at `layer`.
    pub fn set_unary(&mut self, layer: usize, state: usize, cost: f32) {
        self.unary[layer][state] = cost;
    }

    /// Sets the transition cost of `a -> b` across `edge`.
    pub fn set_transition(&mut self, edge: usize, a: usize, b: usize, cost: f32) {
        let n = self.sizes[edge + 1];
        self.transition[edge][a * n + b] = cost;
        self.free[edge] = false;
    }

    /// Sets whether `b` may follow `a` across `edge`.
    pub fn set_compatible(&mut self, edge: usize, a: usize, b: usize, ok: bool) {
        let n = self.sizes[edge + 1];
        self.compatible[edge][a * n + b] = ok;
        if !ok {
            self.free[edge] = false;
        }
    }

    /// Makes every pair of `edge` incompatible.
    pub fn forbid_all(&mut self, edge: usize) {
        self.compatible[edge].iter_mut().for_each(|c| *c = false);
        self.free[edge] = false;
    }

    /// Reports `edge` free; panics unless it really is (every pair
    /// compatible and costing nothing).
    pub fn declare_free(&mut self, edge: usize) {
        assert!(self.compatible[edge].iter().all(|&c| c), "edge {edge} has an incompatible pair");
        assert!(self.transition[edge].iter().all(|&t| t == 0.0), "edge {edge} has a transition cost");
        self.free[edge] = true;
    }

    /// The same problem with no edge reported free.
    pub fn without_free_edges(&self) -> Self {
        let mut p = self.clone();
        p.free.iter_mut().for_each(|f| *f = false);
        p
    }

    /// Number of assignments of allowed states (the exhaustive solver's work).
    pub fn combinations(&self) -> u128 {
        self.allowed.iter().fold(1u128, |acc, a| acc.saturating_mul(a.iter().filter(|&&x| x).count() as u128))
    }

    /// Whether any layer has an empty domain.
    pub fn has_empty_domain(&self) -> bool {
        self.allowed.iter().any(|a| !a.iter().any(|&x| x))
    }

    fn check_layer(&self, layer: usize) {
        assert!(layer < self.len(), "solver asked for layer {layer} of a {}-layer chain", self.len());
    }

    fn check_edge(&self, edge: usize) {
        assert!(edge + 1 < self.len(), "solver asked for edge {edge} of a {}-layer chain", self.len());
    }

    fn pair_index(&self, edge: usize, from: StateIndex, to: StateIndex) -> Option<usize> {
        let (a, b) = (from as usize, to as usize);
        let (na, nb) = (self.sizes[edge], self.sizes[edge + 1]);
        (a < na && b < nb).then_some(a * nb + b)
    }
}

impl<const W: usize> Problem<W> for DenseProblem {
    fn layer_count(&self) -> usize {
        self.sizes.len()
    }

    fn domain(&self, layer: usize) -> Domain<W> {
        self.check_layer(layer);
        let mut d = Domain::EMPTY;
        for (s, &a) in self.allowed[layer].iter().enumerate() {
            if a {
                assert!(d.insert(s as StateIndex), "state {s} exceeds a domain of {} states", Domain::<W>::CAPACITY);
            }
        }
        d
    }

    fn unary(&self, layer: usize, state: StateIndex) -> f32 {
        self.check_layer(layer);
        self.unary[layer].get(state as usize).copied().unwrap_or(f32::INFINITY)
    }

    fn transition(&self, edge: usize, from: StateIndex, to: StateIndex) -> f32 {
        self.check_edge(edge);
        self.pair_index(edge, from, to).map_or(f32::INFINITY, |i| self.transition[edge][i])
    }

    fn compatible(&self, edge: usize, from: StateIndex, to: StateIndex) -> bool {
        self.check_edge(edge);
        self.pair_index(edge, from, to).is_some_and(|i| self.compatible[edge][i])
    }

    fn edge_is_free(&self, edge: usize) -> bool {
        self.check_edge(edge);
        self.free[edge]
    }
}

/// Whether `a` and `b` agree within a relative tolerance `rel` (relative
/// to the larger magnitude, and at least to 1).
pub fn close(a: f32, b: f32, rel: f32) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1.0)
}

// ---------------------------------------------------------------------
// Strategies.

/// Unary costs of one layer: small integers (many ties), a spread of
/// reals, a wide range with zeros, or all equal.
fn layer_costs(size: usize) -> BoxedStrategy<Vec<f32>> {
    prop_oneof![
        3 => prop::collection::vec((0u8..4).prop_map(f32::from), size),
        4 => prop::collection::vec(0.0f32..1000.0, size),
        1 => prop::collection::vec(prop_oneof![Just(0.0f32), 1.0e-3f32..1.0e4], size),
        1 => (0.0f32..100.0).prop_map(move |c| vec![c; size]),
    ]
    .boxed()
}

/// The domain of one layer: full, a random subset (possibly empty), or a
/// single state.
fn layer_allowed(size: usize) -> BoxedStrategy<Vec<bool>> {
    prop_oneof![
        12 => Just(vec![true; size]),
        6 => prop::collection::vec(prop::bool::weighted(0.75), size),
        1 => (0..size).prop_map(move |i| (0..size).map(|j| j == i).collect()),
    ]
    .boxed()
}

/// A small deterministic generator (SplitMix64) that fills the large
/// per-edge tables from one drawn seed: drawing thousands of elements
/// through proptest one by one is slow, and the seed still shrinks.
pub struct SplitMix(u64);

impl SplitMix {
    /// A generator started at `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// How an edge's transition costs are drawn.
#[derive(Clone, Copy, Debug)]
enum EdgeCosts {
    /// All zero.
    Zero,
    /// Mostly zero, some small integers (ties), some reals in `[0, 500)`.
    Mixed,
    /// Zero or a real in `[0, 500)`.
    Real,
}

/// Which pairs of an edge are compatible.
#[derive(Clone, Copy, Debug)]
enum EdgeRule {
    /// Every pair, at no cost, and reported free.
    Free,
    /// Every pair.
    All,
    /// Each pair with the given probability.
    Sparse(f64),
    /// A band `|a - b| <= width` (scaled to the two sizes): sparse,
    /// structured, with a successor for every state.
    Band(usize),
}

fn edge_table(a: usize, b: usize, rule: EdgeRule, costs: EdgeCosts, seed: u64) -> EdgeTable {
    let n = a * b;
    let mut rng = SplitMix::new(seed);
    let compatible: Vec<bool> = match rule {
        EdgeRule::Free | EdgeRule::All => vec![true; n],
        EdgeRule::Sparse(p) => (0..n).map(|_| rng.unit() < p).collect(),
        EdgeRule::Band(width) => (0..n)
            .map(|x| {
                let (i, j) = (x / b, x % b);
                (i * b / a.max(1)).abs_diff(j) <= width
            })
            .collect(),
    };
    let free = matches!(rule, EdgeRule::Free);
    let costs = if free { EdgeCosts::Zero } else { costs };
    let transition = (0..n)
        .map(|_| match costs {
            EdgeCosts::Zero => 0.0,
            EdgeCosts::Mixed => match rng.next_u64() % 6 {
                0..=2 => 0.0,
                3 => (1 + rng.next_u64() % 3) as f32,
                _ => (rng.unit() * 500.0) as f32,
            },
            EdgeCosts::Real => {
                if rng.next_u64() % 4 == 0 {
                    0.0
                } else {
                    (rng.unit() * 500.0) as f32
                }
            }
        })
        .collect();
    (transition, compatible, free)
}

fn edge_costs() -> impl Strategy<Value = EdgeCosts> {
    prop_oneof![1 => Just(EdgeCosts::Zero), 2 => Just(EdgeCosts::Mixed), 1 => Just(EdgeCosts::Real)]
}

/// One edge `(transition costs, compatibility, free)` between layers of
/// `a` and `b` states: free, fully compatible, randomly sparse, banded, or
/// nearly blocking (often making the instance infeasible).
fn edge(a: usize, b: usize) -> BoxedStrategy<EdgeTable> {
    let rule = prop_oneof![
        2 => Just(EdgeRule::Free),
        3 => Just(EdgeRule::All),
        4 => (0.05f64..0.95).prop_map(EdgeRule::Sparse),
        1 => (0usize..3).prop_map(EdgeRule::Band),
        1 => (0.0f64..0.04).prop_map(EdgeRule::Sparse),
    ];
    (rule, edge_costs(), any::<u64>()).prop_map(move |(r, c, seed)| edge_table(a, b, r, c, seed)).boxed()
}

fn assemble(
    sizes: Vec<usize>,
    with_layer: fn(usize) -> BoxedStrategy<LayerTable>,
    with_edge: fn(usize, usize) -> BoxedStrategy<EdgeTable>,
) -> BoxedStrategy<DenseProblem> {
    let layers: Vec<_> = sizes.iter().map(|&s| with_layer(s)).collect();
    let edges: Vec<_> = sizes.windows(2).map(|w| with_edge(w[0], w[1])).collect();
    (layers, edges).prop_map(|(l, e)| DenseProblem::from_parts(l, e)).boxed()
}

fn any_layer(size: usize) -> BoxedStrategy<LayerTable> {
    (layer_costs(size), layer_allowed(size)).boxed()
}

/// Random chains of `layers` layers with `states` states each (drawn per
/// layer): random costs with ties, random domains (sometimes empty), and
/// random compatibility, from free edges to ones that leave no schedule.
pub fn chains(layers: RangeInclusive<usize>, states: RangeInclusive<usize>) -> BoxedStrategy<DenseProblem> {
    prop::collection::vec(states, layers).prop_flat_map(|sizes| assemble(sizes, any_layer, edge)).boxed()
}

fn full_layer(size: usize) -> BoxedStrategy<LayerTable> {
    (prop::collection::vec(0.0f32..1000.0, size), Just(vec![true; size])).boxed()
}

fn dense_edge(a: usize, b: usize) -> BoxedStrategy<EdgeTable> {
    let rule = prop_oneof![Just(EdgeRule::All), Just(EdgeRule::Sparse(0.5))];
    (rule, any::<u64>()).prop_map(move |(r, seed)| edge_table(a, b, r, EdgeCosts::Real, seed)).boxed()
}

/// Chains of exactly `layers x states`, every state allowed, no free edges
/// and no nearly blocking ones (for timing the pairwise work).
pub fn dense_chains(layers: usize, states: usize) -> BoxedStrategy<DenseProblem> {
    assemble(vec![states; layers], full_layer, dense_edge)
}

/// `count` values of `strategy` drawn from a fixed seed.
pub fn sample<S: Strategy>(strategy: &S, seed: u64, count: usize) -> Vec<S::Value> {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    (0..count).map(|_| strategy.new_tree(&mut runner).expect("strategy rejected its own input").current()).collect()
}

/// An H200's limits (as the device reports them) in the Hopper space, on
/// `stress_gpu`'s rates.
pub fn hopper_limits() -> HardwareSpec {
    let mut s = presets::stress_gpu();
    s.space = SpaceKind::Hopper;
    s.sram_per_block_bytes = 232_448;
    s.sram_per_sm_bytes = 233_472;
    s.alignment_bytes = 16;
    s.sm_count = 132;
    s.max_threads_per_block = 1024;
    s.max_threads_per_sm = 2048;
    s.max_blocks_per_sm = 32;
    s.registers_per_sm = 65_536;
    s
}

/// An H200: its limits in the Hopper space (as [`hopper_limits`]) and its
/// rates, as in `specs/h200.json`.
pub fn hopper_h200() -> HardwareSpec {
    let mut spec = hopper_limits();
    spec.peak_tflops = hwwfc_core::spec::PeakCompute { f16: 989.4, bf16: 989.4, f32: 66.9 };
    spec.dram_bandwidth_gbps = 4800.0;
    spec.l2_bytes = 62_914_560;
    spec
}
