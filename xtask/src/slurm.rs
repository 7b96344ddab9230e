//! The Slurm step of `cargo xtask test`: Debian's `slurm-wlm` and `munge`
//! installed when missing (as root, with apt-get), then the test that
//! starts a single-node Slurm on localhost and runs `deploy/slurm/` on it
//! (`host/tests/slurm.rs`), its output shown. Where Slurm cannot be
//! installed or started, the test says so and why in that output.

use super::{cargo, step, Step};
use std::process::{Command, Stdio};

fn on_path(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Installs `slurm-wlm` and `munge` where they are missing and this runs
/// as root with apt-get; says what it did or why not.
pub fn ensure() {
    if on_path("slurmctld") && on_path("munged") {
        return;
    }
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !(root && on_path("apt-get")) {
        eprintln!("xtask: Slurm is not installed and cannot be here (not root, or no apt-get); its test will say so");
        return;
    }
    eprintln!("xtask: installing slurm-wlm and munge with apt-get");
    let apt = |args: &[&str]| {
        Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let install = ["install", "-y", "-q", "--no-install-recommends", "slurm-wlm", "munge"];
    // A fresh machine may have no package lists yet.
    let installed = apt(&install) || (apt(&["update", "-q"]) && apt(&install));
    if !installed {
        eprintln!("xtask: `apt-get install slurm-wlm munge` failed; the Slurm test will say so");
    }
}

/// The step that runs the Slurm test.
pub fn test_step() -> Step {
    step(
        "Slurm array and merge (single-node Slurm on localhost)",
        &cargo(),
        &["test", "-p", "hwwfc", "--test", "slurm", "--", "--ignored", "--nocapture"],
    )
}
