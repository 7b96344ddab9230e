//! Tuning: choosing a configuration by measuring only what the cost model
//! ranks best, and judging such choices on a common bench.
//!
//! - [`rank`]: the configurations of an operator ranked by predicted cost;
//! - [`shortlist`]: which `k` of them a top-k run measures (the model's
//!   first `k`, hedged across kernel families);
//! - [`finalists`]: the configurations close enough to the fastest to be
//!   measured again, and the choice among two passes;
//! - [`top_k`]: the measured top-k strategy (`hwwfc tune`): the model's
//!   top k side by side, then the finalists side by side again;
//! - [`judge`]: several runs' choices measured afresh in several passes
//!   (`hwwfc judge`), and each run's share of the best.
//!
//! Measuring goes through [`crate::profile`]; the records through
//! [`crate::database`].

pub mod finalists;
pub mod judge;
pub mod rank;
pub mod shortlist;
pub mod top_k;

use crate::gpu::DeviceInfo;
use anyhow::Result;
use hwwfc_core::HardwareSpec;
use std::sync::Arc;

/// Picks the spec of a device, shared by the several passes of one
/// tuning or judging run.
pub type SharedSpecFor = Arc<dyn Fn(&DeviceInfo) -> Result<HardwareSpec> + Send + Sync>;

/// A profiling pass's spec picker from a shared one.
pub fn spec_for_pass(shared: &SharedSpecFor) -> crate::profile::SpecFor {
    let shared = shared.clone();
    Box::new(move |info| shared(info))
}
