//! Candidate states: one kernel configuration of one layer.

use serde::{Deserialize, Serialize};

/// Index of a state within its layer's candidate space.
pub type StateIndex = u16;

/// Tile shape in elements. For a matmul, the block computes an `m x n`
/// output tile, stepping through the reduction `k` elements at a time; for
/// a softmax, a block handles `m` rows, `n` columns per step (`k` is 0).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, postcard::experimental::max_size::MaxSize,
)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Tile {
    /// Rows of the tile.
    pub m: u16,
    /// Columns of the tile.
    pub n: u16,
    /// Reduction step (0 where there is no reduction dimension).
    pub k: u16,
}

/// Where a tile's working set lives while the block computes on it.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, postcard::experimental::max_size::MaxSize,
)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// Operands and accumulator staged in SRAM (a scratchpad accelerator).
    Sram,
    /// Operands streamed from DRAM with no staging: no reuse beyond the
    /// registers, and no buffer to pad an edge tile into.
    Dram,
    /// Operands staged in shared memory through a `stages`-deep
    /// asynchronous pipeline, accumulator in registers (the CUDA kernels).
    Pipelined,
    /// Operands staged in swizzled shared memory by the tensor memory
    /// accelerator (TMA) through an mbarrier pipeline of `stages` buffers,
    /// read from there by `wgmma`; a producer warpgroup loads, `warps_m /
    /// 4` consumer warpgroups compute, accumulators in registers; one block
    /// per SM walks the tiles (the Hopper matmul).
    Tma,
    /// No kernel of its own: an elementwise layer computed in the epilogue
    /// of the matmul that produces its first operand, which reads the
    /// other operands and writes the result in place of its own output
    /// (epilogue fusion). Allowed only where that matmul's output feeds
    /// this layer alone, with the same shape, from a state that can fuse
    /// ([`crate::constraint::can_fuse`]).
    Epilogue,
}

impl Placement {
    /// Lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            Placement::Sram => "sram",
            Placement::Dram => "dram",
            Placement::Pipelined => "pipelined",
            Placement::Tma => "tma",
            Placement::Epilogue => "epilogue",
        }
    }

    /// Whether a matmul of this placement reads its `B` operand stored
    /// K-major (`n x k`, row-major, as it arrives where the layer reads
    /// its second input transposed, [`crate::layer::Layer::transposed_b`])
    /// as it is: the TMA loads take either layout (their tensor map
    /// describes it and `wgmma` reads shared memory either way); the other
    /// kernels read `B` row-major only, so the tensor is transposed first.
    pub const fn reads_k_major_b(self) -> bool {
        matches!(self, Placement::Tma)
    }
}

/// Memory layout of the layer's output tensor (and of its input, which is
/// the previous layer's output).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, postcard::experimental::max_size::MaxSize,
)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// Rows contiguous.
    RowMajor,
    /// Columns contiguous.
    ColMajor,
    /// Each tile contiguous (blocked by the layer's own tile shape).
    Tiled,
}

impl Layout {
    /// Lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            Layout::RowMajor => "row_major",
            Layout::ColMajor => "col_major",
            Layout::Tiled => "tiled",
        }
    }
}

/// One candidate configuration of a layer.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, postcard::experimental::max_size::MaxSize,
)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct State {
    /// Tile shape.
    pub tile: Tile,
    /// Warps along the tile's rows.
    pub warps_m: u8,
    /// Warps along the tile's columns.
    pub warps_n: u8,
    /// Pipeline depth (buffers in flight); 1 without a pipeline.
    pub stages: u8,
    /// Reduction splits: the matmul's K cut into this many ranges, each a
    /// block's unit of work, their partial sums added at the end (split-K,
    /// for layers with too few output tiles to fill the GPU); 1 without a
    /// split, the only value outside the Hopper matmul.
    pub split_k: u8,
    /// Ping-pong: the Hopper matmul's two consumer warpgroups each take
    /// whole tiles (`tile.m` rows), in turns, so that one's epilogue runs
    /// under the other's main loop, instead of sharing each tile's rows;
    /// false outside the Hopper matmul.
    pub pingpong: bool,
    /// Where the working set lives.
    pub placement: Placement,
    /// Layout of the output.
    pub layout: Layout,
}

impl State {
    /// Threads of one block (32 per warp, and a TMA block's producer
    /// warpgroup of 128).
    pub const fn threads(&self) -> u32 {
        let producer = if matches!(self.placement, Placement::Tma) { 128 } else { 0 };
        32 * self.warps_m as u32 * self.warps_n as u32 + producer
    }

    /// Warps that compute (a TMA block's consumers, not its producer).
    pub const fn warps(&self) -> u32 {
        self.warps_m as u32 * self.warps_n as u32
    }
}
