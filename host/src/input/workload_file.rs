//! The workloads file: a JSON list of shapes to profile.
//!
//! ```json
//! [
//!   {"name": "mm_llama_4096", "kind": "matmul", "m": 4096, "n": 4096, "k": 4096},
//!   {"name": "gpt2_attn_scores", "kind": "matmul", "m": 1024, "n": 1024, "k": 64, "batch": 12},
//!   {"name": "sm_attn_512x512", "kind": "softmax", "rows": 512, "cols": 512},
//!   {"name": "gate_silu", "kind": "matmul", "m": 2048, "n": 14336, "k": 4096, "epilogue": "silu_mul"},
//!   {"name": "residual", "kind": "elementwise", "op": "add", "rows": 2048, "cols": 4096}
//! ]
//! ```
//!
//! Matmuls are fp16 with fp32 accumulation; softmaxes are fp32;
//! elementwise layers (`op`: `add`, `silu_mul`, `gelu`, or `norm`, an
//! RMSNorm) fp16 with fp32 arithmetic. A matmul's `epilogue` (`add`,
//! `silu_mul` or `gelu`) applies that operation to its output in its
//! epilogue, the second operand (the residual, the up projection) read
//! there: the product and the elementwise layer after it as one kernel.
//! A matmul's `b_layout` says how `B` is stored: `n_major` (`k x n`,
//! row-major, the default) or `k_major` (its `n x k` transpose, row-major,
//! as PyTorch stores a Linear layer's weight and attention reads `K` in
//! `Q K^T`): the Hopper family reads it as it is, the `mma.sync` family
//! transposes it first, timed with the product.
//! `batch` (independent products, as attention heads) defaults to 1. Names must be
//! unique; every size at least 1, and every tensor (and every copy) under 4 GiB.
//!
//! A workload may carry labels of where it comes from, which the measuring
//! ignores and the evaluation groups by (`hwwfc report --hold-out family`):
//! `"family"`, the model family (such as `llama3`), and `"model"`, the
//! model configuration (such as `llama3-8b`). Records keep only the shape.

use crate::family::BLayout;
use anyhow::{bail, Context, Result};
use hwwfc_core::{DType, ElementwiseKind, Op};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One shape to profile.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Workload {
    /// `batch` products of an `m x k` by a `k x n` fp16 matrix.
    MatMul {
        /// Unique name.
        name: String,
        /// Rows of the output.
        m: u32,
        /// Columns of the output.
        n: u32,
        /// Reduction length.
        k: u32,
        /// Independent products.
        #[serde(default = "one", skip_serializing_if = "is_one")]
        batch: u32,
        /// The elementwise operation fused into the epilogue, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        epilogue: Option<ElementwiseKind>,
        /// How `B` is stored: `n_major` (`k x n`, the default) or
        /// `k_major` (its `n x k` transpose, row-major).
        #[serde(default, skip_serializing_if = "BLayout::is_n_major")]
        b_layout: BLayout,
    },
    /// A row softmax of a `rows x cols` fp32 matrix.
    Softmax {
        /// Unique name.
        name: String,
        /// Rows.
        rows: u32,
        /// Columns.
        cols: u32,
    },
    /// An elementwise layer over `rows x cols` fp16 tensors.
    Elementwise {
        /// Unique name.
        name: String,
        /// What it computes.
        op: ElementwiseKind,
        /// Rows.
        rows: u32,
        /// Columns.
        cols: u32,
    },
    /// A transpose of a `rows x cols` fp16 matrix: the cost of a layout
    /// change between layers.
    Transpose {
        /// Unique name.
        name: String,
        /// Rows.
        rows: u32,
        /// Columns.
        cols: u32,
    },
    /// A device-to-device copy of `bytes` bytes: the bandwidth anchor.
    Copy {
        /// Unique name.
        name: String,
        /// Bytes copied.
        bytes: u64,
    },
}

fn one() -> u32 {
    1
}

fn is_one(v: &u32) -> bool {
    *v == 1
}

impl Workload {
    /// The workload's name.
    pub fn name(&self) -> &str {
        match self {
            Workload::MatMul { name, .. }
            | Workload::Softmax { name, .. }
            | Workload::Elementwise { name, .. }
            | Workload::Transpose { name, .. }
            | Workload::Copy { name, .. } => name,
        }
    }

    /// The core's operator for this workload (none for the transpose and
    /// copy anchors, which the core does not schedule).
    pub fn op(&self) -> Option<Op> {
        match *self {
            Workload::MatMul { m, n, k, batch, .. } => Some(Op::MatMul { m, n, k, batch, dtype: DType::F16 }),
            Workload::Softmax { rows, cols, .. } => Some(Op::Softmax { rows, cols, dtype: DType::F32 }),
            Workload::Elementwise { op, rows, cols, .. } => {
                Some(Op::Elementwise { kind: op, rows, cols, dtype: DType::F16 })
            }
            Workload::Transpose { .. } | Workload::Copy { .. } => None,
        }
    }

    /// The elementwise operation the kernel computes: an elementwise
    /// layer's own, a matmul's fused epilogue, or none.
    pub fn elementwise(&self) -> Option<ElementwiseKind> {
        match *self {
            Workload::MatMul { epilogue, .. } => epilogue,
            Workload::Elementwise { op, .. } => Some(op),
            Workload::Softmax { .. } | Workload::Transpose { .. } | Workload::Copy { .. } => None,
        }
    }

    /// How a matmul's `B` is stored (the default for the others).
    pub fn b_layout(&self) -> BLayout {
        match *self {
            Workload::MatMul { b_layout, .. } => b_layout,
            _ => BLayout::NMajor,
        }
    }

    /// A short shape description, such as `4096x4096x4096` or `12x1024x1024x64`.
    pub fn shape(&self) -> String {
        match *self {
            Workload::MatMul { m, n, k, batch: 1, .. } => format!("{m}x{n}x{k}"),
            Workload::MatMul { m, n, k, batch, .. } => format!("{batch}x{m}x{n}x{k}"),
            Workload::Softmax { rows, cols, .. }
            | Workload::Elementwise { rows, cols, .. }
            | Workload::Transpose { rows, cols, .. } => format!("{rows}x{cols}"),
            Workload::Copy { bytes, .. } => format!("{bytes} B"),
        }
    }

    /// Floating-point operations of one run.
    pub fn flops(&self) -> f64 {
        self.op().map_or(0.0, |op| op.flops())
    }

    /// The fewest bytes one run must move through device memory (each
    /// input read once, the output written once).
    pub fn min_bytes(&self) -> f64 {
        match *self {
            Workload::MatMul { m, n, k, batch, epilogue, .. } => {
                let outputs = 1 + epilogue.map_or(0, |e| e.operands() - 1);
                2.0 * batch as f64 * (m as f64 * k as f64 + k as f64 * n as f64 + outputs as f64 * m as f64 * n as f64)
            }
            Workload::Elementwise { op, rows, cols, .. } => {
                2.0 * (op.operands() as f64 + 1.0) * rows as f64 * cols as f64
            }
            Workload::Softmax { rows, cols, .. } => 8.0 * rows as f64 * cols as f64,
            Workload::Transpose { rows, cols, .. } => 4.0 * rows as f64 * cols as f64,
            Workload::Copy { bytes, .. } => 2.0 * bytes as f64,
        }
    }
}

impl Workload {
    /// Checks the shape: every size at least 1, and no tensor (nor a copy)
    /// over 4 GiB, so that every byte count fits a `u32` and the buffers
    /// can be sized without overflow.
    pub fn check(&self) -> Result<(), String> {
        if let Workload::MatMul { epilogue: Some(e), .. } = self {
            if e.reduces_rows() {
                return Err(format!("a `{}` reduces whole rows and cannot run in a matmul's epilogue", e.name()));
            }
        }
        match (self, self.op()) {
            (_, Some(op)) => op.validate().map_err(|e| e.to_string()),
            (Workload::Transpose { rows, cols, .. }, None) => {
                if *rows == 0 || *cols == 0 {
                    return Err("dimension must be at least 1".into());
                }
                if (*rows as u64) * (*cols as u64) * 2 > u32::MAX as u64 {
                    return Err("a tensor of this layer exceeds 4 GiB".into());
                }
                Ok(())
            }
            (Workload::Copy { bytes, .. }, None) if *bytes == 0 => Err("bytes must be at least 1".into()),
            (Workload::Copy { bytes, .. }, None) if *bytes > u32::MAX as u64 => {
                Err(format!("{bytes} bytes: a copy may not exceed 4 GiB"))
            }
            _ => Ok(()),
        }
    }
}

/// Where a workload comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Labels {
    /// The model family, such as `llama3`.
    pub family: Option<String>,
    /// The model configuration, such as `llama3-8b`.
    pub model: Option<String>,
}

/// A workload of the file with its labels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Labelled {
    /// The shape to measure.
    pub workload: Workload,
    /// Where it comes from.
    pub labels: Labels,
}

/// Reads and checks a workloads file.
pub fn load(path: &Path) -> Result<Vec<Workload>> {
    Ok(load_labelled(path)?.into_iter().map(|l| l.workload).collect())
}

/// Reads and checks a workloads file, keeping each workload's labels.
pub fn load_labelled(path: &Path) -> Result<Vec<Labelled>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
    parse_labelled(&text).with_context(|| format!("{}", path.display()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MatMulFields {
    name: String,
    m: u32,
    n: u32,
    k: u32,
    #[serde(default = "one")]
    batch: u32,
    #[serde(default)]
    epilogue: Option<ElementwiseKind>,
    #[serde(default)]
    b_layout: BLayout,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ElementwiseFields {
    name: String,
    op: ElementwiseKind,
    rows: u32,
    cols: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MatrixFields {
    name: String,
    rows: u32,
    cols: u32,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CopyFields {
    name: String,
    bytes: u64,
}

fn fields<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            anyhow::anyhow!("{inner}")
        } else {
            anyhow::anyhow!("field `{path}`: {inner}")
        }
    })
}

/// Takes the optional string field `key` out of `map`.
fn take_label(map: &mut serde_json::Map<String, serde_json::Value>, key: &str) -> Result<Option<String>> {
    match map.remove(key) {
        None => Ok(None),
        Some(serde_json::Value::String(s)) if !s.is_empty() => Ok(Some(s)),
        Some(serde_json::Value::String(_)) => bail!("field `{key}`: empty"),
        Some(_) => bail!("field `{key}`: not a string"),
    }
}

fn parse_one(value: serde_json::Value) -> Result<Labelled> {
    let serde_json::Value::Object(mut map) = value else { bail!("not an object") };
    let labels = Labels { family: take_label(&mut map, "family")?, model: take_label(&mut map, "model")? };
    let kind = match map.remove("kind") {
        Some(serde_json::Value::String(k)) => k,
        Some(_) => bail!("field `kind`: not a string"),
        None => bail!("missing field `kind`"),
    };
    let rest = serde_json::Value::Object(map);
    let workload = match kind.as_str() {
        "matmul" => {
            let f: MatMulFields = fields(rest)?;
            Workload::MatMul {
                name: f.name,
                m: f.m,
                n: f.n,
                k: f.k,
                batch: f.batch,
                epilogue: f.epilogue,
                b_layout: f.b_layout,
            }
        }
        "elementwise" => {
            let f: ElementwiseFields = fields(rest)?;
            Workload::Elementwise { name: f.name, op: f.op, rows: f.rows, cols: f.cols }
        }
        "softmax" => {
            let f: MatrixFields = fields(rest)?;
            Workload::Softmax { name: f.name, rows: f.rows, cols: f.cols }
        }
        "transpose" => {
            let f: MatrixFields = fields(rest)?;
            Workload::Transpose { name: f.name, rows: f.rows, cols: f.cols }
        }
        "copy" => {
            let f: CopyFields = fields(rest)?;
            Workload::Copy { name: f.name, bytes: f.bytes }
        }
        other => bail!("unknown kind `{other}` (expected matmul, softmax, elementwise, transpose or copy)"),
    };
    Ok(Labelled { workload, labels })
}

/// Parses and checks the text of a workloads file.
pub fn parse(text: &str) -> Result<Vec<Workload>> {
    Ok(parse_labelled(text)?.into_iter().map(|l| l.workload).collect())
}

/// Parses and checks the text of a workloads file, keeping each
/// workload's labels.
pub fn parse_labelled(text: &str) -> Result<Vec<Labelled>> {
    let values: Vec<serde_json::Value> =
        serde_json::from_str(text).map_err(|e| anyhow::anyhow!("not a JSON list of workloads: {e}"))?;
    let mut list = Vec::with_capacity(values.len());
    for (i, v) in values.into_iter().enumerate() {
        list.push(parse_one(v).with_context(|| format!("workload {i}"))?);
    }
    if list.is_empty() {
        bail!("no workloads");
    }
    for (i, w) in list.iter().map(|l| &l.workload).enumerate() {
        if w.name().is_empty() {
            bail!("workload {i}: empty name");
        }
        if list.iter().take(i).any(|o| o.workload.name() == w.name()) {
            bail!("workload {i}: name `{}` used twice", w.name());
        }
        w.check().map_err(|e| anyhow::anyhow!("workload `{}`: {e}", w.name()))?;
    }
    Ok(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_kinds_and_defaults_batch() {
        let w = parse(r#"[{"name":"a","kind":"matmul","m":1,"n":50257,"k":768},{"name":"b","kind":"softmax","rows":3,"cols":77}]"#)
            .unwrap();
        assert_eq!(
            w[0],
            Workload::MatMul {
                name: "a".into(),
                m: 1,
                n: 50257,
                k: 768,
                batch: 1,
                epilogue: None,
                b_layout: BLayout::NMajor
            }
        );
        assert_eq!(w[1].shape(), "3x77");
    }

    #[test]
    fn labels_are_kept_beside_the_workload_and_left_out_of_it() {
        let text = r#"[{"name":"q","kind":"matmul","m":1,"n":6144,"k":4096,"family":"llama3","model":"llama3-8b"},
                       {"name":"s","kind":"softmax","rows":3,"cols":77}]"#;
        let l = parse_labelled(text).unwrap();
        assert_eq!(l[0].labels.family.as_deref(), Some("llama3"));
        assert_eq!(l[0].labels.model.as_deref(), Some("llama3-8b"));
        assert_eq!(l[1].labels, Labels::default());
        assert_eq!(
            parse(text).unwrap()[0],
            Workload::MatMul {
                name: "q".into(),
                m: 1,
                n: 6144,
                k: 4096,
                batch: 1,
                epilogue: None,
                b_layout: BLayout::NMajor
            }
        );
        // A record's workload is the shape alone.
        assert!(!serde_json::to_string(&l[0].workload).unwrap().contains("llama3"));
    }

    #[test]
    fn a_matmul_may_store_b_k_major() {
        let text = r#"[{"name":"w","kind":"matmul","m":2,"n":8,"k":16,"b_layout":"k_major"},
                       {"name":"x","kind":"matmul","m":2,"n":8,"k":16,"b_layout":"n_major"}]"#;
        let w = parse(text).unwrap();
        assert_eq!(w[0].b_layout(), BLayout::KMajor);
        assert_eq!(w[1].b_layout(), BLayout::NMajor);
        // Written back only where it is not the default.
        assert!(serde_json::to_string(&w[0]).unwrap().contains("\"b_layout\":\"k_major\""));
        assert!(!serde_json::to_string(&w[1]).unwrap().contains("b_layout"));
        let e = parse(r#"[{"name":"a","kind":"matmul","m":1,"n":8,"k":8,"b_layout":"t"}]"#).unwrap_err();
        assert!(format!("{e:#}").contains("field `b_layout`: unknown variant"), "{e:#}");
    }

    #[test]
    fn parses_elementwise_layers_and_fused_epilogues() {
        let text = r#"[{"name":"g","kind":"matmul","m":2,"n":8,"k":4,"epilogue":"silu_mul"},
                       {"name":"r","kind":"elementwise","op":"norm","rows":3,"cols":5}]"#;
        let w = parse(text).unwrap();
        assert_eq!(
            w[0],
            Workload::MatMul {
                name: "g".into(),
                m: 2,
                n: 8,
                k: 4,
                batch: 1,
                epilogue: Some(ElementwiseKind::SiluMul),
                b_layout: BLayout::NMajor
            }
        );
        assert_eq!(w[0].elementwise(), Some(ElementwiseKind::SiluMul));
        assert_eq!(w[0].op(), Some(Op::MatMul { m: 2, n: 8, k: 4, batch: 1, dtype: DType::F16 }));
        assert_eq!(
            w[1].op(),
            Some(Op::Elementwise { kind: ElementwiseKind::Norm, rows: 3, cols: 5, dtype: DType::F16 })
        );
        assert_eq!(w[1].shape(), "3x5");
        // The fused product writes its output and reads the second operand.
        assert_eq!(w[0].min_bytes(), 2.0 * (2.0 * 4.0 + 4.0 * 8.0 + 2.0 * 2.0 * 8.0));
        // A record's workload reads back as it was written.
        for x in &w {
            let json = serde_json::to_string(x).unwrap();
            assert_eq!(&serde_json::from_str::<Workload>(&json).unwrap(), x, "{json}");
        }
        let plain = serde_json::to_string(&Workload::MatMul {
            name: "p".into(),
            m: 1,
            n: 1,
            k: 1,
            batch: 1,
            epilogue: None,
            b_layout: BLayout::NMajor,
        })
        .unwrap();
        assert!(!plain.contains("epilogue"), "{plain}");
    }

    #[test]
    fn rejects_bad_workloads() {
        for (text, needle) in [
            (r#"[{"name":"a","kind":"matmul","m":0,"n":1,"k":1}]"#, "at least 1"),
            (
                r#"[{"name":"a","kind":"matmul","m":-1,"n":1,"k":1}]"#,
                "workload 0: field `m`: invalid value: integer `-1`",
            ),
            (r#"[{"name":"a","kind":"conv","m":1}]"#, "unknown kind `conv`"),
            (r#"[{"name":"a","kind":"softmax","rows":1,"cols":1,"x":2}]"#, "unknown field"),
            (
                r#"[{"name":"a","kind":"softmax","rows":1,"cols":1},{"name":"a","kind":"softmax","rows":1,"cols":1}]"#,
                "twice",
            ),
            (r#"[{"name":"a","kind":"matmul","m":65536,"n":65536,"k":65536}]"#, "4 GiB"),
            (r#"[{"name":"t","kind":"transpose","rows":65536,"cols":65536}]"#, "4 GiB"),
            (r#"[{"name":"t","kind":"transpose","rows":0,"cols":1}]"#, "at least 1"),
            (r#"[{"name":"c","kind":"copy","bytes":0}]"#, "at least 1"),
            (r#"[{"name":"c","kind":"copy","bytes":18446744073709551615}]"#, "may not exceed 4 GiB"),
            (r#"[{"name":"c","kind":"copy","bytes":-1}]"#, "field `bytes`: invalid value: integer `-1`"),
            (r#"[{"name":"","kind":"copy","bytes":1}]"#, "empty name"),
            (r#"[{"kind":"copy","bytes":1}]"#, "missing field `name`"),
            (r#"[{"name":"a","kind":7}]"#, "field `kind`: not a string"),
            (r#"{"name":"a"}"#, "not a JSON list of workloads"),
            (r#"[3]"#, "workload 0: not an object"),
            ("[]", "no workloads"),
            (r#"[{"name":"a","kind":"copy","bytes":1,"family":3}]"#, "workload 0: field `family`: not a string"),
            (r#"[{"name":"a","kind":"copy","bytes":1,"model":""}]"#, "workload 0: field `model`: empty"),
            (r#"[{"name":"a","kind":"matmul","m":1,"n":1,"k":1,"epilogue":"norm"}]"#, "cannot run in a matmul's"),
            (
                r#"[{"name":"a","kind":"matmul","m":1,"n":1,"k":1,"epilogue":"relu"}]"#,
                "field `epilogue`: unknown variant",
            ),
            (r#"[{"name":"a","kind":"elementwise","op":"add","rows":1}]"#, "missing field `cols`"),
            (r#"[{"name":"a","kind":"elementwise","op":"gelu","rows":0,"cols":1}]"#, "at least 1"),
        ] {
            let e = format!("{:#}", parse(text).unwrap_err());
            assert!(e.contains(needle), "{text}: {e}");
        }
    }
}
