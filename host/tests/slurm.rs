//! The Slurm path of `deploy/slurm/`, on a real single-node Slurm started
//! here on localhost (Debian's `slurm-wlm` and `munge`; `cargo xtask test`
//! installs them when missing): an array job runs `profile --plan --shard
//! I/N` in every task, the committed Hopper run is cut into the shards the
//! plans name, and a Slurm job merges them back into the run.
//!
//! Ignored by `cargo test`: `cargo xtask test` runs it on its own, with
//! its output shown, and it says why where Slurm cannot start here.

mod common;

use common::{hopper_run_lines, hopper_run_meta, line_key, plan_keys, repo, workloads_of, HOPPER_RUN_SPEC};
use serde_json::Value;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SHARDS: usize = 3;

fn on_path(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn output(program: &str, args: &[&str], conf: &Path) -> Result<String, String> {
    let o = Command::new(program).args(args).env("SLURM_CONF", conf).output().map_err(|e| format!("{program}: {e}"))?;
    if !o.status.success() {
        return Err(format!("{program} {}: {}", args.join(" "), String::from_utf8_lossy(&o.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
}

/// A free TCP port on localhost.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The daemons of the cluster, stopped when dropped.
struct Cluster {
    daemons: Vec<Child>,
    dir: PathBuf,
    conf: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for d in &mut self.daemons {
            let _ = d.kill();
            let _ = d.wait();
        }
    }
}

impl Cluster {
    /// Starts munged, slurmctld and slurmd in `dir`; the reason where it
    /// cannot.
    fn start(dir: &Path) -> Result<Cluster, String> {
        for p in ["munged", "slurmctld", "slurmd", "sbatch", "sinfo", "squeue"] {
            if !on_path(p) {
                return Err(format!("`{p}` is not installed (Debian: apt-get install slurm-wlm munge)"));
            }
        }
        let uid = output("id", &["-u"], Path::new("/dev/null"))?;
        if uid != "0" {
            return Err("slurmd needs root here".into());
        }
        let host = output("hostname", &["-s"], Path::new("/dev/null"))?;
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let mut cluster = Cluster { daemons: Vec::new(), dir: dir.to_path_buf(), conf: dir.join("slurm.conf") };
        // A private munge: its own key and socket.
        let key = dir.join("munge.key");
        let bytes: Vec<u8> = (0..1024u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        std::fs::write(&key, bytes).map_err(|e| e.to_string())?;
        let _ = Command::new("chmod").args(["600"]).arg(&key).status();
        let socket = dir.join("munge.socket");
        let munged = Command::new("munged")
            .args(["--foreground", "--force"])
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--socket={}", socket.display()))
            .arg(format!("--pid-file={}", dir.join("munged.pid").display()))
            .arg(format!("--log-file={}", dir.join("munged.log").display()))
            .arg(format!("--seed-file={}", dir.join("munged.seed").display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("munged: {e}"))?;
        cluster.daemons.push(munged);
        for sub in ["state", "spool"] {
            std::fs::create_dir_all(dir.join(sub)).map_err(|e| e.to_string())?;
        }
        let d = dir.display();
        let conf = format!(
            "ClusterName=hwwfc\nSlurmctldHost={host}\nSlurmUser=root\nSlurmdUser=root\n\
             AuthType=auth/munge\nAuthInfo=socket={socket}\nCredType=cred/munge\n\
             StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
             SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
             SlurmctldPort={}\nSlurmdPort={}\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nJobAcctGatherType=jobacct_gather/none\n\
             AccountingStorageType=accounting_storage/none\nMpiDefault=none\n\
             SelectType=select/cons_tres\nSelectTypeParameters=CR_Core\nReturnToService=2\n\
             SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\n\
             NodeName={host} CPUs={cpus} State=UNKNOWN\n\
             PartitionName=test Nodes={host} Default=YES MaxTime=INFINITE State=UP\n",
            free_port(),
            free_port(),
            socket = socket.display(),
        );
        std::fs::write(&cluster.conf, conf).map_err(|e| e.to_string())?;
        std::thread::sleep(Duration::from_millis(500));
        for daemon in ["slurmctld", "slurmd"] {
            let child = Command::new(daemon)
                .args(["-D", "-f"])
                .arg(&cluster.conf)
                .env("SLURM_CONF", &cluster.conf)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .map_err(|e| format!("{daemon}: {e}"))?;
            cluster.daemons.push(child);
            std::thread::sleep(Duration::from_millis(500));
        }
        // The node comes up idle.
        let start = Instant::now();
        loop {
            let state = output("sinfo", &["-h", "-o", "%T"], &cluster.conf).unwrap_or_default();
            if state.starts_with("idle") {
                return Ok(cluster);
            }
            if start.elapsed() > Duration::from_secs(30) {
                return Err(format!("the node did not come up (state `{state}`): {}", cluster.log_tail()));
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    }

    fn log_tail(&self) -> String {
        ["slurmctld.log", "slurmd.log", "munged.log"]
            .iter()
            .map(|f| {
                let text = std::fs::read_to_string(self.dir.join(f)).unwrap_or_default();
                let last: Vec<&str> = text.lines().rev().take(3).collect();
                format!("{f}: {}", last.into_iter().rev().collect::<Vec<_>>().join(" | "))
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Submits `script` with `args` and the environment `env`; waits until
    /// the job and its array tasks have left the queue.
    fn run(&self, script: &Path, args: &[&str], env: &[(&str, &Path)]) -> String {
        let mut c = Command::new("sbatch");
        c.arg("--parsable").args(args).arg(script).env("SLURM_CONF", &self.conf).current_dir(&self.dir);
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "sbatch: {}", String::from_utf8_lossy(&o.stderr));
        let id = String::from_utf8(o.stdout).unwrap().trim().to_string();
        let start = Instant::now();
        while !output("squeue", &["-h", "-j", &id], &self.conf).unwrap_or_default().is_empty() {
            assert!(start.elapsed() < Duration::from_secs(120), "job {id} still queued: {}", self.log_tail());
            std::thread::sleep(Duration::from_millis(300));
        }
        id
    }
}

#[test]
#[ignore = "starts a Slurm cluster on localhost: cargo xtask test runs it"]
fn a_slurm_array_plans_the_shards_and_a_slurm_job_merges_them() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = match Cluster::start(dir.path()) {
        Ok(c) => c,
        Err(why) => {
            eprintln!("skipped: Slurm cannot start here: {why}");
            return;
        }
    };
    eprintln!("single-node Slurm up in {}", dir.path().display());
    // The committed Hopper run: its workloads and records.
    let lines = hopper_run_lines();
    let workloads = workloads_of(&lines, dir.path());
    let out = dir.path().join("runs");
    let hwwfc = PathBuf::from(env!("CARGO_BIN_EXE_hwwfc"));
    let spec = PathBuf::from(HOPPER_RUN_SPEC);
    let plan = PathBuf::from("1");
    let env = [("HWWFC", hwwfc.as_path()), ("WORKLOADS", &workloads), ("OUT", &out), ("SPEC", &spec), ("PLAN", &plan)];

    // The array: every task plans its shard.
    let deploy = repo().join("deploy/slurm");
    cluster.run(&deploy.join("profile.sbatch"), &[&format!("--array=0-{}", SHARDS - 1)], &env);
    let meta = hopper_run_meta();
    let mut dealt = HashSet::new();
    for i in 0..SHARDS {
        let path = out.join(format!("plan-{i}.json"));
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e}; {}", path.display(), cluster.log_tail()));
        let p: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(p["shard"], format!("{i}/{SHARDS}"));
        let keys = plan_keys(&p);
        // The shard's part: the committed records of its keys, as if
        // measured by it.
        let part = out.join(format!("shard-{i}"));
        std::fs::create_dir_all(&part).unwrap();
        let records: Vec<&str> = lines.iter().filter(|l| keys.contains(&line_key(l))).map(String::as_str).collect();
        assert_eq!(records.len(), keys.len(), "shard {i}: a key the run did not measure");
        std::fs::write(part.join("records.jsonl"), records.join("\n") + "\n").unwrap();
        let mut run = meta.clone();
        run["shard"] = Value::from(format!("{i}/{SHARDS}"));
        std::fs::write(part.join("meta.json"), serde_json::json!({ "runs": [run] }).to_string()).unwrap();
        for k in keys {
            assert!(dealt.insert(k), "a key in two shards");
        }
    }
    assert_eq!(dealt.len(), lines.len(), "the shards do not cover the run");

    // The merge, as a Slurm job.
    cluster.run(&deploy.join("merge.sbatch"), &[], &env);
    let merged = std::fs::read_to_string(out.join("merged/records.jsonl"))
        .unwrap_or_else(|e| panic!("no merged records: {e}; {}", cluster.log_tail()));
    let mut got: Vec<&str> = merged.lines().collect();
    let mut want: Vec<&str> = lines.iter().map(String::as_str).collect();
    got.sort_unstable();
    want.sort_unstable();
    assert!(got == want, "the merged run is not the committed one ({} records against {})", got.len(), want.len());
    eprintln!(
        "{SHARDS} shards planned by a Slurm array and merged by a Slurm job: {} records, the committed run's",
        got.len()
    );
}
