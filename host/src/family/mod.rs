//! Kernel families: a family is one CUDA file of `kernels/` and one module
//! here that implements [`KernelFamily`]: its source and compile options,
//! its configurations (the core's candidate states, so that what the core
//! can pick is what is measured), its launch geometry, the workspace it
//! runs in (random inputs, the output, a reference) and the check of its
//! output. The profiler, tuning and `schedule --measure` reach kernels only
//! through this interface, so adding a family is a module here, its CUDA
//! file, and its line in [`for_kind`].
//!
//! - [`config`]: a configuration (a core state by its table index);
//! - [`matmul`]: the tiled tensor-core matmul (`mma.sync`), checked against
//!   cuBLAS and timed beside it;
//! - [`matmul_tma`]: the Hopper matmul (TMA, `wgmma`, warp-specialized,
//!   persistent), on the same inputs, reference and baseline;
//! - [`softmax`]: the row softmax, checked against an fp64 reference;
//! - [`elementwise`]: the residual add, SiLU times gate, GELU and RMSNorm
//!   as row kernels, checked against an fp64 reference.
//!
//! An elementwise operation fused into a matmul's epilogue is a matmul
//! configuration with that operation ([`Config::elementwise`]): the matmul
//! families compile it in and their workspace holds its second operand
//! ([`Inputs::epilogue`]).

pub mod config;
pub mod elementwise;
pub mod matmul;
pub mod matmul_tma;
pub mod softmax;

pub use config::{BLayout, Config};

use crate::gpu::blas::Blas;
use crate::gpu::support::Support;
use crate::gpu::{Gpu, KernelSource, Program};
use anyhow::Result;
use cudarc::driver::{CudaFunction, DriverError, LaunchConfig};
use hwwfc_core::{HardwareSpec, Op, OpKind, Placement};

/// What a workspace is built with: the device, its support kernels and
/// cuBLAS.
#[derive(Clone, Copy)]
pub struct Tools<'a> {
    /// The device and its stream.
    pub gpu: &'a Gpu,
    /// Random inputs, poisoning, references, comparisons.
    pub support: &'a Support,
    /// The vendor's matmul.
    pub blas: &'a Blas,
}

/// The inputs a workspace is made with.
#[derive(Clone, Copy, Debug)]
pub struct Inputs {
    /// Sets of random inputs, rotated from one run to the next so that no
    /// run finds the previous one's inputs in the L2.
    pub sets: usize,
    /// Base seed of the random values (each buffer adds its own offset).
    pub seed: u32,
    /// Whether to compute the reference output (on the first set), which
    /// [`Workspace::check`] compares with.
    pub reference: bool,
    /// The elementwise operation a matmul's configurations apply in their
    /// epilogue (its second operand is allocated with each set, and the
    /// reference includes it); `None` for the others.
    pub epilogue: Option<hwwfc_core::ElementwiseKind>,
    /// How a matmul's `B` is stored (`n_major` for the others).
    pub b_layout: BLayout,
}

/// A family of kernels: one CUDA source whose compile-time parameters are a
/// configuration.
pub trait KernelFamily: Sync {
    /// Name for messages, such as `matmul`.
    fn name(&self) -> &'static str;
    /// The operator it computes.
    fn op_kind(&self) -> OpKind;
    /// The placement of its states in the core's tables, which tells the
    /// families of one operator apart.
    fn placement(&self) -> Placement {
        Placement::Pipelined
    }
    /// Whether it needs the architecture-specific target (`sm_90a` on an
    /// `sm_90` device: `wgmma`, `setmaxnreg`).
    fn arch_specific(&self) -> bool {
        false
    }
    /// Its CUDA file.
    fn source(&self) -> KernelSource;
    /// The kernel's entry point in the file.
    fn entry(&self) -> &'static str;
    /// The `-D NAME=VALUE` compile options of configuration `c`.
    fn defines(&self, c: &Config) -> Vec<(String, u32)>;
    /// A short label of `c`, such as `128x128x32 w2x2 s3`.
    fn label(&self, c: &Config) -> String;
    /// Grid, block and dynamic shared memory of `c` on `op`, on a device of
    /// `sm_count` SMs.
    fn launch(&self, op: &Op, c: &Config, sm_count: u32) -> LaunchConfig;
    /// Device bytes of one set of inputs of `op`.
    fn input_set_bytes(&self, op: &Op) -> usize;
    /// Device bytes of the output and the reference of `op`, and of any
    /// scratch its workspace allocates beside them.
    fn output_bytes(&self, op: &Op) -> usize;
    /// Allocates and fills the workspace of `op` (and its reference, if
    /// asked); an error ends the run.
    fn workspace<'a>(&self, tools: Tools<'a>, op: &Op, inputs: Inputs) -> Result<Box<dyn Workspace + 'a>>;
    /// Whether [`Workspace::run_baseline`] runs the vendor's library on the
    /// same operator (timed beside the family when asked).
    fn has_baseline(&self) -> bool {
        false
    }

    /// The program of configuration `c`: the source with its options.
    fn program(&self, c: &Config) -> Program {
        Program { source: self.source(), defines: self.defines(c), arch_specific: self.arch_specific() }
    }
    /// The configurations of `op` that the core allows on `spec` and this
    /// family runs, in the core's table order.
    fn configs(&self, spec: &HardwareSpec, op: &Op) -> Vec<Config> {
        config::configs(spec, op).into_iter().filter(|c| c.placement == self.placement()).collect()
    }
}

/// The device buffers of one operator: rotated input sets, the output and
/// the reference.
pub trait Workspace {
    /// Fills the output with NaN, so that an element the kernel does not
    /// write fails the check.
    fn poison(&mut self) -> Result<(), DriverError>;
    /// Launches `f`, the program of configuration `c`, with `cfg` on input
    /// set `set` (modulo the sets); the configuration sizes what the kernel
    /// needs beyond the operands (the Hopper matmul's split-K partials).
    fn launch(&mut self, f: &CudaFunction, c: &Config, cfg: LaunchConfig, set: usize) -> Result<(), DriverError>;
    /// The output against the reference: the check's figure where it
    /// passes the family's tolerance, the reason otherwise.
    fn check(&self) -> Result<Result<f64, String>, DriverError>;
    /// Runs the vendor's library on input set `set`; `None` where the
    /// family has no baseline.
    fn run_baseline(&mut self, _set: usize) -> Option<Result<(), DriverError>> {
        None
    }
}

/// An fp16 output against its reference: the relative error where it is
/// under `tolerance`, the reason otherwise (also where there is no
/// reference).
pub(crate) fn check_f16(
    support: &Support,
    out: &cudarc::driver::CudaSlice<u16>,
    reference: Option<&cudarc::driver::CudaSlice<u16>>,
    tolerance: f64,
) -> Result<Result<f64, String>, DriverError> {
    let Some(reference) = reference else { return Ok(Err("no reference to check against".into())) };
    Ok(support.relative_error_f16(out, reference)?.and_then(|rel| {
        if rel < tolerance {
            Ok(rel)
        } else {
            Err(format!("relative error {rel:.3e} >= {tolerance:e}"))
        }
    }))
}

/// Every family.
pub fn all() -> &'static [&'static dyn KernelFamily] {
    &[&matmul::MmaSync, &matmul_tma::TmaWgmma, &softmax::RowSoftmax, &elementwise::RowElementwise]
}

/// The families of an operator kind, the one with the vendor's baseline
/// first.
pub fn for_kind(kind: OpKind) -> impl Iterator<Item = &'static dyn KernelFamily> {
    all().iter().copied().filter(move |f| f.op_kind() == kind)
}

/// The family that runs configuration `c` of an operator of `kind` (the
/// kind's first family where none claims the configuration's placement,
/// such as an elementwise layer fused into its producer, which runs no
/// kernel of its own).
pub fn for_config(kind: OpKind, c: &Config) -> &'static dyn KernelFamily {
    for_placement(kind, c.placement)
}

/// The family that runs the configurations of `placement` of an operator
/// of `kind` (as [`for_config`]).
pub fn for_placement(kind: OpKind, placement: Placement) -> &'static dyn KernelFamily {
    for_kind(kind).find(|f| f.placement() == placement).unwrap_or(match kind {
        OpKind::MatMul => &matmul::MmaSync,
        OpKind::Softmax => &softmax::RowSoftmax,
        OpKind::Elementwise => &elementwise::RowElementwise,
    })
}

/// The configurations of `op` on `spec` over every family of its kind, in
/// the core's table order.
pub fn configs(spec: &HardwareSpec, op: &Op) -> Vec<Config> {
    for_kind(op.kind()).flat_map(|f| f.configs(spec, op)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hwwfc_core::DType;

    fn h200() -> HardwareSpec {
        let mut s = hwwfc_core::presets::stress_gpu();
        s.space = hwwfc_core::space::SpaceKind::Hopper;
        s.sram_per_block_bytes = 232448;
        s.sram_per_sm_bytes = 233472;
        s.alignment_bytes = 16;
        s.sm_count = 132;
        s.max_blocks_per_sm = 32;
        s
    }

    fn op_of(kind: OpKind) -> Op {
        match kind {
            OpKind::MatMul => Op::MatMul { m: 77, n: 50257, k: 200, batch: 3, dtype: DType::F16 },
            OpKind::Softmax => Op::Softmax { rows: 7, cols: 77, dtype: DType::F32 },
            OpKind::Elementwise => {
                Op::Elementwise { kind: hwwfc_core::ElementwiseKind::SiluMul, rows: 7, cols: 77, dtype: DType::F16 }
            }
        }
    }

    #[test]
    fn every_family_is_found_by_its_operator_and_declares_its_entry_point() {
        for &f in all() {
            assert!(for_kind(f.op_kind()).any(|g| g.name() == f.name()));
            let text = f.source().text();
            assert!(
                text.contains(&format!("{}(", f.entry())) && text.contains("extern \"C\" __global__"),
                "{}: no kernel `{}` in {}",
                f.name(),
                f.entry(),
                f.source().file
            );
        }
    }

    #[test]
    fn every_configuration_is_its_own_program_and_launches_within_the_limits() {
        let spec = h200();
        for &f in all() {
            let mut op = op_of(f.op_kind());
            if f.placement() == Placement::Tma {
                // The TMA needs 16-byte rows: N and K multiples of 8.
                op = Op::MatMul { m: 77, n: 50264, k: 200, batch: 3, dtype: DType::F16 };
            }
            let configs = f.configs(&spec, &op);
            assert!(!configs.is_empty(), "{}", f.name());
            let mut programs = std::collections::HashSet::new();
            for c in &configs {
                assert!(programs.insert(f.program(c)), "{}: two configurations compile to one program", f.name());
                let l = f.launch(&op, c, spec.sm_count);
                let threads = l.block_dim.0 * l.block_dim.1 * l.block_dim.2;
                assert!(threads <= spec.max_threads_per_block, "{}", f.label(c));
                assert!(l.shared_mem_bytes <= spec.sram_per_block_bytes, "{}", f.label(c));
                assert!(l.grid_dim.0 >= 1 && l.grid_dim.1 >= 1, "{}", f.label(c));
            }
            assert!(f.input_set_bytes(&op) > 0 && f.output_bytes(&op) > 0);
        }
    }

    #[test]
    fn each_elementwise_operation_and_each_fused_epilogue_is_its_own_program() {
        use hwwfc_core::ElementwiseKind;
        let spec = h200();
        let mut programs = std::collections::HashSet::new();
        for kind in ElementwiseKind::ALL {
            let op = Op::Elementwise { kind, rows: 7, cols: 77, dtype: DType::F16 };
            let c = configs(&spec, &op)[0];
            assert_eq!(c.elementwise, Some(kind));
            let f = for_config(OpKind::Elementwise, &c);
            assert_eq!(f.name(), "elementwise");
            assert!(f.label(&c).starts_with(kind.name()), "{}", f.label(&c));
            assert!(programs.insert(f.program(&c)));
        }
        let mm = Op::MatMul { m: 64, n: 64, k: 64, batch: 1, dtype: DType::F16 };
        for &f in all().iter().filter(|f| f.op_kind() == OpKind::MatMul) {
            let Some(plain) = f.configs(&spec, &mm).first().copied() else { continue };
            assert!(!f.defines(&plain).iter().any(|(d, _)| d == "EPILOGUE"));
            for kind in [ElementwiseKind::Add, ElementwiseKind::SiluMul, ElementwiseKind::Gelu] {
                let fused = plain.with_elementwise(Some(kind));
                assert!(f.defines(&fused).iter().any(|(d, _)| d == "EPILOGUE"), "{}", f.name());
                assert!(f.label(&fused).ends_with(&format!("+{}", kind.name())));
                assert!(programs.insert(f.program(&fused)));
            }
        }
    }
}
