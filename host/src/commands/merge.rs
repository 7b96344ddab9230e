//! `hwwfc merge`: one run folder from the parts of a run measured apart
//! (the checks and the writing are [`crate::database::merge`]).

use crate::cli::MergeArgs;
use crate::database::merge;
use anyhow::Result;

/// Runs the command.
pub fn run(args: &MergeArgs) -> Result<()> {
    let m = merge::merge(&args.parts, &args.out, args.allow_gaps)?;
    let shards = if m.shards.is_empty() { String::new() } else { format!(" (shards {})", m.shards.join(", ")) };
    eprintln!("{}: {} records from {} parts{shards}", args.out.display(), m.records, args.parts.len());
    Ok(())
}
