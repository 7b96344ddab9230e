//! `hwwfc schedule` on bad inputs: one clear line on stderr that names the
//! file and the field (or the layer and the constraint), a non-zero exit,
//! and never a panic.

mod common;

use common::{schedule_error, spec_json, write_json};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

fn spec_with(dir: &Path, name: &str, edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> PathBuf {
    let mut v = spec_json("h200");
    edit(v.as_object_mut().unwrap());
    write_json(dir, name, &v)
}

fn arg(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn missing_spec_field_names_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let p = spec_with(dir.path(), "missing.json", |o| {
        o.remove("sm_count");
    });
    let e = schedule_error(&["--spec", arg(&p)]);
    assert_eq!(e, format!("error: {}: missing field `sm_count`", p.display()));

    let p = spec_with(dir.path(), "nosource.json", |o| {
        o.remove("source");
    });
    let e = schedule_error(&["--spec", arg(&p)]);
    assert!(e.contains("nosource.json: missing field `source`"), "{e}");

    let p = spec_with(dir.path(), "peak.json", |o| {
        o.insert("peak_tflops".into(), json!({"f16": 1.0, "bf16": 1.0}));
    });
    let e = schedule_error(&["--spec", arg(&p)]);
    assert!(e.ends_with("peak.json: field `peak_tflops`: missing field `f32`"), "{e}");
}

#[test]
fn negative_spec_field_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let p = spec_with(dir.path(), "bad.json", |o| {
        o.insert("sm_count".into(), json!(-4));
    });
    let e = schedule_error(&["--spec", arg(&p)]);
    assert_eq!(e, format!("error: {}: field `sm_count`: invalid value: integer `-4`, expected u32", p.display()));

    let p = spec_with(dir.path(), "negbw.json", |o| {
        o.insert("dram_bandwidth_gbps".into(), json!(-1.5));
    });
    let e = schedule_error(&["--spec", arg(&p)]);
    assert!(e.contains("negbw.json: invalid spec: `dram_bandwidth_gbps` must be a positive, finite number"), "{e}");

    let p = spec_with(dir.path(), "zero.json", |o| {
        o.insert("alignment_bytes".into(), json!(48));
    });
    let e = schedule_error(&["--spec", arg(&p)]);
    assert!(e.contains("zero.json: invalid spec: `alignment_bytes` must be a power of two"), "{e}");
}

#[test]
fn unknown_spec_field_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let p = spec_with(dir.path(), "extra.json", |o| {
        o.insert("tensor_cores".into(), json!(528));
    });
    let e = schedule_error(&["--spec", arg(&p)]);
    assert!(e.contains("extra.json: unknown field `tensor_cores`, expected one of"), "{e}");

    let p = spec_with(dir.path(), "nested.json", |o| {
        o.insert("peak_tflops".into(), json!({"f16": 1.0, "bf16": 1.0, "f32": 1.0, "fp8": 2.0}));
    });
    let e = schedule_error(&["--spec", arg(&p)]);
    assert!(e.contains("nested.json: field `peak_tflops`: unknown field `fp8`"), "{e}");
}

#[test]
fn malformed_spec_files_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("broken.json");
    std::fs::write(&p, "{\"name\": \"x\",\n \"space\": }").unwrap();
    let e = schedule_error(&["--spec", arg(&p)]);
    assert!(e.contains("broken.json: invalid JSON:") && e.contains("line 2"), "{e}");

    let p = dir.path().join("dup.json");
    std::fs::write(&p, "{\"name\": \"x\", \"name\": \"y\"}").unwrap();
    let e = schedule_error(&["--spec", arg(&p)]);
    assert!(e.contains("dup.json: invalid JSON: duplicate key `name`"), "{e}");

    let e = schedule_error(&["--spec", "no/such/spec.json"]);
    assert!(e.starts_with("error: cannot read no/such/spec.json:"), "{e}");
}

#[test]
fn unknown_spec_name_lists_the_builtins() {
    let e = schedule_error(&["--spec", "h300"]);
    assert!(e.contains("unknown spec `h300`"), "{e}");
    assert!(e.contains("stress_gpu, toy_gpu, h200, h100, a100, rtx3060"), "{e}");
}

#[test]
fn unknown_model_name_lists_the_builtins() {
    let e = schedule_error(&["--model", "gpt4"]);
    assert!(e.contains("unknown model `gpt4`"), "{e}");
    assert!(e.contains("attention, gpt2-block, llama3-8b-block, llama3-8b-attention, llama3-8b-dag"), "{e}");
}

fn model_file(dir: &Path, name: &str, layers: Vec<Value>) -> PathBuf {
    write_json(dir, name, &json!({"name": "m", "layers": layers}))
}

#[test]
fn model_over_capacity_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let layers = (0..65).map(|i| json!({"name": format!("l{i}"), "kind": "softmax", "rows": 64, "cols": 64})).collect();
    let p = model_file(dir.path(), "big.json", layers);
    let e = schedule_error(&["--model", arg(&p)]);
    assert!(e.contains("big.json: 65 layers: more than 64 layers (the capacity of this build)"), "{e}");
}

#[test]
fn zero_size_layer_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let layers = vec![
        json!({"name": "a", "kind": "matmul", "m": 64, "n": 64, "k": 64}),
        json!({"name": "b", "kind": "matmul", "m": 64, "n": 64, "k": 0}),
    ];
    let p = model_file(dir.path(), "zero.json", layers);
    let e = schedule_error(&["--model", arg(&p)]);
    assert!(e.ends_with("zero.json: layer 1 (`b`): dimension `k` must be at least 1"), "{e}");
}

#[test]
fn overflowing_shapes_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let p =
        model_file(dir.path(), "u32.json", vec![json!({"name": "a", "kind": "softmax", "rows": 65536, "cols": 65536})]);
    let e = schedule_error(&["--model", arg(&p)]);
    assert!(e.ends_with("u32.json: layer 0 (`a`): a tensor of this layer exceeds 4 GiB"), "{e}");
    // Products of u32 dimensions past u64, too.
    let max = u32::MAX;
    let layer = json!({"name": "huge", "kind": "matmul", "m": max, "n": max, "k": max, "batch": max});
    let p = model_file(dir.path(), "u64.json", vec![layer]);
    let e = schedule_error(&["--model", arg(&p)]);
    assert!(e.ends_with("u64.json: layer 0 (`huge`): a tensor of this layer exceeds 4 GiB"), "{e}");
    // Products that wrap to zero in u64 (2^64, 2^64, 2^65).
    let layer = json!({"name": "wrap", "kind": "matmul", "m": 1 << 22, "n": 1 << 22, "k": 1 << 22, "batch": 1 << 20});
    let p = model_file(dir.path(), "wrap.json", vec![layer]);
    let e = schedule_error(&["--model", arg(&p)]);
    assert!(e.ends_with("wrap.json: layer 0 (`wrap`): a tensor of this layer exceeds 4 GiB"), "{e}");
    let e = schedule_error(&["--model", "llama3-8b-block", "--seq", "100000"]);
    assert!(e.contains("layer 1 (`attn_scores`): a tensor of this layer exceeds 4 GiB"), "{e}");
}

#[test]
fn bad_layers_name_the_layer_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(Vec<Value>, &str)> = vec![
        (vec![json!({"name": "a", "kind": "conv", "m": 1})], "layer 0 (`a`): field `kind`: unknown kind `conv`"),
        (
            vec![json!({"name": "a", "kind": "softmax", "rows": 4, "cols": 4, "m": 4})],
            "layer 0 (`a`): unknown field `m`",
        ),
        (
            vec![json!({"name": "a", "kind": "matmul", "m": 4, "n": "4", "k": 4})],
            "layer 0 (`a`): field `n`: invalid type: string \"4\", expected u32",
        ),
        (vec![json!({"name": "a", "kind": "matmul", "n": 4, "k": 4})], "layer 0 (`a`): missing field `m`"),
        (
            vec![json!({"name": "a", "kind": "matmul", "m": 4, "n": 4, "k": 4, "dtype": "f8"})],
            "layer 0 (`a`): field `dtype`: unknown variant `f8`",
        ),
        (vec![json!({"kind": "softmax", "rows": 4, "cols": 4})], "layer 0: missing field `name`"),
        (
            vec![json!({"name": "x".repeat(25), "kind": "softmax", "rows": 4, "cols": 4})],
            "field `name`: longer than 24 bytes",
        ),
        (
            vec![
                json!({"name": "a", "kind": "softmax", "rows": 4, "cols": 4}),
                json!({"name": "a", "kind": "softmax", "rows": 4, "cols": 4}),
            ],
            "layer 1 (`a`): field `name`: already the name of layer 0",
        ),
        (vec![], "the model has no layers"),
    ];
    for (i, (layers, expected)) in cases.into_iter().enumerate() {
        let p = model_file(dir.path(), &format!("case{i}.json"), layers);
        let e = schedule_error(&["--model", arg(&p)]);
        assert!(e.contains(&format!("case{i}.json: ")) && e.contains(expected), "case {i}: {e}");
    }
    let p = write_json(dir.path(), "top.json", &json!({"layers": [], "version": 2}));
    let e = schedule_error(&["--model", arg(&p)]);
    assert!(e.contains("top.json: unknown field `version`"), "{e}");
    let e = schedule_error(&["--model", arg(&p), "--seq", "128"]);
    assert!(e.contains("--seq applies to the built-in models only"), "{e}");
}

#[test]
fn sram_too_small_for_every_state_names_layer_and_constraint() {
    let dir = tempfile::tempdir().unwrap();
    // The smallest CUDA matmul state stages 6 KB of operands; the h200's
    // hopper space holds the 480 `mma.sync` states and the 384 TMA ones.
    let p = spec_with(dir.path(), "tiny_sram.json", |o| {
        o.insert("sram_per_block_bytes".into(), json!(4096));
    });
    let e = schedule_error(&["--spec", arg(&p)]);
    assert_eq!(
        e,
        "error: layer `in_proj` (matmul 512x512x128 f16): every state removed; `sram_capacity` removed the last \
         one (of 864 candidates: sram_capacity 864)"
    );
    // On the tiles space, a softmax too small for any DRAM tile to apply
    // (a DRAM tile may not exceed the layer) keeps only SRAM tiles, and
    // 512 bytes hold none of them with its working memory (x4).
    let mut v = spec_json("stress_gpu");
    v["sram_per_block_bytes"] = json!(512);
    v["alignment_bytes"] = json!(16);
    let p = write_json(dir.path(), "tiny_tiles.json", &v);
    let layers = vec![
        json!({"name": "proj", "kind": "matmul", "m": 64, "n": 64, "k": 64}),
        json!({"name": "probs", "kind": "softmax", "rows": 4, "cols": 4}),
    ];
    let m = model_file(dir.path(), "small.json", layers);
    let e = schedule_error(&["--spec", arg(&p), "--model", arg(&m)]);
    assert_eq!(
        e,
        "error: layer `probs` (softmax 4x4 f32): every state removed; `sram_capacity` removed the last one \
         (of 18 candidates: sram_capacity 15, working_memory 3)"
    );
}

#[test]
fn malformed_coefficient_files_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("trunc.json");
    std::fs::write(&p, "{\"compute_efficiency\": 0.75,").unwrap();
    let e = schedule_error(&["--coefficients", arg(&p)]);
    assert!(e.contains("trunc.json: invalid JSON: EOF while parsing"), "{e}");

    let p = write_json(dir.path(), "partial.json", &json!({"compute_efficiency": 0.75}));
    let e = schedule_error(&["--coefficients", arg(&p)]);
    assert!(e.contains("partial.json: missing field `memory_efficiency`"), "{e}");

    let p = write_json(dir.path(), "list.json", &json!([0.75]));
    let e = schedule_error(&["--coefficients", arg(&p)]);
    assert!(e.contains("list.json: expected a JSON object of coefficients, found an array"), "{e}");

    let mut c = coefficients();
    c["overlap_exponent"] = json!(-2.0);
    let p = write_json(
        dir.path(),
        "neg.json",
        &json!({"format_version": hwwfc_core::cost::COEFFICIENTS_VERSION, "coefficients": c}),
    );
    let e = schedule_error(&["--coefficients", arg(&p)]);
    assert!(e.contains("neg.json: field `coefficients.overlap_exponent`: must be a positive, finite number"), "{e}");

    let next = hwwfc_core::cost::COEFFICIENTS_VERSION + 1;
    let p = write_json(dir.path(), "next.json", &json!({"format_version": next, "coefficients": coefficients()}));
    let e = schedule_error(&["--coefficients", arg(&p)]);
    assert!(e.contains(&format!("next.json: field `format_version`: version {next} is not supported")), "{e}");

    let mut c = coefficients();
    c["fudge"] = json!(1.0);
    let p = write_json(dir.path(), "extra.json", &c);
    let e = schedule_error(&["--coefficients", arg(&p)]);
    assert!(e.contains("extra.json: unknown field `fudge`"), "{e}");
}

fn coefficients() -> Value {
    let names = hwwfc_core::cost::COEFFICIENT_NAMES;
    Value::Object(names.iter().map(|n| (n.to_string(), json!(0.5))).collect())
}

#[test]
fn unwritable_dump_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("no/such/dir/problem.json");
    let e = schedule_error(&["--dump-problem", arg(&target)]);
    assert!(e.contains("cannot write") && e.contains("problem.json"), "{e}");
}
