//! The command line: subcommands and their options (clap).

use crate::input::{model_file, spec_file};
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// Largest `--seq`: keeps every element count of the built-in models well
/// inside `u64`, so the shape checks reject too-large tensors cleanly.
pub const MAX_SEQ: i64 = 1 << 24;

/// HW-WFC: picks a kernel configuration for every layer of a model without
/// running kernels.
#[derive(Debug, Parser)]
#[command(name = "hwwfc", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Schedule a model on a hardware spec: per layer, the tile, warps,
    /// pipeline depth, placement and layout of least predicted cost.
    #[command(after_long_help = schedule_help())]
    Schedule(ScheduleArgs),
    /// Time every configuration of the CUDA kernels on every workload on a
    /// GPU, each checked against a reference first; records are written as
    /// they are measured, and a rerun resumes where a run stopped.
    #[command(after_long_help = PROFILE_HELP)]
    Profile(ProfileArgs),
    /// Fit the cost model's coefficients to measured times (profiling first
    /// on a GPU, or from committed records with --data), write
    /// coefficients.json and coefficients.postcard, and report the fit's
    /// quality on workloads it did not see.
    Calibrate(CalibrateArgs),
    /// Judge a cost model against measured times: without --coefficients,
    /// leave-one-workload-out cross-validation of a fit; with it, exactly
    /// those coefficients. Writes REPORT.md and SVG plots into DIR.
    Report(ReportArgs),
    /// Measure only the K configurations the calibrated model ranks best
    /// for each workload, side by side (taking turns, repeat by repeat),
    /// keep the fastest, and compare it with an exhaustive search's
    /// records. Those within 5% of the fastest are measured a second time
    /// (records in OUT/confirm/), and the fastest of that second pass wins.
    Tune(TuneArgs),
    /// Measure the configurations that tuning runs chose (and the model's
    /// first choice, and the exhaustive search's finalists) afresh, side by
    /// side in several passes, and give each run its share of the
    /// exhaustive best on that common bench (OUT/judge.json).
    Judge(JudgeArgs),
    /// Merge the run folders of a run measured in parts (`profile --shard
    /// I/N` on several hosts) into one: the parts must be of one GPU model,
    /// driver, spec, timing policy and commit, hold every shard once,
    /// finished, and no record twice; the folder is written whole or not
    /// at all.
    Merge(MergeArgs),
    /// Judge a cost model on records of several partitions of one GPU
    /// (`profile --sms`, `--smem-kb`), each on its own spec, no refit: the
    /// agreement per partition, and per workload the measured best and the
    /// model's first choice on each partition.
    Partitions(PartitionsArgs),
    /// Two tenants sharing one GPU, each on its own partition of the SMs
    /// (a green context): the split of least predicted makespan, each
    /// tenant scheduled for its partition; with --measure, both run at once
    /// on the GPU against each alone and against both whole-GPU schedules
    /// one after the other.
    Tenants(TenantsArgs),
}

/// Options of `hwwfc merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The parts' run folders.
    #[arg(required = true, value_name = "DIR")]
    pub parts: Vec<PathBuf>,

    /// The merged run folder (must not exist yet).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,

    /// Merge even with shards missing or parts that did not finish.
    #[arg(long)]
    pub allow_gaps: bool,
}

/// Options of `hwwfc judge`.
#[derive(Debug, Args)]
pub struct JudgeArgs {
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub gpu: usize,

    /// The workloads file the runs tuned.
    #[arg(long, value_name = "FILE")]
    pub workloads: PathBuf,

    /// Folders of `hwwfc tune` (each with its tune.json); those of
    /// `--top-k 0` give the reference.
    #[arg(long, value_name = "DIR", num_args = 1.., required = true)]
    pub runs: Vec<PathBuf>,

    /// Passes over the candidates; each compiles and loads the kernels
    /// again and starts one place further along the list.
    #[arg(long, default_value_t = 5)]
    pub passes: usize,

    /// Output folder: pass-N/ records and judge.json (default: judge).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Spec (default: the built-in spec named in the device's name).
    #[arg(long, value_name = "FILE|NAME")]
    pub spec: Option<String>,
}

/// Options of `hwwfc tune`.
#[derive(Debug, Args)]
pub struct TuneArgs {
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub gpu: usize,

    /// Measure on these GPUs, one worker each (as `profile --gpus`).
    #[arg(long, value_name = "LIST|all")]
    pub gpus: Option<crate::profile::GpuList>,

    /// The workloads file (as for profile; transposes and copies are
    /// skipped).
    #[arg(long, value_name = "FILE")]
    pub workloads: PathBuf,

    /// Configurations to measure per workload; 0 measures all (exhaustive).
    #[arg(long, value_name = "K")]
    pub top_k: usize,

    /// Output folder: records.jsonl, meta.json and tune.json (default:
    /// tune-kK).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Coefficients ranking the configurations, JSON or .postcard
    /// (default: the calibrated ones built in for the spec, else the
    /// defaults).
    #[arg(long, value_name = "FILE")]
    pub coefficients: Option<PathBuf>,

    /// Spec (default: the built-in spec named in the device's name).
    #[arg(long, value_name = "FILE|NAME")]
    pub spec: Option<String>,

    /// Exhaustive records to compare with (a run folder, or a folder of
    /// runs), such as calib-data/h200.
    #[arg(long, value_name = "DIR")]
    pub reference: Option<PathBuf>,

    /// Use coefficients fitted for another spec or GPU (with a warning).
    #[arg(long)]
    pub allow_other_gpu: bool,

    /// Tune on a partition of the GPU: a green context of N SMs and a
    /// per-block shared-memory budget (as `profile --sms`, `--smem-kb`);
    /// the model ranks for the partition's spec.
    #[command(flatten)]
    pub partition: crate::input::partition::PartitionArgs,
}

/// Options of `hwwfc calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// CUDA device to profile (ignored with --data).
    #[arg(long, default_value_t = 0)]
    pub gpu: usize,

    /// Profile on these GPUs, one worker each (as `profile --gpus`).
    #[arg(long, value_name = "LIST|all")]
    pub gpus: Option<crate::profile::GpuList>,

    /// Profile on a partition of the GPU (as `profile --sms`, `--smem-kb`;
    /// ignored with --data, whose runs name their partition).
    #[command(flatten)]
    pub partition: crate::input::partition::PartitionArgs,

    /// Workloads to profile (default: calib-data/workloads.json).
    #[arg(long, value_name = "FILE")]
    pub workloads: Option<PathBuf>,

    /// Output folder: the records (when profiling), coefficients.json,
    /// coefficients.postcard, REPORT.md and plots/ (default: the data
    /// folder, or calib-data/gpu when profiling).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Fit from these records instead of profiling (no GPU needed): a run
    /// folder with records.jsonl, or a folder of run folders.
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,

    /// Spec whose rates the model uses (default: the built-in spec named in
    /// the device's name).
    #[arg(long, value_name = "FILE|NAME")]
    pub spec: Option<String>,

    /// Skip the cross-validated report (the fit alone takes seconds, the
    /// report a few minutes).
    #[arg(long)]
    pub no_report: bool,
}

/// Options of `hwwfc partitions`.
#[derive(Debug, Args)]
pub struct PartitionsArgs {
    /// A folder of run folders, measured on partitions of one GPU (and on
    /// the whole GPU, which is compared with them).
    #[arg(long, value_name = "DIR")]
    pub data: PathBuf,

    /// The coefficients to judge, JSON or .postcard (default: the built-in
    /// calibrated coefficients of the records' spec, else the defaults).
    #[arg(long, value_name = "FILE")]
    pub coefficients: Option<PathBuf>,

    /// Use a coefficients file fitted for another spec or GPU anyway.
    #[arg(long)]
    pub allow_other_gpu: bool,

    /// Spec whose rates the model uses (default: the built-in spec named in
    /// the device's name), cut to each run's partition.
    #[arg(long, value_name = "FILE|NAME")]
    pub spec: Option<String>,

    /// Print one JSON object (coefficients, partitions[...] each with its
    /// means and per-workload choices) instead of the tables.
    #[arg(long)]
    pub json: bool,

    /// Also draw, as SVG into FILE, each workload's first choice as a share
    /// of its partition's best, a row per partition.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
}

/// Options of `hwwfc tenants`.
#[derive(Debug, Args)]
pub struct TenantsArgs {
    /// Hardware spec of the whole GPU: a built-in name or a spec file (as
    /// for schedule).
    #[arg(long, value_name = "FILE|NAME", default_value = "h200")]
    pub spec: String,

    /// Tenant A's model: a built-in name or a model file.
    #[arg(long, value_name = "NAME|FILE", default_value = "llama3-8b-block")]
    pub model_a: String,

    /// Sequence length of tenant A's built-in model (default: 2048).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=MAX_SEQ))]
    pub seq_a: Option<u32>,

    /// Tenant B's model: a built-in name or a model file.
    #[arg(long, value_name = "NAME|FILE", default_value = "llama3-8b-block")]
    pub model_b: String,

    /// Sequence length of tenant B's built-in model (default: 1, one
    /// token).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=MAX_SEQ))]
    pub seq_b: Option<u32>,

    /// Cost-model coefficients, JSON or .postcard (default: the calibrated
    /// ones built in for the spec, else the defaults).
    #[arg(long, value_name = "FILE")]
    pub coefficients: Option<PathBuf>,

    /// Use a coefficients file fitted for another spec anyway (with a
    /// warning).
    #[arg(long)]
    pub allow_other_gpu: bool,

    /// Give tenant A this many SMs (a multiple of --granularity) instead of
    /// the split the plan chooses.
    #[arg(long, value_name = "N")]
    pub split: Option<u32>,

    /// Every partition is a multiple of this many SMs (the driver's step
    /// for a green context: 8 on Hopper).
    #[arg(long, value_name = "N", default_value_t = crate::tenants::DEFAULT_GRANULARITY)]
    pub granularity: u32,

    /// Print one JSON object instead of the tables.
    #[arg(long)]
    pub json: bool,

    /// Also run the tenants on the GPU: each alone on its partition (its
    /// own schedule and the whole GPU's), both at once, and both whole-GPU
    /// schedules one after the other on the whole GPU.
    #[arg(long)]
    pub measure: bool,

    /// CUDA device for --measure.
    #[arg(long, default_value_t = 0)]
    pub gpu: usize,
}

/// Options of `hwwfc report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Records: a run folder with records.jsonl, or a folder of run folders.
    #[arg(long, value_name = "DIR")]
    pub data: PathBuf,

    /// Evaluate exactly these coefficients, JSON or .postcard (no refit).
    /// A file fitted for another spec or on another GPU than the records'
    /// is refused unless --allow-other-gpu is given.
    #[arg(long, value_name = "FILE")]
    pub coefficients: Option<PathBuf>,

    /// Use a coefficients file fitted for another spec or on another GPU
    /// anyway (with a warning).
    #[arg(long)]
    pub allow_other_gpu: bool,

    /// Spec whose rates the model uses (default: the built-in spec named in
    /// the device's name).
    #[arg(long, value_name = "FILE|NAME")]
    pub spec: Option<String>,

    /// What the cross-validation holds out (without --coefficients):
    /// each workload in turn, or each model family in turn (its workloads
    /// judged by the fit on all the other families; needs --workloads).
    /// By family the files are REPORT-family.md and plots-family/.
    #[arg(long, value_enum, default_value_t = HoldOut::Workload)]
    pub hold_out: HoldOut,

    /// A workloads file whose "family" labels name each workload's model
    /// family: the report adds the means per family.
    #[arg(long, value_name = "FILE")]
    pub workloads: Option<PathBuf>,

    /// Print one JSON object (mean_rho, mean_tau, mean_regret_top1,
    /// mean_top8_share, mean_tuned8_share, families[...], workloads[...])
    /// instead of the table.
    #[arg(long)]
    pub json: bool,

    /// Write no REPORT.md and no plots.
    #[arg(long)]
    pub no_files: bool,
}

/// What a cross-validation holds out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HoldOut {
    /// Each workload in turn.
    Workload,
    /// Each model family in turn.
    Family,
}

/// Options of `hwwfc profile`.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    pub gpu: usize,

    /// The workloads file (JSON; format below).
    #[arg(long, value_name = "FILE")]
    pub workloads: PathBuf,

    /// Output folder: records.jsonl and meta.json.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,

    /// Spec whose rates describe the GPU (default: the built-in spec named
    /// in the device's name, such as h200); its limits are read from the
    /// device.
    #[arg(long, value_name = "FILE|NAME")]
    pub spec: Option<String>,

    /// Label written into every record (default: the output folder's name).
    #[arg(long)]
    pub label: Option<String>,

    /// Untimed runs before the timed ones.
    #[arg(long, default_value_t = 2)]
    pub warmup: u32,

    /// Fewest timed runs per configuration.
    #[arg(long, default_value_t = 5)]
    pub min_repeats: u32,

    /// Most timed runs per configuration.
    #[arg(long, default_value_t = 25)]
    pub max_repeats: u32,

    /// Timed runs stop growing once they add up to this many milliseconds.
    #[arg(long, default_value_t = 40.0)]
    pub target_ms: f32,

    /// No line per workload (the progress bar stays).
    #[arg(long)]
    pub quiet: bool,

    /// Measure only these kernel families (comma-separated names: matmul,
    /// matmul_tma, softmax, elementwise; default: every family the device runs); the
    /// vendor's baseline and the copy and transposes are measured as ever.
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub kernels: Vec<String>,

    /// Measure on these GPUs (ordinals such as 0,1,2, or all), one worker
    /// each, workloads dealt out longest predicted first as workers free up,
    /// one writer for every record; the GPUs must be of one model.
    #[arg(long, value_name = "LIST|all")]
    pub gpus: Option<crate::profile::GpuList>,

    /// Measure on a partition of the GPU: a green context of N SMs (as
    /// the driver rounds it) and a per-block shared-memory budget.
    #[command(flatten)]
    pub partition: crate::input::partition::PartitionArgs,

    /// Measure only shard I of N (0 <= I < N): the work dealt out by
    /// predicted time, the same on every host, so that N processes measure
    /// disjoint parts into their own folders.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<crate::profile::shard::Shard>,

    /// Print what the run would measure (per workload, the records, those
    /// the output folder lacks, their predicted device time) and exit,
    /// without a GPU; needs --spec.
    #[arg(long)]
    pub plan: bool,

    /// With --plan: one JSON object instead of the table.
    #[arg(long, requires = "plan")]
    pub json: bool,

    /// With --plan: also compile every kernel the plan needs with NVRTC for
    /// this architecture (such as sm_90), without a GPU, and fail if any
    /// does not compile (each failure printed with NVRTC's log).
    #[arg(long, value_name = "ARCH", requires = "plan")]
    pub compile: Option<String>,

    /// With --compile: only N of the plan's kernels, spread evenly over its
    /// list (every workload's configurations in order), for a quicker check.
    #[arg(long, value_name = "N", requires = "compile")]
    pub compile_sample: Option<usize>,

    /// Check all of a workload's configurations first, then time them side
    /// by side, taking turns repeat by repeat, so that the GPU's changes of
    /// state (most likely its clocks under the power limit) fall on all of
    /// them alike; a workload's records are written after its last timing (a
    /// crash loses the workload in progress, not the ones before).
    #[arg(long)]
    pub interleave: bool,
}

const PROFILE_HELP: &str = "\
The workloads file is a JSON list of objects:
  {\"name\": \"mm_llama_4096\", \"kind\": \"matmul\", \"m\": 4096, \"n\": 4096, \"k\": 4096}
  {\"name\": \"scores\", \"kind\": \"matmul\", \"m\": 1024, \"n\": 1024, \"k\": 64, \"batch\": 12}
  {\"name\": \"sm_attn\", \"kind\": \"softmax\", \"rows\": 512, \"cols\": 512}
  {\"name\": \"t\", \"kind\": \"transpose\", \"rows\": 1024, \"cols\": 768}
  {\"name\": \"copy\", \"kind\": \"copy\", \"bytes\": 1073741824}
Matmuls are fp16 with fp32 accumulation (checked against cuBLAS, relative
error under 1e-2; cuBLAS is timed too), softmaxes fp32 (checked against an
fp64 reference, largest absolute difference under 1e-5). Every output is
poisoned before its checked run; a configuration that fails to compile,
launch or pass is recorded as failed, with the reason, and never timed.
Timing: CUDA events, warm-up, then repeats, each after a 256 MB write that
evicts the L2, with input sets rotated; the record holds the median, min,
max and spread (interquartile range over the median). By default each
configuration is timed right after its check and its record written at
once; with --interleave all of a workload's configurations are checked
first and then take turns, repeat by repeat (on the H200 one
configuration measured up to 14% apart from one pass to another, which
taking turns spreads over all of them alike).

--shard I/N deals every record of the run (whatever the folder holds) to
one of N parts, longest predicted first to the least loaded, the same way
on every host; each part goes to its own folder. --plan --spec NAME prints,
without a GPU, what the run would measure: per workload the records, those
the output folder lacks and their predicted device time (the cost model's
time of each launch times the runs the timing policy gives it, each with
its L2 flush and about 20 us of launching), and the kernels to compile;
with --compile ARCH it also compiles them (NVRTC only, no GPU or driver:
a kernel change can be checked on a machine without a GPU), with
--compile-sample N only N of them, spread evenly over the plan.

Without a GPU or a CUDA driver the command says so and exits non-zero.
NVRTC (libnvrtc.so) must be on the library path.";

/// Which solvers `schedule` runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SolverChoice {
    /// Wave-Function-Collapse search only.
    Wfc,
    /// The exact dynamic program only.
    Exact,
    /// Both, and compare them.
    Both,
}

/// Options of `hwwfc schedule`.
#[derive(Debug, Args)]
pub struct ScheduleArgs {
    /// Hardware spec: a built-in name (stress_gpu, toy_gpu, h200, h100,
    /// a100, rtx3060) or a path to a spec JSON file.
    #[arg(long, value_name = "FILE|NAME", default_value = "stress_gpu")]
    pub spec: String,

    /// Model: a built-in name (attention, gpt2-block, llama3-8b-block; as
    /// DAGs llama3-8b-attention, llama3-8b-dag; as whole blocks with their
    /// elementwise layers and residual edges llama3-8b-graph, gpt2-graph,
    /// vit-b16-graph, mixtral-moe-graph, llama3-8b-mlp-graph) or a path to a model JSON file
    /// (format below).
    #[arg(long, value_name = "NAME|FILE", default_value = "attention")]
    pub model: String,

    /// Sequence length of a built-in model (default: the model's own).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=MAX_SEQ))]
    pub seq: Option<u32>,

    /// Cost-model coefficients: a JSON file, bare or in the calibration
    /// wrapper {"format_version": V, "gpu": ..., "spec": ..., "coefficients":
    /// {...}} where V is the cost model's version, or a .postcard file in the wire format (refused if written
    /// for another cost-model version) (default: the model's built-in
    /// coefficients). A wrapper whose spec is not --spec's is refused
    /// unless --allow-other-gpu is given.
    #[arg(long, value_name = "FILE")]
    pub coefficients: Option<PathBuf>,

    /// Use a coefficients file fitted for another spec anyway (with a
    /// warning).
    #[arg(long)]
    pub allow_other_gpu: bool,

    /// A partition of the spec's GPU.
    #[command(flatten)]
    pub partition: crate::input::partition::PartitionArgs,

    /// Which solver to run.
    #[arg(long, value_enum, default_value_t = SolverChoice::Both)]
    pub solver: SolverChoice,

    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,

    /// No epilogue fusion: every elementwise layer runs as a kernel of its
    /// own (to see what fusing them is worth).
    #[arg(long)]
    pub no_fusion: bool,

    /// Also write the reduced problem (surviving states, transition
    /// matrices, the exact optimum) as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub dump_problem: Option<PathBuf>,

    /// Run the whole schedule on the GPU: its end-to-end time against the
    /// sum of every layer's measured best (all configurations of each
    /// layer's shape are measured, into --measure-out). Needs a spec of the
    /// cuda space.
    #[arg(long)]
    pub measure: bool,

    /// CUDA device for --measure.
    #[arg(long, default_value_t = 0)]
    pub gpu: usize,

    /// Folder for the per-layer records of --measure (default:
    /// measure-MODEL).
    #[arg(long, value_name = "DIR")]
    pub measure_out: Option<PathBuf>,

    /// With --measure: time only the schedule end to end and the same
    /// chain with the vendor's library, not every configuration of every
    /// layer (only the schedule's kernels are compiled: seconds, not
    /// minutes).
    #[arg(long, requires = "measure")]
    pub chain_only: bool,
}

/// The long help after `schedule`'s options: the file formats.
fn schedule_help() -> String {
    format!(
        "\
Built-in specs: {specs}.
A spec file holds the fields of a hardware spec (see specs/h200.json) plus a
required string `source` and an optional string `notes`; unknown fields are
rejected.

{model}

Output: per layer, the chosen state, its predicted cost in microseconds, the
states left after the constraints out of the candidates, and what removed the
others; then the combinations before and after the constraints, each solver's
predicted total, whether WFC and the exact DP agree, and the median build and
solve times over many repeats.

--json prints one object: spec, model, layers[] (name, kind, op, tile_m,
tile_n, tile_k, warps_m, warps_n, stages, split_k, pingpong, placement, layout, state_index,
unary_us, transition_us, candidates, states_left, removed {{constraint:
count}}), wfc_cost, exact_cost, wfc_states, exact_states, agree (same states), equal_cost
(same total within f32 rounding), gap_percent,
build_us, wfc_us, exact_us (medians, with *_repeats), wfc_stats,
combinations and space_combinations (decimal strings: a u128 may not fit a
JSON number). Fields of a solver that did not run are null.

--dump-problem FILE writes: layers[] with their surviving states (index,
state fields, unary_us); edges[] (from, to, transition_us: rows = the
producer's surviving states in order, columns = the consumer's, null for an
incompatible pair); optimum (states, cost_us) from the exact DP. The file is
written to a temporary file beside it and renamed, never half-written.",
        specs = spec_file::builtin_names().join(", "),
        model = model_file::format_help(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn builtin_lists_in_help_match() {
        let names = spec_file::builtin_names();
        assert_eq!(names, ["stress_gpu", "toy_gpu", "h200", "h100", "a100", "rtx3060"]);
        assert_eq!(
            hwwfc_core::models::NAMES,
            [
                "attention",
                "gpt2-block",
                "llama3-8b-block",
                "llama3-8b-attention",
                "llama3-8b-dag",
                "llama3-8b-graph",
                "gpt2-graph",
                "vit-b16-graph",
                "mixtral-moe-graph",
                "llama3-8b-mlp-graph"
            ]
        );
    }
}
