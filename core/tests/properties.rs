//! Properties of the solvers on random chains, and of the wire format.

mod support;

use hwwfc_core::cost::{Coefficients, COEFFICIENT_COUNT};
use hwwfc_core::dtype::DType;
use hwwfc_core::graph::Graph;
use hwwfc_core::layer::Op;
use hwwfc_core::problem::evaluate;
use hwwfc_core::propagate::Propagation;
use hwwfc_core::schedule::{Choice, Schedule};
use hwwfc_core::space::SpaceKind;
use hwwfc_core::spec::{HardwareSpec, PeakCompute};
use hwwfc_core::state::{Layout, Placement, State, Tile};
use hwwfc_core::wfc::{WfcConfig, WfcStats};
use hwwfc_core::wire::{self, Message, WireError, WIRE_VERSION};
use hwwfc_core::{exact, exhaustive, wfc, Solution, SolveError};
use proptest::prelude::*;
use support::{chains, close, DenseProblem};

/// Layer capacity of the solvers on random chains.
const L: usize = 32;
/// Most combinations handed to the exhaustive solver.
const SMALL: u64 = 20_000;
/// Relative tolerance between costs summed in different orders.
const REL: f32 = 1e-5;

fn small_chains() -> BoxedStrategy<DenseProblem> {
    chains(1..=6, 1..=10).prop_filter("too many combinations", |p| p.combinations() <= SMALL as u128).boxed()
}

fn any_chains() -> BoxedStrategy<DenseProblem> {
    chains(1..=32, 1..=64)
}

fn exact(p: &DenseProblem) -> Result<Solution<L>, SolveError> {
    exact::solve::<_, L, 1>(p).map(|(s, _)| s)
}

fn run_wfc(p: &DenseProblem, cfg: &WfcConfig) -> Result<(Solution<L>, WfcStats), SolveError> {
    wfc::solve::<_, L, 1>(p, cfg)
}

fn configs() -> [WfcConfig; 2] {
    [WfcConfig::default(), WfcConfig { lookahead: false, ..WfcConfig::default() }]
}

fn neighbour_configs(max_backtracks: u32) -> [WfcConfig; 2] {
    [true, false].map(|lookahead| WfcConfig { max_backtracks, propagation: Propagation::Neighbours, lookahead })
}

/// A feasible WFC result: every hard constraint holds, the cost is the
/// evaluation of the states, and it is not below the optimum.
fn assert_feasible_and_not_below(
    p: &DenseProblem,
    w: &Solution<L>,
    optimum: f32,
    what: &str,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(w.states.len(), p.len());
    let cost = evaluate::<_, 1>(p, &w.states);
    prop_assert!(cost.is_some(), "{}: infeasible states {:?}", what, w.states);
    prop_assert_eq!(cost, Some(w.cost), "{}: cost is not the evaluation of the states", what);
    prop_assert!(
        w.cost >= optimum - REL * optimum.abs().max(1.0),
        "{}: cost {} below the optimum {}",
        what,
        w.cost,
        optimum
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, max_global_rejects: 8192, ..ProptestConfig::default() })]

    // (a) Exact DP finds the exhaustive optimum, with feasible states.
    #[test]
    fn exact_equals_exhaustive(p in small_chains()) {
        let o = exhaustive::solve::<_, L, 1>(&p, SMALL);
        let e = exact(&p);
        match (&o, &e) {
            (Ok(o), Ok(e)) => {
                prop_assert!(close(o.cost, e.cost, REL), "exhaustive {} exact {}", o.cost, e.cost);
                let eval = evaluate::<_, 1>(&p, &e.states);
                prop_assert!(eval.is_some(), "exact states infeasible: {:?}", e.states);
                prop_assert!(close(eval.unwrap(), e.cost, REL));
                prop_assert_eq!(evaluate::<_, 1>(&p, &o.states), Some(o.cost));
            }
            (Err(SolveError::Infeasible { .. }), Err(SolveError::Infeasible { .. })) => {}
            _ => prop_assert!(false, "exhaustive {:?} exact {:?}", o, e),
        }
    }

    // (b), (c) on small instances: the exhaustive solver is the oracle.
    #[test]
    fn wfc_feasible_iff_exhaustive_feasible(p in small_chains()) {
        let o = exhaustive::solve::<_, L, 1>(&p, SMALL);
        for cfg in configs() {
            let w = run_wfc(&p, &cfg);
            match (&o, &w) {
                (Ok(o), Ok((w, _))) => assert_feasible_and_not_below(&p, w, o.cost, "wfc")?,
                (Err(SolveError::Infeasible { .. }), Err(SolveError::Infeasible { layer })) => {
                    prop_assert!(*layer < p.len());
                }
                _ => prop_assert!(false, "{:?}: exhaustive {:?} wfc {:?}", cfg, o, w),
            }
        }
    }

    // (b), (c) at any size: exact DP is the oracle.
    #[test]
    fn wfc_feasible_iff_exact_feasible(p in any_chains()) {
        let e = exact(&p);
        for cfg in configs() {
            let w = run_wfc(&p, &cfg);
            match (&e, &w) {
                (Ok(e), Ok((w, stats))) => {
                    assert_feasible_and_not_below(&p, w, e.cost, "wfc")?;
                    // Full propagation keeps the chain arc-consistent, so no
                    // choice is ever undone.
                    prop_assert_eq!(stats.backtracks, 0);
                    prop_assert_eq!(stats.collapses as usize, p.len());
                }
                (Err(SolveError::Infeasible { .. }), Err(SolveError::Infeasible { layer })) => {
                    prop_assert!(*layer < p.len());
                }
                _ => prop_assert!(false, "{:?}: exact {:?} wfc {:?}", cfg, e, w),
            }
        }
    }

    // (d) Forward checking: a feasible schedule or a typed error.
    #[test]
    fn wfc_neighbours_feasible_or_typed_error(p in any_chains()) {
        let e = exact(&p);
        for cfg in neighbour_configs(WfcConfig::default().max_backtracks) {
            let w = run_wfc(&p, &cfg);
            match (&e, &w) {
                (Ok(e), Ok((w, _))) => assert_feasible_and_not_below(&p, w, e.cost, "wfc neighbours")?,
                (Ok(_), Err(SolveError::BacktrackLimit { limit })) => prop_assert_eq!(*limit, cfg.max_backtracks),
                // The root is made arc-consistent whatever the mode, which on
                // a chain decides feasibility.
                (Err(SolveError::Infeasible { .. }), Err(SolveError::Infeasible { .. })) => {}
                _ => prop_assert!(false, "{:?}: exact {:?} wfc {:?}", cfg, e, w),
            }
        }
    }

    // (d) With an unbounded budget, backtracking is complete.
    #[test]
    fn wfc_neighbours_unbounded_is_complete(p in small_chains()) {
        let o = exhaustive::solve::<_, L, 1>(&p, SMALL);
        for cfg in neighbour_configs(u32::MAX) {
            let w = run_wfc(&p, &cfg);
            match (&o, &w) {
                (Ok(o), Ok((w, _))) => assert_feasible_and_not_below(&p, w, o.cost, "wfc neighbours")?,
                (Err(SolveError::Infeasible { .. }), Err(SolveError::Infeasible { .. })) => {}
                _ => prop_assert!(false, "{:?}: exhaustive {:?} wfc {:?}", cfg, o, w),
            }
        }
    }

    // (e) Every solver is a deterministic function of its input.
    #[test]
    fn solvers_are_deterministic(p in any_chains()) {
        let copy = p.clone();
        let a = exact::solve::<_, L, 1>(&p);
        let b = exact::solve::<_, L, 1>(&copy);
        prop_assert_eq!(&a, &b);
        if let (Ok((a, _)), Ok((b, _))) = (&a, &b) {
            prop_assert_eq!(a.cost.to_bits(), b.cost.to_bits());
        }
        for cfg in configs().into_iter().chain(neighbour_configs(64)) {
            let a = run_wfc(&p, &cfg);
            let b = run_wfc(&copy, &cfg);
            prop_assert_eq!(&a, &b);
            if let (Ok((a, _)), Ok((b, _))) = (&a, &b) {
                prop_assert_eq!(a.cost.to_bits(), b.cost.to_bits());
            }
        }
    }

    // Reporting an edge free is only a shortcut: the results do not change.
    #[test]
    fn free_edges_are_only_a_shortcut(p in any_chains()) {
        let q = p.without_free_edges();
        let (a, b) = (exact(&p), exact(&q));
        prop_assert_eq!(&a, &b);
        for cfg in configs().into_iter().chain(neighbour_configs(64)) {
            prop_assert_eq!(run_wfc(&p, &cfg), run_wfc(&q, &cfg), "{:?}", cfg);
        }
    }

    // The capacities (L, W) are only bounds: larger ones give the same result.
    #[test]
    fn capacities_do_not_change_results(p in any_chains()) {
        let a = exact::solve::<_, L, 1>(&p).map(|(s, _)| (s.states.to_vec(), s.cost));
        let b = exact::solve::<_, 64, 2>(&p).map(|(s, _)| (s.states.to_vec(), s.cost));
        prop_assert_eq!(a, b);
        for cfg in configs() {
            let a = wfc::solve::<_, L, 1>(&p, &cfg).map(|(s, st)| (s.states.to_vec(), s.cost, st));
            let b = wfc::solve::<_, 64, 2>(&p, &cfg).map(|(s, st)| (s.states.to_vec(), s.cost, st));
            prop_assert_eq!(a, b);
        }
    }
}

/// A chain where forward checking must undo a choice. Layer 0 is collapsed
/// first (lowest entropy, lowest index) to state 0, which leaves layer 1
/// with states {0, 1}; only the immediate neighbour is revised, so layer 2
/// still offers its cheap state 0, whose only predecessor (layer 1 state 2)
/// is gone. Layer 2 (fewer effective choices than layer 1) is collapsed
/// next, to state 0, and the contradiction shows only then.
fn forward_checking_trap() -> DenseProblem {
    let mut p = DenseProblem::new(&[2, 3, 2]);
    p.set_unary(0, 1, 100.0);
    p.set_unary(2, 1, 100.0);
    p.forbid_all(0);
    p.forbid_all(1);
    for (a, b) in [(0, 0), (0, 1), (1, 2)] {
        p.set_compatible(0, a, b, true);
    }
    for (a, b) in [(0, 1), (1, 1), (2, 0)] {
        p.set_compatible(1, a, b, true);
    }
    p
}

#[test]
fn neighbours_mode_backtracks_and_recovers() {
    let p = forward_checking_trap();
    let (e, _) = exact::solve::<_, L, 1>(&p).unwrap();
    // Optimum: 0 -> 2 -> 0 costs 100 (layer 0 state 1), as does 0 -> {0,1} -> 1.
    assert_eq!(e.cost, 100.0);
    for cfg in neighbour_configs(64) {
        let (w, stats) = run_wfc(&p, &cfg).unwrap();
        assert!(stats.backtracks > 0, "{cfg:?}: {stats:?}");
        assert_eq!(evaluate::<_, 1>(&p, &w.states), Some(w.cost));
        assert_eq!(w.states[0], 0);
        assert_eq!(w.states[2], 1);
        // With no budget for backtracking the same search gives up, typed.
        let none = WfcConfig { max_backtracks: 0, ..cfg };
        assert_eq!(run_wfc(&p, &none), Err(SolveError::BacktrackLimit { limit: 0 }));
    }
    // Full propagation sees the conflict at once.
    for cfg in configs() {
        let (w, stats) = run_wfc(&p, &cfg).unwrap();
        assert_eq!(stats.backtracks, 0);
        assert_eq!(w.cost, 100.0);
    }
}

#[test]
fn neighbours_mode_backtracks_on_random_chains() {
    // Forward checking is not decisive on sparse random chains either.
    let strategy = support::chains(8..=24, 8..=40);
    let backtracked = support::sample(&strategy, 7, 400)
        .iter()
        .filter(|p| exact(p).is_ok())
        .filter_map(|p| run_wfc(p, &neighbour_configs(1_000)[0]).ok())
        .filter(|(_, s)| s.backtracks > 0)
        .count();
    assert!(backtracked > 0);
}

#[test]
fn generator_covers_the_cases() {
    // The properties above mean something only if the random chains reach
    // every case: feasible and infeasible, free and sparse edges, ties,
    // WFC away from the optimum, and both ends of the size ranges.
    let ps = support::sample(&any_chains(), 11, 600);
    let feasible: Vec<&DenseProblem> = ps.iter().filter(|p| exact(p).is_ok()).collect();
    let infeasible = ps.len() - feasible.len();
    assert!(feasible.len() > ps.len() / 4, "{} feasible of {}", feasible.len(), ps.len());
    assert!(infeasible > ps.len() / 20, "{infeasible} infeasible of {}", ps.len());
    assert!(ps.iter().any(|p| p.has_empty_domain()));
    assert!(ps.iter().any(|p| p.free.iter().any(|&f| f)));
    assert!(ps.iter().any(|p| p.compatible.iter().any(|c| c.iter().filter(|&&x| x).count() * 2 < c.len())));
    assert!(ps.iter().any(|p| p.len() == 1) && ps.iter().any(|p| p.len() >= 30));
    assert!(ps.iter().any(|p| p.sizes.contains(&1)) && ps.iter().any(|p| p.sizes.iter().any(|&s| s >= 60)));
    assert!(ps.iter().any(|p| p.unary.iter().any(|u| u.len() > 1 && u.iter().all(|&c| c == u[0]))));
    let suboptimal = feasible
        .iter()
        .filter(|p| {
            let e = exact(p).unwrap().cost;
            let w = run_wfc(p, &WfcConfig::default()).unwrap().0.cost;
            !close(w, e, REL)
        })
        .count();
    assert!(suboptimal > 0, "WFC was optimal on every instance: the instances are too easy");
}

// ---------------------------------------------------------------------
// (f) The wire format.

fn finite() -> impl Strategy<Value = f32> + Clone {
    prop_oneof![Just(0.0f32), -1.0e30f32..1.0e30, 1.0e-30f32..1.0, Just(f32::MAX), Just(f32::MIN_POSITIVE)]
}

fn placement() -> impl Strategy<Value = Placement> {
    prop_oneof![Just(Placement::Sram), Just(Placement::Dram), Just(Placement::Pipelined), Just(Placement::Tma)]
}

fn layout() -> impl Strategy<Value = Layout> {
    prop_oneof![Just(Layout::RowMajor), Just(Layout::ColMajor), Just(Layout::Tiled)]
}

fn state() -> impl Strategy<Value = State> {
    (any::<[u16; 3]>(), any::<[u8; 4]>(), any::<bool>(), placement(), layout()).prop_map(
        |([m, n, k], [wm, wn, st, sk], pp, p, l)| State {
            tile: Tile { m, n, k },
            warps_m: wm,
            warps_n: wn,
            stages: st,
            split_k: sk,
            pingpong: pp,
            placement: p,
            layout: l,
        },
    )
}

fn schedule_with(f: impl Strategy<Value = f32> + Clone) -> impl Strategy<Value = Schedule<8>> {
    let choice = (any::<u16>(), state(), f.clone(), f.clone())
        .prop_map(|(index, state, unary_us, transition_us)| Choice { index, state, unary_us, transition_us });
    (prop::collection::vec(choice, 0..=8), f)
        .prop_map(|(c, cost_us)| Schedule { choices: heapless::Vec::from_slice(&c).unwrap(), cost_us })
}

fn schedule() -> impl Strategy<Value = Schedule<8>> {
    schedule_with(finite())
}

fn coefficients() -> impl Strategy<Value = Coefficients> {
    prop::collection::vec(finite(), COEFFICIENT_COUNT).prop_map(|v| {
        let mut a = [0.0f32; COEFFICIENT_COUNT];
        a.copy_from_slice(&v);
        Coefficients::from_array(a)
    })
}

fn spec() -> impl Strategy<Value = HardwareSpec> {
    (
        "[a-z0-9_\u{e9}\u{4e2d}]{0,10}",
        prop_oneof![Just(SpaceKind::Tiles), Just(SpaceKind::Cuda)],
        any::<[u32; 10]>(),
        prop::array::uniform5(finite()),
    )
        .prop_map(|(name, space, u, f)| HardwareSpec {
            name: heapless::String::try_from(name.as_str()).unwrap(),
            space,
            sram_per_block_bytes: u[0],
            sram_per_sm_bytes: u[1],
            alignment_bytes: u[2],
            dram_bandwidth_gbps: f[0],
            peak_tflops: PeakCompute { f16: f[1], bf16: f[2], f32: f[3] },
            sm_count: u[3],
            l2_bytes: u[4],
            launch_overhead_us: f[4],
            max_threads_per_block: u[5],
            max_threads_per_sm: u[6],
            max_blocks_per_sm: u[7],
            registers_per_sm: u[8] ^ u[9],
        })
}

fn dtype() -> impl Strategy<Value = DType> {
    prop_oneof![Just(DType::F16), Just(DType::Bf16), Just(DType::F32)]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (1u32..70_000, 1u32..70_000, 1u32..70_000, 1u32..64, dtype()).prop_map(|(m, n, k, batch, dtype)| Op::MatMul {
            m,
            n,
            k,
            batch,
            dtype
        }),
        (1u32..1 << 20, 1u32..70_000, dtype()).prop_map(|(rows, cols, dtype)| Op::Softmax { rows, cols, dtype }),
    ]
}

fn graph() -> impl Strategy<Value = Graph<8>> {
    (prop::collection::vec(op(), 1..=8), "[a-z_]{0,20}")
        .prop_map(|(ops, stem)| {
            let mut g = Graph::new();
            for (i, op) in ops.into_iter().enumerate() {
                // Shapes too large for u32 byte counts are refused; skip them.
                let _ = g.push(&format!("{stem}{i}"), op);
            }
            g
        })
        .prop_filter("every layer was refused", |g| !g.is_empty())
}

fn encode<T: Message>(value: &T) -> Vec<u8> {
    let mut buf = vec![0u8; T::MAX_ENCODED_LEN];
    let used = wire::to_slice(value, &mut buf).expect("MAX_ENCODED_LEN is enough");
    assert!(used.len() <= T::MAX_ENCODED_LEN);
    used.to_vec()
}

/// Round trip, size bound, and every corruption rule, for one value.
fn check_wire<T: Message + PartialEq + core::fmt::Debug>(value: &T) -> Result<(), TestCaseError> {
    let bytes = encode(value);
    prop_assert!(bytes.len() <= T::MAX_ENCODED_LEN);
    prop_assert_eq!(bytes[0], WIRE_VERSION);
    prop_assert_eq!(bytes[1], T::KIND as u8);
    let back = wire::from_bytes::<T>(&bytes).map_err(|e| TestCaseError::fail(format!("decoding failed: {e}")))?;
    prop_assert_eq!(&back, value);

    // A buffer one byte short (and any shorter) is refused.
    for len in [0, 1, bytes.len() - 1] {
        let mut small = vec![0u8; len];
        prop_assert_eq!(wire::to_slice(value, &mut small).map(|b| b.len()), Err(WireError::BufferTooSmall));
    }
    // Every truncation.
    for len in 0..bytes.len() {
        let r = wire::from_bytes::<T>(&bytes[..len]);
        let expected = if len < wire::HEADER_LEN { WireError::Truncated } else { WireError::UnexpectedEnd };
        prop_assert_eq!(r.err(), Some(expected), "prefix of {} of {} bytes", len, bytes.len());
    }
    // Version, kind, trailing bytes.
    for v in [0u8, WIRE_VERSION + 1, 0xff] {
        let mut b = bytes.clone();
        b[0] = v;
        prop_assert_eq!(wire::from_bytes::<T>(&b).err(), Some(WireError::UnsupportedVersion { found: v }));
    }
    for k in [0u8, 1, 2, 3, 4, 5, 0xff].into_iter().filter(|&k| k != T::KIND as u8) {
        let mut b = bytes.clone();
        b[1] = k;
        prop_assert_eq!(wire::from_bytes::<T>(&b).err(), Some(WireError::WrongKind { found: k }));
    }
    for extra in [0u8, 1, 0xff] {
        let mut b = bytes.clone();
        b.push(extra);
        prop_assert_eq!(wire::from_bytes::<T>(&b).err(), Some(WireError::TrailingBytes));
    }
    // The cost model's version, where the header carries one.
    if let Some(expected) = T::COST_MODEL_VERSION {
        prop_assert_eq!(bytes[wire::HEADER_LEN], expected);
        for found in [0u8, expected.wrapping_sub(1), expected.wrapping_add(1), 0xff] {
            let mut b = bytes.clone();
            b[wire::HEADER_LEN] = found;
            prop_assert_eq!(wire::from_bytes::<T>(&b).err(), Some(WireError::CostModelVersion { found, expected }));
        }
    }
    Ok(())
}

/// Decodes `bytes` as every message type: a value or an error, never a
/// panic; a decoded value encodes within its size bound.
fn decode_all(bytes: &[u8]) {
    fn one<T: Message>(bytes: &[u8]) {
        if let Ok(v) = wire::from_bytes::<T>(bytes) {
            assert!(encode(&v).len() <= T::MAX_ENCODED_LEN);
        }
    }
    one::<Schedule<8>>(bytes);
    one::<Coefficients>(bytes);
    one::<HardwareSpec>(bytes);
    one::<Graph<8>>(bytes);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn wire_schedule(s in schedule()) {
        check_wire(&s)?;
    }

    #[test]
    fn wire_coefficients(c in coefficients()) {
        check_wire(&c)?;
    }

    #[test]
    fn wire_spec(s in spec()) {
        check_wire(&s)?;
    }

    #[test]
    fn wire_graph(g in graph()) {
        prop_assert!(!g.is_empty());
        check_wire(&g)?;
        let back: Graph<8> = wire::from_bytes(&encode(&g)).unwrap();
        prop_assert_eq!(back.validate(), Ok(()));
    }

    // Any f32 bits, NaN included: the bytes survive a round trip.
    #[test]
    fn wire_schedule_any_float_bits(s in schedule_with(any::<u32>().prop_map(f32::from_bits))) {
        let bytes = encode(&s);
        let back: Schedule<8> = wire::from_bytes(&bytes).unwrap();
        prop_assert_eq!(encode(&back), bytes);
        prop_assert_eq!(back.cost_us.to_bits(), s.cost_us.to_bits());
    }

    #[test]
    fn wire_random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        decode_all(&bytes);
    }

    #[test]
    fn wire_random_bodies_never_panic(kind in 0u8..6, body in prop::collection::vec(any::<u8>(), 0..400)) {
        let mut bytes = vec![WIRE_VERSION, kind];
        bytes.extend_from_slice(&body);
        decode_all(&bytes);
    }

    // Flipping any byte of a valid encoding gives a value or an error.
    #[test]
    fn wire_corrupted_bytes_never_panic(s in schedule(), g in graph(), at in any::<prop::sample::Index>(), x in 1u8..=255) {
        for mut bytes in [encode(&s), encode(&g)] {
            let i = at.index(bytes.len());
            bytes[i] ^= x;
            decode_all(&bytes);
        }
    }
}

#[test]
fn max_encoded_len_bounds_the_largest_values() {
    let name = "\u{4e2d}".repeat(10) + "ab"; // 32 bytes
    let spec = HardwareSpec {
        name: heapless::String::try_from(name.as_str()).unwrap(),
        space: SpaceKind::Cuda,
        sram_per_block_bytes: u32::MAX,
        sram_per_sm_bytes: u32::MAX,
        alignment_bytes: u32::MAX,
        dram_bandwidth_gbps: f32::MAX,
        peak_tflops: PeakCompute { f16: f32::MAX, bf16: f32::MAX, f32: f32::MAX },
        sm_count: u32::MAX,
        l2_bytes: u32::MAX,
        launch_overhead_us: f32::MAX,
        max_threads_per_block: u32::MAX,
        max_threads_per_sm: u32::MAX,
        max_blocks_per_sm: u32::MAX,
        registers_per_sm: u32::MAX,
    };
    check_wire(&spec).unwrap();
    let st = State {
        tile: Tile { m: u16::MAX, n: u16::MAX, k: u16::MAX },
        warps_m: u8::MAX,
        warps_n: u8::MAX,
        stages: u8::MAX,
        split_k: u8::MAX,
        pingpong: true,
        placement: Placement::Pipelined,
        layout: Layout::Tiled,
    };
    let choice = Choice { index: u16::MAX, state: st, unary_us: f32::MAX, transition_us: f32::MAX };
    let s = Schedule::<8> { choices: heapless::Vec::from_slice(&[choice; 8]).unwrap(), cost_us: f32::MAX };
    check_wire(&s).unwrap();
    check_wire(&Coefficients::from_array([f32::MAX; COEFFICIENT_COUNT])).unwrap();
    // The largest graph that push accepts: 8 layers with 24-byte names
    // and five-byte varints where the shape rules allow them.
    let mut g = Graph::<8>::new();
    for i in 0..8 {
        let op = if i % 2 == 0 {
            Op::MatMul { m: 1, n: 1, k: 1 << 30, batch: 1, dtype: DType::F16 }
        } else {
            Op::Softmax { rows: (1 << 30) - 1, cols: 1, dtype: DType::F32 }
        };
        g.push(&format!("{i:0>24}"), op).unwrap();
    }
    check_wire(&g).unwrap();
}

#[test]
fn wire_kinds_are_not_interchangeable() {
    let s = Schedule::<8> { choices: heapless::Vec::new(), cost_us: 1.0 };
    let bytes = encode(&s);
    assert_eq!(wire::from_bytes::<Coefficients>(&bytes), Err(WireError::WrongKind { found: 1 }));
    assert_eq!(wire::from_bytes::<HardwareSpec>(&bytes), Err(WireError::WrongKind { found: 1 }));
    assert_eq!(wire::from_bytes::<Graph<8>>(&bytes), Err(WireError::WrongKind { found: 1 }));
    // A schedule of a larger capacity fits a smaller one only if short.
    assert_eq!(
        wire::from_bytes::<Schedule<4>>(&bytes),
        Ok(Schedule::<4> { choices: heapless::Vec::new(), cost_us: 1.0 })
    );
}
