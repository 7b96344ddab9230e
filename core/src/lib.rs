//! # hwwfc-core
//!
//! Picks a kernel configuration for every layer of a model without running
//! the kernels: a Wave-Function-Collapse search (and an exact dynamic
//! program beside it) over per-layer candidate domains, under the
//! hardware's hard limits, scored by a physics-based cost model whose
//! coefficients are fitted to real GPU timings.
//!
//! `no_std`, no allocation, no `unsafe`, no panics: capacities are const
//! generics (`L` layers per graph, `64 * W` states per domain), and every
//! failure is a small error enum.
//!
//! ```
//! use hwwfc_core::{models, presets, wfc, exact, Coefficients, ScheduleProblem};
//!
//! let graph = models::builtin::<8>("attention", None).unwrap();
//! let spec = presets::stress_gpu();
//! let problem = ScheduleProblem::<8, 1>::build(&graph, &spec, &Coefficients::default()).unwrap();
//! let (w, _) = wfc::solve::<_, 8, 1>(&problem, &wfc::WfcConfig::default()).unwrap();
//! let (e, _) = exact::solve::<_, 8, 1>(&problem).unwrap();
//! assert_eq!(w.states, e.states);
//! ```
//!
//! The pieces, each in its own module:
//!
//! | module | holds |
//! | --- | --- |
//! | [`spec`] | hardware limits and rates, validated |
//! | [`layer`], [`graph`] | operators and shapes; the DAG of layers |
//! | [`state`], [`space`] | candidate states and the constant tables of them |
//! | [`domain`] | fixed-capacity bitsets of states |
//! | [`resource`], [`constraint`] | what a state uses; the rules that remove states |
//! | [`problem`] | the solvers' view of a problem ([`Problem`]) and [`problem::evaluate`] |
//! | [`propagate`] | arc-consistent propagation of the adjacency rule |
//! | [`cost`] | the cost model and its coefficients |
//! | [`built`] | the problem built from a graph, a spec and the cost model ([`ScheduleProblem`]) |
//! | [`wfc`], [`exact`], [`exact_dag`], [`exhaustive`] | the solvers |
//! | [`solution`], [`schedule`], [`wire`] | results and their byte encoding |
//! | [`models`], [`presets`] | built-in models and specs |

#![no_std]
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::unreachable,
        clippy::todo
    )
)]

pub mod built;
pub mod constraint;
pub mod cost;
pub mod domain;
pub mod dtype;
pub mod exact;
pub mod exact_dag;
pub mod exhaustive;
pub mod graph;
pub mod layer;
pub mod models;
pub mod presets;
pub mod problem;
pub mod propagate;
pub mod resource;
pub mod schedule;
pub mod solution;
pub mod space;
pub mod spec;
pub mod state;
mod viterbi;
pub mod wfc;
pub mod wire;

pub use built::{BuildError, BuildOptions, LayerPlan, ScheduleProblem};
pub use constraint::Constraint;
pub use cost::Coefficients;
pub use domain::Domain;
pub use dtype::DType;
pub use graph::Graph;
pub use layer::{ElementwiseKind, Layer, Op, OpKind};
pub use problem::Problem;
pub use schedule::Schedule;
pub use solution::{Solution, SolveError};
pub use spec::HardwareSpec;
pub use state::{Layout, Placement, State, StateIndex};

/// Most layers of a graph in the host build.
pub const HOST_MAX_LAYERS: usize = 64;
/// Domain words of the host build (`64 * 14 = 896` states per layer).
pub const HOST_DOMAIN_WORDS: usize = 14;
