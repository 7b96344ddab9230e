//! The command's inputs: hardware specs, models, cost-model coefficients
//! and workloads, each from a built-in or a JSON file, checked so that
//! every error names the file and the field.
//!
//! - [`spec_file`]: hardware specs (`specs/`), and the built-in spec of a
//!   device;
//! - [`model_file`]: models (chains of layers);
//! - [`coefficients_file`]: the cost model's coefficients, and the
//!   calibrated ones built into the binary;
//! - [`workload_file`]: the workloads a profiling run measures;
//! - [`partition`]: a partition of a GPU (`--sms`, `--smem-kb`) as a spec;
//! - [`json`]: parsing with errors that name the file and the field.

pub mod coefficients_file;
pub mod json;
pub mod model_file;
pub mod partition;
pub mod spec_file;
pub mod workload_file;
