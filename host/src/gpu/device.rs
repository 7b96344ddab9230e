//! Opening a CUDA device, reading what it is and allows, and a spec with
//! those limits ([`device_limits`]).

use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaContext, CudaStream};
use std::fmt;
use std::sync::Arc;

pub use super::error::GpuError;

/// An opened GPU: its context and the one stream every launch goes to.
pub struct Gpu {
    /// The device's primary context.
    pub ctx: Arc<CudaContext>,
    /// The stream of every launch, copy and event.
    pub stream: Arc<CudaStream>,
    /// What the device is.
    pub info: DeviceInfo,
    /// The SMs of the green context every launch runs in, if the device
    /// was opened on a partition ([`Gpu::open_partition`]).
    pub partition_sms: Option<u32>,
}

/// What a device is and what it allows, read from the driver.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct DeviceInfo {
    /// Device ordinal.
    pub ordinal: usize,
    /// Marketing name, such as `NVIDIA H200`.
    pub name: String,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// L2 cache bytes.
    pub l2_bytes: u32,
    /// Shared memory a block may opt in to, bytes.
    pub smem_per_block_optin: u32,
    /// Shared memory per SM, bytes.
    pub smem_per_sm: u32,
    /// 32-bit registers per SM.
    pub registers_per_sm: u32,
    /// Most threads per block.
    pub max_threads_per_block: u32,
    /// Most threads per SM.
    pub max_threads_per_sm: u32,
    /// Most blocks per SM.
    pub max_blocks_per_sm: u32,
    /// Device memory, bytes.
    pub total_memory: u64,
    /// CUDA version the driver supports, such as `13.0`.
    pub cuda_driver_api: String,
    /// NVRTC version, such as `13.0`.
    pub nvrtc_version: String,
}

fn err(e: impl fmt::Debug) -> GpuError {
    GpuError::Driver(format!("{e:?}"))
}

impl Gpu {
    /// Opens device `ordinal`, checking first that the driver and NVRTC
    /// can be loaded at all (so that a machine without a GPU gets an error,
    /// not a panic).
    pub fn open(ordinal: usize) -> Result<Gpu, GpuError> {
        Gpu::open_partition(ordinal, None)
    }

    /// Opens device `ordinal` as [`Gpu::open`] does, its launches confined
    /// to a green context of `sms` SMs if given (the driver may round the
    /// count up: `partition_sms` is what it made).
    pub fn open_partition(ordinal: usize, sms: Option<u32>) -> Result<Gpu, GpuError> {
        // SAFETY: only tries to dlopen the driver library.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(GpuError::NoDriver);
        }
        // SAFETY: only tries to dlopen the NVRTC library.
        if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
            return Err(GpuError::NoNvrtc);
        }
        cudarc::driver::result::init().map_err(err)?;
        let count = CudaContext::device_count().map_err(err)?;
        if ordinal >= count.max(0) as usize {
            return Err(GpuError::NoDevice { ordinal, count });
        }
        if let Some(sms) = sms {
            let (ctx, stream, made) = super::green::open(ordinal, sms)?;
            // SAFETY: as below, one stream carries everything.
            unsafe { ctx.disable_event_tracking() };
            let info = DeviceInfo::read(ordinal, &ctx)?;
            return Ok(Gpu { ctx, stream, info, partition_sms: Some(made) });
        }
        let ctx = CudaContext::new(ordinal).map_err(err)?;
        // One stream, and events only where we record them: cudarc's
        // per-buffer event tracking would add records around every launch.
        // SAFETY: every launch and copy of the profiler goes to one stream,
        // in order, so no cross-stream synchronization is needed.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        let info = DeviceInfo::read(ordinal, &ctx)?;
        Ok(Gpu { ctx, stream, info, partition_sms: None })
    }
}

impl Gpu {
    /// The SMs a persistent kernel's grid is sized for: the green
    /// context's where the GPU was opened on a partition (as the cost
    /// model's grid on the partition's spec), else the device's (the
    /// device attribute counts every SM, inside a green context too).
    pub fn launch_sms(&self) -> u32 {
        self.partition_sms.unwrap_or(self.info.sm_count)
    }
}

impl DeviceInfo {
    fn read(ordinal: usize, ctx: &Arc<CudaContext>) -> Result<DeviceInfo, GpuError> {
        let attr = |a: Attr| ctx.attribute(a).map(|v| v.max(0) as u32).map_err(err);
        let mut driver = 0i32;
        // SAFETY: writes one int; the driver is initialized.
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver) }.result().map_err(err)?;
        let (mut major, mut minor) = (0i32, 0i32);
        // SAFETY: writes two ints; NVRTC is loaded.
        unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }.result().map_err(err)?;
        Ok(DeviceInfo {
            ordinal,
            name: ctx.name().map_err(err)?,
            compute_capability: ctx.compute_capability().map_err(err)?,
            sm_count: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            l2_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
            smem_per_block_optin: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
            smem_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?,
            registers_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)?,
            max_threads_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_threads_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?,
            max_blocks_per_sm: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)?,
            total_memory: ctx.total_mem().map_err(err)? as u64,
            cuda_driver_api: format!("{}.{}", driver / 1000, (driver % 1000) / 10),
            nvrtc_version: format!("{major}.{minor}"),
        })
    }

    /// The `sm_XY` architecture NVRTC should compile for.
    pub fn arch(&self) -> String {
        format!("sm_{}{}", self.compute_capability.0, self.compute_capability.1)
    }
}

/// `spec` with its limits replaced by what the device reports, so that the
/// constraints check against the real hardware.
pub fn device_limits(spec: &hwwfc_core::HardwareSpec, info: &DeviceInfo) -> hwwfc_core::HardwareSpec {
    let mut s = spec.clone();
    // Hopper (compute capability 9.x) runs the `sm_90a` family too.
    s.space = if info.compute_capability.0 == 9 {
        hwwfc_core::space::SpaceKind::Hopper
    } else {
        hwwfc_core::space::SpaceKind::Cuda
    };
    s.sram_per_block_bytes = info.smem_per_block_optin;
    s.sram_per_sm_bytes = info.smem_per_sm;
    s.sm_count = info.sm_count;
    s.l2_bytes = info.l2_bytes;
    s.max_threads_per_block = info.max_threads_per_block;
    s.max_threads_per_sm = info.max_threads_per_sm;
    s.max_blocks_per_sm = info.max_blocks_per_sm;
    s.registers_per_sm = info.registers_per_sm;
    s
}

/// Clocks, temperature and driver version as `nvidia-smi` reports them, if
/// it is installed (the driver API has no call for the current SM clock).
pub fn nvidia_smi(ordinal: usize) -> Option<serde_json::Value> {
    let fields = "driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,pstate";
    let out = std::process::Command::new("nvidia-smi")
        .args([format!("--id={ordinal}"), format!("--query-gpu={fields}"), "--format=csv,noheader,nounits".into()])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let line = String::from_utf8_lossy(&out.stdout).lines().next()?.to_string();
    let mut map = serde_json::Map::new();
    for (key, value) in fields.split(',').zip(line.split(',')) {
        map.insert(key.replace('.', "_"), serde_json::Value::String(value.trim().to_string()));
    }
    Some(serde_json::Value::Object(map))
}
