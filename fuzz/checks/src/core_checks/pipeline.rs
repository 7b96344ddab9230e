//! Built problems: specs, models and coefficients as a runtime receives
//! them (in the wire format), then built, solved and encoded.

use super::chains::{assert_feasible, wfc_configs};
use super::{encode, Bytes, BUILD_WORDS, LAYERS, ORACLE_LIMIT};
use hwwfc_core::built::BuildError;
use hwwfc_core::cost::{Coefficients, COEFFICIENTS_VERSION, COEFFICIENT_COUNT};
use hwwfc_core::dtype::DType;
use hwwfc_core::layer::{Layer, Op};
use hwwfc_core::problem::evaluate;
use hwwfc_core::propagate::Propagation;
use hwwfc_core::schedule::Schedule;
use hwwfc_core::space::{self, SpaceKind};
use hwwfc_core::spec::{HardwareSpec, PeakCompute};
use hwwfc_core::wire::{self, WireError, WIRE_VERSION};
use hwwfc_core::{constraint, exact, exhaustive, presets, wfc, Domain, Graph, Problem, ScheduleProblem};
use hwwfc_core::{Solution, SolveError};

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

pub(super) fn base_spec(r: &mut Bytes) -> HardwareSpec {
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
