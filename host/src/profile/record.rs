//! The records file: one JSON object per line, one line per measured
//! (workload, configuration), appended and flushed as soon as it is
//! measured, so an interrupted run loses nothing.
//!
//! Reopening a file resumes it: every complete line is a finished
//! measurement and is not repeated. A last line without its newline (the
//! process died while writing it) is cut off and measured again; any other
//! line that does not parse is an error naming the file and the line.

use super::config::Config;
use super::workload::Workload;
use crate::gpu::Timing;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// What was timed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// One configuration of one of our kernels.
    Kernel,
    /// cuBLAS on the same matmul (the anchor).
    Cublas,
    /// A device-to-device copy (the bandwidth anchor).
    Copy,
}

/// How a measurement ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Correct, and timed.
    Ok,
    /// Did not compile, launch, or pass the check; never timed.
    Failed,
}

/// One line of the records file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// What was timed.
    pub source: Source,
    /// The workload, with its shape.
    pub workload: Workload,
    /// The configuration (kernels only).
    pub config: Option<Config>,
    /// How it ended.
    pub status: Status,
    /// Why it failed.
    pub reason: Option<String>,
    /// The check's figure: relative error `||C - ref|| / ||ref||` for a
    /// matmul, largest absolute difference for a softmax.
    pub error: Option<f64>,
    /// The timed runs.
    pub timing: Option<Timing>,
    /// Registers per thread, from the driver.
    pub registers: Option<i32>,
    /// Local (spilled) bytes per thread, from the driver.
    pub local_bytes: Option<i32>,
    /// Dynamic shared memory per block, bytes.
    pub smem_bytes: Option<u32>,
    /// Achieved TFLOP/s at the median (matmul and softmax).
    pub tflops: Option<f64>,
    /// Achieved GB/s at the median, counting the fewest bytes the workload
    /// must move.
    pub gbps: Option<f64>,
    /// Label of the run that measured it.
    pub run: String,
    /// UTC time of the measurement (RFC 3339).
    pub measured_at: String,
}

/// Identifies a measurement within a records file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    /// What was timed.
    pub source: Source,
    /// Workload name.
    pub workload: String,
    /// Configuration index (0 where there is none).
    pub config: u16,
}

impl Record {
    /// The record's key.
    pub fn key(&self) -> Key {
        Key {
            source: self.source,
            workload: self.workload.name().to_string(),
            config: self.config.map_or(0, |c| c.index),
        }
    }
}

/// Parses the complete lines of `text`; `Err` names `path` and the line.
fn parse_lines(path: &Path, text: &str) -> Result<Vec<Record>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let rec: Record =
            serde_json::from_str(line).with_context(|| format!("{}:{}: malformed record", path.display(), i + 1))?;
        out.push(rec);
    }
    Ok(out)
}

// Read by the calibrator, which is not wired in yet.
#[allow(dead_code)]
/// Reads every record of a finished file; a truncated or malformed line is
/// an error naming the file and the line.
pub fn read_all(path: &Path) -> Result<Vec<Record>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
    if !text.is_empty() && !text.ends_with('\n') {
        let line = text.lines().count();
        bail!(
            "{}:{line}: truncated record (the run that wrote it was interrupted; rerun it to resume)",
            path.display()
        );
    }
    parse_lines(path, &text)
}

/// A records file open for appending, with the keys already in it.
pub struct RecordLog {
    path: PathBuf,
    file: File,
    done: HashSet<Key>,
    /// Records found when the file was opened.
    pub resumed: usize,
    /// Bytes of a truncated last line that were cut off on opening.
    pub repaired_bytes: usize,
}

impl RecordLog {
    /// Opens (or creates) `path`, reading what is there and cutting off a
    /// truncated last line.
    pub fn open(path: &Path) -> Result<RecordLog> {
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(path)
            .with_context(|| format!("{}: cannot open", path.display()))?;
        let mut text = String::new();
        file.read_to_string(&mut text).with_context(|| format!("{}: cannot read", path.display()))?;
        let complete = text.rfind('\n').map_or(0, |i| i + 1);
        let repaired_bytes = text.len() - complete;
        if repaired_bytes > 0 {
            file.set_len(complete as u64).with_context(|| format!("{}: cannot truncate", path.display()))?;
            file.seek(SeekFrom::End(0))?;
        }
        let records = parse_lines(path, text.get(..complete).unwrap_or(""))?;
        let done: HashSet<Key> = records.iter().map(Record::key).collect();
        Ok(RecordLog { path: path.to_path_buf(), file, resumed: records.len(), done, repaired_bytes })
    }

    /// Whether a measurement is already in the file.
    pub fn contains(&self, key: &Key) -> bool {
        self.done.contains(key)
    }

    /// Appends one record as one line and flushes it to disk.
    pub fn append(&mut self, rec: &Record) -> Result<()> {
        let mut line = serde_json::to_string(rec)?;
        line.push('\n');
        self.file.write_all(line.as_bytes()).with_context(|| format!("{}: cannot write", self.path.display()))?;
        self.file.sync_data().with_context(|| format!("{}: cannot sync", self.path.display()))?;
        self.done.insert(rec.key());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(name: &str, index: u16) -> Record {
        Record {
            source: Source::Kernel,
            workload: Workload::Softmax { name: name.into(), rows: 2, cols: 3 },
            config: Some(Config { index, tile_m: 1, tile_n: 32, tile_k: 0, warps_m: 1, warps_n: 1, stages: 1 }),
            status: Status::Ok,
            reason: None,
            error: Some(1e-7),
            timing: Some(Timing { median_us: 3.0, min_us: 2.0, max_us: 4.0, spread: 0.1, repeats: 5 }),
            registers: Some(30),
            local_bytes: Some(0),
            smem_bytes: Some(0),
            tflops: None,
            gbps: Some(1.0),
            run: "t".into(),
            measured_at: "2026-01-01T00:00:00Z".into(),
        }
    }

    #[test]
    fn appends_resumes_and_repairs_a_truncated_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("records.jsonl");
        {
            let mut log = RecordLog::open(&path).unwrap();
            log.append(&rec("a", 1)).unwrap();
            log.append(&rec("a", 2)).unwrap();
        }
        // A run killed while writing its third line.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"source":"kernel","workload":{"kind":"softm"#).unwrap();
        drop(f);
        assert!(read_all(&path).unwrap_err().to_string().contains("records.jsonl:3: truncated"));
        let log = RecordLog::open(&path).unwrap();
        assert_eq!(log.resumed, 2);
        assert!(log.repaired_bytes > 0);
        assert!(log.contains(&rec("a", 2).key()));
        assert!(!log.contains(&rec("a", 3).key()));
        assert_eq!(read_all(&path).unwrap(), vec![rec("a", 1), rec("a", 2)]);
    }

    #[test]
    fn a_malformed_line_names_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let good = serde_json::to_string(&rec("a", 1)).unwrap();
        std::fs::write(&path, format!("{good}\n{{\"oops\": 1}}\n{good}\n")).unwrap();
        let e = format!("{:#}", RecordLog::open(&path).err().unwrap());
        assert!(e.contains("r.jsonl:2: malformed record"), "{e}");
        let e = format!("{:#}", read_all(&path).unwrap_err());
        assert!(e.contains("r.jsonl:2"), "{e}");
    }
}
