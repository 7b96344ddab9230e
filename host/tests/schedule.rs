//! `hwwfc schedule` on good inputs: the table, the JSON report, the
//! built-in specs and models, the solver choice.

mod common;

use common::{hwwfc, schedule_json, specs_dir, write_json};
use predicates::prelude::*;
use serde_json::{json, Value};

const ATTENTION: [&str; 6] = ["in_proj", "qk_scores", "softmax", "attn_values", "out_proj", "ffn_up"];

#[test]
fn default_run_prints_the_table_and_agreement() {
    let out = hwwfc().arg("schedule").assert().success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    for name in ATTENTION {
        let line = stdout.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{stdout}"));
        // Columns: name, then the op in three words, then the tile.
        let tile = line.split_whitespace().nth(4).unwrap();
        if name == "softmax" {
            assert_eq!(tile, "16x16", "{line}");
        } else {
            assert_eq!(tile, "32x32x32", "{line}");
        }
        assert!(line.contains("sram") && line.contains("row_major"), "{line}");
    }
    assert!(stdout.contains("solvers:       agree (same states)"), "{stdout}");
    assert!(stdout.contains("1995383808 candidate, 10935000 after the constraints"), "{stdout}");
    let total = |prefix: &str| -> String {
        let line = stdout.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("{stdout}"));
        line.split_whitespace().nth(1).unwrap().to_string()
    };
    assert_eq!(total("wfc:"), total("exact:"));
    assert!(stdout.contains("alignment 6, sram_capacity 9, working_memory 3"), "{stdout}");
    assert!(stdout.contains("median of"), "{stdout}");
}

fn check_report(v: &Value, spec: &str, model: &str, layers: usize) {
    assert_eq!(v["spec"], spec);
    assert_eq!(v["model"], model);
    let ls = v["layers"].as_array().unwrap();
    assert_eq!(ls.len(), layers);
    for l in ls {
        for key in [
            "name",
            "kind",
            "tile_m",
            "tile_n",
            "tile_k",
            "warps_m",
            "warps_n",
            "stages",
            "split_k",
            "pingpong",
            "placement",
            "layout",
            "state_index",
            "unary_us",
            "transition_us",
            "candidates",
            "states_left",
            "removed",
        ] {
            assert!(!l[key].is_null(), "layer field {key} missing: {l}");
        }
        let removed = l["removed"].as_object().unwrap();
        assert_eq!(removed.len(), 8);
        let total: u64 = removed.values().map(|n| n.as_u64().unwrap()).sum();
        assert_eq!(total + l["states_left"].as_u64().unwrap(), l["candidates"].as_u64().unwrap());
    }
    for key in ["wfc_us", "exact_us", "build_us"] {
        assert!(v[key].as_f64().unwrap() > 0.0, "{key}");
    }
    for key in ["combinations", "space_combinations"] {
        v[key].as_str().unwrap().parse::<u128>().unwrap();
    }
    assert!(v["wfc_stats"]["collapses"].as_u64().unwrap() >= layers as u64);
    let cost: f64 = ls.iter().map(|l| l["unary_us"].as_f64().unwrap() + l["transition_us"].as_f64().unwrap()).sum();
    let wfc = v["wfc_cost"].as_f64().unwrap();
    assert!((cost - wfc).abs() <= 1e-4 * wfc, "{cost} vs {wfc}");
}

#[test]
fn json_report_on_the_virtual_specs() {
    for spec in ["stress_gpu", "toy_gpu"] {
        let v = schedule_json(&["--spec", spec]);
        check_report(&v, spec, "attention", 6);
        assert_eq!(v["agree"], true);
        assert_eq!(v["wfc_cost"], v["exact_cost"]);
        assert_eq!(v["wfc_states"], v["exact_states"]);
        assert_eq!(v["gap_percent"], 0.0);
    }
    let v = schedule_json(&[]);
    assert_eq!(v["layers"][2]["tile_m"], 16);
    assert_eq!(v["layers"][2]["removed"]["working_memory"], 3);
    assert_eq!(v["combinations"], "10935000");
    assert_eq!(v["space_combinations"], "1995383808");
}

#[test]
fn real_gpus_schedule_the_transformer_blocks() {
    for model in ["gpt2-block", "llama3-8b-block"] {
        let v = schedule_json(&["--spec", "h200", "--model", model]);
        check_report(&v, "h200", model, 7);
        assert_eq!(v["agree"], true, "{model}");
        // The h200's hopper space holds both matmul families; with the
        // fitted coefficients the TMA family's tiles win these prefill
        // matmuls, and the softmax stays a pipelined CUDA kernel.
        for layer in v["layers"].as_array().unwrap() {
            let expected = if layer["kind"] == "softmax" { "pipelined" } else { "tma" };
            assert_eq!(layer["placement"], expected, "{model} {}", layer["name"]);
        }
    }
    hwwfc()
        .args(["schedule", "--spec", "h200", "--model", "gpt2-block"])
        .assert()
        .success()
        .stdout(predicate::str::contains("attn_softmax").and(predicate::str::contains("agree")));
}

#[test]
fn every_builtin_spec_runs_from_any_directory() {
    let dir = tempfile::tempdir().unwrap();
    for spec in ["stress_gpu", "toy_gpu", "h200", "h100", "a100", "rtx3060"] {
        hwwfc()
            .current_dir(dir.path())
            .args(["schedule", "--spec", spec, "--solver", "exact"])
            .assert()
            .success()
            .stdout(predicate::str::contains(format!("on {spec} (")));
    }
}

#[test]
fn a_spec_file_gives_the_same_schedule_as_the_builtin() {
    let path = specs_dir().join("toy_gpu.json");
    let from_file = schedule_json(&["--spec", path.to_str().unwrap()]);
    let builtin = schedule_json(&["--spec", "toy_gpu"]);
    assert_eq!(from_file["exact_states"], builtin["exact_states"]);
    assert_eq!(from_file["exact_cost"], builtin["exact_cost"]);
    assert_eq!(from_file["spec_origin"], path.to_str().unwrap());
}

#[test]
fn one_solver_leaves_the_other_null() {
    let v = schedule_json(&["--solver", "wfc"]);
    assert!(v["wfc_cost"].is_number() && v["wfc_us"].is_number() && v["wfc_stats"].is_object());
    for key in ["exact_cost", "exact_us", "exact_states", "agree", "gap_percent"] {
        assert!(v[key].is_null(), "{key}");
    }
    let v = schedule_json(&["--solver", "exact"]);
    assert!(v["exact_cost"].is_number() && v["exact_us"].is_number());
    for key in ["wfc_cost", "wfc_us", "wfc_states", "wfc_stats", "agree", "gap_percent"] {
        assert!(v[key].is_null(), "{key}");
    }
    assert_eq!(v["layers"].as_array().unwrap().len(), 6);
    hwwfc()
        .args(["schedule", "--solver", "exact"])
        .assert()
        .success()
        .stdout(predicate::str::contains("exact:").and(predicate::str::contains("wfc:").not()));
}

#[test]
fn seq_overrides_the_builtin_length() {
    let v = schedule_json(&["--seq", "256"]);
    assert_eq!(v["seq"], 256);
    assert_eq!(v["layers"][2]["op"]["rows"], 256);
    assert_eq!(v["agree"], true);
}

#[test]
fn model_file_is_scheduled() {
    let dir = tempfile::tempdir().unwrap();
    let model = json!({"name": "my-model", "layers": [
        {"name": "qkv", "kind": "matmul", "m": 512, "n": 1536, "k": 512, "batch": 1, "dtype": "f16"},
        {"name": "sm", "kind": "softmax", "rows": 512, "cols": 512, "dtype": "f32"},
        {"name": "proj", "kind": "matmul", "m": 512, "n": 512, "k": 512}
    ]});
    let path = write_json(dir.path(), "model.json", &model);
    let v = schedule_json(&["--model", path.to_str().unwrap()]);
    check_report(&v, "stress_gpu", "my-model", 3);
    assert_eq!(v["layers"][1]["op"], json!({"rows": 512, "cols": 512, "dtype": "f32"}));
    assert_eq!(v["layers"][2]["op"]["batch"], 1);
    assert_eq!(v["layers"][2]["op"]["dtype"], "f16");
    assert!(v["seq"].is_null());
}

#[test]
fn coefficient_files_change_the_prediction() {
    let dir = tempfile::tempdir().unwrap();
    let mut c: Value = serde_json::to_value(hwwfc_defaults()).unwrap();
    let bare = write_json(dir.path(), "bare.json", &c);
    let v = schedule_json(&["--coefficients", bare.to_str().unwrap()]);
    let default = schedule_json(&[]);
    assert_eq!(v["exact_cost"], default["exact_cost"]);
    c["launch_scale"] = json!(2.0);
    let wrapped = write_json(
        dir.path(),
        "wrapped.json",
        &json!({"format_version": hwwfc_core::cost::COEFFICIENTS_VERSION, "gpu": "stress_gpu", "coefficients": c}),
    );
    let v = schedule_json(&["--coefficients", wrapped.to_str().unwrap()]);
    // Six launches of 5 us each, doubled.
    let delta = v["exact_cost"].as_f64().unwrap() - default["exact_cost"].as_f64().unwrap();
    assert!((delta - 30.0).abs() < 1e-2, "{delta}");
    assert!(v["coefficients"].as_str().unwrap().contains("fitted on stress_gpu"));
}

/// The default coefficients as the core defines them.
fn hwwfc_defaults() -> Value {
    serde_json::to_value(hwwfc_core::Coefficients::default()).unwrap()
}

#[test]
fn help_documents_the_model_format() {
    hwwfc().args(["schedule", "--help"]).assert().success().stdout(
        predicate::str::contains("Model file format")
            .and(predicate::str::contains("\"kind\": \"softmax\""))
            .and(predicate::str::contains("--dump-problem")),
    );
}

#[test]
fn the_readme_shows_what_the_default_run_prints() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let start = readme.find("```text\n").expect("README has the sample output") + "```text\n".len();
    let sample = &readme[start..start + readme[start..].find("```").unwrap()];
    let out = hwwfc().arg("schedule").assert().success();
    let stdout = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    let printed: Vec<&str> = stdout.lines().map(str::trim_end).collect();
    // Every line of the sample but the elision is printed as it stands.
    for line in sample.lines().map(str::trim_end).filter(|l| *l != "...") {
        assert!(printed.contains(&line), "README line not printed by `hwwfc schedule`:\n{line}\n\n{stdout}");
    }
}

#[test]
fn a_model_file_with_elementwise_layers_fuses_where_it_may() {
    let dir = tempfile::tempdir().unwrap();
    let model = json!({"name": "mlp", "layers": [
        {"name": "norm", "kind": "norm", "rows": 512, "cols": 1024, "inputs": []},
        {"name": "fc", "kind": "matmul", "m": 512, "n": 4096, "k": 1024, "inputs": ["norm"]},
        {"name": "act", "kind": "gelu", "rows": 512, "cols": 4096, "inputs": ["fc"]},
        {"name": "proj", "kind": "matmul", "m": 512, "n": 1024, "k": 4096, "inputs": ["act"]},
        {"name": "res", "kind": "add", "rows": 512, "cols": 1024, "dtype": "f16", "inputs": ["proj", "norm"]}
    ]});
    let path = write_json(dir.path(), "mlp.json", &model);
    let v = schedule_json(&["--spec", "h200", "--model", path.to_str().unwrap()]);
    check_report(&v, "h200", "mlp", 5);
    assert_eq!(v["layers"][2]["op"], json!({"elementwise": "gelu", "rows": 512, "cols": 4096, "dtype": "f16"}));
    assert_eq!(v["layers"][0]["kind"], "elementwise");
    // The GELU and the residual add run in their matmuls' epilogues; the
    // norm, which needs whole rows, runs as a kernel of its own.
    assert_eq!(v["layers"][2]["placement"], "epilogue");
    assert_eq!(v["layers"][4]["placement"], "epilogue");
    assert_ne!(v["layers"][0]["placement"], "epilogue");
    assert_eq!(v["agree"], true);
}

#[test]
fn the_real_graphs_are_scheduled_and_a_cutset_over_budget_leaves_wfc_alone() {
    for (model, layers) in [("llama3-8b-graph", 15), ("gpt2-graph", 12), ("vit-b16-graph", 14)] {
        let v = schedule_json(&["--spec", "h200", "--model", model]);
        check_report(&v, "h200", model, layers);
        assert_eq!(v["agree"], true, "{model}");
        assert!(v["exact_skipped"].is_null());
    }
    // On the tiles space every edge costs, and the MoE layer's eight
    // experts joined by their running sum make a cutset too large for the
    // exact solver's budget: WFC's schedule, and the reason.
    let v = schedule_json(&["--model", "mixtral-moe-graph", "--seq", "256"]);
    assert!(v["exact_cost"].is_null());
    assert!(v["wfc_cost"].as_f64().unwrap() > 0.0);
    assert!(v["exact_skipped"].as_str().unwrap().contains("cutset"), "{}", v["exact_skipped"]);
    // Asked for alone, the exact solver's refusal is an error.
    hwwfc()
        .args(["schedule", "--model", "mixtral-moe-graph", "--seq", "256", "--solver", "exact"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("more than 65536 combinations"));
}

#[test]
fn measuring_a_graph_with_elementwise_layers_needs_only_a_cuda_spec() {
    // The elementwise layers have kernels (and a fused one runs in its
    // producer's), so what refuses `--measure` before any GPU work is a
    // spec whose kernels are not CUDA's, not the model.
    hwwfc()
        .args(["schedule", "--spec", "stress_gpu", "--model", "gpt2-graph", "--measure"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("use a spec of the cuda or hopper space"));
}

#[test]
fn timing_the_chain_alone_is_an_option_of_measure() {
    hwwfc()
        .args(["schedule", "--spec", "h200", "--chain-only"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("--measure"));
    hwwfc()
        .args(["schedule", "--spec", "stress_gpu", "--measure", "--chain-only"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("use a spec of the cuda or hopper space"));
}

#[test]
fn fusion_is_a_coupling_that_greedy_choice_breaks_on_a_decode_step() {
    // One token: the projections' cheapest states split K, which cannot
    // fuse the following elementwise layer, so each layer's cheapest state
    // is no schedule at all; the solvers weigh the split against the
    // fusion.
    let fused = schedule_json(&["--spec", "h200", "--model", "llama3-8b-graph", "--seq", "1"]);
    assert!(fused["greedy_cost"].is_null(), "{}", fused["greedy_cost"]);
    let plain = schedule_json(&["--spec", "h200", "--model", "llama3-8b-graph", "--seq", "1", "--no-fusion"]);
    assert!(plain["layers"].as_array().unwrap().iter().all(|l| l["placement"] != "epilogue"));
    assert!(!plain["greedy_cost"].is_null());
    let (with, without) = (fused["exact_cost"].as_f64().unwrap(), plain["exact_cost"].as_f64().unwrap());
    assert!(with < without, "with fusion {with} us, without {without} us");
    assert_eq!(fused["agree"], true);
}
