//! WFC against the exact DAG solver and greedy choice on DAGs: the
//! built-in DAGs (the Llama 3 graphs, and the whole blocks with their
//! elementwise layers, residual edges and epilogue fusion), then random DAGs of growing width (more skip
//! edges, so a larger loop cutset for the exact solver to enumerate), all
//! built by the cost model on `stress_gpu`, whose layouts and placements
//! couple neighbouring layers.
//!
//! Per row: instances solved, those whose cutset exceeds the exact
//! solver's budget (left out), the exact solver's mean cutset, the share where
//! WFC is optimal (within a relative 1e-5), WFC's mean and largest gap,
//! greedy's (each layer's cheapest state, ignoring the edges; "infeasible"
//! where that breaks a hard coupling), and the median solve times.
//!
//! `cargo run --release -p hwwfc-core --example dag_gap`

use hwwfc_core::problem::evaluate;
use hwwfc_core::wfc::WfcConfig;
use hwwfc_core::{exact_dag, models, presets, wfc, Coefficients, DType, Graph, Op, Problem, ScheduleProblem};
use std::time::Instant;

const L: usize = 64;
const W: usize = 1;
const SEED: u64 = 0xda6;
const PER_ROW: usize = 40;

/// splitmix64: a fixed generator, so that every run prints the same table.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn pick(&mut self, of: &[u32]) -> u32 {
        of[(self.next() % of.len() as u64) as usize]
    }
}

/// A random DAG of `n` layers: matmuls (and one softmax in four), each
/// reading the layer before and, with probability `skip` each, up to three
/// earlier ones.
fn random_graph(n: usize, skip: f64, rng: &mut Rng) -> Graph<L> {
    let dims = [128, 256, 512, 768, 1024, 2048, 4096];
    let mut g = Graph::new();
    for i in 0..n {
        let op = if rng.next() % 4 == 0 {
            Op::Softmax { rows: rng.pick(&dims), cols: rng.pick(&dims), dtype: DType::F32 }
        } else {
            Op::MatMul { m: rng.pick(&dims), n: rng.pick(&dims), k: rng.pick(&dims), batch: 1, dtype: DType::F16 }
        };
        let mut inputs = Vec::new();
        if i > 0 {
            inputs.push(i - 1);
        }
        for from in (0..i.saturating_sub(1)).rev() {
            if inputs.len() < 4 && rng.unit() < skip {
                inputs.push(from);
            }
        }
        let name = format!("l{i}");
        g.push_with_inputs(&name, op, &inputs).expect("a valid layer");
    }
    g
}

/// Each layer's cheapest state, ignoring the edges.
fn greedy<P: Problem<W>>(p: &P) -> Vec<u16> {
    (0..p.layer_count())
        .map(|i| p.domain(i).iter().min_by(|a, b| p.unary(i, *a).total_cmp(&p.unary(i, *b))).expect("a state left"))
        .collect()
}

/// The median time of `f` over enough repeats to fill about 20 ms.
fn median_us(mut f: impl FnMut()) -> f64 {
    let start = Instant::now();
    f();
    let once = start.elapsed().as_secs_f64();
    let repeats = ((0.02 / once.max(1e-7)) as usize).clamp(3, 501);
    let mut times: Vec<f64> = (0..repeats)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

#[derive(Default)]
struct Row {
    instances: usize,
    over_budget: usize,
    cutset: f64,
    optimal: usize,
    gap_sum: f64,
    gap_max: f64,
    greedy_sum: f64,
    greedy_max: f64,
    greedy_infeasible: usize,
    exact_us: Vec<f64>,
    wfc_us: Vec<f64>,
}

impl Row {
    fn add(&mut self, g: &Graph<L>) {
        let p = ScheduleProblem::<L, W>::build(g, &presets::stress_gpu(), &Coefficients::default()).expect("built");
        let budget = exact_dag::DEFAULT_BUDGET;
        let (e, stats) = match exact_dag::solve::<_, L, W>(&p, budget) {
            Ok(r) => r,
            Err(hwwfc_core::SolveError::TooManyCombinations { .. }) => {
                self.over_budget += 1;
                return;
            }
            Err(e) => panic!("exact DAG solver: {e}"),
        };
        let (w, _) = wfc::solve::<_, L, W>(&p, &WfcConfig::default()).expect("WFC schedule");
        let gap = (w.cost as f64 - e.cost as f64) / (e.cost as f64).abs().max(1e-9);
        self.instances += 1;
        self.cutset += stats.cutset_layers as f64;
        if gap <= 1e-5 {
            self.optimal += 1;
        }
        self.gap_sum += gap.max(0.0);
        self.gap_max = self.gap_max.max(gap);
        match evaluate::<_, W>(&p, &greedy(&p)) {
            Some(c) => {
                let gg = (c as f64 - e.cost as f64) / (e.cost as f64).abs().max(1e-9);
                self.greedy_sum += gg.max(0.0);
                self.greedy_max = self.greedy_max.max(gg);
            }
            None => self.greedy_infeasible += 1,
        }
        self.exact_us.push(median_us(|| {
            std::hint::black_box(exact_dag::solve::<_, L, W>(std::hint::black_box(&p), budget).ok());
        }));
        self.wfc_us.push(median_us(|| {
            std::hint::black_box(wfc::solve::<_, L, W>(std::hint::black_box(&p), &WfcConfig::default()).ok());
        }));
    }

    fn print(&self, label: &str) {
        let n = self.instances.max(1) as f64;
        let med = |v: &[f64]| {
            let mut v = v.to_vec();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
        };
        let feasible = (self.instances - self.greedy_infeasible).max(1) as f64;
        println!(
            "{label:<28} {:>4} {:>5} {:>6.2} {:>8.1}% {:>8.3}% {:>8.3}% {:>9.2}% {:>9.2}% {:>6} {:>10.1} {:>9.1} {:>7.1}x",
            self.instances,
            self.over_budget,
            self.cutset / n,
            100.0 * self.optimal as f64 / n,
            100.0 * self.gap_sum / n,
            100.0 * self.gap_max,
            100.0 * self.greedy_sum / feasible,
            100.0 * self.greedy_max,
            self.greedy_infeasible,
            med(&self.exact_us),
            med(&self.wfc_us),
            med(&self.exact_us) / med(&self.wfc_us)
        );
    }
}

fn main() {
    println!(
        "{:<28} {:>4} {:>5} {:>6} {:>9} {:>9} {:>9} {:>10} {:>10} {:>6} {:>10} {:>9} {:>8}",
        "DAGs on stress_gpu",
        "n",
        "over",
        "cutset",
        "WFC opt",
        "WFC gap",
        "WFC max",
        "greedy gap",
        "greedy max",
        "infeas",
        "exact us",
        "WFC us",
        "ratio"
    );
    for name in [
        "llama3-8b-attention",
        "llama3-8b-dag",
        "llama3-8b-mlp-graph",
        "llama3-8b-graph",
        "gpt2-graph",
        "vit-b16-graph",
        "mixtral-moe-graph",
    ] {
        let mut row = Row::default();
        row.add(&models::builtin::<L>(name, None).expect("built-in"));
        row.print(name);
    }
    let mut rng = Rng(SEED);
    for (layers, skip) in [(12, 0.05), (12, 0.1), (12, 0.15), (16, 0.05), (16, 0.1), (24, 0.03), (24, 0.06)] {
        let mut row = Row::default();
        for _ in 0..PER_ROW {
            row.add(&random_graph(layers, skip, &mut rng));
        }
        row.print(&format!("random, {layers} layers, skip {skip}"));
    }
    println!(
        "\n(n: instances solved by both; over: random DAGs whose cutset needs more than {} assignments, left out; \
         gaps relative to the exact optimum)",
        exact_dag::DEFAULT_BUDGET
    );
}
