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

use crate::dtype::DType;
use crate::layer::{ElementwiseKind, Op};
use crate::resource;
use crate::spec::HardwareSpec;
use crate::state::{Layout, Placement, State};
use serde::{Deserialize, Serialize};

/// Version of the cost model and of its [`Coefficients`] (their layout and
/// their meaning): stored in coefficient files, as the JSON wrapper's
/// `format_version` and as the third header byte of the wire format
/// ([`crate::wire`]), and required when they are read.
pub const COEFFICIENTS_VERSION: u8 = 13;

macro_rules! coefficients {
    ($($(#[doc = $doc:literal])* $name:ident = $default:expr;)*) => {
        /// The cost model's coefficients. Defaults come from datasheet
        /// figures and common rules of thumb; `hwwfc calibrate` fits them
        /// to measured times.
        #[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, postcard::experimental::max_size::MaxSize)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        #[serde(deny_unknown_fields)]
        pub struct Coefficients {
            $($(#[doc = $doc])* pub $name: f32,)*
        }

        impl Default for Coefficients {
            fn default() -> Self {
                Coefficients { $($name: $default,)* }
            }
        }

        /// Names of the coefficients, in field order.
        pub const COEFFICIENT_NAMES: [&str; COEFFICIENT_COUNT] = [$(stringify!($name),)*];

        impl Coefficients {
            /// The coefficients as an array, in the order of
            /// [`COEFFICIENT_NAMES`].
            pub fn to_array(&self) -> [f32; COEFFICIENT_COUNT] {
                [$(self.$name,)*]
            }

            /// Coefficients from an array in the order of
            /// [`COEFFICIENT_NAMES`].
            pub fn from_array(a: [f32; COEFFICIENT_COUNT]) -> Self {
                let [$($name,)*] = a;
                Coefficients { $($name,)* }
            }
        }
    };
}

/// Number of coefficients.
pub const COEFFICIENT_COUNT: usize = 37;

coefficients! {
    /// Share of peak arithmetic a well-shaped tile reaches.
    compute_efficiency = 0.75;
    /// Share of peak DRAM bandwidth reached by streaming reads.
    memory_efficiency = 0.85;
    /// The L2's total rate to the SMs as a multiple of the DRAM bandwidth:
    /// the busy SMs share it (on a partition, fewer SMs share the whole
    /// GPU's L2).
    l2_bandwidth_ratio = 2.5;
    /// Share of the re-reads between tiles that miss in L2.
    l2_miss_rate = 0.15;
    /// Latency of a load from memory, in microseconds (Little's law:
    /// bandwidth is at most the bytes in flight over this latency).
    memory_latency_us = 0.8;
    /// Warp-tile area (elements) at which the matrix units reach half of
    /// `compute_efficiency`.
    warp_tile_half = 256.0;
    /// Resident warps per SM at which a matmul's latency is half hidden.
    warps_half = 2.0;
    /// Barrier and wait of one k-loop (or softmax column) step that a
    /// single stage does not hide, in microseconds.
    step_latency_us = 0.1;
    /// Fixed cost per block (prologue, epilogue), in microseconds.
    block_overhead_us = 1.0;
    /// Time an SM's block scheduler takes to start one block, in
    /// microseconds (a bound on grids of many small blocks).
    block_dispatch_us = 0.05;
    /// Share of peak fp32 arithmetic a softmax reaches.
    softmax_efficiency = 0.5;
    /// Resident warps per SM at which a softmax's latency is half hidden:
    /// its chains of dependent fp32, exponential and shuffle instructions
    /// want about four warps on each of the four sub-partitions.
    softmax_warps_half = 16.0;
    /// Latency of one softmax column step not hidden, in microseconds.
    softmax_step_latency_us = 0.1;
    /// Fixed cost per softmax block, in microseconds.
    softmax_block_overhead_us = 1.0;
    /// Cost of one warp's turn in a block-wide reduction, in microseconds.
    reduce_us_per_warp = 0.01;
    /// Time a thread spends on one 16-byte chunk loaded element by element
    /// (rows not 16-byte aligned take this path, unpipelined), in
    /// microseconds: about one round trip to memory.
    scalar_load_us = 0.5;
    /// Share of the DRAM bandwidth the epilogue's scattered stores reach.
    store_efficiency = 0.5;
    /// Multiplier on the spec's launch overhead.
    launch_scale = 1.0;
    /// Exponent of the smooth maximum of the compute, memory and latency
    /// times (large: a hard maximum; 1: their sum).
    overlap_exponent = 4.0;
    /// Operand reuse in registers of a DRAM-streamed tile (elements).
    register_reuse = 4.0;
    /// Slowdown of a row reduction over a column-major tensor.
    strided_penalty = 4.0;
    /// Multiplier on the time of a layout change between layers.
    transition_scale = 1.0;
    /// Shared-memory bandwidth of an SM over its peak matrix arithmetic,
    /// in bytes per flop (Hopper: 128 bytes a clock against 4096 fp16
    /// tensor flops a clock).
    smem_bytes_per_flop = 0.03125;
    /// Arithmetic of folding one warp's partial (max, sum) into a thread's,
    /// in fp32 operations (two exponentials on the special-function units,
    /// each worth several fp32 slots).
    combine_ops = 20.0;
    /// Share of peak arithmetic a well-shaped tile of the Hopper matmul
    /// (`wgmma` from shared memory, [`Placement::Tma`]) reaches; it takes
    /// the place of `compute_efficiency`, which `mma.sync` tiles reach.
    tma_efficiency = 0.85;
    /// Fixed cost of one output tile of the Hopper matmul, in
    /// microseconds: its epilogue, which the consumers do not overlap
    /// with the next tile's products, and the pipeline's refill.
    tma_tile_overhead_us = 1.0;
    /// Fixed cost of one split-K unit's hand-over, in microseconds: the
    /// fence after its partial sums and the atomic count of the splits
    /// that have arrived, a round trip to the L2 that the tile's epilogue
    /// waits for.
    split_sync_us = 2.0;
    /// Time of one KiB of a split-K unit's fp32 partial sums (the rows and
    /// columns of its tile inside the matrix), written by the unit's warps
    /// fragment by fragment and, for the last of a tile's splits, read
    /// back from the others, in microseconds.
    split_partial_us_per_kib = 0.25;
    /// What one SM can draw from the memory system (its port to the L2,
    /// whether the bytes hit there or come from DRAM), over its peak fp16
    /// matrix arithmetic, in bytes per flop: a grid on few SMs (a small
    /// grid, or a partition of the GPU) draws at most that many SMs' worth,
    /// however much of the DRAM bandwidth the others leave.
    sm_bytes_per_flop = 0.006;
    /// Exponent of the smooth maximum for the Hopper matmul
    /// ([`Placement::Tma`]), in place of `overlap_exponent`: its producer
    /// warpgroup, the copy engine and the consumers' asynchronous `wgmma`
    /// overlap loads, shared-memory reads and arithmetic more fully than
    /// one warp doing all of them in turn.
    tma_overlap_exponent = 8.0;
    /// What one SM draws from the memory system through the tensor memory
    /// accelerator (the Hopper matmul's bulk copies,
    /// [`Placement::Tma`]), in place of `sm_bytes_per_flop`, which the
    /// threads' asynchronous copies of the `mma.sync` matmul and the
    /// loads of the row kernels reach: in bytes per flop of the SM's
    /// share of the peak fp16 matrix arithmetic.
    tma_sm_bytes_per_flop = 0.014;
    /// Latency of one k-step's bulk copy of the Hopper matmul under load,
    /// from the stage's release to its arrival, in microseconds: a
    /// pipeline of `stages` buffers waits it once every `stages - 1`
    /// k-steps.
    tma_latency_us = 0.9;
    /// Exponent of the smooth maximum of a Hopper k-step's three times
    /// (its `wgmma` arithmetic, its load's latency over the stages ahead,
    /// its bytes through the SM's port), which overlap only in part.
    tma_step_exponent = 3.0;
    /// Width of a `wgmma` tile (its N) at which it reaches half of
    /// `tma_efficiency`: each instruction reads its A rows from shared
    /// memory whatever its width, so a narrow one spends more per flop.
    wgmma_n_half = 16.0;
    /// Share of the Hopper matmul's rate that a ping-pong consumer of a
    /// 128-row tile reaches, issuing both 64-row halves of each k-step
    /// with one warpgroup and holding all of the tile's accumulators
    /// (measured on the same 128-row tile and stages over 16 or more
    /// k-steps: ping-pong takes 1.01 to 1.03 times the time of two
    /// consumers, where the other terms price it 0.99 to 1.0 times; the
    /// fit leaves it near this default).
    pingpong_efficiency = 0.97;
    /// Power of the stages ahead in a Hopper k-step's share of its load's
    /// latency: a step waits `tma_latency_us / (stages - 1)^p` (1: each
    /// stage ahead hides one share, as on one tile per SM; the corpus
    /// fits about 1.2, a deeper pipeline hiding more than its share over
    /// many tiles).
    tma_stage_power = 1.0;
    /// Latency of a Hopper bulk copy from DRAM over that of one the L2
    /// serves (`tma_latency_us` being the L2's): a matmul whose tiles
    /// mostly miss the L2 (a decode step streaming its weights once) waits
    /// this much longer a k-step. The corpus fits about 2.1, and
    /// `tma_stage_power` then returns to the 1 measured on one tile per
    /// SM.
    dram_latency_ratio = 2.0;
}

impl Coefficients {
    /// Whether every coefficient is finite and positive (the model's
    /// physical range); the name of the first that is not, otherwise.
    pub fn validate(&self) -> Result<(), &'static str> {
        for (value, name) in self.to_array().iter().zip(COEFFICIENT_NAMES.iter()) {
            if !(value.is_finite() && *value > 0.0) {
                return Err(name);
            }
        }
        Ok(())
    }
}

fn ceil_div(a: u64, b: u64) -> u64 {
    a.div_ceil(b.max(1))
}

/// Blocks of `state` resident on one SM at once (at least 1). A TMA block
/// is persistent: the grid has one per SM, and each walks its share of the
/// tiles, so its "blocks" are tiles run one after another.
pub fn occupancy(spec: &HardwareSpec, op: &Op, state: &State) -> u32 {
    if state.placement == Placement::Tma {
        return 1;
    }
    let u = resource::usage(op, state);
    let by_sram = spec.sram_per_sm_bytes.checked_div(u.sram_bytes).unwrap_or(u32::MAX);
    let by_threads = spec.max_threads_per_sm / u.threads.max(1);
    let regs = u.registers_per_thread.saturating_mul(u.threads).max(1);
    let by_regs = spec.registers_per_sm / regs;
    by_sram.min(by_threads).min(by_regs).min(spec.max_blocks_per_sm).max(1)
}

/// How the grid of a state maps onto the device.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Grid {
    /// Blocks in the grid.
    pub blocks: u64,
    /// Blocks resident per SM.
    pub occupancy: u32,
    /// Waves of `SMs x occupancy` blocks.
    pub waves: u64,
    /// Blocks of the busiest SM.
    pub blocks_per_sm: u64,
    /// Share of the last wave's slots that are busy, in (0, 1].
    pub last_wave_fill: f32,
}

impl Grid {
    /// Blocks resident at once on the busiest SM.
    fn resident(&self) -> f32 {
        (self.occupancy as u64).min(self.blocks_per_sm).max(1) as f32
    }

    /// Blocks each slot of the busiest SM runs one after another.
    pub fn per_slot(&self) -> f32 {
        libm::ceilf(self.blocks_per_sm as f32 / self.occupancy.max(1) as f32)
    }
}

/// The grid of `state` on `op`.
pub fn grid(spec: &HardwareSpec, op: &Op, state: &State) -> Grid {
    let t = &state.tile;
    let blocks = match *op {
        Op::MatMul { m, n, batch, .. } => {
            batch as u64 * ceil_div(m as u64, t.m as u64) * ceil_div(n as u64, t.n as u64) * state.split_k.max(1) as u64
        }
        Op::Softmax { rows, .. } | Op::Elementwise { rows, .. } => ceil_div(rows as u64, t.m as u64),
    };
    let occupancy = occupancy(spec, op, state);
    let sms = spec.sm_count.max(1) as u64;
    let slots = sms * occupancy as u64;
    let waves = ceil_div(blocks, slots);
    let last = blocks - (waves.saturating_sub(1)) * slots;
    Grid { blocks, occupancy, waves, blocks_per_sm: ceil_div(blocks, sms), last_wave_fill: last as f32 / slots as f32 }
}

/// What one SM of a CUDA device can draw from the memory system, in bytes per microsecond
/// ([`Coefficients::sm_bytes_per_flop`] of its share of the peak: a
/// partition's SMs keep their own rate).
fn sm_draw(spec: &HardwareSpec, c: &Coefficients, s: &State) -> f32 {
    if !spec.space.is_cuda() {
        // A scratchpad accelerator's cores are fed by DMA, not by ports of
        // their own: no bound of this kind.
        return f32::INFINITY;
    }
    let per_flop = if s.placement == Placement::Tma { c.tma_sm_bytes_per_flop } else { c.sm_bytes_per_flop };
    spec.peak_flop_per_us(DType::F16) / spec.sm_count.max(1) as f32 * per_flop
}

/// SMs that the grid keeps busy.
fn active_sms(spec: &HardwareSpec, g: &Grid) -> f32 {
    (g.blocks as f32).min(spec.sm_count.max(1) as f32)
}

/// DRAM bandwidth the grid can draw, in bytes per microsecond: the
/// streaming rate (at most what its busy SMs can draw), lowered by the
/// latency that the bytes in flight do not cover (Little's law, combined
/// harmonically with the streaming rate). A scratchpad (`Sram`) tile is
/// moved by DMA as a whole, so only loads issued by threads are bounded.
fn bandwidth(spec: &HardwareSpec, c: &Coefficients, g: &Grid, s: &State, in_flight_per_block: f32) -> f32 {
    let streaming = spec.dram_bytes_per_us() * c.memory_efficiency;
    if s.placement == Placement::Sram {
        return streaming.max(1.0);
    }
    let active = active_sms(spec, g);
    let streaming = streaming.min(active * sm_draw(spec, c, s));
    let little = active * g.resident() * in_flight_per_block / c.memory_latency_us;
    // Each request waits its latency and its turn at the streaming rate.
    (1.0 / (1.0 / streaming + 1.0 / little.max(1e-9))).max(1.0)
}

/// Sub-partitions (warp schedulers) of an SM, each with its own tensor
/// cores: four on every NVIDIA GPU since Volta.
const SUB_PARTITIONS_PER_SM: f32 = 4.0;

/// Resident warps of the busiest SM.
fn resident_warps(g: &Grid, s: &State) -> f32 {
    g.resident() * s.warps().max(1) as f32
}

/// Share of peak that `w` resident warps reach by hiding each other's
/// latency, half of it at `half` warps.
fn latency_hiding(w: f32, half: f32) -> f32 {
    w / (w + half)
}

/// The smooth maximum `(sum t^p)^(1/p)` of `terms` (0 where none is
/// positive), scaled by the largest so that the powers stay in range.
fn p_norm<const N: usize>(p: f32, terms: [f32; N]) -> f32 {
    let m = terms.iter().fold(0.0f32, |a, &b| a.max(b));
    if m <= 0.0 {
        return 0.0;
    }
    let s = terms.iter().fold(0.0f32, |acc, &t| acc + libm::powf(t / m, p));
    m * libm::powf(s, 1.0 / p)
}

/// The smooth maximum of the bounds of a body, with the block-dispatch
/// bound of the grid among them.
fn smooth_max(c: &Coefficients, p: f32, g: &Grid, terms: [f32; 4]) -> f32 {
    let dispatch = g.blocks_per_sm as f32 * c.block_dispatch_us;
    p_norm(p, [terms[0], terms[1], terms[2], terms[3], dispatch])
}

/// Predicted time of `op` in `state`, in microseconds (finite, positive).
pub fn unary_cost(spec: &HardwareSpec, k: &Coefficients, op: &Op, state: &State) -> f32 {
    if state.placement == Placement::Epilogue {
        return match *op {
            Op::Elementwise { kind, rows, cols, dtype } => epilogue_cost(spec, k, kind, rows, cols, dtype.bytes()),
            // Only an elementwise layer fuses (`constraint::check`).
            Op::MatMul { .. } | Op::Softmax { .. } => f32::INFINITY,
        };
    }
    let g = grid(spec, op, state);
    let body = match *op {
        Op::MatMul { m, n, k: depth, batch, dtype } => matmul_body(spec, k, state, &g, [m, n, depth, batch], dtype),
        Op::Softmax { rows, cols, dtype } => {
            row_body(spec, k, state, &g, [rows, cols, dtype.bytes()], RowWork::SOFTMAX)
        }
        Op::Elementwise { kind, rows, cols, dtype } => {
            row_body(spec, k, state, &g, [rows, cols, dtype.bytes()], RowWork::of(kind))
        }
    };
    body + spec.launch_overhead_us * k.launch_scale
}

/// The chain of one block slot: the exposed time of its steps `t_steps`,
/// its share `1 / resident` of the busiest SM's compute `t_compute` (the
/// other resident blocks run during its stalls), and its fixed work
/// `per_block`, once for every block it runs.
fn chain(g: &Grid, t_steps: f32, t_compute: f32, per_block: f32) -> f32 {
    t_steps + t_compute / g.resident() + g.per_slot() * per_block
}

/// The body of a matmul.
fn matmul_body(spec: &HardwareSpec, c: &Coefficients, s: &State, g: &Grid, dims: [u32; 4], dtype: DType) -> f32 {
    let [m, n, depth, batch] = dims.map(|d| d as f32);
    let e = dtype.bytes() as f32;
    let (bm, bn, bk) = (s.tile.m.max(1) as f32, s.tile.n.max(1) as f32, s.tile.k.max(1) as f32);
    // A split-K unit reduces its share of the k-blocks (the longest share).
    let split = s.split_k.max(1) as f32;
    let steps = libm::ceilf(libm::ceilf(depth / bk) / split);
    let sms = spec.sm_count.max(1) as f32;
    let pipelined = s.placement == Placement::Pipelined;
    // The kernel loads 16-byte vectors only where every row starts aligned;
    // other operands go element by element, synchronously, each k-step.
    let threads = s.threads().max(1) as f32;
    let scalar_a = pipelined && dims[2] % 8 != 0;
    let scalar_b = pipelined && dims[1] % 8 != 0;
    let scalar_chunks = if scalar_a { libm::ceilf(bm * bk / 8.0 / threads) } else { 0.0 }
        + if scalar_b { libm::ceilf(bk * bn / 8.0 / threads) } else { 0.0 };

    // Compute: the busiest SM's padded flops over its share of peak.
    // A ping-pong tile is one warpgroup's: four warps over its rows.
    let warps_m = if s.pingpong { 4 } else { s.warps_m.max(1) };
    let warp_area = (bm / warps_m as f32) * (bn / s.warps_n.max(1) as f32);
    let mma = if s.placement == Placement::Tma {
        bn / (bn + c.wgmma_n_half)
    } else {
        warp_area / (warp_area + c.warp_tile_half)
    };
    // A ping-pong block's two consumers take its tiles in turns: with one
    // tile on the SM, one warpgroup computes and the other waits.
    let w = if s.pingpong { 4.0 * (g.blocks_per_sm as f32).min(2.0) } else { resident_warps(g, s) };
    let busy = if spec.space.is_cuda() { (w / SUB_PARTITIONS_PER_SM).min(1.0) } else { 1.0 };
    let efficiency = if s.placement == Placement::Tma { c.tma_efficiency } else { c.compute_efficiency };
    // A ping-pong consumer of 128 rows issues two 64-row `wgmma` a k-step
    // alone and holds the whole tile's accumulators.
    let efficiency = if s.pingpong && bm > 64.0 { efficiency * c.pingpong_efficiency } else { efficiency };
    // `wgmma` is asynchronous: a warpgroup keeps its products in flight
    // without other warps to hide their latency behind.
    let hiding = if s.placement == Placement::Tma { 1.0 } else { latency_hiding(w, c.warps_half) };
    let rate_sm = spec.peak_flop_per_us(dtype) / sms * efficiency * mma * busy * hiding;
    let flops_block = 2.0 * bm * bn * bk * steps;

    // Memory: tile traffic, what of it reaches DRAM, and the bandwidth the
    // bytes in flight allow. Split-K writes every split's fp32 partial
    // sums and reads them back once.
    let blocks = g.blocks as f32;
    let partials = if split > 1.0 { batch * m * n * 4.0 * (2.0 * split - 1.0) } else { 0.0 };
    let stage_bytes = (bm + bn) * bk * e;
    let traffic = match s.placement {
        Placement::Dram => blocks * flops_block * e / (2.0 * c.register_reuse),
        _ => blocks * stage_bytes * steps,
    } + batch * m * n * e
        + partials;
    // Partial sums beyond what the L2 holds go to DRAM and back.
    let spilled = (partials - spec.l2_bytes as f32).max(0.0);
    let unique = batch * (m * depth + depth * n + m * n) * e + spilled;
    let dram = unique + c.l2_miss_rate * (traffic - unique).max(0.0);
    let in_flight = stage_bytes * (s.stages.max(2) - 1) as f32;
    let bw = bandwidth(spec, c, g, s, in_flight);
    let l2_rate = (spec.dram_bytes_per_us() * c.l2_bandwidth_ratio).min(active_sms(spec, g) * sm_draw(spec, c, s));
    // The `mma.sync` kernel's threads draw DRAM at no more than their SM's
    // share of it: the busiest SM's blocks set the time, not the average
    // (measured on decode vocabulary projections: 197 blocks on 132 SMs
    // take 1.37 times 394 half-width blocks, the busiest SM's bytes 1.34
    // times). The Hopper family's bulk copies are not held to the share;
    // its chain prices the busiest SM's bytes through its port.
    let imbalance =
        if s.placement == Placement::Tma { 1.0 } else { g.blocks_per_sm as f32 * active_sms(spec, g) / blocks };
    let t_memory = (dram / bw * imbalance).max(traffic / l2_rate);

    // Shared memory: each warp reads the rows of A and the columns of B of
    // its warp tile from the staged tile, every k-step; a `wgmma`
    // warpgroup reads its rows of A and all of B once for its four warps.
    let t_smem = if s.placement == Placement::Dram {
        0.0
    } else {
        let read = match s.placement {
            Placement::Tma => (bm + if s.pingpong { 1.0 } else { (s.warps_m / 4).max(1) as f32 } * bn) * bk * e,
            _ => (s.warps_n.max(1) as f32 * bm + s.warps_m.max(1) as f32 * bn) * bk * e,
        };
        let smem_rate = spec.peak_flop_per_us(dtype) / sms * c.smem_bytes_per_flop;
        g.blocks_per_sm as f32 * steps * read / smem_rate
    };

    // Per block: filling the pipeline and writing the output tile, whose
    // stores scatter over the rows of the mma fragments.
    let store_bw = (spec.dram_bytes_per_us() / sms).min(sm_draw(spec, c, s)) * c.store_efficiency / g.resident();
    let overhead = if s.placement == Placement::Tma { c.tma_tile_overhead_us } else { c.block_overhead_us };
    // A split-K unit stores fp32 partials; one unit in `split` also reads
    // the others' and stores the output.
    let tile_bytes = if split > 1.0 { 4.0 + ((split - 1.0) * 4.0 + e) / split } else { e };
    // The Hopper matmul's epilogue is its consumer warps' own stores (and
    // split-K's partial tiles theirs too), each thread's fragments in
    // turn: two warpgroups on a tile keep twice the stores in flight of
    // one (a ping-pong consumer is one warpgroup).
    let storers = if s.placement == Placement::Tma {
        let warps = if s.pingpong { 4 } else { s.warps().max(1) };
        4.0 / warps as f32
    } else {
        1.0
    };
    let store = bm * bn * tile_bytes / store_bw * storers;
    // Split-K's hand-over: every unit writes its partial tile (the part
    // inside the matrix) and counts itself in; the last of a tile's
    // `split` units reads the other `split - 1` back: `(2 split - 1) /
    // split` partial tiles a unit on average.
    let handover = if split > 1.0 {
        let kib = bm.min(m) * bn.min(n) * 4.0 / 1024.0;
        c.split_sync_us + kib * (2.0 * split - 1.0) / split * c.split_partial_us_per_kib * storers
    } else {
        0.0
    };
    // Ping-pong: a tile's stores run under the other consumer's main
    // loop, so a block slot waits for its last tile's alone. The
    // hand-over is not hidden (measured: split-K costs a ping-pong state
    // as much as the others).
    let (per_block, last) = if s.pingpong { (overhead + handover, store) } else { (overhead + store + handover, 0.0) };
    if s.placement == Placement::Tma {
        // A bulk copy waits the L2's latency, or DRAM's for the share of
        // the tile traffic that misses.
        let latency_scale = 1.0 + (dram / traffic.max(1.0)).min(1.0) * (c.dram_latency_ratio - 1.0);
        let t_main = hopper_chain(spec, c, s, g, [bm * bn * bk * 2.0 / rate_sm, stage_bytes, steps, latency_scale]);
        let t_main = t_main + g.per_slot() * per_block + last;
        return smooth_max(c, c.tma_overlap_exponent, g, [t_main, t_memory, 0.0, t_smem]);
    }
    let t_compute = g.blocks_per_sm as f32 * flops_block / rate_sm;
    // Steps: those a slot runs back to back; a pipeline of `stages`
    // buffers keeps `stages - 1` loads ahead of the compute.
    let ahead = if pipelined { (s.stages.max(2) - 1) as f32 } else { s.stages.max(1) as f32 };
    let ahead = if scalar_chunks > 0.0 { 1.0 } else { ahead };
    // Of that wait, the step's own compute (its tile's flops at its share
    // of the SM) covers all but `wait^2 / (wait + d)`: a large tile's long
    // step hides its loads with few stages, a small one's does not.
    let wait = c.step_latency_us / ahead;
    let d = 2.0 * bm * bn * bk * g.resident() / rate_sm;
    let wait = wait * wait / (wait + d);
    let t_steps = g.per_slot() * steps * (wait + scalar_chunks * c.scalar_load_us);
    let t_chain = chain(g, t_steps, t_compute, per_block) + last;
    smooth_max(c, c.overlap_exponent, g, [t_compute, t_memory, t_chain, t_smem])
}

/// The Hopper matmul's main loops on the busiest SM, one persistent chain:
/// its tiles' k-steps one after the other, each taking the smooth maximum
/// of its load's latency (scaled by `latency_scale` for the bytes that
/// come from DRAM), shared by the stages ahead and the blocks resident,
/// and of the larger of its `wgmma` arithmetic (`step_compute`,
/// microseconds) and its `stage_bytes` through the SM's port (at most the
/// SM's share of the L2's total rate); and the first load's latency once.
/// Arithmetic and copies run in different units, so a step costs the
/// slowest, not their sum (measured on one tile per SM: the step falls as
/// `1 / (stages - 1)` to the port's floor, then to the arithmetic of a
/// wide tile; on 16 SMs of a partition a 64 x 256 ping-pong tile runs at
/// the larger of its arithmetic and port times).
fn hopper_chain(spec: &HardwareSpec, c: &Coefficients, s: &State, g: &Grid, step: [f32; 4]) -> f32 {
    let [step_compute, stage_bytes, steps, latency_scale] = step;
    let ahead = libm::powf((s.stages.max(2) - 1) as f32, c.tma_stage_power);
    let load_latency = c.tma_latency_us * latency_scale;
    let latency = load_latency / (ahead * g.resident());
    let l2_share = spec.dram_bytes_per_us() * c.l2_bandwidth_ratio / active_sms(spec, g);
    let port = stage_bytes / sm_draw(spec, c, s).min(l2_share);
    let step = p_norm(c.tma_step_exponent, [p_norm(8.0, [step_compute, port]), latency]);
    g.blocks_per_sm as f32 * steps * step + load_latency
}

/// What a row kernel does per element: the softmax, an elementwise layer,
/// a row normalisation.
struct RowWork {
    /// Tensors read (the output is written once besides).
    operands: f32,
    /// Whether each row is reduced (the block-wide reduction, and a second
    /// pass over a row that does not fit one step).
    reduces: bool,
    /// Arithmetic per element slot, all passes over it together.
    ops_per_element: f32,
}

impl RowWork {
    /// The softmax: max, subtract, exp and sum per slot, a row reduction.
    const SOFTMAX: RowWork = RowWork { operands: 1.0, reduces: true, ops_per_element: 8.0 };

    fn of(kind: ElementwiseKind) -> RowWork {
        RowWork {
            operands: kind.operands() as f32,
            reduces: kind.reduces_rows(),
            ops_per_element: kind.flops_per_element() as f32,
        }
    }
}

/// The body of a row kernel: a softmax, or an elementwise layer run as the
/// same kernel shape (a block of rows, a column block per step, the
/// threads per row), priced with the softmax's fitted terms.
fn row_body(spec: &HardwareSpec, c: &Coefficients, s: &State, g: &Grid, dims: [u32; 3], w: RowWork) -> f32 {
    let [rows, cols, e] = dims;
    let (rows, cols, e) = (rows as f32, cols as f32, e as f32);
    let tm = s.tile.m.max(1) as f32;
    let tn = s.tile.n.max(1) as f32;
    let threads = s.threads().max(1) as f32;
    let whole_row = tn >= cols;
    // Read passes over the input: a row that fits in one step is read once;
    // otherwise an online pass (max and sum) and a normalizing pass; a
    // DRAM-streamed tile cannot keep anything on chip: max, sum, normalize.
    // Without a reduction, every element is read once.
    let reads = match (s.placement, whole_row) {
        _ if !w.reduces => 1.0,
        (Placement::Dram, _) => 3.0,
        (_, true) => 1.0,
        (_, false) => 2.0,
    };
    let col_steps = libm::ceilf(cols / tn);
    let steps = col_steps * reads;
    // Element slots each thread works through per step, used or masked.
    let per_thread = (tm * tn / threads).max(1.0);

    // Arithmetic: every slot costs a few flops (compare, subtract, exp,
    // add, and the output's exp and scale), masked ones too, once per
    // column step whatever the passes: a row kept in registers is
    // exponentiated twice (for the sum, then for the output) as a row read
    // twice is, once in each pass.
    let sms = spec.sm_count.max(1) as f32;
    let hiding = latency_hiding(resident_warps(g, s), c.softmax_warps_half);
    let rate_sm = spec.peak_tflops.f32 * 1.0e6 / sms * c.softmax_efficiency * hiding;
    // The block-wide reduction: every thread folds in every warp's partial
    // (max, sum), two exponentials each, so a block's share grows with
    // threads x warps.
    let warps = s.warps() as f32;
    let combines = if warps > 1.0 && w.reduces { warps } else { 0.0 };
    let per_thread_ops = per_thread * col_steps * w.ops_per_element + combines * c.combine_ops;
    let t_compute = g.blocks_per_sm as f32 * threads * per_thread_ops / rate_sm;

    // Memory: every element read `reads` times and written once.
    let strided = if s.layout == Layout::ColMajor { c.strided_penalty } else { 1.0 };
    // A re-read finds the row in L2 while the rows in progress fit there,
    // and comes through the L2 at its rate, at most what the busy SMs
    // draw; the rest goes back to DRAM.
    let in_progress = sms * g.resident() * tm * cols * e;
    let hit = (spec.l2_bytes as f32 / in_progress.max(1.0)).min(1.0);
    let bytes = rows * cols * e * (w.operands + 1.0 + (reads - 1.0) * (1.0 - hit));
    let reread = rows * cols * e * (reads - 1.0) * hit;
    let bw = bandwidth(spec, c, g, s, threads * per_thread * e * w.operands);
    let l2_rate = (spec.dram_bytes_per_us() * c.l2_bandwidth_ratio).min(active_sms(spec, g) * sm_draw(spec, c, s));
    let t_memory = (bytes / bw + reread / l2_rate) * strided;

    // Steps: those of a block, one after another.
    let t_steps = g.per_slot() * steps * c.softmax_step_latency_us;

    // Per block: the block-wide reduction, one turn per warp.
    let reduce = if w.reduces { (5.0 + s.warps() as f32) * c.reduce_us_per_warp } else { 0.0 };
    let per_block = c.softmax_block_overhead_us + reduce;
    let t_chain = chain(g, t_steps, t_compute, per_block);
    smooth_max(c, c.overlap_exponent, g, [t_compute, t_memory, t_chain, 0.0])
}

/// An elementwise layer run in its producer's epilogue: no launch and no
/// round trip of the first operand through memory; the epilogue reads the
/// other operands (at the streaming rate) and does the arithmetic on the
/// CUDA cores at the row kernels' fitted share of their peak (the same
/// operation run as its own kernel is priced at that rate too).
fn epilogue_cost(spec: &HardwareSpec, c: &Coefficients, kind: ElementwiseKind, rows: u32, cols: u32, e: u32) -> f32 {
    let elements = rows as f32 * cols as f32;
    let extra = (kind.operands().saturating_sub(1) * e) as f32 * elements;
    let t_memory = extra / (spec.dram_bytes_per_us() * c.memory_efficiency);
    let rate = spec.peak_tflops.f32 * 1.0e6 * c.softmax_efficiency;
    let t_compute = elements * kind.flops_per_element() as f32 / rate;
    t_memory + t_compute
}

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
