//! The CUDA sources of `kernels/`, embedded in the binary, and their
//! compilation by NVRTC with a configuration's parameters as `-D` macros,
//! many programs at once on every core.

use cudarc::nvrtc::Ptx;

const COMMON: &str = include_str!("../../../kernels/common.cuh");

/// One CUDA file of `kernels/`, built into the binary. A kernel family
/// (or the profiler's own support kernels) declares its file with
/// [`kernel_source!`](crate::kernel_source).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelSource {
    /// File name in `kernels/`, such as `matmul.cu`.
    pub file: &'static str,
    /// The file's text as built into the binary.
    pub embedded: &'static str,
}

/// A [`KernelSource`] of the file `kernels/$file`, embedded at build time.
#[macro_export]
macro_rules! kernel_source {
    ($file:literal) => {
        $crate::gpu::KernelSource {
            file: $file,
            embedded: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../kernels/", $file)),
        }
    };
}

impl KernelSource {
    /// The file's text, with `common.cuh` inlined (NVRTC sees no files).
    /// If `HWWFC_KERNEL_DIR` is set, the files are read from that folder
    /// instead of the copies built into the binary (to try a kernel change
    /// without rebuilding).
    pub fn text(self) -> String {
        if let Some(dir) = std::env::var_os("HWWFC_KERNEL_DIR") {
            let dir = std::path::Path::new(&dir);
            if let (Ok(raw), Ok(common)) =
                (std::fs::read_to_string(dir.join(self.file)), std::fs::read_to_string(dir.join("common.cuh")))
            {
                return raw.replace("#include \"common.cuh\"", &common);
            }
        }
        self.embedded.replace("#include \"common.cuh\"", COMMON)
    }
}

/// A source with its compile-time parameters.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Program {
    /// The source.
    pub source: KernelSource,
    /// `-D NAME=VALUE` parameters.
    pub defines: Vec<(String, u32)>,
    /// Whether to compile for the architecture-specific target (`sm_90a`
    /// for an `sm_90` device), whose instructions run on that architecture
    /// alone.
    pub arch_specific: bool,
}

impl Program {
    /// Compiles to machine code (CUBIN) for `arch` (such as `sm_90`), so
    /// loading the module needs no JIT; the error is NVRTC's log.
    pub fn compile(&self, arch: &str) -> Result<Ptx, String> {
        use cudarc::nvrtc::{result, sys};
        use std::ffi::CString;
        let src = CString::new(self.source.text()).map_err(|e| e.to_string())?;
        let name = CString::new(self.source.file).map_err(|e| e.to_string())?;
        let mut options: Vec<String> = self.defines.iter().map(|(k, v)| format!("-D{k}={v}")).collect();
        let suffix = if self.arch_specific { "a" } else { "" };
        options.push(format!("--gpu-architecture={arch}{suffix}"));
        options.push("-std=c++17".into());
        let prog = result::create_program(&src, Some(&name)).map_err(|e| format!("{e:?}"))?;
        // SAFETY: `prog` is a live program; the options are plain strings.
        let compiled = unsafe { result::compile_program(prog, &options) };
        let out = match compiled {
            Err(e) => {
                // SAFETY: as above.
                let log = unsafe { result::get_program_log(prog) }.unwrap_or_default();
                let bytes: Vec<u8> = log.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
                Err(format!("{e:?}: {}", String::from_utf8_lossy(&bytes)))
            }
            Ok(()) => {
                let mut size = 0usize;
                // SAFETY: `prog` compiled for a real architecture, so it has a CUBIN.
                let cubin = unsafe {
                    sys::nvrtcGetCUBINSize(prog, &mut size).result().and_then(|()| {
                        let mut buf = vec![0u8; size];
                        sys::nvrtcGetCUBIN(prog, buf.as_mut_ptr() as *mut _).result().map(|()| buf)
                    })
                };
                cubin.map(Ptx::from_binary).map_err(|e| format!("{e:?}"))
            }
        };
        // SAFETY: destroyed once, after its last use.
        let _ = unsafe { result::destroy_program(prog) };
        out
    }
}

/// Compiles `programs` for `arch` on every core (NVRTC is thread-safe);
/// returns each program with its machine code or NVRTC's log, in order.
pub fn compile_all(programs: &[Program], arch: &str) -> Vec<(Program, Result<Ptx, String>)> {
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get()).min(32);
    let chunk = programs.len().div_ceil(threads).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = programs
            .chunks(chunk)
            .map(|part| s.spawn(move || part.iter().map(|p| (p.clone(), p.compile(arch))).collect::<Vec<_>>()))
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_default()).collect()
    })
}
