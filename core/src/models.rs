//! Built-in models, as chains of layers in execution order.
//!
//! - `attention`: the prototype's benchmark, an attention block of six
//!   layers (512 tokens, width 512, fed by a 128-wide input); on the tiles
//!   space it has 33 × 36^5 (about 2 × 10^9) combinations.
//! - `gpt2-block`: one GPT-2 (124M) transformer block: width 768, 12 heads
//!   of 64, MLP 3072.
//! - `llama3-8b-block`: one Llama 3 8B block: width 4096, 32 query heads and
//!   8 key-value heads of 128 (grouped-query attention), SwiGLU MLP 14336.
//!
//! The projections that run as one fused product in practice (Q, K and V;
//! gate and up) are one layer in these, which keeps each block a chain.
//!
//! Two more are the same Llama 3 8B layers as their real graph, a DAG:
//!
//! - `llama3-8b-attention`: Q, K and V projected apart, each from the
//!   block's input (three parallel branches); the scores read Q and K, the
//!   softmax the scores, the weighted values the softmax and V, the output
//!   projection those (7 layers, 6 edges: a tree).
//! - `llama3-8b-dag`: that attention, then the MLP's gate and up
//!   projections, both from the output projection, and the down projection
//!   from both (10 layers, 10 edges; gate and up join again, a cycle of the
//!   undirected graph; SiLU-times-gate is taken as part of the down
//!   projection's input).
//!
//! The elementwise layers (the residual adds, the norms) are not layers of
//! the core, so a residual edge is not in these graphs. The sequence length
//! is a parameter.

use crate::dtype::DType;
use crate::graph::{Graph, GraphError};
use crate::layer::Op;

/// Names of the built-in models.
pub const NAMES: [&str; 5] = ["attention", "gpt2-block", "llama3-8b-block", "llama3-8b-attention", "llama3-8b-dag"];

/// Default sequence length of each built-in model (same order as [`NAMES`]).
pub const DEFAULT_SEQ: [u32; 5] = [512, 1024, 2048, 2048, 2048];

/// Why a built-in model could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ModelError {
    /// No built-in model has this name.
    Unknown,
    /// The model does not fit, or the sequence length makes a layer invalid.
    Graph(GraphError),
}

impl core::fmt::Display for ModelError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ModelError::Unknown => f.write_str("unknown model"),
            ModelError::Graph(e) => e.fmt(f),
        }
    }
}

fn mm(m: u32, n: u32, k: u32, batch: u32) -> Op {
    Op::MatMul { m, n, k, batch, dtype: DType::F16 }
}

fn softmax(rows: u32, cols: u32) -> Op {
    Op::Softmax { rows, cols, dtype: DType::F32 }
}

/// The built-in model `name` with sequence length `seq` (its default if
/// `None`).
pub fn builtin<const L: usize>(name: &str, seq: Option<u32>) -> Result<Graph<L>, ModelError> {
    let index = NAMES.iter().position(|n| *n == name).ok_or(ModelError::Unknown)?;
    let s = seq.unwrap_or(DEFAULT_SEQ.get(index).copied().unwrap_or(512));
    let chain: &[(&str, Op)] = match index {
        0 => &[
            ("in_proj", mm(s, 512, 128, 1)),
            ("qk_scores", mm(s, s, 512, 1)),
            ("softmax", softmax(s, s)),
            ("attn_values", mm(s, 512, s, 1)),
            ("out_proj", mm(s, 512, 512, 1)),
            ("ffn_up", mm(s, 2048, 512, 1)),
        ],
        1 => &[
            ("qkv_proj", mm(s, 3 * 768, 768, 1)),
            ("attn_scores", mm(s, s, 64, 12)),
            ("attn_softmax", softmax(s.saturating_mul(12), s)),
            ("attn_values", mm(s, 64, s, 12)),
            ("out_proj", mm(s, 768, 768, 1)),
            ("mlp_fc", mm(s, 3072, 768, 1)),
            ("mlp_proj", mm(s, 768, 3072, 1)),
        ],
        2 => &[
            ("qkv_proj", mm(s, 4096 + 2 * 1024, 4096, 1)),
            ("attn_scores", mm(s, s, 128, 32)),
            ("attn_softmax", softmax(s.saturating_mul(32), s)),
            ("attn_values", mm(s, 128, s, 32)),
            ("o_proj", mm(s, 4096, 4096, 1)),
            ("gate_up_proj", mm(s, 2 * 14336, 4096, 1)),
            ("down_proj", mm(s, 4096, 14336, 1)),
        ],
        _ => return llama3_8b_graph(s, index == 4),
    };
    let mut g = Graph::new();
    for (name, op) in chain {
        g.push(name, *op).map_err(ModelError::Graph)?;
    }
    Ok(g)
}

/// Llama 3 8B's attention at sequence `s` as its graph, and with `mlp` its
/// MLP after it.
fn llama3_8b_graph<const L: usize>(s: u32, mlp: bool) -> Result<Graph<L>, ModelError> {
    // Layer indices, in the order pushed.
    const Q: usize = 0;
    const K: usize = 1;
    const V: usize = 2;
    const SCORES: usize = 3;
    const SOFTMAX: usize = 4;
    const VALUES: usize = 5;
    const O: usize = 6;
    const GATE: usize = 7;
    const UP: usize = 8;
    let attention: [(&str, Op, &[usize]); 7] = [
        ("q_proj", mm(s, 4096, 4096, 1), &[]),
        ("k_proj", mm(s, 1024, 4096, 1), &[]),
        ("v_proj", mm(s, 1024, 4096, 1), &[]),
        ("attn_scores", mm(s, s, 128, 32), &[Q, K]),
        ("attn_softmax", softmax(s.saturating_mul(32), s), &[SCORES]),
        ("attn_values", mm(s, 128, s, 32), &[SOFTMAX, V]),
        ("o_proj", mm(s, 4096, 4096, 1), &[VALUES]),
    ];
    let mlp_layers: [(&str, Op, &[usize]); 3] = [
        ("gate_proj", mm(s, 14336, 4096, 1), &[O]),
        ("up_proj", mm(s, 14336, 4096, 1), &[O]),
        ("down_proj", mm(s, 4096, 14336, 1), &[GATE, UP]),
    ];
    let mut g = Graph::new();
    let tail: &[(&str, Op, &[usize])] = if mlp { &mlp_layers } else { &[] };
    for (name, op, inputs) in attention.iter().chain(tail) {
        g.push_with_inputs(name, *op, inputs).map_err(ModelError::Graph)?;
    }
    Ok(g)
}
