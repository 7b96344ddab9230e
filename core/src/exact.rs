//! The exact solver: Viterbi dynamic programming over a chain
//! (the `viterbi` module: the work is `sum |D_i| * |D_{i+1}|`, ties go to the
//! lower state index).
//!
//! A problem that is not a chain goes to the DAG solver
//! ([`crate::exact_dag`]) with its default budget of cutset assignments.

use crate::exact_dag;
use crate::problem::Problem;
use crate::solution::{Solution, SolveError};
use crate::viterbi;

/// Statistics of an exact solve.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ExactStats {
    /// Pairs of states relaxed.
    pub relaxations: u32,
}

/// The optimal schedule of a chain of at most `L` layers; of another DAG,
/// [`exact_dag::solve`] with [`exact_dag::DEFAULT_BUDGET`] (its relaxations
/// counted here, saturating).
pub fn solve<P: Problem<W>, const L: usize, const W: usize>(p: &P) -> Result<(Solution<L>, ExactStats), SolveError> {
    if !p.is_chain() {
        let (s, st) = exact_dag::solve_general::<P, L, W>(p, exact_dag::DEFAULT_BUDGET)?;
        return Ok((s, ExactStats { relaxations: u32::try_from(st.relaxations).unwrap_or(u32::MAX) }));
    }
    let (s, relaxations) = viterbi::solve::<P, L, W>(p)?;
    Ok((s, ExactStats { relaxations }))
}
