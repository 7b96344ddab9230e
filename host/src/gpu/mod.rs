//! The GPU side of the profiler: a CUDA device opened through `cudarc`,
//! the kernels of `kernels/` compiled at run time by NVRTC, and timing with
//! CUDA events.
//!
//! Nothing here decides what to measure; [`crate::profile`] does.

pub mod device;
pub mod source;
pub mod timer;

pub use device::{DeviceInfo, Gpu};
pub use source::{KernelSource, Program};
pub use timer::{Timing, TimingPolicy};
