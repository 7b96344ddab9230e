//! What `profile --plan` prints: per workload, the records a run would
//! make, those the output folder lacks, and their predicted device time;
//! as a table or as one JSON object (`--json`):
//!
//! ```text
//! spec, shard ("I/N" or null), out, policy {warmup, min_repeats, max_repeats, target_ms}
//! workloads[]   name, shape, records, missing, seconds (predicted, of the missing),
//!               missing_keys: [source, configuration index] of each missing record
//!               (source kernel, cublas or copy; index 0 where there is no configuration)
//! records, missing, programs, seconds   the totals (programs: kernels to compile)
//! ```

use super::table::{layout, Align};
use serde::Serialize;

/// One workload of the plan.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadPlan {
    /// The workload's name.
    pub name: String,
    /// Its shape, as the profiler's log writes it.
    pub shape: String,
    /// The records a run makes for it (of this shard).
    pub records: usize,
    /// Of which the output folder lacks.
    pub missing: usize,
    /// Predicted device seconds of the missing ones.
    pub seconds: f64,
    /// The missing records' keys: source and configuration index.
    pub missing_keys: Vec<(String, u16)>,
}

/// The whole plan.
#[derive(Clone, Debug, Serialize)]
pub struct PlanReport {
    /// The spec the configurations come from.
    pub spec: String,
    /// The shard, `I/N`, if the run is one.
    pub shard: Option<String>,
    /// The output folder.
    pub out: String,
    /// The timing policy the prediction assumes.
    pub policy: serde_json::Value,
    /// Per workload, in the file's order.
    pub workloads: Vec<WorkloadPlan>,
    /// Records in all.
    pub records: usize,
    /// Records the output folder lacks.
    pub missing: usize,
    /// Programs to compile for the missing records.
    pub programs: usize,
    /// Predicted device seconds of the missing records.
    pub seconds: f64,
}

/// The plan as a table and its totals.
pub fn render(p: &PlanReport) -> String {
    let header = [
        ("workload", Align::Left),
        ("shape", Align::Left),
        ("records", Align::Right),
        ("missing", Align::Right),
        ("predicted_s", Align::Right),
    ];
    let rows: Vec<Vec<String>> = p
        .workloads
        .iter()
        .map(|w| {
            vec![
                w.name.clone(),
                w.shape.clone(),
                w.records.to_string(),
                w.missing.to_string(),
                format!("{:.1}", w.seconds),
            ]
        })
        .collect();
    let shard = p.shard.as_deref().map_or(String::new(), |s| format!(", shard {s}"));
    format!(
        "plan of {} on {}{shard}\n\n{}\n{} records, {} missing in {}, {} programs to compile; \
         predicted {:.0} s of device time ({:.1} min), compiling besides\n",
        p.out,
        p.spec,
        layout(&header, &rows),
        p.records,
        p.missing,
        p.out,
        p.programs,
        p.seconds,
        p.seconds / 60.0
    )
}
