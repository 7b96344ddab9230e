//! A schedule as the kernels it runs: one per layer, except an elementwise
//! layer scheduled in its producer's epilogue ([`Placement::Epilogue`]),
//! which runs inside that matmul's kernel (the matmul's workload and
//! configuration carry the operation, and its name becomes
//! `producer+layer`). A matmul that reads its `B` transposed gets it
//! K-major, as the graph's producer wrote it: the Hopper kernel reads it
//! so, the `mma.sync` kernel transposes it first, both timed.

use crate::family::{BLayout, Config};
use crate::input::workload_file::Workload;
use anyhow::{bail, Result};
use hwwfc_core::{Graph, Op, Placement, State, StateIndex};

/// The kernels of `graph` scheduled in `states` (each layer's state and
/// its index in the layer's table), in the graph's order.
pub fn of_schedule<const L: usize>(
    graph: &Graph<L>,
    states: &[(StateIndex, State)],
) -> Result<Vec<(Workload, Config)>> {
    if graph.len() != states.len() {
        bail!("internal error: {} layers, {} states", graph.len(), states.len());
    }
    let mut kernels: Vec<Option<(Workload, Config)>> = Vec::with_capacity(graph.len());
    for (i, (layer, (index, state))) in graph.layers().iter().zip(states).enumerate() {
        let name = layer.name.to_string();
        if state.placement == Placement::Epilogue {
            let Op::Elementwise { kind, .. } = layer.op else {
                bail!("layer `{name}` is scheduled in an epilogue but is not an elementwise layer");
            };
            let producer = graph.inputs(i).first().map(|&p| p as usize);
            let Some(Some((Workload::MatMul { name: host, epilogue, .. }, c))) =
                producer.and_then(|p| kernels.get_mut(p))
            else {
                bail!("layer `{name}` is scheduled in the epilogue of its first input, which is not a matmul");
            };
            if epilogue.is_some() {
                bail!("layer `{name}`: its producer `{host}` already runs another layer in its epilogue");
            }
            *epilogue = Some(kind);
            *host = format!("{host}+{name}");
            *c = c.with_elementwise(Some(kind));
            kernels.push(None);
            continue;
        }
        let w = match layer.op {
            Op::MatMul { m, n, k, batch, .. } => {
                // A B read transposed arrives K-major (`Q K^T`'s K).
                let b_layout = if layer.transposed_b { BLayout::KMajor } else { BLayout::NMajor };
                Workload::MatMul { name, m, n, k, batch, epilogue: None, b_layout }
            }
            Op::Softmax { rows, cols, .. } => Workload::Softmax { name, rows, cols },
            Op::Elementwise { kind, rows, cols, .. } => Workload::Elementwise { name, op: kind, rows, cols },
        };
        let c = Config::new(*index, state).with_elementwise(w.elementwise()).with_b_layout(w.b_layout());
        kernels.push(Some((w, c)));
    }
    Ok(kernels.into_iter().flatten().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwwfc_core::space::FUSED;
    use hwwfc_core::{DType, ElementwiseKind, HOST_MAX_LAYERS};

    fn mm(m: u32, n: u32, k: u32) -> Op {
        Op::MatMul { m, n, k, batch: 1, dtype: DType::F16 }
    }

    fn ew(kind: ElementwiseKind) -> Op {
        Op::Elementwise { kind, rows: 64, cols: 128, dtype: DType::F16 }
    }

    fn some_state() -> State {
        hwwfc_core::space::states(hwwfc_core::space::SpaceKind::Cuda, hwwfc_core::OpKind::MatMul)[0]
    }

    /// gate, up, act = silu(gate) * up, down, add = down + residual input.
    fn mlp() -> Graph<HOST_MAX_LAYERS> {
        let mut g = Graph::new();
        g.push_with_inputs("gate", mm(64, 128, 32), &[]).unwrap();
        g.push_with_inputs("up", mm(64, 128, 32), &[]).unwrap();
        g.push_with_inputs("act", ew(ElementwiseKind::SiluMul), &[0, 1]).unwrap();
        g.push_with_inputs("down", mm(64, 128, 128), &[2]).unwrap();
        g.push_with_inputs("add", ew(ElementwiseKind::Add), &[3]).unwrap();
        g
    }

    #[test]
    fn a_fused_layer_runs_in_its_producers_kernel() {
        let s = some_state();
        let states = [(0, s), (0, s), (9, FUSED), (0, s), (3, s)];
        let kernels = of_schedule(&mlp(), &states).unwrap();
        let names: Vec<&str> = kernels.iter().map(|(w, _)| w.name()).collect();
        assert_eq!(names, ["gate+act", "up", "down", "add"]);
        assert_eq!(kernels[0].0.elementwise(), Some(ElementwiseKind::SiluMul));
        assert_eq!(kernels[0].1.elementwise, Some(ElementwiseKind::SiluMul));
        assert_eq!(kernels[1].1.elementwise, None);
        // The unfused add is its own kernel, computing its operation.
        assert_eq!(kernels[3].1.elementwise, Some(ElementwiseKind::Add));
        assert!(matches!(kernels[3].0, Workload::Elementwise { op: ElementwiseKind::Add, .. }));
    }

    #[test]
    fn a_matmul_that_reads_b_transposed_runs_on_a_k_major_b() {
        let mut g: Graph<HOST_MAX_LAYERS> = Graph::new();
        g.push_with_inputs("q", mm(64, 128, 32), &[]).unwrap();
        g.push_with_inputs("k", mm(64, 128, 32), &[]).unwrap();
        g.push_with_inputs("scores", mm(64, 64, 128), &[0, 1]).unwrap();
        g.transpose_b(2).unwrap();
        let s = some_state();
        let kernels = of_schedule(&g, &[(0, s), (0, s), (0, s)]).unwrap();
        let layouts: Vec<_> = kernels.iter().map(|(w, c)| (w.b_layout(), c.b_layout)).collect();
        assert_eq!(
            layouts,
            [
                (BLayout::NMajor, BLayout::NMajor),
                (BLayout::NMajor, BLayout::NMajor),
                (BLayout::KMajor, BLayout::KMajor)
            ]
        );
    }

    #[test]
    fn an_epilogue_without_a_matmul_before_it_is_an_error() {
        let s = some_state();
        // `act` fused into `gate` and `add` fused into `down`: fine; `add`
        // fused while `down` is itself fused is not a matmul's epilogue.
        let mut g: Graph<HOST_MAX_LAYERS> = Graph::new();
        g.push_with_inputs("x", ew(ElementwiseKind::Gelu), &[]).unwrap();
        g.push_with_inputs("y", ew(ElementwiseKind::Gelu), &[0]).unwrap();
        let e = of_schedule(&g, &[(0, s), (9, FUSED)]).unwrap_err().to_string();
        assert!(e.contains("not a matmul"), "{e}");
        let e = of_schedule(&g, &[(0, s)]).unwrap_err().to_string();
        assert!(e.contains("1 states"), "{e}");
    }
}
