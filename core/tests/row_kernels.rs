//! The row kernels' cost: a softmax row that does not fit one column step
//! takes two passes, with the arithmetic of one (the kernel exponentiates
//! every element twice either way) and a second read from the L2.

mod support;

use hwwfc_core::cost::{self, Coefficients};
use hwwfc_core::space::{self, SpaceKind};
use hwwfc_core::{DType, HardwareSpec, Op, OpKind, State};

/// The softmax state of one row per block, `cols` columns a step, on `warps` warps.
fn softmax_state(cols: u16, warps: u32) -> State {
    *space::states(SpaceKind::Cuda, OpKind::Softmax)
        .iter()
        .find(|s| s.tile.m == 1 && s.tile.n == cols && s.warps() == warps)
        .unwrap_or_else(|| panic!("a 1 x {cols} softmax state on {warps} warps"))
}

/// Coefficients under which only the arithmetic costs time: memory, its
/// latency, the steps' waits and the fixed costs all but free.
fn arithmetic_only() -> Coefficients {
    Coefficients {
        memory_latency_us: 1e-9,
        sm_bytes_per_flop: 1e9,
        softmax_step_latency_us: 1e-9,
        softmax_block_overhead_us: 1e-9,
        reduce_us_per_warp: 1e-9,
        combine_ops: 1e-9,
        softmax_warps_half: 1e-9,
        block_dispatch_us: 1e-9,
        launch_scale: 1e-9,
        overlap_exponent: 8.0,
        ..Coefficients::default()
    }
}

#[test]
fn a_row_read_in_two_passes_costs_the_arithmetic_of_one() {
    // 65,536 rows of 2048 columns: one step of 2048 columns on two warps
    // holds 32 elements a thread, two steps of 1024 on one warp as many.
    let spec = HardwareSpec { dram_bandwidth_gbps: 1e9, ..support::hopper_h200() };
    let op = Op::Softmax { rows: 65_536, cols: 2048, dtype: DType::F32 };
    let c = arithmetic_only();
    let one_pass = cost::unary_cost(&spec, &c, &op, &softmax_state(2048, 2));
    let two_passes = cost::unary_cost(&spec, &c, &op, &softmax_state(1024, 1));
    // Half the threads a block, each with twice the element slots: the
    // same arithmetic a row.
    let ratio = two_passes / one_pass;
    assert!((ratio - 1.0).abs() < 0.05, "two passes {two_passes} us against one {one_pass} us");
}

#[test]
fn the_second_pass_reads_the_row_again_through_the_l2() {
    // The same two states where only the SMs' draw from the memory system
    // costs time: the second pass's bytes come through it again, so the
    // two-pass state costs about one and a half times the one-pass one
    // (one read and one write against two reads and one write).
    let spec = HardwareSpec { dram_bandwidth_gbps: 1e9, ..support::hopper_h200() };
    let op = Op::Softmax { rows: 65_536, cols: 2048, dtype: DType::F32 };
    let c =
        Coefficients { softmax_efficiency: 1.0, sm_bytes_per_flop: 1e-3, l2_bandwidth_ratio: 1e9, ..arithmetic_only() };
    let one_pass = cost::unary_cost(&spec, &c, &op, &softmax_state(2048, 2));
    let two_passes = cost::unary_cost(&spec, &c, &op, &softmax_state(1024, 1));
    let ratio = two_passes / one_pass;
    assert!((ratio - 1.5).abs() < 0.1, "two passes {two_passes} us against one {one_pass} us");
}
