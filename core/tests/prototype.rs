//! The prototype's results on the attention benchmark, and agreement of
//! WFC with exact DP on the virtual and the H200-like specs.

use hwwfc_core::built::LayerPlan;
use hwwfc_core::constraint::{self, Constraint};
use hwwfc_core::layer::Op;
use hwwfc_core::problem::evaluate;
use hwwfc_core::space::{self, SpaceKind};
use hwwfc_core::spec::PeakCompute;
use hwwfc_core::state::Tile;
use hwwfc_core::{
    exact, exhaustive, models, presets, wfc, Coefficients, Graph, HardwareSpec, Placement, ScheduleProblem,
};

fn attention(spec: &HardwareSpec) -> ScheduleProblem<8, 1> {
    let graph = models::builtin::<8>("attention", None).expect("attention model");
    ScheduleProblem::<8, 1>::build(&graph, spec, &Coefficients::default()).expect("attention builds")
}

fn layer_names(graph: &Graph<8>) -> Vec<String> {
    graph.layers().iter().map(|l| l.name.as_str().to_owned()).collect()
}

/// The figures of `specs/h200.json`, written out by hand.
fn h200() -> HardwareSpec {
    HardwareSpec {
        name: heapless::String::try_from("h200").unwrap(),
        space: SpaceKind::Cuda,
        sram_per_block_bytes: 232_448,
        sram_per_sm_bytes: 233_472,
        alignment_bytes: 16,
        dram_bandwidth_gbps: 4800.0,
        peak_tflops: PeakCompute { f16: 989.4, bf16: 989.4, f32: 66.9 },
        sm_count: 132,
        l2_bytes: 62_914_560,
        launch_overhead_us: 3.0,
        max_threads_per_block: 1024,
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        registers_per_sm: 65_536,
    }
}

fn softmax_plan(p: &ScheduleProblem<8, 1>) -> &LayerPlan<1> {
    let graph = models::builtin::<8>("attention", None).unwrap();
    let i = layer_names(&graph).iter().position(|n| n == "softmax").expect("softmax layer");
    p.layer(i).unwrap()
}

#[test]
fn attention_has_six_layers_and_the_documented_space() {
    let graph = models::builtin::<8>("attention", None).unwrap();
    assert_eq!(layer_names(&graph), ["in_proj", "qk_scores", "softmax", "attn_values", "out_proj", "ffn_up"]);
    let p = attention(&presets::stress_gpu());
    // in_proj has k = 128, so its 256-wide DRAM tiles do not apply: 33.
    assert_eq!(p.layer(0).unwrap().candidates.len(), 33);
    for l in &p.layers()[1..] {
        assert_eq!(l.candidates.len(), 36);
    }
    assert_eq!(p.space_combinations(), 33 * 36u128.pow(5));
    // The toy spec has the same candidates.
    assert_eq!(attention(&presets::toy_gpu()).space_combinations(), 33 * 36u128.pow(5));
}

#[test]
fn stress_gpu_softmax_16_others_32() {
    let graph = models::builtin::<8>("attention", None).unwrap();
    let p = attention(&presets::stress_gpu());
    let (w, _) = wfc::solve::<_, 8, 1>(&p, &wfc::WfcConfig::default()).unwrap();
    let (e, _) = exact::solve::<_, 8, 1>(&p).unwrap();
    for sol in [&w, &e] {
        for (i, name) in layer_names(&graph).iter().enumerate() {
            let s = p.layer(i).unwrap().state(sol.states[i]).unwrap();
            let side = if name == "softmax" { 16 } else { 32 };
            assert_eq!((s.tile.m, s.tile.n), (side, side), "layer {name}");
        }
    }
}

#[test]
fn stress_gpu_softmax_32_sram_needs_16_kb_of_working_memory() {
    let spec = presets::stress_gpu();
    assert_eq!(spec.sram_per_block_bytes, 12 * 1024);
    let p = attention(&spec);
    let plan = softmax_plan(&p);
    let mut seen = 0;
    for (s, state) in plan.states.iter().enumerate() {
        if state.tile.m != 32 || state.tile.n != 32 {
            continue;
        }
        let verdict = constraint::check(&spec, &plan.op, state);
        if state.placement == Placement::Sram {
            // 32 x 32 fp32 = 4 KB, x4 for the working memory = 16 KB > 12 KB,
            // while the tile alone (4 KB) fits: only WorkingMemory removes it.
            let usage = hwwfc_core::resource::usage(&plan.op, state);
            assert_eq!(usage.sram_bytes, 4 * 1024);
            assert_eq!(verdict, Err(Constraint::WorkingMemory));
            assert!(!plan.domain.contains(s as u16));
            seen += 1;
        } else {
            assert_eq!(verdict, Ok(()));
            assert!(plan.domain.contains(s as u16));
        }
    }
    assert_eq!(seen, 3, "one 32x32 SRAM state per layout");
    assert_eq!(plan.removed[Constraint::WorkingMemory.index()], 3);
    // On toy_gpu (64 KB) the same states pass.
    let toy = presets::toy_gpu();
    for state in plan.states.iter().filter(|s| s.tile.m == 32 && s.placement == Placement::Sram) {
        assert_eq!(constraint::check(&toy, &plan.op, state), Ok(()));
    }
}

#[test]
fn toy_gpu_removes_softmax_8_and_16_by_alignment() {
    let spec = presets::toy_gpu();
    assert_eq!(spec.alignment_bytes, 128);
    let p = attention(&spec);
    let plan = softmax_plan(&p);
    assert!(matches!(plan.op, Op::Softmax { dtype: hwwfc_core::DType::F32, .. }));
    let mut small = 0;
    for (s, state) in plan.states.iter().enumerate() {
        let verdict = constraint::check(&spec, &plan.op, state);
        if state.tile.n <= 16 {
            // 8 or 16 fp32 = 32 or 64 bytes, not a multiple of 128.
            assert_eq!(verdict, Err(Constraint::Alignment), "{state:?}");
            assert!(!plan.domain.contains(s as u16));
            small += 1;
        } else {
            assert_ne!(verdict, Err(Constraint::Alignment), "{state:?}");
        }
    }
    // Two sides x two placements x three layouts.
    assert_eq!(small, 12);
    assert_eq!(plan.removed[Constraint::Alignment.index()], 12);
    // Every candidate is either in the domain or counted once as removed.
    let removed: u16 = plan.removed.iter().sum();
    assert_eq!(plan.candidates.len(), plan.domain.len() + removed as usize);
}

#[test]
fn removed_counts_add_up_on_every_layer() {
    for spec in [presets::stress_gpu(), presets::toy_gpu()] {
        let p = attention(&spec);
        for (i, l) in p.layers().iter().enumerate() {
            let removed: usize = l.removed.iter().map(|&r| r as usize).sum();
            assert_eq!(l.candidates.len(), l.domain.len() + removed, "{} layer {i}", spec.name);
            // Each unary count matches constraint::check on the candidates.
            for c in Constraint::ALL.iter().filter(|c| **c != Constraint::Adjacency) {
                let n = l
                    .candidates
                    .iter()
                    .filter(|&s| constraint::check(&spec, &l.op, l.state(s).unwrap()) == Err(*c))
                    .count();
                assert_eq!(l.removed[c.index()] as usize, n, "{} layer {i} {c}", spec.name);
            }
            // Candidates are exactly the applicable states.
            for (s, state) in l.states.iter().enumerate() {
                assert_eq!(l.candidates.contains(s as u16), space::applicable(&l.op, state));
            }
        }
    }
}

#[test]
fn wfc_equals_exact_on_the_virtual_specs() {
    for spec in [presets::stress_gpu(), presets::toy_gpu()] {
        let p = attention(&spec);
        let (e, _) = exact::solve::<_, 8, 1>(&p).unwrap();
        for lookahead in [true, false] {
            let cfg = wfc::WfcConfig { lookahead, ..Default::default() };
            let (w, stats) = wfc::solve::<_, 8, 1>(&p, &cfg).unwrap();
            assert_eq!(w.states, e.states, "{} lookahead {lookahead}", spec.name);
            assert_eq!(w.cost, e.cost, "{}", spec.name);
            assert_eq!(stats.backtracks, 0);
            assert_eq!(stats.collapses, 6);
        }
        assert_eq!(evaluate(&p, &e.states), Some(e.cost));
    }
}

#[test]
fn attention_combinations_after_constraints() {
    // Documented by the example: 10 935 000 on stress_gpu, 3 359 232 on toy_gpu.
    assert_eq!(attention(&presets::stress_gpu()).combinations(), 10_935_000);
    assert_eq!(attention(&presets::toy_gpu()).combinations(), 3_359_232);
}

#[test]
fn exact_equals_exhaustive_on_a_prefix_of_attention() {
    // The first three layers: 12 x 15 x 18 combinations on stress_gpu.
    let full = models::builtin::<8>("attention", None).unwrap();
    for spec in [presets::stress_gpu(), presets::toy_gpu()] {
        let mut g = Graph::<8>::new();
        for l in &full.layers()[..3] {
            g.push(&l.name, l.op).unwrap();
        }
        let p = ScheduleProblem::<8, 1>::build(&g, &spec, &Coefficients::default()).unwrap();
        assert!(p.combinations() < 10_000);
        let o = exhaustive::solve::<_, 8, 1>(&p, 10_000).unwrap();
        let (e, _) = exact::solve::<_, 8, 1>(&p).unwrap();
        let (w, _) = wfc::solve::<_, 8, 1>(&p, &wfc::WfcConfig::default()).unwrap();
        assert!((o.cost - e.cost).abs() <= 1e-5 * o.cost, "{}: {} vs {}", spec.name, o.cost, e.cost);
        assert!((o.cost - w.cost).abs() <= 1e-5 * o.cost, "{}: {} vs {}", spec.name, o.cost, w.cost);
    }
}

#[test]
fn h200_spec_is_valid_and_matches_the_file() {
    let spec = h200();
    assert_eq!(spec.validate(), Ok(()));
    // The JSON file is the source of these figures; spot-check it without
    // a JSON parser.
    let text = include_str!("../../specs/h200.json");
    for needle in [
        "\"space\": \"hopper\"",
        "\"sram_per_block_bytes\": 232448",
        "\"sram_per_sm_bytes\": 233472",
        "\"alignment_bytes\": 16",
        "\"dram_bandwidth_gbps\": 4800.0",
        "\"f16\": 989.4",
        "\"bf16\": 989.4",
        "\"f32\": 66.9",
        "\"sm_count\": 132",
        "\"l2_bytes\": 62914560",
        "\"launch_overhead_us\": 3.0",
        "\"max_threads_per_block\": 1024",
        "\"max_threads_per_sm\": 2048",
        "\"max_blocks_per_sm\": 32",
        "\"registers_per_sm\": 65536",
    ] {
        assert!(text.contains(needle), "specs/h200.json lacks {needle}");
    }
}

#[test]
fn wfc_equals_exact_on_h200_blocks() {
    let spec = h200();
    for name in ["gpt2-block", "llama3-8b-block"] {
        let graph = models::builtin::<64>(name, None).unwrap();
        let p = ScheduleProblem::<64, 8>::build(&graph, &spec, &Coefficients::default()).unwrap();
        assert_eq!(p.layers().len(), graph.len());
        let (e, _) = exact::solve::<_, 64, 8>(&p).unwrap();
        for lookahead in [true, false] {
            let cfg = wfc::WfcConfig { lookahead, ..Default::default() };
            let (w, _) = wfc::solve::<_, 64, 8>(&p, &cfg).unwrap();
            // WFC reaches the optimum; where two schedules tie for it, it
            // may hold the other one.
            assert_eq!(w.cost, e.cost, "{name} lookahead {lookahead}");
            assert_eq!(evaluate(&p, &w.states), Some(e.cost), "{name} lookahead {lookahead}");
        }
        assert_eq!(evaluate(&p, &e.states), Some(e.cost));
        // Every chosen state is a pipelined CUDA kernel that passes the
        // unary constraints.
        for (i, &s) in e.states.iter().enumerate() {
            let l = p.layer(i).unwrap();
            let st = l.state(s).unwrap();
            assert_eq!(st.placement, Placement::Pipelined);
            assert_eq!(constraint::check(&spec, &l.op, st), Ok(()));
            assert_ne!(st.tile, Tile { m: 0, n: 0, k: 0 });
        }
    }
}
