//! The measured times a fit learns from: the kernel records of one GPU,
//! grouped per workload, one sample per configuration with the median time
//! of every run that measured it. Runs need not measure the same
//! configurations: a later run may add a kernel family (the Hopper
//! matmul's records come from a run of their own).

use crate::database::record::{Record, Source, Status};
use crate::database::{run_folders, RunFolder};
use crate::gpu::DeviceInfo;
use crate::input::partition::Partition;
use crate::input::workload_file::Workload;
use anyhow::{bail, Result};
use hwwfc_core::{Op, State};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One configuration of one workload and its measured times.
#[derive(Clone, Debug)]
pub struct Sample {
    /// The configuration.
    pub state: State,
    /// Median time of each run that measured it successfully,
    /// microseconds, in run order.
    pub times_us: Vec<f64>,
}

impl Sample {
    /// Geometric mean of the runs' times.
    pub fn time_us(&self) -> f64 {
        let n = self.times_us.len().max(1) as f64;
        (self.times_us.iter().map(|t| t.ln()).sum::<f64>() / n).exp()
    }
}

/// The samples of one workload.
#[derive(Clone, Debug)]
pub struct WorkloadData {
    /// The workload.
    pub workload: Workload,
    /// Its operator.
    pub op: Op,
    /// One sample per configuration measured in some run.
    pub samples: Vec<Sample>,
    /// Spearman's rho between two measurements of each configuration
    /// measured twice (the first two runs that measured it: a corpus whose
    /// first run is split by kernel family over two folders pairs each
    /// family's with the second run), over those configurations: the noise
    /// ceiling.
    pub retest_rho: Option<f64>,
}

impl WorkloadData {
    /// Measured times (geometric mean over runs), in sample order.
    pub fn times(&self) -> Vec<f64> {
        self.samples.iter().map(Sample::time_us).collect()
    }

    /// The kernel family of each sample, in sample order.
    pub fn families(&self) -> Vec<&'static str> {
        let kind = self.op.kind();
        self.samples.iter().map(|s| crate::family::for_placement(kind, s.state.placement).name()).collect()
    }
}

/// Every workload measured on one GPU.
#[derive(Clone, Debug)]
pub struct Dataset {
    /// The device, as the first run's metadata gives it.
    pub device: DeviceInfo,
    /// The partition of the device every run measured on (none: the whole
    /// device).
    pub partition: Option<Partition>,
    /// The runs read, in order.
    pub runs: Vec<PathBuf>,
    /// Workloads in file order.
    pub workloads: Vec<WorkloadData>,
}

impl Dataset {
    /// The device the records were measured on, with its partition if
    /// they were measured on one.
    pub fn device_label(&self) -> String {
        match self.partition {
            Some(p) => format!("{} ({p})", self.device.name),
            None => self.device.name.clone(),
        }
    }
}

/// Reads the runs under `dir` (see [`run_folders`]).
pub fn load(dir: &Path) -> Result<Dataset> {
    load_folders(dir, &run_folders(dir)?)
}

/// Reads the runs under `dir` one dataset per partition they measured on
/// (the whole GPU first, then by SMs and shared-memory budget, largest
/// first), so that each is judged on its own spec.
pub fn load_by_partition(dir: &Path) -> Result<Vec<Dataset>> {
    let mut groups: Vec<(Option<Partition>, Vec<RunFolder>)> = Vec::new();
    for folder in run_folders(dir)? {
        let m = folder.meta()?;
        let Some(first) = m.runs.first() else {
            bail!("{}: no run recorded in meta.json", folder.path().display());
        };
        match groups.iter_mut().find(|(p, _)| *p == first.partition) {
            Some((_, folders)) => folders.push(folder),
            None => groups.push((first.partition, vec![folder])),
        }
    }
    let order = |p: &Option<Partition>| p.map_or((u32::MAX, u32::MAX), |p| (p.sms, p.sram_per_block_bytes));
    groups.sort_by_key(|(p, _)| std::cmp::Reverse(order(p)));
    groups.iter().map(|(_, folders)| load_folders(dir, folders)).collect()
}

/// Reads `folders`, found under `dir`, as one dataset: one GPU, one
/// partition.
fn load_folders(dir: &Path, folders: &[RunFolder]) -> Result<Dataset> {
    let mut device: Option<(DeviceInfo, PathBuf)> = None;
    let mut partition: Option<(Option<Partition>, PathBuf)> = None;
    let mut runs: Vec<Vec<Record>> = Vec::new();
    for folder in folders {
        let d = &folder.path().to_path_buf();
        let m = folder.meta()?;
        let Some(first) = m.runs.first() else {
            bail!("{}: no run recorded in meta.json", d.display());
        };
        for r in &m.runs {
            match &device {
                None => device = Some((r.device.clone(), d.clone())),
                Some((dev, from)) if dev.name != r.device.name || dev.sm_count != r.device.sm_count => bail!(
                    "records of two different GPUs: `{}` ({}) and `{}` ({}); fit one GPU at a time",
                    dev.name,
                    from.display(),
                    r.device.name,
                    d.display()
                ),
                Some(_) => {}
            }
            match &partition {
                None => partition = Some((r.partition, d.clone())),
                Some((p, from)) if *p != r.partition => {
                    let describe =
                        |p: Option<Partition>| p.map_or_else(|| "the whole GPU".to_string(), |p| p.to_string());
                    bail!(
                        "records of two partitions: {} ({}) and {} ({}); fit one partition at a time",
                        describe(*p),
                        from.display(),
                        describe(r.partition),
                        d.display()
                    )
                }
                Some(_) => {}
            }
        }
        let _ = first;
        runs.push(folder.records()?);
    }
    let Some((device, _)) = device else { bail!("{}: no runs", dir.display()) };
    let runs_read = folders.iter().map(|f| f.path().to_path_buf()).collect();
    let partition = partition.and_then(|(p, _)| p);
    Ok(Dataset { device, partition, runs: runs_read, workloads: group(&runs) })
}

/// Per configuration index: the state and each run's median time.
type ByConfig = BTreeMap<u16, (State, Vec<Option<f64>>)>;

/// Groups kernel records into workloads; a configuration enters if some
/// run measured it successfully, with the times of the runs that did.
pub fn group(runs: &[Vec<Record>]) -> Vec<WorkloadData> {
    let mut order: Vec<String> = Vec::new();
    let mut by: BTreeMap<String, (Workload, ByConfig)> = BTreeMap::new();
    for (ri, records) in runs.iter().enumerate() {
        for r in records {
            if r.source != Source::Kernel || r.status != Status::Ok {
                continue;
            }
            let (Some(c), Some(t), Some(_)) = (r.config, r.timing.as_ref(), r.workload.op()) else { continue };
            if matches!(r.workload, Workload::MatMul { epilogue: Some(_), .. }) {
                // A product with a fused epilogue is the matmul and the
                // elementwise layer at once, which the core prices apart.
                continue;
            }
            let name = r.workload.name().to_string();
            if !by.contains_key(&name) {
                order.push(name.clone());
            }
            let entry = by.entry(name).or_insert_with(|| (r.workload.clone(), BTreeMap::new()));
            let slot = entry.1.entry(c.index).or_insert_with(|| (c.state(), vec![None; runs.len()]));
            if let Some(v) = slot.1.get_mut(ri) {
                *v = Some(t.median_us);
            }
        }
    }
    let mut out = Vec::new();
    for name in order {
        let Some((workload, configs)) = by.remove(&name) else { continue };
        let Some(op) = workload.op() else { continue };
        let both: Vec<(f64, f64)> = configs
            .values()
            .filter_map(|(_, times)| {
                let mut measured = times.iter().flatten();
                Some((*measured.next()?, *measured.next()?))
            })
            .collect();
        let retest_rho = (both.len() > 2).then(|| {
            let (a, b): (Vec<f64>, Vec<f64>) = both.into_iter().unzip();
            super::metrics::spearman(&a, &b)
        });
        let samples: Vec<Sample> = configs
            .into_iter()
            .map(|(_, (state, times))| Sample { state, times_us: times.into_iter().flatten().collect() })
            .filter(|s| !s.times_us.is_empty())
            .collect();
        if !samples.is_empty() {
            out.push(WorkloadData { workload, op, samples, retest_rho });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::database::record::Status;
    use crate::family::Config;
    use crate::gpu::Timing;
    use hwwfc_core::space::{self, SpaceKind};

    fn rec(index: u16, us: f64) -> Record {
        let states = space::states(SpaceKind::Hopper, hwwfc_core::OpKind::MatMul);
        Record {
            source: Source::Kernel,
            workload: Workload::MatMul {
                name: "mm".into(),
                m: 256,
                n: 256,
                k: 256,
                batch: 1,
                epilogue: None,
                b_layout: Default::default(),
            },
            config: Some(Config::new(index, &states[index as usize])),
            status: Status::Ok,
            reason: None,
            error: Some(0.0),
            timing: Some(Timing { median_us: us, min_us: us, max_us: us, spread: 0.0, repeats: 5 }),
            registers: None,
            local_bytes: None,
            smem_bytes: None,
            tflops: None,
            gbps: None,
            run: "t".into(),
            measured_at: "2026-01-01T00:00:00Z".into(),
            gpu: None,
        }
    }

    #[test]
    fn a_configuration_enters_with_the_runs_that_measured_it_and_the_retest_uses_those_of_both() {
        // Two runs of four mma.sync configurations (the second ranks two of
        // them the other way round), and a third run that adds a TMA one.
        let first: Vec<Record> = (0..4).map(|i| rec(i, 10.0 + i as f64)).collect();
        let second: Vec<Record> = [10.0, 11.0, 13.0, 12.0].iter().enumerate().map(|(i, &t)| rec(i as u16, t)).collect();
        let third = vec![rec(0, 10.0), rec(500, 5.0)];
        let data = group(&[first, second, third]);
        assert_eq!(data.len(), 1);
        let w = &data[0];
        assert_eq!(w.samples.len(), 5);
        let tma = w.samples.iter().find(|s| s.state.placement == hwwfc_core::Placement::Tma).unwrap();
        assert_eq!(tma.times_us, vec![5.0]);
        assert_eq!(w.samples[0].times_us, vec![10.0, 10.0, 10.0]);
        assert_eq!(w.samples[3].times_us, vec![13.0, 12.0]);
        // Over the four both runs measured: 1 - 6 * (1 + 1) / (4 * 15).
        assert!((w.retest_rho.unwrap() - 0.8).abs() < 1e-9, "{:?}", w.retest_rho);
    }

    #[test]
    fn the_retest_pairs_each_family_with_the_run_that_measured_it_again() {
        // A first run split by family over two folders (mma.sync, then
        // TMA), and a second run of both: each configuration's two times.
        let mma: Vec<Record> = (0..3).map(|i| rec(i, 10.0 + i as f64)).collect();
        let tma: Vec<Record> = (500..503).map(|i| rec(i, 1.0 + (i - 500) as f64)).collect();
        let again: Vec<Record> = [(0, 10.0), (1, 12.0), (2, 11.0), (500, 1.0), (501, 2.0), (502, 3.0)]
            .iter()
            .map(|&(i, t)| rec(i, t))
            .collect();
        let data = group(&[mma, tma, again]);
        let w = &data[0];
        assert_eq!(w.samples.len(), 6);
        // Six pairs, one of them (configurations 1 and 2) swapped: 1 - 6 * 2 / (6 * 35).
        assert!((w.retest_rho.unwrap() - (1.0 - 12.0 / 210.0)).abs() < 1e-9, "{:?}", w.retest_rho);
        // Two runs that share no configuration give none.
        let disjoint = group(&[(0..3).map(|i| rec(i, 1.0)).collect(), (500..503).map(|i| rec(i, 1.0)).collect()]);
        assert_eq!(disjoint[0].retest_rho, None);
    }
}
