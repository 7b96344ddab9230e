//! `hwwfc-qemu-run [--json FILE] [--timeout SECONDS] [--no-icount] ELF`,
//! or `hwwfc-qemu-run --install` to only install QEMU when it is missing.
//!
//! Runs a firmware ELF on QEMU's `mps2-an386` (Cortex-M4 with FPU), with
//! semihosting on and `-icount shift=0` (one instruction = 1 ns of virtual
//! time, so SysTick counts instructions deterministically). The firmware's
//! semihosting console carries defmt frames only, and it is all that QEMU
//! writes to its standard output (no display, monitor or serial port), which
//! goes to a file that this tool follows and decodes with the ELF's defmt
//! table, printing one readable line per frame. QEMU's own messages stay on
//! its stderr: the two never mix.
//!
//! Exit status: QEMU's (the firmware's semihosting exit code: 0 when every
//! check passed), 124 if the run exceeded the timeout (QEMU is killed),
//! 2 for a usage or setup error, 3 if the defmt stream was malformed.
//! With `--json FILE` the decoded frames and the outcome are also written
//! to FILE for the tests and `cargo xtask qemu`.
//!
//! If `qemu-system-arm` is missing and this runs as root on Debian, it is
//! installed with apt-get first.

use defmt_decoder::{DecodeError, Frame, Locations, Table};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

struct Args {
    /// `--install`: only make sure that qemu-system-arm is there.
    install_only: bool,
    elf: PathBuf,
    json: Option<PathBuf>,
    timeout: Duration,
    icount: bool,
}

fn usage() -> String {
    "usage: hwwfc-qemu-run [--json FILE] [--timeout SECONDS] [--no-icount] ELF\n       hwwfc-qemu-run --install"
        .to_string()
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let (mut elf, mut json, mut timeout, mut icount) = (None, None, Duration::from_secs(120), true);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--install" => return Ok(Args { install_only: true, elf: PathBuf::new(), json, timeout, icount }),
            "--json" => json = Some(PathBuf::from(args.next().ok_or_else(usage)?)),
            "--timeout" => {
                let s: f64 = args.next().and_then(|s| s.parse().ok()).ok_or_else(usage)?;
                timeout = Duration::from_secs_f64(s);
            }
            "--no-icount" => icount = false,
            "-h" | "--help" => return Err(usage()),
            _ if elf.is_none() && !a.starts_with('-') => elf = Some(PathBuf::from(a)),
            _ => return Err(format!("unexpected argument `{a}`\n{}", usage())),
        }
    }
    Ok(Args { install_only: false, elf: elf.ok_or_else(usage)?, json, timeout, icount })
}

fn on_path(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `qemu-system-arm`, installed with apt-get when missing (as root).
fn ensure_qemu() -> Result<(), String> {
    if on_path("qemu-system-arm") {
        return Ok(());
    }
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !(root && on_path("apt-get")) {
        return Err("qemu-system-arm is not installed (Debian: `apt-get install qemu-system-arm`)".into());
    }
    eprintln!("hwwfc-qemu-run: installing qemu-system-arm with apt-get");
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if !apt(&["install", "-y", "-q", "--no-install-recommends", "qemu-system-arm"]) {
        // A fresh machine may have no package lists yet.
        if !(apt(&["update", "-q"]) && apt(&["install", "-y", "-q", "--no-install-recommends", "qemu-system-arm"])) {
            return Err("`apt-get install qemu-system-arm` failed".into());
        }
    }
    if on_path("qemu-system-arm") {
        Ok(())
    } else {
        Err("qemu-system-arm is still missing after apt-get".into())
    }
}

/// One decoded frame.
struct Line {
    level: Option<String>,
    message: String,
    location: Option<String>,
}

impl Line {
    fn new(frame: &Frame<'_>, locations: &Option<Locations>) -> Self {
        let location = locations.as_ref().and_then(|l| l.get(&frame.index())).map(|loc| {
            // Relative to the working directory (the repository root) where
            // it can be; paths into the registry keep their last three parts.
            let cwd = std::env::current_dir().unwrap_or_default();
            let short = match loc.file.strip_prefix(&cwd) {
                Ok(rel) => rel.display().to_string(),
                Err(_) => {
                    let parts: Vec<_> = loc.file.iter().map(|p| p.to_string_lossy()).collect();
                    parts[parts.len().saturating_sub(3)..].join("/")
                }
            };
            format!("{}:{}", short, loc.line)
        });
        Line {
            level: frame.level().map(|l| l.as_str().to_string()),
            message: frame.display_message().to_string(),
            location,
        }
    }

    fn print(&self) {
        match (&self.level, &self.location) {
            (Some(level), Some(loc)) => println!("{:<5} {}  ({loc})", level.to_uppercase(), self.message),
            (Some(level), None) => println!("{:<5} {}", level.to_uppercase(), self.message),
            (None, _) => println!("{}", self.message),
        }
    }
}

struct Outcome {
    exit_code: Option<i32>,
    timed_out: bool,
    malformed: bool,
    lines: Vec<Line>,
    wall: Duration,
}

/// QEMU with no display, monitor or serial port: its standard output
/// carries the semihosting console (the defmt frames) and nothing else.
fn qemu_command(elf: &Path, log: std::fs::File, icount: bool) -> Command {
    let mut c = Command::new("qemu-system-arm");
    c.args(["-machine", "mps2-an386", "-cpu", "cortex-m4"])
        .args(["-display", "none", "-monitor", "none", "-serial", "none", "-nodefaults", "-nic", "none"])
        .args(["-semihosting-config", "enable=on,target=native"]);
    if icount {
        c.args(["-icount", "shift=0"]);
    }
    c.arg("-kernel").arg(elf).stdin(Stdio::null()).stdout(log).stderr(Stdio::piped());
    c
}

/// Forwards QEMU's stderr, less the one warning that every run of this
/// board gives (its on-board Ethernet controller has no network attached).
fn forward_stderr(child: &mut std::process::Child) -> Option<std::thread::JoinHandle<()>> {
    use std::io::BufRead;
    let stderr = child.stderr.take()?;
    Some(std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            if !line.ends_with("warning: nic lan9118.0 has no peer") {
                eprintln!("{line}");
            }
        }
    }))
}

fn run(args: &Args) -> Result<Outcome, String> {
    let elf = std::fs::read(&args.elf).map_err(|e| format!("{}: {e}", args.elf.display()))?;
    let table = Table::parse(&elf)
        .map_err(|e| format!("{}: {e}", args.elf.display()))?
        .ok_or_else(|| format!("{}: no defmt data in this ELF", args.elf.display()))?;
    let locations = table.get_locations(&elf).ok().filter(|l| !l.is_empty());
    ensure_qemu()?;

    let log = std::env::temp_dir().join(format!("hwwfc-qemu-run-{}.defmt", std::process::id()));
    let sink = std::fs::File::create(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let start = Instant::now();
    let mut child =
        qemu_command(&args.elf, sink, args.icount).spawn().map_err(|e| format!("cannot start qemu-system-arm: {e}"))?;
    let stderr = forward_stderr(&mut child);
    let mut file = std::fs::File::open(&log).map_err(|e| format!("{}: {e}", log.display()))?;
    let mut decoder = table.new_stream_decoder();
    let mut out =
        Outcome { exit_code: None, timed_out: false, malformed: false, lines: Vec::new(), wall: Duration::ZERO };
    let mut chunk = vec![0u8; 64 * 1024];
    let mut pump = |decoder: &mut Box<dyn defmt_decoder::StreamDecoder + Send + Sync + '_>, out: &mut Outcome| loop {
        let n = file.read(&mut chunk).unwrap_or(0);
        if n == 0 {
            break;
        }
        decoder.received(&chunk[..n]);
        loop {
            match decoder.decode() {
                Ok(frame) => {
                    let line = Line::new(&frame, &locations);
                    line.print();
                    out.lines.push(line);
                }
                Err(DecodeError::UnexpectedEof) => break,
                Err(DecodeError::Malformed) => {
                    eprintln!("hwwfc-qemu-run: malformed defmt frame (is something else writing to the console?)");
                    out.malformed = true;
                    break;
                }
            }
        }
        let _ = std::io::stdout().flush();
    };
    loop {
        pump(&mut decoder, &mut out);
        match child.try_wait() {
            Ok(Some(status)) => {
                out.exit_code = status.code();
                break;
            }
            Ok(None) if start.elapsed() > args.timeout => {
                let _ = child.kill();
                let _ = child.wait();
                out.timed_out = true;
                break;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("waiting for qemu-system-arm: {e}")),
        }
    }
    pump(&mut decoder, &mut out);
    if let Some(t) = stderr {
        let _ = t.join();
    }
    out.wall = start.elapsed();
    let _ = std::fs::remove_file(&log);
    Ok(out)
}

fn write_json(path: &Path, out: &Outcome) -> Result<(), String> {
    let lines: Vec<serde_json::Value> = out
        .lines
        .iter()
        .map(|l| serde_json::json!({ "level": l.level, "message": l.message, "location": l.location }))
        .collect();
    let doc = serde_json::json!({
        "exit_code": out.exit_code,
        "timed_out": out.timed_out,
        "malformed": out.malformed,
        "wall_seconds": out.wall.as_secs_f64(),
        "frames": lines,
    });
    let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
    std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if args.install_only {
        return match ensure_qemu() {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("hwwfc-qemu-run: {e}");
                ExitCode::from(2)
            }
        };
    }
    let out = match run(&args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("hwwfc-qemu-run: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(path) = &args.json {
        if let Err(e) = write_json(path, &out) {
            eprintln!("hwwfc-qemu-run: {e}");
            return ExitCode::from(2);
        }
    }
    if out.timed_out {
        eprintln!("hwwfc-qemu-run: timed out after {:.0} s; QEMU was killed", args.timeout.as_secs_f64());
        return ExitCode::from(124);
    }
    if out.malformed {
        return ExitCode::from(3);
    }
    match out.exit_code {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => {
            eprintln!("hwwfc-qemu-run: the firmware exited with status {code}");
            ExitCode::from(u8::try_from(code).unwrap_or(1).max(1))
        }
        None => {
            eprintln!("hwwfc-qemu-run: QEMU was ended by a signal");
            ExitCode::FAILURE
        }
    }
}
