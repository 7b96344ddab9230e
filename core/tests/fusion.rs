//! Elementwise layers and epilogue fusion: the built-in real graphs, where
//! the graph allows an epilogue state, the adjacency rule on the fusing
//! edge, the cost of a fused layer against its own kernel, and the solvers
//! against the exhaustive oracle on small graphs with fusion.

mod support;

use hwwfc_core::constraint::{self, Constraint};
use hwwfc_core::cost::{self, Coefficients};
use hwwfc_core::graph::Graph;
use hwwfc_core::space::{self, SpaceKind};
use hwwfc_core::wfc::WfcConfig;
use hwwfc_core::{exact, exhaustive, models, presets, wfc};
use hwwfc_core::{DType, ElementwiseKind, HardwareSpec, Op, OpKind, Placement, Problem, ScheduleProblem};

const L: usize = 64;

/// An H200's limits in the Hopper space.
fn hopper() -> HardwareSpec {
    support::hopper_limits()
}

fn mm(m: u32, n: u32, k: u32) -> Op {
    Op::MatMul { m, n, k, batch: 1, dtype: DType::F16 }
}

fn ew(kind: ElementwiseKind, rows: u32, cols: u32) -> Op {
    Op::Elementwise { kind, rows, cols, dtype: DType::F16 }
}

/// The index of the epilogue state in an elementwise table.
fn fused_index(space: SpaceKind) -> u16 {
    space::index_of(space, OpKind::Elementwise, &space::FUSED).unwrap()
}

fn layer_index<const N: usize>(g: &Graph<N>, name: &str) -> usize {
    g.layers().iter().position(|l| l.name.as_str() == name).unwrap()
}

#[test]
fn the_real_graphs_have_their_layers_and_edges() {
    // (model, layers, edges, elementwise layers)
    for (name, layers, edges, elementwise) in [
        ("llama3-8b-graph", 15, 18, 5),
        ("gpt2-graph", 12, 13, 5),
        ("vit-b16-graph", 14, 16, 5),
        ("mixtral-moe-graph", 44, 59, 18),
        ("llama3-8b-mlp-graph", 6, 6, 3),
    ] {
        let g = models::builtin::<L>(name, None).unwrap();
        assert_eq!(g.len(), layers, "{name}");
        assert_eq!(g.edge_count(), edges, "{name}");
        let count = g.layers().iter().filter(|l| l.op.kind() == OpKind::Elementwise).count();
        assert_eq!(count, elementwise, "{name}");
        assert!(!g.is_chain(), "{name}");
        assert_eq!(g.validate(), Ok(()));
    }
}

#[test]
fn an_epilogue_state_is_kept_only_where_the_graph_allows_fusion() {
    let spec = hopper();
    let g = models::builtin::<L>("llama3-8b-graph", Some(256)).unwrap();
    let p = ScheduleProblem::<L, 14>::build(&g, &spec, &Coefficients::default()).unwrap();
    let fused = fused_index(SpaceKind::Hopper);
    for (name, kept) in [
        ("attn_residual", true),
        ("silu_mul", true),
        ("mlp_residual", true),
        // A norm needs whole rows, and the first norm reads the model's input.
        ("attn_norm", false),
        ("mlp_norm", false),
    ] {
        let plan = p.layer(layer_index(&g, name)).unwrap();
        assert_eq!(plan.domain.contains(fused), kept, "{name}");
    }

    // The output projection read by a second layer: its add may not fuse.
    let mut g = Graph::<L>::new();
    g.push_with_inputs("o_proj", mm(256, 4096, 4096), &[]).unwrap();
    g.push_with_inputs("add", ew(ElementwiseKind::Add, 256, 4096), &[0]).unwrap();
    g.push_with_inputs("other", mm(256, 1024, 4096), &[0]).unwrap();
    let p = ScheduleProblem::<L, 14>::build(&g, &spec, &Coefficients::default()).unwrap();
    let add = p.layer(1).unwrap();
    assert!(!add.domain.contains(fused));
    assert_eq!(add.removed[Constraint::Fusion.index()], 1);

    // A shape that differs from the matmul's output: no fusion either.
    let mut g = Graph::<L>::new();
    g.push_with_inputs("proj", mm(256, 4096, 4096), &[]).unwrap();
    g.push_with_inputs("add", ew(ElementwiseKind::Add, 128, 4096), &[0]).unwrap();
    let p = ScheduleProblem::<L, 14>::build(&g, &spec, &Coefficients::default()).unwrap();
    assert!(!p.layer(1).unwrap().domain.contains(fused));
}

#[test]
fn the_fusing_edge_allows_the_epilogue_only_after_a_state_that_can_fuse() {
    for spec in [hopper(), presets::stress_gpu()] {
        let mut g = Graph::<L>::new();
        g.push_with_inputs("norm", ew(ElementwiseKind::Norm, 512, 1024), &[]).unwrap();
        g.push_with_inputs("proj", mm(512, 1024, 1024), &[0]).unwrap();
        g.push_with_inputs("add", ew(ElementwiseKind::Add, 512, 1024), &[1, 0]).unwrap();
        let p = ScheduleProblem::<L, 14>::build(&g, &spec, &Coefficients::default()).unwrap();
        let fused = fused_index(spec.space);
        let proj = p.layer(1).unwrap();
        let (mut can, mut cannot) = (0, 0);
        let into_add = (0..p.edge_count()).map(|e| (e, p.edge(e).unwrap())).filter(|(_, edge)| edge.to == 2);
        for (e, edge) in into_add {
            for a in p.domain(edge.from).iter() {
                let ok = p.compatible(e, a, fused);
                if (edge.from, edge.to) == (1, 2) {
                    assert_eq!(ok, constraint::can_fuse(&proj.op, proj.state(a).unwrap()));
                    if ok {
                        can += 1;
                    } else {
                        cannot += 1;
                    }
                } else {
                    // The residual operand's edge: any producer state.
                    assert!(ok);
                }
            }
        }
        assert!(can > 0, "{}", spec.name);
        // Split-K states (Hopper) and column-major or tiled outputs
        // (tiles space) cannot fuse.
        assert!(cannot > 0, "{}", spec.name);
    }
}

#[test]
fn a_fused_layer_costs_less_than_its_own_kernel() {
    let spec = hopper();
    let k = Coefficients::default();
    for kind in [ElementwiseKind::Add, ElementwiseKind::SiluMul, ElementwiseKind::Gelu] {
        let op = ew(kind, 2048, 4096);
        let table = space::states(SpaceKind::Hopper, OpKind::Elementwise);
        let own = table
            .iter()
            .filter(|s| s.placement != Placement::Epilogue && constraint::check(&spec, &op, s).is_ok())
            .map(|s| cost::unary_cost(&spec, &k, &op, s))
            .fold(f32::INFINITY, f32::min);
        let fused = cost::unary_cost(&spec, &k, &op, &space::FUSED);
        assert!(fused.is_finite() && fused > 0.0, "{kind:?}");
        assert!(fused < own, "{kind:?}: fused {fused} us, own kernel {own} us");
        // Its own kernel reads every operand and writes the output once.
        let bytes = (kind.operands() + 1) as f32 * 2048.0 * 4096.0 * 2.0;
        assert!(own >= bytes / spec.dram_bytes_per_us(), "{kind:?}");
    }
    // A norm may not run in an epilogue at all.
    let norm = ew(ElementwiseKind::Norm, 2048, 4096);
    assert_eq!(constraint::check(&spec, &norm, &space::FUSED), Err(Constraint::Geometry));
    // Nor may a matmul or a softmax take the epilogue state.
    assert_eq!(constraint::check(&spec, &mm(64, 64, 64), &space::FUSED), Err(Constraint::Geometry));
}

#[test]
fn the_solvers_agree_with_the_oracle_on_small_graphs_with_fusion() {
    use ElementwiseKind::{Add, Gelu, Norm};
    // A pre-norm MLP with its residual: norm -> fc -> gelu -> proj -> add,
    // the add also reading the norm's input side (the norm), on the tiles
    // space where layouts make the edges cost and the fusion a real choice.
    for (spec, seq) in [(presets::stress_gpu(), 64), (presets::toy_gpu(), 128)] {
        let mut g = Graph::<L>::new();
        g.push_with_inputs("norm", ew(Norm, seq, 256), &[]).unwrap();
        g.push_with_inputs("fc", mm(seq, 256, 256), &[0]).unwrap();
        g.push_with_inputs("gelu", ew(Gelu, seq, 256), &[1]).unwrap();
        g.push_with_inputs("add", ew(Add, seq, 256), &[2, 0]).unwrap();
        let p = ScheduleProblem::<L, 1>::build(&g, &spec, &Coefficients::default()).unwrap();
        let oracle = exhaustive::solve::<_, L, 1>(&p, 10_000_000).unwrap();
        let (best, _) = exact::solve::<_, L, 1>(&p).unwrap();
        assert!(
            (best.cost - oracle.cost).abs() <= 1e-4 * oracle.cost,
            "{}: {} vs {}",
            spec.name,
            best.cost,
            oracle.cost
        );
        let (w, _) = wfc::solve::<_, L, 1>(&p, &WfcConfig::default()).unwrap();
        assert!(w.cost >= oracle.cost * (1.0 - 1e-5));
        // The optimum fuses the GELU (fusable: fc's only reader, its shape).
        let gelu = p.layer(2).unwrap();
        assert_eq!(gelu.state(best.states[2]).unwrap().placement, Placement::Epilogue, "{}", spec.name);
    }
}

#[test]
fn a_fused_epilogue_does_its_arithmetic_at_the_row_kernels_rate() {
    // SiLU-times-gate reads one more operand and does 7 operations per
    // element; the add reads one more operand and does 1. Halving the row
    // kernels' share of the CUDA cores' rate adds the arithmetic's time
    // once more, and nothing to the memory's.
    let spec = hopper();
    let fused = space::FUSED;
    for (kind, ops) in [(ElementwiseKind::SiluMul, 7.0f32), (ElementwiseKind::Add, 1.0)] {
        let op = ew(kind, 2048, 14336);
        let full = Coefficients { softmax_efficiency: 1.0, ..Coefficients::default() };
        let half = Coefficients { softmax_efficiency: 0.5, ..Coefficients::default() };
        let t_full = cost::unary_cost(&spec, &full, &op, &fused);
        let t_half = cost::unary_cost(&spec, &half, &op, &fused);
        let arithmetic = 2048.0 * 14336.0 * ops / (spec.peak_tflops.f32 * 1.0e6);
        assert!(((t_half - t_full) - arithmetic).abs() < 1e-3 * t_full, "{kind:?}: {t_full} {t_half} {arithmetic}");
    }
}
