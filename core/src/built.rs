//! The scheduling problem built from a graph, a spec and the cost model:
//! per-layer domains after the hard constraints (arc-consistent adjacency
//! included, through [`crate::propagate`]), unary costs and per-edge
//! rewrite costs, seen by the solvers through [`Problem`].

use crate::constraint::{self, Constraint, CONSTRAINT_COUNT};
use crate::cost::{self, Coefficients};
use crate::domain::Domain;
use crate::graph::{Edge, Graph, GraphError, MAX_INPUTS};
use crate::layer::Op;
use crate::problem::Problem;
use crate::propagate;
use crate::space;
use crate::spec::{HardwareSpec, SpecError};
use crate::state::{Layout, Placement, State, StateIndex};
use core::fmt;

/// Why a scheduling problem could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum BuildError {
    /// The spec is invalid.
    Spec(SpecError),
    /// The graph is invalid.
    Graph(GraphError),
    /// A coefficient is not a positive, finite number.
    Coefficient(&'static str),
    /// A layer's candidate space is larger than a domain holds.
    TooManyStates {
        /// Index of the layer.
        layer: usize,
        /// States in its candidate space.
        states: usize,
        /// Capacity of a domain (`64 * W`).
        capacity: usize,
    },
    /// More layers than the problem's capacity `L`.
    TooManyLayers {
        /// The capacity.
        capacity: usize,
    },
    /// Every state of a layer was removed.
    Infeasible {
        /// Index of the layer.
        layer: usize,
        /// The constraint that removed its last state.
        constraint: Constraint,
    },
    /// The cost model gave a non-finite cost (a bug, or absurd inputs).
    NonFiniteCost {
        /// Index of the layer.
        layer: usize,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::Spec(e) => write!(f, "invalid spec: {e}"),
            BuildError::Graph(e) => write!(f, "invalid model: {e}"),
            BuildError::Coefficient(name) => {
                write!(f, "coefficient `{name}` must be a positive, finite number")
            }
            BuildError::TooManyStates { layer, states, capacity } => {
                write!(f, "layer {layer}: {states} candidate states exceed the domain capacity of {capacity}")
            }
            BuildError::TooManyLayers { capacity } => write!(f, "more than {capacity} layers"),
            BuildError::Infeasible { layer, constraint } => {
                write!(f, "layer {layer}: no state is left; `{constraint}` removed the last one")
            }
            BuildError::NonFiniteCost { layer } => {
                write!(f, "layer {layer}: the cost model gave a non-finite cost")
            }
        }
    }
}

/// One layer of a [`ScheduleProblem`].
#[derive(Clone, Debug)]
pub struct LayerPlan<const W: usize> {
    /// The layer's operator.
    pub op: Op,
    /// Its candidate space (index = state index).
    pub states: &'static [State],
    /// States of the space that apply to the layer's shape (see
    /// [`space::applicable`]).
    pub candidates: Domain<W>,
    /// Surviving states after every constraint.
    pub domain: Domain<W>,
    /// States removed per constraint, indexed by [`Constraint::index`].
    pub removed: [u16; CONSTRAINT_COUNT],
    unary: [[f32; 64]; W],
}

impl<const W: usize> LayerPlan<W> {
    /// The state with index `s`.
    pub fn state(&self, s: StateIndex) -> Option<&State> {
        self.states.get(s as usize)
    }

    /// Unary cost of state `s` (infinite if out of range or removed by a
    /// unary constraint).
    pub fn unary(&self, s: StateIndex) -> f32 {
        let i = s as usize;
        self.unary.get(i / 64).and_then(|w| w.get(i % 64)).copied().unwrap_or(f32::INFINITY)
    }
}

/// Choices of how a problem is built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BuildOptions {
    /// Whether an elementwise layer may run in its producer's epilogue
    /// where the graph allows it (default); without, every elementwise
    /// layer runs as a kernel of its own ([`Constraint::Fusion`] removes
    /// every epilogue state).
    pub fusion: bool,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions { fusion: true }
    }
}

/// The layer whose epilogue may run layer `i` (an elementwise layer): its
/// first input, if that is a matmul of its shape ([`constraint::fusable`])
/// whose output no other layer reads.
fn fusing_input<const L: usize>(graph: &Graph<L>, i: usize) -> Option<usize> {
    let producer = *graph.inputs(i).first()? as usize;
    let (p, c) = (graph.layer(producer)?, graph.layer(i)?);
    let readers = graph.edges().filter(|e| e.from == producer).count();
    (readers == 1 && constraint::fusable(&p.op, &c.op)).then_some(producer)
}

/// A value per edge of a graph of at most `L` layers: rows of
/// [`MAX_INPUTS`], so that edge `e` is at row `e / MAX_INPUTS`, column
/// `e % MAX_INPUTS`, and every edge of such a graph fits.
#[derive(Clone, Debug)]
struct PerEdge<T, const L: usize> {
    rows: heapless::Vec<[T; MAX_INPUTS], L>,
    len: usize,
}

impl<T: Copy, const L: usize> PerEdge<T, L> {
    const fn new() -> Self {
        PerEdge { rows: heapless::Vec::new(), len: 0 }
    }

    fn push(&mut self, v: T) -> Result<(), BuildError> {
        let (row, col) = (self.len / MAX_INPUTS, self.len % MAX_INPUTS);
        if col == 0 {
            self.rows.push([v; MAX_INPUTS]).map_err(|_| BuildError::TooManyLayers { capacity: L })?;
        }
        let slot =
            self.rows.get_mut(row).and_then(|r| r.get_mut(col)).ok_or(BuildError::TooManyLayers { capacity: L })?;
        *slot = v;
        self.len += 1;
        Ok(())
    }

    fn get(&self, e: usize) -> Option<T> {
        if e >= self.len {
            return None;
        }
        self.rows.get(e / MAX_INPUTS).and_then(|r| r.get(e % MAX_INPUTS)).copied()
    }
}

/// A graph scheduled on a spec: per-layer domains after the hard
/// constraints (unary ones, then arc-consistent adjacency), unary costs from
/// the cost model, and per-edge rewrite costs, over the graph's edges. At
/// most `L` layers with at most `64 * W` candidate states each.
#[derive(Clone, Debug)]
pub struct ScheduleProblem<const L: usize, const W: usize> {
    layers: heapless::Vec<LayerPlan<W>, L>,
    edges: PerEdge<Edge, L>,
    chain: bool,
    rewrite: PerEdge<f32, L>,
    adjacency: PerEdge<bool, L>,
    fusing: PerEdge<bool, L>,
    /// Whether the edge carries a matmul's `B` transposed.
    transposed: PerEdge<bool, L>,
    free: PerEdge<bool, L>,
}

impl<const L: usize, const W: usize> ScheduleProblem<L, W> {
    /// Builds the problem: checks the inputs, applies every constraint and
    /// evaluates the cost model on every surviving state.
    pub fn build(graph: &Graph<L>, spec: &HardwareSpec, k: &Coefficients) -> Result<Self, BuildError> {
        Self::build_with(graph, spec, k, BuildOptions::default())
    }

    /// [`ScheduleProblem::build`] with `options` (such as no epilogue
    /// fusion, to see what the fusion is worth).
    pub fn build_with(
        graph: &Graph<L>,
        spec: &HardwareSpec,
        k: &Coefficients,
        options: BuildOptions,
    ) -> Result<Self, BuildError> {
        spec.validate().map_err(BuildError::Spec)?;
        graph.validate().map_err(BuildError::Graph)?;
        k.validate().map_err(BuildError::Coefficient)?;
        // Built in place: the layers' tables are most of the stack the
        // build takes, and a second copy of them would double it.
        let mut problem = ScheduleProblem {
            layers: heapless::Vec::new(),
            edges: PerEdge::new(),
            chain: graph.is_chain(),
            rewrite: PerEdge::new(),
            adjacency: PerEdge::new(),
            fusing: PerEdge::new(),
            transposed: PerEdge::new(),
            free: PerEdge::new(),
        };
        for (i, layer) in graph.layers().iter().enumerate() {
            // A layer with no inputs reads the model's input, and one that
            // no layer reads writes the model's output.
            let ends = (graph.inputs(i).is_empty(), !graph.has_consumers(i));
            let fusable = options.fusion && fusing_input(graph, i).is_some();
            let plan = Self::plan_layer(i, ends, fusable, &layer.op, spec, k)?;
            problem.layers.push(plan).map_err(|_| BuildError::TooManyLayers { capacity: L })?;
        }
        for edge in graph.edges() {
            let (Some(a), Some(b)) = (problem.layers.get(edge.from), problem.layers.get(edge.to)) else {
                // Not reached: a validated graph's edges join its layers.
                return Err(BuildError::Graph(GraphError::InputNotEarlier { layer: edge.to, input: edge.from }));
            };
            let bytes = a.op.output_bytes();
            let rewrite = cost::rewrite_cost(spec, k, bytes);
            let tiled = a.domain.iter().any(|s| a.state(s).is_some_and(|s| s.layout == Layout::Tiled));
            let dram = b.domain.iter().any(|s| b.state(s).is_some_and(|s| s.placement == Placement::Dram));
            let fusing = fusing_input(graph, edge.to) == Some(edge.from)
                && b.domain.iter().any(|s| b.state(s).is_some_and(|s| s.placement == Placement::Epilogue));
            problem.edges.push(edge)?;
            problem.rewrite.push(rewrite)?;
            problem.adjacency.push(tiled && dram)?;
            problem.fusing.push(fusing)?;
            problem.transposed.push(graph.edge_transposed(edge))?;
        }
        problem.enforce_adjacency()?;
        for edge in 0..problem.edges.len {
            let free = problem.compute_free(edge);
            problem.free.push(free)?;
        }
        Ok(problem)
    }

    /// Plans layer `i`; `(reads_input, writes_output)` say whether it reads
    /// the model's input and writes its output (row-major in DRAM).
    /// A layer `fusable` into its producer's epilogue keeps its epilogue
    /// state ([`Placement::Epilogue`]); any other loses it to
    /// [`Constraint::Fusion`].
    fn plan_layer(
        i: usize,
        (reads_input, writes_output): (bool, bool),
        fusable: bool,
        op: &Op,
        spec: &HardwareSpec,
        k: &Coefficients,
    ) -> Result<LayerPlan<W>, BuildError> {
        let states = space::states(spec.space, op.kind());
        if states.len() > Domain::<W>::CAPACITY {
            return Err(BuildError::TooManyStates { layer: i, states: states.len(), capacity: Domain::<W>::CAPACITY });
        }
        let mut plan = LayerPlan {
            op: *op,
            states,
            candidates: Domain::EMPTY,
            domain: Domain::EMPTY,
            removed: [0; CONSTRAINT_COUNT],
            unary: [[f32::INFINITY; 64]; W],
        };
        let mut last = Constraint::Alignment;
        for (s, state) in states.iter().enumerate() {
            let idx = s as StateIndex;
            if !space::applicable(op, state) {
                continue;
            }
            plan.candidates.insert(idx);
            let checked = match constraint::check(spec, op, state) {
                Ok(()) if state.placement == Placement::Epilogue && !fusable => Err(Constraint::Fusion),
                other => other,
            };
            match checked {
                Err(c) => {
                    if let Some(r) = plan.removed.get_mut(c.index()) {
                        *r += 1;
                    }
                    last = c;
                }
                Ok(()) => {
                    let mut c = cost::unary_cost(spec, k, op, state);
                    // The model's input and output are row-major in DRAM.
                    if state.layout != Layout::RowMajor {
                        if reads_input {
                            c += cost::rewrite_cost(spec, k, cost::input_bytes(op));
                        }
                        if writes_output {
                            c += cost::rewrite_cost(spec, k, op.output_bytes());
                        }
                    }
                    if !c.is_finite() {
                        return Err(BuildError::NonFiniteCost { layer: i });
                    }
                    if let Some(slot) = plan.unary.get_mut(s / 64).and_then(|w| w.get_mut(s % 64)) {
                        *slot = c;
                    }
                    plan.domain.insert(idx);
                }
            }
        }
        if plan.domain.is_empty() {
            return Err(BuildError::Infeasible { layer: i, constraint: last });
        }
        Ok(plan)
    }

    fn enforce_adjacency(&mut self) -> Result<(), BuildError> {
        let mut domains = [Domain::<W>::EMPTY; L];
        for (d, l) in domains.iter_mut().zip(self.layers.iter()) {
            *d = l.domain;
        }
        let n = self.layers.len();
        let pruned = domains.get_mut(..n).unwrap_or(&mut []);
        let result = propagate::arc_consistency(self, pruned);
        for (l, d) in self.layers.iter_mut().zip(pruned.iter()) {
            let removed = l.domain.len() - d.len();
            if let Some(r) = l.removed.get_mut(Constraint::Adjacency.index()) {
                *r += removed as u16;
            }
            l.domain = *d;
        }
        match result {
            Ok(_) => Ok(()),
            Err(layer) => Err(BuildError::Infeasible { layer, constraint: Constraint::Adjacency }),
        }
    }

    /// The layers.
    pub fn layers(&self) -> &[LayerPlan<W>] {
        &self.layers
    }

    /// Layer `i`.
    pub fn layer(&self, i: usize) -> Option<&LayerPlan<W>> {
        self.layers.get(i)
    }

    /// Number of combinations left after the constraints.
    pub fn combinations(&self) -> u128 {
        self.layers.iter().fold(1u128, |acc, l| acc.saturating_mul(l.domain.len() as u128))
    }

    /// Number of combinations of the candidates, before the constraints.
    pub fn space_combinations(&self) -> u128 {
        self.layers.iter().fold(1u128, |acc, l| acc.saturating_mul(l.candidates.len() as u128))
    }

    fn pair(&self, edge: usize, from: StateIndex, to: StateIndex) -> Option<(&State, &State)> {
        let ends = self.edges.get(edge)?;
        let a = self.layers.get(ends.from)?.state(from)?;
        let b = self.layers.get(ends.to)?.state(to)?;
        Some((a, b))
    }
}

impl<const L: usize, const W: usize> Problem<W> for ScheduleProblem<L, W> {
    fn layer_count(&self) -> usize {
        self.layers.len()
    }

    fn domain(&self, layer: usize) -> Domain<W> {
        self.layers.get(layer).map(|l| l.domain).unwrap_or(Domain::EMPTY)
    }

    fn edge_count(&self) -> usize {
        self.edges.len
    }

    fn edge(&self, edge: usize) -> Option<Edge> {
        self.edges.get(edge)
    }

    fn is_chain(&self) -> bool {
        self.chain
    }

    fn unary(&self, layer: usize, state: StateIndex) -> f32 {
        self.layers.get(layer).map(|l| l.unary(state)).unwrap_or(f32::INFINITY)
    }

    fn transition(&self, edge: usize, from: StateIndex, to: StateIndex) -> f32 {
        match self.pair(edge, from, to) {
            Some((a, b)) if self.rewrites(edge, a, b) => self.rewrite.get(edge).unwrap_or(f32::INFINITY),
            Some(_) => 0.0,
            None => f32::INFINITY,
        }
    }

    fn compatible(&self, edge: usize, from: StateIndex, to: StateIndex) -> bool {
        self.pair(edge, from, to).is_some_and(|(a, b)| self.allowed(edge, a, b))
    }

    fn step(&self, edge: usize, from: StateIndex, to: StateIndex) -> Option<f32> {
        let (a, b) = self.pair(edge, from, to)?;
        if !self.allowed(edge, a, b) {
            return None;
        }
        if self.rewrites(edge, a, b) {
            self.rewrite.get(edge)
        } else {
            Some(0.0)
        }
    }

    fn transitions_nonnegative(&self) -> bool {
        // Rewrites cost a positive time, and everything else nothing.
        true
    }

    fn edge_is_free(&self, edge: usize) -> bool {
        self.free.get(edge).unwrap_or(false)
    }
}

impl<const L: usize, const W: usize> ScheduleProblem<L, W> {
    /// Whether `b` at the consumer of `edge` may follow `a` at its
    /// producer: the adjacency rule where the edge needs it, and on the
    /// edge into a fusable layer, an epilogue state only after a producer
    /// state that can fuse it.
    fn allowed(&self, edge: usize, a: &State, b: &State) -> bool {
        if self.adjacency.get(edge).unwrap_or(true) && !constraint::compatible(a, b) {
            return false;
        }
        if b.placement != Placement::Epilogue || !self.fusing.get(edge).unwrap_or(true) {
            return true;
        }
        let producer = self.edges.get(edge).and_then(|e| self.layers.get(e.from));
        producer.is_some_and(|p| constraint::can_fuse(&p.op, a))
    }

    /// Whether the tensor of `edge` is rewritten between `a` and `b`
    /// ([`cost::edge_needs_rewrite`]).
    fn rewrites(&self, edge: usize, a: &State, b: &State) -> bool {
        cost::edge_needs_rewrite(a, b, self.edge_transposed(edge))
    }

    /// Whether `edge` carries a matmul's `B` transposed.
    pub fn edge_transposed(&self, edge: usize) -> bool {
        self.transposed.get(edge).unwrap_or(false)
    }

    /// Free when no surviving pair needs a rewrite and none is forbidden.
    fn compute_free(&self, edge: usize) -> bool {
        if self.adjacency.get(edge).unwrap_or(true) || self.fusing.get(edge).unwrap_or(true) {
            return false;
        }
        let Some(ends) = self.edges.get(edge) else {
            return false;
        };
        let (Some(a), Some(b)) = (self.layers.get(ends.from), self.layers.get(ends.to)) else {
            return false;
        };
        let all_row =
            |l: &LayerPlan<W>| l.domain.iter().all(|s| l.state(s).is_some_and(|s| s.layout == Layout::RowMajor));
        let reads_as_is = |l: &LayerPlan<W>| {
            !self.edge_transposed(edge)
                || l.domain.iter().all(|s| l.state(s).is_some_and(|s| s.placement.reads_k_major_b()))
        };
        all_row(a) && all_row(b) && reads_as_is(b)
    }
}
