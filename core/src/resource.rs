//! What one block (CTA) of a state uses: SRAM bytes, threads, registers.
//!
//! The constraints compare these with the spec's limits, and the cost model
//! derives occupancy from them, so both read the same numbers.

use crate::layer::Op;
use crate::state::{Placement, State};

/// Registers a thread needs besides its accumulators and fragments
/// (addresses, loop counters, pipeline bookkeeping).
pub const BASE_REGISTERS_PER_THREAD: u32 = 32;

/// Shared memory a TMA block holds besides its stages: 1 KB of slack to
/// align the swizzled buffers to 1024 bytes, and two 8-byte mbarriers per
/// stage (`kernels/matmul_tma.cu` counts the same).
pub const TMA_FIXED_SMEM_BYTES: u32 = 1024;

/// Registers a consumer thread of the Hopper matmul may take
/// (`setmaxnreg` in `kernels/matmul_tma.cu`).
pub const TMA_CONSUMER_REGISTERS: u32 = 232;

/// Most registers one thread may hold.
pub const MAX_REGISTERS_PER_THREAD: u32 = 255;

/// Elements of padding after each shared-memory row of the pipelined
/// matmul's operand tiles (16 bytes of fp16), which keeps `ldmatrix` free
/// of bank conflicts; `kernels/matmul.cu` pads the same.
pub const SMEM_ROW_PAD: u32 = 8;

/// Resources of one block of `state` running `op`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Usage {
    /// SRAM (shared memory) bytes held by the block.
    pub sram_bytes: u32,
    /// Threads of the block.
    pub threads: u32,
    /// Estimated 32-bit registers per thread.
    pub registers_per_thread: u32,
}

/// The resources one block of `state` uses when it runs `op`. Any state is
/// accepted, from a candidate table or not (a decoded schedule's, a
/// record's): a count that does not fit a `u32` saturates at `u32::MAX`,
/// which no limit admits.
pub fn usage(op: &Op, state: &State) -> Usage {
    let e = op.dtype().bytes();
    let (bm, bn, bk) = (state.tile.m as u32, state.tile.n as u32, state.tile.k as u32);
    let threads = state.threads().max(1);
    // Saturating products and sums: the tables' states stay far below
    // `u32::MAX`, where these equal the plain ones.
    let mul = |a: u32, b: u32| a.saturating_mul(b);
    let (sram_bytes, registers_per_thread) = match (op, state.placement) {
        // Operand tiles and the fp32 accumulator all live in SRAM.
        (Op::MatMul { .. }, Placement::Sram) => (
            mul(mul(bm, bk).saturating_add(mul(bk, bn)), e).saturating_add(mul(mul(bm, bn), 4)),
            BASE_REGISTERS_PER_THREAD,
        ),
        (Op::MatMul { .. }, Placement::Dram) => (0, BASE_REGISTERS_PER_THREAD),
        (Op::MatMul { .. }, Placement::Pipelined) => {
            let stages = state.stages.max(1) as u32;
            let wm = state.warps_m.max(1) as u32;
            let wn = state.warps_n.max(1) as u32;
            // Accumulators: one fp32 per output element, spread over the
            // threads; fragments: A is 16 rows x 16 k (4 registers per
            // thread), B is 8 columns x 16 k (2 registers) per mma tile.
            let acc = mul(bm, bn) / threads;
            let frags = (bm / wm).div_ceil(16) * 4 + (bn / wn).div_ceil(8) * 2;
            let per_stage = mul(bm, bk + SMEM_ROW_PAD).saturating_add(mul(bk, bn + SMEM_ROW_PAD));
            (mul(mul(stages, per_stage), e), acc.saturating_add(frags + BASE_REGISTERS_PER_THREAD))
        }
        (Op::MatMul { .. }, Placement::Tma) => {
            // Stages of A (BM x BK) and B (BK x BN), their barriers, the
            // alignment slack; each consumer warpgroup holds its rows of
            // the tile's accumulators (all of them in ping-pong), one fp32
            // per element over its 128 threads.
            let stages = state.stages.max(1) as u32;
            let consumers = if state.pingpong { 1 } else { (state.warps_m as u32 / 4).max(1) };
            let per_stage = mul(bm, bk).saturating_add(mul(bk, bn));
            let sram = mul(mul(stages, per_stage), e).saturating_add(TMA_FIXED_SMEM_BYTES + 16 * stages);
            (sram, mul(bm / consumers, bn) / 128 + BASE_REGISTERS_PER_THREAD)
        }
        // Fused into a matmul's epilogue: nothing of its own (the
        // matmul's registers hold the tile it finishes).
        (_, Placement::Epilogue) => (0, 0),
        (Op::Softmax { .. } | Op::Elementwise { .. }, Placement::Sram) => {
            (mul(mul(bm, bn), e), BASE_REGISTERS_PER_THREAD)
        }
        (Op::Softmax { .. } | Op::Elementwise { .. }, Placement::Dram) => (0, BASE_REGISTERS_PER_THREAD),
        (Op::Softmax { .. } | Op::Elementwise { .. }, Placement::Pipelined | Placement::Tma) => {
            // The row chunk sits in registers; shared memory holds one
            // (max, sum) pair per warp for the block reduction.
            let per_thread = bn.div_ceil(threads);
            (state.warps() * 8, per_thread + BASE_REGISTERS_PER_THREAD)
        }
    };
    // A fused layer launches no threads of its own.
    let threads = if state.placement == Placement::Epilogue { 0 } else { threads };
    Usage { sram_bytes, threads, registers_per_thread }
}

/// Bytes of one row of the tile as it is read from memory (the narrower of
/// the output row and, for a matmul, the `k`-wide operand row).
pub fn row_bytes(op: &Op, state: &State) -> u32 {
    let e = op.dtype().bytes();
    match op {
        Op::MatMul { .. } => (state.tile.n.min(state.tile.k) as u32) * e,
        Op::Softmax { .. } | Op::Elementwise { .. } => state.tile.n as u32 * e,
    }
}

/// Multiplier of the working memory over the tile bytes: a softmax keeps
/// the input tile, the exponentials, and the row maxima and sums (x4), a
/// row normalisation the same; an elementwise layer its operands' tiles
/// and the output's.
pub fn working_memory_multiplier(op: &Op) -> u32 {
    match op {
        Op::MatMul { .. } => 1,
        Op::Softmax { .. } => 4,
        Op::Elementwise { kind, .. } if kind.reduces_rows() => 4,
        Op::Elementwise { kind, .. } => kind.operands() + 1,
    }
}
