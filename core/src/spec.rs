//! Hardware specifications: the limits and rates that the constraints and
//! the cost model read.
//!
//! A spec describes one accelerator: a real GPU from its datasheet, or a
//! virtual one (such as `stress_gpu`, with 12 KB of SRAM) used to explore
//! tight designs. [`HardwareSpec::validate`] rejects a spec that no
//! constraint or cost could be computed from, naming the offending field.

use crate::dtype::DType;
use crate::space::SpaceKind;
use core::fmt;
use serde::{Deserialize, Serialize};

/// Capacity of [`HardwareSpec::name`].
pub const NAME_CAPACITY: usize = 32;

/// Peak arithmetic rate per element type, in TFLOP/s (dense, no sparsity).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, postcard::experimental::max_size::MaxSize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[serde(deny_unknown_fields)]
pub struct PeakCompute {
    /// fp16 inputs on the matrix units, fp32 accumulation.
    pub f16: f32,
    /// bf16 inputs on the matrix units, fp32 accumulation.
    pub bf16: f32,
    /// fp32 on the vector (CUDA) cores.
    pub f32: f32,
}

impl PeakCompute {
    /// Peak TFLOP/s for `dtype`.
    pub const fn for_dtype(&self, dtype: DType) -> f32 {
        match dtype {
            DType::F16 => self.f16,
            DType::Bf16 => self.bf16,
            DType::F32 => self.f32,
        }
    }
}

/// One accelerator's limits and rates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, postcard::experimental::max_size::MaxSize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[serde(deny_unknown_fields)]
pub struct HardwareSpec {
    /// Short name, such as `h200` or `stress_gpu`.
    pub name: heapless::String<NAME_CAPACITY>,
    /// Which candidate space the layers of this accelerator draw from.
    pub space: SpaceKind,
    /// SRAM (shared memory) one block (CTA) may use, in bytes.
    pub sram_per_block_bytes: u32,
    /// SRAM (shared memory) of one SM, in bytes; bounds co-resident blocks.
    pub sram_per_sm_bytes: u32,
    /// Required alignment of a tile row in bytes (memory transaction size).
    pub alignment_bytes: u32,
    /// DRAM bandwidth in GB/s (10^9 bytes per second).
    pub dram_bandwidth_gbps: f32,
    /// Peak arithmetic rates.
    pub peak_tflops: PeakCompute,
    /// Number of SMs (cores that each run blocks).
    pub sm_count: u32,
    /// Last-level (L2) cache size in bytes.
    pub l2_bytes: u32,
    /// Fixed cost of one kernel launch, in microseconds.
    pub launch_overhead_us: f32,
    /// Most threads in one block.
    pub max_threads_per_block: u32,
    /// Most threads resident on one SM.
    pub max_threads_per_sm: u32,
    /// Most blocks resident on one SM.
    pub max_blocks_per_sm: u32,
    /// 32-bit registers of one SM.
    pub registers_per_sm: u32,
}

/// The fields of a [`HardwareSpec`], to name the one that is wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[allow(missing_docs)]
pub enum SpecField {
    Name,
    SramPerBlockBytes,
    SramPerSmBytes,
    AlignmentBytes,
    DramBandwidthGbps,
    PeakTflopsF16,
    PeakTflopsBf16,
    PeakTflopsF32,
    SmCount,
    L2Bytes,
    LaunchOverheadUs,
    MaxThreadsPerBlock,
    MaxThreadsPerSm,
    MaxBlocksPerSm,
    RegistersPerSm,
}

impl SpecField {
    /// The field's name as written in a spec file.
    pub const fn name(self) -> &'static str {
        match self {
            SpecField::Name => "name",
            SpecField::SramPerBlockBytes => "sram_per_block_bytes",
            SpecField::SramPerSmBytes => "sram_per_sm_bytes",
            SpecField::AlignmentBytes => "alignment_bytes",
            SpecField::DramBandwidthGbps => "dram_bandwidth_gbps",
            SpecField::PeakTflopsF16 => "peak_tflops.f16",
            SpecField::PeakTflopsBf16 => "peak_tflops.bf16",
            SpecField::PeakTflopsF32 => "peak_tflops.f32",
            SpecField::SmCount => "sm_count",
            SpecField::L2Bytes => "l2_bytes",
            SpecField::LaunchOverheadUs => "launch_overhead_us",
            SpecField::MaxThreadsPerBlock => "max_threads_per_block",
            SpecField::MaxThreadsPerSm => "max_threads_per_sm",
            SpecField::MaxBlocksPerSm => "max_blocks_per_sm",
            SpecField::RegistersPerSm => "registers_per_sm",
        }
    }
}

/// Why a spec was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SpecError {
    /// The field must be greater than zero (and finite).
    NotPositive(SpecField),
    /// The field must be zero or more (and finite).
    Negative(SpecField),
    /// The field must be a power of two.
    NotPowerOfTwo(SpecField),
    /// The field may not exceed the other field.
    Exceeds(SpecField, SpecField),
    /// The name is empty.
    EmptyName,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpecError::NotPositive(field) => {
                write!(f, "`{}` must be a positive, finite number", field.name())
            }
            SpecError::Negative(field) => {
                write!(f, "`{}` must be a finite number, zero or more", field.name())
            }
            SpecError::NotPowerOfTwo(field) => {
                write!(f, "`{}` must be a power of two", field.name())
            }
            SpecError::Exceeds(a, b) => {
                write!(f, "`{}` may not exceed `{}`", a.name(), b.name())
            }
            SpecError::EmptyName => f.write_str("`name` must not be empty"),
        }
    }
}

fn positive_f32(value: f32, field: SpecField) -> Result<(), SpecError> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(SpecError::NotPositive(field))
    }
}

fn positive_u32(value: u32, field: SpecField) -> Result<(), SpecError> {
    if value > 0 {
        Ok(())
    } else {
        Err(SpecError::NotPositive(field))
    }
}

impl HardwareSpec {
    /// Checks that every field can be used by the constraints and the cost
    /// model; the error names the first field that cannot.
    pub fn validate(&self) -> Result<(), SpecError> {
        use SpecField as F;
        if self.name.is_empty() {
            return Err(SpecError::EmptyName);
        }
        positive_u32(self.sram_per_block_bytes, F::SramPerBlockBytes)?;
        positive_u32(self.sram_per_sm_bytes, F::SramPerSmBytes)?;
        positive_u32(self.alignment_bytes, F::AlignmentBytes)?;
        if !self.alignment_bytes.is_power_of_two() {
            return Err(SpecError::NotPowerOfTwo(F::AlignmentBytes));
        }
        positive_f32(self.dram_bandwidth_gbps, F::DramBandwidthGbps)?;
        positive_f32(self.peak_tflops.f16, F::PeakTflopsF16)?;
        positive_f32(self.peak_tflops.bf16, F::PeakTflopsBf16)?;
        positive_f32(self.peak_tflops.f32, F::PeakTflopsF32)?;
        positive_u32(self.sm_count, F::SmCount)?;
        positive_u32(self.l2_bytes, F::L2Bytes)?;
        if !(self.launch_overhead_us.is_finite() && self.launch_overhead_us >= 0.0) {
            return Err(SpecError::Negative(F::LaunchOverheadUs));
        }
        positive_u32(self.max_threads_per_block, F::MaxThreadsPerBlock)?;
        positive_u32(self.max_threads_per_sm, F::MaxThreadsPerSm)?;
        positive_u32(self.max_blocks_per_sm, F::MaxBlocksPerSm)?;
        positive_u32(self.registers_per_sm, F::RegistersPerSm)?;
        if self.sram_per_block_bytes > self.sram_per_sm_bytes {
            return Err(SpecError::Exceeds(F::SramPerBlockBytes, F::SramPerSmBytes));
        }
        if self.max_threads_per_block > self.max_threads_per_sm {
            return Err(SpecError::Exceeds(F::MaxThreadsPerBlock, F::MaxThreadsPerSm));
        }
        Ok(())
    }

    /// Peak rate for `dtype` in FLOP per microsecond for the whole device.
    pub fn peak_flop_per_us(&self, dtype: DType) -> f32 {
        self.peak_tflops.for_dtype(dtype) * 1.0e6
    }

    /// DRAM bandwidth in bytes per microsecond.
    pub fn dram_bytes_per_us(&self) -> f32 {
        self.dram_bandwidth_gbps * 1.0e3
    }
}

/// Why a partition of a spec could not be made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PartitionError {
    /// A partition needs at least one SM.
    NoSms,
    /// More SMs than the accelerator has.
    TooManySms {
        /// SMs asked for.
        asked: u32,
        /// SMs of the accelerator.
        available: u32,
    },
    /// A shared-memory budget of zero bytes.
    NoSram,
    /// A per-block shared-memory budget above what a block may use.
    SramExceeds {
        /// Bytes asked for.
        asked: u32,
        /// Bytes a block may use on the accelerator.
        available: u32,
    },
}

impl fmt::Display for PartitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PartitionError::NoSms => f.write_str("a partition needs at least one SM"),
            PartitionError::TooManySms { asked, available } => {
                write!(f, "a partition of {asked} SMs: the accelerator has {available}")
            }
            PartitionError::NoSram => f.write_str("a shared-memory budget must be more than 0 bytes"),
            PartitionError::SramExceeds { asked, available } => write!(
                f,
                "a shared-memory budget of {asked} bytes per block: a block may use at most {available} on the accelerator"
            ),
        }
    }
}

impl HardwareSpec {
    /// The spec of a part of this accelerator: `sms` of its SMs, and blocks
    /// that may use at most `sram_per_block_bytes` of shared memory (`None`
    /// keeps the whole).
    ///
    /// What each SM has and does is unchanged, so the peak arithmetic rates,
    /// which are the whole device's, scale with the SMs kept. The DRAM
    /// bandwidth and the L2 stay the whole device's: a partition shares them
    /// with the rest of the GPU, and the spec describes a tenant that runs
    /// alone. What limits a few SMs' reach is in the cost model: each SM
    /// draws at most its own port's rate (`sm_bytes_per_flop` of its share
    /// of the peak, fitted on the whole GPU, where small grids leave SMs
    /// idle) and what its bytes in flight allow. The name is kept, so that
    /// coefficients fitted on the whole GPU apply.
    pub fn partition(
        &self,
        sms: Option<u32>,
        sram_per_block_bytes: Option<u32>,
    ) -> Result<HardwareSpec, PartitionError> {
        let mut s = self.clone();
        if let Some(n) = sms {
            if n == 0 {
                return Err(PartitionError::NoSms);
            }
            if n > self.sm_count {
                return Err(PartitionError::TooManySms { asked: n, available: self.sm_count });
            }
            let share = n as f32 / self.sm_count.max(1) as f32;
            s.sm_count = n;
            s.peak_tflops = PeakCompute {
                f16: self.peak_tflops.f16 * share,
                bf16: self.peak_tflops.bf16 * share,
                f32: self.peak_tflops.f32 * share,
            };
        }
        if let Some(bytes) = sram_per_block_bytes {
            if bytes == 0 {
                return Err(PartitionError::NoSram);
            }
            if bytes > self.sram_per_block_bytes {
                return Err(PartitionError::SramExceeds { asked: bytes, available: self.sram_per_block_bytes });
            }
            s.sram_per_block_bytes = bytes;
        }
        Ok(s)
    }
}
