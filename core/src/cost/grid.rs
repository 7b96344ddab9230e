//! How a state's grid of blocks maps onto the device (occupancy, waves,
//! the busiest SM's share), and the bounds every body shares: what an SM
//! can draw, the bandwidth the bytes in flight allow, the chain of one
//! block slot and the smooth maximum of the bounds.

use super::Coefficients;
use crate::dtype::DType;
use crate::layer::Op;
use crate::resource;
use crate::spec::HardwareSpec;
use crate::state::{Placement, State};

pub(super) fn ceil_div(a: u64, b: u64) -> u64 {
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
    pub(super) fn resident(&self) -> f32 {
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
pub(super) fn sm_draw(spec: &HardwareSpec, c: &Coefficients, s: &State) -> f32 {
    if !spec.space.is_cuda() {
        // A scratchpad accelerator's cores are fed by DMA, not by ports of
        // their own: no bound of this kind.
        return f32::INFINITY;
    }
    let per_flop = if s.placement == Placement::Tma { c.tma_sm_bytes_per_flop } else { c.sm_bytes_per_flop };
    spec.peak_flop_per_us(DType::F16) / spec.sm_count.max(1) as f32 * per_flop
}

/// SMs that the grid keeps busy.
pub(super) fn active_sms(spec: &HardwareSpec, g: &Grid) -> f32 {
    (g.blocks as f32).min(spec.sm_count.max(1) as f32)
}

/// DRAM bandwidth the grid can draw, in bytes per microsecond: the
/// streaming rate (at most what its busy SMs can draw), lowered by the
/// latency that the bytes in flight do not cover (Little's law, combined
/// harmonically with the streaming rate). A scratchpad (`Sram`) tile is
/// moved by DMA as a whole, so only loads issued by threads are bounded.
pub(super) fn bandwidth(spec: &HardwareSpec, c: &Coefficients, g: &Grid, s: &State, in_flight_per_block: f32) -> f32 {
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
pub(super) const SUB_PARTITIONS_PER_SM: f32 = 4.0;

/// Resident warps of the busiest SM.
pub(super) fn resident_warps(g: &Grid, s: &State) -> f32 {
    g.resident() * s.warps().max(1) as f32
}

/// Share of peak that `w` resident warps reach by hiding each other's
/// latency, half of it at `half` warps.
pub(super) fn latency_hiding(w: f32, half: f32) -> f32 {
    w / (w + half)
}

/// The smooth maximum `(sum t^p)^(1/p)` of `terms` (0 where none is
/// positive), scaled by the largest so that the powers stay in range.
pub(super) fn p_norm<const N: usize>(p: f32, terms: [f32; N]) -> f32 {
    let m = terms.iter().fold(0.0f32, |a, &b| a.max(b));
    if m <= 0.0 {
        return 0.0;
    }
    let s = terms.iter().fold(0.0f32, |acc, &t| acc + libm::powf(t / m, p));
    m * libm::powf(s, 1.0 / p)
}

/// The smooth maximum of the bounds of a body, with the block-dispatch
/// bound of the grid among them.
pub(super) fn smooth_max(c: &Coefficients, p: f32, g: &Grid, terms: [f32; 4]) -> f32 {
    let dispatch = g.blocks_per_sm as f32 * c.block_dispatch_us;
    p_norm(p, [terms[0], terms[1], terms[2], terms[3], dispatch])
}

/// The chain of one block slot: the exposed time of its steps `t_steps`,
/// its share `1 / resident` of the busiest SM's compute `t_compute` (the
/// other resident blocks run during its stalls), and its fixed work
/// `per_block`, once for every block it runs.
pub(super) fn chain(g: &Grid, t_steps: f32, t_compute: f32, per_block: f32) -> f32 {
    t_steps + t_compute / g.resident() + g.per_slot() * per_block
}
