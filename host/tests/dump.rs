//! `--dump-problem`: the dumped problem is valid JSON, and a dynamic
//! program written here, over the dumped costs alone, finds the optimum
//! that the dump records.

mod common;

use common::hwwfc;
use serde_json::Value;

/// The cheapest total over the dump's layers and transition matrices (f64),
/// and the state indices reaching it.
fn independent_optimum(dump: &Value) -> (f64, Vec<u64>) {
    let layers = dump["layers"].as_array().unwrap();
    let edges = dump["edges"].as_array().unwrap();
    assert_eq!(edges.len() + 1, layers.len());
    let unary = |l: &Value| -> Vec<f64> {
        l["states"].as_array().unwrap().iter().map(|s| s["unary_us"].as_f64().unwrap()).collect()
    };
    let mut best: Vec<f64> = unary(&layers[0]);
    let mut back: Vec<Vec<usize>> = vec![vec![0; best.len()]];
    for (i, edge) in edges.iter().enumerate() {
        assert_eq!(edge["from"].as_u64().unwrap() as usize, i);
        assert_eq!(edge["to"].as_u64().unwrap() as usize, i + 1);
        let next_unary = unary(&layers[i + 1]);
        let matrix = edge["transition_us"].as_array().unwrap();
        assert_eq!(matrix.len(), best.len(), "rows = producer's states");
        let mut next = vec![f64::INFINITY; next_unary.len()];
        let mut arg = vec![0usize; next_unary.len()];
        for (a, row) in matrix.iter().enumerate() {
            let row = row.as_array().unwrap();
            assert_eq!(row.len(), next_unary.len(), "columns = consumer's states");
            for (b, cell) in row.iter().enumerate() {
                let Some(t) = cell.as_f64() else {
                    assert!(cell.is_null());
                    continue;
                };
                let c = best[a] + t + next_unary[b];
                if c < next[b] {
                    next[b] = c;
                    arg[b] = a;
                }
            }
        }
        best = next;
        back.push(arg);
    }
    let (mut s, cost) = best.iter().copied().enumerate().min_by(|x, y| x.1.total_cmp(&y.1)).unwrap();
    let mut positions = vec![0; layers.len()];
    for i in (0..layers.len()).rev() {
        positions[i] = s;
        s = back[i][s];
    }
    let states = positions.iter().zip(layers).map(|(&p, l)| l["states"][p]["index"].as_u64().unwrap()).collect();
    (cost, states)
}

/// The cost of the recorded optimum, recomputed from the dump.
fn cost_of(dump: &Value, states: &[u64]) -> f64 {
    let layers = dump["layers"].as_array().unwrap();
    let pos = |i: usize| -> usize {
        layers[i]["states"].as_array().unwrap().iter().position(|s| s["index"].as_u64() == Some(states[i])).unwrap()
    };
    let mut total = 0.0;
    for i in 0..layers.len() {
        total += layers[i]["states"][pos(i)]["unary_us"].as_f64().unwrap();
        if i > 0 {
            total += dump["edges"][i - 1]["transition_us"][pos(i - 1)][pos(i)].as_f64().unwrap();
        }
    }
    total
}

fn dump(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("problem.json");
    std::fs::write(&path, "stale").unwrap();
    hwwfc().arg("schedule").args(args).arg("--dump-problem").arg(&path).assert().success();
    let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(entries.len(), 1, "no temporary file is left behind");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn check(args: &[&str]) -> Value {
    let d = dump(args);
    assert_eq!(d["format"], "hwwfc-problem");
    assert_eq!(d["version"], 2);
    let recorded = d["optimum"]["cost_us"].as_f64().unwrap();
    let states: Vec<u64> = d["optimum"]["states"].as_array().unwrap().iter().map(|s| s.as_u64().unwrap()).collect();
    let (cost, _) = independent_optimum(&d);
    assert!((cost - recorded).abs() <= 1e-4 * recorded, "{args:?}: DP {cost} vs dump {recorded}");
    let again = cost_of(&d, &states);
    assert!((again - recorded).abs() <= 1e-4 * recorded, "{args:?}: {again} vs {recorded}");
    d
}

#[test]
fn dump_reproduces_the_optimum_on_the_virtual_specs() {
    for spec in ["stress_gpu", "toy_gpu"] {
        let d = check(&["--spec", spec]);
        assert_eq!(d["spec"], spec);
        assert_eq!(d["layers"].as_array().unwrap().len(), 6);
        let s = &d["layers"][2]["states"][0];
        for key in [
            "index",
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
        ] {
            assert!(!s[key].is_null(), "{key}");
        }
    }
}

#[test]
fn dump_has_incompatible_pairs_as_null() {
    // On the tiles space a tiled producer cannot feed a DRAM-streamed
    // consumer of another tile shape.
    let d = check(&["--spec", "toy_gpu", "--seq", "256"]);
    let nulls = d["edges"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["transition_us"].as_array().unwrap().iter())
        .flat_map(|row| row.as_array().unwrap().iter())
        .filter(|c| c.is_null())
        .count();
    assert!(nulls > 0);
}

#[test]
fn dump_reproduces_the_optimum_on_h200() {
    let d = check(&["--spec", "h200", "--model", "gpt2-block", "--solver", "wfc"]);
    assert_eq!(d["model"], "gpt2-block");
    let report = common::schedule_json(&["--spec", "h200", "--model", "gpt2-block", "--solver", "exact"]);
    for (l, r) in d["layers"].as_array().unwrap().iter().zip(report["layers"].as_array().unwrap()) {
        assert_eq!(l["states"].as_array().unwrap().len() as u64, r["states_left"].as_u64().unwrap());
    }
}

#[test]
fn dump_matches_the_reported_exact_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    let out = hwwfc().args(["schedule", "--json", "--dump-problem"]).arg(&path).output().unwrap();
    assert!(out.status.success());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let d: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(report["exact_states"], d["optimum"]["states"]);
    assert_eq!(report["exact_cost"], d["optimum"]["cost_us"]);
    let (_, states) = independent_optimum(&d);
    assert_eq!(serde_json::to_value(states).unwrap(), d["optimum"]["states"]);
}
