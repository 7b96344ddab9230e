//! The matmul's body: compute, memory, the chain of one block slot and
//! shared memory for the `mma.sync` family, and the Hopper family's
//! persistent chain of k-steps (`hopper_chain`).

use super::grid::{
    active_sms, bandwidth, chain, latency_hiding, p_norm, resident_warps, sm_draw, smooth_max, Grid,
    SUB_PARTITIONS_PER_SM,
};
use super::Coefficients;
use crate::dtype::DType;
use crate::spec::HardwareSpec;
use crate::state::{Placement, State};

/// The body of a matmul: the `mma.sync` family's bounds, or the Hopper
/// family's chain of k-steps (see the module overview of [`super`]).
pub(super) fn body(spec: &HardwareSpec, c: &Coefficients, s: &State, g: &Grid, dims: [u32; 4], dtype: DType) -> f32 {
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
