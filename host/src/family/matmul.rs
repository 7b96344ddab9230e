//! The tiled tensor-core matmul (`kernels/matmul.cu`): `mma.sync` on fp16
//! with fp32 accumulation; a block computes a `BM x BN` tile of `C` from a
//! pipeline of `STAGES` shared-memory stages of `BK`-deep slices, its
//! `WM x WN` warps each owning a part of the tile. The grid is
//! one-dimensional over the tiles, in grouped order, with the batch along
//! y. Checked against cuBLAS, itself checked against fp64 on the CPU, and
//! timed beside cuBLAS. A configuration with an elementwise operation
//! applies it in the epilogue (`EPILOGUE`), its second operand read in the
//! output's place: checked against cuBLAS followed by the fp64 reference of
//! the operation, and timed beside cuBLAS followed by the operation as its
//! own kernel. Where `B` is stored K-major (`n x k`), this kernel, which
//! reads `B` row-major, runs the support kernels' batched transpose first,
//! and the two are timed together: what a layout change costs a schedule
//! that chooses it.

use super::{BLayout, Config, Inputs, KernelFamily, Tools, Workspace};
use crate::gpu::launch::{self, ElementwiseOperands};
use crate::gpu::KernelSource;
use anyhow::{bail, Result};
use cudarc::driver::sys::CUresult;
use cudarc::driver::{CudaFunction, CudaSlice, DriverError, LaunchConfig};
use hwwfc_core::{ElementwiseKind, Op, OpKind};

/// Largest relative error against cuBLAS that passes.
pub const TOLERANCE: f64 = 1e-2;

/// Offset of the seeds of a fused epilogue's second operands from the
/// run's base seed.
const EPILOGUE_SEED: u32 = 300;

/// The `mma.sync` matmul family.
pub struct MmaSync;

/// `[m, n, k, batch]` of a matmul (zeros for another operator).
pub(super) fn dims(op: &Op) -> [u32; 4] {
    match *op {
        Op::MatMul { m, n, k, batch, .. } => [m, n, k, batch],
        _ => [0; 4],
    }
}

/// Element counts of A, B and C, over the batch.
fn lens(op: &Op) -> [usize; 3] {
    let [m, n, k, b] = dims(op).map(|d| d as usize);
    [b * m * k, b * k * n, b * m * n]
}

/// The `EPILOGUE` define of a configuration with a fused elementwise
/// operation (none otherwise).
pub(super) fn epilogue_define(c: &Config) -> Option<(String, u32)> {
    c.elementwise.map(|k| ("EPILOGUE".into(), crate::gpu::support::kind_code(k) as u32))
}

/// `label` followed by ` bk` where `B` is stored K-major, and by `+` and
/// the fused operation, if any.
pub(super) fn with_variants(label: String, c: &Config) -> String {
    let kmajor = if c.b_layout == BLayout::KMajor { " bk" } else { "" };
    match c.elementwise {
        Some(k) => format!("{label}{kmajor} +{}", k.name()),
        None => format!("{label}{kmajor}"),
    }
}

/// Dynamic shared memory of one block of `c`, bytes (the core's own count).
pub fn dynamic_smem(op: &Op, c: &Config) -> u32 {
    hwwfc_core::resource::usage(op, &c.state()).sram_bytes
}

impl KernelFamily for MmaSync {
    fn name(&self) -> &'static str {
        "matmul"
    }

    fn op_kind(&self) -> OpKind {
        OpKind::MatMul
    }

    fn source(&self) -> KernelSource {
        crate::kernel_source!("matmul.cu")
    }

    fn entry(&self) -> &'static str {
        "matmul"
    }

    fn defines(&self, c: &Config) -> Vec<(String, u32)> {
        vec![
            ("BM".into(), c.tile_m as u32),
            ("BN".into(), c.tile_n as u32),
            ("BK".into(), c.tile_k as u32),
            ("WM".into(), c.warps_m as u32),
            ("WN".into(), c.warps_n as u32),
            ("STAGES".into(), c.stages as u32),
        ]
        .into_iter()
        .chain(epilogue_define(c))
        .collect()
    }

    fn label(&self, c: &Config) -> String {
        let label = format!("{}x{}x{} w{}x{} s{}", c.tile_m, c.tile_n, c.tile_k, c.warps_m, c.warps_n, c.stages);
        with_variants(label, c)
    }

    fn launch(&self, op: &Op, c: &Config, _sm_count: u32) -> LaunchConfig {
        let [m, n, _, batch] = dims(op);
        LaunchConfig {
            grid_dim: (n.div_ceil(c.tile_n as u32) * m.div_ceil(c.tile_m as u32), batch, 1),
            block_dim: (c.threads(), 1, 1),
            shared_mem_bytes: dynamic_smem(op, c),
        }
    }

    fn input_set_bytes(&self, op: &Op) -> usize {
        let [a, b, _] = lens(op);
        2 * (a + b)
    }

    fn output_bytes(&self, op: &Op) -> usize {
        // The output and the reference, fp16, and one transposed copy of
        // B (the reference check's K-major B, or the row-major B that the
        // `mma.sync` kernels read of a K-major one).
        let [_, b, c] = lens(op);
        2 * (2 * c + b)
    }

    fn workspace<'a>(&self, tools: Tools<'a>, op: &Op, inputs: Inputs) -> Result<Box<dyn Workspace + 'a>> {
        Ok(Box::new(MatmulWorkspace::new(tools, op, inputs)?))
    }

    fn has_baseline(&self) -> bool {
        true
    }
}

/// The buffers of a matmul: rotated sets of random fp16 operands, the
/// output, and cuBLAS's output on the first set as the reference. Every
/// matmul family runs in one of these (the Hopper family adds its tensor
/// maps). With a fused epilogue, each set also holds the operation's
/// second operand, and the reference is cuBLAS's output with the operation
/// applied in fp64.
pub(super) struct MatmulWorkspace<'a> {
    pub(super) tools: Tools<'a>,
    /// `[m, n, k, batch]`.
    pub(super) dims: [u32; 4],
    /// `(A, B)` per input set.
    pub(super) sets: Vec<(CudaSlice<u16>, CudaSlice<u16>)>,
    /// The fused epilogue's operation, if any.
    epilogue: Option<ElementwiseKind>,
    /// How each set's `B` is stored.
    pub(super) b_layout: BLayout,
    /// Where a kernel that reads `B` row-major gets a K-major `B`
    /// transposed (allocated at its first launch).
    row_major_b: Option<CudaSlice<u16>>,
    /// Its second operand per input set (`C`'s shape; empty where it has
    /// none).
    seconds: Vec<CudaSlice<u16>>,
    pub(super) out: CudaSlice<u16>,
    reference: Option<CudaSlice<u16>>,
}

impl<'a> MatmulWorkspace<'a> {
    /// Allocates and fills the buffers of `op` (and its reference, checked
    /// against fp64 on the CPU, if asked).
    pub(super) fn new(tools: Tools<'a>, op: &Op, inputs: Inputs) -> Result<Self> {
        let stream = &tools.gpu.stream;
        let [a_len, b_len, c_len] = lens(op);
        let mut sets = Vec::new();
        for s in 0..inputs.sets {
            let mut a: CudaSlice<u16> = stream.alloc_zeros(a_len)?;
            let mut b: CudaSlice<u16> = stream.alloc_zeros(b_len)?;
            tools.support.fill_f16(&mut a, inputs.seed.wrapping_add(2 * s as u32), 1.0)?;
            tools.support.fill_f16(&mut b, inputs.seed.wrapping_add(2 * s as u32 + 1), 1.0)?;
            sets.push((a, b));
        }
        let epilogue = inputs.epilogue;
        if epilogue.is_some_and(ElementwiseKind::reduces_rows) {
            bail!("a row norm cannot run in a matmul's epilogue");
        }
        let mut seconds = Vec::new();
        if epilogue.is_some_and(|k| k.operands() > 1) {
            for s in 0..inputs.sets {
                let mut e: CudaSlice<u16> = stream.alloc_zeros(c_len)?;
                tools.support.fill_f16(&mut e, inputs.seed.wrapping_add(EPILOGUE_SEED + s as u32), 1.0)?;
                seconds.push(e);
            }
        }
        let out = stream.alloc_zeros::<u16>(c_len)?;
        let b_layout = inputs.b_layout;
        let mut ws = MatmulWorkspace {
            tools,
            dims: dims(op),
            sets,
            epilogue,
            b_layout,
            row_major_b: None,
            seconds,
            out,
            reference: None,
        };
        if inputs.reference {
            // cuBLAS on the first set, itself checked on a sample against
            // fp64 on the CPU, then the fused operation in fp64.
            let mut reference = stream.alloc_zeros::<u16>(c_len)?;
            let (a, b) = ws.sets.first().ok_or_else(|| anyhow::anyhow!("no input set"))?;
            let kmajor = b_layout == BLayout::KMajor;
            tools.blas.gemm_f16(ws.dims, a, b, kmajor, &mut reference)?;
            stream.synchronize()?;
            verify_reference(&tools, ws.dims.map(|d| d as usize), a, (b, kmajor), &reference)?;
            if let Some(kind) = epilogue {
                let product = reference.clone();
                let [m, n, _, batch] = ws.dims;
                let ops = ElementwiseOperands { x: &product, e: ws.second(0).unwrap_or(&product), w: &product };
                tools.support.elementwise_reference(kind, &ops, &mut reference, [m * batch, n])?;
                stream.synchronize()?;
            }
            ws.reference = Some(reference);
        }
        Ok(ws)
    }

    /// The second operand of the fused epilogue in input set `set`, if it
    /// has one.
    pub(super) fn second(&self, set: usize) -> Option<&CudaSlice<u16>> {
        match self.seconds.len() {
            0 => None,
            n => self.seconds.get(set % n),
        }
    }

    /// What the kernel of `c` reads as its epilogue's second operand, and
    /// the operands and output of input set `set`: the set's second
    /// operand where `c` fuses an operation that has one, else a buffer it
    /// does not read (the set's `A`). `Err` where `c` fuses another
    /// operation, or reads another layout of `B`, than the workspace was
    /// made for.
    #[allow(clippy::type_complexity)]
    pub(super) fn operands(
        &mut self,
        c: &Config,
        set: usize,
    ) -> Result<(&CudaSlice<u16>, &CudaSlice<u16>, &CudaSlice<u16>, &mut CudaSlice<u16>), DriverError> {
        if c.elementwise != self.epilogue || c.b_layout != self.b_layout {
            return Err(DriverError(CUresult::CUDA_ERROR_INVALID_VALUE));
        }
        let (a, b) = &self.sets[set % self.sets.len()];
        let e = match self.seconds.len() {
            0 => a,
            n => &self.seconds[set % n],
        };
        Ok((a, b, e, &mut self.out))
    }
}

impl Workspace for MatmulWorkspace<'_> {
    fn poison(&mut self) -> Result<(), DriverError> {
        self.tools.support.poison_f16(&mut self.out)
    }

    fn launch(&mut self, f: &CudaFunction, c: &Config, cfg: LaunchConfig, set: usize) -> Result<(), DriverError> {
        let [m, n, k, batch] = self.dims;
        let stream = self.tools.gpu.stream.clone();
        if c.b_layout == BLayout::NMajor {
            let (a, b, e, out) = self.operands(c, set)?;
            return launch::gemm_f16(&stream, f, cfg, a, b, launch::Output { c: out, e }, [m, n, k]);
        }
        // This kernel reads B row-major: a K-major B is transposed first,
        // and timed with the product, as a schedule would run the two.
        let mut row_major = match self.row_major_b.take() {
            Some(buffer) => buffer,
            None => stream.alloc_zeros::<u16>(batch as usize * k as usize * n as usize)?,
        };
        let mut run = || {
            let (_, b) = &self.sets[set % self.sets.len()];
            self.tools.support.transpose_f16(b, &mut row_major, [n, k, batch])?;
            let (a, _, e, out) = self.operands(c, set)?;
            launch::gemm_f16(&stream, f, cfg, a, &row_major, launch::Output { c: out, e }, [m, n, k])
        };
        let result = run();
        self.row_major_b = Some(row_major);
        result
    }

    fn check(&self) -> Result<Result<f64, String>, DriverError> {
        super::check_f16(self.tools.support, &self.out, self.reference.as_ref(), TOLERANCE)
    }

    /// cuBLAS, followed by the fused operation as its own kernel where the
    /// workspace has one (what a library that does not fuse it runs).
    fn run_baseline(&mut self, set: usize) -> Option<Result<(), DriverError>> {
        let (a, b) = &self.sets[set % self.sets.len()];
        let product = self
            .tools
            .blas
            .gemm_f16(self.dims, a, b, self.b_layout == BLayout::KMajor, &mut self.out)
            .map_err(|_| DriverError(CUresult::CUDA_ERROR_LAUNCH_FAILED));
        let e = match self.seconds.len() {
            0 => a,
            n => &self.seconds[set % n],
        };
        Some(product.and_then(|()| match self.epilogue {
            Some(kind) => self.tools.support.elementwise_apply(kind, &mut self.out, e),
            None => Ok(()),
        }))
    }
}

/// Checks the cuBLAS reference on 64 sampled outputs against fp64 dot
/// products on the CPU (`B` read as stored: K-major where the flag says).
/// Only what the samples read comes to the host: a row of `A`, a row of
/// the K-major `B` and one output each (a row-major `B`, whose columns are
/// strided, is first transposed to K-major on the GPU). Copying every
/// operand whole cost a tuning run most of its profiling time: about a
/// second per GB of operands, once per pass, against a few milliseconds of
/// kernels for a top-8 run's workload.
fn verify_reference(
    tools: &Tools,
    dims: [usize; 4],
    a: &CudaSlice<u16>,
    (b, b_kmajor): (&CudaSlice<u16>, bool),
    c: &CudaSlice<u16>,
) -> Result<()> {
    let stream = &tools.gpu.stream;
    // `len` elements of `buf` from `start`, copied to the host.
    let part = |buf: &CudaSlice<u16>, start: usize, len: usize| -> Result<Vec<u16>> {
        let view = buf
            .try_slice(start..start + len)
            .ok_or_else(|| anyhow::anyhow!("reference check: elements {start}..{} of {}", start + len, buf.len()))?;
        Ok(stream.clone_dtoh(&view)?)
    };
    // `B` K-major, so that every sampled column is one contiguous row.
    let transposed;
    let kmajor = if b_kmajor {
        b
    } else {
        let [_, n, k, batch] = dims.map(|d| d as u32);
        let mut t = stream.alloc_zeros::<u16>(b.len())?;
        tools.support.transpose_f16(b, &mut t, [k, n, batch])?;
        transposed = t;
        &transposed
    };
    let rel = sampled_error(dims, |s| {
        Ok((part(a, s.a_start, s.k)?, part(kmajor, s.b_start, s.k)?, part(c, s.c_at, 1)?.first().copied()))
    })?;
    if rel.is_nan() || rel >= TOLERANCE {
        bail!("the cuBLAS reference disagrees with fp64 on the CPU (relative error {rel:.3e}); not measuring");
    }
    Ok(())
}

/// Where one sampled output of a batched matmul reads, as element offsets
/// into the flat `A` (`batch x m x k`), the K-major `B` (`batch x n x k`)
/// and `C` (`batch x m x n`).
struct Sample {
    /// First element of the output's row of `A` (`k` in a row).
    a_start: usize,
    /// First element of its column of `B` (a row of the K-major `B`).
    b_start: usize,
    /// The output's element of `C`.
    c_at: usize,
    /// Elements in the row and the column.
    k: usize,
}

/// The relative error of 64 sampled outputs against their fp64 dot
/// products: `fetch` returns a sample's row of `A`, column of `B` and
/// output (fp16 bits; `None` where missing, which counts as NaN).
fn sampled_error(
    [m, n, k, batch]: [usize; 4],
    mut fetch: impl FnMut(&Sample) -> Result<(Vec<u16>, Vec<u16>, Option<u16>)>,
) -> Result<f64> {
    let f = |v: u16| half::f16::from_bits(v).to_f64();
    let (mut err, mut refsq) = (0.0f64, 0.0f64);
    let mut state = 0x2545F4914F6CDD1Du64;
    for _ in 0..64 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let (z, i, j) = (
            (state % batch.max(1) as u64) as usize,
            ((state >> 20) % m.max(1) as u64) as usize,
            ((state >> 40) % n.max(1) as u64) as usize,
        );
        let sample = Sample { a_start: z * m * k + i * k, b_start: z * k * n + j * k, c_at: z * m * n + i * n + j, k };
        let (row, column, got) = fetch(&sample)?;
        let exact: f64 = row.iter().zip(&column).map(|(&x, &y)| f(x) * f(y)).sum();
        let got = got.map_or(f64::NAN, f);
        err += (got - exact).powi(2);
        refsq += exact * exact;
    }
    Ok((err / refsq.max(f64::MIN_POSITIVE)).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batched product computed on the CPU, its operands and output as
    /// fp16 bits; `B` stored K-major where asked.
    fn product([m, n, k, batch]: [usize; 4], b_kmajor: bool) -> (Vec<u16>, Vec<u16>, Vec<u16>) {
        let h = |x: f64| half::f16::from_f64(x).to_bits();
        let value = |i: usize| ((i * 7919 % 113) as f64 - 56.0) / 64.0;
        let a: Vec<u16> = (0..batch * m * k).map(|i| h(value(i))).collect();
        let b: Vec<u16> = (0..batch * k * n).map(|i| h(value(i + 31))).collect();
        let f = |v: u16| half::f16::from_bits(v).to_f64();
        let mut c = vec![0u16; batch * m * n];
        for z in 0..batch {
            for i in 0..m {
                for j in 0..n {
                    // `b` holds B row-major; a K-major copy is made below.
                    let dot: f64 = (0..k).map(|p| f(a[z * m * k + i * k + p]) * f(b[z * k * n + p * n + j])).sum();
                    c[z * m * n + i * n + j] = h(dot);
                }
            }
        }
        let b = if b_kmajor {
            let mut t = vec![0u16; b.len()];
            for z in 0..batch {
                for p in 0..k {
                    for j in 0..n {
                        t[z * k * n + j * k + p] = b[z * k * n + p * n + j];
                    }
                }
            }
            t
        } else {
            b
        };
        (a, b, c)
    }

    /// The sampled check with `b` read K-major, as `verify_reference`
    /// hands it over.
    fn error_of(dims: [usize; 4], c: &[u16], a: &[u16], b: &[u16]) -> f64 {
        sampled_error(dims, |s| {
            let row = a[s.a_start..s.a_start + s.k].to_vec();
            Ok((row, b[s.b_start..s.b_start + s.k].to_vec(), c.get(s.c_at).copied()))
        })
        .unwrap()
    }

    #[test]
    fn the_sampled_check_reads_the_right_elements() {
        // Odd sizes and a batch, so that a wrong stride or offset reads
        // another element.
        for dims in [[7, 13, 5, 3], [33, 9, 17, 2], [1, 50, 3, 1]] {
            let (a, b, c) = product(dims, true);
            let rel = error_of(dims, &c, &a, &b);
            assert!(rel < 1e-3, "{dims:?}: relative error {rel}");
            // A wrong output is caught.
            let wrong: Vec<u16> =
                c.iter().map(|&v| half::f16::from_f64(half::f16::from_bits(v).to_f64() + 1.0).to_bits()).collect();
            assert!(error_of(dims, &wrong, &a, &b) > TOLERANCE, "{dims:?}");
            // A row-major B that was not transposed first is caught.
            let (_, row_major, _) = product(dims, false);
            let crossed = error_of(dims, &c, &a, &row_major);
            assert!(crossed > TOLERANCE, "{dims:?}: B read row-major passes ({crossed})");
        }
    }

    #[test]
    fn a_missing_output_fails_the_check() {
        let dims = [4, 4, 4, 1];
        let (a, b, _) = product(dims, true);
        assert!(error_of(dims, &[], &a, &b).is_nan());
    }
}
