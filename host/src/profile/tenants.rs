//! Two tenants on one GPU at once (`hwwfc tenants --measure`): each
//! tenant's chain of layers in a green context of its own
//! ([`crate::gpu::green::open_pair`]), against the same chains run alone
//! and against the whole-GPU schedules run one after the other.
//!
//! What is timed, each chain with its own inputs and the L2 flushed before
//! every repeat:
//!
//! - (a) each tenant's partition schedule alone on its green context, and
//!   (b) its whole-GPU schedule alone on the same green context, both as
//!   [`super::chain::time_prepared`] times a chain (CUDA events on the
//!   green context's stream);
//! - (c) both partition schedules at once: the layers are enqueued in turn
//!   (A's first, B's first, A's second, ...) from one host thread onto the
//!   two streams, so both chains start within a launch of each other. Each
//!   chain runs once per repeat: each stream's time is taken by CUDA
//!   events on that stream, and the makespan by the host's clock from
//!   just before the first launch to the return of the synchronization of
//!   both streams (so it includes the launch and synchronization latency,
//!   a few microseconds). Where the driver measures between events of the
//!   two green contexts, the makespan by events is given too;
//! - (d) both whole-GPU schedules one after the other on one stream of the
//!   whole GPU: each chain's part and the whole by events, and the
//!   makespan by the host's clock as in (c).
//!
//! The rounds of (c) and (d) take turns (one of each per repeat, which
//! goes first alternating), so that slow changes of the GPU's clocks fall
//! on both alike. Where one tenant's chain is much shorter than the
//! other's, its green context idles for the rest of the makespan: the
//! per-stream times show how long.

use super::chain::{time_prepared, Kernels, PreparedChain};
use crate::family::{Config, Tools};
use crate::gpu::blas::Blas;
use crate::gpu::green;
use crate::gpu::support::Support;
use crate::gpu::timer::{self, flush_l2};
use crate::gpu::{Gpu, Timing, TimingPolicy, FLUSH_BYTES};
use crate::input::workload_file::Workload;
use anyhow::{anyhow, Result};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, DriverError};
use std::time::Instant;

fn drv(e: DriverError) -> anyhow::Error {
    anyhow!("{e:?}")
}

/// One tenant's two schedules as layers to run, and its partition.
#[derive(Clone, Debug)]
pub struct TenantChains {
    /// Its schedule for its partition: each layer's shape and
    /// configuration.
    pub partition: Vec<(Workload, Config)>,
    /// Its schedule for the whole GPU.
    pub whole: Vec<(Workload, Config)>,
    /// SMs of its green context, as asked of the driver.
    pub sms: u32,
}

/// What [`measure`] timed, microseconds; index 0 is tenant A, 1 tenant B.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PairTiming {
    /// The device's name.
    pub device: String,
    /// SMs of the whole device.
    pub device_sms: u32,
    /// SMs of each green context, as the driver made them.
    pub made_sms: [u32; 2],
    /// Where the driver refused to split B's SMs off those A left, its
    /// refusal (B's were split first, A's off the rest).
    pub a_first_refused: Option<String>,
    /// (a) each partition schedule alone on its green context.
    pub alone: [Timing; 2],
    /// (b) each whole-GPU schedule alone on the tenant's green context.
    pub whole_on_partition: [Timing; 2],
    /// (c) each partition schedule's own time while both run, by events
    /// on its stream.
    pub together: [Timing; 2],
    /// (c) the makespan of both, by the host's clock.
    pub together_makespan: Timing,
    /// (c) the makespan by events of both green contexts, where the driver
    /// measures between them.
    pub together_event_makespan: Option<Timing>,
    /// (d) each whole-GPU schedule's part of the sequence, by events.
    pub sequential: [Timing; 2],
    /// (d) the sequence by events.
    pub sequential_event_makespan: Timing,
    /// (d) the sequence by the host's clock.
    pub sequential_makespan: Timing,
}

/// One round of (c): each stream's time by its events, the makespan by
/// the host's clock, and by events where the driver allows.
struct Together {
    per_stream: [f64; 2],
    wall: f64,
    events: Option<f64>,
}

/// One round of (d): each chain's part, both by events, and the host's
/// clock.
struct Sequence {
    parts: [f64; 2],
    events: f64,
    wall: f64,
}

fn timing_event(gpu: &Gpu) -> Result<CudaEvent> {
    gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).map_err(drv)
}

/// Milliseconds from `start` to `end`, which may belong to different
/// contexts of one device; `None` where the driver refuses.
fn elapsed_across(start: &CudaEvent, end: &CudaEvent) -> Option<f64> {
    // SAFETY: both events are live and have completed (their streams were
    // synchronized); the driver returns the time or an error.
    unsafe { cudarc::driver::result::event::elapsed(start.cu_event(), end.cu_event()) }.ok().map(|ms| ms as f64)
}

/// The GPU parts of a measurement: the whole device and the two green
/// contexts.
struct Devices {
    whole: Gpu,
    a: Gpu,
    b: Gpu,
    a_first_refused: Option<String>,
}

fn open(ordinal: usize, a: u32, b: u32) -> Result<Devices> {
    let whole = Gpu::open(ordinal)?;
    let pair = green::open_pair(ordinal, a, b)?;
    let wrap = |p: green::GreenPart| {
        // SAFETY: every launch, copy and event of a tenant goes to its one
        // stream, in order; the streams of the other contexts are
        // synchronized by the host before anything crosses (the flush).
        unsafe { p.ctx.disable_event_tracking() };
        Gpu { ctx: p.ctx, stream: p.stream, info: whole.info.clone(), partition_sms: Some(p.sms) }
    };
    let (a, b) = (wrap(pair.a), wrap(pair.b));
    Ok(Devices { whole, a, b, a_first_refused: pair.a_first_refused })
}

/// Measures two tenants on GPU `ordinal` ((a) to (d) of the module's
/// documentation) under `policy` (warm-up rounds, repeats).
pub fn measure(ordinal: usize, a: &TenantChains, b: &TenantChains, policy: &TimingPolicy) -> Result<PairTiming> {
    let d = open(ordinal, a.sms, b.sms)?;
    let kernels = Kernels::compile(&d.whole.info.arch(), &[&a.partition, &a.whole, &b.partition, &b.whole])?;
    let (support_w, support_a, support_b) =
        (Support::compile(&d.whole)?, Support::compile(&d.a)?, Support::compile(&d.b)?);
    let (blas_w, blas_a, blas_b) = (Blas::new(&d.whole)?, Blas::new(&d.a)?, Blas::new(&d.b)?);
    let tools_w = Tools { gpu: &d.whole, support: &support_w, blas: &blas_w };
    let tools_a = Tools { gpu: &d.a, support: &support_a, blas: &blas_a };
    let tools_b = Tools { gpu: &d.b, support: &support_b, blas: &blas_b };
    let mut a_part = PreparedChain::prepare(tools_a, &a.partition, &kernels)?;
    let mut a_whole = PreparedChain::prepare(tools_a, &a.whole, &kernels)?;
    let mut b_part = PreparedChain::prepare(tools_b, &b.partition, &kernels)?;
    let mut b_whole = PreparedChain::prepare(tools_b, &b.whole, &kernels)?;
    let mut a_on_whole = PreparedChain::prepare(tools_w, &a.whole, &kernels)?;
    let mut b_on_whole = PreparedChain::prepare(tools_w, &b.whole, &kernels)?;
    for gpu in [&d.whole, &d.a, &d.b] {
        gpu.stream.synchronize().map_err(drv)?;
    }

    // (a) and (b): one chain at a time, the other green context idle.
    let alone = [time_prepared(&d.a, &mut a_part, policy)?, time_prepared(&d.b, &mut b_part, policy)?];
    let whole_on_partition = [time_prepared(&d.a, &mut a_whole, policy)?, time_prepared(&d.b, &mut b_whole, policy)?];

    // (c) and (d), in turns.
    let mut flush = d.whole.stream.alloc_zeros::<u32>(FLUSH_BYTES / 4).map_err(drv)?;
    let mut flushed = || -> Result<()> {
        flush_l2(&d.whole, &mut flush).map_err(drv)?;
        d.whole.stream.synchronize().map_err(drv)
    };
    let mut together = |flushed: &mut dyn FnMut() -> Result<()>| -> Result<Together> {
        let (sa, ea, sb, eb) = (timing_event(&d.a)?, timing_event(&d.a)?, timing_event(&d.b)?, timing_event(&d.b)?);
        flushed()?;
        let t0 = Instant::now();
        sa.record(&d.a.stream).map_err(drv)?;
        sb.record(&d.b.stream).map_err(drv)?;
        for i in 0..a_part.len().max(b_part.len()) {
            a_part.launch_layer(i).map_err(drv)?;
            b_part.launch_layer(i).map_err(drv)?;
        }
        ea.record(&d.a.stream).map_err(drv)?;
        eb.record(&d.b.stream).map_err(drv)?;
        d.a.stream.synchronize().map_err(drv)?;
        d.b.stream.synchronize().map_err(drv)?;
        let wall = t0.elapsed().as_secs_f64() * 1e6;
        let per_stream =
            [sa.elapsed_ms(&ea).map_err(drv)? as f64 * 1000.0, sb.elapsed_ms(&eb).map_err(drv)? as f64 * 1000.0];
        // Offsets from A's start: B's start (either side of it) and end.
        let events = match (elapsed_across(&sa, &sb), elapsed_across(&sa, &eb)) {
            (Some(b_start), Some(b_end)) => Some((per_stream[0] / 1000.0).max(b_end) - b_start.min(0.0)),
            _ => None,
        }
        .map(|ms| ms * 1000.0);
        Ok(Together { per_stream, wall, events })
    };
    let mut sequence = |flushed: &mut dyn FnMut() -> Result<()>| -> Result<Sequence> {
        let (s, m, e) = (timing_event(&d.whole)?, timing_event(&d.whole)?, timing_event(&d.whole)?);
        flushed()?;
        let t0 = Instant::now();
        s.record(&d.whole.stream).map_err(drv)?;
        a_on_whole.launch().map_err(drv)?;
        m.record(&d.whole.stream).map_err(drv)?;
        b_on_whole.launch().map_err(drv)?;
        e.record(&d.whole.stream).map_err(drv)?;
        d.whole.stream.synchronize().map_err(drv)?;
        let wall = t0.elapsed().as_secs_f64() * 1e6;
        let us = |x: &CudaEvent, y: &CudaEvent| x.elapsed_ms(y).map(|ms| ms as f64 * 1000.0).map_err(drv);
        Ok(Sequence { parts: [us(&s, &m)?, us(&m, &e)?], events: us(&s, &e)?, wall })
    };
    let mut first = 0.0f64;
    for _ in 0..policy.warmup.max(1) {
        let c = together(&mut flushed)?;
        let s = sequence(&mut flushed)?;
        first = c.wall.max(s.wall);
    }
    let n = timer::repeats(policy, first);
    let (mut cs, mut ss) = (Vec::new(), Vec::new());
    for r in 0..n {
        if r % 2 == 0 {
            cs.push(together(&mut flushed)?);
            ss.push(sequence(&mut flushed)?);
        } else {
            ss.push(sequence(&mut flushed)?);
            cs.push(together(&mut flushed)?);
        }
    }
    let stats = |f: &dyn Fn(usize) -> f64, len: usize| Timing::from_samples((0..len).map(f).collect());
    let pick_c = |g: fn(&Together) -> f64| stats(&|i| cs.get(i).map_or(f64::NAN, g), cs.len());
    let pick_s = |g: fn(&Sequence) -> f64| stats(&|i| ss.get(i).map_or(f64::NAN, g), ss.len());
    let together_event_makespan =
        if cs.iter().all(|c| c.events.is_some()) { Some(pick_c(|c| c.events.unwrap_or(f64::NAN))) } else { None };
    Ok(PairTiming {
        device: d.whole.info.name.clone(),
        device_sms: d.whole.info.sm_count,
        made_sms: [d.a.partition_sms.unwrap_or(0), d.b.partition_sms.unwrap_or(0)],
        a_first_refused: d.a_first_refused.clone(),
        alone,
        whole_on_partition,
        together: [pick_c(|c| c.per_stream[0]), pick_c(|c| c.per_stream[1])],
        together_makespan: pick_c(|c| c.wall),
        together_event_makespan,
        sequential: [pick_s(|s| s.parts[0]), pick_s(|s| s.parts[1])],
        sequential_event_makespan: pick_s(|s| s.events),
        sequential_makespan: pick_s(|s| s.wall),
    })
}
