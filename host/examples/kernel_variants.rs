//! Compiles the kernels' opt-in variants, which the profiler does not
//! build, with NVRTC for `sm_90a` (no GPU): the Hopper matmul's epilogue
//! through TMA stores (`-DSTORE_TMA=1`, measured by `kernels/harness/`) on
//! a cooperative, a ping-pong, a one-consumer and a K-major configuration,
//! in fp16 and bf16. Exits non-zero, with NVRTC's log, on the first that
//! does not compile. `cargo xtask test` runs it beside the profiler's
//! kernels.
//!
//! ```text
//! cargo run -p hwwfc --example kernel_variants
//! ```

use hwwfc::gpu::Program;
use std::process::ExitCode;

/// The variants, each as its `-D` parameters.
const VARIANTS: &[&[(&str, u32)]] = &[
    &[("BM", 128), ("BN", 256), ("CONSUMERS", 2), ("STAGES", 3), ("STORE_TMA", 1)],
    &[("BM", 256), ("BN", 128), ("CONSUMERS", 2), ("STAGES", 3), ("STORE_TMA", 1), ("BF16", 1)],
    &[("BM", 64), ("BN", 256), ("CONSUMERS", 2), ("STAGES", 4), ("PINGPONG", 1), ("STORE_TMA", 1)],
    &[("BM", 64), ("BN", 128), ("CONSUMERS", 1), ("STAGES", 6), ("STORE_TMA", 1), ("B_KMAJOR", 1)],
];

fn main() -> ExitCode {
    for defines in VARIANTS {
        let program = Program {
            source: hwwfc::kernel_source!("matmul_tma.cu"),
            defines: defines.iter().map(|(name, value)| (name.to_string(), *value)).collect(),
            arch_specific: true,
        };
        let label: Vec<String> = defines.iter().map(|(name, value)| format!("{name}={value}")).collect();
        match program.compile("sm_90") {
            Ok(_) => println!("compiled matmul_tma.cu {}", label.join(" ")),
            Err(log) => {
                eprintln!("error: matmul_tma.cu {} does not compile: {log}", label.join(" "));
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}
