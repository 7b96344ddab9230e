//! `hwwfc profile`: time every (workload, configuration) pair on a GPU.

use crate::cli::ProfileArgs;
use crate::gpu::{DeviceInfo, TimingPolicy};
use crate::input::spec_file;
use crate::profile::{runner, workload};
use anyhow::{anyhow, Result};
use hwwfc_core::HardwareSpec;

/// The built-in spec whose name appears in the device's name, such as
/// `h200` for `NVIDIA H200`.
pub fn builtin_for_device(info: &DeviceInfo) -> Result<HardwareSpec> {
    let name = info.name.to_lowercase().replace([' ', '-'], "");
    let found = spec_file::builtin_names().into_iter().find(|b| name.contains(&b.replace('_', "")));
    match found {
        Some(b) => Ok(spec_file::load(b)?.spec),
        None => Err(anyhow!("no built-in spec matches the device `{}`; pass --spec FILE", info.name)),
    }
}

/// Runs the command.
pub fn run(args: &ProfileArgs) -> Result<()> {
    // Everything that can be checked without a GPU is checked first.
    let workloads = workload::load(&args.workloads)?;
    let spec = match &args.spec {
        Some(s) => Some(spec_file::load(s)?.spec),
        None => None,
    };
    let label = args.label.clone().unwrap_or_else(|| {
        args.out.file_name().map_or_else(|| "run".to_string(), |n| n.to_string_lossy().into_owned())
    });
    let opts = runner::Options {
        gpu: args.gpu,
        workloads,
        out: args.out.clone(),
        spec_for: Box::new(move |info| match &spec {
            Some(s) => Ok(s.clone()),
            None => builtin_for_device(info),
        }),
        run_label: label,
        policy: TimingPolicy {
            warmup: args.warmup,
            min_repeats: args.min_repeats,
            max_repeats: args.max_repeats.max(args.min_repeats),
            target_ms: args.target_ms,
        },
        commit: env!("HWWFC_COMMIT").to_string(),
        verbose: !args.quiet,
        select: None,
        cublas: true,
        interleave: args.interleave,
    };
    let s = runner::run(&opts)?;
    eprintln!(
        "{}: {} records written ({} failed), {} already there{}, {:.1} s",
        args.out.display(),
        s.measured,
        s.failed,
        s.resumed,
        if s.repaired_bytes > 0 { ", a truncated last line re-measured" } else { "" },
        s.seconds
    );
    Ok(())
}
