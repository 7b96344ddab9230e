//! `hwwfc merge` on the committed Hopper run cut into shards: the parts
//! merge back into the run, and parts that do not belong together, gaps,
//! repeats and unfinished parts are refused in one line, nothing written.

mod common;

use common::{hopper_run_lines, hopper_run_meta, hwwfc};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The committed Hopper run's record lines and its one run's metadata.
fn hopper_run() -> (Vec<String>, Value) {
    (hopper_run_lines(), hopper_run_meta())
}

/// Writes the records of shard `i` of `n` (every n-th line) into a part
/// folder, its metadata changed by `edit`.
fn part(dir: &Path, lines: &[String], run: &Value, i: usize, n: usize, edit: impl Fn(&mut Value)) -> PathBuf {
    let p = dir.join(format!("part{i}"));
    std::fs::create_dir_all(&p).unwrap();
    let mine: Vec<&str> = lines.iter().skip(i).step_by(n).map(String::as_str).collect();
    std::fs::write(p.join("records.jsonl"), mine.join("\n") + "\n").unwrap();
    let mut run = run.clone();
    run["shard"] = Value::from(format!("{i}/{n}"));
    edit(&mut run);
    std::fs::write(p.join("meta.json"), serde_json::to_string(&serde_json::json!({ "runs": [run] })).unwrap()).unwrap();
    p
}

fn merge(parts: &[&Path], out: &Path, extra: &[&str]) -> std::process::Output {
    hwwfc().arg("merge").args(parts).arg("--out").arg(out).args(extra).output().unwrap()
}

fn refused(parts: &[&Path], out: &Path, extra: &[&str]) -> String {
    let o = merge(parts, out, extra);
    assert!(!o.status.success());
    assert!(!out.exists(), "nothing written");
    let e = String::from_utf8(o.stderr).unwrap();
    assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    e
}

#[test]
fn shards_merge_back_into_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let (lines, run) = hopper_run();
    let parts: Vec<PathBuf> = (0..3).map(|i| part(dir.path(), &lines, &run, i, 3, |_| {})).collect();
    let out = dir.path().join("merged");
    let o = merge(&[&parts[2], &parts[0], &parts[1]], &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(out.join("records.jsonl")).unwrap();
    let mut got: Vec<&str> = text.lines().collect();
    let mut want: Vec<&str> = lines.iter().map(String::as_str).collect();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got.len(), want.len());
    assert!(got == want, "the merged records are not the run's lines");
    let meta: Value = serde_json::from_str(&std::fs::read_to_string(out.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["runs"].as_array().unwrap().len(), 3);
    assert!(String::from_utf8(o.stderr)
        .unwrap()
        .contains(&format!("{} records from 3 parts (shards 0/3, 1/3, 2/3)", lines.len())));
    // A second merge into it is refused, and leaves it as it was.
    let again = merge(&[&parts[0]], &out, &[]);
    assert!(!again.status.success());
    assert!(String::from_utf8(again.stderr).unwrap().contains("already exists"));
    assert_eq!(std::fs::read_to_string(out.join("records.jsonl")).unwrap(), text);
}

#[test]
fn parts_that_do_not_belong_together_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (lines, run) = hopper_run();
    let out = dir.path().join("merged");
    let a = part(dir.path(), &lines, &run, 0, 3, |_| {});
    let b = part(dir.path(), &lines, &run, 1, 3, |_| {});
    let c = part(dir.path(), &lines, &run, 2, 3, |_| {});
    // A gap: refused, unless accepted.
    let e = refused(&[&a, &b], &out, &[]);
    assert!(e.contains("shard 2/3 missing (pass --allow-gaps"), "{e}");
    assert!(merge(&[&a, &b], &out, &["--allow-gaps"]).status.success());
    std::fs::remove_dir_all(&out).unwrap();
    // The same shard twice.
    let e = refused(&[&a, &b, &c, &a], &out, &[]);
    assert!(e.contains("shard 0/3 again"), "{e}");
    // Another commit, spec, timing policy or partition.
    for (field, value, needle) in [
        ("commit", Value::from("0000000"), "commit `0000000`"),
        ("spec", Value::from("h200"), "spec `h200`"),
        ("timing_policy", serde_json::json!({"warmup": 9}), "timing policy"),
        (
            "partition",
            serde_json::json!({"sms": 16, "of_sms": 132, "sram_per_block_bytes": 232448, "of_sram_per_block_bytes": 232448}),
            "partition `16 of 132 SMs",
        ),
    ] {
        let odd = part(dir.path(), &lines, &run, 2, 3, |r| r[field] = value.clone());
        let e = refused(&[&a, &b, &odd], &out, &[]);
        assert!(e.contains(needle) && e.contains("not parts of one run"), "{field}: {e}");
    }
    let mut other = run.clone();
    other["device"]["name"] = Value::from("NVIDIA H200");
    let odd = part(dir.path(), &lines, &other, 2, 3, |_| {});
    assert!(refused(&[&a, &b, &odd], &out, &[]).contains("GPU `NVIDIA H200"));
    // Another dealing.
    let four = part(dir.path(), &lines, &run, 2, 4, |_| {});
    assert!(refused(&[&a, &b, &four], &out, &[]).contains("another dealing"));
    // An unfinished part.
    let open = part(dir.path(), &lines, &run, 2, 3, |r| r["finished_at"] = Value::Null);
    let e = refused(&[&a, &b, &open], &out, &[]);
    assert!(e.contains("did not finish"), "{e}");
    // A record in two parts.
    let twice = part(dir.path(), &lines, &run, 2, 3, |_| {});
    let mut text = std::fs::read_to_string(twice.join("records.jsonl")).unwrap();
    text.push_str(&lines[0]);
    text.push('\n');
    std::fs::write(twice.join("records.jsonl"), text).unwrap();
    let e = refused(&[&a, &b, &twice], &out, &[]);
    assert!(e.contains("also in") && e.contains("part0"), "{e}");
    // Not a run folder.
    let e = refused(&[&a, dir.path()], &out, &[]);
    assert!(e.contains("no records.jsonl"), "{e}");
}
