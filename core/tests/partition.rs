//! Partitions of a GPU (some of its SMs, a per-block shared-memory budget)
//! as specs: what they keep, what they scale, what the constraints and the
//! cost model make of them, and the partitions refused.

mod support;

use hwwfc_core::constraint::{self, Constraint};
use hwwfc_core::cost::{self, Coefficients};
use hwwfc_core::space::{self, SpaceKind};
use hwwfc_core::spec::PartitionError;
use hwwfc_core::{resource, DType, HardwareSpec, Op, OpKind};

/// An H200's limits in the Hopper space.
fn h200() -> HardwareSpec {
    let mut s = support::hopper_limits();
    s.peak_tflops.f16 = 989.4;
    s.peak_tflops.bf16 = 989.4;
    s.peak_tflops.f32 = 66.9;
    s.dram_bandwidth_gbps = 4800.0;
    s
}

fn mm(m: u32, n: u32, k: u32) -> Op {
    Op::MatMul { m, n, k, batch: 1, dtype: DType::F16 }
}

#[test]
fn a_partition_keeps_each_sms_rates_and_shares_memory() {
    let whole = h200();
    let part = whole.partition(Some(16), None).unwrap();
    assert_eq!(part.sm_count, 16);
    assert_eq!(part.name, whole.name);
    for dtype in [DType::F16, DType::Bf16, DType::F32] {
        let per_sm = |s: &HardwareSpec| s.peak_flop_per_us(dtype) / s.sm_count as f32;
        assert!((per_sm(&part) / per_sm(&whole) - 1.0).abs() < 1e-6, "{dtype:?}");
    }
    assert_eq!(part.dram_bandwidth_gbps, whole.dram_bandwidth_gbps);
    assert_eq!(part.l2_bytes, whole.l2_bytes);
    assert_eq!(part.sram_per_block_bytes, whole.sram_per_block_bytes);
    assert_eq!(part.validate(), Ok(()));
    // The whole GPU as a partition is the GPU.
    assert_eq!(whole.partition(Some(132), None).unwrap(), whole);
    assert_eq!(whole.partition(None, None).unwrap(), whole);
}

#[test]
fn a_shared_memory_budget_removes_exactly_the_states_above_it() {
    let whole = h200();
    let op = mm(4096, 4096, 4096);
    for kb in [64u32, 100] {
        let part = whole.partition(None, Some(kb * 1024)).unwrap();
        let (mut kept, mut removed) = (0, 0);
        for s in space::states(SpaceKind::Hopper, OpKind::MatMul) {
            if !space::applicable(&op, s) || constraint::check(&whole, &op, s).is_err() {
                continue;
            }
            let over = resource::usage(&op, s).sram_bytes > kb * 1024;
            match constraint::check(&part, &op, s) {
                Ok(()) => {
                    assert!(!over, "{s:?} kept above {kb} KB");
                    kept += 1;
                }
                Err(c) => {
                    assert!(over, "{s:?} removed by {c} under {kb} KB");
                    assert_eq!(c, Constraint::SramCapacity);
                    removed += 1;
                }
            }
        }
        assert!(kept > 0 && removed > 0, "{kb} KB: {kept} kept, {removed} removed");
    }
}

#[test]
fn fewer_sms_take_longer_and_more_waves() {
    let whole = h200();
    let k = Coefficients::default();
    let op = mm(4096, 4096, 4096);
    let s = space::states(SpaceKind::Hopper, OpKind::MatMul)
        .iter()
        .find(|s| constraint::check(&whole, &op, s).is_ok())
        .unwrap();
    let mut last = 0.0;
    let mut last_waves = 0;
    for n in [132, 64, 32, 16] {
        let part = whole.partition(Some(n), None).unwrap();
        let t = cost::unary_cost(&part, &k, &op, s);
        let waves = cost::grid(&part, &op, s).waves;
        assert!(t > last, "{n} SMs: {t} us, not above {last}");
        assert!(waves >= last_waves);
        last = t;
        last_waves = waves;
    }
    // A compute-bound product on an eighth of the SMs takes several times
    // as long, but not more than about eight times (waves round up).
    let t132 = cost::unary_cost(&whole, &k, &op, s);
    let t16 = cost::unary_cost(&whole.partition(Some(16), None).unwrap(), &k, &op, s);
    assert!(t16 > 3.0 * t132 && t16 < 10.0 * t132, "{t132} us against {t16} us");
}

#[test]
fn impossible_partitions_are_refused() {
    let whole = h200();
    assert_eq!(whole.partition(Some(0), None), Err(PartitionError::NoSms));
    assert_eq!(whole.partition(Some(133), None), Err(PartitionError::TooManySms { asked: 133, available: 132 }));
    assert_eq!(whole.partition(None, Some(0)), Err(PartitionError::NoSram));
    assert_eq!(
        whole.partition(None, Some(300 * 1024)),
        Err(PartitionError::SramExceeds { asked: 307_200, available: 232_448 })
    );
    let e = whole.partition(Some(133), None).unwrap_err().to_string();
    assert!(e.contains("133") && e.contains("132"), "{e}");
}
