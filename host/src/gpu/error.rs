//! Why no GPU could be used: the one error of opening a device, a green
//! context or a driver call, with a message that says what to do.

use std::fmt;

/// Why no GPU could be used.
#[derive(Debug)]
pub enum GpuError {
    /// The CUDA driver library (`libcuda.so`) cannot be loaded.
    NoDriver,
    /// The driver loaded but reports no device, or not this one.
    NoDevice {
        /// The device asked for.
        ordinal: usize,
        /// Devices present.
        count: i32,
    },
    /// NVRTC (`libnvrtc.so`) cannot be loaded.
    NoNvrtc,
    /// A driver call failed.
    Driver(String),
}

impl fmt::Display for GpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GpuError::NoDriver => f.write_str(
                "no CUDA driver: libcuda.so could not be loaded (this command needs an NVIDIA GPU and its driver)",
            ),
            GpuError::NoDevice { ordinal, count: 0 } => {
                write!(f, "no CUDA GPU found (asked for GPU {ordinal}; the driver reports none)")
            }
            GpuError::NoDevice { ordinal, count } => {
                write!(f, "GPU {ordinal} not found: the driver reports {count} GPU(s), numbered from 0")
            }
            GpuError::NoNvrtc => f.write_str(
                "NVRTC not found: libnvrtc.so could not be loaded (add the CUDA toolkit's lib folder to LD_LIBRARY_PATH)",
            ),
            GpuError::Driver(msg) => write!(f, "CUDA driver error: {msg}"),
        }
    }
}

impl std::error::Error for GpuError {}
