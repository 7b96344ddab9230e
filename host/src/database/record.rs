//! The records file: one JSON object per line, one line per measured
//! (workload, configuration), appended and flushed as soon as it is
//! measured, so an interrupted run loses nothing.
//!
//! Reopening a file resumes it: every complete line is a finished
//! measurement and is not repeated. A last line without its newline (the
//! process died while writing it, perhaps in the middle of a character) is
//! cut off and measured again; any other line that does not parse, or that
//! describes what the profiler cannot have measured (an invalid shape, a
//! configuration that is not the core's state at its index, a success
//! without a positive time), is an error naming the file and the line.
//! Reading a finished file ([`read_all`]) refuses a truncated last line
//! with its file and line, rather than dropping it. The folder a records
//! file lives in, with its metadata, is a [`super::RunFolder`].

use crate::family::Config;
use crate::gpu::Timing;
use crate::input::workload_file::Workload;
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
    /// The ordinal of the GPU that measured it, where the run used several
    /// (`profile --gpus`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<usize>,
}

/// Where a run's records go: the records file itself, or, from a worker of
/// a run over several GPUs, the way to the run's one writer.
pub trait RecordSink {
    /// Takes one whole record; an error ends the run.
    fn append(&mut self, rec: &Record) -> Result<()>;
}

impl RecordSink for RecordLog {
    fn append(&mut self, rec: &Record) -> Result<()> {
        RecordLog::append(self, rec)
    }
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
    /// A record of `config` on `workload` that has not succeeded (yet):
    /// no reason, figures or timing; the caller fills in what it learns.
    pub fn pending(
        source: Source,
        workload: Workload,
        config: Option<Config>,
        run: String,
        measured_at: String,
    ) -> Record {
        Record {
            source,
            workload,
            config,
            status: Status::Failed,
            reason: None,
            error: None,
            timing: None,
            registers: None,
            local_bytes: None,
            smem_bytes: None,
            tflops: None,
            gbps: None,
            run,
            measured_at,
            gpu: None,
        }
    }

    /// The record's key.
    pub fn key(&self) -> Key {
        Key {
            source: self.source,
            workload: self.workload.name().to_string(),
            config: self.config.map_or(0, |c| c.index),
        }
    }
}

impl Record {
    /// Checks what the record says against what the profiler measures: a
    /// valid shape, the core's state at its configuration's index, and a
    /// positive, finite time where it succeeded.
    pub fn check(&self) -> Result<(), String> {
        let name = self.workload.name();
        self.workload.check().map_err(|e| format!("workload `{name}`: {e}"))?;
        match (self.workload.op(), &self.config) {
            (Some(op), Some(c)) => {
                let table = crate::family::config::record_table(op.kind());
                if table.get(c.index as usize) != Some(&c.state()) {
                    return Err(format!(
                        "workload `{name}`: configuration {} is not the core's {} state {} (records of another version?)",
                        c.index,
                        op.kind().name(),
                        c.index
                    ));
                }
            }
            (None, Some(_)) => {
                return Err(format!("workload `{name}`: a {} has no configuration", self.workload.shape()))
            }
            _ => {}
        }
        if self.status == Status::Ok {
            let Some(t) = &self.timing else {
                return Err(format!("workload `{name}`: a successful record without its timing"));
            };
            for (field, v) in [("median_us", t.median_us), ("min_us", t.min_us), ("max_us", t.max_us)] {
                if !(v.is_finite() && v > 0.0) {
                    return Err(format!("workload `{name}`: `timing.{field}` is {v}, not a positive time"));
                }
            }
        }
        Ok(())
    }
}

/// Parses the complete lines of `bytes`; `Err` names `path` and the line.
fn parse_lines(path: &Path, bytes: &[u8]) -> Result<Vec<Record>> {
    parse_lines_with(path, bytes, |_, rec| rec)
}

/// [`parse_lines`], each record given to `keep` with its line.
fn parse_lines_with<T>(path: &Path, bytes: &[u8], keep: impl Fn(&str, Record) -> T) -> Result<Vec<T>> {
    let mut out = Vec::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        let at = || format!("{}:{}", path.display(), i + 1);
        let line = std::str::from_utf8(line).with_context(|| format!("{}: not UTF-8 text", at()))?;
        if line.trim().is_empty() {
            continue;
        }
        let rec: Record = serde_json::from_str(line).with_context(|| format!("{}: malformed record", at()))?;
        rec.check().map_err(|e| anyhow::anyhow!("{}: invalid record: {e}", at()))?;
        out.push(keep(line, rec));
    }
    Ok(out)
}

/// Reads every record of a finished file; a truncated, malformed or
/// invalid line is an error naming the file and the line.
pub fn read_all(path: &Path) -> Result<Vec<Record>> {
    parse_finished(path, &finished_bytes(path, false)?, |_, rec| rec)
}

/// Reads every record of a finished file compressed with gzip (how a
/// large committed run is kept); errors as [`read_all`].
pub fn read_all_gz(path: &Path) -> Result<Vec<Record>> {
    parse_finished(path, &finished_bytes(path, true)?, |_, rec| rec)
}

/// Every record of a finished file (gzip-compressed where `gz`) with its
/// line as written; errors as [`read_all`].
pub fn read_all_lines(path: &Path, gz: bool) -> Result<Vec<(String, Record)>> {
    parse_finished(path, &finished_bytes(path, gz)?, |line, rec| (line.to_string(), rec))
}

/// The bytes of a records file, decompressed where `gz`.
fn finished_bytes(path: &Path, gz: bool) -> Result<Vec<u8>> {
    if !gz {
        return std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()));
    }
    use std::io::Read as _;
    let file = File::open(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(file)
        .read_to_end(&mut bytes)
        .with_context(|| format!("{}: not a gzip file, or a damaged one", path.display()))?;
    Ok(bytes)
}

/// The records of the whole text of a finished file, each given to `keep`
/// with its line.
fn parse_finished<T>(path: &Path, bytes: &[u8], keep: impl Fn(&str, Record) -> T) -> Result<Vec<T>> {
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        let line = bytes.split(|&b| b == b'\n').count();
        bail!(
            "{}:{line}: truncated record (the run that wrote it was interrupted; rerun it to resume)",
            path.display()
        );
    }
    parse_lines_with(path, bytes, keep)
}

/// Counts the valid records of the complete lines of the file at `path`,
/// changing nothing (a truncated last line aside, which a resumed run
/// measures again); a missing file has none.
pub fn count_resumable(path: &Path) -> Result<usize> {
    match std::fs::read(path) {
        Ok(bytes) => {
            let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            Ok(parse_lines(path, bytes.get(..complete).unwrap_or_default())?.len())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(e).with_context(|| format!("{}: cannot read", path.display())),
    }
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
        // Bytes, not text: a run killed in the middle of a character leaves
        // a last line that is not UTF-8, and it is cut off like any other.
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).with_context(|| format!("{}: cannot read", path.display()))?;
        let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        // Every complete line is checked before anything is cut off.
        let records = parse_lines(path, bytes.get(..complete).unwrap_or_default())?;
        let repaired_bytes = bytes.len() - complete;
        if repaired_bytes > 0 {
            file.set_len(complete as u64).with_context(|| format!("{}: cannot truncate", path.display()))?;
            file.seek(SeekFrom::End(0))?;
        }
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
    use hwwfc_core::space::{self, SpaceKind};

    fn rec(name: &str, index: u16) -> Record {
        Record {
            source: Source::Kernel,
            workload: Workload::Softmax { name: name.into(), rows: 2, cols: 3 },
            config: Some(Config::new(
                index,
                &space::states(SpaceKind::Cuda, hwwfc_core::OpKind::Softmax)[index as usize],
            )),
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
            gpu: None,
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

    #[test]
    fn a_line_cut_inside_a_character_or_before_its_newline_is_measured_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("records.jsonl");
        let mut named = rec("café", 0);
        let good = serde_json::to_string(&rec("a", 1)).unwrap() + "\n";
        named.reason = None;
        let line = serde_json::to_string(&named).unwrap();
        // Killed between the two bytes of `é`.
        let cut = line.find("é").unwrap() + 1;
        let mut bytes = good.clone().into_bytes();
        bytes.extend_from_slice(&line.as_bytes()[..cut]);
        std::fs::write(&path, &bytes).unwrap();
        assert!(read_all(&path).unwrap_err().to_string().contains("records.jsonl:2: truncated"));
        let log = RecordLog::open(&path).unwrap();
        assert_eq!((log.resumed, log.repaired_bytes), (1, cut));
        assert_eq!(std::fs::read(&path).unwrap(), good.as_bytes());

        // Killed after the whole object but before its newline: the line is
        // not known to be complete, so it is measured again.
        std::fs::write(&path, format!("{good}{line}")).unwrap();
        let log = RecordLog::open(&path).unwrap();
        assert_eq!((log.resumed, log.repaired_bytes), (1, line.len()));
        assert!(!log.contains(&named.key()));

        // Killed while writing the very first line.
        std::fs::write(&path, &line.as_bytes()[..10]).unwrap();
        let mut log = RecordLog::open(&path).unwrap();
        assert_eq!((log.resumed, log.repaired_bytes), (0, 10));
        log.append(&named).unwrap();
        assert_eq!(read_all(&path).unwrap(), vec![named]);
    }

    #[test]
    fn a_bad_line_before_the_end_stops_the_resume_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let good = serde_json::to_string(&rec("a", 1)).unwrap();
        let text = format!("{good}\nnot json\n{good}\npartial");
        std::fs::write(&path, &text).unwrap();
        let e = format!("{:#}", RecordLog::open(&path).err().unwrap());
        assert!(e.contains("r.jsonl:2: malformed record"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text, "nothing cut off");
    }

    #[test]
    fn records_the_profiler_cannot_have_written_are_refused_with_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let good = serde_json::to_string(&rec("a", 1)).unwrap();
        let mut other_state = rec("b", 2);
        other_state.config.as_mut().unwrap().tile_n = 65535;
        let mut untimed = rec("c", 3);
        untimed.timing = None;
        let mut negative = rec("d", 4);
        negative.timing.as_mut().unwrap().median_us = -1.0;
        let mut zero = rec("e", 5);
        zero.workload = Workload::Softmax { name: "e".into(), rows: 0, cols: 3 };
        let mut beyond = rec("f", 6);
        beyond.config.as_mut().unwrap().index = 9999;
        let mut copy = rec("g", 7);
        copy.workload = Workload::Copy { name: "g".into(), bytes: 64 };
        for (bad, needle) in [
            (other_state, "configuration 2 is not the core's softmax state 2"),
            (untimed, "a successful record without its timing"),
            (negative, "`timing.median_us` is -1, not a positive time"),
            (zero, "workload `e`: dimension `rows` must be at least 1"),
            (beyond, "configuration 9999 is not the core's softmax state 9999"),
            (copy, "workload `g`: a 64 B has no configuration"),
        ] {
            let line = serde_json::to_string(&bad).unwrap();
            std::fs::write(&path, format!("{good}\n{line}\n")).unwrap();
            for e in
                [format!("{:#}", read_all(&path).unwrap_err()), format!("{:#}", RecordLog::open(&path).err().unwrap())]
            {
                assert!(e.contains("r.jsonl:2: invalid record: ") && e.contains(needle), "{e}");
            }
        }
    }

    #[test]
    fn an_output_folder_is_checked_without_being_changed() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        assert_eq!(super::super::RunFolder::new(&out).check().unwrap(), 0, "a folder yet to be made is fine");
        std::fs::write(&out, "x").unwrap();
        let e = super::super::RunFolder::new(&out).check().unwrap_err().to_string();
        assert!(e.ends_with("run: not a folder (the output folder holds records.jsonl and meta.json)"), "{e}");
        std::fs::remove_file(&out).unwrap();
        std::fs::create_dir(&out).unwrap();
        let good = serde_json::to_string(&rec("a", 1)).unwrap();
        let text = format!("{good}\n{good}\n{{\"trunc");
        std::fs::write(out.join("records.jsonl"), &text).unwrap();
        assert_eq!(super::super::RunFolder::new(&out).check().unwrap(), 2);
        assert_eq!(std::fs::read_to_string(out.join("records.jsonl")).unwrap(), text, "nothing cut off yet");
        std::fs::write(out.join("records.jsonl"), format!("{good}\n[]\n")).unwrap();
        assert!(format!("{:#}", super::super::RunFolder::new(&out).check().unwrap_err())
            .contains("records.jsonl:2: malformed record"));
        std::fs::write(out.join("records.jsonl"), "").unwrap();
        std::fs::write(out.join("meta.json"), "{\"runs\": 3}").unwrap();
        assert!(
            format!("{:#}", super::super::RunFolder::new(&out).check().unwrap_err()).contains("meta.json: malformed")
        );
    }
}
