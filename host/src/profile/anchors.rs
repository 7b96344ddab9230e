//! The anchors: workloads with no configuration to choose, measured beside
//! the families for scale. A transpose (`kernels/transpose.cu`, the cost
//! of a layout change between layers) and a device-to-device copy (the
//! bandwidth the memory reaches).

use super::context::Context;
use crate::database::record::{Record, Source};
use crate::gpu::launch;
use crate::gpu::support::SEED;
use crate::input::workload_file::Workload;
use anyhow::{anyhow, Result};
use cudarc::driver::{CudaSlice, DriverError, LaunchConfig};

fn drv(e: DriverError) -> anyhow::Error {
    anyhow!("{e:?}")
}

impl Context<'_> {
    /// Checks and times the transpose of a `rows x cols` fp16 matrix.
    pub fn transpose(&mut self, w: &Workload, rows: u32, cols: u32) -> Result<Record> {
        let len = rows as usize * cols as usize;
        let mut rec = self.base_record(w, Source::Kernel, None);
        if let Err(reason) = self.check_memory(w, 2 * len * 4) {
            rec.reason = Some(reason);
            self.bar.inc(1);
            return Ok(rec);
        }
        let stream = self.gpu.stream.clone();
        let support = &self.compiled.support;
        let mut inputs = Vec::new();
        for s in 0..self.input_sets(2 * len) {
            let mut x: CudaSlice<u16> = stream.alloc_zeros(len).map_err(drv)?;
            support.fill_f16(&mut x, SEED.wrapping_add(200 + s as u32), 1.0).map_err(drv)?;
            inputs.push(x);
        }
        let mut out: CudaSlice<u16> = stream.alloc_zeros(len).map_err(drv)?;
        let f = self.compiled.transpose.clone();
        let cfg = LaunchConfig {
            grid_dim: (cols.div_ceil(32), rows.div_ceil(32), 1),
            block_dim: (32, 8, 1),
            shared_mem_bytes: 0,
        };
        support.poison_f16(&mut out).map_err(drv)?;
        launch::transpose_f16(&stream, &f, cfg, &inputs[0], &mut out, [rows, cols]).map_err(drv)?;
        let x = stream.clone_dtoh(&inputs[0]).map_err(drv)?;
        let y = stream.clone_dtoh(&out).map_err(drv)?;
        let (r, c) = (rows as usize, cols as usize);
        let wrong =
            (0..r).flat_map(|i| (0..c).map(move |j| (i, j))).filter(|&(i, j)| y[j * r + i] != x[i * c + j]).count();
        if wrong > 0 {
            rec.reason = Some(format!("{wrong} elements wrong"));
            self.bar.inc(1);
            return Ok(rec);
        }
        rec.error = Some(0.0);
        let sets = inputs.len();
        let mut launch = |i: usize| launch::transpose_f16(&stream, &f, cfg, &inputs[i % sets], &mut out, [rows, cols]);
        let first = self.timer.once(&mut launch).map_err(drv)?;
        let t = self.timer.time(first, &mut launch).map_err(drv)?;
        self.bar.inc(1);
        Ok(self.finish_ok(w, rec, t))
    }

    /// Times and checks a device-to-device copy of `bytes` bytes.
    pub fn copy(&mut self, w: &Workload, bytes: u64) -> Result<Record> {
        let mut rec = self.base_record(w, Source::Copy, None);
        if let Err(reason) = self.check_memory(w, bytes.saturating_mul(2) as usize) {
            rec.reason = Some(reason);
            self.bar.inc(1);
            return Ok(rec);
        }
        let n = (bytes / 4) as usize;
        let stream = self.gpu.stream.clone();
        let mut src: CudaSlice<f32> = stream.alloc_zeros(n).map_err(drv)?;
        self.compiled.support.fill_f32(&mut src, SEED.wrapping_add(300), 1.0).map_err(drv)?;
        let mut dst: CudaSlice<f32> = stream.alloc_zeros(n).map_err(drv)?;
        let mut launch = |_: usize| -> Result<(), DriverError> { stream.memcpy_dtod(&src, &mut dst) };
        let first = self.timer.once(&mut launch).map_err(drv)?;
        let t = self.timer.time(first, &mut launch).map_err(drv)?;
        let host_src = stream.clone_dtoh(&src).map_err(drv)?;
        let host_dst = stream.clone_dtoh(&dst).map_err(drv)?;
        if host_src != host_dst {
            rec.reason = Some("copy differs from its source".into());
            self.bar.inc(1);
            return Ok(rec);
        }
        rec.error = Some(0.0);
        self.bar.inc(1);
        Ok(self.finish_ok(w, rec, t))
    }
}
