//! One data set from the parts of a run measured apart (`profile --shard
//! I/N` on several hosts): the parts must belong together (the same GPU
//! model, driver, spec, partition, timing policy, commit, inputs and kernel
//! selection), hold every shard once, each finished, and no key twice.
//! Gaps are refused unless accepted. The merged folder is written beside
//! its place and renamed into it, so it is never seen half-written.

use super::meta::{MetaFile, RunMeta};
use super::record::Key;
use super::{RunFolder, META_FILE, RECORDS_FILE};
use anyhow::{bail, Context, Result};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What the merge made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Merged {
    /// Records written.
    pub records: usize,
    /// The shards found (`N` of them where the parts are shards).
    pub shards: Vec<String>,
}

/// The fields of a run that every part must share, by name, as text.
fn identity(run: &RunMeta) -> Vec<(&'static str, String)> {
    let smi =
        |key: &str| run.nvidia_smi_start.as_ref().and_then(|v| v.get(key)).map_or(String::from("?"), |v| v.to_string());
    vec![
        (
            "GPU",
            format!("{} (sm_{}{})", run.device.name, run.device.compute_capability.0, run.device.compute_capability.1),
        ),
        ("driver", smi("driver_version")),
        ("spec", run.spec.clone()),
        ("partition", run.partition.map_or_else(|| "the whole GPU".to_string(), |p| p.to_string())),
        ("timing policy", run.timing_policy.to_string()),
        ("commit", run.commit.clone()),
        ("seed", run.seed.to_string()),
        ("flush bytes", run.flush_bytes.to_string()),
        ("kernel families", run.kernels.join(",")),
    ]
}

/// The shard `I/N` of a part (`None` where it measured everything).
fn shard_of(part: &Path, meta: &MetaFile) -> Result<Option<(u32, u32)>> {
    let mut shards = meta.runs.iter().map(|r| r.shard.clone());
    let first = shards.next().flatten();
    if shards.any(|s| s != first) {
        bail!("{}: its runs measured different shards", part.display());
    }
    first
        .map(|s| {
            let (i, n) = s.split_once('/').unwrap_or((&s, ""));
            match (i.parse(), n.parse()) {
                (Ok(i), Ok(n)) => Ok((i, n)),
                _ => bail!("{}: shard `{s}` in {META_FILE} is not I/N", part.display()),
            }
        })
        .transpose()
}

/// Merges the run folders `parts` into `out`, which must not exist yet.
/// With `allow_gaps`, missing shards and unfinished parts are accepted.
pub fn merge(parts: &[PathBuf], out: &Path, allow_gaps: bool) -> Result<Merged> {
    if parts.is_empty() {
        bail!("merge: no part given");
    }
    if out.exists() {
        bail!("{}: already exists; merge writes a new folder", out.display());
    }
    let mut metas = Vec::new();
    for p in parts {
        let folder = RunFolder::new(p);
        if !folder.has_records() {
            bail!("{}: no {RECORDS_FILE} (not a run folder)", p.display());
        }
        let meta = folder.meta()?;
        if meta.runs.is_empty() {
            bail!("{}: no runs in {META_FILE}", p.display());
        }
        metas.push(meta);
    }
    // One GPU model, driver, spec, policy, commit and selection.
    let reference = identity(&metas[0].runs[0]);
    for (p, meta) in parts.iter().zip(&metas) {
        for run in &meta.runs {
            for ((what, want), (_, got)) in reference.iter().zip(identity(run)) {
                if *want != got {
                    bail!(
                        "{}: {what} `{got}`, where {} has `{want}`: not parts of one run",
                        p.display(),
                        parts[0].display()
                    );
                }
            }
        }
        if !allow_gaps {
            if let Some(run) = meta.runs.iter().find(|r| r.finished_at.is_none()) {
                bail!(
                    "{}: run `{}` did not finish (resume it, or pass --allow-gaps to merge what it holds)",
                    p.display(),
                    run.run
                );
            }
        }
    }
    // Every shard once.
    let mut shards: Vec<Option<(u32, u32)>> = Vec::new();
    for (p, meta) in parts.iter().zip(&metas) {
        shards.push(shard_of(p, meta)?);
    }
    let count = match shards.first().copied().flatten() {
        Some((_, n)) => n,
        None => 0,
    };
    let mut seen: HashMap<u32, &Path> = HashMap::new();
    for (p, s) in parts.iter().zip(&shards) {
        match (s, count) {
            (None, 0) => {}
            (Some((i, n)), _) if *n == count && count > 0 => {
                if let Some(other) = seen.insert(*i, p) {
                    bail!("{}: shard {i}/{n} again (also {})", p.display(), other.display());
                }
            }
            _ => bail!("{}: a part of another dealing (shards of {count} expected)", p.display()),
        }
    }
    if count > 0 && !allow_gaps {
        let missing: Vec<String> =
            (0..count).filter(|i| !seen.contains_key(i)).map(|i| format!("{i}/{count}")).collect();
        if !missing.is_empty() {
            bail!(
                "shard{} {} missing (pass --allow-gaps to merge without)",
                if missing.len() > 1 { "s" } else { "" },
                missing.join(", ")
            );
        }
    }
    // No key twice.
    let mut owner: HashMap<Key, &Path> = HashMap::new();
    let mut lines = Vec::new();
    for p in parts {
        for (line, r) in RunFolder::new(p).record_lines()? {
            if let Some(other) = owner.insert(r.key(), p) {
                let k = r.key();
                bail!(
                    "{}: record of `{}` ({:?}, configuration {}) also in {}",
                    p.display(),
                    k.workload,
                    k.source,
                    k.config,
                    other.display()
                );
            }
            lines.push(line);
        }
    }
    write_folder(out, &lines, &metas)?;
    let mut found: Vec<String> = seen.keys().map(|i| format!("{i}/{count}")).collect();
    found.sort();
    Ok(Merged { records: lines.len(), shards: found })
}

/// Writes the merged folder under a temporary name beside `out`, then
/// renames it into place.
fn write_folder(out: &Path, lines: &[String], metas: &[MetaFile]) -> Result<()> {
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent).with_context(|| format!("{}: cannot create", parent.display()))?;
    let tmp = tempfile::Builder::new()
        .prefix(".hwwfc-merge-")
        .tempdir_in(parent)
        .with_context(|| format!("{}: cannot write", parent.display()))?;
    let fail = || format!("cannot write {}", out.display());
    let mut f = std::fs::File::create(tmp.path().join(RECORDS_FILE)).with_context(fail)?;
    for l in lines {
        writeln!(f, "{l}").with_context(fail)?;
    }
    f.sync_all().with_context(fail)?;
    let meta = MetaFile { runs: metas.iter().flat_map(|m| m.runs.iter().cloned()).collect() };
    std::fs::write(tmp.path().join(META_FILE), serde_json::to_string_pretty(&meta)?).with_context(fail)?;
    let kept = tmp.keep();
    std::fs::rename(&kept, out).with_context(fail).inspect_err(|_| {
        let _ = std::fs::remove_dir_all(&kept);
    })?;
    Ok(())
}
