//! `hwwfc profile`: time every (workload, configuration) pair on a GPU
//! (the loop is [`crate::profile`]).

use crate::cli::ProfileArgs;
use crate::family;
use crate::gpu::TimingPolicy;
use crate::input::{spec_file, workload_file};
use crate::profile::{self, Options, Select};
use anyhow::{bail, Result};

/// The selection of `--kernels`: the configurations of the named families
/// (`None` where no name is given); an unknown name is an error that lists
/// the families.
fn kernels(names: &[String]) -> Result<Option<Select>> {
    if names.is_empty() {
        return Ok(None);
    }
    let known: Vec<&str> = family::all().iter().map(|f| f.name()).collect();
    let mut keep = Vec::new();
    for n in names {
        match known.iter().find(|k| **k == n.trim()) {
            Some(k) => keep.push(*k),
            None => bail!("--kernels: no kernel family `{}` (the families: {})", n.trim(), known.join(", ")),
        }
    }
    Ok(Some(Box::new(move |_, op, all| {
        all.into_iter().filter(|c| keep.contains(&family::for_config(op.kind(), c).name())).collect()
    })))
}

/// Runs the command.
pub fn run(args: &ProfileArgs) -> Result<()> {
    // Everything that can be checked without a GPU is checked first.
    let workloads = workload_file::load(&args.workloads)?;
    let select = kernels(&args.kernels)?;
    let spec = match &args.spec {
        Some(s) => Some(spec_file::load(s)?.spec),
        None => None,
    };
    let label = args.label.clone().unwrap_or_else(|| {
        args.out.file_name().map_or_else(|| "run".to_string(), |n| n.to_string_lossy().into_owned())
    });
    let spec_for = Box::new(move |info: &crate::gpu::DeviceInfo| match &spec {
        Some(s) => Ok(s.clone()),
        None => spec_file::builtin_for_device(&info.name),
    });
    let opts = Options {
        policy: TimingPolicy {
            warmup: args.warmup,
            min_repeats: args.min_repeats,
            max_repeats: args.max_repeats.max(args.min_repeats),
            target_ms: args.target_ms,
        },
        verbose: !args.quiet,
        cublas: true,
        interleave: args.interleave,
        select,
        kernels: args.kernels.iter().map(|k| k.trim().to_string()).collect(),
        ..Options::new(args.gpu, workloads, args.out.clone(), spec_for, label)
    };
    let s = profile::run(&opts)?;
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
