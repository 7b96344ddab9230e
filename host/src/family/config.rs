//! A kernel configuration: one of the core's candidate states of the CUDA
//! space, by its index in the core's table, and the configurations of an
//! operator that pass the core's constraints on a device.

use hwwfc_core::space::{self, SpaceKind};
use hwwfc_core::{constraint, ElementwiseKind, HardwareSpec, Op, Placement, State, StateIndex};
use serde::{Deserialize, Serialize};

/// How a matmul's `B` operand is stored.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BLayout {
    /// `K x N`, row-major (`N` contiguous): a layer's output read as the
    /// next product's `B`, as attention's `V` in `P V`.
    #[default]
    NMajor,
    /// Its `N x K` transpose, row-major (`K` contiguous): PyTorch's Linear
    /// weights, attention's `K` in `Q K^T`.
    KMajor,
}

impl BLayout {
    /// Whether it is the default, [`BLayout::NMajor`].
    pub fn is_n_major(&self) -> bool {
        *self == BLayout::NMajor
    }
}

/// One configuration of a kernel: its index in the core's table and the
/// state it stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Config {
    /// Index in the core's candidate table.
    pub index: StateIndex,
    /// Block tile rows (matmul) or rows per block (softmax).
    pub tile_m: u16,
    /// Block tile columns (matmul) or column block (softmax).
    pub tile_n: u16,
    /// Reduction step (matmul; 0 for softmax).
    pub tile_k: u16,
    /// Warps along rows.
    pub warps_m: u8,
    /// Warps along columns.
    pub warps_n: u8,
    /// Pipeline stages.
    pub stages: u8,
    /// The kernel family's placement: `pipelined` (the `mma.sync` matmul,
    /// the softmax) or `tma` (the Hopper matmul); written in records only
    /// where it is not `pipelined`, so older records read unchanged.
    #[serde(default = "pipelined", skip_serializing_if = "is_pipelined")]
    pub placement: Placement,
    /// Split-K factor (the Hopper matmul); written in records only where it
    /// is not 1, so older records read unchanged.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub split_k: u8,
    /// Ping-pong consumers (the Hopper matmul); written in records only
    /// where it is true.
    #[serde(default, skip_serializing_if = "is_false")]
    pub pingpong: bool,
    /// The elementwise operation the kernel computes: an elementwise
    /// layer's own, or the one a matmul applies in its epilogue (the
    /// elementwise layer after it fused); written in records only where
    /// there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elementwise: Option<ElementwiseKind>,
    /// How a matmul's `B` is stored, which the kernel reads as it is;
    /// written in records only where it is not the default `n_major`.
    #[serde(default, skip_serializing_if = "BLayout::is_n_major")]
    pub b_layout: BLayout,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn one() -> u8 {
    1
}

fn is_one(k: &u8) -> bool {
    *k == 1
}

fn pipelined() -> Placement {
    Placement::Pipelined
}

fn is_pipelined(p: &Placement) -> bool {
    *p == Placement::Pipelined
}

impl Config {
    /// The configuration of state `index`.
    pub fn new(index: StateIndex, s: &State) -> Config {
        Config {
            index,
            tile_m: s.tile.m,
            tile_n: s.tile.n,
            tile_k: s.tile.k,
            warps_m: s.warps_m,
            warps_n: s.warps_n,
            stages: s.stages,
            placement: s.placement,
            split_k: s.split_k,
            pingpong: s.pingpong,
            elementwise: None,
            b_layout: BLayout::NMajor,
        }
    }

    /// The same configuration computing `elementwise` (see the field).
    pub fn with_elementwise(self, elementwise: Option<ElementwiseKind>) -> Config {
        Config { elementwise, ..self }
    }

    /// The same configuration reading `B` stored as `b_layout`.
    pub fn with_b_layout(self, b_layout: BLayout) -> Config {
        Config { b_layout, ..self }
    }

    /// Threads of one block.
    pub fn threads(&self) -> u32 {
        self.state().threads()
    }

    /// The core state this configuration stands for.
    pub fn state(&self) -> State {
        State {
            tile: hwwfc_core::state::Tile { m: self.tile_m, n: self.tile_n, k: self.tile_k },
            warps_m: self.warps_m,
            warps_n: self.warps_n,
            stages: self.stages,
            split_k: self.split_k,
            pingpong: self.pingpong,
            placement: self.placement,
            layout: hwwfc_core::Layout::RowMajor,
        }
    }
}

/// The CUDA space of `spec`: its own where it is one, the CUDA kernels'
/// otherwise.
pub fn cuda_space(spec: &HardwareSpec) -> SpaceKind {
    if spec.space.is_cuda() {
        spec.space
    } else {
        SpaceKind::Cuda
    }
}

/// The states a record's configuration index may name: the widest CUDA
/// table, of which the others are prefixes.
pub fn record_table(kind: hwwfc_core::OpKind) -> &'static [State] {
    space::states(SpaceKind::Hopper, kind)
}

/// The configurations of `op` that the core allows on `spec`, in the
/// core's table order (an elementwise layer's computing its operation).
pub fn configs(spec: &HardwareSpec, op: &Op) -> Vec<Config> {
    let elementwise = match *op {
        Op::Elementwise { kind, .. } => Some(kind),
        Op::MatMul { .. } | Op::Softmax { .. } => None,
    };
    space::states(cuda_space(spec), op.kind())
        .iter()
        .enumerate()
        .filter(|(_, s)| space::applicable(op, s) && constraint::check(spec, op, s).is_ok())
        .map(|(i, s)| Config::new(i as StateIndex, s).with_elementwise(elementwise))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwwfc_core::DType;

    fn h200() -> HardwareSpec {
        let mut s = hwwfc_core::presets::stress_gpu();
        s.space = SpaceKind::Cuda;
        s.sram_per_block_bytes = 232448;
        s.sram_per_sm_bytes = 233472;
        s.alignment_bytes = 16;
        s.sm_count = 132;
        s.max_blocks_per_sm = 32;
        s
    }

    #[test]
    fn enumerates_enough_valid_configurations() {
        let mm = configs(&h200(), &Op::MatMul { m: 1, n: 50257, k: 768, batch: 1, dtype: DType::F16 });
        let sm = configs(&h200(), &Op::Softmax { rows: 1, cols: 77, dtype: DType::F32 });
        assert!(mm.len() >= 100, "{}", mm.len());
        assert!(sm.len() >= 20, "{}", sm.len());
        for c in &mm {
            let op = Op::MatMul { m: 64, n: 64, k: 64, batch: 1, dtype: DType::F16 };
            assert!(super::super::matmul::dynamic_smem(&op, c) <= 232448);
            assert!(c.threads() <= 1024);
            assert_eq!(c.tile_m % (16 * c.warps_m as u16), 0);
        }
    }

    #[test]
    fn tighter_limits_remove_configurations() {
        let op = Op::MatMul { m: 4096, n: 4096, k: 4096, batch: 1, dtype: DType::F16 };
        let all = configs(&h200(), &op).len();
        let mut small = h200();
        small.sram_per_block_bytes = 48 * 1024;
        let fewer = configs(&small, &op);
        assert!(fewer.len() < all);
        assert!(fewer.iter().all(|c| super::super::matmul::dynamic_smem(&op, c) <= 48 * 1024));
    }
}
