//! `hwwfc tenants`: two tenants' split of the GPU and their schedules, as
//! text and JSON, without a GPU; the errors of a bad split and of
//! `--measure` where no GPU answers.

mod common;

use serde_json::Value;

fn tenants(args: &[&str]) -> std::process::Output {
    common::hwwfc().arg("tenants").args(args).output().unwrap()
}

fn tenants_json(args: &[&str]) -> Value {
    let out = tenants(&[&["--json"], args].concat());
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Runs `hwwfc tenants ARGS`, expects failure, and returns the one line of
/// stderr.
fn tenants_error(args: &[&str]) -> String {
    let out = tenants(args);
    assert_eq!(out.status.code(), Some(1), "exit status for {args:?}");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.starts_with("error: "), "stderr: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "stderr: {stderr}");
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
    stderr.trim_end().to_string()
}

#[test]
fn the_defaults_print_the_plan() {
    let out = tenants(&[]);
    assert!(out.status.success(), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("tenants on h200 (132 SMs, partitions in steps of 8)"), "{text}");
    assert!(text.contains("tenant A: llama3-8b-block seq 2048 (7 layers)"), "{text}");
    assert!(text.contains("tenant B: llama3-8b-block seq 1 (7 layers)"), "{text}");
    // One row per split, one of them chosen.
    assert_eq!(text.matches("<- chosen").count(), 1, "{text}");
    assert!(text.contains("\nsplit: A "), "{text}");
    for layer in ["qkv_proj", "attn_softmax", "down_proj"] {
        assert_eq!(text.matches(layer).count(), 2, "{layer}: {text}");
    }
    assert!(text.contains("\npredicted: both at once"), "{text}");
}

#[test]
fn the_json_plan_chooses_the_least_makespan() {
    let v = tenants_json(&[]);
    assert_eq!(v["spec"], "h200");
    assert_eq!(v["total_sms"], 132);
    assert_eq!(v["granularity"], 8);
    assert_eq!(v["forced"], false);
    assert!(v["measured"].is_null());
    let splits = v["splits"].as_array().unwrap();
    assert_eq!(splits.len(), 15);
    let chosen: Vec<&Value> = splits.iter().filter(|s| s["chosen"] == true).collect();
    assert_eq!(chosen.len(), 1);
    let best = chosen[0]["makespan_us"].as_f64().unwrap();
    for s in splits {
        let (a, b) = (s["a_sms"].as_u64().unwrap(), s["b_sms"].as_u64().unwrap());
        assert_eq!((a % 8, b % 8), (0, 0), "{s}");
        assert_eq!(a + b + s["idle_sms"].as_u64().unwrap(), 132);
        let m = s["makespan_us"].as_f64().unwrap();
        assert_eq!(m, s["a_us"].as_f64().unwrap().max(s["b_us"].as_f64().unwrap()));
        assert!(best <= m * (1.0 + 1e-6), "{best} > {m}");
    }
    assert_eq!(v["chosen"]["a_sms"], chosen[0]["a_sms"]);
    let t = v["tenants"].as_array().unwrap();
    assert_eq!((t[0]["seq"].as_u64(), t[1]["seq"].as_u64()), (Some(2048), Some(1)));
    assert_eq!(t[0]["sms"], v["chosen"]["a_sms"]);
    assert_eq!(t[1]["sms"], v["chosen"]["b_sms"]);
    for tenant in t {
        assert_eq!(tenant["partition"]["layers"].as_array().unwrap().len(), 7);
        assert_eq!(tenant["whole"]["solved_on_sms"], 132);
        let part = tenant["partition"]["predicted_us"].as_f64().unwrap();
        let whole_there = tenant["whole"]["predicted_on_partition_us"].as_f64().unwrap();
        assert!(part <= whole_there * (1.0 + 1e-6), "{part} > {whole_there}");
    }
    let p = &v["predicted"];
    let (c, s) = (p["concurrent_us"].as_f64().unwrap(), p["sequential_us"].as_f64().unwrap());
    assert_eq!(c, best);
    assert!((p["speedup"].as_f64().unwrap() - s / c).abs() < 1e-9);
}

#[test]
fn a_forced_split_is_kept_and_a_bad_one_refused() {
    let v = tenants_json(&["--split", "64"]);
    assert_eq!(v["forced"], true);
    assert_eq!((v["chosen"]["a_sms"].as_u64(), v["chosen"]["b_sms"].as_u64()), (Some(64), Some(64)));
    let e = tenants_error(&["--split", "60"]);
    assert!(e.contains("--split 60") && e.contains("granularity"), "{e}");
    let e = tenants_error(&["--split", "128"]);
    assert!(e.contains("tenant B") && e.contains("fewer than 8"), "{e}");
    let e = tenants_error(&["--granularity", "70"]);
    assert!(e.contains("132 SMs cannot be split"), "{e}");
    let e = tenants_error(&["--model-b", "no-such-model"]);
    assert!(e.contains("--model-b") && e.contains("no-such-model"), "{e}");
}

#[test]
fn measuring_without_the_gpu_is_a_clear_error() {
    // No machine has a GPU 99: the error says so (or that there is no
    // driver at all) in one line, with nothing on stdout under --json.
    let out = tenants(&["--json", "--measure", "--gpu", "99"]);
    assert!(out.stdout.is_empty());
    let e = tenants_error(&["--json", "--measure", "--gpu", "99"]);
    assert!(e.contains("GPU") || e.contains("NVRTC"), "{e}");
}
