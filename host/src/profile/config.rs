//! The configurations to measure: the core's candidate states for the
//! CUDA space that pass the core's constraints on this device.

use crate::gpu::{DeviceInfo, KernelSource, Program};
use hwwfc_core::space::{self, SpaceKind};
use hwwfc_core::{constraint, HardwareSpec, Op, OpKind, State, StateIndex};
use serde::{Deserialize, Serialize};

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
        }
    }

    /// Threads of one block.
    pub fn threads(&self) -> u32 {
        32 * self.warps_m as u32 * self.warps_n as u32
    }

    /// A short label, such as `128x128x32 w2x2 s3` or `c1024 t256`.
    pub fn label(&self, kind: OpKind) -> String {
        match kind {
            OpKind::MatMul => format!(
                "{}x{}x{} w{}x{} s{}",
                self.tile_m, self.tile_n, self.tile_k, self.warps_m, self.warps_n, self.stages
            ),
            OpKind::Softmax => format!("c{} t{}", self.tile_n, self.threads()),
        }
    }

    /// The kernel source and its `-D` parameters.
    pub fn program(&self, kind: OpKind) -> Program {
        match kind {
            OpKind::MatMul => Program {
                source: KernelSource::MatMul,
                defines: vec![
                    ("BM".into(), self.tile_m as u32),
                    ("BN".into(), self.tile_n as u32),
                    ("BK".into(), self.tile_k as u32),
                    ("WM".into(), self.warps_m as u32),
                    ("WN".into(), self.warps_n as u32),
                    ("STAGES".into(), self.stages as u32),
                ],
            },
            OpKind::Softmax => Program {
                source: KernelSource::Softmax,
                defines: vec![("COLS".into(), self.tile_n as u32), ("THREADS".into(), self.threads())],
            },
        }
    }

    /// Dynamic shared memory of one block, bytes (the core's own count).
    pub fn dynamic_smem(&self, op: &Op) -> u32 {
        match op.kind() {
            OpKind::MatMul => hwwfc_core::resource::usage(op, &self.state()).sram_bytes,
            OpKind::Softmax => 0,
        }
    }

    /// The core state this configuration stands for.
    pub fn state(&self) -> State {
        State {
            tile: hwwfc_core::state::Tile { m: self.tile_m, n: self.tile_n, k: self.tile_k },
            warps_m: self.warps_m,
            warps_n: self.warps_n,
            stages: self.stages,
            placement: hwwfc_core::Placement::Pipelined,
            layout: hwwfc_core::Layout::RowMajor,
        }
    }
}

/// `spec` with its limits replaced by what the device reports, so that the
/// constraints check against the real hardware.
pub fn device_limits(spec: &HardwareSpec, info: &DeviceInfo) -> HardwareSpec {
    let mut s = spec.clone();
    s.space = SpaceKind::Cuda;
    s.sram_per_block_bytes = info.smem_per_block_optin;
    s.sram_per_sm_bytes = info.smem_per_sm;
    s.sm_count = info.sm_count;
    s.l2_bytes = info.l2_bytes;
    s.max_threads_per_block = info.max_threads_per_block;
    s.max_threads_per_sm = info.max_threads_per_sm;
    s.max_blocks_per_sm = info.max_blocks_per_sm;
    s.registers_per_sm = info.registers_per_sm;
    s
}

/// The configurations of `op` that the core allows on `spec`, in the
/// core's table order.
pub fn configs(spec: &HardwareSpec, op: &Op) -> Vec<Config> {
    space::states(SpaceKind::Cuda, op.kind())
        .iter()
        .enumerate()
        .filter(|(_, s)| space::applicable(op, s) && constraint::check(spec, op, s).is_ok())
        .map(|(i, s)| Config::new(i as StateIndex, s))
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
            assert!(c.dynamic_smem(&op) <= 232448);
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
        assert!(fewer.iter().all(|c| c.dynamic_smem(&op) <= 48 * 1024));
    }
}
