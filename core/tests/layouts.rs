//! A matmul that reads its `B` transposed (attention's `Q K^T`): the edge
//! that carries it costs a transpose unless the consumer's kernel reads `B`
//! K-major (the Hopper matmul's TMA loads), the built-in DAGs mark their
//! scores so, the solvers price it, and the flag is refused where it
//! cannot apply.

mod support;

use hwwfc_core::cost::{self, Coefficients};
use hwwfc_core::graph::{Graph, GraphError};
use hwwfc_core::{exact, exhaustive, models, presets};
use hwwfc_core::{DType, HardwareSpec, Op, Placement, Problem, ScheduleProblem};

const L: usize = 64;

/// An H200's limits in the Hopper space.
fn hopper() -> HardwareSpec {
    support::hopper_limits()
}

fn mm(m: u32, n: u32, k: u32, batch: u32) -> Op {
    Op::MatMul { m, n, k, batch, dtype: DType::F16 }
}

/// Q and K projected from the model's input, then the scores of `heads`
/// heads of `d`, reading K transposed where `transposed`.
fn scores(seq: u32, heads: u32, d: u32, transposed: bool) -> Graph<L> {
    let mut g = Graph::new();
    g.push_with_inputs("q", mm(seq, heads * d, 256, 1), &[]).unwrap();
    g.push_with_inputs("k", mm(seq, heads * d, 256, 1), &[]).unwrap();
    g.push_with_inputs("scores", mm(seq, seq, d, heads), &[0, 1]).unwrap();
    if transposed {
        g.transpose_b(2).unwrap();
    }
    g
}

#[test]
fn the_scores_of_every_built_in_dag_read_k_transposed() {
    let mut seen = 0;
    for name in models::NAMES {
        let g = models::builtin::<L>(name, Some(256)).unwrap();
        if g.is_chain() {
            continue;
        }
        for (i, layer) in g.layers().iter().enumerate() {
            let is_scores = layer.name.as_str().contains("scores");
            assert_eq!(layer.transposed_b, is_scores, "{name}: {}", layer.name);
            for e in g.edges().filter(|e| e.to == i) {
                // Only the edge from the last input (K, or the fused QKV).
                let last = *g.inputs(i).last().unwrap() as usize == e.from;
                assert_eq!(g.edge_transposed(e), is_scores && last, "{name}: {e:?}");
            }
            seen += usize::from(is_scores);
        }
    }
    assert!(seen >= 5, "{seen}");
}

#[test]
fn a_transposed_b_costs_a_transpose_unless_the_kernel_reads_it_k_major() {
    let spec = hopper();
    let k = Coefficients::default();
    let g = scores(1024, 8, 64, true);
    let p = ScheduleProblem::<L, 16>::build(&g, &spec, &k).unwrap();
    let plain = ScheduleProblem::<L, 16>::build(&scores(1024, 8, 64, false), &spec, &k).unwrap();
    let edges: Vec<_> = (0..p.edge_count()).map(|e| p.edge(e).unwrap()).collect();
    let ek = edges.iter().position(|e| e.from == 1).unwrap();
    let eq = edges.iter().position(|e| e.from == 0).unwrap();
    assert!(p.edge_transposed(ek) && !p.edge_transposed(eq));
    assert!(!p.edge_is_free(ek) && p.edge_is_free(eq) && plain.edge_is_free(ek));
    let rewrite = cost::rewrite_cost(&spec, &k, g.layer(1).unwrap().op.output_bytes());
    let producer = p.domain(1).iter().next().unwrap();
    let consumer = p.layer(2).unwrap();
    let (mut tma, mut other) = (0, 0);
    for s in consumer.domain.iter() {
        let state = consumer.state(s).unwrap();
        let expected = if state.placement == Placement::Tma { 0.0 } else { rewrite };
        assert_eq!(p.transition(ek, producer, s), expected, "{state:?}");
        assert_eq!(p.transition(eq, producer, s), 0.0);
        assert_eq!(plain.transition(ek, producer, s), 0.0);
        if state.placement == Placement::Tma {
            tma += 1;
        } else {
            other += 1;
        }
    }
    assert!(tma > 0 && other > 0, "{tma} {other}");
    // The optimum reads K as it is, with a TMA state, at no more than the
    // problem without the transpose costs.
    let (best, _) = exact::solve::<_, L, 16>(&p).unwrap();
    let (free, _) = exact::solve::<_, L, 16>(&plain).unwrap();
    assert!(best.cost >= free.cost);
    assert_eq!(consumer.state(best.states[2]).unwrap().placement, Placement::Tma);
}

#[test]
fn without_a_kernel_that_reads_k_major_every_schedule_pays_the_transpose() {
    // No TMA on these specs: the scores' best state pays the rewrite of
    // K, and the exact solver agrees with the exhaustive oracle.
    for spec in [presets::stress_gpu(), presets::toy_gpu()] {
        let k = Coefficients::default();
        let g = scores(64, 2, 32, true);
        let p = ScheduleProblem::<L, 1>::build(&g, &spec, &k).unwrap();
        let plain = ScheduleProblem::<L, 1>::build(&scores(64, 2, 32, false), &spec, &k).unwrap();
        let oracle = exhaustive::solve::<_, L, 1>(&p, 10_000_000).unwrap();
        let (best, _) = exact::solve::<_, L, 1>(&p).unwrap();
        assert!((best.cost - oracle.cost).abs() <= 1e-4 * oracle.cost, "{}", spec.name);
        let (free, _) = exact::solve::<_, L, 1>(&plain).unwrap();
        let rewrite = cost::rewrite_cost(&spec, &k, g.layer(1).unwrap().op.output_bytes());
        assert!(best.cost > free.cost, "{}", spec.name);
        assert!(best.cost <= free.cost + rewrite * (1.0 + 1e-5), "{}", spec.name);
    }
}

#[test]
fn only_a_matmul_with_one_or_two_inputs_reads_b_transposed() {
    let mut g = Graph::<L>::new();
    g.push_with_inputs("a", mm(64, 64, 64, 1), &[]).unwrap();
    g.push_with_inputs("b", mm(64, 64, 64, 1), &[]).unwrap();
    g.push_with_inputs("c", mm(64, 64, 64, 1), &[]).unwrap();
    g.push_with_inputs("sm", Op::Softmax { rows: 64, cols: 64, dtype: DType::F32 }, &[0]).unwrap();
    g.push_with_inputs("three", mm(64, 64, 64, 1), &[0, 1, 2]).unwrap();
    g.push_with_inputs("one", mm(64, 64, 64, 1), &[2]).unwrap();
    for layer in [0, 3, 4, 9] {
        assert_eq!(g.transpose_b(layer), Err(GraphError::NotTransposable { layer }));
    }
    assert!(g.layers().iter().all(|l| !l.transposed_b));
    g.transpose_b(5).unwrap();
    assert!(g.layer(5).unwrap().transposed_b);
    assert_eq!(g.validate(), Ok(()));
    assert!(GraphError::NotTransposable { layer: 3 }.to_string().contains("transposed"));
}
