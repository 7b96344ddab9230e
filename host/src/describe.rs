//! Short text forms of layers and states, shared by tables and errors.

use hwwfc_core::constraint::CONSTRAINT_COUNT;
use hwwfc_core::{Constraint, Op, State};

/// The shape of `op`: `MxNxK` for a matmul (with ` xB` for `B > 1`
/// batches), `ROWSxCOLS` for a softmax.
pub fn shape(op: &Op) -> String {
    match *op {
        Op::MatMul { m, n, k, batch: 1, .. } => format!("{m}x{n}x{k}"),
        Op::MatMul { m, n, k, batch, .. } => format!("{m}x{n}x{k} x{batch}"),
        Op::Softmax { rows, cols, .. } | Op::Elementwise { rows, cols, .. } => format!("{rows}x{cols}"),
    }
}

/// Kind, shape and element type: `softmax 512x512 f32`; an elementwise
/// layer by what it computes: `add 2048x4096 f16`.
pub fn op(op: &Op) -> String {
    let kind = match *op {
        Op::Elementwise { kind, .. } => kind.name(),
        _ => op.kind().name(),
    };
    format!("{} {} {}", kind, shape(op), op.dtype().name())
}

/// [`op`] of a layer, with ` B^T` where a matmul reads its `B`
/// transposed.
pub fn layer(layer: &hwwfc_core::Layer) -> String {
    let transposed = if layer.transposed_b { " B^T" } else { "" };
    format!("{}{transposed}", op(&layer.op))
}

/// The tile of `state`: `MxNxK`, or `MxN` where there is no reduction.
pub fn tile(state: &State) -> String {
    let t = &state.tile;
    if t.k == 0 {
        format!("{}x{}", t.m, t.n)
    } else {
        format!("{}x{}x{}", t.m, t.n, t.k)
    }
}

/// The warp grid of `state`: `ROWSxCOLS`, and ` pp` where two consumer
/// warpgroups take whole tiles in turns (ping-pong).
pub fn warps(state: &State) -> String {
    format!("{}x{}{}", state.warps_m, state.warps_n, if state.pingpong { " pp" } else { "" })
}

/// The whole state: `32x32x32 warps 1x1 stages 1 sram row_major`, with
/// `split K` after the stages where the reduction is split.
pub fn state(state: &State) -> String {
    let split = if state.split_k > 1 { format!(" split {}", state.split_k) } else { String::new() };
    format!(
        "{} warps {} stages {}{split} {} {}",
        tile(state),
        warps(state),
        state.stages,
        state.placement.name(),
        state.layout.name()
    )
}

/// The non-zero counts of `removed` (indexed by [`Constraint::ALL`]):
/// `alignment 12, sram_capacity 9`; `-` if none.
pub fn removed<T: Copy + Into<u64>>(removed: &[T; CONSTRAINT_COUNT]) -> String {
    let parts: Vec<String> = Constraint::ALL
        .iter()
        .zip(removed.iter())
        .filter(|(_, &n)| n.into() > 0)
        .map(|(c, &n)| format!("{} {}", c.name(), n.into()))
        .collect();
    if parts.is_empty() {
        "-".to_string()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwwfc_core::DType;

    #[test]
    fn shapes() {
        let mm = Op::MatMul { m: 512, n: 1536, k: 64, batch: 12, dtype: DType::F16 };
        assert_eq!(op(&mm), "matmul 512x1536x64 x12 f16");
        let sm = Op::Softmax { rows: 512, cols: 512, dtype: DType::F32 };
        assert_eq!(op(&sm), "softmax 512x512 f32");
        assert_eq!(removed(&[12u16, 9, 0, 0, 0, 0, 0, 1]), "alignment 12, sram_capacity 9, adjacency 1");
        assert_eq!(removed(&[0u16; CONSTRAINT_COUNT]), "-");
    }
}
