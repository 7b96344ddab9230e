//! The Hopper matmul (`kernels/matmul_tma.cu`, `sm_90a`): TMA loads into
//! 128-byte-swizzled shared memory through an mbarrier pipeline of
//! `stages` buffers, `wgmma` from shared memory, one producer warpgroup
//! and one or two consumer warpgroups, one block per SM walking the output
//! tiles in grouped order. The core's states of this family are those of
//! [`Placement::Tma`]: tile `BM x BN x 64`, `warps_m` four warps per
//! consumer warpgroup (two in ping-pong, each with whole tiles in turns),
//! `split_k` splits of the reduction per tile. Runs on
//! the matmul's workspace (same inputs, reference and cuBLAS baseline),
//! with a tensor map of A and of B per input set, and, for split-K, the
//! fp32 partial sums and the tiles' arrival counters. A `B` stored K-major
//! is read as it is (`B_KMAJOR`: its tensor map in boxes like A's).

use super::matmul::{dims, MatmulWorkspace};
use super::{BLayout, Config, Inputs, KernelFamily, Tools, Workspace};
use crate::gpu::launch;
use crate::gpu::tensor_map::{self, Shape16, TensorMap};
use crate::gpu::KernelSource;
use anyhow::Result;
use cudarc::driver::{CudaFunction, CudaSlice, DriverError, LaunchConfig};
use hwwfc_core::{Op, OpKind, Placement};

/// The Hopper matmul family.
pub struct TmaWgmma;

/// Elements of a TMA box side: 64 fp16 are one 128-byte swizzle row.
const BOX: u32 = 64;

/// Consumer warpgroups of `c`.
fn consumers(c: &Config) -> u32 {
    (c.warps_m as u32 / 4).max(1)
}

/// Output tiles of `c` on `op` (over the batch).
fn tiles(op: &Op, c: &Config) -> u32 {
    let [m, n, _, batch] = dims(op);
    m.div_ceil(c.tile_m.max(1) as u32) * n.div_ceil(c.tile_n.max(1) as u32) * batch
}

impl KernelFamily for TmaWgmma {
    fn name(&self) -> &'static str {
        "matmul_tma"
    }

    fn op_kind(&self) -> OpKind {
        OpKind::MatMul
    }

    fn placement(&self) -> Placement {
        Placement::Tma
    }

    fn arch_specific(&self) -> bool {
        true
    }

    fn source(&self) -> KernelSource {
        crate::kernel_source!("matmul_tma.cu")
    }

    fn entry(&self) -> &'static str {
        "matmul_tma"
    }

    fn defines(&self, c: &Config) -> Vec<(String, u32)> {
        vec![
            ("BM".into(), c.tile_m as u32),
            ("BN".into(), c.tile_n as u32),
            ("STAGES".into(), c.stages as u32),
            ("CONSUMERS".into(), consumers(c)),
            ("SPLIT_K".into(), c.split_k.max(1) as u32),
            ("PINGPONG".into(), c.pingpong as u32),
        ]
        .into_iter()
        .chain(super::matmul::epilogue_define(c))
        .chain((c.b_layout == BLayout::KMajor).then(|| ("B_KMAJOR".to_string(), 1)))
        .collect()
    }

    fn label(&self, c: &Config) -> String {
        let split = if c.split_k > 1 { format!(" k{}", c.split_k) } else { String::new() };
        let pingpong = if c.pingpong { " pp" } else { "" };
        let label =
            format!("{}x{}x{} wg{}{pingpong} s{}{split} tma", c.tile_m, c.tile_n, c.tile_k, consumers(c), c.stages);
        super::matmul::with_variants(label, c)
    }

    fn launch(&self, op: &Op, c: &Config, sm_count: u32) -> LaunchConfig {
        LaunchConfig {
            // One block per SM, or per unit of work (a tile's split) where
            // there are fewer.
            grid_dim: ((tiles(op, c) * c.split_k.max(1) as u32).min(sm_count.max(1)).max(1), 1, 1),
            block_dim: (c.threads(), 1, 1),
            shared_mem_bytes: super::matmul::dynamic_smem(op, c),
        }
    }

    fn input_set_bytes(&self, op: &Op) -> usize {
        super::matmul::MmaSync.input_set_bytes(op)
    }

    fn output_bytes(&self, op: &Op) -> usize {
        super::matmul::MmaSync.output_bytes(op)
    }

    fn workspace<'a>(&self, tools: Tools<'a>, op: &Op, inputs: Inputs) -> Result<Box<dyn Workspace + 'a>> {
        let inner = MatmulWorkspace::new(tools, op, inputs)?;
        let [m, n, k, batch] = inner.dims.map(u64::from);
        let stream = &tools.gpu.stream;
        let mut maps = Vec::with_capacity(inner.sets.len());
        for (a, b) in &inner.sets {
            let a = tensor_map::tiled_16bit(stream, a, Shape16 { cols: k, rows: m, batch }, [BOX, BOX], false)?;
            let b_shape = match inner.b_layout {
                BLayout::NMajor => Shape16 { cols: n, rows: k, batch },
                BLayout::KMajor => Shape16 { cols: k, rows: n, batch },
            };
            let b = tensor_map::tiled_16bit(stream, b, b_shape, [BOX, BOX], false)?;
            maps.push([a, b]);
        }
        let partials = stream.alloc_zeros(1)?;
        let counters = stream.alloc_zeros(1)?;
        Ok(Box::new(TmaWorkspace { inner, maps, op: *op, partials, counters }))
    }

    fn has_baseline(&self) -> bool {
        true
    }
}

/// The matmul's buffers, the tensor maps of each input set, and what
/// split-K needs: the partial sums and the counters, grown to the largest
/// split launched (a placeholder element until then).
struct TmaWorkspace<'a> {
    inner: MatmulWorkspace<'a>,
    maps: Vec<[TensorMap; 2]>,
    op: Op,
    /// `split_k x batch x M x N` fp32 partial sums.
    partials: CudaSlice<f32>,
    /// One arrival counter per tile, consumer warpgroup and warp, zero
    /// between launches (the kernel sets each back).
    counters: CudaSlice<u32>,
}

impl TmaWorkspace<'_> {
    /// Grows the split-K buffers to what `c` needs.
    fn fit(&mut self, c: &Config) -> Result<(), DriverError> {
        if c.split_k <= 1 {
            return Ok(());
        }
        let [m, n, _, batch] = self.inner.dims.map(|d| d as usize);
        let partials = c.split_k as usize * batch * m * n;
        let counters = tiles(&self.op, c) as usize * consumers(c) as usize * 4;
        let stream = &self.inner.tools.gpu.stream;
        if self.partials.len() < partials {
            self.partials = stream.alloc_zeros(partials)?;
        }
        if self.counters.len() < counters {
            self.counters = stream.alloc_zeros(counters)?;
        }
        Ok(())
    }
}

impl Workspace for TmaWorkspace<'_> {
    fn poison(&mut self) -> Result<(), DriverError> {
        self.inner.poison()
    }

    fn launch(&mut self, f: &CudaFunction, c: &Config, cfg: LaunchConfig, set: usize) -> Result<(), DriverError> {
        self.fit(c)?;
        let [a, b] = &self.maps[set % self.maps.len()];
        let stream = self.inner.tools.gpu.stream.clone();
        let dims = self.inner.dims;
        let (_, _, e, out) = self.inner.operands(c, set)?;
        let split = launch::SplitK { partials: &mut self.partials, counters: &mut self.counters };
        launch::gemm_tma(&stream, f, cfg, [a, b], launch::Output { c: out, e }, split, dims)
    }

    fn check(&self) -> Result<Result<f64, String>, DriverError> {
        self.inner.check()
    }

    fn run_baseline(&mut self, set: usize) -> Option<Result<(), DriverError>> {
        self.inner.run_baseline(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::{self, config::Config};
    use hwwfc_core::space::SpaceKind;
    use hwwfc_core::{DType, HardwareSpec};

    fn spec(space: SpaceKind) -> HardwareSpec {
        let mut s = hwwfc_core::presets::stress_gpu();
        s.space = space;
        s.sram_per_block_bytes = 232448;
        s.sram_per_sm_bytes = 233472;
        s.alignment_bytes = 16;
        s.sm_count = 132;
        s.max_blocks_per_sm = 32;
        s
    }

    fn mm(m: u32, n: u32, k: u32, batch: u32) -> Op {
        Op::MatMul { m, n, k, batch, dtype: DType::F16 }
    }

    #[test]
    fn the_family_is_offered_on_hopper_only_and_where_the_tma_can_describe_the_operands() {
        let op = mm(4096, 4096, 4096, 1);
        let on_hopper = TmaWgmma.configs(&spec(SpaceKind::Hopper), &op);
        assert!(on_hopper.len() >= 20, "{}", on_hopper.len());
        assert!(on_hopper.iter().all(|c| c.placement == Placement::Tma));
        assert!(TmaWgmma.configs(&spec(SpaceKind::Cuda), &op).is_empty());
        assert!(TmaWgmma.configs(&spec(SpaceKind::Hopper), &mm(1, 50257, 768, 1)).is_empty());
        // Both families of the operator, each configuration to its own.
        let all = family::configs(&spec(SpaceKind::Hopper), &op);
        assert_eq!(
            all.len(),
            on_hopper.len() + super::super::matmul::MmaSync.configs(&spec(SpaceKind::Hopper), &op).len()
        );
        for c in &all {
            let f = family::for_config(OpKind::MatMul, c);
            assert_eq!(f.placement(), c.placement);
            assert_eq!(f.program(c).arch_specific, c.placement == Placement::Tma);
        }
    }

    #[test]
    fn the_grid_is_one_block_per_sm_or_per_tile_where_there_are_fewer_tiles() {
        let hopper = spec(SpaceKind::Hopper);
        let big = mm(4096, 4096, 4096, 1);
        let c = TmaWgmma.configs(&hopper, &big).into_iter().find(|c| c.tile_m == 128 && c.tile_n == 256).unwrap();
        let l = TmaWgmma.launch(&big, &c, 132);
        assert_eq!(l.grid_dim, (132, 1, 1));
        assert_eq!(l.block_dim.0, 128 * (c.warps_m as u32 / 4 + 1));
        let small = mm(100, 300, 64, 2);
        let l = TmaWgmma.launch(&small, &c, 132);
        // One tile row (100 <= 128), two tile columns (300 > 256), two products.
        assert_eq!(l.grid_dim.0, 2 * 2);
        assert!(TmaWgmma.label(&c).ends_with("tma"));
        let defines = TmaWgmma.defines(&c);
        assert!(defines.contains(&("CONSUMERS".into(), c.warps_m as u32 / 4)));
    }

    /// Configuration `base` of the table with a split factor and ping-pong
    /// flag the kernel takes (the core checks them like any state).
    fn variant(base: &Config, split_k: u8, pingpong: bool, tile_m: u16) -> Config {
        Config { split_k, pingpong, tile_m, ..*base }
    }

    #[test]
    fn split_k_configurations_launch_a_block_per_split_of_each_tile() {
        let hopper = spec(SpaceKind::Hopper);
        // 16 x 4096 x 14336: one row of tiles, 224 k-blocks.
        let decode = mm(16, 4096, 14336, 1);
        let base = TmaWgmma.configs(&hopper, &decode).into_iter().find(|c| c.tile_m == 64 && c.tile_n == 128).unwrap();
        let c = variant(&base, 4, false, 64);
        assert_eq!(hwwfc_core::constraint::check(&hopper, &decode, &c.state()), Ok(()));
        assert_eq!(TmaWgmma.launch(&decode, &c, 132).grid_dim.0, (4096 / 128) * 4);
        assert!(TmaWgmma.defines(&c).contains(&("SPLIT_K".into(), 4)));
        assert!(TmaWgmma.defines(&base).contains(&("SPLIT_K".into(), 1)));
        assert!(TmaWgmma.label(&c).ends_with(" k4 tma"), "{}", TmaWgmma.label(&c));
        assert_ne!(TmaWgmma.program(&c), TmaWgmma.program(&base));
        // Many tiles: still one block per SM.
        assert_eq!(TmaWgmma.launch(&mm(4096, 4096, 14336, 1), &c, 132).grid_dim.0, 132);
        // K = 128 has two k-blocks: no split beyond 2.
        let short = mm(16, 4096, 128, 1);
        assert_eq!(hwwfc_core::constraint::check(&hopper, &short, &variant(&base, 2, false, 64).state()), Ok(()));
        assert!(hwwfc_core::constraint::check(&hopper, &short, &c.state()).is_err());
        // A split configuration's record names its split and reads back.
        let text = serde_json::to_string(&c).unwrap();
        assert!(text.contains("\"split_k\":4"), "{text}");
        assert_eq!(serde_json::from_str::<Config>(&text).unwrap(), c);
    }

    #[test]
    fn ping_pong_configurations_are_their_own_programs() {
        let hopper = spec(SpaceKind::Hopper);
        let op = mm(4096, 4096, 4096, 1);
        let base = TmaWgmma
            .configs(&hopper, &op)
            .into_iter()
            .find(|c| c.warps_m == 8 && c.tile_m == 128 && c.tile_n == 128)
            .unwrap();
        let pp = variant(&base, 1, true, 128);
        assert_eq!(hwwfc_core::constraint::check(&hopper, &op, &pp.state()), Ok(()));
        assert_eq!(consumers(&pp), 2);
        assert!(TmaWgmma.defines(&pp).contains(&("PINGPONG".into(), 1)));
        assert!(TmaWgmma.label(&pp).contains("wg2 pp"), "{}", TmaWgmma.label(&pp));
        // A tile of 128 rows: 32 x 32 tiles over 132 SMs.
        assert_eq!(TmaWgmma.launch(&op, &pp, 132).grid_dim.0, 132);
        assert_eq!(TmaWgmma.launch(&mm(256, 256, 64, 1), &pp, 132).grid_dim.0, 4);
        let text = serde_json::to_string(&pp).unwrap();
        assert!(text.contains("\"pingpong\":true"), "{text}");
        assert_eq!(serde_json::from_str::<Config>(&text).unwrap(), pp);
        // 128 x 256 accumulators are too many for one consumer.
        let wide = Config { tile_n: 256, ..pp };
        assert!(hwwfc_core::constraint::check(&hopper, &op, &wide.state()).is_err());
    }

    #[test]
    fn a_k_major_b_is_its_own_program() {
        let hopper = spec(SpaceKind::Hopper);
        let op = mm(4096, 4096, 4096, 1);
        let base = TmaWgmma.configs(&hopper, &op)[0];
        let kmajor = base.with_b_layout(BLayout::KMajor);
        assert!(TmaWgmma.defines(&kmajor).contains(&("B_KMAJOR".into(), 1)));
        assert!(!TmaWgmma.defines(&base).iter().any(|(d, _)| d == "B_KMAJOR"));
        assert_ne!(TmaWgmma.program(&kmajor), TmaWgmma.program(&base));
        assert!(TmaWgmma.label(&kmajor).ends_with("tma bk"), "{}", TmaWgmma.label(&kmajor));
        // Records name the layout only where it is not the default.
        let text = serde_json::to_string(&kmajor).unwrap();
        assert!(text.contains("\"b_layout\":\"k_major\""), "{text}");
        assert_eq!(serde_json::from_str::<Config>(&text).unwrap(), kmajor);
        assert!(!serde_json::to_string(&base).unwrap().contains("b_layout"));
    }

    #[test]
    fn records_name_the_placement_only_where_it_is_not_the_default() {
        let hopper = spec(SpaceKind::Hopper);
        let op = mm(4096, 4096, 4096, 1);
        let all = family::configs(&hopper, &op);
        let mma = all.iter().find(|c| c.placement == Placement::Pipelined).unwrap();
        let tma = all.iter().find(|c| c.placement == Placement::Tma).unwrap();
        let text = serde_json::to_string(mma).unwrap();
        assert!(!text.contains("placement"), "{text}");
        assert_eq!(serde_json::from_str::<Config>(&text).unwrap(), *mma);
        let text = serde_json::to_string(tma).unwrap();
        assert!(
            text.contains("\"placement\":\"tma\"") && !text.contains("split_k") && !text.contains("pingpong"),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<Config>(&text).unwrap(), *tma);
    }
}
