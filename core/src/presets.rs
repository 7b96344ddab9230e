//! Built-in specs of the two virtual accelerators, for targets that read
//! no files. `specs/stress_gpu.json` and `specs/toy_gpu.json` hold the
//! same figures (a test keeps them equal).

use crate::space::SpaceKind;
use crate::spec::{HardwareSpec, PeakCompute};

fn virtual_spec(name: &str, sram: u32, alignment: u32, scale: u32) -> HardwareSpec {
    let s = scale as f32;
    HardwareSpec {
        name: heapless::String::try_from(name).unwrap_or_default(),
        space: SpaceKind::Tiles,
        sram_per_block_bytes: sram,
        sram_per_sm_bytes: sram * 4,
        alignment_bytes: alignment,
        dram_bandwidth_gbps: 100.0 * s,
        peak_tflops: PeakCompute { f16: 4.0 * s, bf16: 4.0 * s, f32: 1.0 * s },
        sm_count: 8 * scale,
        l2_bytes: 1024 * 1024 * scale,
        launch_overhead_us: 5.0,
        max_threads_per_block: 1024,
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 16,
        registers_per_sm: 65536,
    }
}

/// `stress_gpu`: a virtual accelerator with 12 KB of SRAM per block and
/// 64-byte alignment, tight enough for the constraints to decide.
pub fn stress_gpu() -> HardwareSpec {
    virtual_spec("stress_gpu", 12 * 1024, 64, 1)
}

/// `toy_gpu`: a virtual accelerator with 64 KB of SRAM per block and
/// 128-byte alignment.
pub fn toy_gpu() -> HardwareSpec {
    virtual_spec("toy_gpu", 64 * 1024, 128, 2)
}
