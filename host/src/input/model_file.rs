//! Models: the built-in ones of [`hwwfc_core::models`], and model files.
//!
//! # Model file format
//!
//! ```json
//! {
//!   "name": "my-model",
//!   "layers": [
//!     {"name": "qkv", "kind": "matmul", "m": 512, "n": 1536, "k": 512, "batch": 1, "dtype": "f16"},
//!     {"name": "sm", "kind": "softmax", "rows": 512, "cols": 512, "dtype": "f32"}
//!   ]
//! }
//! ```
//!
//! A DAG names each layer's inputs:
//!
//! ```json
//! {"layers": [
//!   {"name": "q", "kind": "matmul", "m": 512, "n": 512, "k": 512, "inputs": []},
//!   {"name": "k", "kind": "matmul", "m": 512, "n": 512, "k": 512, "inputs": []},
//!   {"name": "scores", "kind": "matmul", "m": 512, "n": 512, "k": 64, "batch": 8,
//!    "inputs": ["q", "k"], "transpose_b": true}
//! ]}
//! ```
//!
//! - `name` (optional, defaults to the file's stem): the model's name.
//! - `layers` (required): the layers in execution order. At most
//!   [`hwwfc_core::HOST_MAX_LAYERS`] layers.
//! - `inputs` (optional, per layer): the names of the earlier layers whose
//!   outputs the layer reads, at most [`hwwfc_core::graph::MAX_INPUTS`],
//!   each once; `[]` when it reads only the model's input. Without it a
//!   layer reads the layer before it (the first, the model's input), so a
//!   file without `inputs` is a chain.
//! - every layer has a `name` (unique, at most
//!   [`hwwfc_core::layer::LAYER_NAME_CAPACITY`] bytes) and a `kind`:
//!   - `matmul`: `batch` independent products `C[m,n] = A[m,k] B[k,n]`;
//!     fields `m`, `n`, `k` (required), `batch` (default 1), `dtype`
//!     (`f16`, `bf16` or `f32`; default `f16`), `transpose_b` (default
//!     false: `B` is the transpose of its last input's output, as the
//!     scores `Q K^T` read K; with one or two inputs, the first is `A`);
//!   - `softmax`: a softmax over each row of a `rows x cols` matrix;
//!     fields `rows`, `cols` (required), `dtype` (default `f32`);
//!   - `add` (`a + b`), `silu_mul` (`silu(a) * b`), `gelu`, `norm` (a row
//!     normalisation, RMSNorm or LayerNorm): elementwise layers over
//!     `rows x cols` tensors; fields `rows`, `cols` (required), `dtype`
//!     (default `f16`). The first input is `a`: where it is a matmul of the
//!     same shape and element type that no other layer reads, the layer
//!     may run in that matmul's epilogue (not `norm`).
//!
//! Sizes are integers of at least 1, and no tensor of a layer may exceed
//! 4 GiB. Unknown fields and unknown kinds are rejected; every error names
//! the file, the layer and the field.

use super::json::{self, FieldError};
use super::spec_file::looks_like_path;
use anyhow::{anyhow, bail, Result};
use hwwfc_core::graph::{GraphError, MAX_INPUTS};
use hwwfc_core::layer::{ShapeError, LAYER_NAME_CAPACITY};
use hwwfc_core::models::{self, ModelError};
use hwwfc_core::{DType, ElementwiseKind, Graph, Op, HOST_MAX_LAYERS};
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The graph type of the host build.
pub type HostGraph = Graph<HOST_MAX_LAYERS>;

/// The file format, for the command's `--help`.
pub fn format_help() -> String {
    format!(
        "\
Model file format (--model FILE):
  {{\"name\": \"my-model\",
   \"layers\": [
     {{\"name\": \"qkv\", \"kind\": \"matmul\", \"m\": 512, \"n\": 1536, \"k\": 512, \"batch\": 1, \"dtype\": \"f16\"}},
     {{\"name\": \"sm\", \"kind\": \"softmax\", \"rows\": 512, \"cols\": 512, \"dtype\": \"f32\"}}]}}
  Layers run in order (at most {HOST_MAX_LAYERS}), each fed by the one before unless it
  names its inputs: \"inputs\": [\"q\", \"k\"] (earlier layers, at most {MAX_INPUTS}; [] for
  the model's input), which makes the model a DAG. The model's `name` defaults to the
  file's stem; layer names are unique, at most {LAYER_NAME_CAPACITY} bytes.
  matmul: m, n, k required; batch defaults to 1; dtype (f16, bf16, f32) to f16;
  \"transpose_b\": true when B is the transpose of the last input's output (Q K^T).
  softmax: rows, cols required; dtype defaults to f32.
  add, silu_mul, gelu, norm (elementwise; norm: RMSNorm or LayerNorm): rows, cols
  required; dtype defaults to f16. The first input is the one an epilogue may fuse.
  Sizes are at least 1 and no tensor may exceed 4 GiB; unknown fields and
  kinds are rejected."
    )
}

/// Where a model came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A built-in model and its sequence length.
    BuiltIn {
        /// Its name.
        name: &'static str,
        /// The sequence length used.
        seq: u32,
    },
    /// A model file.
    File(PathBuf),
}

/// A model ready to schedule.
#[derive(Debug, Clone)]
pub struct LoadedModel {
    /// The model's name.
    pub name: String,
    /// Its layers.
    pub graph: HostGraph,
    /// Where it came from.
    pub origin: Origin,
}

/// Loads `arg`: a built-in model name or a model file; `seq` overrides a
/// built-in model's sequence length.
pub fn load(arg: &str, seq: Option<u32>) -> Result<LoadedModel> {
    if !looks_like_path(arg) {
        if let Some(index) = models::NAMES.iter().position(|n| *n == arg) {
            return builtin(index, seq);
        }
        if !Path::new(arg).is_file() {
            bail!(
                "unknown model `{arg}`: no such file, and no built-in model has this name (built-in models: {})",
                models::NAMES.join(", ")
            );
        }
    }
    let path = PathBuf::from(arg);
    if seq.is_some() {
        bail!("--seq applies to the built-in models only, not to the model file {}", path.display());
    }
    let value = json::read(&path)?;
    from_json(value, &path)
}

fn builtin(index: usize, seq: Option<u32>) -> Result<LoadedModel> {
    let name = models::NAMES.get(index).copied().ok_or_else(|| anyhow!("no built-in model {index}"))?;
    let seq = seq.or_else(|| models::DEFAULT_SEQ.get(index).copied()).unwrap_or(512);
    let graph = models::builtin::<HOST_MAX_LAYERS>(name, Some(seq)).map_err(|e| match e {
        ModelError::Unknown => anyhow!("unknown model `{name}`"),
        ModelError::Graph(GraphError::Shape { layer, error }) => {
            // Layer names do not depend on the sequence length: take the
            // name from the model at its default length.
            let label = models::builtin::<HOST_MAX_LAYERS>(name, None)
                .ok()
                .and_then(|g| g.layer(layer).map(|l| format!("layer {layer} (`{}`)", l.name)))
                .unwrap_or_else(|| format!("layer {layer}"));
            anyhow!("model `{name}` with --seq {seq}: {label}: {error}")
        }
        ModelError::Graph(e) => anyhow!("model `{name}` with --seq {seq}: {e}"),
    })?;
    Ok(LoadedModel { name: name.to_string(), graph, origin: Origin::BuiltIn { name, seq } })
}

fn one() -> u32 {
    1
}

fn f16() -> DType {
    DType::F16
}

fn f32() -> DType {
    DType::F32
}

/// The shape fields of a `matmul` layer.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MatMulFields {
    m: u32,
    n: u32,
    k: u32,
    #[serde(default = "one")]
    batch: u32,
    #[serde(default = "f16")]
    dtype: DType,
    #[serde(default)]
    transpose_b: bool,
}

/// The shape fields of a `softmax` layer.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SoftmaxFields {
    rows: u32,
    cols: u32,
    #[serde(default = "f32")]
    dtype: DType,
}

/// The shape fields of an elementwise layer.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ElementwiseFields {
    rows: u32,
    cols: u32,
    #[serde(default = "f16")]
    dtype: DType,
}

/// The kinds a layer may have, for errors.
const KINDS: &str = "`matmul`, `softmax`, `add`, `silu_mul`, `gelu` or `norm`";

/// Converts a parsed model file; `path` names it in errors.
pub fn from_json(value: Value, path: &Path) -> Result<LoadedModel> {
    let file = path.display();
    let Value::Object(mut top) = value else {
        bail!("{file}: expected a JSON object with `name` and `layers`, found {}", json::type_name(&value));
    };
    let name = json::take_string(&mut top, "name").map_err(|e| anyhow!("{file}: {e}"))?;
    let name = name.unwrap_or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default());
    let layers = match top.remove("layers") {
        None => bail!("{file}: missing field `layers`"),
        Some(Value::Array(layers)) => layers,
        Some(other) => bail!("{file}: field `layers`: expected an array of layers, found {}", json::type_name(&other)),
    };
    if let Some(key) = top.keys().next() {
        bail!("{file}: unknown field `{key}`, expected `name` or `layers`");
    }
    if layers.len() > HOST_MAX_LAYERS {
        bail!("{file}: {} layers: {}", layers.len(), GraphError::TooManyLayers { capacity: HOST_MAX_LAYERS });
    }
    let mut graph = HostGraph::new();
    let mut names: Vec<String> = Vec::new();
    for (i, layer) in layers.into_iter().enumerate() {
        let ParsedLayer { name: layer_name, op, inputs, transpose_b } =
            parse_layer(i, layer).map_err(|e| anyhow!("{file}: {e}"))?;
        let label = format!("layer {i} (`{layer_name}`)");
        if let Some(error) = overflowing_shape(&op) {
            bail!("{file}: {label}: {error}");
        }
        let pushed = match &inputs {
            None => graph.push(&layer_name, op),
            Some(list) => {
                let indices =
                    input_indices(list, &names).map_err(|e| anyhow!("{file}: {label}: field `inputs`: {e}"))?;
                graph.push_with_inputs(&layer_name, op, &indices)
            }
        };
        pushed.map_err(|e| match e {
            GraphError::Shape { error, .. } => anyhow!("{file}: {label}: {error}"),
            GraphError::NameTooLong { .. } => {
                anyhow!("{file}: {label}: field `name`: longer than {LAYER_NAME_CAPACITY} bytes")
            }
            GraphError::DuplicateName { .. } => {
                let first = names.iter().position(|n| *n == layer_name).unwrap_or(0);
                anyhow!("{file}: {label}: field `name`: already the name of layer {first}")
            }
            GraphError::TooManyInputs { .. } => {
                anyhow!("{file}: {label}: field `inputs`: more than {MAX_INPUTS} inputs")
            }
            other => anyhow!("{file}: {other}"),
        })?;
        if transpose_b {
            graph.transpose_b(i).map_err(|_| {
                anyhow!(
                    "{file}: {label}: field `transpose_b`: only a matmul with one or two inputs reads its B transposed"
                )
            })?;
        }
        names.push(layer_name);
    }
    graph.validate().map_err(|e| anyhow!("{file}: {e}"))?;
    Ok(LoadedModel { name, graph, origin: Origin::File(path.to_path_buf()) })
}

/// The indices of the layers `list` names among the earlier layers
/// `names`, each named once.
fn input_indices(list: &[String], names: &[String]) -> Result<Vec<usize>, String> {
    let mut indices = Vec::new();
    for name in list {
        let Some(i) = names.iter().position(|n| n == name) else {
            return Err(format!("`{name}` is not an earlier layer"));
        };
        if indices.contains(&i) {
            return Err(format!("`{name}` named twice"));
        }
        indices.push(i);
    }
    Ok(indices)
}

/// A layer as its file gives it.
struct ParsedLayer {
    name: String,
    op: Op,
    /// The names of its inputs, if it names them.
    inputs: Option<Vec<String>>,
    /// Whether a matmul reads its `B` transposed.
    transpose_b: bool,
}

/// Parses layer `i` (its name, its operation, its inputs if it names
/// them); the error is prefixed with the layer.
fn parse_layer(i: usize, value: Value) -> Result<ParsedLayer, String> {
    let Value::Object(mut object) = value else {
        return Err(format!("layer {i}: expected an object, found {}", json::type_name(&value)));
    };
    let name = json::take_string(&mut object, "name").map_err(|e| format!("layer {i}: {e}"))?;
    let Some(name) = name else {
        return Err(format!("layer {i}: missing field `name`"));
    };
    let label = format!("layer {i} (`{name}`)");
    if name.is_empty() {
        return Err(format!("{label}: field `name`: must not be empty"));
    }
    let kind = json::take_string(&mut object, "kind").map_err(|e| format!("{label}: {e}"))?;
    let Some(kind) = kind else {
        return Err(format!("{label}: missing field `kind` ({KINDS})"));
    };
    let inputs = match object.remove("inputs") {
        None => None,
        Some(Value::Array(items)) => Some(
            items
                .into_iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s),
                    other => {
                        Err(format!("{label}: field `inputs`: expected layer names, found {}", json::type_name(&other)))
                    }
                })
                .collect::<Result<Vec<_>, _>>()?,
        ),
        Some(other) => {
            return Err(format!(
                "{label}: field `inputs`: expected an array of layer names, found {}",
                json::type_name(&other)
            ))
        }
    };
    let fields = Value::Object(object);
    let mut transpose_b = false;
    let op = match kind.as_str() {
        "matmul" => {
            let f: MatMulFields = json::from_value(fields).map_err(|e: FieldError| format!("{label}: {e}"))?;
            transpose_b = f.transpose_b;
            Op::MatMul { m: f.m, n: f.n, k: f.k, batch: f.batch, dtype: f.dtype }
        }
        "softmax" => {
            let f: SoftmaxFields = json::from_value(fields).map_err(|e: FieldError| format!("{label}: {e}"))?;
            Op::Softmax { rows: f.rows, cols: f.cols, dtype: f.dtype }
        }
        other => match ElementwiseKind::ALL.iter().find(|k| k.name() == other) {
            Some(&kind) => {
                let f: ElementwiseFields = json::from_value(fields).map_err(|e: FieldError| format!("{label}: {e}"))?;
                Op::Elementwise { kind, rows: f.rows, cols: f.cols, dtype: f.dtype }
            }
            None => return Err(format!("{label}: field `kind`: unknown kind `{other}`, expected {KINDS}")),
        },
    };
    Ok(ParsedLayer { name, op, inputs, transpose_b })
}

/// A shape whose element counts overflow `u64`: the core's shape check
/// multiplies three `u32` dimensions in `u64` and would overflow on it, so
/// such a shape is rejected here with the core's own error.
fn overflowing_shape(op: &Op) -> Option<ShapeError> {
    let Op::MatMul { m, n, k, batch, .. } = *op else {
        return None;
    };
    let (m, n, k, b) = (m as u128, n as u128, k as u128, batch as u128);
    let limit = u64::MAX as u128;
    let too_large = b * m * k > limit || b * k * n > limit || b * m * n * 2 > limit;
    too_large.then_some(ShapeError::TooLarge)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn error_of(value: Value) -> String {
        from_json(value, Path::new("m.json")).unwrap_err().to_string()
    }

    #[test]
    fn parses_defaults() {
        let v = json!({"layers": [
            {"name": "a", "kind": "matmul", "m": 4, "n": 8, "k": 16},
            {"name": "b", "kind": "softmax", "rows": 4, "cols": 8}
        ]});
        let m = from_json(v, Path::new("dir/tiny.json")).unwrap();
        assert_eq!(m.name, "tiny");
        let layers = m.graph.layers();
        assert_eq!(layers[0].op, Op::MatMul { m: 4, n: 8, k: 16, batch: 1, dtype: DType::F16 });
        assert_eq!(layers[1].op, Op::Softmax { rows: 4, cols: 8, dtype: DType::F32 });
    }

    #[test]
    fn inputs_make_a_dag_and_their_absence_a_chain() {
        let mm = |name: &str, inputs: Value| json!({"name": name, "kind": "matmul", "m": 8, "n": 8, "k": 8, "inputs": inputs});
        let v = json!({"layers": [
            mm("q", json!([])), mm("k", json!([])), mm("s", json!(["q", "k"])),
            {"name": "t", "kind": "softmax", "rows": 8, "cols": 8}
        ]});
        let g = from_json(v, Path::new("d.json")).unwrap().graph;
        assert!(!g.is_chain());
        assert_eq!((g.inputs(0), g.inputs(1), g.inputs(2), g.inputs(3)), (&[][..], &[][..], &[0, 1][..], &[2][..]));
        let chain = json!({"layers": [{"name": "a", "kind": "softmax", "rows": 8, "cols": 8}, mm("b", json!(["a"]))]});
        assert!(from_json(chain, Path::new("c.json")).unwrap().graph.is_chain());
    }

    #[test]
    fn a_matmul_may_read_its_b_transposed() {
        let mm = |name: &str, inputs: Value| json!({"name": name, "kind": "matmul", "m": 8, "n": 8, "k": 8, "inputs": inputs});
        let mut scores = mm("s", json!(["q", "k"]));
        scores["transpose_b"] = json!(true);
        let g = from_json(json!({"layers": [mm("q", json!([])), mm("k", json!([])), scores]}), Path::new("d.json"))
            .unwrap()
            .graph;
        assert_eq!(g.layers().iter().map(|l| l.transposed_b).collect::<Vec<_>>(), [false, false, true]);
        // Not on a matmul of no inputs, and not on a softmax.
        let mut lone = mm("a", json!([]));
        lone["transpose_b"] = json!(true);
        let e = error_of(json!({ "layers": [lone] }));
        assert_eq!(
            e,
            "m.json: layer 0 (`a`): field `transpose_b`: only a matmul with one or two inputs reads its B transposed"
        );
        let e =
            error_of(json!({"layers": [{"name": "t", "kind": "softmax", "rows": 8, "cols": 8, "transpose_b": true}]}));
        assert!(e.contains("unknown field `transpose_b`"), "{e}");
    }

    #[test]
    fn bad_inputs_are_named() {
        let mm = |name: &str, inputs: Value| json!({"name": name, "kind": "matmul", "m": 8, "n": 8, "k": 8, "inputs": inputs});
        let e = error_of(json!({"layers": [mm("a", json!([])), mm("b", json!(["c"]))]}));
        assert_eq!(e, "m.json: layer 1 (`b`): field `inputs`: `c` is not an earlier layer");
        let e = error_of(json!({"layers": [mm("a", json!(["a"]))]}));
        assert_eq!(e, "m.json: layer 0 (`a`): field `inputs`: `a` is not an earlier layer");
        let e = error_of(json!({"layers": [mm("a", json!([])), mm("b", json!(["a", "a"]))]}));
        assert_eq!(e, "m.json: layer 1 (`b`): field `inputs`: `a` named twice");
        let e = error_of(json!({"layers": [mm("a", json!("a"))]}));
        assert_eq!(e, "m.json: layer 0 (`a`): field `inputs`: expected an array of layer names, found a string");
        let e = error_of(json!({"layers": [mm("a", json!([1]))]}));
        assert_eq!(e, "m.json: layer 0 (`a`): field `inputs`: expected layer names, found a number");
        let many: Vec<Value> = (0..6).map(|i| mm(&format!("l{i}"), json!([]))).collect();
        let mut layers = many.clone();
        layers.push(mm("join", json!(["l0", "l1", "l2", "l3", "l4"])));
        let e = error_of(json!({ "layers": layers }));
        assert_eq!(e, format!("m.json: layer 6 (`join`): field `inputs`: more than {MAX_INPUTS} inputs"));
    }

    #[test]
    fn errors_name_file_layer_and_field() {
        let e = error_of(json!({"layers": [{"name": "a", "kind": "matmul", "m": -1, "n": 1, "k": 1}]}));
        assert_eq!(e, "m.json: layer 0 (`a`): field `m`: invalid value: integer `-1`, expected u32");
        let e = error_of(json!({"layers": [{"name": "a", "kind": "conv"}]}));
        assert!(e.contains("layer 0 (`a`): field `kind`: unknown kind `conv`"), "{e}");
        let e = error_of(json!({"layers": [{"name": "a", "kind": "softmax", "rows": 1, "cols": 1, "m": 3}]}));
        assert!(e.contains("layer 0 (`a`): unknown field `m`"), "{e}");
        let e = error_of(json!({"layers": [{"name": "a", "kind": "softmax", "rows": 0, "cols": 1}]}));
        assert_eq!(e, "m.json: layer 0 (`a`): dimension `rows` must be at least 1");
        let big = u32::MAX;
        let e =
            error_of(json!({"layers": [{"name": "a", "kind": "matmul", "m": big, "n": big, "k": big, "batch": big}]}));
        assert_eq!(e, "m.json: layer 0 (`a`): a tensor of this layer exceeds 4 GiB");
        let e = error_of(json!({"layers": [
            {"name": "a", "kind": "softmax", "rows": 1, "cols": 1},
            {"name": "a", "kind": "softmax", "rows": 1, "cols": 1}
        ]}));
        assert_eq!(e, "m.json: layer 1 (`a`): field `name`: already the name of layer 0");
        let e = error_of(json!({"layers": []}));
        assert_eq!(e, "m.json: the model has no layers");
        let e = error_of(json!({"layers": [], "extra": 1}));
        assert!(e.contains("unknown field `extra`"), "{e}");
    }

    #[test]
    fn builtins_and_seq() {
        let m = load("attention", Some(256)).unwrap();
        assert_eq!(m.origin, Origin::BuiltIn { name: "attention", seq: 256 });
        assert_eq!(m.graph.len(), 6);
        let e = load("llama3-8b-block", Some(100_000)).unwrap_err().to_string();
        assert_eq!(
            e,
            "model `llama3-8b-block` with --seq 100000: layer 1 (`attn_scores`): a tensor of this layer exceeds 4 GiB"
        );
        let e = load("gpt3", None).unwrap_err().to_string();
        assert!(
            e.contains("attention, gpt2-block, llama3-8b-block, llama3-8b-attention, llama3-8b-dag, llama3-8b-graph"),
            "{e}"
        );
    }
}
