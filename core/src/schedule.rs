//! Schedules: the chosen state of every layer and the predicted cost.
//!
//! A schedule is self-describing (each choice carries its state, not only
//! an index), so a runtime can launch it without the candidate tables. It
//! travels in the [`wire`](crate::wire) format.

use crate::built::ScheduleProblem;
use crate::problem::{incident, Problem};
use crate::solution::Solution;
use crate::state::{State, StateIndex};
use serde::{Deserialize, Serialize};

/// The choice for one layer.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, postcard::experimental::max_size::MaxSize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Choice {
    /// Index of the state in the layer's candidate space.
    pub index: StateIndex,
    /// The state.
    pub state: State,
    /// Predicted unary cost, in microseconds.
    pub unary_us: f32,
    /// Predicted transition cost from the layer's inputs (on a chain, the
    /// previous layer), in microseconds.
    pub transition_us: f32,
}

/// One choice per layer and the predicted total, in microseconds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, postcard::experimental::max_size::MaxSize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Schedule<const L: usize> {
    /// Choices in layer order.
    pub choices: heapless::Vec<Choice, L>,
    /// Predicted total cost.
    pub cost_us: f32,
}

impl<const L: usize> Schedule<L> {
    /// The schedule of `solution` on `problem`; `None` if the solution does
    /// not belong to the problem.
    pub fn from_solution<const W: usize>(problem: &ScheduleProblem<L, W>, solution: &Solution<L>) -> Option<Self> {
        let mut choices = heapless::Vec::new();
        for (i, &s) in solution.states.iter().enumerate() {
            let layer = problem.layer(i)?;
            // The transitions of the edges into the layer, in edge order.
            let mut transition_us: Option<f32> = None;
            for (e, ends) in incident(problem, i) {
                if ends.to != i {
                    continue;
                }
                let t = problem.transition(e, *solution.states.get(ends.from)?, s);
                transition_us = Some(transition_us.map_or(t, |sum| sum + t));
            }
            let transition_us = transition_us.unwrap_or(0.0);
            let choice = Choice { index: s, state: *layer.state(s)?, unary_us: layer.unary(s), transition_us };
            choices.push(choice).ok()?;
        }
        Some(Schedule { choices, cost_us: solution.cost })
    }
}
