//! The check of the host's input parsing: spec files, model files,
//! coefficient files and workloads files, all from the same bytes, through
//! the host library's own parsers (`hwwfc::input`).

use hwwfc::input::workload_file as workload;
use hwwfc::input::{coefficients_file, json, model_file, spec_file};
use std::path::{Path, PathBuf};

/// Parses `data` as each kind of input file: none may panic; every error
/// names the file it is about (the message starts with its name); what is
/// accepted is valid (a spec that validates, a model whose layers all
/// validate within the host's capacity, coefficients that validate,
/// workloads with unique names and valid shapes), and a spec or model
/// written back as JSON reads back the same.
pub fn host_inputs(data: &[u8]) {
    // The files are read with `read_to_string`: bytes that are not UTF-8
    // never reach a parser.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    check_spec(text);
    let value = json::parse(text, "input.json");
    match &value {
        Ok(_) => {}
        Err(e) => assert!(format!("{e:#}").starts_with("input.json: invalid JSON"), "{e:#}"),
    }
    if let Ok(value) = value {
        check_model(value.clone());
        check_coefficients(value);
    }
    check_workloads(text);
}

fn names_the_file(e: &anyhow::Error, file: &str) {
    let message = format!("{e:#}");
    assert!(message.starts_with(&format!("{file}: ")), "error does not name {file}: {message}");
}

/// Whether two JSON values are equal, numbers within a relative 1e-6: an
/// `f32` written in its shortest form is read back through an `f64`, which
/// may round it to a neighbour.
fn close(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => (x - y).abs() <= 1e-6 * x.abs().max(y.abs()),
            _ => x == y,
        },
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| close(v, w)))
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(v, w)| close(v, w)),
        _ => a == b,
    }
}

fn check_spec(text: &str) {
    let origin = spec_file::Origin::File(PathBuf::from("spec.json"));
    match spec_file::parse(text, origin.clone()) {
        Ok(loaded) => {
            assert_eq!(loaded.spec.validate(), Ok(()));
            assert!(!loaded.source.trim().is_empty());
            // Written back (as the specs are kept), it reads back the same.
            let mut v = serde_json::to_value(&loaded.spec).expect("a spec serializes");
            v["source"] = loaded.source.clone().into();
            if let Some(notes) = &loaded.notes {
                v["notes"] = notes.clone().into();
            }
            let again = spec_file::from_json(v, origin).expect("a spec written back reads back");
            let (a, b) = (serde_json::to_value(&again.spec), serde_json::to_value(&loaded.spec));
            assert!(
                close(&a.expect("serializes"), &b.expect("serializes")),
                "{:?} read back as {:?}",
                loaded.spec,
                again.spec
            );
        }
        Err(e) => names_the_file(&e, "spec.json"),
    }
}

fn check_model(value: serde_json::Value) {
    let path = Path::new("model.json");
    match model_file::from_json(value, path) {
        Ok(m) => {
            assert_eq!(m.graph.validate(), Ok(()));
            assert!(m.graph.len() <= hwwfc_core::HOST_MAX_LAYERS);
            for layer in m.graph.layers() {
                assert_eq!(layer.op.validate(), Ok(()));
            }
            // Written back in the model file format, it reads back the same.
            let layers: Vec<serde_json::Value> = m
                .graph
                .layers()
                .iter()
                .map(|l| match l.op {
                    hwwfc_core::Op::MatMul { m, n, k, batch, dtype } => serde_json::json!({
                        "name": l.name.as_str(), "kind": "matmul", "m": m, "n": n, "k": k, "batch": batch, "dtype": dtype,
                    }),
                    hwwfc_core::Op::Softmax { rows, cols, dtype } => serde_json::json!({
                        "name": l.name.as_str(), "kind": "softmax", "rows": rows, "cols": cols, "dtype": dtype,
                    }),
                    hwwfc_core::Op::Elementwise { kind, rows, cols, dtype } => serde_json::json!({
                        "name": l.name.as_str(), "kind": kind.name(), "rows": rows, "cols": cols, "dtype": dtype,
                    }),
                })
                .collect();
            let again = model_file::from_json(serde_json::json!({"name": m.name, "layers": layers}), path)
                .expect("a model written back reads back");
            assert_eq!(again.graph, m.graph);
        }
        Err(e) => names_the_file(&e, "model.json"),
    }
}

fn check_coefficients(value: serde_json::Value) {
    match coefficients_file::from_json(value, Path::new("coefficients.json")) {
        Ok(c) => assert_eq!(c.coefficients.validate(), Ok(())),
        Err(e) => names_the_file(&e, "coefficients.json"),
    }
}

fn check_workloads(text: &str) {
    if let Ok(list) = workload::parse(text) {
        assert!(!list.is_empty());
        for (i, w) in list.iter().enumerate() {
            assert!(!w.name().is_empty());
            assert!(list.iter().take(i).all(|o| o.name() != w.name()), "name {} twice", w.name());
            if let Some(op) = w.op() {
                assert_eq!(op.validate(), Ok(()), "{w:?}");
            }
            // Every figure of a workload is finite.
            assert!(w.flops().is_finite() && w.min_bytes().is_finite(), "{w:?}");
        }
    }
}
