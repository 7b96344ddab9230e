//! Hard constraints: the rules that remove states.
//!
//! Unary constraints remove a state of one layer ([`check`]); the adjacency
//! constraint removes pairs of states of neighbouring layers
//! ([`compatible`]) and is enforced by arc-consistent propagation.

use crate::layer::Op;
use crate::resource::{self, MAX_REGISTERS_PER_THREAD, TMA_CONSUMER_REGISTERS};
use crate::spec::HardwareSpec;
use crate::state::{Layout, Placement, State};

/// A hard constraint, named in reports of what removed a state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Constraint {
    /// A tile row is not a multiple of the spec's alignment.
    Alignment,
    /// The tile's SRAM bytes exceed the SRAM per block.
    SramCapacity,
    /// The tile's bytes times the layer's working-memory multiplier exceed
    /// the SRAM per block (Softmax: x4).
    WorkingMemory,
    /// More threads than a block may have.
    ThreadsPerBlock,
    /// More registers per thread than the hardware has, or a block whose
    /// registers do not fit on an SM.
    Registers,
    /// The kernel cannot be laid out: a warp tile that is not a multiple of
    /// the matrix instruction, fewer elements than threads, more split-K
    /// ranges than k-blocks, or a split or ping-pong outside the kernel
    /// that has them.
    Geometry,
    /// An elementwise layer's epilogue state where the graph allows no
    /// fusion: its first operand is not the output of a matmul of its own
    /// shape and element type that only it reads, or it reduces rows.
    Fusion,
    /// The state cannot follow the previous layer's state (or, fused into
    /// an epilogue, no state of its producer can fuse it).
    Adjacency,
}

/// Number of [`Constraint`] variants.
pub const CONSTRAINT_COUNT: usize = 8;

impl Constraint {
    /// All constraints, in report order.
    pub const ALL: [Constraint; CONSTRAINT_COUNT] = [
        Constraint::Alignment,
        Constraint::SramCapacity,
        Constraint::WorkingMemory,
        Constraint::ThreadsPerBlock,
        Constraint::Registers,
        Constraint::Geometry,
        Constraint::Fusion,
        Constraint::Adjacency,
    ];

    /// Position in [`Constraint::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Short name used in tables and JSON.
    pub const fn name(self) -> &'static str {
        match self {
            Constraint::Alignment => "alignment",
            Constraint::SramCapacity => "sram_capacity",
            Constraint::WorkingMemory => "working_memory",
            Constraint::ThreadsPerBlock => "threads_per_block",
            Constraint::Registers => "registers",
            Constraint::Geometry => "geometry",
            Constraint::Fusion => "fusion",
            Constraint::Adjacency => "adjacency",
        }
    }
}

impl core::fmt::Display for Constraint {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// The first unary constraint that `state` violates on `op` under `spec`,
/// checked in the order of [`Constraint::ALL`].
pub fn check(spec: &HardwareSpec, op: &Op, state: &State) -> Result<(), Constraint> {
    if resource::row_bytes(op, state) % spec.alignment_bytes.max(1) != 0 {
        return Err(Constraint::Alignment);
    }
    if state.placement == Placement::Tma && !tma_describable(op) {
        return Err(Constraint::Alignment);
    }
    let usage = resource::usage(op, state);
    let staged = state.placement != Placement::Dram;
    if staged && usage.sram_bytes > spec.sram_per_block_bytes {
        return Err(Constraint::SramCapacity);
    }
    let working = usage.sram_bytes.saturating_mul(resource::working_memory_multiplier(op));
    if state.placement == Placement::Sram && working > spec.sram_per_block_bytes {
        return Err(Constraint::WorkingMemory);
    }
    if usage.threads > spec.max_threads_per_block {
        return Err(Constraint::ThreadsPerBlock);
    }
    let most = if state.placement == Placement::Tma { TMA_CONSUMER_REGISTERS } else { MAX_REGISTERS_PER_THREAD };
    if usage.registers_per_thread > most
        || usage.registers_per_thread.saturating_mul(usage.threads) > spec.registers_per_sm
    {
        return Err(Constraint::Registers);
    }
    let laid_out = match state.placement {
        _ if (state.split_k != 1 || state.pingpong) && state.placement != Placement::Tma => false,
        Placement::Pipelined => geometry_ok(op, state),
        Placement::Tma => tma_geometry_ok(op, state),
        Placement::Sram | Placement::Dram => true,
        // Whether the graph allows the fusion is decided with the graph
        // ([`fusable`]); here only what the operator allows.
        Placement::Epilogue => matches!(op, Op::Elementwise { kind, .. } if !kind.reduces_rows()),
    };
    if !laid_out {
        return Err(Constraint::Geometry);
    }
    Ok(())
}

/// Bytes every row stride of a tensor the TMA loads must be a multiple of
/// (`cuTensorMapEncodeTiled` refuses others).
pub const TMA_STRIDE_ALIGNMENT: u32 = 16;

/// Whether the TMA can describe the operands of `op`: the rows of A (`k`
/// elements) and of B (`n` elements) 16-byte multiples. A `k` of 77 in
/// fp16 cannot be described; the `mma.sync` kernel serves such layers.
fn tma_describable(op: &Op) -> bool {
    match *op {
        Op::MatMul { n, k, dtype, .. } => {
            let e = dtype.bytes();
            (k.saturating_mul(e)) % TMA_STRIDE_ALIGNMENT == 0 && (n.saturating_mul(e)) % TMA_STRIDE_ALIGNMENT == 0
        }
        Op::Softmax { .. } | Op::Elementwise { .. } => false,
    }
}

/// The Hopper matmul's layout: 16-bit operands (the kernel's `wgmma` and
/// its tensor maps), a 64-element reduction step (one swizzle atom), block
/// columns in whole 64-column boxes, and each consumer warpgroup's rows
/// (`BM / consumers`, or all of them in ping-pong, which takes two
/// consumers) one or two `wgmma` m64 instructions; a split-K factor of at
/// most one split per 64-element k-block (each split reduces at least
/// one).
fn tma_geometry_ok(op: &Op, state: &State) -> bool {
    let t = &state.tile;
    let consumers = state.warps_m / 4;
    let sixteen_bit = op.dtype().bytes() == 2;
    let sharing = if state.pingpong { 1 } else { consumers };
    let rows = if sharing > 0 { t.m / sharing as u16 } else { 0 };
    let k_blocks = match *op {
        Op::MatMul { k, .. } => k.div_ceil(64),
        Op::Softmax { .. } | Op::Elementwise { .. } => 0,
    };
    matches!(op, Op::MatMul { .. })
        && state.split_k >= 1
        && state.split_k as u32 <= k_blocks
        && sixteen_bit
        && state.warps_n == 1
        && state.warps_m % 4 == 0
        && (consumers == 1 || consumers == 2)
        && t.k == 64
        && t.n % 64 == 0
        && t.n <= 256
        && (rows == 64 || rows == 128)
        && rows * sharing as u16 == t.m
        && (!state.pingpong || consumers == 2)
}

fn geometry_ok(op: &Op, state: &State) -> bool {
    let t = &state.tile;
    match op {
        // mma.sync m16n8k16 with ldmatrix: each warp tile a multiple of
        // 16 x 16, the reduction step a multiple of 16.
        Op::MatMul { .. } => {
            let wm = state.warps_m.max(1) as u16;
            let wn = state.warps_n.max(1) as u16;
            t.m % (16 * wm) == 0 && t.n % (16 * wn) == 0 && t.k % 16 == 0
        }
        // Every thread holds the same number (at least one) of elements
        // of a column block.
        // (Counted in u32: a state from outside the tables may have more
        // threads than a u16 holds.)
        Op::Softmax { .. } | Op::Elementwise { .. } => {
            let (threads, n) = (state.threads(), t.n as u32);
            threads > 0 && n >= threads && n % threads == 0
        }
    }
}

/// Whether `next` (a state of the consumer) may follow `prev` (a state of
/// the producer). A tiled output can be read as it lies only with the same
/// tile shape; a DRAM-streamed consumer has no staging buffer to re-block
/// it into, so it must match.
pub fn compatible(prev: &State, next: &State) -> bool {
    !(prev.layout == Layout::Tiled
        && next.placement == Placement::Dram
        && (prev.tile.m, prev.tile.n) != (next.tile.m, next.tile.n))
}

/// Whether the elementwise layer `consumer` may run in the epilogue of
/// `producer`, the layer that writes its first operand, as far as the two
/// operators go: the producer a matmul, the consumer a kind that needs no
/// whole row, the matmul's output exactly the consumer's shape and element
/// type. The graph must also let no other layer read the producer's output
/// (its epilogue writes the consumer's result in place of its own).
pub fn fusable(producer: &Op, consumer: &Op) -> bool {
    match (producer, consumer) {
        (Op::MatMul { .. }, Op::Elementwise { kind, .. }) => {
            !kind.reduces_rows()
                && producer.output_dims() == consumer.output_dims()
                && producer.dtype() == consumer.dtype()
        }
        _ => false,
    }
}

/// Whether a matmul in `state` can finish the following elementwise layer
/// in its epilogue: an unsplit product (a split-K unit holds partial sums,
/// not the output) that writes row-major, as the fused layer's output is.
pub fn can_fuse(producer: &Op, state: &State) -> bool {
    matches!(producer, Op::MatMul { .. })
        && state.split_k == 1
        && state.layout == Layout::RowMajor
        && state.placement != Placement::Epilogue
}
