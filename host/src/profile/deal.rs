//! Dealing a run's workloads to several workers (one per GPU) as they free
//! up, the longest predicted first, while one writer, the calling thread,
//! appends every record the workers make to the run's records file.
//!
//! A worker measures whole workloads; its records travel to the writer
//! one by one, as it makes them, so a run killed at any point keeps every
//! record made before. A worker whose measuring fails stops taking work;
//! the others finish theirs, and the run then ends with that error (a
//! rerun resumes what is missing). An error of the writer stops every
//! worker after its workload in progress.

use super::task::Task;
use crate::database::record::{Record, RecordSink};
use anyhow::{anyhow, Result};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Mutex;

/// Something that measures whole workloads: a GPU of the run (or a test
/// double).
pub trait Worker {
    /// Measures the tasks of workload `workload` (its index in the run's
    /// workloads), handing every record to `sink` as it is made.
    fn measure(&mut self, workload: usize, tasks: &[Task], sink: &mut dyn RecordSink) -> Result<()>;
}

/// What the dealing did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dealt {
    /// Records written.
    pub records: usize,
    /// The workloads each worker measured, in the order it took them.
    pub taken: Vec<Vec<usize>>,
}

enum Message {
    Record(Box<Record>),
    Done { worker: usize, taken: Vec<usize>, result: Result<()> },
}

/// A worker's way to the writer.
struct ToWriter<'a> {
    tx: &'a mpsc::SyncSender<Message>,
}

impl RecordSink for ToWriter<'_> {
    fn append(&mut self, rec: &Record) -> Result<()> {
        self.tx.send(Message::Record(Box::new(rec.clone()))).map_err(|_| anyhow!("the run's writer has stopped"))
    }
}

/// Measures `work` (workload index, its tasks, its predicted seconds) on
/// `workers` workers, each made in its own thread by `make` (given its
/// number), every record appended to `log` by this thread.
pub fn deal<W: Worker>(
    work: Vec<(usize, Vec<Task>, f64)>,
    workers: usize,
    make: impl Fn(usize) -> Result<W> + Sync,
    log: &mut dyn RecordSink,
) -> Result<Dealt> {
    let mut work = work;
    // Longest first; equal predictions in the run's order.
    work.sort_by(|a, b| b.2.total_cmp(&a.2).then(a.0.cmp(&b.0)));
    let queue: Mutex<VecDeque<(usize, Vec<Task>)>> = Mutex::new(work.into_iter().map(|(w, t, _)| (w, t)).collect());
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::sync_channel::<Message>(1024);
    let workers = workers.max(1);
    let mut dealt = Dealt { records: 0, taken: vec![Vec::new(); workers] };
    let mut first_error: Option<anyhow::Error> = None;
    std::thread::scope(|s| {
        for i in 0..workers {
            let tx = tx.clone();
            let (queue, stop, make) = (&queue, &stop, &make);
            s.spawn(move || {
                let mut taken = Vec::new();
                let result = (|| {
                    let mut worker = make(i)?;
                    let mut sink = ToWriter { tx: &tx };
                    while !stop.load(Ordering::Relaxed) {
                        let next = queue.lock().map_err(|_| anyhow!("the work queue is poisoned"))?.pop_front();
                        let Some((w, tasks)) = next else { break };
                        taken.push(w);
                        worker.measure(w, &tasks, &mut sink)?;
                    }
                    Ok(())
                })();
                let _ = tx.send(Message::Done { worker: i, taken, result });
            });
        }
        drop(tx);
        let mut done = 0;
        while done < workers {
            let Ok(message) = rx.recv() else { break };
            match message {
                Message::Record(rec) => {
                    if first_error.is_some() && stop.load(Ordering::Relaxed) {
                        continue;
                    }
                    match log.append(&rec) {
                        Ok(()) => dealt.records += 1,
                        Err(e) => {
                            stop.store(true, Ordering::Relaxed);
                            first_error.get_or_insert(e);
                        }
                    }
                }
                Message::Done { worker, taken, result } => {
                    done += 1;
                    dealt.taken[worker] = taken;
                    if let Err(e) = result {
                        first_error.get_or_insert(e.context(format!("worker {worker}")));
                    }
                }
            }
        }
    });
    match first_error {
        Some(e) => Err(e),
        None => Ok(dealt),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::database::record::{Key, Source};
    use crate::input::workload_file::Workload;
    use std::collections::HashMap;
    use std::time::Duration;

    fn workload(i: usize) -> Workload {
        Workload::Copy { name: format!("w{i}"), bytes: 4096 }
    }

    /// A worker that "measures" a workload by sleeping and making one
    /// record per task; it fails on workload `fail_at`.
    struct Fake {
        fail_at: Option<usize>,
        micros_per_task: u64,
    }

    impl Worker for Fake {
        fn measure(&mut self, w: usize, tasks: &[Task], sink: &mut dyn RecordSink) -> Result<()> {
            for (n, t) in tasks.iter().enumerate() {
                if self.fail_at == Some(w) && n == tasks.len() / 2 {
                    anyhow::bail!("device lost");
                }
                std::thread::sleep(Duration::from_micros(self.micros_per_task));
                let mut r = Record::pending(t.source, workload(w), t.config, "fake".into(), "now".into());
                r.gpu = Some(w % 7);
                r.reason = Some("not measured: a test double".into());
                sink.append(&r)?;
            }
            Ok(())
        }
    }

    /// Appends to a map, refusing a key twice.
    #[derive(Default)]
    struct Memory(HashMap<Key, Record>);

    impl RecordSink for Memory {
        fn append(&mut self, rec: &Record) -> Result<()> {
            anyhow::ensure!(self.0.insert(rec.key(), rec.clone()).is_none(), "{:?} twice", rec.key());
            Ok(())
        }
    }

    fn tasks(n: usize) -> Vec<Task> {
        (0..n).map(|_| Task { source: Source::Copy, config: None }).collect()
    }

    fn work(sizes: &[usize]) -> Vec<(usize, Vec<Task>, f64)> {
        sizes.iter().enumerate().map(|(i, &n)| (i, tasks(n.min(1)), n as f64)).collect()
    }

    #[test]
    fn every_workload_is_measured_once_longest_first_over_the_workers() {
        let sizes = [5, 80, 20, 300, 1, 40, 40, 9, 120, 3, 60, 7];
        let mut log = Memory::default();
        // Each workload takes 20 ms, so that every worker has started
        // before the first finishes (at 0.2 ms a worker that started late
        // on a busy machine found the three longest taken).
        let dealt = deal(work(&sizes), 3, |_| Ok(Fake { fail_at: None, micros_per_task: 20_000 }), &mut log).unwrap();
        assert_eq!(dealt.records, sizes.len());
        assert_eq!(log.0.len(), sizes.len());
        let mut all: Vec<usize> = dealt.taken.iter().flatten().copied().collect();
        all.sort_unstable();
        assert_eq!(all, (0..sizes.len()).collect::<Vec<_>>());
        // The first workload each worker took is among the three longest,
        // and each worker took its own in decreasing predicted time.
        let longest = [3, 8, 1];
        for t in &dealt.taken {
            if let Some(first) = t.first() {
                assert!(longest.contains(first), "{:?}", dealt.taken);
            }
            assert!(t.windows(2).all(|p| sizes[p[0]] >= sizes[p[1]]), "{:?}", dealt.taken);
        }
    }

    #[test]
    fn a_failing_worker_stops_and_a_rerun_measures_the_rest_exactly_once() {
        let mut log = Memory::default();
        let many: Vec<(usize, Vec<Task>, f64)> = (0..12).map(|i| (i, tasks(1), (12 - i) as f64)).collect();
        // Worker 1 loses its device on workload 4; the others go on.
        let e = deal(
            many.clone(),
            3,
            |i| Ok(Fake { fail_at: if i == 1 { Some(4) } else { None }, micros_per_task: 300 }),
            &mut log,
        );
        let measured: Vec<usize> = log.0.values().map(|r| r.workload.name()[1..].parse().unwrap()).collect();
        match e {
            // Workload 4 went to worker 1, which stopped there.
            Err(e) => {
                assert!(format!("{e:#}").contains("device lost"), "{e:#}");
                assert!(!measured.contains(&4));
            }
            // Workload 4 went to a sound worker: nothing failed.
            Ok(d) => assert_eq!(d.records, 12),
        }
        // The rerun: only what is missing, each once (the log refuses twice).
        let rest: Vec<_> = many.into_iter().filter(|(i, _, _)| !measured.contains(i)).collect();
        deal(rest, 2, |_| Ok(Fake { fail_at: None, micros_per_task: 100 }), &mut log).unwrap();
        assert_eq!(log.0.len(), 12);
    }

    #[test]
    fn a_worker_that_cannot_start_leaves_its_share_to_the_others() {
        let mut log = Memory::default();
        let e = deal(
            work(&[3, 2, 1, 4]),
            2,
            |i| if i == 0 { anyhow::bail!("GPU 0 not found") } else { Ok(Fake { fail_at: None, micros_per_task: 50 }) },
            &mut log,
        )
        .unwrap_err();
        assert!(format!("{e:#}").contains("worker 0: GPU 0 not found"), "{e:#}");
        assert_eq!(log.0.len(), 4, "the other worker measured everything");
    }

    #[test]
    fn several_workers_write_one_records_file_that_a_rerun_resumes() {
        use crate::database::record::{read_all, RecordLog};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("records.jsonl");
        let many: Vec<(usize, Vec<Task>, f64)> = (0..30).map(|i| (i, tasks(1), (i % 5) as f64)).collect();
        {
            let mut log = RecordLog::open(&path).unwrap();
            let fail = |i: usize| Ok(Fake { fail_at: (i == 2).then_some(7), micros_per_task: 200 });
            let _ = deal(many.clone(), 3, fail, &mut log);
        }
        // Killed in the middle of a line.
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str("{\"source\":\"copy\",\"workl");
        std::fs::write(&path, text).unwrap();
        let mut log = RecordLog::open(&path).unwrap();
        let key = |i: usize| Key { source: Source::Copy, workload: format!("w{i}"), config: 0 };
        let rest: Vec<_> = many.into_iter().filter(|(i, _, _)| !log.contains(&key(*i))).collect();
        deal(rest, 3, |_| Ok(Fake { fail_at: None, micros_per_task: 100 }), &mut log).unwrap();
        let records = read_all(&path).unwrap();
        let keys: std::collections::HashSet<Key> = records.iter().map(Record::key).collect();
        assert_eq!((records.len(), keys.len()), (30, 30), "every workload once");
    }

    #[test]
    fn a_writer_error_stops_the_workers() {
        struct Full(usize);
        impl RecordSink for Full {
            fn append(&mut self, _: &Record) -> Result<()> {
                self.0 += 1;
                anyhow::ensure!(self.0 <= 3, "disk full");
                Ok(())
            }
        }
        let mut log = Full(0);
        let many: Vec<(usize, Vec<Task>, f64)> = (0..40).map(|i| (i, tasks(1), 1.0)).collect();
        let e = deal(many, 2, |_| Ok(Fake { fail_at: None, micros_per_task: 2000 }), &mut log).unwrap_err();
        assert!(format!("{e:#}").contains("disk full"));
        // Each worker finishes at most the workload it was in.
        assert!(log.0 < 40, "{}", log.0);
    }
}
