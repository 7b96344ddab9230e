//! The Hopper space: the `mma.sync` matmul's states keep their indices,
//! the TMA family's states obey the kernel's layout, and the constraints
//! remove them where the TMA cannot describe the operands.

mod support;

use hwwfc_core::constraint::{self, Constraint};
use hwwfc_core::cost::{self, Coefficients};
use hwwfc_core::space::{self, SpaceKind};
use hwwfc_core::{resource, DType, HardwareSpec, Op, OpKind, Placement, State};

/// An H200's limits (as the device reports them) in the Hopper space.
fn hopper() -> HardwareSpec {
    support::hopper_limits()
}

fn mm(m: u32, n: u32, k: u32, dtype: DType) -> Op {
    Op::MatMul { m, n, k, batch: 1, dtype }
}

fn tma_states() -> impl Iterator<Item = &'static State> {
    space::states(SpaceKind::Hopper, OpKind::MatMul).iter().filter(|s| s.placement == Placement::Tma)
}

/// Every TMA state of the table with each split factor the kernel takes.
fn split_states() -> impl Iterator<Item = State> {
    tma_states().flat_map(|s| [1, 2, 4, 8].map(|split_k| State { split_k, ..*s }))
}

/// The ping-pong states the kernel takes: two consumers, each with whole
/// tiles of 64 or 128 rows, with the table's tile columns and stages.
fn pingpong_states() -> impl Iterator<Item = State> {
    tma_states()
        .filter(|s| s.warps_m == 8 && s.tile.m == 128)
        .flat_map(|s| [64, 128].map(|m| State { tile: hwwfc_core::state::Tile { m, ..s.tile }, pingpong: true, ..*s }))
}

#[test]
fn the_cuda_tables_are_prefixes_of_the_hopper_tables() {
    for kind in [OpKind::MatMul, OpKind::Softmax] {
        let cuda = space::states(SpaceKind::Cuda, kind);
        let hopper = space::states(SpaceKind::Hopper, kind);
        assert_eq!(&hopper[..cuda.len()], cuda, "{kind:?}");
        assert!(hopper[cuda.len()..].iter().all(|s| s.placement == Placement::Tma));
    }
    assert!(space::states(SpaceKind::Cuda, OpKind::MatMul).iter().all(|s| s.placement == Placement::Pipelined));
    assert!(tma_states().count() >= 48);
    assert!(space::states(SpaceKind::Hopper, OpKind::MatMul).len() <= 64 * hwwfc_core::HOST_DOMAIN_WORDS);
}

#[test]
fn a_tma_block_has_a_producer_warpgroup_besides_its_consumers() {
    for s in tma_states() {
        let consumers = s.warps_m as u32 / 4;
        assert_eq!(s.threads(), 128 * (consumers + 1));
        assert_eq!(s.warps(), 4 * consumers);
    }
}

#[test]
fn operands_the_tma_cannot_describe_remove_the_family_with_its_reason() {
    let spec = hopper();
    // K = 77 fp16 (154-byte rows), N = 50257 (odd): not 16-byte multiples.
    for op in [mm(512, 4096, 77, DType::F16), mm(1, 50257, 768, DType::F16)] {
        for s in tma_states() {
            assert_eq!(constraint::check(&spec, &op, s), Err(Constraint::Alignment), "{op:?} {s:?}");
        }
        let served = space::states(SpaceKind::Hopper, OpKind::MatMul)
            .iter()
            .filter(|s| s.placement == Placement::Pipelined)
            .any(|s| constraint::check(&spec, &op, s).is_ok());
        assert!(served, "{op:?}: the mma.sync family must serve it");
    }
    // Aligned rows: the family is there.
    let op = mm(4096, 4096, 4096, DType::F16);
    assert!(tma_states().any(|s| constraint::check(&spec, &op, s).is_ok()));
}

#[test]
fn the_kernels_layout_and_limits_decide_which_tma_states_remain() {
    let spec = hopper();
    let op = mm(4096, 4096, 4096, DType::Bf16);
    for s in tma_states() {
        let consumers = (s.warps_m / 4) as u16;
        // Ping-pong: each of the two consumers holds whole tiles.
        let rows = if s.pingpong { s.tile.m } else { s.tile.m / consumers };
        let accumulators = rows as u32 * s.tile.n as u32 / 128;
        let smem = resource::usage(&op, s).sram_bytes;
        // In the order the constraints are checked.
        let expected = if smem > spec.sram_per_block_bytes {
            Err(Constraint::SramCapacity)
        } else if accumulators + resource::BASE_REGISTERS_PER_THREAD > resource::TMA_CONSUMER_REGISTERS {
            Err(Constraint::Registers)
        } else if !(rows == 64 || rows == 128) {
            Err(Constraint::Geometry)
        } else {
            Ok(())
        };
        assert_eq!(constraint::check(&spec, &op, s), expected, "{s:?}");
        // The kernel's shared memory: stages of A and B, barriers, 1 KB of
        // alignment slack.
        let stage = (s.tile.m as u32 + s.tile.n as u32) * 64 * 2;
        assert_eq!(smem, s.stages as u32 * (stage + 16) + 1024);
    }
    // fp32 operands are not the kernel's: every state is removed.
    let f32 = mm(4096, 4096, 4096, DType::F32);
    assert!(tma_states().all(|s| constraint::check(&spec, &f32, s).is_err()));
}

#[test]
fn a_tma_grid_is_persistent_one_block_per_sm_walking_the_tiles() {
    let spec = hopper();
    let op = mm(4096, 4096, 4096, DType::F16);
    let s = tma_states()
        .find(|s| s.tile.m == 128 && s.tile.n == 256 && s.warps_m == 8 && constraint::check(&spec, &op, s).is_ok())
        .unwrap();
    let g = cost::grid(&spec, &op, s);
    assert_eq!(g.occupancy, 1);
    assert_eq!(g.blocks, 32 * 16);
    assert_eq!(g.waves, (32 * 16u64).div_ceil(132));
    assert_eq!(g.blocks_per_sm, g.waves);
    let t = cost::unary_cost(&spec, &Coefficients::default(), &op, s);
    assert!(t.is_finite() && t > 0.0);
}

#[test]
fn split_k_stays_within_the_k_blocks_and_belongs_to_the_hopper_family() {
    let spec = hopper();
    // K = 192: three k-blocks, so the splits of 1 and 2 remain, 4 and 8 not.
    let op = mm(8, 4096, 192, DType::F16);
    let mut kept = [0usize; 9];
    for s in split_states() {
        let unsplit = State { split_k: 1, ..s };
        if constraint::check(&spec, &op, &unsplit).is_err() {
            continue;
        }
        let expected = if s.split_k <= 3 { Ok(()) } else { Err(Constraint::Geometry) };
        assert_eq!(constraint::check(&spec, &op, &s), expected, "{s:?}");
        kept[s.split_k as usize] += expected.is_ok() as usize;
    }
    assert!(kept[1] > 0 && kept[1] == kept[2] && kept[4] == 0 && kept[8] == 0, "{kept:?}");
    // The mma.sync family does not split: a split state of it is removed.
    let op = mm(4096, 4096, 4096, DType::F16);
    for s in space::states(SpaceKind::Hopper, OpKind::MatMul).iter().filter(|s| s.placement != Placement::Tma) {
        assert_eq!(s.split_k, 1);
        if constraint::check(&spec, &op, s).is_ok() {
            let split = State { split_k: 2, ..*s };
            assert_eq!(constraint::check(&spec, &op, &split), Err(Constraint::Geometry), "{s:?}");
        }
    }
}

#[test]
fn split_k_multiplies_the_blocks_and_the_model_splits_only_few_tiles_over_a_long_k() {
    let spec = support::hopper_h200();
    let c = Coefficients::default();
    let best = |op: &Op, split: bool| {
        split_states()
            .filter(|s| (s.split_k > 1) == split && constraint::check(&spec, op, s).is_ok())
            .map(|s| cost::unary_cost(&spec, &c, op, &s))
            .fold(f32::INFINITY, f32::min)
    };
    // A decode projection: one row of tiles, 14336-long reduction.
    let decode = mm(16, 4096, 14336, DType::F16);
    let s = split_states().find(|s| s.split_k == 4 && constraint::check(&spec, &decode, s).is_ok()).unwrap();
    let unsplit = State { split_k: 1, ..s };
    assert_eq!(cost::grid(&spec, &decode, &s).blocks, 4 * cost::grid(&spec, &decode, &unsplit).blocks);
    assert!(best(&decode, true) < best(&decode, false), "{} {}", best(&decode, true), best(&decode, false));
    // A large square product fills the GPU without splitting.
    let square = mm(4096, 4096, 4096, DType::F16);
    assert!(best(&square, false) < best(&square, true), "{} {}", best(&square, false), best(&square, true));
}

#[test]
fn ping_pong_takes_two_consumers_each_with_whole_tiles() {
    let spec = hopper();
    let op = mm(4096, 4096, 4096, DType::F16);
    let pingpong: Vec<State> = pingpong_states().collect();
    assert!(!pingpong.is_empty());
    for s in &pingpong {
        assert_eq!(s.warps_m, 8, "{s:?}");
        assert_eq!(s.threads(), 3 * 128);
        let ok = constraint::check(&spec, &op, s);
        // A consumer holds a whole tile's accumulators: 128 x 256 is too many.
        let accumulators = s.tile.m as u32 * s.tile.n as u32 / 128;
        if resource::usage(&op, s).sram_bytes > spec.sram_per_block_bytes {
            assert_eq!(ok, Err(Constraint::SramCapacity), "{s:?}");
        } else if accumulators + resource::BASE_REGISTERS_PER_THREAD > resource::TMA_CONSUMER_REGISTERS {
            assert_eq!(ok, Err(Constraint::Registers), "{s:?}");
        } else {
            assert_eq!(ok, Ok(()), "{s:?}");
        }
        // The same tile shared by two cooperative consumers is a different
        // state, with half the accumulators each.
        let cooperative = State { pingpong: false, ..*s };
        if s.tile.m == 128 {
            assert_eq!(
                resource::usage(&op, &cooperative).registers_per_thread * 2,
                resource::usage(&op, s).registers_per_thread + resource::BASE_REGISTERS_PER_THREAD
            );
        }
        // One consumer cannot ping-pong, nor can the mma.sync family.
        if ok.is_ok() {
            let alone = State { warps_m: 4, ..*s };
            assert_eq!(constraint::check(&spec, &op, &alone), Err(Constraint::Geometry), "{s:?}");
        }
    }
    for s in space::states(SpaceKind::Hopper, OpKind::MatMul).iter().filter(|s| s.placement != Placement::Tma) {
        if constraint::check(&spec, &op, s).is_ok() {
            let pp = State { pingpong: true, ..*s };
            assert_eq!(constraint::check(&spec, &op, &pp), Err(Constraint::Geometry), "{s:?}");
        }
    }
    // A legal ping-pong state has a finite cost.
    let pp = pingpong.iter().find(|s| s.tile.m == 128 && s.tile.n == 128 && s.stages == 4).unwrap();
    assert_eq!(constraint::check(&spec, &op, pp), Ok(()));
    assert!(cost::unary_cost(&spec, &Coefficients::default(), &op, pp).is_finite());
}

#[test]
fn a_hopper_k_step_waits_its_load_over_the_stages_ahead_down_to_the_ports_floor() {
    // One 128 x 128 tile on each of 64 SMs, a long reduction: the main
    // loop is all there is.
    let spec = support::hopper_h200();
    let c = Coefficients::default();
    let op = mm(128, 64 * 128, 16384, DType::F16);
    let at = |stages: u8| {
        let s = tile_128(stages);
        assert_eq!(constraint::check(&spec, &op, s), Ok(()), "{s:?}");
        assert_eq!(cost::grid(&spec, &op, s).blocks_per_sm, 1);
        cost::unary_cost(&spec, &c, &op, s)
    };
    let t: Vec<f32> = [2, 3, 4, 6].into_iter().map(at).collect();
    // Each stage ahead shares the load's latency: the time falls...
    assert!(t.windows(2).all(|w| w[1] < w[0]), "{t:?}");
    // ...by about half from one stage ahead to two, and by less and less
    // once the SM's port, not the latency, bounds a step.
    let steps = 16384.0 / 64.0;
    let step_2 = c.tma_latency_us;
    assert!(t[0] > steps * step_2, "{} against {}", t[0], steps * step_2);
    assert!((t[0] - t[1]) / t[0] > 0.3, "{t:?}");
    assert!((t[2] - t[3]) / t[2] < 0.2, "{t:?}");
    // The arithmetic floor: a wide tile's steps cost at least its wgmma.
    let wide = tma_states()
        .find(|s| s.tile.m == 128 && s.tile.n == 256 && s.warps_m == 8 && s.stages == 4 && !s.pingpong)
        .unwrap();
    let op = mm(128, 64 * 256, 16384, DType::F16);
    let per_sm = spec.peak_flop_per_us(DType::F16) / spec.sm_count as f32;
    let mma = 256.0 / (256.0 + c.wgmma_n_half);
    let floor = 2.0 * 128.0 * 256.0 * 16384.0 / (per_sm * c.tma_efficiency * mma);
    assert!(cost::unary_cost(&spec, &c, &op, wide) > floor);
}

#[test]
fn an_mma_sync_matmul_streams_its_busiest_sms_blocks_at_that_sms_share_of_dram() {
    // A decode projection (16 rows) is all weight traffic. 197 blocks of
    // 16 x 256 put two on 65 of the 132 SMs and one on the rest: the
    // busiest SMs stream twice the bytes at their share of the DRAM
    // bandwidth, while 394 blocks of 16 x 128 fall three to an SM, nearly
    // evenly (measured on the H200: 1.37 times the time, the busiest SM's
    // bytes 1.34 times).
    let spec = support::hopper_h200();
    let c = Coefficients::default();
    let pick = |n: u16| {
        space::states(SpaceKind::Hopper, OpKind::MatMul)
            .iter()
            .find(|s| {
                s.placement == Placement::Pipelined
                    && s.tile.m == 16
                    && s.tile.n == n
                    && s.tile.k == 64
                    && s.stages == 3
                    && s.warps_m == 1
                    && s.warps_n == 2
            })
            .unwrap()
    };
    let (wide, narrow) = (pick(256), pick(128));
    let ratio = |n: u32| {
        let op = mm(16, n, 4096, DType::F16);
        let t = |s: &State| {
            assert_eq!(constraint::check(&spec, &op, s), Ok(()), "{s:?}");
            cost::unary_cost(&spec, &c, &op, s)
        };
        t(wide) / t(narrow)
    };
    let uneven = ratio(197 * 256);
    assert!(uneven > 1.2, "{uneven}");
    // Two wide blocks on every SM, four narrow ones: the same bytes on
    // each SM either way.
    let even = ratio(264 * 256);
    assert!((even - 1.0).abs() < 0.1, "{even}");
}

#[test]
fn the_stages_power_shares_the_load_latency_among_the_stages_ahead() {
    // One 128 x 128 tile on each of 64 SMs, a long reduction. With one
    // stage ahead the power changes nothing; with more, a larger power
    // hides more of the latency.
    let spec = support::hopper_h200();
    let op = mm(128, 64 * 128, 16384, DType::F16);
    let at = |stages: u8, power: f32| {
        let c = Coefficients { tma_stage_power: power, ..Coefficients::default() };
        let s = tile_128(stages);
        cost::unary_cost(&spec, &c, &op, s)
    };
    assert_eq!(at(2, 1.0), at(2, 1.5));
    assert!(at(4, 1.5) < at(4, 1.0), "{} against {}", at(4, 1.5), at(4, 1.0));
    assert!(at(6, 1.5) < at(6, 1.0));
}

/// A 128 x 128 TMA tile without ping-pong, `stages` deep.
fn tile_128(stages: u8) -> &'static State {
    tma_states()
        .find(|s| s.tile.m == 128 && s.tile.n == 128 && s.warps_m == 8 && s.stages == stages && !s.pingpong)
        .unwrap()
}

#[test]
fn a_hopper_k_step_waits_dram_latency_for_the_share_of_its_bytes_that_misses_the_l2() {
    // A decode-like matmul streams its weights once: almost every byte of
    // its tiles comes from DRAM, so its two-stage pipeline waits the
    // DRAM's latency. A square prefill reuses its tiles from the L2 and
    // waits mostly the L2's.
    let spec = support::hopper_h200();
    let at = |op: &Op, ratio: f32| {
        let c = Coefficients { dram_latency_ratio: ratio, ..Coefficients::default() };
        cost::unary_cost(&spec, &c, op, tile_128(2))
    };
    let decode = mm(128, 64 * 128, 16384, DType::F16);
    let prefill = mm(8192, 8192, 8192, DType::F16);
    let grows = |op: &Op| at(op, 3.0) / at(op, 1.0);
    // Three times the latency: the decode's steps, latency-bound, take
    // about twice as long; the prefill's (a fifth of their bytes from
    // DRAM) about a third longer.
    assert!(grows(&decode) > 1.8, "{}", grows(&decode));
    assert!(grows(&prefill) < 1.4, "{}", grows(&prefill));
}

#[test]
fn the_hopper_port_draws_at_most_its_share_of_the_l2s_total_rate() {
    // A port-bound main loop (one 128 x 128 tile on every SM, a long
    // reduction, six stages): on the whole GPU its SMs share the L2's
    // total rate, which binds when it is low; on 16 SMs each SM's share
    // is eight times larger and its own port binds first.
    let whole = support::hopper_h200();
    let part = whole.partition(Some(16), None).unwrap();
    let at = |spec: &HardwareSpec, ratio: f32| {
        let c = Coefficients { l2_bandwidth_ratio: ratio, ..Coefficients::default() };
        let op = mm(128, spec.sm_count * 128, 16384, DType::F16);
        cost::unary_cost(spec, &c, &op, tile_128(6))
    };
    // 1.0 x DRAM over 132 SMs: 36 GB/s each, a third of the port.
    assert!(at(&whole, 1.0) > 1.3 * at(&whole, 100.0), "{} against {}", at(&whole, 1.0), at(&whole, 100.0));
    // Over 16 SMs: 300 GB/s each, above the port.
    assert_eq!(at(&part, 1.0), at(&part, 100.0));
}
