//! Model graphs: the layers to schedule and the edges between them.
//!
//! A graph is a DAG in execution (topological) order: each layer names its
//! inputs, at most [`MAX_INPUTS`] earlier layers, and each input is an edge
//! from it to the layer. [`Graph::push`] appends a layer fed by the previous
//! one, so a graph built only with it is a chain (layer `i` feeds layer
//! `i + 1`, and edge `i` joins them); [`Graph::push_with_inputs`] names the
//! inputs (none: the layer reads the model's input). [`Graph::edges`]
//! lists the edges layer by layer, each layer's inputs in the order given.

use crate::layer::{Layer, Op, ShapeError, LAYER_NAME_CAPACITY};
use core::fmt;
use serde::{Deserialize, Serialize};

/// A directed edge: the output of `from` is an input of `to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Edge {
    /// Producer layer index.
    pub from: usize,
    /// Consumer layer index.
    pub to: usize,
}

/// Most inputs of one layer.
pub const MAX_INPUTS: usize = 4;

/// The inputs of one layer: indices of earlier layers.
pub type Inputs = heapless::Vec<u16, MAX_INPUTS>;

/// Why a graph could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum GraphError {
    /// More layers than the graph's capacity.
    TooManyLayers {
        /// The capacity (`L`).
        capacity: usize,
    },
    /// A layer name is longer than [`LAYER_NAME_CAPACITY`].
    NameTooLong {
        /// Index of the layer.
        layer: usize,
    },
    /// Two layers share a name.
    DuplicateName {
        /// Index of the second layer with the name.
        layer: usize,
    },
    /// A layer's shape is invalid.
    Shape {
        /// Index of the layer.
        layer: usize,
        /// What is wrong with it.
        error: ShapeError,
    },
    /// The graph has no layers.
    Empty,
    /// A layer names an input that is not an earlier layer of the graph
    /// (a later one, itself, or past the last).
    InputNotEarlier {
        /// Index of the layer.
        layer: usize,
        /// The input it names.
        input: usize,
    },
    /// A layer has more than [`MAX_INPUTS`] inputs.
    TooManyInputs {
        /// Index of the layer.
        layer: usize,
    },
    /// A layer names the same input twice.
    DuplicateInput {
        /// Index of the layer.
        layer: usize,
        /// The input named twice.
        input: usize,
    },
    /// A layer reads its `B` transposed but is not a matmul with one or
    /// two inputs.
    NotTransposable {
        /// Index of the layer.
        layer: usize,
    },
    /// A decoded graph has not one input list per layer.
    InputLists {
        /// Its layers.
        layers: usize,
        /// Its input lists.
        lists: usize,
    },
}

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GraphError::TooManyLayers { capacity } => {
                write!(f, "more than {capacity} layers (the capacity of this build)")
            }
            GraphError::NameTooLong { layer } => {
                write!(f, "layer {layer}: name longer than {LAYER_NAME_CAPACITY} bytes")
            }
            GraphError::DuplicateName { layer } => {
                write!(f, "layer {layer}: name used by an earlier layer")
            }
            GraphError::Shape { layer, error } => write!(f, "layer {layer}: {error}"),
            GraphError::Empty => f.write_str("the model has no layers"),
            GraphError::InputNotEarlier { layer, input } => {
                write!(f, "layer {layer}: input {input} is not an earlier layer")
            }
            GraphError::TooManyInputs { layer } => write!(f, "layer {layer}: more than {MAX_INPUTS} inputs"),
            GraphError::DuplicateInput { layer, input } => write!(f, "layer {layer}: input {input} named twice"),
            GraphError::NotTransposable { layer } => {
                write!(f, "layer {layer}: only a matmul with one or two inputs reads its B transposed")
            }
            GraphError::InputLists { layers, lists } => {
                write!(f, "{lists} input lists for {layers} layers")
            }
        }
    }
}

/// A DAG of at most `L` layers in execution order, each with its inputs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, postcard::experimental::max_size::MaxSize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Graph<const L: usize> {
    layers: heapless::Vec<Layer, L>,
    inputs: heapless::Vec<Inputs, L>,
}

/// Whether a layer of `op` with `inputs` inputs may read its `B`
/// transposed: a matmul with one or two inputs.
fn transposable(op: &Op, inputs: usize) -> bool {
    matches!(op, Op::MatMul { .. }) && (1..=2).contains(&inputs)
}

/// Checks the inputs of layer `layer`: earlier layers, each named once.
fn check_inputs(layer: usize, inputs: &[u16]) -> Result<(), GraphError> {
    for (k, &input) in inputs.iter().enumerate() {
        let input = input as usize;
        if input >= layer {
            return Err(GraphError::InputNotEarlier { layer, input });
        }
        if inputs.iter().take(k).any(|&i| i as usize == input) {
            return Err(GraphError::DuplicateInput { layer, input });
        }
    }
    Ok(())
}

impl<const L: usize> Graph<L> {
    /// An empty graph.
    pub const fn new() -> Self {
        Graph { layers: heapless::Vec::new(), inputs: heapless::Vec::new() }
    }

    /// Appends a layer fed by the previous one (the first layer reads the
    /// model's input).
    pub fn push(&mut self, name: &str, op: Op) -> Result<(), GraphError> {
        let index = self.layers.len();
        let mut inputs = Inputs::new();
        if let Some(prev) = index.checked_sub(1) {
            let prev = u16::try_from(prev).map_err(|_| GraphError::TooManyLayers { capacity: L })?;
            inputs.push(prev).map_err(|_| GraphError::TooManyInputs { layer: index })?;
        }
        self.append(name, op, inputs)
    }

    /// Appends a layer fed by the layers `inputs` (earlier ones, each named
    /// once, at most [`MAX_INPUTS`]; none: it reads the model's input). Its
    /// edges come in the order of `inputs`.
    pub fn push_with_inputs(&mut self, name: &str, op: Op, inputs: &[usize]) -> Result<(), GraphError> {
        let layer = self.layers.len();
        if inputs.len() > MAX_INPUTS {
            return Err(GraphError::TooManyInputs { layer });
        }
        let mut list = Inputs::new();
        for &input in inputs {
            let i = u16::try_from(input).map_err(|_| GraphError::InputNotEarlier { layer, input })?;
            list.push(i).map_err(|_| GraphError::TooManyInputs { layer })?;
        }
        check_inputs(layer, &list)?;
        self.append(name, op, list)
    }

    fn append(&mut self, name: &str, op: Op, inputs: Inputs) -> Result<(), GraphError> {
        let index = self.layers.len();
        op.validate().map_err(|error| GraphError::Shape { layer: index, error })?;
        let layer = Layer::new(name, op).ok_or(GraphError::NameTooLong { layer: index })?;
        if self.layers.iter().any(|l| l.name == layer.name) {
            return Err(GraphError::DuplicateName { layer: index });
        }
        self.layers.push(layer).map_err(|_| GraphError::TooManyLayers { capacity: L })?;
        if self.inputs.push(inputs).is_err() {
            // Not reached: both vectors have the capacity `L`.
            self.layers.pop();
            return Err(GraphError::TooManyLayers { capacity: L });
        }
        Ok(())
    }

    /// Makes matmul `layer` read its `B` as the transpose of its last
    /// input's output ([`Layer::transposed_b`]): the second of two inputs,
    /// or the only one, which then feeds `A` too (GPT-2's fused QKV
    /// projection read by the scores).
    pub fn transpose_b(&mut self, layer: usize) -> Result<(), GraphError> {
        let inputs = self.inputs.get(layer).map_or(0, |i| i.len());
        match self.layers.get_mut(layer) {
            Some(l) if transposable(&l.op, inputs) => {
                l.transposed_b = true;
                Ok(())
            }
            _ => Err(GraphError::NotTransposable { layer }),
        }
    }

    /// Checks a graph that was decoded rather than built with [`Graph::push`]
    /// and [`Graph::push_with_inputs`].
    pub fn validate(&self) -> Result<(), GraphError> {
        if self.layers.is_empty() {
            return Err(GraphError::Empty);
        }
        if self.inputs.len() != self.layers.len() {
            return Err(GraphError::InputLists { layers: self.layers.len(), lists: self.inputs.len() });
        }
        for (i, (layer, inputs)) in self.layers.iter().zip(self.inputs.iter()).enumerate() {
            layer.op.validate().map_err(|error| GraphError::Shape { layer: i, error })?;
            if self.layers.iter().take(i).any(|l| l.name == layer.name) {
                return Err(GraphError::DuplicateName { layer: i });
            }
            check_inputs(i, inputs)?;
            if layer.transposed_b && !transposable(&layer.op, inputs.len()) {
                return Err(GraphError::NotTransposable { layer: i });
            }
        }
        Ok(())
    }

    /// The layers in execution order.
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// Number of layers.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Whether the graph has no layers.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// Whether `edge` carries a matmul's `B` transposed: it comes from the
    /// last input of a consumer that reads its `B` transposed
    /// ([`Graph::transpose_b`]).
    pub fn edge_transposed(&self, edge: Edge) -> bool {
        let last = self.inputs(edge.to).last().is_some_and(|&i| i as usize == edge.from);
        last && self.layer(edge.to).is_some_and(|l| l.transposed_b)
    }

    /// Layer `index`, if there is one.
    pub fn layer(&self, index: usize) -> Option<&Layer> {
        self.layers.get(index)
    }

    /// The inputs of layer `index` (empty if it reads the model's input or
    /// does not exist).
    pub fn inputs(&self, index: usize) -> &[u16] {
        self.inputs.get(index).map_or(&[], |i| i.as_slice())
    }

    /// Whether some later layer reads the output of layer `index`.
    pub fn has_consumers(&self, index: usize) -> bool {
        self.inputs.iter().skip(index + 1).any(|i| i.iter().any(|&x| x as usize == index))
    }

    /// Whether the graph is a chain: every layer but the first fed by the
    /// previous one alone, the first by none.
    pub fn is_chain(&self) -> bool {
        self.inputs.iter().enumerate().all(|(i, inputs)| match i.checked_sub(1) {
            None => inputs.is_empty(),
            Some(prev) => inputs.len() == 1 && inputs.first().is_some_and(|&x| x as usize == prev),
        })
    }

    /// Number of edges.
    pub fn edge_count(&self) -> usize {
        self.inputs.iter().map(|i| i.len()).sum()
    }

    /// The edges, producer first: layer by layer in execution order, each
    /// layer's inputs in their order. On a chain, edge `i` joins layer `i`
    /// to layer `i + 1`.
    pub fn edges(&self) -> impl Iterator<Item = Edge> + '_ {
        self.inputs
            .iter()
            .enumerate()
            .flat_map(|(to, inputs)| inputs.iter().map(move |&from| Edge { from: from as usize, to }))
    }
}
