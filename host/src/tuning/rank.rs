//! Ranking by the cost model: the configurations of an operator in order
//! of predicted cost, the core's own cost function, no measurement.

use crate::family::Config;
use hwwfc_core::{cost, Coefficients, HardwareSpec, Op};

/// The configurations of `op` ranked by predicted cost, cheapest first
/// (ties by table index).
pub fn ranked(spec: &HardwareSpec, k: &Coefficients, op: &Op, configs: Vec<Config>) -> Vec<(Config, f32)> {
    let mut v: Vec<(Config, f32)> =
        configs.into_iter().map(|c| (c, cost::unary_cost(spec, k, op, &c.state()))).collect();
    v.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.index.cmp(&b.0.index)));
    v
}
