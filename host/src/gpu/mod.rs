//! The GPU: a CUDA device opened through `cudarc`, the kernels of
//! `kernels/` compiled at run time by NVRTC, typed launches, cuBLAS, and
//! timing with CUDA events.
//!
//! - [`device`]: opening a device and reading what it is and allows;
//! - [`error`]: why no GPU could be used;
//! - [`green`]: green contexts, confined to some of a device's SMs;
//! - [`source`]: the embedded CUDA files and their compilation (NVRTC);
//! - [`launch`]: one typed launch per kernel signature, the only place
//!   where kernel arguments are pushed;
//! - [`support`]: random inputs, poisoned outputs, references and checks;
//! - [`tensor_map`]: TMA descriptors of device tensors;
//! - [`blas`]: cuBLAS, the vendor's matmul;
//! - [`timer`]: event timing with the L2 flushed, alone or side by side.
//!
//! Nothing here decides what to measure; [`crate::profile`] does, and
//! nothing here names a kernel family; [`crate::family`] does.

pub mod blas;
pub mod device;
pub mod error;
pub mod green;
pub mod launch;
pub mod source;
pub mod support;
pub mod tensor_map;
pub mod timer;

pub use device::{DeviceInfo, Gpu};
pub use source::{KernelSource, Program};
pub use timer::{Timing, TimingPolicy, FLUSH_BYTES};
