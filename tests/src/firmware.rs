//! Building the firmware (its own workspace in `firmware/`), running it in
//! QEMU through `hwwfc-qemu-run` (`firmware/qemu-run/`, also a workspace of
//! its own), and reading the records of its decoded defmt log.
//!
//! The nested cargo commands get their own target directories, so that
//! they never wait for the lock of the cargo that runs the tests, and an
//! environment without the caller's `RUSTFLAGS` or target settings.

use crate::repo_root;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The firmware's target (a Cortex-M4F).
pub const TARGET: &str = "thumbv7em-none-eabihf";

/// Seconds one QEMU run may take before it is killed and failed.
pub const RUN_TIMEOUT_SECONDS: u32 = 300;

/// `firmware/`.
pub fn dir() -> PathBuf {
    repo_root().join("firmware")
}

/// The cargo that runs us, or the one on the path.
pub fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string())
}

/// A cargo command that inherits nothing of the calling build's settings.
pub fn clean_cargo(cwd: &Path) -> Command {
    let mut c = Command::new(cargo());
    c.current_dir(cwd);
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO_BUILD_TARGET_DIR",
        "RUSTDOCFLAGS",
    ] {
        c.env_remove(var);
    }
    c
}

/// Installs the rustup target `target` if it is missing.
pub fn ensure_rustup_target(target: &str) -> Result<(), String> {
    let out = Command::new("rustup").args(["target", "list", "--installed"]).output();
    match out {
        Ok(o) if String::from_utf8_lossy(&o.stdout).lines().any(|l| l.trim() == target) => Ok(()),
        Ok(_) => {
            eprintln!("installing the rustup target {target}");
            match Command::new("rustup").args(["target", "add", target]).status() {
                Ok(s) if s.success() => Ok(()),
                _ => Err(format!("`rustup target add {target}` failed")),
            }
        }
        Err(e) => Err(format!("rustup not found ({e}); install the target {target} by hand")),
    }
}

/// The two images of the firmware.
#[derive(Clone, Debug)]
pub struct Elfs {
    /// The benchmark image (`src/main.rs`).
    pub app: PathBuf,
    /// The on-target tests (`tests/ontarget.rs`).
    pub tests: PathBuf,
}

fn run_json_build(mut c: Command, what: &str) -> Result<Vec<serde_json::Value>, String> {
    c.arg("--message-format=json-render-diagnostics").stdout(Stdio::piped()).stderr(Stdio::inherit());
    let out = c.output().map_err(|e| format!("cannot run cargo for {what}: {e}"))?;
    if !out.status.success() {
        return Err(format!("building {what} failed ({})", out.status));
    }
    Ok(String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| serde_json::from_str(l).ok()).collect())
}

/// Builds the firmware's images (release profile) for [`TARGET`].
pub fn build() -> Result<Elfs, String> {
    ensure_rustup_target(TARGET)?;
    let mut c = clean_cargo(&dir());
    c.args(["build", "--release", "--bins", "--tests", "--target", TARGET, "--target-dir"]).arg(dir().join("target"));
    let (mut app, mut tests) = (None, None);
    for msg in run_json_build(c, "the firmware")? {
        if msg["reason"] != "compiler-artifact" {
            continue;
        }
        let Some(exe) = msg["executable"].as_str() else { continue };
        match msg["target"]["name"].as_str() {
            Some("hwwfc-firmware") => app = Some(PathBuf::from(exe)),
            Some("ontarget") => tests = Some(PathBuf::from(exe)),
            _ => {}
        }
    }
    match (app, tests) {
        (Some(app), Some(tests)) => Ok(Elfs { app, tests }),
        _ => Err("the firmware build produced no images".into()),
    }
}

/// Builds `hwwfc-qemu-run` (for the host) and returns its path.
pub fn build_runner() -> Result<PathBuf, String> {
    let manifest = dir().join("qemu-run").join("Cargo.toml");
    let mut c = clean_cargo(&repo_root());
    c.args(["build", "--bins", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(dir().join("qemu-run/target"));
    for msg in run_json_build(c, "hwwfc-qemu-run")? {
        if msg["reason"] == "compiler-artifact" && msg["target"]["name"] == "hwwfc-qemu-run" {
            if let Some(exe) = msg["executable"].as_str() {
                return Ok(PathBuf::from(exe));
            }
        }
    }
    Err("the build of hwwfc-qemu-run produced no executable".into())
}

/// One decoded defmt frame.
#[derive(Clone, Debug)]
pub struct Frame {
    /// `trace` to `error`, or `None` for `println!`.
    pub level: Option<String>,
    /// The formatted message.
    pub message: String,
    /// `file:line` where it was logged, if the ELF tells.
    pub location: Option<String>,
}

/// A run of an image in QEMU.
#[derive(Clone, Debug)]
pub struct Run {
    /// QEMU's exit status (the firmware's semihosting exit code).
    pub exit_code: Option<i32>,
    /// Whether the run was killed for exceeding its time.
    pub timed_out: bool,
    /// Whether the defmt stream held a malformed frame.
    pub malformed: bool,
    /// The decoded frames in order.
    pub frames: Vec<Frame>,
    /// What the runner printed (the readable log), if it was captured.
    pub output: String,
}

impl Run {
    /// Whether the firmware exited with status 0, in time, with a clean stream.
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out && !self.malformed
    }

    /// The records of `kind` (frames `hwwfc:<kind> key=value ...`).
    pub fn records(&self, kind: &str) -> Vec<Record> {
        self.frames.iter().filter_map(|f| Record::parse(&f.message)).filter(|r| r.kind == kind).collect()
    }
}

/// Runs `elf` in QEMU with `runner`; the readable log goes to our stdout
/// when `echo`, and is kept in [`Run::output`] otherwise.
pub fn run(runner: &Path, elf: &Path, echo: bool) -> Result<Run, String> {
    let json = std::env::temp_dir().join(format!(
        "hwwfc-run-{}-{}.json",
        std::process::id(),
        elf.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    ));
    let mut c = Command::new(runner);
    c.current_dir(repo_root())
        .arg("--json")
        .arg(&json)
        .args(["--timeout", &RUN_TIMEOUT_SECONDS.to_string()])
        .arg(elf)
        .stdin(Stdio::null());
    let output = if echo {
        let status = c.status().map_err(|e| format!("cannot run {}: {e}", runner.display()))?;
        if status.code() == Some(2) {
            return Err(format!("{} could not run {}", runner.display(), elf.display()));
        }
        String::new()
    } else {
        let out = c.stderr(Stdio::inherit()).output().map_err(|e| format!("cannot run {}: {e}", runner.display()))?;
        if out.status.code() == Some(2) {
            return Err(format!("{} could not run {}", runner.display(), elf.display()));
        }
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = std::fs::read_to_string(&json).map_err(|e| format!("{}: {e}", json.display()))?;
    let _ = std::fs::remove_file(&json);
    let doc: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{}: {e}", json.display()))?;
    let frames = doc["frames"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| Frame {
                    level: f["level"].as_str().map(str::to_string),
                    message: f["message"].as_str().unwrap_or_default().to_string(),
                    location: f["location"].as_str().map(str::to_string),
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Run {
        exit_code: doc["exit_code"].as_i64().map(|c| c as i32),
        timed_out: doc["timed_out"].as_bool().unwrap_or(false),
        malformed: doc["malformed"].as_bool().unwrap_or(false),
        frames,
        output,
    })
}

/// A record of the firmware's log: `hwwfc:<kind>` and `key=value` fields,
/// where a value is a token or a bracketed list (`bytes=[1, 2, 3]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The kind (`phase`, `schedule`, ...).
    pub kind: String,
    /// The fields in order.
    pub fields: Vec<(String, String)>,
}

impl Record {
    /// Parses a message; `None` if it is not a record.
    pub fn parse(message: &str) -> Option<Record> {
        let rest = message.strip_prefix("hwwfc:")?;
        let (kind, mut rest) = rest.split_once(' ').unwrap_or((rest, ""));
        let mut fields = Vec::new();
        loop {
            rest = rest.trim_start();
            if rest.is_empty() {
                break;
            }
            let (key, after) = rest.split_once('=')?;
            let (value, tail) = if after.starts_with('[') {
                let end = after.find(']')?;
                (&after[..=end], &after[end + 1..])
            } else {
                after.split_once(' ').unwrap_or((after, ""))
            };
            fields.push((key.to_string(), value.to_string()));
            rest = tail;
        }
        Some(Record { kind: kind.to_string(), fields })
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// The value of `key` as a number.
    pub fn number(&self, key: &str) -> Option<u64> {
        self.get(key)?.parse().ok()
    }

    /// The value of `key` as a byte list.
    pub fn bytes(&self, key: &str) -> Option<Vec<u8>> {
        let list = self.get(key)?.strip_prefix('[')?.strip_suffix(']')?;
        if list.trim().is_empty() {
            return Some(Vec::new());
        }
        list.split(',').map(|b| b.trim().parse().ok()).collect()
    }
}

/// Packages of a `Cargo.lock`: (name, version) and their dependencies.
fn lock_graph(text: &str) -> Vec<(String, String, Vec<String>)> {
    let mut out = Vec::new();
    for block in text.split("[[package]]").skip(1) {
        let field = |key: &str| {
            block
                .lines()
                .find_map(|l| l.strip_prefix(key)?.trim().strip_prefix("= \"")?.strip_suffix('"').map(str::to_string))
        };
        let (Some(name), Some(version)) = (field("name "), field("version ")) else { continue };
        let deps = match block.split_once("dependencies = [") {
            Some((_, tail)) => tail
                .split(']')
                .next()
                .unwrap_or("")
                .split(',')
                .map(|d| d.trim().trim_matches('"').to_string())
                .filter(|d| !d.is_empty())
                .collect(),
            None => Vec::new(),
        };
        out.push((name, version, deps));
    }
    out
}

/// Every (name, version) that `root` depends on, transitively, in a lock.
fn closure(text: &str, root: &str) -> BTreeSet<(String, String)> {
    let graph = lock_graph(text);
    let find = |dep: &str| {
        let (name, version) = dep.split_once(' ').map(|(n, v)| (n, Some(v))).unwrap_or((dep, None));
        graph.iter().find(|(n, v, _)| n == name && version.is_none_or(|want| want == v))
    };
    let mut seen = BTreeSet::new();
    let mut todo = vec![root.to_string()];
    while let Some(dep) = todo.pop() {
        if let Some((n, v, deps)) = find(&dep) {
            if seen.insert((n.clone(), v.clone())) {
                todo.extend(deps.iter().cloned());
            }
        }
    }
    seen
}

/// Checks that every package the core is built with in the firmware
/// (`firmware/Cargo.lock`) has the version the host builds it with
/// (`Cargo.lock`): same `libm`, `heapless`, `postcard`, `serde`..., so the
/// parity of the schedules compares one code on two machines.
pub fn check_lockfiles() -> Result<(), String> {
    let read = |p: PathBuf| std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()));
    let host = closure(&read(repo_root().join("Cargo.lock"))?, "hwwfc-core");
    let firmware = closure(&read(dir().join("Cargo.lock"))?, "hwwfc-core");
    if firmware.is_empty() {
        return Err("firmware/Cargo.lock does not hold hwwfc-core".into());
    }
    let missing: Vec<String> = firmware.difference(&host).map(|(n, v)| format!("{n} {v}")).collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "firmware/Cargo.lock builds the core with versions the host does not use: {}; align them with \
             `cargo update --manifest-path firmware/Cargo.toml -p NAME --precise VERSION` (the version in Cargo.lock)",
            missing.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_parse() {
        let r = Record::parse("hwwfc:schedule model=attention spec=toy_gpu bytes=[1, 2, 255] after=3").unwrap();
        assert_eq!(r.kind, "schedule");
        assert_eq!(r.get("model"), Some("attention"));
        assert_eq!(r.bytes("bytes"), Some(vec![1, 2, 255]));
        assert_eq!(r.number("after"), Some(3));
        assert_eq!(Record::parse("INFO something"), None);
        assert_eq!(Record::parse("hwwfc:empty").unwrap().fields, vec![]);
    }

    #[test]
    fn lock_closure_follows_versions() {
        let lock = r#"
[[package]]
name = "a"
version = "1.0.0"
dependencies = [
 "b 2.0.0",
 "c",
]

[[package]]
name = "b"
version = "1.0.0"

[[package]]
name = "b"
version = "2.0.0"

[[package]]
name = "c"
version = "0.1.0"
"#;
        let c = closure(lock, "a");
        let names: Vec<String> = c.iter().map(|(n, v)| format!("{n} {v}")).collect();
        assert_eq!(names, ["a 1.0.0", "b 2.0.0", "c 0.1.0"]);
    }
}
