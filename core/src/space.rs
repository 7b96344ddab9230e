//! Candidate spaces: the tables of states a layer may take.
//!
//! A space is a constant table in flash, one per (space kind, operator):
//! a state's index is its position in the table, so decoding an index is a
//! load, and the order of the table is the solvers' tie-break order.
//!
//! - [`SpaceKind::Tiles`]: the prototype's design space for scratchpad
//!   accelerators: square tiles of 8 to 256 × placement {SRAM, DRAM} ×
//!   layout {row-major, column-major, tiled}: 36 states per layer.
//! - [`SpaceKind::Cuda`]: the configurations of the CUDA kernels in
//!   `kernels/`: a tensor-core matmul with BM, BN, BK, the warp grid and the
//!   pipeline depth as parameters, and a row softmax with the column block
//!   and the threads per row as parameters.
//! - [`SpaceKind::Hopper`]: the CUDA space and, after its matmul states,
//!   those of the Hopper matmul (`kernels/matmul_tma.cu`: TMA, `wgmma`,
//!   warp-specialized, persistent; [`Placement::Tma`]), with the block
//!   tile, the consumer warpgroups (sharing each tile, or ping-pong: each
//!   with its own), the pipeline depth and the split-K factor as
//!   parameters.
//!   The CUDA matmul table is a prefix of the Hopper one, so a state keeps
//!   its index in both.

use crate::layer::{Op, OpKind};
use crate::state::{Layout, Placement, State, Tile};
use serde::{Deserialize, Serialize};

/// Which family of candidate states an accelerator offers.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, postcard::experimental::max_size::MaxSize,
)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[serde(rename_all = "lowercase")]
pub enum SpaceKind {
    /// Square tiles × placement × layout (virtual scratchpad accelerators).
    Tiles,
    /// The CUDA kernels' compile-time configurations.
    Cuda,
    /// The CUDA kernels and the Hopper-only (`sm_90a`) matmul family.
    Hopper,
}

impl SpaceKind {
    /// Whether the space holds CUDA kernels (of any architecture).
    pub const fn is_cuda(self) -> bool {
        matches!(self, SpaceKind::Cuda | SpaceKind::Hopper)
    }
}

/// Tile sides of the [`SpaceKind::Tiles`] space.
pub const TILE_SIDES: [u16; 6] = [8, 16, 32, 64, 128, 256];
const TILE_PLACEMENTS: [Placement; 2] = [Placement::Sram, Placement::Dram];
const TILE_LAYOUTS: [Layout; 3] = [Layout::RowMajor, Layout::ColMajor, Layout::Tiled];
const TILES_LEN: usize = TILE_SIDES.len() * TILE_PLACEMENTS.len() * TILE_LAYOUTS.len();

/// Block rows of the CUDA matmul.
pub const CUDA_MATMUL_BM: [u16; 5] = [16, 32, 64, 128, 256];
/// Block columns of the CUDA matmul.
pub const CUDA_MATMUL_BN: [u16; 4] = [32, 64, 128, 256];
/// Reduction step of the CUDA matmul.
pub const CUDA_MATMUL_BK: [u16; 2] = [32, 64];
/// Warp grids (rows, columns) of the CUDA matmul.
pub const CUDA_MATMUL_WARPS: [(u8, u8); 4] = [(1, 2), (2, 2), (2, 4), (4, 2)];
/// Pipeline depths of the CUDA matmul.
pub const CUDA_MATMUL_STAGES: [u8; 3] = [2, 3, 4];
const CUDA_MATMUL_LEN: usize = CUDA_MATMUL_BM.len()
    * CUDA_MATMUL_BN.len()
    * CUDA_MATMUL_BK.len()
    * CUDA_MATMUL_WARPS.len()
    * CUDA_MATMUL_STAGES.len();

/// Block rows of the Hopper matmul.
pub const HOPPER_MATMUL_BM: [u16; 3] = [64, 128, 256];
/// Block columns of the Hopper matmul (the `wgmma` N).
pub const HOPPER_MATMUL_BN: [u16; 3] = [64, 128, 256];
/// Reduction step of the Hopper matmul: one 128-byte swizzle atom of fp16.
pub const HOPPER_MATMUL_BK: u16 = 64;
/// Consumer warpgroups of the Hopper matmul (besides its producer).
pub const HOPPER_MATMUL_CONSUMERS: [u8; 2] = [1, 2];
/// Pipeline depths of the Hopper matmul.
pub const HOPPER_MATMUL_STAGES: [u8; 4] = [2, 3, 4, 6];
/// Reduction splits of the Hopper matmul (split-K, [`State::split_k`]; 1
/// first, so that the unsplit states keep the indices they had before the
/// splits were offered).
pub const HOPPER_MATMUL_SPLITS: [u8; 4] = [1, 2, 4, 8];
/// Tile rows of the Hopper matmul's ping-pong states ([`State::pingpong`]:
/// two consumer warpgroups, each with whole tiles of one or two `wgmma`
/// m64), appended after the cooperative states.
pub const HOPPER_PINGPONG_BM: [u16; 2] = [64, 128];
const HOPPER_TMA_LEN: usize = HOPPER_MATMUL_SPLITS.len()
    * HOPPER_MATMUL_BN.len()
    * HOPPER_MATMUL_STAGES.len()
    * (HOPPER_MATMUL_BM.len() * HOPPER_MATMUL_CONSUMERS.len() + HOPPER_PINGPONG_BM.len());
const HOPPER_MATMUL_LEN: usize = CUDA_MATMUL_LEN + HOPPER_TMA_LEN;

/// Column blocks of the CUDA softmax (elements of a row handled per step).
pub const CUDA_SOFTMAX_COLS: [u16; 8] = [32, 64, 128, 256, 512, 1024, 2048, 4096];
/// Threads per row of the CUDA softmax.
pub const CUDA_SOFTMAX_THREADS: [u16; 6] = [32, 64, 128, 256, 512, 1024];
const CUDA_SOFTMAX_LEN: usize = CUDA_SOFTMAX_COLS.len() * CUDA_SOFTMAX_THREADS.len();

const PLACEHOLDER: State = State {
    tile: Tile { m: 0, n: 0, k: 0 },
    warps_m: 1,
    warps_n: 1,
    stages: 1,
    split_k: 1,
    pingpong: false,
    placement: Placement::Sram,
    layout: Layout::RowMajor,
};

// Evaluated at compile time only: an index out of range fails the build.
#[allow(clippy::indexing_slicing)]
const fn tiles_table(softmax: bool) -> [State; TILES_LEN] {
    let mut out = [PLACEHOLDER; TILES_LEN];
    let mut i = 0;
    let mut t = 0;
    while t < TILE_SIDES.len() {
        let side = TILE_SIDES[t];
        let mut p = 0;
        while p < TILE_PLACEMENTS.len() {
            let mut l = 0;
            while l < TILE_LAYOUTS.len() {
                out[i] = State {
                    tile: Tile { m: side, n: side, k: if softmax { 0 } else { side } },
                    warps_m: 1,
                    warps_n: 1,
                    stages: 1,
                    split_k: 1,
                    pingpong: false,
                    placement: TILE_PLACEMENTS[p],
                    layout: TILE_LAYOUTS[l],
                };
                i += 1;
                l += 1;
            }
            p += 1;
        }
        t += 1;
    }
    out
}

/// Writes the Hopper family's states from `out[i]` on: for each split
/// factor (the unsplit states first), tile rows of `rows`, tile columns,
/// consumer warpgroups of `consumers` and pipeline depth; returns the
/// index after the last.
// Evaluated at compile time only: an index out of range fails the build.
#[allow(clippy::indexing_slicing)]
const fn push_tma(
    out: &mut [State; HOPPER_MATMUL_LEN],
    mut i: usize,
    rows: &[u16],
    consumers: &[u8],
    pingpong: bool,
) -> usize {
    let mut k = 0;
    while k < HOPPER_MATMUL_SPLITS.len() {
        let mut a = 0;
        while a < rows.len() {
            let mut b = 0;
            while b < HOPPER_MATMUL_BN.len() {
                let mut c = 0;
                while c < consumers.len() {
                    let mut s = 0;
                    while s < HOPPER_MATMUL_STAGES.len() {
                        out[i] = State {
                            tile: Tile { m: rows[a], n: HOPPER_MATMUL_BN[b], k: HOPPER_MATMUL_BK },
                            warps_m: 4 * consumers[c],
                            warps_n: 1,
                            stages: HOPPER_MATMUL_STAGES[s],
                            split_k: HOPPER_MATMUL_SPLITS[k],
                            pingpong,
                            placement: Placement::Tma,
                            layout: Layout::RowMajor,
                        };
                        i += 1;
                        s += 1;
                    }
                    c += 1;
                }
                b += 1;
            }
            a += 1;
        }
        k += 1;
    }
    i
}

// Evaluated at compile time only: an index out of range fails the build.
#[allow(clippy::indexing_slicing)]
const fn hopper_matmul_table() -> [State; HOPPER_MATMUL_LEN] {
    let mut out = [PLACEHOLDER; HOPPER_MATMUL_LEN];
    let mut i = 0;
    let mut a = 0;
    while a < CUDA_MATMUL_BM.len() {
        let mut b = 0;
        while b < CUDA_MATMUL_BN.len() {
            let mut c = 0;
            while c < CUDA_MATMUL_BK.len() {
                let mut w = 0;
                while w < CUDA_MATMUL_WARPS.len() {
                    let mut s = 0;
                    while s < CUDA_MATMUL_STAGES.len() {
                        out[i] = State {
                            tile: Tile { m: CUDA_MATMUL_BM[a], n: CUDA_MATMUL_BN[b], k: CUDA_MATMUL_BK[c] },
                            warps_m: CUDA_MATMUL_WARPS[w].0,
                            warps_n: CUDA_MATMUL_WARPS[w].1,
                            stages: CUDA_MATMUL_STAGES[s],
                            split_k: 1,
                            pingpong: false,
                            placement: Placement::Pipelined,
                            layout: Layout::RowMajor,
                        };
                        i += 1;
                        s += 1;
                    }
                    w += 1;
                }
                c += 1;
            }
            b += 1;
        }
        a += 1;
    }
    // The Hopper family: a warpgroup of four warps per consumer, the
    // producer warpgroup besides them (see `State::threads`); the
    // cooperative states (consumers sharing a tile's rows) first, then the
    // ping-pong ones (two consumers, each with whole tiles), so that the
    // states measured first keep their indices.
    i = push_tma(&mut out, i, &HOPPER_MATMUL_BM, &HOPPER_MATMUL_CONSUMERS, false);
    push_tma(&mut out, i, &HOPPER_PINGPONG_BM, &[2], true);
    out
}

// Evaluated at compile time only: an index out of range fails the build.
#[allow(clippy::indexing_slicing)]
const fn cuda_softmax_table() -> [State; CUDA_SOFTMAX_LEN] {
    let mut out = [PLACEHOLDER; CUDA_SOFTMAX_LEN];
    let mut i = 0;
    let mut c = 0;
    while c < CUDA_SOFTMAX_COLS.len() {
        let mut t = 0;
        while t < CUDA_SOFTMAX_THREADS.len() {
            out[i] = State {
                tile: Tile { m: 1, n: CUDA_SOFTMAX_COLS[c], k: 0 },
                warps_m: 1,
                warps_n: (CUDA_SOFTMAX_THREADS[t] / 32) as u8,
                stages: 1,
                split_k: 1,
                pingpong: false,
                placement: Placement::Pipelined,
                layout: Layout::RowMajor,
            };
            i += 1;
            t += 1;
        }
        c += 1;
    }
    out
}

/// The state of an elementwise layer fused into its producer's epilogue
/// ([`Placement::Epilogue`]): the last state of every elementwise table.
pub const FUSED: State = State {
    tile: Tile { m: 0, n: 0, k: 0 },
    warps_m: 1,
    warps_n: 1,
    stages: 1,
    split_k: 1,
    pingpong: false,
    placement: Placement::Epilogue,
    layout: Layout::RowMajor,
};

/// `table` and [`FUSED`] after it: an elementwise layer runs as a row
/// kernel of the softmax's shapes (a block of rows, a column block per
/// step, the threads per row), or in its producer's epilogue.
// Evaluated at compile time only: an index out of range fails the build.
#[allow(clippy::indexing_slicing)]
const fn with_fused<const N: usize, const M: usize>(table: &[State; N]) -> [State; M] {
    let mut out = [FUSED; M];
    let mut i = 0;
    while i < N {
        out[i] = table[i];
        i += 1;
    }
    out
}

static TILES_MATMUL: [State; TILES_LEN] = tiles_table(false);
static TILES_SOFTMAX: [State; TILES_LEN] = tiles_table(true);
static TILES_ELEMENTWISE: [State; TILES_LEN + 1] = with_fused(&tiles_table(true));
static HOPPER_MATMUL: [State; HOPPER_MATMUL_LEN] = hopper_matmul_table();
static CUDA_SOFTMAX: [State; CUDA_SOFTMAX_LEN] = cuda_softmax_table();
static CUDA_ELEMENTWISE: [State; CUDA_SOFTMAX_LEN + 1] = with_fused(&cuda_softmax_table());

/// The candidate states of an operator in a space, in tie-break order.
pub fn states(space: SpaceKind, op: OpKind) -> &'static [State] {
    match (space, op) {
        (SpaceKind::Tiles, OpKind::MatMul) => &TILES_MATMUL,
        (SpaceKind::Tiles, OpKind::Softmax) => &TILES_SOFTMAX,
        (SpaceKind::Cuda, OpKind::MatMul) => HOPPER_MATMUL.get(..CUDA_MATMUL_LEN).unwrap_or(&HOPPER_MATMUL),
        (SpaceKind::Hopper, OpKind::MatMul) => &HOPPER_MATMUL,
        (SpaceKind::Cuda | SpaceKind::Hopper, OpKind::Softmax) => &CUDA_SOFTMAX,
        (SpaceKind::Tiles, OpKind::Elementwise) => &TILES_ELEMENTWISE,
        (SpaceKind::Cuda | SpaceKind::Hopper, OpKind::Elementwise) => &CUDA_ELEMENTWISE,
    }
}

/// The index of `state` in its space's table, if it is there.
pub fn index_of(space: SpaceKind, op: OpKind, state: &State) -> Option<u16> {
    states(space, op).iter().position(|s| s == state).and_then(|i| u16::try_from(i).ok())
}

/// Whether `state` is a candidate for `op` at all. A DRAM-streamed tile
/// has no staging buffer to pad an edge tile into, so it may not be larger
/// than the layer in any dimension; every other state applies to any shape.
pub fn applicable(op: &Op, state: &State) -> bool {
    if state.placement != Placement::Dram {
        return true;
    }
    let (rows, cols, depth) = match *op {
        Op::MatMul { m, n, k, .. } => (m, n, k),
        Op::Softmax { rows, cols, .. } | Op::Elementwise { rows, cols, .. } => (rows, cols, u32::MAX),
    };
    let t = &state.tile;
    t.m as u32 <= rows && t.n as u32 <= cols && t.k as u32 <= depth
}
