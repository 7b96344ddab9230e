//! The cost model: predicted time in microseconds of one layer in one
//! state (the unary cost) and of the data movement between two adjacent
//! layers (the transition cost).
//!
//! # Unary cost
//!
//! A layer runs as a grid of blocks. With `occ` blocks resident per SM
//! (bounded by SRAM, threads, registers and the block limit: occupancy),
//! the device holds `slots = SMs x occ` blocks at once and runs the grid in
//! `waves = ceil(blocks / slots)` waves (wave quantization). The busiest SM
//! runs `ceil(blocks / SMs)` blocks. Three times bound the body:
//!
//! - compute: the busiest SM's flops (padded to whole tiles: edge waste)
//!   over its share of peak, scaled by the matrix-instruction efficiency of
//!   the warp tile `a / (a + warp_tile_half)`;
//! - memory: bytes from DRAM (each operand once, plus the re-reads between
//!   tiles that miss in L2) over the bandwidth, and the tile traffic over
//!   the L2 bandwidth; the tile traffic falls with the tile's reuse
//!   `BM*BN/(BM+BN)`;
//! - latency: the k-loop steps a slot runs one after another, each costing
//!   `step_latency_us` divided by the pipeline depth.
//!
//! They combine in a smooth maximum `(c^p + m^p + l^p)^(1/p)`, so that no
//! term saturates the score: every tile shape, wave count and pipeline
//! depth moves the prediction. Per-block and per-launch overheads add on.
//!
//! # Transition cost
//!
//! When a layer's input layout differs from its producer's output layout,
//! or tiled layouts of different tile shapes meet, the tensor is rewritten
//! once (read and write over the DRAM bandwidth, plus a launch). The
//! model's input and output are row-major.
//!
//! All arithmetic is `f32` with `libm`, in a fixed order, so the host and a
//! Cortex-M4F compute the same bits.

use crate::dtype::DType;
use crate::layer::Op;
use crate::resource;
use crate::spec::HardwareSpec;
use crate::state::{Layout, Placement, State};
use serde::{Deserialize, Serialize};

/// Version of the [`Coefficients`] layout; stored in coefficient files.
pub const COEFFICIENTS_VERSION: u8 = 1;

/// The cost model's coefficients. Defaults come from datasheet figures and
/// common rules of thumb; `hwwfc calibrate` fits them to measured times.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, postcard::experimental::max_size::MaxSize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[serde(deny_unknown_fields)]
pub struct Coefficients {
    /// Share of peak arithmetic a well-shaped tile reaches.
    pub compute_efficiency: f32,
    /// Share of peak DRAM bandwidth reached by streaming reads.
    pub memory_efficiency: f32,
    /// L2-to-SM bandwidth as a multiple of the DRAM bandwidth.
    pub l2_bandwidth_ratio: f32,
    /// Share of the re-reads between tiles that miss in L2.
    pub l2_miss_rate: f32,
    /// DRAM bandwidth one SM can draw, as a multiple of its fair share
    /// (bandwidth / SMs).
    pub sm_bandwidth_multiple: f32,
    /// Warp-tile area (elements) at which the matrix units reach half of
    /// `compute_efficiency`.
    pub warp_tile_half: f32,
    /// Latency of one k-loop step (or softmax step) that a single stage
    /// does not hide, in microseconds.
    pub step_latency_us: f32,
    /// Fixed cost per block (prologue, epilogue), in microseconds.
    pub block_overhead_us: f32,
    /// Multiplier on the spec's launch overhead.
    pub launch_scale: f32,
    /// Exponent of the smooth maximum of the compute, memory and latency
    /// times (large: a hard maximum; 1: their sum).
    pub overlap_exponent: f32,
    /// Operand reuse in registers of a DRAM-streamed tile (elements).
    pub register_reuse: f32,
    /// Slowdown of a row reduction over a column-major tensor.
    pub strided_penalty: f32,
    /// Multiplier on the time of a layout change between layers.
    pub transition_scale: f32,
}

impl Default for Coefficients {
    fn default() -> Self {
        Coefficients {
            compute_efficiency: 0.75,
            memory_efficiency: 0.85,
            l2_bandwidth_ratio: 3.0,
            l2_miss_rate: 0.15,
            sm_bandwidth_multiple: 4.0,
            warp_tile_half: 256.0,
            step_latency_us: 0.5,
            block_overhead_us: 1.0,
            launch_scale: 1.0,
            overlap_exponent: 4.0,
            register_reuse: 4.0,
            strided_penalty: 4.0,
            transition_scale: 1.0,
        }
    }
}

/// Number of coefficients.
pub const COEFFICIENT_COUNT: usize = 13;

/// Names of the coefficients, in field order (for reports and fitting).
pub const COEFFICIENT_NAMES: [&str; COEFFICIENT_COUNT] = [
    "compute_efficiency",
    "memory_efficiency",
    "l2_bandwidth_ratio",
    "l2_miss_rate",
    "sm_bandwidth_multiple",
    "warp_tile_half",
    "step_latency_us",
    "block_overhead_us",
    "launch_scale",
    "overlap_exponent",
    "register_reuse",
    "strided_penalty",
    "transition_scale",
];

impl Coefficients {
    /// The coefficients as an array, in the order of [`COEFFICIENT_NAMES`].
    pub fn to_array(&self) -> [f32; COEFFICIENT_COUNT] {
        [
            self.compute_efficiency,
            self.memory_efficiency,
            self.l2_bandwidth_ratio,
            self.l2_miss_rate,
            self.sm_bandwidth_multiple,
            self.warp_tile_half,
            self.step_latency_us,
            self.block_overhead_us,
            self.launch_scale,
            self.overlap_exponent,
            self.register_reuse,
            self.strided_penalty,
            self.transition_scale,
        ]
    }

    /// Coefficients from an array in the order of [`COEFFICIENT_NAMES`].
    pub fn from_array(a: [f32; COEFFICIENT_COUNT]) -> Self {
        let [compute_efficiency, memory_efficiency, l2_bandwidth_ratio, l2_miss_rate, sm_bandwidth_multiple, warp_tile_half, step_latency_us, block_overhead_us, launch_scale, overlap_exponent, register_reuse, strided_penalty, transition_scale] =
            a;
        Coefficients {
            compute_efficiency,
            memory_efficiency,
            l2_bandwidth_ratio,
            l2_miss_rate,
            sm_bandwidth_multiple,
            warp_tile_half,
            step_latency_us,
            block_overhead_us,
            launch_scale,
            overlap_exponent,
            register_reuse,
            strided_penalty,
            transition_scale,
        }
    }

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

/// Blocks of `state` resident on one SM at once (at least 1).
pub fn occupancy(spec: &HardwareSpec, op: &Op, state: &State) -> u32 {
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

/// The grid of `state` on `op`.
pub fn grid(spec: &HardwareSpec, op: &Op, state: &State) -> Grid {
    let t = &state.tile;
    let blocks = match *op {
        Op::MatMul { m, n, batch, .. } => {
            batch as u64 * ceil_div(m as u64, t.m as u64) * ceil_div(n as u64, t.n as u64)
        }
        Op::Softmax { rows, .. } => ceil_div(rows as u64, t.m as u64),
    };
    let occupancy = occupancy(spec, op, state);
    let sms = spec.sm_count.max(1) as u64;
    let slots = sms * occupancy as u64;
    let waves = ceil_div(blocks, slots);
    let last = blocks - (waves.saturating_sub(1)) * slots;
    Grid { blocks, occupancy, waves, blocks_per_sm: ceil_div(blocks, sms), last_wave_fill: last as f32 / slots as f32 }
}

/// DRAM bandwidth the grid can draw, in bytes per microsecond: one SM pulls
/// at most `sm_bandwidth_multiple` times its fair share, so a grid of few
/// blocks cannot saturate the memory system.
fn bandwidth(spec: &HardwareSpec, c: &Coefficients, g: &Grid) -> f32 {
    let sms = spec.sm_count.max(1) as f32;
    let active = (g.blocks as f32).min(sms);
    let share = (active * c.sm_bandwidth_multiple / sms).min(1.0);
    spec.dram_bytes_per_us() * share
}

fn smooth_max(a: f32, b: f32, c: f32, p: f32) -> f32 {
    let m = a.max(b).max(c);
    if m <= 0.0 {
        return 0.0;
    }
    // Scale by the largest term so the powers stay in range.
    let s = libm::powf(a / m, p) + libm::powf(b / m, p) + libm::powf(c / m, p);
    m * libm::powf(s, 1.0 / p)
}

/// Predicted time of `op` in `state`, in microseconds (finite, positive).
pub fn unary_cost(spec: &HardwareSpec, k: &Coefficients, op: &Op, state: &State) -> f32 {
    let g = grid(spec, op, state);
    let body = match *op {
        Op::MatMul { m, n, k: depth, batch, dtype } => matmul_body(spec, k, state, &g, [m, n, depth, batch], dtype),
        Op::Softmax { rows, cols, dtype } => softmax_body(spec, k, state, &g, rows, cols, dtype.bytes()),
    };
    let overhead = g.waves as f32 * k.block_overhead_us + spec.launch_overhead_us * k.launch_scale;
    body + overhead
}

fn matmul_body(spec: &HardwareSpec, c: &Coefficients, s: &State, g: &Grid, dims: [u32; 4], dtype: DType) -> f32 {
    let [m, n, depth, batch] = dims.map(|d| d as f32);
    let e = dtype.bytes();
    let (bm, bn, bk) = (s.tile.m.max(1) as f32, s.tile.n.max(1) as f32, s.tile.k.max(1) as f32);
    let e = e as f32;
    let steps = libm::ceilf(depth / bk);
    let sms = spec.sm_count.max(1) as f32;

    // Compute: the busiest SM's padded flops over its share of peak.
    let warp_area = (bm / s.warps_m.max(1) as f32) * (bn / s.warps_n.max(1) as f32);
    let mma = warp_area / (warp_area + c.warp_tile_half);
    let rate_sm = spec.peak_flop_per_us(dtype) / sms;
    let flops_block = 2.0 * bm * bn * bk * steps;
    let t_compute = g.blocks_per_sm as f32 * flops_block / (rate_sm * c.compute_efficiency * mma);

    // Memory: tile traffic, and what of it reaches DRAM.
    let blocks = g.blocks as f32;
    let traffic = match s.placement {
        Placement::Dram => blocks * flops_block * e / (2.0 * c.register_reuse),
        _ => blocks * (bm + bn) * bk * steps * e,
    } + batch * m * n * e;
    let unique = batch * (m * depth + depth * n + m * n) * e;
    let dram = unique + c.l2_miss_rate * (traffic - unique).max(0.0);
    let bw = bandwidth(spec, c, g);
    let t_memory = (dram / (bw * c.memory_efficiency)).max(traffic / (bw * c.l2_bandwidth_ratio));

    // Latency: the steps a slot runs back to back.
    let per_slot = libm::ceilf(g.blocks_per_sm as f32 / g.occupancy as f32);
    let t_latency = per_slot * steps * c.step_latency_us / s.stages.max(1) as f32;

    smooth_max(t_compute, t_memory, t_latency, c.overlap_exponent)
}

fn softmax_body(spec: &HardwareSpec, c: &Coefficients, s: &State, g: &Grid, rows: u32, cols: u32, e: u32) -> f32 {
    let (rows, cols, e) = (rows as f32, cols as f32, e as f32);
    let tn = s.tile.n.max(1) as f32;
    let whole_row = tn >= cols;
    // Read passes over the input: a row that fits in one step is read once;
    // otherwise an online pass (max and sum) and a normalizing pass; a
    // DRAM-streamed tile cannot keep anything on chip: max, sum, normalize.
    let reads = match (s.placement, whole_row) {
        (Placement::Dram, _) => 3.0,
        (_, true) => 1.0,
        (_, false) => 2.0,
    };
    let strided = if s.layout == Layout::ColMajor { c.strided_penalty } else { 1.0 };
    let bytes = rows * cols * e * (reads + 1.0);
    let t_memory = bytes * strided / (bandwidth(spec, c, g) * c.memory_efficiency);

    // Arithmetic: five flops per element and pass, spread over the SMs
    // as unevenly as the blocks are (the busiest SM sets the pace).
    let sms = spec.sm_count.max(1) as f32;
    let imbalance = g.blocks_per_sm as f32 * sms / g.blocks.max(1) as f32;
    let flops = 5.0 * rows * cols * reads;
    let t_compute = flops * imbalance / (spec.peak_tflops.f32 * 1.0e6 * c.compute_efficiency);

    // Steps per row: column blocks per pass; a step's latency is shared by
    // the elements each thread holds (more independent loads in flight).
    let steps = libm::ceilf(cols / tn) * reads;
    let per_thread = (tn / s.threads().max(1) as f32).max(1.0);
    let per_slot = libm::ceilf(g.blocks_per_sm as f32 / g.occupancy as f32);
    let t_latency = per_slot * steps * c.step_latency_us / libm::sqrtf(per_thread);
    smooth_max(t_compute, t_memory, t_latency, c.overlap_exponent)
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

/// Transition cost of the tensor of `bytes` between a producer in `prev`
/// and a consumer in `next`, in microseconds.
pub fn transition_cost(spec: &HardwareSpec, k: &Coefficients, bytes: u64, prev: &State, next: &State) -> f32 {
    if needs_rewrite(prev, next) {
        rewrite_cost(spec, k, bytes)
    } else {
        0.0
    }
}

/// Bytes of the layer's input that arrives from outside the graph.
pub fn input_bytes(op: &Op) -> u64 {
    match *op {
        Op::MatMul { m, k, batch, dtype, .. } => m as u64 * k as u64 * batch as u64 * dtype.bytes() as u64,
        Op::Softmax { rows, cols, dtype } => rows as u64 * cols as u64 * dtype.bytes() as u64,
    }
}
