//! The measurement database: a run folder holds the records of one
//! profiling run (`records.jsonl`, one JSON line per measured workload and
//! configuration) and the metadata of every invocation that wrote them
//! (`meta.json`). Runs are appended to as they are measured and resumed
//! after a crash; a data set is several run folders of one GPU.
//!
//! - [`record`]: one measurement, the records file, its reader and its
//!   appending writer (resume, and the repair of a truncated last line);
//! - [`meta`]: the run metadata: device, driver, commit, timing policy;
//! - [`merge`]: one data set from the shards of a run measured apart.
//!
//! Everything that reads or writes a run folder (profile, calibrate,
//! report, tune, judge, `schedule --measure`) goes through [`RunFolder`].

pub mod merge;
pub mod meta;
pub mod record;

use crate::family::Config;
use crate::input::workload_file::Workload;
use anyhow::{bail, Context, Result};
use meta::{MetaFile, RunMeta};
use record::{Record, RecordLog, Source, Status};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The records file of a run folder.
pub const RECORDS_FILE: &str = "records.jsonl";
/// The records file of a finished run, compressed with gzip (how a large
/// run is committed); read like [`RECORDS_FILE`], never resumed.
pub const RECORDS_GZ_FILE: &str = "records.jsonl.gz";
/// The metadata file of a run folder.
pub const META_FILE: &str = "meta.json";

/// One run folder, which need not exist yet.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RunFolder {
    path: PathBuf,
}

impl RunFolder {
    /// The run folder at `path`.
    pub fn new(path: impl Into<PathBuf>) -> RunFolder {
        RunFolder { path: path.into() }
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of its records file.
    pub fn records_path(&self) -> PathBuf {
        self.path.join(RECORDS_FILE)
    }

    /// The path of its compressed records file.
    pub fn records_gz_path(&self) -> PathBuf {
        self.path.join(RECORDS_GZ_FILE)
    }

    /// The path of its metadata file.
    pub fn meta_path(&self) -> PathBuf {
        self.path.join(META_FILE)
    }

    /// Whether it holds a records file (plain or compressed).
    pub fn has_records(&self) -> bool {
        self.records_path().is_file() || self.records_gz_path().is_file()
    }

    /// Checks the folder before a run that would resume it, changing
    /// nothing: it is a folder (or does not exist yet), its records file
    /// holds only valid records (a truncated last line aside, which the
    /// run measures again) and its metadata reads. Returns the records
    /// found.
    pub fn check(&self) -> Result<usize> {
        if self.path.exists() && !self.path.is_dir() {
            bail!("{}: not a folder (the output folder holds {RECORDS_FILE} and {META_FILE})", self.path.display());
        }
        if self.records_gz_path().is_file() {
            bail!(
                "{}: a finished run, compressed; decompress it (gunzip -k) to add to it",
                self.records_gz_path().display()
            );
        }
        let records = record::count_resumable(&self.records_path())?;
        meta::read(&self.meta_path())?;
        Ok(records)
    }

    /// Creates the folder (and its parents) if it does not exist.
    pub fn create(&self) -> Result<()> {
        std::fs::create_dir_all(&self.path).with_context(|| format!("{}: cannot create", self.path.display()))
    }

    /// Opens its records file for appending, resuming what is there (see
    /// [`RecordLog::open`]).
    pub fn writer(&self) -> Result<RecordLog> {
        RecordLog::open(&self.records_path())
    }

    /// Every record of the finished records file (see
    /// [`record::read_all`]), or of its compressed form where there is no
    /// plain one.
    pub fn records(&self) -> Result<Vec<Record>> {
        let plain = self.records_path();
        if !plain.exists() && self.records_gz_path().is_file() {
            return record::read_all_gz(&self.records_gz_path());
        }
        record::read_all(&plain)
    }

    /// Every record as [`RunFolder::records`] reads them, each with its
    /// line as written.
    pub fn record_lines(&self) -> Result<Vec<(String, Record)>> {
        let plain = self.records_path();
        if !plain.exists() && self.records_gz_path().is_file() {
            return record::read_all_lines(&self.records_gz_path(), true);
        }
        record::read_all_lines(&plain, false)
    }

    /// Its metadata (none recorded if the file does not exist).
    pub fn meta(&self) -> Result<MetaFile> {
        meta::read(&self.meta_path())
    }

    /// Records the start of a run; returns its index for [`RunFolder::finish_run`].
    pub fn begin_run(&self, run: RunMeta) -> Result<usize> {
        meta::begin(&self.meta_path(), run)
    }

    /// Records the end of run `index`: what it did and the readings at its
    /// end.
    pub fn finish_run(
        &self,
        index: usize,
        summary: &impl serde::Serialize,
        smi: Option<serde_json::Value>,
    ) -> Result<()> {
        meta::finish(&self.meta_path(), index, summary, smi)
    }
}

/// The run folders under `dir`: `dir` itself if it holds a records file
/// (plain or compressed), else its subfolders that do, sorted by name.
pub fn run_folders(dir: &Path) -> Result<Vec<RunFolder>> {
    let here = RunFolder::new(dir);
    if here.has_records() {
        return Ok(vec![here]);
    }
    let entries = std::fs::read_dir(dir).with_context(|| format!("{}: cannot read", dir.display()))?;
    let mut runs: Vec<RunFolder> =
        entries.filter_map(|e| e.ok().map(|e| RunFolder::new(e.path()))).filter(RunFolder::has_records).collect();
    runs.sort();
    if runs.is_empty() {
        bail!("{}: no {RECORDS_FILE} here or in its subfolders", dir.display());
    }
    Ok(runs)
}

/// The successful kernel measurements `(config, median)` of `records`, by
/// workload name, for the workloads of `workloads` only.
pub fn kernel_medians(records: &[Record], workloads: &[Workload]) -> HashMap<String, Vec<(Config, f64)>> {
    let mut by: HashMap<String, Vec<(Config, f64)>> = HashMap::new();
    for r in records.iter().filter(|r| r.source == Source::Kernel && r.status == Status::Ok) {
        if let (Some(c), Some(t)) = (r.config, r.timing.as_ref()) {
            if workloads.iter().any(|w| w.name() == r.workload.name()) {
                by.entry(r.workload.name().to_string()).or_default().push((c, t.median_us));
            }
        }
    }
    by
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn a_compressed_finished_run_reads_like_a_plain_one_and_is_never_resumed() {
        let dir = tempfile::tempdir().unwrap();
        let plain = RunFolder::new(dir.path().join("plain"));
        plain.create().unwrap();
        std::fs::copy(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../calib-data/h200/run1/records.jsonl"),
            plain.records_path(),
        )
        .unwrap();
        let packed = RunFolder::new(dir.path().join("packed"));
        packed.create().unwrap();
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(packed.records_gz_path()).unwrap(),
            flate2::Compression::default(),
        );
        gz.write_all(&std::fs::read(plain.records_path()).unwrap()).unwrap();
        gz.finish().unwrap();
        assert!(packed.has_records());
        let (a, b) = (plain.records().unwrap(), packed.records().unwrap());
        assert_eq!(a.len(), 6234);
        assert_eq!(a, b);
        assert_eq!(run_folders(dir.path()).unwrap(), vec![packed.clone(), plain]);
        let e = format!("{:#}", packed.check().unwrap_err());
        assert!(
            e.ends_with("records.jsonl.gz: a finished run, compressed; decompress it (gunzip -k) to add to it"),
            "{e}"
        );

        // A damaged or truncated compressed file names itself.
        let bytes = std::fs::read(packed.records_gz_path()).unwrap();
        std::fs::write(packed.records_gz_path(), &bytes[..bytes.len() / 2]).unwrap();
        let e = format!("{:#}", packed.records().unwrap_err());
        assert!(e.contains("records.jsonl.gz"), "{e}");
    }
}
