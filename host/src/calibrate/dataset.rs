//! The measured times a fit learns from: the kernel records of one GPU,
//! grouped per workload, one sample per configuration with the median time
//! of every run that measured it.

use crate::database::record::{Record, Source, Status};
use crate::database::{run_folders, RunFolder};
use crate::gpu::DeviceInfo;
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
    /// Median time of each run, microseconds, in run order.
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
    /// One sample per configuration measured in every run.
    pub samples: Vec<Sample>,
    /// Spearman's rho between the first two runs (the noise ceiling).
    pub retest_rho: Option<f64>,
}

impl WorkloadData {
    /// Measured times (geometric mean over runs), in sample order.
    pub fn times(&self) -> Vec<f64> {
        self.samples.iter().map(Sample::time_us).collect()
    }
}

/// Every workload measured on one GPU.
#[derive(Clone, Debug)]
pub struct Dataset {
    /// The device, as the first run's metadata gives it.
    pub device: DeviceInfo,
    /// The runs read, in order.
    pub runs: Vec<PathBuf>,
    /// Workloads in file order.
    pub workloads: Vec<WorkloadData>,
}

/// Reads the runs under `dir` (see [`run_folders`]).
pub fn load(dir: &Path) -> Result<Dataset> {
    let folders: Vec<RunFolder> = run_folders(dir)?;
    let mut device: Option<(DeviceInfo, PathBuf)> = None;
    let mut runs: Vec<Vec<Record>> = Vec::new();
    for folder in &folders {
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
        }
        let _ = first;
        runs.push(folder.records()?);
    }
    let Some((device, _)) = device else { bail!("{}: no runs", dir.display()) };
    let runs_read = folders.iter().map(|f| f.path().to_path_buf()).collect();
    Ok(Dataset { device, runs: runs_read, workloads: group(&runs) })
}

/// Per configuration index: the state and each run's median time.
type ByConfig = BTreeMap<u16, (State, Vec<Option<f64>>)>;

/// Groups kernel records into workloads; a configuration enters if every
/// run measured it successfully.
pub fn group(runs: &[Vec<Record>]) -> Vec<WorkloadData> {
    let mut order: Vec<String> = Vec::new();
    let mut by: BTreeMap<String, (Workload, ByConfig)> = BTreeMap::new();
    for (ri, records) in runs.iter().enumerate() {
        for r in records {
            if r.source != Source::Kernel || r.status != Status::Ok {
                continue;
            }
            let (Some(c), Some(t), Some(_)) = (r.config, r.timing.as_ref(), r.workload.op()) else { continue };
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
        let samples: Vec<Sample> = configs
            .into_iter()
            .filter_map(|(_, (state, times))| {
                let times: Option<Vec<f64>> = times.into_iter().collect();
                times.map(|times_us| Sample { state, times_us })
            })
            .collect();
        let retest_rho = (runs.len() >= 2 && samples.len() > 2).then(|| {
            let a: Vec<f64> = samples.iter().map(|s| s.times_us[0]).collect();
            let b: Vec<f64> = samples.iter().map(|s| s.times_us[1]).collect();
            super::metrics::spearman(&a, &b)
        });
        if !samples.is_empty() {
            out.push(WorkloadData { workload, op, samples, retest_rho });
        }
    }
    out
}
