//! Element types of tensors.

use serde::{Deserialize, Serialize};

/// The element type of a layer's tensors.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, postcard::experimental::max_size::MaxSize,
)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[serde(rename_all = "lowercase")]
pub enum DType {
    /// IEEE 754 half precision.
    F16,
    /// bfloat16.
    Bf16,
    /// IEEE 754 single precision.
    F32,
}

impl DType {
    /// Size of one element in bytes.
    pub const fn bytes(self) -> u32 {
        match self {
            DType::F16 | DType::Bf16 => 2,
            DType::F32 => 4,
        }
    }

    /// Lower-case name, as written in JSON.
    pub const fn name(self) -> &'static str {
        match self {
            DType::F16 => "f16",
            DType::Bf16 => "bf16",
            DType::F32 => "f32",
        }
    }
}
