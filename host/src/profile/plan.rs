//! The plan of a run: for every workload, the records still to make (the
//! configurations its families allow and the selection keeps, the vendor's
//! baseline where asked, or the anchor), leaving out every record already
//! in the records file.

use super::options::Options;
use crate::database::record::{Key, RecordLog, Source};
use crate::family::{self, Config};
use crate::gpu::Program;
use crate::input::workload_file::Workload;
use hwwfc_core::HardwareSpec;

/// One record to make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    /// What is timed.
    pub source: Source,
    /// The configuration (kernels of a family only).
    pub config: Option<Config>,
}

/// The tasks of one workload, by its index in the options' workloads.
pub type Plan = Vec<(usize, Vec<Task>)>;

/// Every record of `opts` on `spec` that `log` does not hold yet, per
/// workload, workloads with nothing left out.
pub fn plan(opts: &Options, spec: &HardwareSpec, log: &RecordLog) -> Plan {
    let mut plan = Vec::new();
    for (wi, w) in opts.workloads.iter().enumerate() {
        let key = |source, config: Option<Config>| Key {
            source,
            workload: w.name().to_string(),
            config: config.map_or(0, |c| c.index),
        };
        let mut tasks = Vec::new();
        match w.op() {
            Some(op) => {
                let all = family::configs(spec, &op);
                let chosen = match &opts.select {
                    Some(select) => select(spec, &op, all),
                    None => all,
                };
                for c in chosen {
                    if !log.contains(&key(Source::Kernel, Some(c))) {
                        tasks.push(Task { source: Source::Kernel, config: Some(c) });
                    }
                }
                let baseline = family::for_kind(op.kind()).any(|f| f.has_baseline());
                if opts.cublas && baseline && !log.contains(&key(Source::Cublas, None)) {
                    tasks.push(Task { source: Source::Cublas, config: None });
                }
            }
            None => {
                let source = if matches!(w, Workload::Copy { .. }) { Source::Copy } else { Source::Kernel };
                if !log.contains(&key(source, None)) {
                    tasks.push(Task { source, config: None });
                }
            }
        }
        if !tasks.is_empty() {
            plan.push((wi, tasks));
        }
    }
    plan
}

/// The programs the plan's configurations need, each once, with the
/// entry point to load from it.
pub fn programs(workloads: &[Workload], plan: &Plan) -> Vec<(Program, &'static str)> {
    let mut programs: Vec<(Program, &'static str)> = Vec::new();
    for (wi, tasks) in plan {
        let Some(op) = workloads.get(*wi).and_then(Workload::op) else { continue };
        for c in tasks.iter().filter_map(|t| t.config) {
            let family = family::for_config(op.kind(), &c);
            let p = family.program(&c);
            if !programs.iter().any(|(q, _)| *q == p) {
                programs.push((p, family.entry()));
            }
        }
    }
    programs
}
