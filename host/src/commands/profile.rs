//! `hwwfc profile`: time every (workload, configuration) pair on a GPU
//! (the loop is [`crate::profile`]).

use crate::cli::ProfileArgs;
use crate::database::RunFolder;
use crate::family;
use crate::gpu::TimingPolicy;
use crate::input::{spec_file, workload_file};
use crate::output::plan::{PlanReport, WorkloadPlan};
use crate::profile::estimate::{Estimator, WORKLOAD_SETUP_S};
use crate::profile::{self, plan, Options, Select};
use anyhow::{bail, Result};
use std::collections::HashSet;

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
        Some(s) => Some(spec_file::load(s)?.whole()?),
        None => None,
    };
    let label = args.label.clone().unwrap_or_else(|| {
        args.out.file_name().map_or_else(|| "run".to_string(), |n| n.to_string_lossy().into_owned())
    });
    let planned_spec = match &spec {
        Some(s) => Some(args.partition.apply(s)?.0),
        None => None,
    };
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
        shard: args.shard,
        gpus: args.gpus.clone(),
        partition: args.partition,
        ..Options::new(args.gpu, workloads, args.out.clone(), spec_for, label)
    };
    if args.plan {
        let Some(spec) = planned_spec else {
            bail!("--plan opens no device: name the spec whose limits decide the configurations with --spec (such as h200)");
        };
        if let Some(arch) = &args.compile {
            check_compile_args(arch, args.compile_sample)?;
        }
        let report = plan_report(&opts, &spec)?;
        let text = if args.json {
            serde_json::to_string_pretty(&report)? + "\n"
        } else {
            crate::output::plan::render(&report)
        };
        crate::output::write_stdout(&text)?;
        if let Some(arch) = &args.compile {
            compile_plan(&opts, &spec, arch, args.compile_sample)?;
        }
        return Ok(());
    }
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

/// Refuses an architecture NVRTC would not take from us (`sm_90`: its
/// digits; the Hopper family adds the `a` itself) and an empty sample.
fn check_compile_args(arch: &str, sample: Option<usize>) -> Result<()> {
    let valid = arch.strip_prefix("sm_").is_some_and(|v| v.len() >= 2 && v.chars().all(|c| c.is_ascii_digit()));
    if !valid {
        bail!("--compile {arch}: name an architecture such as sm_90 (sm_ and its compute capability's digits)");
    }
    if sample == Some(0) {
        bail!("--compile-sample 0 compiles nothing: give at least 1");
    }
    Ok(())
}

/// Compiles every kernel that the whole plan of `opts` on `spec` needs (the
/// support kernels and the transpose too) for `arch`, or `sample` of them
/// spread evenly over the plan's list; an error names each program that
/// did not compile, with the first lines of NVRTC's log.
/// The caller has checked `arch` and `sample` ([`check_compile_args`]).
fn compile_plan(opts: &Options, spec: &hwwfc_core::HardwareSpec, arch: &str, sample: Option<usize>) -> Result<()> {
    // SAFETY: only tries to dlopen the NVRTC library.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(crate::gpu::error::GpuError::NoNvrtc.into());
    }
    let all = plan::plan(opts, spec, |_| false);
    let mut programs = plan::programs(&opts.workloads, &all);
    if let Some(n) = sample.filter(|&n| n < programs.len()) {
        let len = programs.len();
        programs = (0..n).filter_map(|i| programs.get(i * len / n).cloned()).collect();
    }
    let compiled = crate::profile::compiled::Compiled::compile(arch, &programs);
    // Failures grouped by NVRTC's log: one bad line fails every
    // configuration of its file alike.
    let mut groups: Vec<(&str, Vec<String>)> = Vec::new();
    for (p, log) in compiled.iter().filter_map(|(p, r)| r.as_ref().err().map(|log| (p, log))) {
        let defines: Vec<String> = p.defines.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let name = format!("{} [{}]", p.source.file, defines.join(" "));
        match groups.iter_mut().find(|(l, _)| *l == log.as_str()) {
            Some((_, names)) => names.push(name),
            None => groups.push((log.as_str(), vec![name])),
        }
    }
    let failed: usize = groups.iter().map(|(_, n)| n.len()).sum();
    eprintln!("{arch}: {} of {} kernels compiled", compiled.len() - failed, compiled.len());
    for (log, names) in &groups {
        eprintln!("\n{} kernels failed with this log, among them {}:", names.len(), names[0]);
        for line in log.lines().take(12) {
            eprintln!("    {line}");
        }
    }
    if failed > 0 {
        bail!("{failed} kernels did not compile for {arch} (NVRTC's logs above, {} distinct)", groups.len());
    }
    Ok(())
}

/// The name of a record's source, as records write it.
fn source_name(s: crate::database::record::Source) -> String {
    serde_json::to_value(s).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

/// What a run of `opts` on `spec` would measure, against what its output
/// folder holds, and its predicted device time.
pub fn plan_report(opts: &Options, spec: &hwwfc_core::HardwareSpec) -> Result<PlanReport> {
    let folder = RunFolder::new(&opts.out);
    let held: HashSet<_> =
        if folder.has_records() { folder.records()?.iter().map(|r| r.key()).collect() } else { HashSet::new() };
    let all = plan::plan(opts, spec, |_| false);
    let missing: Vec<(usize, Vec<_>)> = all
        .iter()
        .map(|(wi, tasks)| {
            let w = &opts.workloads[*wi];
            (*wi, tasks.iter().copied().filter(|t| !held.contains(&plan::key(w, t))).collect())
        })
        .collect();
    let estimator = Estimator::new(spec, opts.policy);
    let mut workloads = Vec::new();
    for ((wi, tasks), (_, left)) in all.iter().zip(&missing) {
        let w = &opts.workloads[*wi];
        let seconds =
            if left.is_empty() { 0.0 } else { WORKLOAD_SETUP_S + estimator.workload(w, left).iter().sum::<f64>() };
        workloads.push(WorkloadPlan {
            name: w.name().to_string(),
            shape: w.shape(),
            records: tasks.len(),
            missing: left.len(),
            seconds,
            missing_keys: left.iter().map(|t| (source_name(t.source), t.config.map_or(0, |c| c.index))).collect(),
        });
    }
    Ok(PlanReport {
        spec: spec.name.to_string(),
        shard: opts.shard.map(|s| s.to_string()),
        out: opts.out.display().to_string(),
        policy: serde_json::to_value(opts.policy)?,
        records: workloads.iter().map(|w| w.records).sum(),
        missing: workloads.iter().map(|w| w.missing).sum(),
        programs: plan::programs(&opts.workloads, &missing).len(),
        seconds: workloads.iter().map(|w| w.seconds).sum(),
        workloads,
    })
}
