//! The solvers on DAGs: random small DAGs (skip edges, fan-out, fan-in)
//! against the exhaustive oracle, arc consistency against the feasible
//! assignments, chains through the DAG paths against the chain paths, and
//! a residual block built from a graph.

mod support;

use hwwfc_core::cost::Coefficients;
use hwwfc_core::graph::{Edge, Graph};
use hwwfc_core::layer::Op;
use hwwfc_core::problem::evaluate;
use hwwfc_core::propagate::{self, Propagation, Revisions};
use hwwfc_core::wfc::WfcConfig;
use hwwfc_core::{exact, exact_dag, exhaustive, presets, wfc, DType, Domain, Problem, ScheduleProblem};
use hwwfc_core::{Solution, SolveError, StateIndex};
use proptest::prelude::*;
use support::{chains, close, DenseProblem, SplitMix};

const L: usize = 16;
const SMALL: u64 = 300_000;
const REL: f32 = 1e-5;

/// A problem on explicit edges, given by tables: layer `i` has states
/// `0..sizes[i]`; edge `e` joins `edges[e].0` to `edges[e].1` with
/// row-major `sizes[from] x sizes[to]` tables.
#[derive(Clone, Debug)]
struct DagProblem {
    sizes: Vec<usize>,
    allowed: Vec<Vec<bool>>,
    unary: Vec<Vec<f32>>,
    edges: Vec<(usize, usize)>,
    transition: Vec<Vec<f32>>,
    compatible: Vec<Vec<bool>>,
    free: Vec<bool>,
    /// Answer `is_chain` with false whatever the edges (the DAG paths).
    force_general: bool,
}

impl DagProblem {
    fn len(&self) -> usize {
        self.sizes.len()
    }

    fn edge_check(&self, edge: usize) -> (usize, usize) {
        assert!(edge < self.edges.len(), "solver asked for edge {edge} of {}", self.edges.len());
        self.edges[edge]
    }

    fn pair(&self, edge: usize, a: StateIndex, b: StateIndex) -> Option<usize> {
        let (f, t) = self.edge_check(edge);
        let (a, b) = (a as usize, b as usize);
        (a < self.sizes[f] && b < self.sizes[t]).then_some(a * self.sizes[t] + b)
    }

    /// The same problem as a chain's tables, if its edges are a chain's.
    fn from_chain(p: &DenseProblem) -> Self {
        DagProblem {
            sizes: p.sizes.clone(),
            allowed: p.allowed.clone(),
            unary: p.unary.clone(),
            edges: (1..p.len()).map(|i| (i - 1, i)).collect(),
            transition: p.transition.clone(),
            compatible: p.compatible.clone(),
            free: p.free.clone(),
            force_general: false,
        }
    }

    fn combinations(&self) -> u128 {
        self.allowed.iter().map(|a| a.iter().filter(|&&x| x).count() as u128).product()
    }

    /// Every feasible assignment (brute force).
    fn feasible_assignments(&self) -> Vec<Vec<StateIndex>> {
        let mut out = Vec::new();
        let mut cur = vec![0 as StateIndex; self.len()];
        fn go(p: &DagProblem, i: usize, cur: &mut Vec<StateIndex>, out: &mut Vec<Vec<StateIndex>>) {
            if i == p.len() {
                if evaluate::<_, 1>(p, cur).is_some() {
                    out.push(cur.clone());
                }
                return;
            }
            for s in 0..p.sizes[i] {
                if p.allowed[i][s] {
                    cur[i] = s as StateIndex;
                    go(p, i + 1, cur, out);
                }
            }
        }
        go(self, 0, &mut cur, &mut out);
        out
    }
}

impl Problem<1> for DagProblem {
    fn layer_count(&self) -> usize {
        self.sizes.len()
    }

    fn domain(&self, layer: usize) -> Domain<1> {
        let mut d = Domain::EMPTY;
        for (s, &a) in self.allowed[layer].iter().enumerate() {
            if a {
                d.insert(s as StateIndex);
            }
        }
        d
    }

    fn unary(&self, layer: usize, state: StateIndex) -> f32 {
        self.unary[layer].get(state as usize).copied().unwrap_or(f32::INFINITY)
    }

    fn edge_count(&self) -> usize {
        self.edges.len()
    }

    fn edge(&self, edge: usize) -> Option<Edge> {
        self.edges.get(edge).map(|&(from, to)| Edge { from, to })
    }

    fn is_chain(&self) -> bool {
        !self.force_general && hwwfc_core::problem::chain_edges(self)
    }

    fn transition(&self, edge: usize, from: StateIndex, to: StateIndex) -> f32 {
        self.pair(edge, from, to).map_or(f32::INFINITY, |i| self.transition[edge][i])
    }

    fn compatible(&self, edge: usize, from: StateIndex, to: StateIndex) -> bool {
        self.pair(edge, from, to).is_some_and(|i| self.compatible[edge][i])
    }

    fn edge_is_free(&self, edge: usize) -> bool {
        self.edge_check(edge);
        self.free[edge]
    }
}

/// A random DAG of `n` layers from `seed`: each layer after the first
/// usually reads the one before, and each earlier layer with some
/// probability (skips, fan-out, fan-in; at most four inputs); small
/// domains with holes; costs with ties; edges free, dense, sparse or
/// nearly blocking.
fn random_dag(n: usize, seed: u64) -> DagProblem {
    let mut r = SplitMix::new(seed);
    let sizes: Vec<usize> = (0..n).map(|_| 1 + (r.next_u64() % 6) as usize).collect();
    let allowed: Vec<Vec<bool>> = sizes
        .iter()
        .map(|&s| {
            let keep = if r.unit() < 0.6 { 1.0 } else { 0.75 };
            (0..s).map(|_| r.unit() < keep).collect()
        })
        .collect();
    let ties = r.unit() < 0.4;
    let cost = |r: &mut SplitMix| if ties { (r.next_u64() % 4) as f32 } else { (r.unit() * 100.0) as f32 };
    let unary: Vec<Vec<f32>> = sizes.iter().map(|&s| (0..s).map(|_| cost(&mut r)).collect()).collect();
    let skip = r.unit() * 0.6;
    let mut edges = Vec::new();
    for to in 1..n {
        let mut inputs = Vec::new();
        if r.unit() < 0.85 {
            inputs.push(to - 1);
        }
        for from in (0..to - 1).rev() {
            if inputs.len() < 4 && r.unit() < skip {
                inputs.push(from);
            }
        }
        inputs.sort_unstable();
        edges.extend(inputs.into_iter().map(|from| (from, to)));
    }
    let (mut transition, mut compatible, mut free) = (Vec::new(), Vec::new(), Vec::new());
    for &(f, t) in &edges {
        let cells = sizes[f] * sizes[t];
        let kind = r.next_u64() % 8;
        let density = match kind {
            0 | 1 => 1.0,
            2..=4 => 0.75,
            5 | 6 => 0.45,
            _ => 0.1,
        };
        let is_free = kind == 0;
        compatible.push((0..cells).map(|_| is_free || r.unit() < density).collect());
        transition.push((0..cells).map(|_| if is_free || r.unit() < 0.4 { 0.0 } else { cost(&mut r) }).collect());
        free.push(is_free);
    }
    DagProblem { sizes, allowed, unary, edges, transition, compatible, free, force_general: false }
}

fn small_dags() -> impl Strategy<Value = DagProblem> {
    (3usize..=7, any::<u64>()).prop_map(|(n, seed)| random_dag(n, seed))
}

/// Whether the undirected graph of the edges has a cycle.
fn has_cycle(p: &DagProblem) -> bool {
    let mut root: Vec<usize> = (0..p.len()).collect();
    fn find(r: &mut [usize], mut x: usize) -> usize {
        while r[x] != x {
            x = r[x];
        }
        x
    }
    p.edges.iter().any(|&(a, b)| {
        let (ra, rb) = (find(&mut root, a), find(&mut root, b));
        root[ra] = rb;
        ra == rb
    })
}

fn dag_exact(p: &DagProblem) -> Result<Solution<L>, SolveError> {
    exact_dag::solve::<_, L, 1>(p, SMALL).map(|(s, _)| s)
}

fn wfc_configs() -> Vec<WfcConfig> {
    let mut out = Vec::new();
    for propagation in [Propagation::Full, Propagation::Neighbours] {
        for lookahead in [true, false] {
            out.push(WfcConfig { max_backtracks: 64, propagation, lookahead });
        }
    }
    out
}

/// Whether every state of every domain has a support on every edge.
fn arc_consistent(p: &DagProblem, d: &[Domain<1>]) -> bool {
    (0..p.edges.len()).all(|e| {
        let (f, t) = p.edges[e];
        d[f].iter().all(|a| d[t].iter().any(|b| p.compatible(e, a, b)))
            && d[t].iter().all(|b| d[f].iter().any(|a| p.compatible(e, a, b)))
    })
}

fn domains(p: &DagProblem) -> Vec<Domain<1>> {
    (0..p.len()).map(|i| p.domain(i)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 768, ..ProptestConfig::default() })]

    // The exact DAG solver finds the exhaustive optimum with feasible
    // states, or the same typed error; exact::solve dispatches to it.
    #[test]
    fn exact_dag_equals_exhaustive(p in small_dags()) {
        let o = exhaustive::solve::<_, L, 1>(&p, SMALL);
        let e = dag_exact(&p);
        match (&o, &e) {
            (Ok(o), Ok(e)) => {
                prop_assert!(close(o.cost, e.cost, REL), "exhaustive {} exact {}", o.cost, e.cost);
                let eval = evaluate::<_, 1>(&p, &e.states);
                prop_assert!(eval.is_some(), "exact states infeasible: {:?}", e.states);
                prop_assert!(close(eval.unwrap(), e.cost, REL));
            }
            (Err(SolveError::Infeasible { .. }), Err(SolveError::Infeasible { layer })) => {
                prop_assert!(*layer < p.len());
            }
            _ => prop_assert!(false, "exhaustive {:?} exact {:?}", o, e),
        }
        let via_exact = exact::solve::<_, L, 1>(&p).map(|(s, _)| s);
        prop_assert_eq!(&via_exact, &e);
    }

    // WFC: a feasible schedule not below the optimum, or a typed error;
    // with an unbounded budget, feasible exactly when the oracle is.
    #[test]
    fn wfc_on_dags_feasible_or_typed_error(p in small_dags()) {
        let o = exhaustive::solve::<_, L, 1>(&p, SMALL);
        for cfg in wfc_configs() {
            for budget in [cfg.max_backtracks, u32::MAX] {
                let cfg = WfcConfig { max_backtracks: budget, ..cfg };
                let w = wfc::solve::<_, L, 1>(&p, &cfg);
                match (&o, &w) {
                    (Ok(o), Ok((w, _))) => {
                        let eval = evaluate::<_, 1>(&p, &w.states);
                        prop_assert_eq!(eval, Some(w.cost), "{:?}: states {:?}", cfg, w.states);
                        prop_assert!(w.cost >= o.cost - REL * o.cost.abs().max(1.0), "{:?}: {} below {}", cfg, w.cost, o.cost);
                    }
                    (_, Err(SolveError::BacktrackLimit { limit })) if budget != u32::MAX => {
                        prop_assert_eq!(*limit, budget);
                    }
                    (Err(SolveError::Infeasible { .. }), Err(SolveError::Infeasible { layer })) => {
                        prop_assert!(*layer < p.len());
                    }
                    _ => prop_assert!(false, "{:?}: exhaustive {:?} wfc {:?}", cfg, o, w),
                }
            }
        }
    }

    // Arc consistency keeps every state of every feasible assignment and
    // leaves every state supported on every edge; it fails only where no
    // assignment is feasible.
    #[test]
    fn arc_consistency_on_dags(p in small_dags()) {
        let feasible = p.feasible_assignments();
        let mut d = domains(&p);
        match propagate::arc_consistency(&p, &mut d) {
            Ok(_) => {
                prop_assert!(arc_consistent(&p, &d), "{:?}", d);
                for a in &feasible {
                    for (i, &s) in a.iter().enumerate() {
                        prop_assert!(d[i].contains(s), "state {} of layer {} of {:?} removed", s, i, a);
                    }
                }
            }
            Err(layer) => {
                prop_assert!(feasible.is_empty(), "layer {} emptied, but {:?} is feasible", layer, feasible[0]);
                prop_assert!(d[layer].is_empty());
            }
        }
    }

    // After one layer is fixed, full propagation reaches the same fixpoint
    // as arc consistency from scratch; forward checking revises only the
    // layer's neighbours, each against it.
    #[test]
    fn propagate_from_on_dags(p in small_dags(), pick in any::<prop::sample::Index>()) {
        let mut root = domains(&p);
        if propagate::arc_consistency(&p, &mut root).is_err() {
            return Ok(());
        }
        let layer = pick.index(p.len());
        let s = root[layer].first_state().unwrap();
        let mut fixed = root.clone();
        fixed[layer] = Domain::single(s);
        let mut full = fixed.clone();
        let r = propagate::propagate_from(&p, &mut full, layer, Propagation::Full, &mut Revisions::default());
        let mut scratch = fixed.clone();
        let q = propagate::arc_consistency(&p, &mut scratch);
        prop_assert_eq!(r.is_ok(), q.is_ok());
        if r.is_ok() {
            prop_assert_eq!(&full, &scratch);
        }
        let mut near = fixed.clone();
        if propagate::propagate_from(&p, &mut near, layer, Propagation::Neighbours, &mut Revisions::default()).is_ok() {
            for i in 0..p.len() {
                let neighbour = p.edges.iter().any(|&(a, b)| (a == layer && b == i) || (b == layer && a == i));
                if !neighbour {
                    prop_assert_eq!(near[i], fixed[i], "layer {} is no neighbour of {}", i, layer);
                }
            }
            for (e, &(a, b)) in p.edges.iter().enumerate() {
                if a == layer {
                    prop_assert!(near[b].iter().all(|t| p.compatible(e, s, t)));
                } else if b == layer {
                    prop_assert!(near[a].iter().all(|t| p.compatible(e, t, s)));
                }
            }
        }
    }

    // A chain through the DAG paths (is_chain answering false): the exact
    // DAG solver finds Viterbi's cost, and WFC the same states, cost,
    // collapses, backtracks and removals as on the chain path.
    #[test]
    fn chains_through_the_dag_paths(c in chains(1..=8, 1..=8)) {
        let chain = DagProblem::from_chain(&c);
        prop_assert!(chain.is_chain());
        let general = DagProblem { force_general: true, ..chain.clone() };
        let v = exact::solve::<_, L, 1>(&c).map(|(s, _)| s);
        // On a chain the DAG solver is Viterbi, states and all.
        prop_assert_eq!(&dag_exact(&chain), &v);
        let g = dag_exact(&general);
        match (&v, &g) {
            (Ok(v), Ok(g)) => {
                prop_assert!(close(v.cost, g.cost, REL), "viterbi {} dag {}", v.cost, g.cost);
                prop_assert!(evaluate::<_, 1>(&general, &g.states).is_some());
            }
            // The same kind of error; the layer named is where each
            // propagation found out, which the order of revisions decides.
            (Err(a), Err(b)) => prop_assert_eq!(core::mem::discriminant(a), core::mem::discriminant(b)),
            _ => prop_assert!(false, "viterbi {:?} dag {:?}", v, g),
        }
        for cfg in wfc_configs() {
            let a = wfc::solve::<_, L, 1>(&c, &cfg);
            prop_assert_eq!(&wfc::solve::<_, L, 1>(&chain, &cfg), &a);
            let b = wfc::solve::<_, L, 1>(&general, &cfg);
            match (&a, &b) {
                (Ok((a, sa)), Ok((b, sb))) => {
                    prop_assert_eq!(a, b);
                    prop_assert_eq!(
                        (sa.collapses, sa.backtracks, sa.removed),
                        (sb.collapses, sb.backtracks, sb.removed),
                        "{:?}", cfg
                    );
                }
                (Err(a), Err(b)) => {
                    prop_assert_eq!(core::mem::discriminant(a), core::mem::discriminant(b), "{:?}", cfg)
                }
                _ => prop_assert!(false, "{:?}: chain {:?} dag {:?}", cfg, a, b),
            }
        }
    }
}

#[test]
fn generator_covers_the_cases() {
    let ps: Vec<DagProblem> = (0..400).map(|i| random_dag(3 + i % 5, i as u64 * 7919)).collect();
    let cyclic = ps.iter().filter(|p| has_cycle(p)).count();
    assert!(cyclic > ps.len() / 3, "{cyclic} of {} have an undirected cycle", ps.len());
    let feasible: Vec<&DagProblem> = ps.iter().filter(|p| dag_exact(p).is_ok()).collect();
    assert!(feasible.len() > ps.len() / 3, "{} feasible", feasible.len());
    assert!(feasible.len() < ps.len() * 19 / 20, "{} feasible", feasible.len());
    assert!(ps.iter().any(|p| p.free.iter().any(|&f| f)));
    assert!(ps.iter().any(|p| (1..p.len()).any(|t| p.edges.iter().filter(|e| e.1 == t).count() >= 3)));
    assert!(ps.iter().any(|p| (0..p.len()).any(|f| p.edges.iter().filter(|e| e.0 == f).count() >= 3)));
    assert!(ps.iter().all(|p| p.combinations() <= SMALL as u128));
    // Some cyclic instance needs a cutset of several states, and WFC is
    // away from the optimum somewhere.
    assert!(feasible.iter().any(|p| {
        exact_dag::solve::<_, L, 1>(*p, SMALL).is_ok_and(|(_, st)| st.cutset_layers >= 2 && st.assignments > 4)
    }));
    let suboptimal = feasible
        .iter()
        .filter(|p| match wfc::solve::<_, L, 1>(**p, &WfcConfig::default()) {
            Ok((w, _)) => !close(w.cost, dag_exact(p).unwrap().cost, REL),
            Err(_) => false,
        })
        .count();
    assert!(suboptimal > 0);
}

#[test]
fn budget_is_a_typed_error() {
    // Layers 0..4, each fed by every earlier one (up to four): a cutset
    // of several layers of six states.
    let mut p = random_dag(5, 3);
    p.sizes = vec![6; 5];
    p.allowed = vec![vec![true; 6]; 5];
    p.unary = vec![(0..6).map(|s| s as f32).collect(); 5];
    p.edges = (0..5).flat_map(|t| (0..t).map(move |f| (f, t))).collect();
    p.transition = vec![vec![1.0; 36]; p.edges.len()];
    p.compatible = vec![vec![true; 36]; p.edges.len()];
    p.free = vec![false; p.edges.len()];
    let (s, stats) = exact_dag::solve::<_, L, 1>(&p, SMALL).unwrap();
    assert!(stats.cutset_layers >= 2, "{stats:?}");
    assert_eq!(s.cost, 10.0);
    assert_eq!(s.states.as_slice(), &[0; 5]);
    assert_eq!(
        exact_dag::solve::<_, L, 1>(&p, stats.assignments - 1),
        Err(SolveError::TooManyCombinations { limit: stats.assignments - 1 })
    );
}

/// States 0..3 of each of six layers; the skip edge 1 -> 4 (a residual)
/// charges 10 unless both ends take the same state, and the chain edges
/// charge 1 between different states. Layer 1 prefers state 0 given layer
/// 0, but layer 4 wants state 1, which the skip ties to layer 1's: the
/// optimum (1.5) takes state 1 from layer 1 on, greedy state 0 (5).
fn residual_block() -> DagProblem {
    let n = 6;
    let unary = vec![
        vec![0.0, 1.0, 2.0],
        vec![0.0, 0.5, 2.0],
        vec![0.0, 0.0, 2.0],
        vec![0.0, 0.0, 2.0],
        vec![5.0, 0.0, 2.0],
        vec![0.0, 0.0, 2.0],
    ];
    let mut edges: Vec<(usize, usize)> = (1..n).map(|i| (i - 1, i)).collect();
    edges.insert(3, (1, 4));
    let table = |f: &dyn Fn(usize, usize) -> f32| (0..9).map(|x| f(x / 3, x % 3)).collect::<Vec<f32>>();
    let transition = edges
        .iter()
        .map(|&(a, b)| {
            if (a, b) == (1, 4) {
                table(&|x, y| if x == y { 0.0 } else { 10.0 })
            } else {
                table(&|x, y| if x == y { 0.0 } else { 1.0 })
            }
        })
        .collect();
    let m = edges.len();
    DagProblem {
        sizes: vec![3; n],
        allowed: vec![vec![true; 3]; n],
        unary,
        edges,
        transition,
        compatible: vec![vec![true; 9]; m],
        free: vec![false; m],
        force_general: false,
    }
}

/// Each layer in order takes its cheapest state given the layers before it.
fn greedy(p: &DagProblem) -> Vec<StateIndex> {
    let mut states: Vec<StateIndex> = Vec::new();
    for i in 0..p.len() {
        let score = |s: StateIndex| {
            p.unary(i, s)
                + (0..p.edges.len())
                    .filter(|&e| p.edges[e].1 == i)
                    .map(|e| p.transition(e, states[p.edges[e].0], s))
                    .sum::<f32>()
        };
        let best = p.domain(i).iter().min_by(|&a, &b| score(a).total_cmp(&score(b))).unwrap();
        states.push(best);
    }
    states
}

#[test]
fn residual_block_exact_wfc_greedy() {
    let p = residual_block();
    assert!(!p.is_chain() && has_cycle(&p));
    let o = exhaustive::solve::<_, L, 1>(&p, SMALL).unwrap();
    let (e, stats) = exact_dag::solve::<_, L, 1>(&p, SMALL).unwrap();
    assert_eq!(stats.cutset_layers, 1);
    assert_eq!(e.cost, o.cost);
    let (w, _) = wfc::solve::<_, L, 1>(&p, &WfcConfig::default()).unwrap();
    let g = greedy(&p);
    let greedy_cost = evaluate::<_, 1>(&p, &g).unwrap();
    assert_eq!(e.cost, 1.5);
    assert_eq!(greedy_cost, 5.0);
    assert_eq!(e.states[1], e.states[4]);
    assert!(e.cost <= w.cost && w.cost <= greedy_cost, "exact {} wfc {} greedy {}", e.cost, w.cost, greedy_cost);
    assert!(e.cost < greedy_cost, "exact {} greedy {}", e.cost, greedy_cost);
}

#[test]
fn schedule_problem_on_a_residual_graph() {
    let mm = |m, n, k| Op::MatMul { m, n, k, batch: 1, dtype: DType::F16 };
    let mut g = Graph::<8>::new();
    g.push("in_proj", mm(256, 256, 128)).unwrap();
    g.push("up", mm(256, 512, 256)).unwrap();
    g.push("down", mm(256, 256, 512)).unwrap();
    // The residual: the block's output reads its input and the MLP's.
    g.push_with_inputs("out", mm(256, 256, 256), &[0, 2]).unwrap();
    let p = ScheduleProblem::<8, 1>::build(&g, &presets::stress_gpu(), &Coefficients::default()).unwrap();
    assert!(!p.is_chain());
    let edges: Vec<Edge> = g.edges().collect();
    assert_eq!(p.edge_count(), edges.len());
    for (e, edge) in edges.iter().enumerate() {
        assert_eq!(p.edge(e), Some(*edge));
    }
    assert_eq!(p.edge(edges.len()), None);
    let (e, stats) = exact_dag::solve::<_, 8, 1>(&p, SMALL).unwrap();
    assert_eq!(stats.cutset_layers, 1);
    assert!(close(evaluate::<_, 1>(&p, &e.states).unwrap(), e.cost, REL));
    let (w, _) = wfc::solve::<_, 8, 1>(&p, &WfcConfig::default()).unwrap();
    assert_eq!(evaluate::<_, 1>(&p, &w.states), Some(w.cost));
    assert!(w.cost >= e.cost - REL * e.cost);
    // The schedule charges layer 3 with the transitions of both its inputs.
    let s = hwwfc_core::Schedule::from_solution(&p, &e).unwrap();
    let into_3 = p.transition(2, e.states[0], e.states[3]) + p.transition(3, e.states[2], e.states[3]);
    assert_eq!(s.choices[3].transition_us, into_3);
}

#[test]
fn the_built_in_llama_graphs_are_dags_the_solvers_agree_on() {
    use hwwfc_core::models;
    // The attention is a tree (no cutset); the MLP's gate and up join again
    // in the down projection, a cycle of the undirected graph.
    for (name, layers, edges, cut, seq) in [("llama3-8b-attention", 7, 6, 0, 512), ("llama3-8b-dag", 10, 10, 1, 256)] {
        let g = models::builtin::<L>(name, Some(seq)).unwrap();
        assert_eq!((g.len(), g.edge_count()), (layers, edges), "{name}");
        assert!(!g.is_chain(), "{name}");
        // Q, K and V read the block's input; the scores read Q and K.
        assert!((0..3).all(|i| g.inputs(i).is_empty()), "{name}");
        assert_eq!(g.inputs(3), &[0, 1]);
        assert_eq!(g.inputs(5), &[4, 2]);
        let p = ScheduleProblem::<L, 1>::build(&g, &presets::stress_gpu(), &Coefficients::default()).unwrap();
        let (e, stats) = exact_dag::solve::<_, L, 1>(&p, exact_dag::DEFAULT_BUDGET).unwrap();
        assert_eq!(stats.cutset_layers, cut, "{name}: {stats:?}");
        assert!(close(evaluate::<_, 1>(&p, &e.states).unwrap(), e.cost, REL));
        // The chain entry point takes the DAG path and agrees.
        let (again, _) = exact::solve::<_, L, 1>(&p).unwrap();
        assert_eq!(again.states, e.states);
        for config in wfc_configs() {
            let (w, _) = wfc::solve::<_, L, 1>(&p, &config).unwrap();
            assert_eq!(evaluate::<_, 1>(&p, &w.states), Some(w.cost));
            assert!(w.cost >= e.cost - REL * e.cost, "{name}: WFC {} below the optimum {}", w.cost, e.cost);
        }
    }
}
