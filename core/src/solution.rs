//! What every solver returns: one state per layer and the total cost, or a
//! typed reason why there is none.

use crate::problem::Problem;
use crate::state::StateIndex;
use core::fmt;

/// One state per layer and the total cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Solution<const L: usize> {
    /// The chosen state of each layer.
    pub states: heapless::Vec<StateIndex, L>,
    /// Sum of unary and transition costs.
    pub cost: f32,
}

/// Why a solver returned no schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SolveError {
    /// The problem has no layers.
    Empty,
    /// More layers than the solver's capacity `L`.
    TooManyLayers {
        /// The capacity.
        capacity: usize,
    },
    /// No assignment satisfies the constraints; the layer is where the
    /// solver found out.
    Infeasible {
        /// A layer left without states.
        layer: usize,
    },
    /// WFC met more contradictions than its backtracking budget allows.
    BacktrackLimit {
        /// The budget.
        limit: u32,
    },
    /// A unary or transition cost is NaN or infinite for an allowed state.
    NonFiniteCost {
        /// The layer.
        layer: usize,
    },
    /// The exhaustive enumerator was given more combinations than its
    /// limit, or the exact DAG solver more assignments of its loop cutset
    /// than its budget.
    TooManyCombinations {
        /// The limit.
        limit: u64,
    },
}

impl fmt::Display for SolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SolveError::Empty => f.write_str("the problem has no layers"),
            SolveError::TooManyLayers { capacity } => write!(f, "more than {capacity} layers"),
            SolveError::Infeasible { layer } => {
                write!(f, "no feasible schedule (layer {layer} has no state left)")
            }
            SolveError::BacktrackLimit { limit } => write!(f, "gave up after {limit} backtracks"),
            SolveError::NonFiniteCost { layer } => write!(f, "layer {layer}: non-finite cost"),
            SolveError::TooManyCombinations { limit } => {
                write!(f, "more than {limit} combinations to enumerate")
            }
        }
    }
}

/// Checks a problem before solving: not empty, within capacity, every
/// allowed state with a finite unary cost.
pub(crate) fn precheck<P: Problem<W>, const L: usize, const W: usize>(p: &P) -> Result<usize, SolveError> {
    let n = p.layer_count();
    if n == 0 {
        return Err(SolveError::Empty);
    }
    if n > L {
        return Err(SolveError::TooManyLayers { capacity: L });
    }
    for layer in 0..n {
        let d = p.domain(layer);
        if d.is_empty() {
            return Err(SolveError::Infeasible { layer });
        }
        if d.iter().any(|s| !p.unary(layer, s).is_finite()) {
            return Err(SolveError::NonFiniteCost { layer });
        }
    }
    Ok(n)
}
