//! The command's inputs: hardware specs, models and cost-model
//! coefficients, each from a built-in or a JSON file, checked so that every
//! error names the file and the field.

pub mod coefficients_file;
pub mod json;
pub mod model_file;
pub mod spec_file;
