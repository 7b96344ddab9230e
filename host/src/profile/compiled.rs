//! The kernels of a run, compiled once before measuring: the support
//! kernels, the transpose anchor, and every program the plan needs, in
//! parallel. A program that does not compile (or whose entry point does
//! not load) keeps NVRTC's log, which becomes its configuration's failed
//! record; the support kernels and the transpose must compile.

use crate::gpu::source::compile_all;
use crate::gpu::support::Support;
use crate::gpu::{Gpu, KernelSource, Program};
use anyhow::{anyhow, Result};
use cudarc::driver::CudaFunction;
use cudarc::nvrtc::Ptx;
use std::collections::HashMap;
use std::time::Instant;

/// `kernels/transpose.cu`, the transpose anchor.
pub const TRANSPOSE: KernelSource = crate::kernel_source!("transpose.cu");
/// Its entry point.
pub const TRANSPOSE_ENTRY: &str = "transpose";

/// The transpose's program (no parameters).
pub fn transpose_program() -> Program {
    Program { source: TRANSPOSE, defines: vec![], arch_specific: false }
}

/// The compiled kernels of a run.
pub struct Compiled {
    /// The support kernels.
    pub support: Support,
    /// The transpose anchor.
    pub transpose: CudaFunction,
    by_program: HashMap<Program, Result<CudaFunction, String>>,
}

/// The run's programs compiled for one architecture, not yet loaded: each
/// with its PTX or NVRTC's log.
pub type Ptxs = Vec<(Program, Result<Ptx, String>)>;

impl Compiled {
    /// Compiles the support kernels, the transpose and `programs` (each
    /// with its entry point) for `gpu`, and loads them.
    pub fn build(gpu: &Gpu, programs: &[(Program, &'static str)]) -> Result<Compiled> {
        Compiled::load(gpu, Compiled::compile(&gpu.info.arch(), programs), programs)
    }

    /// Compiles the support kernels, the transpose and `programs` for
    /// `arch`, in parallel, once for every GPU of a run.
    pub fn compile(arch: &str, programs: &[(Program, &'static str)]) -> Ptxs {
        let mut all = vec![Support::program(), transpose_program()];
        all.extend(programs.iter().map(|(p, _)| p.clone()));
        let start = Instant::now();
        let compiled = compile_all(&all, arch);
        eprintln!("compiled {} kernels for {arch} in {:.1} s", compiled.len(), start.elapsed().as_secs_f64());
        compiled
    }

    /// Loads compiled programs (of [`Compiled::compile`]) into `gpu`.
    pub fn load(gpu: &Gpu, compiled: Ptxs, programs: &[(Program, &'static str)]) -> Result<Compiled> {
        let mut by_program = HashMap::new();
        let mut support = None;
        let mut transpose = None;
        let (support_program, transpose_program) = (Support::program(), transpose_program());
        for (p, ptx) in compiled {
            let loaded = ptx.and_then(|ptx| gpu.ctx.load_module(ptx).map_err(|e| format!("module load: {e:?}")));
            if p == support_program {
                support = Some(Support::new(gpu, loaded.map_err(|e| anyhow!("support.cu: {e}"))?));
            } else if p == transpose_program {
                let m = loaded.map_err(|e| anyhow!("transpose.cu: {e}"))?;
                transpose = Some(m.load_function(TRANSPOSE_ENTRY).map_err(|e| anyhow!("{e:?}"))?);
            } else {
                let entry = programs.iter().find(|(q, _)| *q == p).map_or("", |(_, e)| *e);
                let f = loaded.and_then(|m| m.load_function(entry).map_err(|e| format!("{e:?}")));
                by_program.insert(p, f);
            }
        }
        Ok(Compiled {
            support: support.ok_or_else(|| anyhow!("support.cu did not compile"))?,
            transpose: transpose.ok_or_else(|| anyhow!("transpose.cu did not compile"))?,
            by_program,
        })
    }

    /// The kernel of `program`: its function, NVRTC's log where it did not
    /// compile, `None` where it was not part of the plan.
    pub fn function(&self, program: &Program) -> Option<Result<CudaFunction, &str>> {
        self.by_program.get(program).map(|r| match r {
            Ok(f) => Ok(f.clone()),
            Err(log) => Err(log.as_str()),
        })
    }
}
