//! Model graphs: the layers to schedule and the edges between them.
//!
//! A graph is a chain today: layer `i` feeds layer `i + 1`, and edge `i`
//! joins them. Solvers reach edges only through [`Graph::edges`] and
//! [`Edge`], so a DAG can replace the chain without changing their callers.

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
        }
    }
}

/// A chain of at most `L` layers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, postcard::experimental::max_size::MaxSize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Graph<const L: usize> {
    layers: heapless::Vec<Layer, L>,
}

impl<const L: usize> Graph<L> {
    /// An empty graph.
    pub const fn new() -> Self {
        Graph { layers: heapless::Vec::new() }
    }

    /// Appends a layer fed by the previous one.
    pub fn push(&mut self, name: &str, op: Op) -> Result<(), GraphError> {
        let index = self.layers.len();
        op.validate().map_err(|error| GraphError::Shape { layer: index, error })?;
        let layer = Layer::new(name, op).ok_or(GraphError::NameTooLong { layer: index })?;
        if self.layers.iter().any(|l| l.name == layer.name) {
            return Err(GraphError::DuplicateName { layer: index });
        }
        self.layers.push(layer).map_err(|_| GraphError::TooManyLayers { capacity: L })
    }

    /// Checks a graph that was decoded rather than built with [`Graph::push`].
    pub fn validate(&self) -> Result<(), GraphError> {
        if self.layers.is_empty() {
            return Err(GraphError::Empty);
        }
        for (i, layer) in self.layers.iter().enumerate() {
            layer.op.validate().map_err(|error| GraphError::Shape { layer: i, error })?;
            if self.layers.iter().take(i).any(|l| l.name == layer.name) {
                return Err(GraphError::DuplicateName { layer: i });
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

    /// Layer `index`, if there is one.
    pub fn layer(&self, index: usize) -> Option<&Layer> {
        self.layers.get(index)
    }

    /// The edges, producer first, in execution order.
    pub fn edges(&self) -> impl Iterator<Item = Edge> + '_ {
        (1..self.layers.len()).map(|to| Edge { from: to - 1, to })
    }
}
