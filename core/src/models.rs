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
//! In those, the elementwise layers (the residual adds, the norms) are
//! left out. Four more are whole blocks as their real graphs, with the
//! elementwise layers ([`Op::Elementwise`]) and the residual edges:
//!
//! - `llama3-8b-graph`: RMSNorm; Q, K and V apart; the attention; the
//!   output projection; the residual add; RMSNorm; gate and up apart;
//!   SiLU(gate) times up; the down projection; the residual add (15 layers,
//!   18 edges).
//! - `gpt2-graph`: LayerNorm; the fused QKV projection (one product, as
//!   GPT-2 computes it); the attention; its projection; the residual add;
//!   LayerNorm; the MLP with GELU; the residual add (12 layers, 13 edges).
//! - `vit-b16-graph`: a ViT-B/16 encoder block (width 768, 12 heads, MLP
//!   3072, 197 tokens by default), with Q, K and V apart (14 layers, 16
//!   edges).
//! - `mixtral-moe-graph`: a Mixtral 8x7B MoE layer (width 4096, 8 experts
//!   of MLP 14336, two experts per token): RMSNorm, the router and its
//!   softmax, then eight experts fanned out from the norm, each its gate and
//!   up projections, SiLU times up and its down projection over a quarter
//!   of the tokens (the mean load of top-2 of 8), and each expert's output
//!   added into the running sum (`index_add`, as the reference
//!   implementation combines them), the last add also reading the router's
//!   weights, then the residual add (44 layers, 59 edges).
//! - `llama3-8b-mlp-graph`: the MLP half of `llama3-8b-graph` (RMSNorm,
//!   gate and up, SiLU times up, down, the residual add; 6 layers, 6
//!   edges), small enough for the firmware's capacity.
//!
//! An elementwise layer whose first input is a matmul of its shape that
//! nothing else reads may run in that matmul's epilogue (the residual adds
//! after the output and down projections, SiLU times up after the gate
//! projection, GELU after the MLP's first product, each expert's add after
//! its down projection); a norm never fuses. In every DAG the scores read
//! K transposed (`Q K^T`, [`Graph::transpose_b`]): K arrives K-major as
//! the scores' `B`, which the Hopper matmul reads as it is and any other
//! kernel only after a transpose. The sequence length is a parameter.

use crate::dtype::DType;
use crate::graph::{Graph, GraphError};
use crate::layer::{ElementwiseKind, Op};

/// Names of the built-in models.
pub const NAMES: [&str; 10] = [
    "attention",
    "gpt2-block",
    "llama3-8b-block",
    "llama3-8b-attention",
    "llama3-8b-dag",
    "llama3-8b-graph",
    "gpt2-graph",
    "vit-b16-graph",
    "mixtral-moe-graph",
    "llama3-8b-mlp-graph",
];

/// Default sequence length of each built-in model (same order as [`NAMES`]).
pub const DEFAULT_SEQ: [u32; 10] = [512, 1024, 2048, 2048, 2048, 2048, 1024, 197, 2048, 2048];

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

fn elementwise(kind: ElementwiseKind, rows: u32, cols: u32) -> Op {
    Op::Elementwise { kind, rows, cols, dtype: DType::F16 }
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
        3 | 4 => return llama3_8b_graph(s, index == 4),
        5 => return transformer_graph(s, Block::LLAMA3_8B),
        6 => return transformer_graph(s, Block::GPT2),
        7 => return transformer_graph(s, Block::VIT_B16),
        8 => return mixtral_moe_graph(s),
        _ => return llama3_8b_mlp_graph(s),
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
    // The scores read K transposed.
    g.transpose_b(SCORES).map_err(ModelError::Graph)?;
    Ok(g)
}

/// A transformer block's sizes, for [`transformer_graph`].
struct Block {
    width: u32,
    heads: u32,
    kv_heads: u32,
    head_dim: u32,
    mlp: u32,
    /// Q, K and V as one product (GPT-2's `c_attn`) rather than three.
    fused_qkv: bool,
    /// A gated MLP (SiLU(gate) times up) rather than GELU between two
    /// products.
    gated: bool,
}

impl Block {
    const LLAMA3_8B: Block =
        Block { width: 4096, heads: 32, kv_heads: 8, head_dim: 128, mlp: 14336, fused_qkv: false, gated: true };
    const GPT2: Block =
        Block { width: 768, heads: 12, kv_heads: 12, head_dim: 64, mlp: 3072, fused_qkv: true, gated: false };
    const VIT_B16: Block =
        Block { width: 768, heads: 12, kv_heads: 12, head_dim: 64, mlp: 3072, fused_qkv: false, gated: false };
}

/// Pushes a layer and returns its index.
fn add<const L: usize>(g: &mut Graph<L>, name: &str, op: Op, inputs: &[usize]) -> Result<usize, ModelError> {
    g.push_with_inputs(name, op, inputs).map_err(ModelError::Graph)?;
    Ok(g.len() - 1)
}

/// A pre-norm transformer block at sequence `s` as its real graph: norm,
/// projections, attention, output projection, residual add, norm, MLP,
/// residual add.
fn transformer_graph<const L: usize>(s: u32, b: Block) -> Result<Graph<L>, ModelError> {
    use ElementwiseKind::{Add, Gelu, Norm, SiluMul};
    let (d, kv) = (b.width, b.kv_heads * b.head_dim);
    let mut g = Graph::new();
    let norm = add(&mut g, "attn_norm", elementwise(Norm, s, d), &[])?;
    let (q, k, v) = if b.fused_qkv {
        let qkv = add(&mut g, "qkv_proj", mm(s, d + 2 * kv, d, 1), &[norm])?;
        (qkv, qkv, qkv)
    } else {
        let q = add(&mut g, "q_proj", mm(s, d, d, 1), &[norm])?;
        let k = add(&mut g, "k_proj", mm(s, kv, d, 1), &[norm])?;
        let v = add(&mut g, "v_proj", mm(s, kv, d, 1), &[norm])?;
        (q, k, v)
    };
    let qk: &[usize] = if q == k { &[q] } else { &[q, k] };
    let scores = add(&mut g, "attn_scores", mm(s, s, b.head_dim, b.heads), qk)?;
    g.transpose_b(scores).map_err(ModelError::Graph)?;
    let probs = add(&mut g, "attn_softmax", softmax(s.saturating_mul(b.heads), s), &[scores])?;
    let values = add(&mut g, "attn_values", mm(s, b.head_dim, s, b.heads), &[probs, v])?;
    let o = add(&mut g, "o_proj", mm(s, d, d, 1), &[values])?;
    let h = add(&mut g, "attn_residual", elementwise(Add, s, d), &[o])?;
    let norm2 = add(&mut g, "mlp_norm", elementwise(Norm, s, d), &[h])?;
    let act = if b.gated {
        let gate = add(&mut g, "gate_proj", mm(s, b.mlp, d, 1), &[norm2])?;
        let up = add(&mut g, "up_proj", mm(s, b.mlp, d, 1), &[norm2])?;
        add(&mut g, "silu_mul", elementwise(SiluMul, s, b.mlp), &[gate, up])?
    } else {
        let fc = add(&mut g, "mlp_fc", mm(s, b.mlp, d, 1), &[norm2])?;
        add(&mut g, "gelu", elementwise(Gelu, s, b.mlp), &[fc])?
    };
    let down = add(&mut g, "down_proj", mm(s, d, b.mlp, 1), &[act])?;
    add(&mut g, "mlp_residual", elementwise(Add, s, d), &[down, h])?;
    Ok(g)
}

/// Experts of [`mixtral_moe_graph`].
const EXPERTS: usize = 8;

/// A Mixtral 8x7B MoE layer at `s` tokens as its graph (see the module's
/// page).
fn mixtral_moe_graph<const L: usize>(s: u32) -> Result<Graph<L>, ModelError> {
    use ElementwiseKind::{Add, Norm, SiluMul};
    const D: u32 = 4096;
    const MLP: u32 = 14336;
    // Top-2 of 8: each expert takes a quarter of the tokens on average.
    let t = s.div_ceil(4);
    let mut g = Graph::new();
    let norm = add(&mut g, "moe_norm", elementwise(Norm, s, D), &[])?;
    let router = add(&mut g, "router", mm(s, EXPERTS as u32, D, 1), &[norm])?;
    let weights = add(&mut g, "router_softmax", softmax(s, EXPERTS as u32), &[router])?;
    let mut sum: Option<usize> = None;
    let mut name = heapless::String::<24>::new();
    for e in 0..EXPERTS {
        let mut push = |g: &mut Graph<L>, what: &str, op: Op, inputs: &[usize]| {
            // "expert7_gate" and the like, far below the name's capacity
            // (built by hand: no formatting machinery on a device).
            name.clear();
            let digit = char::from(b'0' + e as u8);
            let built = name.push_str("expert").and(name.push(digit)).and(name.push('_')).and(name.push_str(what));
            built.map_err(|_| ModelError::Graph(GraphError::NameTooLong { layer: g.len() }))?;
            add(g, &name, op, inputs)
        };
        let gate = push(&mut g, "gate", mm(t, MLP, D, 1), &[norm])?;
        let up = push(&mut g, "up", mm(t, MLP, D, 1), &[norm])?;
        let act = push(&mut g, "silu_mul", elementwise(SiluMul, t, MLP), &[gate, up])?;
        let down = push(&mut g, "down", mm(t, D, MLP, 1), &[act])?;
        // Each expert's rows added into the sum of those before; the last
        // also scales by the router's weights.
        let add_op = elementwise(Add, t, D);
        sum = Some(match (sum, e + 1 == EXPERTS) {
            (None, _) => push(&mut g, "add", add_op, &[down])?,
            (Some(prev), false) => push(&mut g, "add", add_op, &[down, prev])?,
            (Some(prev), true) => push(&mut g, "add", add_op, &[down, prev, weights])?,
        });
    }
    let sum = sum.ok_or(ModelError::Unknown)?;
    add(&mut g, "moe_residual", elementwise(Add, s, D), &[sum])?;
    Ok(g)
}

/// The MLP half of [`transformer_graph`]'s Llama 3 8B block at `s` tokens:
/// its input is the attention's residual sum, which the last add reads
/// from outside the graph.
fn llama3_8b_mlp_graph<const L: usize>(s: u32) -> Result<Graph<L>, ModelError> {
    use ElementwiseKind::{Add, Norm, SiluMul};
    let b = Block::LLAMA3_8B;
    let mut g = Graph::new();
    let norm = add(&mut g, "mlp_norm", elementwise(Norm, s, b.width), &[])?;
    let gate = add(&mut g, "gate_proj", mm(s, b.mlp, b.width, 1), &[norm])?;
    let up = add(&mut g, "up_proj", mm(s, b.mlp, b.width, 1), &[norm])?;
    let act = add(&mut g, "silu_mul", elementwise(SiluMul, s, b.mlp), &[gate, up])?;
    let down = add(&mut g, "down_proj", mm(s, b.width, b.mlp, 1), &[act])?;
    add(&mut g, "mlp_residual", elementwise(Add, s, b.width), &[down])?;
    Ok(g)
}
