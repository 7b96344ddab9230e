//! Green contexts: a context, and a stream, confined to some of a device's
//! SMs (`cuDevSmResourceSplitByCount`, `cuGreenCtxCreate`), so that every
//! kernel the profiler launches, cuBLAS's included, runs on that partition.
//!
//! The driver rounds the SMs asked for to its granularity; [`open`] returns
//! the count it made, which is what the records and the spec must carry.
//! [`open_pair`] makes two disjoint green contexts on one device, one per
//! tenant of `hwwfc tenants`.

use super::error::GpuError;
use cudarc::driver::sys;
use cudarc::driver::{CudaContext, CudaStream};
use std::sync::Arc;

fn check(r: sys::CUresult, what: &str) -> Result<(), GpuError> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(GpuError::Driver(format!("{what}: {r:?}")))
    }
}

/// A green context of at least `sms` SMs on device `ordinal` (the driver
/// has been initialized): its context, a stream in it, and the SMs it has.
pub fn open(ordinal: usize, sms: u32) -> Result<(Arc<CudaContext>, Arc<CudaStream>, u32), GpuError> {
    let (dev, all) = device_sms(ordinal)?;
    let (mut part, _rest, made) = split(&all, sms, "the device")?;
    let (ctx, stream) = context(ordinal, dev, &mut part)?;
    Ok((ctx, stream, made))
}

/// One of the green contexts of [`open_pair`].
pub struct GreenPart {
    /// The green context (as a plain context: modules, memory, events).
    pub ctx: Arc<CudaContext>,
    /// A stream of the green context, every launch of its tenant.
    pub stream: Arc<CudaStream>,
    /// The SMs the driver gave it.
    pub sms: u32,
}

/// The two green contexts of [`open_pair`], and the order the driver took.
pub struct GreenPair {
    /// Tenant A's green context.
    pub a: GreenPart,
    /// Tenant B's green context.
    pub b: GreenPart,
    /// Where the driver refused to split B's SMs off those A left, its
    /// refusal: B's were then split first, A's off the rest.
    pub a_first_refused: Option<String>,
}

/// Two disjoint green contexts on device `ordinal` (the driver has been
/// initialized): `a` SMs split off the device, then `b` SMs split off what
/// is left, each with a stream of its own; where the driver cannot split
/// `b` off that rest (the H100 refuses 8 of the 12 SMs left by 120), `b`
/// first and `a` off its rest. The driver rounds each count up to its
/// granularity; the [`GreenPart::sms`] are what it made. SMs left over
/// belong to neither.
pub fn open_pair(ordinal: usize, a: u32, b: u32) -> Result<GreenPair, GpuError> {
    let message = |e: GpuError| match e {
        GpuError::Driver(m) => m,
        other => other.to_string(),
    };
    match split_pair(ordinal, a, b) {
        Ok((a, b)) => Ok(GreenPair { a, b, a_first_refused: None }),
        Err(first) => match split_pair(ordinal, b, a) {
            Ok((part_b, part_a)) => Ok(GreenPair { a: part_a, b: part_b, a_first_refused: Some(message(first)) }),
            Err(second) => Err(GpuError::Driver(format!(
                "two green contexts of {a} and {b} SMs: {a} first: {}; {b} first: {}",
                message(first),
                message(second)
            ))),
        },
    }
}

/// Two disjoint green contexts: `a` SMs split off device `ordinal`, then
/// `b` SMs off what is left.
fn split_pair(ordinal: usize, a: u32, b: u32) -> Result<(GreenPart, GreenPart), GpuError> {
    let (dev, all) = device_sms(ordinal)?;
    let (mut part_a, mut rest, made_a) = split(&all, a, "the device")?;
    // The driver splits only SMs read from a device or a green context,
    // never the rest of a split as it comes: the rest becomes a green
    // context of its own (alive as long as the process), whose SMs are
    // split again.
    let rest_green = green(dev, &mut rest)?;
    // SAFETY: the resource structs are plain C data, zero a valid start.
    let mut rest_sms: sys::CUdevResource = unsafe { std::mem::zeroed() };
    // SAFETY: `rest_green` is a live green context; one resource written.
    check(
        unsafe {
            sys::cuGreenCtxGetDevResource(rest_green, &mut rest_sms, sys::CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM)
        },
        "cuGreenCtxGetDevResource",
    )?;
    let (mut part_b, _left, made_b) = split(&rest_sms, b, &format!("the SMs left after the first {made_a}"))?;
    let (ctx_a, stream_a) = context(ordinal, dev, &mut part_a)?;
    let (ctx_b, stream_b) = context(ordinal, dev, &mut part_b)?;
    Ok((
        GreenPart { ctx: ctx_a, stream: stream_a, sms: made_a },
        GreenPart { ctx: ctx_b, stream: stream_b, sms: made_b },
    ))
}

/// Device `ordinal` and the resource description of all its SMs.
fn device_sms(ordinal: usize) -> Result<(sys::CUdevice, sys::CUdevResource), GpuError> {
    let mut dev: sys::CUdevice = 0;
    // SAFETY: writes one device handle.
    check(unsafe { sys::cuDeviceGet(&mut dev, ordinal as i32) }, "cuDeviceGet")?;
    // SAFETY: the resource structs are plain C data, zero a valid start.
    let mut all: sys::CUdevResource = unsafe { std::mem::zeroed() };
    // SAFETY: writes one resource description of the device.
    check(
        unsafe { sys::cuDeviceGetDevResource(dev, &mut all, sys::CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM) },
        "cuDeviceGetDevResource",
    )?;
    Ok((dev, all))
}

/// Splits one group of at least `sms` SMs off the SM resource `input`
/// (named `what` in errors): the group, the rest, and the group's SMs.
fn split(
    input: &sys::CUdevResource,
    sms: u32,
    what: &str,
) -> Result<(sys::CUdevResource, sys::CUdevResource, u32), GpuError> {
    // SAFETY: `input` was written by the driver as an SM resource.
    let available = unsafe { input.__bindgen_anon_1.sm.smCount };
    if sms > available {
        return Err(GpuError::Driver(format!("a green context of {sms} SMs: {what} has {available}")));
    }
    // SAFETY: the resource structs are plain C data, zero a valid start.
    let mut part: sys::CUdevResource = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut rest: sys::CUdevResource = unsafe { std::mem::zeroed() };
    let mut groups: u32 = 1;
    // SAFETY: one group asked for, one result slot given.
    check(
        unsafe { sys::cuDevSmResourceSplitByCount(&mut part, &mut groups, input, &mut rest, 0, sms) },
        "cuDevSmResourceSplitByCount",
    )?;
    if groups != 1 {
        return Err(GpuError::Driver(format!("the driver could not split off {sms} of the {available} SMs of {what}")));
    }
    // SAFETY: written by the driver as an SM resource.
    let made = unsafe { part.__bindgen_anon_1.sm.smCount };
    Ok((part, rest, made))
}

/// A green context of device `dev` on the SM resource `part` (never
/// destroyed).
fn green(dev: sys::CUdevice, part: &mut sys::CUdevResource) -> Result<sys::CUgreenCtx, GpuError> {
    let mut desc: sys::CUdevResourceDesc = std::ptr::null_mut();
    // SAFETY: one resource in, one descriptor out.
    check(unsafe { sys::cuDevResourceGenerateDesc(&mut desc, part, 1) }, "cuDevResourceGenerateDesc")?;
    let mut green: sys::CUgreenCtx = std::ptr::null_mut();
    let flags = sys::CUgreenCtxCreate_flags::CU_GREEN_CTX_DEFAULT_STREAM as u32;
    // SAFETY: a descriptor the driver made for this device.
    check(unsafe { sys::cuGreenCtxCreate(&mut green, desc, dev, flags) }, "cuGreenCtxCreate")?;
    Ok(green)
}

/// A green context of device `dev` on the SM resource `part`, as a plain
/// context, and a non-blocking stream of it; both live as long as the
/// process.
fn context(
    ordinal: usize,
    dev: sys::CUdevice,
    part: &mut sys::CUdevResource,
) -> Result<(Arc<CudaContext>, Arc<CudaStream>), GpuError> {
    let green = green(dev, part)?;
    let mut raw: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: `green` is a live green context.
    check(unsafe { sys::cuCtxFromGreenCtx(&mut raw, green) }, "cuCtxFromGreenCtx")?;
    // SAFETY: `raw` is a live context of device `dev`.
    let ctx =
        unsafe { CudaContext::from_raw_context(ordinal, dev, raw) }.map_err(|e| GpuError::Driver(format!("{e:?}")))?;
    // The green context lives as long as the process: the wrapper would
    // destroy its context as a plain one, so it is never dropped.
    std::mem::forget(ctx.clone());
    let mut raw_stream: sys::CUstream = std::ptr::null_mut();
    let non_blocking = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
    // SAFETY: a stream of the live green context.
    check(unsafe { sys::cuGreenCtxStreamCreate(&mut raw_stream, green, non_blocking, 0) }, "cuGreenCtxStreamCreate")?;
    // SAFETY: the stream belongs to `ctx`'s green context and is never
    // destroyed (it lives as long as the process, like the context).
    let stream = unsafe { ctx.wrap_borrowed_stream(raw_stream) };
    Ok((ctx, stream))
}
