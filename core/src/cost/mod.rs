//! The cost model: predicted time in microseconds of one layer in one
//! state (the unary cost) and of the data movement between two adjacent
//! layers (the transition cost).
//!
//! # Unary cost
//!
//! A layer runs as a grid of blocks. With `occ` blocks resident per SM
//! (bounded by SRAM, threads, registers and the block limit: occupancy),
//! the device holds `SMs x occ` blocks at once and runs the grid in
//! `waves = ceil(blocks / (SMs x occ))` waves (wave quantization); the
//! busiest SM runs `ceil(blocks / SMs)` blocks. Four times bound the body:
//!
//! - compute: the busiest SM's flops, padded to whole tiles (edge waste),
//!   over its share of peak (of `compute_efficiency` for `mma.sync` tiles,
//!   of `tma_efficiency` for the Hopper matmul's `wgmma` tiles), scaled by the matrix-instruction efficiency of
//!   the warp tile `a / (a + warp_tile_half)`, by how well the `w` resident
//!   warps hide latency `w / (w + warps_half)` (not for `wgmma`, which is
//!   asynchronous: a warpgroup keeps its products in flight alone; a
//!   ping-pong block with one tile on its SM computes with one warpgroup),
//!   and, on a CUDA device, by
//!   the share of the SM's four sub-partitions they occupy `min(w / 4, 1)`
//!   (each has its own tensor cores, and a warp runs on one); for a
//!   softmax, the work of every thread over every element slot it holds,
//!   used or masked, once per column step whether the row takes one pass
//!   or two (the kernel exponentiates every element twice either way), and
//!   the block-wide reduction, in which every thread folds in every warp's
//!   partial result (threads x warps);
//! - memory: bytes from DRAM (each operand once, plus the re-reads between
//!   tiles that miss in L2) and the tile traffic through L2 (which falls
//!   with the tile's reuse `BM*BN/(BM+BN)`, and which each busy SM draws
//!   at most at its own rate: `sm_bytes_per_flop` of its share of the
//!   peak for threads' copies, `tma_sm_bytes_per_flop` for the tensor
//!   memory accelerator's bulk copies), at a bandwidth that the bytes
//!   in flight also limit (Little's law): a request waits the memory
//!   latency and its turn at the streaming rate, so the rate is the
//!   harmonic combination `1 / (1/streaming + latency/in_flight)` of the
//!   two, with the bytes a block keeps in flight (pipeline depth times a
//!   stage, or a softmax thread's chunk) times the resident blocks
//!   (threads' loads only: a scratchpad's DMA moves whole tiles); rows
//!   that are not 16-byte aligned take the kernel's scalar path; a
//!   softmax's second read of a row comes from L2 while the rows in
//!   progress fit there, at the L2's rate (at most what the busy SMs draw);
//! - chain: what one block slot does one after another: its steps (k-loop
//!   steps, softmax column steps), each with a barrier and a wait that a
//!   deeper pipeline hides (a matmul's wait is `L = step_latency / ahead`,
//!   `ahead` the stages its pipeline keeps loading, of which the step's own
//!   compute time `d` covers all but `L^2 / (L + d)`), its own share of the
//!   compute, and its fixed
//!   work outside the loop (prologue, epilogue, a softmax's block
//!   reduction). With `occ` blocks resident the others run during one
//!   block's stalls, so the chain counts `1 / occ` of the compute: one
//!   block alone on an SM exposes every barrier and its epilogue, two or
//!   more hide them behind each other's work;
//! - shared memory: a matmul tile staged on chip is read by every warp for
//!   its own warp tile, `(warps_n x BM + warps_m x BN) x BK` elements a
//!   k-step, at the SM's shared-memory bandwidth; two warp grids of one
//!   block tile differ here, and a warp tile too small for its share of the
//!   block reads the tile many times over.
//!
//! A split-K state (the Hopper matmul's `split_k > 1`) runs `split_k`
//! blocks per output tile, each over its share of the k-blocks; their fp32
//! partial sums, written by every split and read back once, add
//! `(2 split_k - 1) x 4` bytes per output element to the tile traffic
//! (what of them the L2 cannot hold, to the DRAM traffic) and to each
//! block's epilogue; and each unit hands its tile over: it writes its
//! partial tile fragment by fragment, fences, counts itself in, and the
//! last unit of a tile reads the others back, a chain of round trips
//! through the L2 that its warps wait for (`split_sync_us` a unit and
//! `split_partial_us_per_kib` per KiB of partial tile, fitted: measured
//! on the H100 and the H200, it runs far below the L2's bandwidth). A
//! ping-pong state (two consumer warpgroups, each with its own tiles in
//! turns) reads B once per tile from shared memory and stores a tile
//! while the other consumer computes, so a block slot's chain holds the
//! stores of its last tile only (but every hand-over). The Hopper
//! matmul's consumer warps store the output tile, and split-K's partial
//! tiles, themselves: two warpgroups on a tile store in half the time of
//! one (a ping-pong consumer is one).
//!
//! The Hopper matmul's main loop is one persistent chain of k-steps on the
//! busiest SM (`hopper_chain`): each step takes the smooth maximum of its
//! load's latency shared by the stages ahead (`tma_latency_us` is the
//! L2's; the share of the tile traffic that misses the L2 waits
//! `dram_latency_ratio` times as long) and the larger of its `wgmma`
//! arithmetic and its bytes through the SM's port, the port drawing at
//! most its share of the L2's total rate (`l2_bandwidth_ratio` times the
//! DRAM bandwidth over the busy SMs: on a partition, fewer SMs share the
//! whole GPU's L2).
//!
//! They combine in a smooth maximum `(c^p + m^p + h^p + s^p)^(1/p)`
//! (compute, memory, chain, shared memory), so no term saturates the
//! score: tile shape, wave count, occupancy and pipeline depth all move
//! the prediction. The launch adds on.
//!
//! # Transition cost
//!
//! When a layer's input layout differs from its producer's output layout,
//! or tiled layouts of different tile shapes meet, the tensor is rewritten
//! once (read and write over the DRAM bandwidth, plus a launch). So is a
//! matmul's `B` that arrives transposed (attention's `K` in `Q K^T`) where
//! the consumer's kernel reads `B` row-major only; the Hopper matmul's TMA
//! loads read it as it is. The model's input and output are row-major.
//!
//! All arithmetic is `f32` with `libm`, in a fixed order, so the host and a
//! Cortex-M4F compute the same bits.

//!
//! # Modules
//!
//! - `coefficients`: the fitted coefficients, their names and defaults;
//! - `grid`: how a state's blocks map onto the SMs (occupancy, waves) and
//!   the bounds every body shares (an SM's draw, the bandwidth the bytes
//!   in flight allow, the smooth maximum);
//! - `matmul`: the matmul's body, both families (`mma.sync` and the
//!   Hopper chain of k-steps);
//! - `rows`: the row kernels' body (softmax, elementwise layers) and a
//!   fused epilogue's cost;
//! - `transition`: the rewrite between adjacent layers.

mod coefficients;
mod grid;
mod matmul;
mod rows;
mod transition;

pub use coefficients::{Coefficients, COEFFICIENTS_VERSION, COEFFICIENT_COUNT, COEFFICIENT_NAMES};
pub use grid::{grid, occupancy, Grid};
pub use transition::{edge_needs_rewrite, input_bytes, needs_rewrite, rewrite_cost, transition_cost};

use crate::layer::Op;
use crate::spec::HardwareSpec;
use crate::state::{Placement, State};

/// Predicted time of `op` in `state`, in microseconds (finite, positive).
pub fn unary_cost(spec: &HardwareSpec, k: &Coefficients, op: &Op, state: &State) -> f32 {
    if state.placement == Placement::Epilogue {
        return match *op {
            Op::Elementwise { kind, rows, cols, dtype } => {
                rows::epilogue_cost(spec, k, kind, rows, cols, dtype.bytes())
            }
            // Only an elementwise layer fuses (`constraint::check`).
            Op::MatMul { .. } | Op::Softmax { .. } => f32::INFINITY,
        };
    }
    let g = grid(spec, op, state);
    let body = match *op {
        Op::MatMul { m, n, k: depth, batch, dtype } => matmul::body(spec, k, state, &g, [m, n, depth, batch], dtype),
        Op::Softmax { rows, cols, dtype } => {
            rows::body(spec, k, state, &g, [rows, cols, dtype.bytes()], rows::RowWork::SOFTMAX)
        }
        Op::Elementwise { kind, rows, cols, dtype } => {
            rows::body(spec, k, state, &g, [rows, cols, dtype.bytes()], rows::RowWork::of(kind))
        }
    };
    body + spec.launch_overhead_us * k.launch_scale
}
