//! Layers: the operators of a model graph and their shapes.

use crate::dtype::DType;
use core::fmt;
use serde::{Deserialize, Serialize};

/// Capacity of a layer's name.
pub const LAYER_NAME_CAPACITY: usize = 24;

/// A layer's name.
pub type LayerName = heapless::String<LAYER_NAME_CAPACITY>;

/// The operator a layer computes and its shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, postcard::experimental::max_size::MaxSize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Op {
    /// `batch` independent products `C[m, n] = A[m, k] * B[k, n]`.
    MatMul {
        /// Rows of `A` and `C`.
        m: u32,
        /// Columns of `B` and `C`.
        n: u32,
        /// The reduction dimension.
        k: u32,
        /// Independent products (attention heads); 1 for a plain product.
        batch: u32,
        /// Element type of `A` and `B` (accumulation is in fp32).
        dtype: DType,
    },
    /// A softmax over each row of a `rows x cols` matrix.
    Softmax {
        /// Independent rows.
        rows: u32,
        /// Elements per row.
        cols: u32,
        /// Element type (fp32 in the benchmarks).
        dtype: DType,
    },
    /// An elementwise operation over `rows x cols` tensors (the residual
    /// add, SiLU times gate, GELU), or a row normalisation (RMSNorm or
    /// LayerNorm: a reduction over each row, then a scale): one output the
    /// shape of its operands. The elementwise kinds may run in the epilogue
    /// of the matmul that produces their first operand
    /// ([`crate::state::Placement::Epilogue`]).
    Elementwise {
        /// What is computed.
        kind: ElementwiseKind,
        /// Rows of every operand and of the output.
        rows: u32,
        /// Columns of every operand and of the output.
        cols: u32,
        /// Element type.
        dtype: DType,
    },
}

/// What an [`Op::Elementwise`] layer computes.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, postcard::experimental::max_size::MaxSize,
)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[serde(rename_all = "snake_case")]
pub enum ElementwiseKind {
    /// `a + b` (a residual connection).
    Add,
    /// `silu(a) * b` (a SwiGLU MLP's gate times its up projection).
    SiluMul,
    /// `gelu(a)`.
    Gelu,
    /// A row normalisation (RMSNorm, LayerNorm): each row reduced, then
    /// scaled. It needs whole rows, so it never runs in a matmul's
    /// epilogue.
    Norm,
}

impl ElementwiseKind {
    /// Every kind, in wire order.
    pub const ALL: [ElementwiseKind; 4] =
        [ElementwiseKind::Add, ElementwiseKind::SiluMul, ElementwiseKind::Gelu, ElementwiseKind::Norm];

    /// Lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            ElementwiseKind::Add => "add",
            ElementwiseKind::SiluMul => "silu_mul",
            ElementwiseKind::Gelu => "gelu",
            ElementwiseKind::Norm => "norm",
        }
    }

    /// Tensors read: two for the binary kinds, one otherwise.
    pub const fn operands(self) -> u32 {
        match self {
            ElementwiseKind::Add | ElementwiseKind::SiluMul => 2,
            ElementwiseKind::Gelu | ElementwiseKind::Norm => 1,
        }
    }

    /// Arithmetic per output element (an exponential counted as four).
    pub const fn flops_per_element(self) -> u32 {
        match self {
            ElementwiseKind::Add => 1,
            ElementwiseKind::SiluMul => 7,
            ElementwiseKind::Gelu => 8,
            ElementwiseKind::Norm => 4,
        }
    }

    /// Whether the kind reduces each row (and so needs whole rows).
    pub const fn reduces_rows(self) -> bool {
        matches!(self, ElementwiseKind::Norm)
    }
}

/// The kind of a layer, without its shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[serde(rename_all = "lowercase")]
pub enum OpKind {
    /// See [`Op::MatMul`].
    MatMul,
    /// See [`Op::Softmax`].
    Softmax,
    /// See [`Op::Elementwise`].
    Elementwise,
}

impl OpKind {
    /// Lower-case name.
    pub const fn name(self) -> &'static str {
        match self {
            OpKind::MatMul => "matmul",
            OpKind::Softmax => "softmax",
            OpKind::Elementwise => "elementwise",
        }
    }
}

/// Why a layer's shape was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ShapeError {
    /// A dimension is zero; the name says which.
    ZeroDimension(&'static str),
    /// A tensor of the layer has more bytes than a `u32` holds.
    TooLarge,
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShapeError::ZeroDimension(dim) => write!(f, "dimension `{dim}` must be at least 1"),
            ShapeError::TooLarge => f.write_str("a tensor of this layer exceeds 4 GiB"),
        }
    }
}

impl Op {
    /// The kind of the operator.
    pub const fn kind(&self) -> OpKind {
        match self {
            Op::MatMul { .. } => OpKind::MatMul,
            Op::Softmax { .. } => OpKind::Softmax,
            Op::Elementwise { .. } => OpKind::Elementwise,
        }
    }

    /// Element type of the inputs.
    pub const fn dtype(&self) -> DType {
        match *self {
            Op::MatMul { dtype, .. } | Op::Softmax { dtype, .. } | Op::Elementwise { dtype, .. } => dtype,
        }
    }

    /// The output's rows and columns (all batches stacked as rows).
    pub const fn output_dims(&self) -> (u64, u64) {
        match *self {
            Op::MatMul { m, n, batch, .. } => (m as u64 * batch as u64, n as u64),
            Op::Softmax { rows, cols, .. } | Op::Elementwise { rows, cols, .. } => (rows as u64, cols as u64),
        }
    }

    /// Bytes of the output tensor (in the input element type); `u64::MAX`
    /// where that overflows, which only a shape [`Op::validate`] refuses
    /// can do (a decoded one, before it is checked).
    pub fn output_bytes(&self) -> u64 {
        let (r, c) = self.output_dims();
        r.saturating_mul(c).saturating_mul(self.dtype().bytes() as u64)
    }

    /// Floating-point operations of one evaluation.
    pub fn flops(&self) -> f64 {
        match *self {
            Op::MatMul { m, n, k, batch, .. } => 2.0 * m as f64 * n as f64 * k as f64 * batch as f64,
            // max, subtract, exp, sum, divide: five per element.
            Op::Softmax { rows, cols, .. } => 5.0 * rows as f64 * cols as f64,
            Op::Elementwise { kind, rows, cols, .. } => kind.flops_per_element() as f64 * rows as f64 * cols as f64,
        }
    }

    /// Rejects zero dimensions and tensors whose byte count overflows `u32`.
    pub fn validate(&self) -> Result<(), ShapeError> {
        let e = self.dtype().bytes() as u64;
        // Every product checked: a shape near u32::MAX must not wrap.
        let fits =
            |dims: &[u64]| dims.iter().try_fold(e, |acc, &d| acc.checked_mul(d)).is_some_and(|b| b <= u32::MAX as u64);
        match *self {
            Op::MatMul { m, n, k, batch, .. } => {
                for (v, name) in [(m, "m"), (n, "n"), (k, "k"), (batch, "batch")] {
                    if v == 0 {
                        return Err(ShapeError::ZeroDimension(name));
                    }
                }
                let (m, n, k, b) = (m as u64, n as u64, k as u64, batch as u64);
                if !(fits(&[b, m, k]) && fits(&[b, k, n]) && fits(&[b, m, n, 2])) {
                    return Err(ShapeError::TooLarge);
                }
            }
            Op::Softmax { rows, cols, .. } | Op::Elementwise { rows, cols, .. } => {
                if rows == 0 {
                    return Err(ShapeError::ZeroDimension("rows"));
                }
                if cols == 0 {
                    return Err(ShapeError::ZeroDimension("cols"));
                }
                if !fits(&[rows as u64, cols as u64]) {
                    return Err(ShapeError::TooLarge);
                }
            }
        }
        Ok(())
    }
}

/// A named layer of a model graph.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, postcard::experimental::max_size::MaxSize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Layer {
    /// Name, unique within its graph.
    pub name: LayerName,
    /// Operator and shape.
    pub op: Op,
    /// Whether a matmul's `B` is the transpose of its last input's output
    /// (attention's `Q K^T`: `K` is written `n x k`, row-major, and read as
    /// `B`, `k x n`), so that `B` arrives K-major; false for every other
    /// layer. Set by [`crate::graph::Graph::transpose_b`].
    pub transposed_b: bool,
}

impl Layer {
    /// A layer named `name`; `None` if the name exceeds
    /// [`LAYER_NAME_CAPACITY`] bytes.
    pub fn new(name: &str, op: Op) -> Option<Self> {
        let name = LayerName::try_from(name).ok()?;
        Some(Layer { name, op, transposed_b: false })
    }
}
