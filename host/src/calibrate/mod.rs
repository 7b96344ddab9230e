//! Calibration: fitting the core's cost-model coefficients to measured
//! times, and judging a fit only on workloads it did not see.
//!
//! - [`dataset`]: the committed records, grouped per workload, with the
//!   test-retest ceiling of repeated runs;
//! - [`metrics`]: rank correlations, regret and best-in-top-k of a
//!   prediction against measurements;
//! - [`fit`]: the loss and its minimization (Levenberg-Marquardt, then
//!   `argmin`'s Nelder-Mead), over a
//!   parameterization that keeps every coefficient physical;
//! - [`evaluate`]: cross-validation and the evaluation of given
//!   coefficients;
//! - [`report`]: the per-workload table and means of an evaluation;
//! - [`bias`]: where the model is biased, per class of configuration;
//! - [`plot`]: the SVG plots (predicted against measured, rho per
//!   workload);
//! - [`session`]: the steps `calibrate` and `report` share (reading a
//!   dataset with its spec, cross-validating, writing the files).
//!
//! The prediction is always the core's own [`hwwfc_core::cost::unary_cost`]:
//! there is no second copy of the model on the host.

pub mod bias;
pub mod dataset;
pub mod evaluate;
pub mod fit;
pub mod metrics;
pub mod plot;
pub mod report;
pub mod session;
