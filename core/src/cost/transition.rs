//! The transition cost: a tensor rewritten between two adjacent layers
//! whose layouts differ, or whose consumer cannot read its `B` as the
//! producer wrote it.

use super::Coefficients;
use crate::layer::Op;
use crate::spec::HardwareSpec;
#[cfg(doc)]
use crate::state::Placement;
use crate::state::{Layout, State};

/// Time to rewrite a tensor of `bytes` once (read and write) as a separate
/// kernel, in microseconds.
pub fn rewrite_cost(spec: &HardwareSpec, k: &Coefficients, bytes: u64) -> f32 {
    let t = 2.0 * bytes as f32 / (spec.dram_bytes_per_us() * k.memory_efficiency);
    (t + spec.launch_overhead_us * k.launch_scale) * k.transition_scale
}

/// Whether a tensor written in `prev`'s layout must be rewritten before
/// `next` can read it.
pub fn needs_rewrite(prev: &State, next: &State) -> bool {
    match (prev.layout, next.layout) {
        (Layout::Tiled, Layout::Tiled) => (prev.tile.m, prev.tile.n) != (next.tile.m, next.tile.n),
        (a, b) => a != b,
    }
}

/// Whether a tensor written in `prev`'s layout must be rewritten before
/// `next` reads it on an edge that carries a matmul's `B` transposed
/// (`transposed`, [`crate::graph::Graph::edge_transposed`]): a layout
/// change, or a `B` that arrives K-major where `next`'s kernel reads it
/// row-major only ([`Placement::reads_k_major_b`]), transposed by a
/// kernel of its own.
pub fn edge_needs_rewrite(prev: &State, next: &State, transposed: bool) -> bool {
    needs_rewrite(prev, next) || (transposed && !next.placement.reads_k_major_b())
}

/// Transition cost of the tensor of `bytes` between a producer in `prev`
/// and a consumer in `next`, on an edge that carries a matmul's `B`
/// transposed where `transposed` ([`edge_needs_rewrite`]), in
/// microseconds.
pub fn transition_cost(
    spec: &HardwareSpec,
    k: &Coefficients,
    bytes: u64,
    (prev, next): (&State, &State),
    transposed: bool,
) -> f32 {
    if edge_needs_rewrite(prev, next, transposed) {
        rewrite_cost(spec, k, bytes)
    } else {
        0.0
    }
}

/// Bytes of the layer's input that arrives from outside the graph
/// (`u64::MAX` where that overflows, as for [`Op::output_bytes`]).
pub fn input_bytes(op: &Op) -> u64 {
    let dims: [u64; 4] = match *op {
        Op::MatMul { m, k, batch, dtype, .. } => [m as u64, k as u64, batch as u64, dtype.bytes() as u64],
        Op::Softmax { rows, cols, dtype } => [rows as u64, cols as u64, 1, dtype.bytes() as u64],
        Op::Elementwise { kind, rows, cols, dtype } => {
            [rows as u64, cols as u64, kind.operands() as u64, dtype.bytes() as u64]
        }
    };
    dims.iter().fold(1u64, |acc, &d| acc.saturating_mul(d))
}
