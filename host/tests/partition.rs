//! `hwwfc schedule --sms N --smem-kb K`: a partition of the spec's GPU,
//! scheduled with the whole GPU's coefficients, and the partitions refused.

mod common;

use common::{schedule_error, schedule_json};

fn total(v: &serde_json::Value) -> f64 {
    v["exact_cost"].as_f64().unwrap()
}

#[test]
fn a_partition_is_scheduled_with_its_own_limits() {
    let model = ["--spec", "h200", "--model", "llama3-8b-block"];
    let whole = schedule_json(&model);
    assert!(whole["partition"].is_null());
    let mut last = total(&whole);
    for sms in ["64", "32", "16"] {
        let part = schedule_json(&[&model[..], &["--sms", sms]].concat());
        assert_eq!(part["partition"]["sms"], sms.parse::<u32>().unwrap());
        assert_eq!(part["partition"]["of_sms"], 132);
        assert!(total(&part) > last, "{sms} SMs: {} us, not above {last} us", total(&part));
        last = total(&part);
        // The same coefficients: the whole GPU's, built in.
        assert_eq!(part["coefficients"], whole["coefficients"]);
    }
    // A 64 KiB budget removes the matmul states that stage more (a softmax
    // stages little), and every layer still has one.
    let small = schedule_json(&[&model[..], &["--smem-kb", "64"]].concat());
    assert_eq!(small["partition"]["sram_per_block_bytes"], 65536);
    for (a, b) in small["layers"].as_array().unwrap().iter().zip(whole["layers"].as_array().unwrap()) {
        if a["kind"] != "matmul" {
            continue;
        }
        assert!(a["states_left"].as_u64().unwrap() > 0);
        assert!(a["states_left"].as_u64() < b["states_left"].as_u64(), "{}", a["name"]);
        assert!(a["removed"]["sram_capacity"].as_u64() > b["removed"]["sram_capacity"].as_u64());
    }
    assert!(total(&small) >= total(&whole));
}

#[test]
fn impossible_partitions_are_refused_in_one_line() {
    let e = schedule_error(&["--spec", "h200", "--sms", "0"]);
    assert!(e.contains("at least one SM"), "{e}");
    let e = schedule_error(&["--spec", "h200", "--sms", "200"]);
    assert!(e.contains("spec `h200`") && e.contains("200 SMs") && e.contains("132"), "{e}");
    let e = schedule_error(&["--spec", "h200", "--smem-kb", "300"]);
    assert!(e.contains("307200 bytes") && e.contains("232448"), "{e}");
    let e = schedule_error(&["--spec", "h200", "--smem-kb", "0"]);
    assert!(e.contains("more than 0 bytes"), "{e}");
}

/// `profile --plan --json` on the committed Hopper run's workloads, into an
/// empty folder, with `extra` arguments.
fn plan(dir: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    let workloads = common::workloads_of(&common::hopper_run_lines(), dir);
    let out = common::hwwfc()
        .args(["profile", "--plan", "--json", "--spec", common::HOPPER_RUN_SPEC, "--workloads"])
        .arg(&workloads)
        .arg("--out")
        .arg(dir.join("empty"))
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_profile_plan_on_a_partition_measures_what_fits_it() {
    let dir = tempfile::tempdir().unwrap();
    let whole = plan(dir.path(), &[]);
    let count = |p: &serde_json::Value| p["records"].as_u64().unwrap();
    let seconds = |p: &serde_json::Value| p["seconds"].as_f64().unwrap();
    // Fewer SMs: the same configurations, each predicted slower.
    let few = plan(dir.path(), &["--sms", "16"]);
    assert_eq!(count(&few), count(&whole));
    assert!(seconds(&few) > 2.0 * seconds(&whole), "{} s on 16 SMs, {} s on all", seconds(&few), seconds(&whole));
    // A 64 KiB budget: what stages more is not measured.
    let small = plan(dir.path(), &["--smem-kb", "64"]);
    assert!(
        count(&small) < count(&whole) && count(&small) > count(&whole) / 10,
        "{} of {}",
        count(&small),
        count(&whole)
    );
    assert!(common::plan_keys(&small).is_subset(&common::plan_keys(&whole)));
}

/// A copy of the committed Hopper run under `dir/name`, its metadata
/// saying it measured on `partition` (JSON null: the whole GPU).
fn copy_run(dir: &std::path::Path, name: &str, partition: serde_json::Value) -> std::path::PathBuf {
    let from = common::repo().join(common::HOPPER_RUN);
    let to = dir.join(name);
    std::fs::create_dir_all(&to).unwrap();
    std::fs::copy(from.join("records.jsonl.gz"), to.join("records.jsonl.gz")).unwrap();
    let mut meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(from.join("meta.json")).unwrap()).unwrap();
    if !partition.is_null() {
        for run in meta["runs"].as_array_mut().unwrap() {
            run["partition"] = partition.clone();
        }
    }
    std::fs::write(to.join("meta.json"), serde_json::to_string_pretty(&meta).unwrap()).unwrap();
    to
}

fn report(data: &std::path::Path) -> std::process::Output {
    common::hwwfc()
        .args(["report", "--json", "--no-files", "--allow-other-gpu", "--data"])
        .arg(data)
        .arg("--coefficients")
        .arg(common::repo().join("calib-data/h200/coefficients.json"))
        .output()
        .unwrap()
}

#[test]
fn records_of_a_partition_are_judged_on_its_spec_and_never_mixed() {
    let dir = tempfile::tempdir().unwrap();
    let sixteen = serde_json::json!({
        "sms": 16, "of_sms": 132, "sram_per_block_bytes": 232448, "of_sram_per_block_bytes": 232448
    });
    let whole = copy_run(dir.path(), "whole", serde_json::Value::Null);
    let part = copy_run(dir.path(), "part", sixteen.clone());
    let judged = |data: &std::path::Path| {
        let out = report(data);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let on_whole = judged(&whole);
    let on_part = judged(&part);
    assert!(on_whole["partition"].is_null());
    assert_eq!(on_part["partition"], sixteen);
    // The same times judged on a spec of 16 SMs rank differently.
    assert_ne!(on_whole["mean_rho"], on_part["mean_rho"]);
    // Both in one data folder: refused, naming both.
    let out = report(dir.path());
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("two partitions") && e.contains("16 of 132 SMs") && e.contains("the whole GPU"), "{e}");
}

#[test]
fn partitions_are_judged_side_by_side_each_on_its_spec() {
    let dir = tempfile::tempdir().unwrap();
    let sixteen = serde_json::json!({
        "sms": 16, "of_sms": 132, "sram_per_block_bytes": 232448, "of_sram_per_block_bytes": 232448
    });
    copy_run(dir.path(), "b-part", sixteen.clone());
    copy_run(dir.path(), "a-whole", serde_json::Value::Null);
    let out = common::hwwfc()
        .args(["partitions", "--json", "--allow-other-gpu", "--data"])
        .arg(dir.path())
        .arg("--coefficients")
        .arg(common::repo().join("calib-data/h200/coefficients.json"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let parts = v["partitions"].as_array().unwrap();
    assert_eq!(parts.len(), 2);
    // The whole GPU first, then the partition, each with every workload.
    assert!(parts[0]["partition"].is_null());
    assert_eq!(parts[1]["partition"], sixteen);
    for p in parts {
        assert_eq!(p["choices"].as_array().unwrap().len(), p["workloads"].as_u64().unwrap() as usize);
        let share = p["mean_top1_share"].as_f64().unwrap();
        assert!(share > 0.0 && share <= 1.0, "{p}");
    }
    // The same times: the same measured best, but the model, seeing 16 SMs,
    // chooses differently somewhere.
    let (a, b) = (parts[0]["choices"].as_array().unwrap(), parts[1]["choices"].as_array().unwrap());
    assert!(a.iter().zip(b).all(|(x, y)| x["best"] == y["best"] && x["best_us"] == y["best_us"]));
    assert!(a.iter().zip(b).any(|(x, y)| x["chosen"] != y["chosen"]));
    // The tables say the same, and the plot has a row per partition.
    let plot = dir.path().join("partitions.svg");
    let out = common::hwwfc()
        .args(["partitions", "--allow-other-gpu", "--data"])
        .arg(dir.path())
        .arg("--coefficients")
        .arg(common::repo().join("calib-data/h200/coefficients.json"))
        .arg("--plot")
        .arg(&plot)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("the whole GPU") && svg.contains("16 of 132 SMs"), "{svg}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("| the whole GPU |") && text.contains("| 16 of 132 SMs, 227 of 227 KiB"), "{text}");
    // The coefficients' origin heads the tables, saying once that they are not refitted.
    let head = text.lines().next().unwrap_or_default();
    assert!(head.starts_with("Coefficients: ") && head.matches("no refit").count() == 1, "{head}");
}

/// The built-in h200 spec as a file, with `partition` added to it.
fn spec_file_with(dir: &std::path::Path, partition: serde_json::Value) -> String {
    let text = std::fs::read_to_string(common::repo().join("specs/h200.json")).unwrap();
    let mut spec: serde_json::Value = serde_json::from_str(&text).unwrap();
    spec["partition"] = partition;
    let path = dir.join("h200-part.json");
    std::fs::write(&path, serde_json::to_string_pretty(&spec).unwrap()).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn a_spec_file_may_name_its_partition() {
    let dir = tempfile::tempdir().unwrap();
    let file = spec_file_with(dir.path(), serde_json::json!({"sms": 32, "smem_kb": 100}));
    let model = ["--model", "llama3-8b-block"];
    let from_file = schedule_json(&[&model[..], &["--spec", &file]].concat());
    let from_flags = schedule_json(&[&model[..], &["--spec", "h200", "--sms", "32", "--smem-kb", "100"]].concat());
    assert_eq!(from_file["partition"], from_flags["partition"]);
    assert_eq!(from_file["partition"]["sms"], 32);
    assert_eq!(total(&from_file), total(&from_flags));
    assert_eq!(from_file["layers"], from_flags["layers"]);
    // A second partition on top of the file's is refused, as is a file's
    // partition where the command measures on the whole GPU.
    let e = schedule_error(&["--spec", &file, "--sms", "16"]);
    assert!(e.contains("names a partition already") && e.contains("32 of 132 SMs"), "{e}");
    let out = common::hwwfc()
        .args(["profile", "--plan", "--spec", &file, "--workloads", "calib-data/workloads.json", "--out"])
        .arg(dir.path().join("empty"))
        .current_dir(common::repo())
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && e.contains("--sms and --smem-kb"), "{e}");
    // What the file's partition cannot be is one line naming the field.
    let bad = spec_file_with(dir.path(), serde_json::json!({"sms": 500}));
    let e = schedule_error(&["--spec", &bad]);
    assert!(e.contains("field `partition`") && e.contains("500 SMs"), "{e}");
    let bad = spec_file_with(dir.path(), serde_json::json!({"cores": 4}));
    let e = schedule_error(&["--spec", &bad]);
    assert!(e.contains("field `partition`") && e.contains("cores"), "{e}");
}
