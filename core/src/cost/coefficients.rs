//! The cost model's coefficients: one `f32` each, with its meaning, its
//! default and its name; `hwwfc calibrate` fits them to measured times.

#[cfg(doc)]
use crate::state::Placement;
use serde::{Deserialize, Serialize};

/// Version of the cost model and of its [`Coefficients`] (their layout and
/// their meaning): stored in coefficient files, as the JSON wrapper's
/// `format_version` and as the third header byte of the wire format
/// ([`crate::wire`]), and required when they are read.
pub const COEFFICIENTS_VERSION: u8 = 13;

macro_rules! coefficients {
    ($($(#[doc = $doc:literal])* $name:ident = $default:expr;)*) => {
        /// The cost model's coefficients. Defaults come from datasheet
        /// figures and common rules of thumb; `hwwfc calibrate` fits them
        /// to measured times.
        #[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, postcard::experimental::max_size::MaxSize)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        #[serde(deny_unknown_fields)]
        pub struct Coefficients {
            $($(#[doc = $doc])* pub $name: f32,)*
        }

        impl Default for Coefficients {
            fn default() -> Self {
                Coefficients { $($name: $default,)* }
            }
        }

        /// Names of the coefficients, in field order.
        pub const COEFFICIENT_NAMES: [&str; COEFFICIENT_COUNT] = [$(stringify!($name),)*];

        impl Coefficients {
            /// The coefficients as an array, in the order of
            /// [`COEFFICIENT_NAMES`].
            pub fn to_array(&self) -> [f32; COEFFICIENT_COUNT] {
                [$(self.$name,)*]
            }

            /// Coefficients from an array in the order of
            /// [`COEFFICIENT_NAMES`].
            pub fn from_array(a: [f32; COEFFICIENT_COUNT]) -> Self {
                let [$($name,)*] = a;
                Coefficients { $($name,)* }
            }
        }
    };
}

/// Number of coefficients.
pub const COEFFICIENT_COUNT: usize = 37;

coefficients! {
    /// Share of peak arithmetic a well-shaped tile reaches.
    compute_efficiency = 0.75;
    /// Share of peak DRAM bandwidth reached by streaming reads.
    memory_efficiency = 0.85;
    /// The L2's total rate to the SMs as a multiple of the DRAM bandwidth:
    /// the busy SMs share it (on a partition, fewer SMs share the whole
    /// GPU's L2).
    l2_bandwidth_ratio = 2.5;
    /// Share of the re-reads between tiles that miss in L2.
    l2_miss_rate = 0.15;
    /// Latency of a load from memory, in microseconds (Little's law:
    /// bandwidth is at most the bytes in flight over this latency).
    memory_latency_us = 0.8;
    /// Warp-tile area (elements) at which the matrix units reach half of
    /// `compute_efficiency`.
    warp_tile_half = 256.0;
    /// Resident warps per SM at which a matmul's latency is half hidden.
    warps_half = 2.0;
    /// Barrier and wait of one k-loop (or softmax column) step that a
    /// single stage does not hide, in microseconds.
    step_latency_us = 0.1;
    /// Fixed cost per block (prologue, epilogue), in microseconds.
    block_overhead_us = 1.0;
    /// Time an SM's block scheduler takes to start one block, in
    /// microseconds (a bound on grids of many small blocks).
    block_dispatch_us = 0.05;
    /// Share of peak fp32 arithmetic a softmax reaches.
    softmax_efficiency = 0.5;
    /// Resident warps per SM at which a softmax's latency is half hidden:
    /// its chains of dependent fp32, exponential and shuffle instructions
    /// want about four warps on each of the four sub-partitions.
    softmax_warps_half = 16.0;
    /// Latency of one softmax column step not hidden, in microseconds.
    softmax_step_latency_us = 0.1;
    /// Fixed cost per softmax block, in microseconds.
    softmax_block_overhead_us = 1.0;
    /// Cost of one warp's turn in a block-wide reduction, in microseconds.
    reduce_us_per_warp = 0.01;
    /// Time a thread spends on one 16-byte chunk loaded element by element
    /// (rows not 16-byte aligned take this path, unpipelined), in
    /// microseconds: about one round trip to memory.
    scalar_load_us = 0.5;
    /// Share of the DRAM bandwidth the epilogue's scattered stores reach.
    store_efficiency = 0.5;
    /// Multiplier on the spec's launch overhead.
    launch_scale = 1.0;
    /// Exponent of the smooth maximum of the compute, memory and latency
    /// times (large: a hard maximum; 1: their sum).
    overlap_exponent = 4.0;
    /// Operand reuse in registers of a DRAM-streamed tile (elements).
    register_reuse = 4.0;
    /// Slowdown of a row reduction over a column-major tensor.
    strided_penalty = 4.0;
    /// Multiplier on the time of a layout change between layers.
    transition_scale = 1.0;
    /// Shared-memory bandwidth of an SM over its peak matrix arithmetic,
    /// in bytes per flop (Hopper: 128 bytes a clock against 4096 fp16
    /// tensor flops a clock).
    smem_bytes_per_flop = 0.03125;
    /// Arithmetic of folding one warp's partial (max, sum) into a thread's,
    /// in fp32 operations (two exponentials on the special-function units,
    /// each worth several fp32 slots).
    combine_ops = 20.0;
    /// Share of peak arithmetic a well-shaped tile of the Hopper matmul
    /// (`wgmma` from shared memory, [`Placement::Tma`]) reaches; it takes
    /// the place of `compute_efficiency`, which `mma.sync` tiles reach.
    tma_efficiency = 0.85;
    /// Fixed cost of one output tile of the Hopper matmul, in
    /// microseconds: its epilogue, which the consumers do not overlap
    /// with the next tile's products, and the pipeline's refill.
    tma_tile_overhead_us = 1.0;
    /// Fixed cost of one split-K unit's hand-over, in microseconds: the
    /// fence after its partial sums and the atomic count of the splits
    /// that have arrived, a round trip to the L2 that the tile's epilogue
    /// waits for.
    split_sync_us = 2.0;
    /// Time of one KiB of a split-K unit's fp32 partial sums (the rows and
    /// columns of its tile inside the matrix), written by the unit's warps
    /// fragment by fragment and, for the last of a tile's splits, read
    /// back from the others, in microseconds.
    split_partial_us_per_kib = 0.25;
    /// What one SM can draw from the memory system (its port to the L2,
    /// whether the bytes hit there or come from DRAM), over its peak fp16
    /// matrix arithmetic, in bytes per flop: a grid on few SMs (a small
    /// grid, or a partition of the GPU) draws at most that many SMs' worth,
    /// however much of the DRAM bandwidth the others leave.
    sm_bytes_per_flop = 0.006;
    /// Exponent of the smooth maximum for the Hopper matmul
    /// ([`Placement::Tma`]), in place of `overlap_exponent`: its producer
    /// warpgroup, the copy engine and the consumers' asynchronous `wgmma`
    /// overlap loads, shared-memory reads and arithmetic more fully than
    /// one warp doing all of them in turn.
    tma_overlap_exponent = 8.0;
    /// What one SM draws from the memory system through the tensor memory
    /// accelerator (the Hopper matmul's bulk copies,
    /// [`Placement::Tma`]), in place of `sm_bytes_per_flop`, which the
    /// threads' asynchronous copies of the `mma.sync` matmul and the
    /// loads of the row kernels reach: in bytes per flop of the SM's
    /// share of the peak fp16 matrix arithmetic.
    tma_sm_bytes_per_flop = 0.014;
    /// Latency of one k-step's bulk copy of the Hopper matmul under load,
    /// from the stage's release to its arrival, in microseconds: a
    /// pipeline of `stages` buffers waits it once every `stages - 1`
    /// k-steps.
    tma_latency_us = 0.9;
    /// Exponent of the smooth maximum of a Hopper k-step's three times
    /// (its `wgmma` arithmetic, its load's latency over the stages ahead,
    /// its bytes through the SM's port), which overlap only in part.
    tma_step_exponent = 3.0;
    /// Width of a `wgmma` tile (its N) at which it reaches half of
    /// `tma_efficiency`: each instruction reads its A rows from shared
    /// memory whatever its width, so a narrow one spends more per flop.
    wgmma_n_half = 16.0;
    /// Share of the Hopper matmul's rate that a ping-pong consumer of a
    /// 128-row tile reaches, issuing both 64-row halves of each k-step
    /// with one warpgroup and holding all of the tile's accumulators
    /// (measured on the same 128-row tile and stages over 16 or more
    /// k-steps: ping-pong takes 1.01 to 1.03 times the time of two
    /// consumers, where the other terms price it 0.99 to 1.0 times; the
    /// fit leaves it near this default).
    pingpong_efficiency = 0.97;
    /// Power of the stages ahead in a Hopper k-step's share of its load's
    /// latency: a step waits `tma_latency_us / (stages - 1)^p` (1: each
    /// stage ahead hides one share, as on one tile per SM; the corpus
    /// fits about 1.2, a deeper pipeline hiding more than its share over
    /// many tiles).
    tma_stage_power = 1.0;
    /// Latency of a Hopper bulk copy from DRAM over that of one the L2
    /// serves (`tma_latency_us` being the L2's): a matmul whose tiles
    /// mostly miss the L2 (a decode step streaming its weights once) waits
    /// this much longer a k-step. The corpus fits about 2.1, and
    /// `tma_stage_power` then returns to the 1 measured on one tile per
    /// SM.
    dram_latency_ratio = 2.0;
}

impl Coefficients {
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
