//! The plan of a run: for every workload, the records still to make (the
//! configurations its families allow and the selection keeps, the vendor's
//! baseline where asked, or the anchor), those of the run's shard where it
//! has one, leaving out every record already in the records file.

use super::estimate::Estimator;
use super::options::Options;
use super::shard::{self, Shard};
use super::task::{Plan, Task};
use crate::database::record::{Key, Source};
use crate::family;
use crate::gpu::Program;
use crate::input::workload_file::Workload;
use hwwfc_core::HardwareSpec;

/// Every record of `opts` on `spec` that the run folder does not hold yet
/// (`held` says which it holds), per workload, workloads with nothing left
/// out; of these options' shard only, where they name one.
pub fn plan(opts: &Options, spec: &HardwareSpec, held: impl Fn(&Key) -> bool) -> Plan {
    let mut plan = every_task(opts, spec);
    if let Some(shard) = opts.shard {
        plan = only_shard(opts, spec, plan, shard);
    }
    for (wi, tasks) in plan.iter_mut() {
        let w = &opts.workloads[*wi];
        tasks.retain(|t| !held(&key(w, t)));
    }
    plan.retain(|(_, tasks)| !tasks.is_empty());
    plan
}

/// The key of the record `task` of `w` makes.
pub fn key(w: &Workload, task: &Task) -> Key {
    Key { source: task.source, workload: w.name().to_string(), config: task.config.map_or(0, |c| c.index) }
}

/// Every record of `opts` on `spec`, whatever a run folder holds: the
/// configurations the families allow and the selection keeps, the
/// vendor's baseline where asked, or the anchor.
pub fn every_task(opts: &Options, spec: &HardwareSpec) -> Plan {
    let mut plan = Vec::new();
    for (wi, w) in opts.workloads.iter().enumerate() {
        let mut tasks = Vec::new();
        match w.op() {
            Some(op) => {
                let (elementwise, b_layout) = (w.elementwise(), w.b_layout());
                let all = family::configs(spec, &op);
                let chosen = match &opts.select {
                    Some(select) => select(spec, &op, all),
                    None => all,
                };
                tasks.extend(chosen.into_iter().map(|c| Task {
                    source: Source::Kernel,
                    config: Some(c.with_elementwise(elementwise).with_b_layout(b_layout)),
                }));
                let baseline = family::for_kind(op.kind()).any(|f| f.has_baseline());
                if opts.cublas && baseline {
                    tasks.push(Task { source: Source::Cublas, config: None });
                }
            }
            None => {
                let source = if matches!(w, Workload::Copy { .. }) { Source::Copy } else { Source::Kernel };
                tasks.push(Task { source, config: None });
            }
        }
        plan.push((wi, tasks));
    }
    plan
}

/// The tasks of `plan` that fall to `shard` when every task of it is dealt
/// out by predicted time ([`shard::deal`]).
fn only_shard(opts: &Options, spec: &HardwareSpec, plan: Plan, shard: Shard) -> Plan {
    let estimator = Estimator::new(spec, opts.policy);
    let mut items = Vec::new();
    for (wi, tasks) in &plan {
        let w = &opts.workloads[*wi];
        for (t, seconds) in tasks.iter().zip(estimator.workload(w, tasks)) {
            let k = key(w, t);
            items.push(((k.workload, k.source as u8, k.config), seconds));
        }
    }
    let dealt = shard::deal(&items, shard.count);
    let mut mine = dealt.into_iter().map(|s| s == shard.index);
    plan.into_iter()
        .map(|(wi, tasks)| (wi, tasks.into_iter().filter(|_| mine.next().unwrap_or(false)).collect()))
        .collect()
}

/// The programs the plan's configurations need, each once, with the
/// entry point to load from it.
pub fn programs(workloads: &[Workload], plan: &[(usize, Vec<Task>)]) -> Vec<(Program, &'static str)> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{spec_file, workload_file};
    use std::collections::HashSet;
    use std::path::Path;

    fn options(shard: Option<Shard>) -> Options {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../calib-data/workloads.json");
        let workloads = workload_file::load(&path).unwrap();
        Options {
            cublas: true,
            shard,
            ..Options::new(0, workloads, "unused".into(), Box::new(|_| anyhow::bail!("no device")), "t".into())
        }
    }

    fn keys(opts: &Options, plan: &Plan) -> Vec<Key> {
        plan.iter().flat_map(|(wi, tasks)| tasks.iter().map(|t| key(&opts.workloads[*wi], t))).collect()
    }

    #[test]
    fn shards_of_the_committed_workloads_are_disjoint_complete_and_balanced() {
        let spec = spec_file::load("h200").unwrap().spec;
        let whole = options(None);
        let all: HashSet<Key> = keys(&whole, &plan(&whole, &spec, |_| false)).into_iter().collect();
        assert!(all.len() > 50_000, "{}", all.len());
        let estimator = Estimator::new(&spec, whole.policy);
        for count in [1, 3, 8] {
            let mut seen = HashSet::new();
            let mut loads = Vec::new();
            let mut longest = 0.0f64;
            for index in 0..count {
                let opts = options(Some(Shard { index, count }));
                let p = plan(&opts, &spec, |_| false);
                // The same shard twice: the same keys.
                assert_eq!(keys(&opts, &p), keys(&opts, &plan(&opts, &spec, |_| false)));
                let mut load = 0.0;
                for (wi, tasks) in &p {
                    let seconds = estimator.workload(&opts.workloads[*wi], tasks);
                    longest = seconds.iter().fold(longest, |a, &b| a.max(b));
                    load += seconds.iter().sum::<f64>();
                }
                loads.push(load);
                for k in keys(&opts, &p) {
                    assert!(seen.insert(k.clone()), "{k:?} in two shards");
                }
            }
            assert_eq!(seen, all, "{count} shards do not cover the run");
            let (lo, hi) = loads.iter().fold((f64::MAX, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
            assert!(hi - lo <= longest + 1e-9, "{count} shards: {loads:?}");
        }
    }

    #[test]
    fn a_shard_keeps_its_keys_whatever_the_folder_holds() {
        let spec = spec_file::load("h200").unwrap().spec;
        let opts = options(Some(Shard { index: 1, count: 4 }));
        let fresh = keys(&opts, &plan(&opts, &spec, |_| false));
        // A folder holding every other key of the shard: the rest remain.
        let held: HashSet<Key> = fresh.iter().step_by(2).cloned().collect();
        let resumed = keys(&opts, &plan(&opts, &spec, |k| held.contains(k)));
        assert_eq!(resumed, fresh.iter().filter(|k| !held.contains(*k)).cloned().collect::<Vec<_>>());
    }
}
