//! A partition of a GPU asked for on the command line: some of its SMs
//! (`--sms N`) and a per-block shared-memory budget (`--smem-kb K`), turned
//! into the spec the constraints and the cost model see
//! ([`hwwfc_core::HardwareSpec::partition`]).

use anyhow::{anyhow, Result};
use clap::Args;
use hwwfc_core::HardwareSpec;
use serde::{Deserialize, Serialize};

/// `--sms` and `--smem-kb`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Args)]
pub struct PartitionArgs {
    /// Schedule for a partition of this many of the spec's SMs (such as a
    /// green context's): the arithmetic rates scale with the SMs; the DRAM
    /// bandwidth and the L2 stay the whole GPU's, of which each SM draws at
    /// most its own port's rate.
    #[arg(long, value_name = "N")]
    pub sms: Option<u32>,

    /// Allow each block at most this many KiB of shared memory (a budget
    /// below the spec's; states that need more are removed).
    #[arg(long = "smem-kb", value_name = "K")]
    pub smem_kb: Option<u32>,
}

/// The partition a spec was cut to, for the reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partition {
    /// SMs of the partition.
    pub sms: u32,
    /// SMs of the whole spec.
    pub of_sms: u32,
    /// Shared memory a block may use, bytes.
    pub sram_per_block_bytes: u32,
    /// Shared memory a block may use on the whole spec, bytes.
    pub of_sram_per_block_bytes: u32,
}

impl std::fmt::Display for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of {} SMs, {} of {} KiB shared memory per block",
            self.sms,
            self.of_sms,
            self.sram_per_block_bytes / 1024,
            self.of_sram_per_block_bytes / 1024
        )
    }
}

impl PartitionArgs {
    /// Whether a partition was asked for.
    pub fn is_some(&self) -> bool {
        self.sms.is_some() || self.smem_kb.is_some()
    }

    /// `spec` cut to the partition, and what was cut (`None` when no
    /// partition was asked for); an impossible partition is an error that
    /// names the spec.
    pub fn apply(&self, spec: &HardwareSpec) -> Result<(HardwareSpec, Option<Partition>)> {
        if !self.is_some() {
            return Ok((spec.clone(), None));
        }
        let bytes = match self.smem_kb {
            Some(k) => Some(k.checked_mul(1024).ok_or_else(|| anyhow!("--smem-kb {k}: too large"))?),
            None => None,
        };
        let part = spec.partition(self.sms, bytes).map_err(|e| anyhow!("spec `{}`: {e}", spec.name))?;
        let cut = Partition {
            sms: part.sm_count,
            of_sms: spec.sm_count,
            sram_per_block_bytes: part.sram_per_block_bytes,
            of_sram_per_block_bytes: spec.sram_per_block_bytes,
        };
        Ok((part, Some(cut)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_partition_is_the_spec_and_a_partition_is_described() {
        let spec = hwwfc_core::presets::stress_gpu();
        let (same, none) = PartitionArgs::default().apply(&spec).unwrap();
        assert_eq!((same, none), (spec.clone(), None));
        let args = PartitionArgs { sms: Some(1), smem_kb: Some(8) };
        let (part, cut) = args.apply(&spec).unwrap();
        assert_eq!(part.sm_count, 1);
        assert_eq!(part.sram_per_block_bytes, 8192);
        let cut = cut.unwrap();
        assert_eq!(cut.of_sms, spec.sm_count);
        assert!(cut.to_string().starts_with("1 of "), "{cut}");
        let e = PartitionArgs { sms: Some(spec.sm_count + 1), smem_kb: None }.apply(&spec).unwrap_err().to_string();
        assert!(e.contains("stress_gpu") && e.contains("SMs"), "{e}");
        let e = PartitionArgs { sms: None, smem_kb: Some(u32::MAX) }.apply(&spec).unwrap_err().to_string();
        assert!(e.contains("too large"), "{e}");
    }
}
