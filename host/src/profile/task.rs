//! One record a run is to make ([`Task`]), and a run's tasks per workload
//! ([`Plan`]): what the plan, the estimate, the dealing and the measuring
//! pass to one another.

use crate::database::record::Source;
use crate::family::Config;

/// One record to make.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    /// What is timed.
    pub source: Source,
    /// The configuration (kernels of a family only).
    pub config: Option<Config>,
}

/// The tasks of one workload, by its index in the options' workloads.
pub type Plan = Vec<(usize, Vec<Task>)>;
