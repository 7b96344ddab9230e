//! `hwwfc tenants`: two models sharing one GPU, each on its own partition
//! of the SMs. Loads the spec, both models and the coefficients; plans the
//! split and both tenants' schedules ([`crate::tenants::plan`]); prints
//! the split table and the schedules, or one JSON object; with
//! `--measure`, runs both tenants on the GPU
//! ([`crate::profile::tenants::measure`]) and prints predicted against
//! measured times.

use crate::cli::TenantsArgs;
use crate::describe;
use crate::family::Config;
use crate::gpu::TimingPolicy;
use crate::input::coefficients_file;
use crate::input::model_file::{self, LoadedModel, Origin};
use crate::input::spec_file;
use crate::input::workload_file::Workload;
use crate::output::table::{layout, Align};
use crate::profile::tenants::{self as measuring, PairTiming, TenantChains};
use crate::tenants::{self, Evaluation, Plan, SplitOptions, TenantPlan, TenantSchedule};
use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::fmt::Write;

/// Tenant A's sequence length where none is given: a prefill.
pub const DEFAULT_SEQ_A: u32 = 2048;
/// Tenant B's sequence length where none is given: one token.
pub const DEFAULT_SEQ_B: u32 = 1;

/// Runs the command.
pub fn run(args: &TenantsArgs) -> Result<()> {
    let spec = spec_file::load(&args.spec)?;
    // The tenants split the whole GPU: a spec file of a partition is refused.
    let spec = spec_file::LoadedSpec { spec: spec.clone().whole()?, ..spec };
    let a = load_model(&args.model_a, args.seq_a, DEFAULT_SEQ_A).context("--model-a")?;
    let b = load_model(&args.model_b, args.seq_b, DEFAULT_SEQ_B).context("--model-b")?;
    let coefficients =
        coefficients_file::for_spec(args.coefficients.as_deref(), &spec.spec.name, args.allow_other_gpu)?;
    if args.measure && !spec.spec.space.is_cuda() {
        anyhow::bail!("--measure runs the CUDA kernels: use a spec of the cuda or hopper space (such as h200)");
    }
    let options = SplitOptions { granularity: args.granularity, forced_a: args.split };
    let plan =
        tenants::plan(&spec.spec, &coefficients.coefficients, (&a.graph, &b.graph), (&label(&a), &label(&b)), options)?;
    let header = format!(
        "tenants on {} ({} SMs, partitions in steps of {}), {} coefficients",
        spec.spec.name, plan.total_sms, plan.granularity, coefficients.origin
    );
    if !args.json {
        crate::output::write_stdout(&render_plan(&header, &plan, (&a, &b)))?;
    }
    let measured = if args.measure {
        let chains = |t: &TenantPlan, m: &LoadedModel| -> Result<TenantChains> {
            Ok(TenantChains { partition: layers(m, &t.partition)?, whole: layers(m, &t.whole)?, sms: t.sms })
        };
        let (ca, cb) = (chains(&plan.a, &a)?, chains(&plan.b, &b)?);
        let m = measuring::measure(args.gpu, &ca, &cb, &TimingPolicy::default())?;
        if !args.json {
            crate::output::write_stdout(&render_measured(args.gpu, &plan, &m))?;
        }
        Some(m)
    } else {
        None
    };
    if args.json {
        let v = to_json(&spec.spec.name, &coefficients.origin.to_string(), &plan, (&a, &b), measured.as_ref());
        crate::output::write_stdout(&(serde_json::to_string_pretty(&v)? + "\n"))?;
    }
    Ok(())
}

/// Loads a tenant's model: a built-in one at `seq` (or `default_seq`), or
/// a model file (which takes no sequence length).
fn load_model(arg: &str, seq: Option<u32>, default_seq: u32) -> Result<LoadedModel> {
    let builtin = hwwfc_core::models::NAMES.contains(&arg) && !spec_file::looks_like_path(arg);
    model_file::load(arg, if builtin { Some(seq.unwrap_or(default_seq)) } else { seq })
}

/// `llama3-8b-block seq 2048`, or the model file's name.
fn label(m: &LoadedModel) -> String {
    match &m.origin {
        Origin::BuiltIn { name, seq } => format!("{name} seq {seq}"),
        Origin::File(path) => format!("{} ({})", m.name, path.display()),
    }
}

/// Each layer of `m` with the configuration `s` chose for it.
fn layers(m: &LoadedModel, s: &TenantSchedule) -> Result<Vec<(Workload, Config)>> {
    if m.graph.len() != s.choices.len() {
        anyhow::bail!("internal error: {} layers, {} choices", m.graph.len(), s.choices.len());
    }
    let states: Vec<_> = s.choices.iter().map(|c| (c.index, c.state)).collect();
    crate::profile::kernels::of_schedule(&m.graph, &states)
}

fn us(x: f64) -> String {
    format!("{x:.2}")
}

/// The plan as text: the split table, the choice, each tenant's two
/// schedules, the predicted totals.
fn render_plan(header: &str, plan: &Plan, (a, b): (&LoadedModel, &LoadedModel)) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{header}");
    let _ = writeln!(out, "tenant A: {} ({} layers)", label(a), a.graph.len());
    let _ = writeln!(out, "tenant B: {} ({} layers)", label(b), b.graph.len());
    for (name, m) in [("A", a), ("B", b)] {
        if matches!(m.origin, Origin::BuiltIn { seq: 1, .. }) {
            let _ = writeln!(
                out,
                "  (tenant {name}, seq 1: one token, whose attention reads a context of one token; every projection \
                 has m = 1)"
            );
        }
    }
    let _ = writeln!(out, "\npredicted time of each tenant alone on its partition, per split:");
    let header = [
        ("a_sms", Align::Right),
        ("b_sms", Align::Right),
        ("idle", Align::Right),
        ("a_us", Align::Right),
        ("b_us", Align::Right),
        ("makespan_us", Align::Right),
        ("", Align::Left),
    ];
    let rows: Vec<Vec<String>> = plan
        .splits
        .iter()
        .enumerate()
        .map(|(i, r)| {
            vec![
                r.split.a.to_string(),
                r.split.b.to_string(),
                r.split.idle.to_string(),
                us(r.a_us),
                us(r.b_us),
                us(r.makespan_us()),
                if i == plan.chosen { "<- chosen".into() } else { String::new() },
            ]
        })
        .collect();
    out.push_str(&layout(&header, &rows));
    if let Some(c) = plan.split() {
        let why = if plan.forced { "forced by --split".to_string() } else { format!("least of {}", plan.splits.len()) };
        let _ = writeln!(
            out,
            "\nsplit: A {} SMs, B {} SMs, {} idle; predicted makespan {} us ({why})",
            c.split.a,
            c.split.b,
            c.split.idle,
            us(c.makespan_us())
        );
    }
    for (name, t, m) in [("A", &plan.a, a), ("B", &plan.b, b)] {
        out.push_str(&render_tenant(name, t, m, plan.total_sms));
    }
    let _ = writeln!(
        out,
        "\npredicted: both at once, each on its partition with its partition schedule: {} us (makespan); \
         one after the other on the whole GPU with the whole-GPU schedules: {} us; speedup {:.3}x",
        us(plan.concurrent_us()),
        us(plan.sequential_us()),
        plan.predicted_speedup()
    );
    let _ = writeln!(
        out,
        "(a partition's spec keeps the whole GPU's DRAM bandwidth and L2: the prediction of both at once leaves out \
         what the tenants take from each other there)"
    );
    out
}

fn render_tenant(name: &str, t: &TenantPlan, m: &LoadedModel, total: u32) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\ntenant {name}: {} on {} of {total} SMs", label(m), t.sms);
    let header = [
        ("layer", Align::Left),
        ("op", Align::Left),
        ("partition schedule", Align::Left),
        ("part_us", Align::Right),
        ("whole-GPU schedule", Align::Left),
        ("whole_us", Align::Right),
    ];
    let rows: Vec<Vec<String>> = m
        .graph
        .layers()
        .iter()
        .zip(t.partition.choices.iter().zip(&t.whole.choices))
        .map(|(layer, (p, w))| {
            vec![
                layer.name.to_string(),
                describe::layer(layer),
                describe::state(&p.state),
                us((p.unary_us + p.transition_us) as f64),
                if p.index == w.index { "same".into() } else { describe::state(&w.state) },
                us((w.unary_us + w.transition_us) as f64),
            ]
        })
        .collect();
    out.push_str(&layout(&header, &rows));
    let _ = writeln!(
        out,
        "(part_us: predicted on the partition; whole_us: the whole-GPU schedule's, predicted on the whole GPU)"
    );
    let by = match t.whole_on_partition_by {
        Evaluation::Problem => "",
        Evaluation::Direct => " (by the cost model directly: a state is not allowed on the partition)",
    };
    let gain = (t.whole_on_partition_us - t.partition.predicted_us) / t.whole_on_partition_us * 100.0;
    let _ = writeln!(
        out,
        "partition schedule {} us on {} SMs; whole-GPU schedule {} us on {total} SMs, {} us on {} SMs{by}; \
         scheduling for the partition saves {gain:.2}% there{}",
        us(t.partition.predicted_us),
        t.sms,
        us(t.whole.predicted_us),
        us(t.whole_on_partition_us),
        t.sms,
        if t.same_states() { " (the same states)" } else { "" }
    );
    out
}

/// The measured table: predicted against measured for (a) to (d).
fn render_measured(gpu: usize, plan: &Plan, m: &PairTiming) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\nmeasured on GPU {gpu} ({}, {} SMs): green contexts of {} and {} SMs as the driver made them",
        m.device, m.device_sms, m.made_sms[0], m.made_sms[1]
    );
    if let Some(refusal) = &m.a_first_refused {
        let _ = writeln!(
            out,
            "(B's SMs split first, A's off the rest: the driver refused B's off the SMs A left: {refusal})"
        );
    }
    if m.made_sms != [plan.a.sms, plan.b.sms] {
        let _ = writeln!(
            out,
            "warning: {} and {} SMs were asked for; the predictions are for those",
            plan.a.sms, plan.b.sms
        );
    }
    if m.device_sms != plan.total_sms {
        let _ = writeln!(out, "warning: the spec has {} SMs, the device {}", plan.total_sms, m.device_sms);
    }
    let header = [
        ("run", Align::Left),
        ("a_pred_us", Align::Right),
        ("a_us", Align::Right),
        ("b_pred_us", Align::Right),
        ("b_us", Align::Right),
        ("pair_pred_us", Align::Right),
        ("pair_us", Align::Right),
    ];
    let dash = || "-".to_string();
    let rows = vec![
        vec![
            "(a) partition schedules, each alone on its partition".into(),
            us(plan.a.partition.predicted_us),
            us(m.alone[0].median_us),
            us(plan.b.partition.predicted_us),
            us(m.alone[1].median_us),
            dash(),
            dash(),
        ],
        vec![
            "(b) whole-GPU schedules, each alone on the partition".into(),
            us(plan.a.whole_on_partition_us),
            us(m.whole_on_partition[0].median_us),
            us(plan.b.whole_on_partition_us),
            us(m.whole_on_partition[1].median_us),
            dash(),
            dash(),
        ],
        vec![
            "(c) partition schedules at once, each on its partition".into(),
            us(plan.a.partition.predicted_us),
            us(m.together[0].median_us),
            us(plan.b.partition.predicted_us),
            us(m.together[1].median_us),
            us(plan.concurrent_us()),
            us(m.together_makespan.median_us),
        ],
        vec![
            "(d) whole-GPU schedules one after the other, whole GPU".into(),
            us(plan.a.whole.predicted_us),
            us(m.sequential[0].median_us),
            us(plan.b.whole.predicted_us),
            us(m.sequential[1].median_us),
            us(plan.sequential_us()),
            us(m.sequential_makespan.median_us),
        ],
    ];
    out.push_str(&layout(&header, &rows));
    let _ = writeln!(
        out,
        "medians of {} repeats ((a), (b): {}, {}, {}, {}), the L2 flushed before each; a_us and b_us by CUDA events \
         on each tenant's stream; pair_us by the host's clock from the first launch to both streams synchronized",
        m.together_makespan.repeats,
        m.alone[0].repeats,
        m.alone[1].repeats,
        m.whole_on_partition[0].repeats,
        m.whole_on_partition[1].repeats
    );
    let _ = writeln!(
        out,
        "(c): each chain runs once per repeat, its layers enqueued in turn with the other's; tenant {} finishes \
         first and its partition idles for the rest of the makespan ({} us of {} us by the medians)",
        if m.together[0].median_us <= m.together[1].median_us { "A" } else { "B" },
        us((m.together[0].median_us - m.together[1].median_us).abs()),
        us(m.together[0].median_us.max(m.together[1].median_us))
    );
    let events = match &m.together_event_makespan {
        Some(t) => format!(
            "by events: (c) {} us, (d) {} us, speedup {:.3}x",
            us(t.median_us),
            us(m.sequential_event_makespan.median_us),
            m.sequential_event_makespan.median_us / t.median_us
        ),
        None => format!(
            "by events: (d) {} us; (c) not available (the driver does not time between events of two green contexts)",
            us(m.sequential_event_makespan.median_us)
        ),
    };
    let _ = writeln!(
        out,
        "speedup of (c) over (d): measured {:.3}x by the host's clock ({events}); predicted {:.3}x",
        m.sequential_makespan.median_us / m.together_makespan.median_us,
        plan.predicted_speedup()
    );
    out
}

fn schedule_json(m: &LoadedModel, s: &TenantSchedule) -> Value {
    let layers: Vec<Value> = m
        .graph
        .layers()
        .iter()
        .zip(&s.choices)
        .map(|(layer, c)| {
            json!({
                "name": layer.name.as_str(),
                "op": describe::layer(layer),
                "state_index": c.index,
                "state": describe::state(&c.state),
                "unary_us": c.unary_us,
                "transition_us": c.transition_us,
            })
        })
        .collect();
    json!({ "solved_on_sms": s.solved_on_sms, "predicted_us": s.predicted_us, "layers": layers })
}

fn timing_json(t: &crate::gpu::Timing) -> Value {
    json!({ "median_us": t.median_us, "min_us": t.min_us, "max_us": t.max_us, "spread": t.spread, "repeats": t.repeats })
}

/// The plan, and what was measured, as one JSON object.
fn to_json(
    spec: &str,
    coefficients: &str,
    plan: &Plan,
    (a, b): (&LoadedModel, &LoadedModel),
    measured: Option<&PairTiming>,
) -> Value {
    let tenant = |name: &str, t: &TenantPlan, m: &LoadedModel| {
        let seq = match m.origin {
            Origin::BuiltIn { seq, .. } => Some(seq),
            Origin::File(_) => None,
        };
        let mut whole = schedule_json(m, &t.whole);
        whole["predicted_on_partition_us"] = json!(t.whole_on_partition_us);
        whole["on_partition_by"] = json!(t.whole_on_partition_by);
        json!({
            "tenant": name,
            "model": m.name,
            "seq": seq,
            "sms": t.sms,
            "partition": schedule_json(m, &t.partition),
            "whole": whole,
            "same_states": t.same_states(),
        })
    };
    let splits: Vec<Value> = plan
        .splits
        .iter()
        .enumerate()
        .map(|(i, r)| {
            json!({
                "a_sms": r.split.a,
                "b_sms": r.split.b,
                "idle_sms": r.split.idle,
                "a_us": r.a_us,
                "b_us": r.b_us,
                "makespan_us": r.makespan_us(),
                "chosen": i == plan.chosen,
            })
        })
        .collect();
    let measured = measured.map(|m| {
        json!({
            "device": m.device,
            "device_sms": m.device_sms,
            "made_sms": m.made_sms,
            "a_first_refused": m.a_first_refused,
            "alone": m.alone.iter().map(timing_json).collect::<Vec<_>>(),
            "whole_on_partition": m.whole_on_partition.iter().map(timing_json).collect::<Vec<_>>(),
            "together": m.together.iter().map(timing_json).collect::<Vec<_>>(),
            "together_makespan": timing_json(&m.together_makespan),
            "together_event_makespan": m.together_event_makespan.as_ref().map(timing_json),
            "sequential": m.sequential.iter().map(timing_json).collect::<Vec<_>>(),
            "sequential_makespan": timing_json(&m.sequential_makespan),
            "sequential_event_makespan": timing_json(&m.sequential_event_makespan),
            "speedup": m.sequential_makespan.median_us / m.together_makespan.median_us,
        })
    });
    json!({
        "spec": spec,
        "coefficients": coefficients,
        "total_sms": plan.total_sms,
        "granularity": plan.granularity,
        "forced": plan.forced,
        "splits": splits,
        "chosen": plan.split().map(|c| json!({
            "a_sms": c.split.a,
            "b_sms": c.split.b,
            "idle_sms": c.split.idle,
            "makespan_us": c.makespan_us(),
        })),
        "tenants": [tenant("A", &plan.a, a), tenant("B", &plan.b, b)],
        "predicted": {
            "concurrent_us": plan.concurrent_us(),
            "sequential_us": plan.sequential_us(),
            "speedup": plan.predicted_speedup(),
        },
        "measured": measured,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::timer::Timing;
    use hwwfc_core::{models, Coefficients, HOST_MAX_LAYERS};

    fn measured(a_first_refused: Option<&str>) -> (Plan, PairTiming) {
        let spec = spec_file::load("h200").unwrap().spec;
        let model = |seq| models::builtin::<HOST_MAX_LAYERS>("attention", Some(seq)).unwrap();
        let options = SplitOptions { granularity: 8, forced_a: Some(120) };
        let plan =
            tenants::plan(&spec, &Coefficients::default(), (&model(2048), &model(1)), ("a", "b"), options).unwrap();
        let t = |us| Timing { median_us: us, min_us: us, max_us: us, spread: 0.0, repeats: 19 };
        let m = PairTiming {
            device: "NVIDIA H200".into(),
            device_sms: 132,
            made_sms: [120, 8],
            a_first_refused: a_first_refused.map(String::from),
            alone: [t(100.0), t(50.0)],
            whole_on_partition: [t(110.0), t(60.0)],
            together: [t(105.0), t(55.0)],
            together_makespan: t(106.0),
            together_event_makespan: None,
            sequential: [t(90.0), t(10.0)],
            sequential_event_makespan: t(100.0),
            sequential_makespan: t(101.0),
        };
        (plan, m)
    }

    #[test]
    fn the_measured_table_names_the_order_the_driver_took() {
        let (plan, m) = measured(None);
        let out = render_measured(0, &plan, &m);
        assert!(out.contains("green contexts of 120 and 8 SMs as the driver made them"), "{out}");
        assert!(!out.contains("split first"), "{out}");
        let (plan, m) = measured(Some("cuDevSmResourceSplitByCount: CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION"));
        let out = render_measured(0, &plan, &m);
        assert!(out.contains("B's SMs split first, A's off the rest"), "{out}");
        assert!(out.contains("CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION"), "{out}");
    }
}
