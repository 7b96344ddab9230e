//! The row kernels' body (the softmax, an elementwise layer, a row
//! normalisation: one block per group of rows), and the cost of an
//! elementwise layer fused into its producer's epilogue.

use super::grid::{active_sms, bandwidth, chain, latency_hiding, resident_warps, sm_draw, smooth_max, Grid};
use super::Coefficients;
use crate::layer::ElementwiseKind;
use crate::spec::HardwareSpec;
use crate::state::{Layout, Placement, State};

/// What a row kernel does per element: the softmax, an elementwise layer,
/// a row normalisation.
pub(super) struct RowWork {
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
    pub(super) const SOFTMAX: RowWork = RowWork { operands: 1.0, reduces: true, ops_per_element: 8.0 };

    pub(super) fn of(kind: ElementwiseKind) -> RowWork {
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
pub(super) fn body(spec: &HardwareSpec, c: &Coefficients, s: &State, g: &Grid, dims: [u32; 3], w: RowWork) -> f32 {
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
pub(super) fn epilogue_cost(
    spec: &HardwareSpec,
    c: &Coefficients,
    kind: ElementwiseKind,
    rows: u32,
    cols: u32,
    e: u32,
) -> f32 {
    let elements = rows as f32 * cols as f32;
    let extra = (kind.operands().saturating_sub(1) * e) as f32 * elements;
    let t_memory = extra / (spec.dram_bytes_per_us() * c.memory_efficiency);
    let rate = spec.peak_tflops.f32 * 1.0e6 * c.softmax_efficiency;
    let t_compute = elements * kind.flops_per_element() as f32 / rate;
    t_memory + t_compute
}
