//! Bad input gives typed errors, never a panic.

mod support;

use hwwfc_core::built::BuildError;
use hwwfc_core::constraint::{self, Constraint};
use hwwfc_core::cost::{Coefficients, COEFFICIENTS_VERSION, COEFFICIENT_COUNT, COEFFICIENT_NAMES};
use hwwfc_core::graph::{Graph, GraphError};
use hwwfc_core::layer::{Op, ShapeError, LAYER_NAME_CAPACITY};
use hwwfc_core::models::{self, ModelError};
use hwwfc_core::schedule::Schedule;
use hwwfc_core::space::{self, SpaceKind};
use hwwfc_core::spec::{HardwareSpec, SpecError, SpecField};
use hwwfc_core::wire::{self, Message, WireError, WIRE_VERSION};
use hwwfc_core::{exact, exhaustive, presets, wfc, DType, Placement, Problem, ScheduleProblem, SolveError};
use support::DenseProblem;

fn mm(m: u32, n: u32, k: u32, batch: u32) -> Op {
    Op::MatMul { m, n, k, batch, dtype: DType::F16 }
}

fn softmax(rows: u32, cols: u32) -> Op {
    Op::Softmax { rows, cols, dtype: DType::F32 }
}

fn attention() -> Graph<8> {
    models::builtin::<8>("attention", None).unwrap()
}

fn build(graph: &Graph<8>, spec: &HardwareSpec) -> Result<ScheduleProblem<8, 1>, BuildError> {
    ScheduleProblem::<8, 1>::build(graph, spec, &Coefficients::default())
}

fn cuda_spec() -> HardwareSpec {
    HardwareSpec { space: SpaceKind::Cuda, ..presets::toy_gpu() }
}

// ---------------------------------------------------------------------
// Layers left without states.

#[test]
fn tiny_sram_alone_leaves_dram_states() {
    // With 64 bytes of SRAM per block every staged state goes, but the
    // DRAM-streamed ones need no SRAM: the attention block still builds,
    // entirely on DRAM tiles.
    let spec = HardwareSpec { sram_per_block_bytes: 64, ..presets::stress_gpu() };
    let p = build(&attention(), &spec).unwrap();
    for l in p.layers() {
        assert!(l.domain.iter().all(|s| l.state(s).unwrap().placement == hwwfc_core::Placement::Dram));
        assert!(l.removed[Constraint::SramCapacity.index()] > 0);
    }
}

#[test]
fn a_layer_with_every_state_removed_is_named() {
    // With 64 bytes of SRAM, an 8 x 8 x 8 product keeps only its 8 x 8
    // DRAM tiles (larger ones do not apply), and their 16-byte rows are not
    // 64-byte aligned; its staged states fail alignment (8, 16) or SRAM
    // capacity (32 and up). The last state in table order, 256 x 256 SRAM
    // tiled, is removed by SramCapacity.
    let spec = HardwareSpec { sram_per_block_bytes: 64, ..presets::stress_gpu() };
    let mut g = Graph::<8>::new();
    g.push("fine", mm(512, 512, 512, 1)).unwrap();
    g.push("tiny", mm(8, 8, 8, 1)).unwrap();
    g.push("after", mm(512, 512, 512, 1)).unwrap();
    assert_eq!(
        build(&g, &spec).unwrap_err(),
        BuildError::Infeasible { layer: 1, constraint: Constraint::SramCapacity }
    );
    let tiny = mm(8, 8, 8, 1);
    let last = space::states(SpaceKind::Tiles, tiny.kind()).iter().rfind(|s| space::applicable(&tiny, s)).unwrap();
    assert_eq!(constraint::check(&spec, &tiny, last), Err(Constraint::SramCapacity));

    // With a 4 KB alignment no tile row (at most 256 x 4 bytes) is aligned.
    let spec = HardwareSpec { alignment_bytes: 4096, ..presets::stress_gpu() };
    assert_eq!(
        build(&attention(), &spec).unwrap_err(),
        BuildError::Infeasible { layer: 0, constraint: Constraint::Alignment }
    );
}

#[test]
fn an_adjacency_dead_end_is_named() {
    // A problem whose every pair across an edge is forbidden.
    let mut p = DenseProblem::new(&[3, 3, 3]);
    p.forbid_all(1);
    assert!(matches!(exact::solve::<_, 8, 1>(&p), Err(SolveError::Infeasible { .. })));
    assert!(matches!(wfc::solve::<_, 8, 1>(&p, &Default::default()), Err(SolveError::Infeasible { .. })));
    assert!(matches!(exhaustive::solve::<_, 8, 1>(&p, 1000), Err(SolveError::Infeasible { .. })));
    // An empty domain is reported at its layer before any search.
    let mut p = DenseProblem::new(&[3, 3, 3]);
    p.allowed[2] = vec![false; 3];
    assert_eq!(exact::solve::<_, 8, 1>(&p).unwrap_err(), SolveError::Infeasible { layer: 2 });
    assert_eq!(wfc::solve::<_, 8, 1>(&p, &Default::default()).unwrap_err(), SolveError::Infeasible { layer: 2 });
    assert_eq!(exhaustive::solve::<_, 8, 1>(&p, 1000).unwrap_err(), SolveError::Infeasible { layer: 2 });
}

// ---------------------------------------------------------------------
// Capacities.

#[test]
fn more_layers_than_the_capacity() {
    let mut g = Graph::<4>::new();
    for i in 0..4 {
        g.push(&format!("l{i}"), mm(64, 64, 64, 1)).unwrap();
    }
    assert_eq!(g.push("l4", mm(64, 64, 64, 1)), Err(GraphError::TooManyLayers { capacity: 4 }));
    assert_eq!(g.len(), 4);
    assert_eq!(
        models::builtin::<4>("attention", None),
        Err(ModelError::Graph(GraphError::TooManyLayers { capacity: 4 }))
    );
    // The solvers refuse a problem longer than their capacity.
    let p = DenseProblem::new(&[2; 5]);
    assert_eq!(exact::solve::<_, 4, 1>(&p).unwrap_err(), SolveError::TooManyLayers { capacity: 4 });
    assert_eq!(wfc::solve::<_, 4, 1>(&p, &Default::default()).unwrap_err(), SolveError::TooManyLayers { capacity: 4 });
    assert_eq!(exhaustive::solve::<_, 4, 1>(&p, 1000).unwrap_err(), SolveError::TooManyLayers { capacity: 4 });
}

#[test]
fn more_states_than_a_domain_holds() {
    let spec = cuda_spec();
    assert_eq!(spec.validate(), Ok(()));
    let matmuls = space::states(SpaceKind::Cuda, hwwfc_core::OpKind::MatMul).len();
    assert_eq!(matmuls, 480);
    assert_eq!(
        build(&attention(), &spec).unwrap_err(),
        BuildError::TooManyStates { layer: 0, states: 480, capacity: 64 }
    );
    // The softmax space (48 states) fits W = 1; a softmax-first graph fails
    // at its first matmul.
    let mut g = Graph::<8>::new();
    g.push("sm", softmax(512, 512)).unwrap();
    g.push("mm", mm(512, 512, 512, 1)).unwrap();
    assert_eq!(build(&g, &spec).unwrap_err(), BuildError::TooManyStates { layer: 1, states: 480, capacity: 64 });
    // W = 8 holds them.
    assert!(ScheduleProblem::<8, 8>::build(&g, &spec, &Coefficients::default()).is_ok());
}

#[test]
fn the_exhaustive_solver_refuses_too_many_combinations() {
    let p = DenseProblem::new(&[10; 4]);
    assert_eq!(exhaustive::solve::<_, 8, 1>(&p, 9_999).unwrap_err(), SolveError::TooManyCombinations { limit: 9_999 });
    assert!(exhaustive::solve::<_, 8, 1>(&p, 10_000).is_ok());
}

// ---------------------------------------------------------------------
// Specs.

fn set_u32(spec: &mut HardwareSpec, field: SpecField, v: u32) -> bool {
    let slot = match field {
        SpecField::SramPerBlockBytes => &mut spec.sram_per_block_bytes,
        SpecField::SramPerSmBytes => &mut spec.sram_per_sm_bytes,
        SpecField::AlignmentBytes => &mut spec.alignment_bytes,
        SpecField::SmCount => &mut spec.sm_count,
        SpecField::L2Bytes => &mut spec.l2_bytes,
        SpecField::MaxThreadsPerBlock => &mut spec.max_threads_per_block,
        SpecField::MaxThreadsPerSm => &mut spec.max_threads_per_sm,
        SpecField::MaxBlocksPerSm => &mut spec.max_blocks_per_sm,
        SpecField::RegistersPerSm => &mut spec.registers_per_sm,
        _ => return false,
    };
    *slot = v;
    true
}

fn set_f32(spec: &mut HardwareSpec, field: SpecField, v: f32) -> bool {
    let slot = match field {
        SpecField::DramBandwidthGbps => &mut spec.dram_bandwidth_gbps,
        SpecField::PeakTflopsF16 => &mut spec.peak_tflops.f16,
        SpecField::PeakTflopsBf16 => &mut spec.peak_tflops.bf16,
        SpecField::PeakTflopsF32 => &mut spec.peak_tflops.f32,
        SpecField::LaunchOverheadUs => &mut spec.launch_overhead_us,
        _ => return false,
    };
    *slot = v;
    true
}

const U32_FIELDS: [SpecField; 9] = [
    SpecField::SramPerBlockBytes,
    SpecField::SramPerSmBytes,
    SpecField::AlignmentBytes,
    SpecField::SmCount,
    SpecField::L2Bytes,
    SpecField::MaxThreadsPerBlock,
    SpecField::MaxThreadsPerSm,
    SpecField::MaxBlocksPerSm,
    SpecField::RegistersPerSm,
];

const F32_FIELDS: [SpecField; 5] = [
    SpecField::DramBandwidthGbps,
    SpecField::PeakTflopsF16,
    SpecField::PeakTflopsBf16,
    SpecField::PeakTflopsF32,
    SpecField::LaunchOverheadUs,
];

fn assert_spec_error(spec: &HardwareSpec, expected: SpecError) {
    assert_eq!(spec.validate(), Err(expected));
    assert_eq!(build(&attention(), spec).unwrap_err(), BuildError::Spec(expected));
    // The message names the field.
    let text = expected.to_string();
    if let SpecError::NotPositive(f) | SpecError::NotPowerOfTwo(f) | SpecError::Negative(f) = expected {
        assert!(text.contains(f.name()), "{text}");
    }
}

#[test]
fn spec_zero_fields_are_named() {
    for base in [presets::stress_gpu(), presets::toy_gpu(), cuda_spec()] {
        for field in U32_FIELDS {
            let mut spec = base.clone();
            assert!(set_u32(&mut spec, field, 0));
            assert_spec_error(&spec, SpecError::NotPositive(field));
        }
        for field in F32_FIELDS.into_iter().filter(|f| *f != SpecField::LaunchOverheadUs) {
            let mut spec = base.clone();
            assert!(set_f32(&mut spec, field, 0.0));
            assert_spec_error(&spec, SpecError::NotPositive(field));
        }
        // A launch may cost nothing.
        let mut spec = base.clone();
        set_f32(&mut spec, SpecField::LaunchOverheadUs, 0.0);
        assert_eq!(spec.validate(), Ok(()));
    }
}

#[test]
fn spec_negative_nan_and_infinite_fields_are_named() {
    for field in F32_FIELDS {
        for bad in [-1.0, -f32::MIN_POSITIVE, f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let mut spec = presets::stress_gpu();
            assert!(set_f32(&mut spec, field, bad));
            let expected = if field == SpecField::LaunchOverheadUs {
                SpecError::Negative(field)
            } else {
                SpecError::NotPositive(field)
            };
            assert_spec_error(&spec, expected);
        }
    }
}

#[test]
fn spec_structural_errors() {
    let mut spec = presets::stress_gpu();
    spec.alignment_bytes = 48;
    assert_spec_error(&spec, SpecError::NotPowerOfTwo(SpecField::AlignmentBytes));

    let mut spec = presets::stress_gpu();
    spec.sram_per_block_bytes = spec.sram_per_sm_bytes + 1;
    assert_spec_error(&spec, SpecError::Exceeds(SpecField::SramPerBlockBytes, SpecField::SramPerSmBytes));

    let mut spec = presets::stress_gpu();
    spec.max_threads_per_block = spec.max_threads_per_sm * 2;
    assert_spec_error(&spec, SpecError::Exceeds(SpecField::MaxThreadsPerBlock, SpecField::MaxThreadsPerSm));

    let mut spec = presets::stress_gpu();
    spec.name.clear();
    assert_spec_error(&spec, SpecError::EmptyName);
}

#[test]
fn spec_extreme_but_valid_values_do_not_panic() {
    // Valid by the rules, absurd by physics: building gives a problem or a
    // typed error, never a panic.
    let extremes = [
        HardwareSpec { sm_count: u32::MAX, ..presets::stress_gpu() },
        HardwareSpec { sram_per_block_bytes: u32::MAX, sram_per_sm_bytes: u32::MAX, ..presets::stress_gpu() },
        HardwareSpec { alignment_bytes: 1 << 31, ..presets::stress_gpu() },
        HardwareSpec { dram_bandwidth_gbps: f32::MIN_POSITIVE, ..presets::stress_gpu() },
        HardwareSpec { dram_bandwidth_gbps: f32::MAX, ..presets::stress_gpu() },
        HardwareSpec { launch_overhead_us: f32::MAX, ..presets::stress_gpu() },
        HardwareSpec { max_blocks_per_sm: u32::MAX, registers_per_sm: 1, ..presets::stress_gpu() },
        HardwareSpec {
            peak_tflops: hwwfc_core::spec::PeakCompute { f16: 1e-30, bf16: 1e-30, f32: 1e-30 },
            ..presets::stress_gpu()
        },
    ];
    for spec in &extremes {
        assert_eq!(spec.validate(), Ok(()));
        match build(&attention(), spec) {
            Ok(p) => {
                let (e, _) = exact::solve::<_, 8, 1>(&p).unwrap();
                assert!(e.cost.is_finite());
            }
            Err(BuildError::Infeasible { .. } | BuildError::NonFiniteCost { .. }) => {}
            Err(other) => panic!("{spec:?}: {other:?}"),
        }
    }
}

// ---------------------------------------------------------------------
// Shapes.

#[test]
fn zero_dimensions_are_named() {
    let cases = [
        (mm(0, 1, 1, 1), "m"),
        (mm(1, 0, 1, 1), "n"),
        (mm(1, 1, 0, 1), "k"),
        (mm(1, 1, 1, 0), "batch"),
        (softmax(0, 1), "rows"),
        (softmax(1, 0), "cols"),
    ];
    for (op, dim) in cases {
        assert_eq!(op.validate(), Err(ShapeError::ZeroDimension(dim)));
        let mut g = Graph::<8>::new();
        g.push("ok", mm(64, 64, 64, 1)).unwrap();
        assert_eq!(g.push("bad", op), Err(GraphError::Shape { layer: 1, error: ShapeError::ZeroDimension(dim) }));
        assert_eq!(g.len(), 1);
    }
}

#[test]
fn u32_overflowing_shapes_are_refused() {
    // fp16 32768 x 32768 output: 2^31 elements, accounted as fp32: 2^33 bytes.
    assert_eq!(mm(32_768, 32_768, 1, 1).validate(), Err(ShapeError::TooLarge));
    assert_eq!(mm(1, 1, 1 << 31, 1).validate(), Err(ShapeError::TooLarge));
    assert_eq!(mm(1 << 16, 1, 1 << 16, 1 << 16).validate(), Err(ShapeError::TooLarge));
    // fp32 softmax of 2^32 bytes is one byte too many; one column less fits.
    assert_eq!(softmax(1 << 15, 1 << 15).validate(), Err(ShapeError::TooLarge));
    assert_eq!(softmax(1 << 15, (1 << 15) - 1).validate(), Ok(()));
    assert_eq!(softmax(u32::MAX, u32::MAX).validate(), Err(ShapeError::TooLarge));
    assert_eq!(mm(u32::MAX, u32::MAX, 1, 1).validate(), Err(ShapeError::TooLarge));
    let mut g = Graph::<8>::new();
    assert_eq!(
        g.push("big", softmax(1 << 15, 1 << 15)),
        Err(GraphError::Shape { layer: 0, error: ShapeError::TooLarge })
    );
    // A sequence length that overflows a built-in model.
    assert_eq!(
        models::builtin::<8>("attention", Some(1 << 20)),
        Err(ModelError::Graph(GraphError::Shape { layer: 1, error: ShapeError::TooLarge }))
    );
    assert_eq!(
        models::builtin::<8>("attention", Some(0)),
        Err(ModelError::Graph(GraphError::Shape { layer: 0, error: ShapeError::ZeroDimension("m") }))
    );
}

/// Shapes whose byte counts overflow `u64` (each product a multiple of
/// `2^64`) are refused, not wrapped.
#[test]
fn u64_overflowing_shapes_are_refused() {
    assert_eq!(mm(u32::MAX, u32::MAX, u32::MAX, u32::MAX).validate(), Err(ShapeError::TooLarge));
    assert_eq!(mm(1 << 22, 1 << 22, 1 << 22, 1 << 22).validate(), Err(ShapeError::TooLarge));
    let mut g = Graph::<8>::new();
    assert_eq!(
        g.push("huge", mm(1 << 22, 1 << 22, 1 << 22, 1 << 22)),
        Err(GraphError::Shape { layer: 0, error: ShapeError::TooLarge })
    );
}

#[test]
fn bad_names() {
    let mut g = Graph::<8>::new();
    let long = "x".repeat(LAYER_NAME_CAPACITY + 1);
    assert_eq!(g.push(&long, mm(8, 8, 8, 1)), Err(GraphError::NameTooLong { layer: 0 }));
    g.push(&long[..LAYER_NAME_CAPACITY], mm(8, 8, 8, 1)).unwrap();
    g.push("a", mm(8, 8, 8, 1)).unwrap();
    assert_eq!(g.push("a", mm(8, 8, 8, 1)), Err(GraphError::DuplicateName { layer: 2 }));
}

#[test]
fn empty_and_invalid_decoded_graphs() {
    let empty = Graph::<8>::new();
    assert_eq!(empty.validate(), Err(GraphError::Empty));
    assert_eq!(build(&empty, &presets::stress_gpu()).unwrap_err(), BuildError::Graph(GraphError::Empty));

    // A graph that arrives as bytes skips `push`: encode a valid one-layer
    // graph and zero its `m`. Postcard lays it out as: layer count, name
    // length, name bytes, variant index (0 = MatMul), then m, n, k, batch as
    // varints (each 1 here, one byte), the dtype index and the
    // transposed-B flag; then the count of input lists and each list (its
    // length, then its layers as varints): here one empty list.
    let mut g = Graph::<8>::new();
    g.push("mm", mm(1, 1, 1, 1)).unwrap();
    let mut buf = [0u8; 256];
    let bytes = wire::to_slice(&g, &mut buf).unwrap().to_vec();
    let m_at = wire::HEADER_LEN + 1 + 1 + 2 + 1;
    assert_eq!(&bytes[m_at - 1..], &[0, 1, 1, 1, 1, 0, 0, 1, 0]);
    // The flag set on a matmul that reads no layer's output: refused.
    let mut b = bytes.clone();
    b[m_at + 5] = 1;
    let bad: Graph<8> = wire::from_bytes(&b).unwrap();
    assert_eq!(bad.validate(), Err(GraphError::NotTransposable { layer: 0 }));
    assert_eq!(
        build(&bad, &presets::stress_gpu()).unwrap_err(),
        BuildError::Graph(GraphError::NotTransposable { layer: 0 })
    );
    for (offset, dim) in [(0, "m"), (1, "n"), (2, "k"), (3, "batch")] {
        let mut b = bytes.clone();
        b[m_at + offset] = 0;
        let bad: Graph<8> = wire::from_bytes(&b).unwrap();
        let expected = GraphError::Shape { layer: 0, error: ShapeError::ZeroDimension(dim) };
        assert_eq!(bad.validate(), Err(expected));
        assert_eq!(build(&bad, &presets::stress_gpu()).unwrap_err(), BuildError::Graph(expected));
    }
    // Two layers of the same name, decoded.
    let mut g2 = Graph::<8>::new();
    g2.push("mm", mm(1, 1, 1, 1)).unwrap();
    g2.push("mn", mm(1, 1, 1, 1)).unwrap();
    let mut b = wire::to_slice(&g2, &mut buf).unwrap().to_vec();
    // After the second name: its op (6 bytes), its flag (1) and the input
    // lists (count 2, an empty list, a list of layer 0: 4 bytes).
    let second_name = b.len() - 4 - 1 - 6 - 1;
    assert_eq!(b[second_name], b'n');
    b[second_name] = b'm';
    let dup: Graph<8> = wire::from_bytes(&b).unwrap();
    assert_eq!(dup.validate(), Err(GraphError::DuplicateName { layer: 1 }));

    // Inputs, decoded: the second layer's input (the last byte) made
    // itself, then a later layer; the lists cut to one; a list doubled.
    let b = wire::to_slice(&g2, &mut buf).unwrap().to_vec();
    assert_eq!(&b[b.len() - 4..], &[2, 0, 1, 0]);
    for input in [1u8, 5] {
        let mut bad = b.clone();
        *bad.last_mut().unwrap() = input;
        let bad: Graph<8> = wire::from_bytes(&bad).unwrap();
        let expected = GraphError::InputNotEarlier { layer: 1, input: input as usize };
        assert_eq!(bad.validate(), Err(expected));
        assert_eq!(build(&bad, &presets::stress_gpu()).unwrap_err(), BuildError::Graph(expected));
    }
    let mut short = b[..b.len() - 4].to_vec();
    short.extend_from_slice(&[1, 0]);
    let short: Graph<8> = wire::from_bytes(&short).unwrap();
    assert_eq!(short.validate(), Err(GraphError::InputLists { layers: 2, lists: 1 }));
    let mut doubled = b[..b.len() - 2].to_vec();
    doubled.extend_from_slice(&[2, 0, 0]);
    let doubled: Graph<8> = wire::from_bytes(&doubled).unwrap();
    assert_eq!(doubled.validate(), Err(GraphError::DuplicateInput { layer: 1, input: 0 }));
}

#[test]
fn graph_inputs() {
    let op = mm(8, 8, 8, 1);
    let mut g = Graph::<8>::new();
    g.push("a", op).unwrap();
    g.push("b", op).unwrap();
    assert!(g.is_chain());
    g.push_with_inputs("c", op, &[0, 1]).unwrap();
    assert!(!g.is_chain());
    assert_eq!(g.inputs(2), &[0, 1]);
    assert!(g.has_consumers(0) && g.has_consumers(1) && !g.has_consumers(2));
    let edges: Vec<(usize, usize)> = g.edges().map(|e| (e.from, e.to)).collect();
    assert_eq!(edges, [(0, 1), (0, 2), (1, 2)]);
    assert_eq!(g.edge_count(), 3);
    // Refused: a later layer, the layer itself, a duplicate, too many.
    assert_eq!(g.push_with_inputs("d", op, &[4]), Err(GraphError::InputNotEarlier { layer: 3, input: 4 }));
    assert_eq!(g.push_with_inputs("d", op, &[3]), Err(GraphError::InputNotEarlier { layer: 3, input: 3 }));
    assert_eq!(g.push_with_inputs("d", op, &[1, 0, 1]), Err(GraphError::DuplicateInput { layer: 3, input: 1 }));
    assert_eq!(g.push_with_inputs("d", op, &[0, 1, 2, 0, 1]), Err(GraphError::TooManyInputs { layer: 3 }));
    assert_eq!(g.len(), 3);
    // A second model input: a layer with none.
    g.push_with_inputs("d", op, &[]).unwrap();
    g.push_with_inputs("e", op, &[3, 2, 0, 1]).unwrap();
    assert_eq!(g.validate(), Ok(()));
    assert_eq!(g.edge_count(), 7);
    // Round trip through the wire format.
    let mut buf = [0u8; <Graph<8> as Message>::MAX_ENCODED_LEN];
    let bytes = wire::to_slice(&g, &mut buf).unwrap().to_vec();
    assert_eq!(wire::from_bytes::<Graph<8>>(&bytes), Ok(g));
}

// ---------------------------------------------------------------------
// Schedule bytes.

fn schedule_bytes() -> Vec<u8> {
    let p = build(&attention(), &presets::stress_gpu()).unwrap();
    let (e, _) = exact::solve::<_, 8, 1>(&p).unwrap();
    let s = Schedule::from_solution(&p, &e).unwrap();
    assert_eq!(s.choices.len(), 6);
    let mut buf = vec![0u8; Schedule::<8>::MAX_ENCODED_LEN];
    wire::to_slice(&s, &mut buf).unwrap().to_vec()
}

#[test]
fn corrupt_schedule_bytes() {
    let bytes = schedule_bytes();
    let decoded: Schedule<8> = wire::from_bytes(&bytes).unwrap();
    assert_eq!(decoded.choices.len(), 6);

    assert_eq!(wire::from_bytes::<Schedule<8>>(&[]), Err(WireError::Truncated));
    assert_eq!(wire::from_bytes::<Schedule<8>>(&[WIRE_VERSION]), Err(WireError::Truncated));
    assert_eq!(wire::from_bytes::<Schedule<8>>(&[WIRE_VERSION, 1]), Err(WireError::UnexpectedEnd));
    for len in 2..bytes.len() {
        assert_eq!(wire::from_bytes::<Schedule<8>>(&bytes[..len]), Err(WireError::UnexpectedEnd), "{len}");
    }
    let mut b = bytes.clone();
    b[0] = WIRE_VERSION + 1;
    assert_eq!(wire::from_bytes::<Schedule<8>>(&b), Err(WireError::UnsupportedVersion { found: WIRE_VERSION + 1 }));
    b[0] = 1;
    assert_eq!(wire::from_bytes::<Schedule<8>>(&b), Err(WireError::UnsupportedVersion { found: 1 }));
    let mut b = bytes.clone();
    b[1] = 3;
    assert_eq!(wire::from_bytes::<Schedule<8>>(&b), Err(WireError::WrongKind { found: 3 }));
    let mut b = bytes.clone();
    b.push(0);
    assert_eq!(wire::from_bytes::<Schedule<8>>(&b), Err(WireError::TrailingBytes));

    // An out-of-range enum variant: the first choice's placement. Layout
    // of a choice: index (varint), tile m, n, k (varints), warps_m, warps_n,
    // stages, split_k, pingpong (one byte each), placement, layout (variant
    // indices), then two f32.
    let s = &decoded.choices[0];
    let varint_len = |v: u16| {
        if v < 128 {
            1
        } else if v < 16_384 {
            2
        } else {
            3
        }
    };
    let at = 2
        + 1
        + varint_len(s.index)
        + [s.state.tile.m, s.state.tile.n, s.state.tile.k].map(varint_len).iter().sum::<usize>()
        + 5;
    assert_eq!(bytes[at], s.state.placement as u8);
    // One past the last placement (`Epilogue`, variant 4).
    let mut b = bytes.clone();
    b[at] = Placement::Epilogue as u8 + 1;
    assert_eq!(wire::from_bytes::<Schedule<8>>(&b), Err(WireError::Malformed));
    let mut b = bytes.clone();
    b[at + 1] = 0x7f;
    assert_eq!(wire::from_bytes::<Schedule<8>>(&b), Err(WireError::Malformed));

    // More choices than the capacity: a schedule of 6 into Schedule<4>.
    assert_eq!(wire::from_bytes::<Schedule<4>>(&bytes), Err(WireError::Malformed));
    // A choice count far beyond the bytes.
    let mut b = bytes.clone();
    b[2] = 0x7f;
    assert!(wire::from_bytes::<Schedule<8>>(&b).is_err());

    // Too small an output buffer.
    let mut small = vec![0u8; bytes.len() - 1];
    assert_eq!(wire::to_slice(&decoded, &mut small).map(|b| b.len()), Err(WireError::BufferTooSmall));

    // Each error has a message.
    for e in [
        WireError::BufferTooSmall,
        WireError::Truncated,
        WireError::UnsupportedVersion { found: 2 },
        WireError::WrongKind { found: 9 },
        WireError::CostModelVersion { found: 5, expected: 6 },
        WireError::UnexpectedEnd,
        WireError::Malformed,
        WireError::TrailingBytes,
    ] {
        assert!(!e.to_string().is_empty());
    }
}

#[test]
fn coefficients_of_another_cost_model_are_refused() {
    let k = Coefficients::default();
    let mut buf = vec![0u8; Coefficients::MAX_ENCODED_LEN];
    let bytes = wire::to_slice(&k, &mut buf).unwrap().to_vec();
    assert_eq!(Coefficients::HEADER_LEN, wire::HEADER_LEN + 1);
    assert_eq!(bytes[..3], [WIRE_VERSION, wire::Kind::Coefficients as u8, COEFFICIENTS_VERSION]);
    assert_eq!(wire::from_bytes::<Coefficients>(&bytes), Ok(k));

    // Another cost model's version byte, older or newer.
    for found in [0, COEFFICIENTS_VERSION - 1, COEFFICIENTS_VERSION + 1, 0xff] {
        let mut b = bytes.clone();
        b[2] = found;
        let e = wire::from_bytes::<Coefficients>(&b).unwrap_err();
        assert_eq!(e, WireError::CostModelVersion { found, expected: COEFFICIENTS_VERSION });
        assert_eq!(
            e.to_string(),
            format!("coefficients of cost model version {found}; this build reads version {COEFFICIENTS_VERSION}")
        );
    }
    // The header without the cost model's byte ends early.
    assert_eq!(wire::from_bytes::<Coefficients>(&bytes[..2]), Err(WireError::UnexpectedEnd));
    // Version 1 of the format had no cost model's byte: refused by version.
    let mut v1 = vec![1, wire::Kind::Coefficients as u8];
    v1.extend_from_slice(&bytes[3..]);
    assert_eq!(wire::from_bytes::<Coefficients>(&v1), Err(WireError::UnsupportedVersion { found: 1 }));
    // Too small a buffer for the longer header.
    assert_eq!(wire::to_slice(&k, &mut [0u8; 2]).map(|b| b.len()), Err(WireError::BufferTooSmall));
    // The other messages keep the 2-byte header.
    assert_eq!(Schedule::<8>::HEADER_LEN, wire::HEADER_LEN);
    assert_eq!(HardwareSpec::HEADER_LEN, wire::HEADER_LEN);
    assert_eq!(Graph::<8>::HEADER_LEN, wire::HEADER_LEN);
}

#[test]
fn from_solution_rejects_a_foreign_solution() {
    let p = build(&attention(), &presets::stress_gpu()).unwrap();
    let (mut e, _) = exact::solve::<_, 8, 1>(&p).unwrap();
    e.states[0] = 1000;
    assert!(Schedule::from_solution(&p, &e).is_none());
}

// ---------------------------------------------------------------------
// Models, coefficients, empty problems.

#[test]
fn unknown_model() {
    for name in ["", "gpt3", "Attention", "attention ", "llama3-8b"] {
        assert_eq!(models::builtin::<8>(name, None), Err(ModelError::Unknown), "{name:?}");
    }
    assert_eq!(ModelError::Unknown.to_string(), "unknown model");
    // Every built-in model fits the host's capacity (the Mixtral-style
    // expert fan-out holds 44 layers).
    for name in models::NAMES {
        assert!(models::builtin::<64>(name, None).is_ok(), "{name}");
    }
    // The full Llama 3 graph holds ten layers.
    assert_eq!(
        models::builtin::<8>("llama3-8b-dag", None),
        Err(ModelError::Graph(hwwfc_core::graph::GraphError::TooManyLayers { capacity: 8 }))
    );
}

#[test]
fn non_positive_coefficients_are_named() {
    let graph = attention();
    let spec = presets::stress_gpu();
    for (i, name) in COEFFICIENT_NAMES.iter().enumerate() {
        for bad in [0.0, -0.0, -1.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let mut a = Coefficients::default().to_array();
            a[i] = bad;
            let k = Coefficients::from_array(a);
            assert_eq!(k.validate(), Err(*name));
            let err = ScheduleProblem::<8, 1>::build(&graph, &spec, &k).unwrap_err();
            assert_eq!(err, BuildError::Coefficient(name));
            assert!(err.to_string().contains(name));
        }
    }
    assert_eq!(COEFFICIENT_NAMES.len(), COEFFICIENT_COUNT);
    assert_eq!(Coefficients::from_array(Coefficients::default().to_array()), Coefficients::default());
}

#[test]
fn empty_problem() {
    let p = DenseProblem::new(&[]);
    assert_eq!(Problem::<1>::layer_count(&p), 0);
    assert_eq!(wfc::solve::<_, 8, 1>(&p, &Default::default()).unwrap_err(), SolveError::Empty);
    assert_eq!(exact::solve::<_, 8, 1>(&p).unwrap_err(), SolveError::Empty);
    assert_eq!(exhaustive::solve::<_, 8, 1>(&p, 10).unwrap_err(), SolveError::Empty);
}

#[test]
fn non_finite_costs_are_refused() {
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let mut p = DenseProblem::new(&[2, 2, 2]);
        p.set_unary(1, 1, bad);
        assert_eq!(exact::solve::<_, 8, 1>(&p).unwrap_err(), SolveError::NonFiniteCost { layer: 1 });
        assert_eq!(wfc::solve::<_, 8, 1>(&p, &Default::default()).unwrap_err(), SolveError::NonFiniteCost { layer: 1 });
        assert_eq!(exhaustive::solve::<_, 8, 1>(&p, 10).unwrap_err(), SolveError::NonFiniteCost { layer: 1 });
        // A state outside the domain may cost anything.
        p.allowed[1][1] = false;
        assert!(exact::solve::<_, 8, 1>(&p).is_ok());
        assert!(wfc::solve::<_, 8, 1>(&p, &Default::default()).is_ok());
    }
}

#[test]
fn overflowing_totals_are_typed_errors() {
    // Every unary cost is finite, but any schedule's total overflows f32:
    // the problem is feasible, and no solver may call it infeasible or
    // return an infinite cost.
    let mut p = DenseProblem::new(&[2, 2]);
    for l in 0..2 {
        for s in 0..2 {
            p.set_unary(l, s, f32::MAX);
        }
    }
    assert_eq!(exact::solve::<_, 8, 1>(&p).unwrap_err(), SolveError::NonFiniteCost { layer: 1 });
    assert_eq!(wfc::solve::<_, 8, 1>(&p, &Default::default()).unwrap_err(), SolveError::NonFiniteCost { layer: 1 });
    assert_eq!(exhaustive::solve::<_, 8, 1>(&p, 100).unwrap_err(), SolveError::NonFiniteCost { layer: 1 });
}

#[test]
fn non_finite_transitions_never_reach_a_schedule() {
    for bad in [f32::NAN, f32::INFINITY] {
        // The only compatible pair costs NaN (or infinity).
        let mut p = DenseProblem::new(&[2, 2]);
        p.forbid_all(0);
        p.set_compatible(0, 1, 0, true);
        p.set_transition(0, 1, 0, bad);
        assert_eq!(exact::solve::<_, 8, 1>(&p).unwrap_err(), SolveError::NonFiniteCost { layer: 1 });
        assert_eq!(wfc::solve::<_, 8, 1>(&p, &Default::default()).unwrap_err(), SolveError::NonFiniteCost { layer: 1 });
        assert_eq!(exhaustive::solve::<_, 8, 1>(&p, 100).unwrap_err(), SolveError::NonFiniteCost { layer: 1 });

        // The lexicographically first schedule costs NaN, another costs 1:
        // the optimum over finite schedules is 1.
        let mut p = DenseProblem::new(&[2, 2]);
        p.set_transition(0, 0, 0, bad);
        p.set_transition(0, 0, 1, bad);
        p.set_transition(0, 1, 0, bad);
        p.set_transition(0, 1, 1, 1.0);
        assert_eq!(exact::solve::<_, 8, 1>(&p).unwrap().0.cost, 1.0);
        assert_eq!(exhaustive::solve::<_, 8, 1>(&p, 100).unwrap().cost, 1.0);
        match wfc::solve::<_, 8, 1>(&p, &Default::default()) {
            Ok((w, _)) => assert!(w.cost.is_finite(), "{w:?}"),
            Err(e) => assert_eq!(e, SolveError::NonFiniteCost { layer: 1 }),
        }
    }
}

#[test]
fn every_error_has_a_message() {
    let build_errors = [
        BuildError::Spec(SpecError::EmptyName),
        BuildError::Graph(GraphError::Empty),
        BuildError::Coefficient("launch_scale"),
        BuildError::TooManyStates { layer: 0, states: 480, capacity: 64 },
        BuildError::TooManyLayers { capacity: 8 },
        BuildError::Infeasible { layer: 2, constraint: Constraint::WorkingMemory },
        BuildError::NonFiniteCost { layer: 1 },
    ];
    for e in build_errors {
        assert!(!e.to_string().is_empty());
    }
    assert!(BuildError::Infeasible { layer: 2, constraint: Constraint::WorkingMemory }
        .to_string()
        .contains("working_memory"));
    let solve_errors = [
        SolveError::Empty,
        SolveError::TooManyLayers { capacity: 4 },
        SolveError::Infeasible { layer: 0 },
        SolveError::BacktrackLimit { limit: 64 },
        SolveError::NonFiniteCost { layer: 0 },
        SolveError::TooManyCombinations { limit: 10 },
    ];
    for e in solve_errors {
        assert!(!e.to_string().is_empty());
    }
    for e in [
        GraphError::NameTooLong { layer: 0 },
        GraphError::DuplicateName { layer: 1 },
        GraphError::TooManyLayers { capacity: 4 },
        GraphError::InputNotEarlier { layer: 1, input: 2 },
        GraphError::TooManyInputs { layer: 1 },
        GraphError::DuplicateInput { layer: 1, input: 0 },
        GraphError::InputLists { layers: 2, lists: 1 },
    ] {
        assert!(!e.to_string().is_empty());
    }
    for e in [ShapeError::TooLarge, ShapeError::ZeroDimension("m")] {
        assert!(!e.to_string().is_empty());
    }
}
