//! The steps `hwwfc calibrate` and `hwwfc report` share: reading a dataset
//! with its spec, cross-validating with a progress bar, evaluating given
//! coefficients, and writing the report files.

use super::dataset::{self, Dataset};
use super::evaluate;
use super::fit::FitOptions;
use super::plot;
use super::report::Report;
use crate::input::workload_file::Labelled;
use anyhow::{Context, Result};
use hwwfc_core::{Coefficients, HardwareSpec};
use std::path::Path;

/// A dataset and the spec its predictions use (the named spec's rates with
/// the device's limits).
pub struct Loaded {
    /// The records.
    pub data: Dataset,
    /// The spec.
    pub spec: HardwareSpec,
    /// The spec's name.
    pub spec_name: String,
}

/// Reads the records under `dir`; `spec` names a spec, or `None` for the
/// built-in spec of the device the records were measured on.
pub fn load(dir: &Path, spec: Option<&str>) -> Result<Loaded> {
    with_spec(dataset::load(dir)?, dir, spec)
}

/// `data`, read from `dir`, with the spec its predictions use: `spec`
/// names a spec, or `None` for the built-in spec of the records' device;
/// cut to the records' partition.
pub fn with_spec(data: Dataset, dir: &Path, spec: Option<&str>) -> Result<Loaded> {
    if data.workloads.is_empty() {
        anyhow::bail!("{}: too few records to fit: no successful kernel measurement", dir.display());
    }
    let base = match spec {
        Some(s) => crate::input::spec_file::load(s)?.whole()?,
        None => crate::input::spec_file::builtin_for_device(&data.device.name)?,
    };
    let spec_name = base.name.to_string();
    let whole = crate::gpu::device::device_limits(&base, &data.device);
    // Records of a partition are judged on the partition's spec.
    let spec = match data.partition {
        Some(p) => whole
            .partition(Some(p.sms), Some(p.sram_per_block_bytes))
            .map_err(|e| anyhow::anyhow!("{}: the records' partition: {e}", dir.display()))?,
        None => whole,
    };
    Ok(Loaded { data, spec, spec_name })
}

/// Leave-one-workload-out cross-validation of a fit from the defaults,
/// next to the defaults themselves.
pub fn cross_validation_report(l: &Loaded, opts: &FitOptions) -> Result<Report> {
    let groups: Vec<usize> = (0..l.data.workloads.len()).collect();
    grouped_report(l, &groups, "held out: leave-one-workload-out cross-validation".into(), opts)
}

/// The model family of each workload of `l` (in dataset order), from the
/// labels of a workloads file; a workload of the records that the file
/// does not list, or lists without a family, is an error naming it.
pub fn families_of(l: &Loaded, labels: &[Labelled], file: &Path) -> Result<Vec<String>> {
    l.data
        .workloads
        .iter()
        .map(|w| {
            let name = w.workload.name();
            let Some(entry) = labels.iter().find(|x| x.workload.name() == name) else {
                anyhow::bail!("{}: workload `{name}` of the records is not in the file", file.display())
            };
            entry
                .labels
                .family
                .clone()
                .ok_or_else(|| anyhow::anyhow!("{}: workload `{name}` has no `family` label", file.display()))
        })
        .collect()
}

/// Leave-one-family-out cross-validation of a fit from the defaults (each
/// family's workloads judged by the fit on all the other families), next
/// to the defaults themselves, with the per-family means.
pub fn family_report(l: &Loaded, families: &[String], opts: &FitOptions) -> Result<Report> {
    let mut names: Vec<&String> = families.iter().collect();
    names.sort();
    names.dedup();
    let groups: Vec<usize> = families.iter().map(|f| names.iter().position(|n| *n == f).unwrap_or(0)).collect();
    let method = format!("held out: leave-one-family-out cross-validation ({} families)", names.len());
    let mut report = grouped_report(l, &groups, method, opts)?;
    report.label_families(&families.iter().cloned().map(Some).collect::<Vec<_>>());
    Ok(report)
}

/// Cross-validation by `groups` (see [`evaluate::cross_validate_groups`])
/// with a progress bar, as a report.
fn grouped_report(l: &Loaded, groups: &[usize], method: String, opts: &FitOptions) -> Result<Report> {
    let mut folds: Vec<usize> = groups.to_vec();
    folds.sort_unstable();
    folds.dedup();
    let bar = indicatif::ProgressBar::new(folds.len() as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "cross-validation {elapsed_precise} [{wide_bar}] {pos}/{len} folds ETA {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let folds =
        evaluate::cross_validate_groups(&l.spec, &l.data, groups, &Coefficients::default(), opts, &|_| bar.inc(1))?;
    bar.finish_and_clear();
    let model: Vec<_> = folds.iter().map(|f| f.held_out).collect();
    let baseline = evaluate::per_workload(&l.spec, &Coefficients::default(), &l.data);
    let mut report = Report::new(&l.data, method, &model, &baseline);
    report.held_out_predictions = folds.into_iter().map(|f| f.predictions).collect();
    Ok(report)
}

/// The agreement of exactly `k` (no refit), next to the defaults.
pub fn coefficients_report(l: &Loaded, k: &Coefficients, origin: &str) -> Report {
    let model = evaluate::per_workload(&l.spec, k, &l.data);
    let baseline = evaluate::per_workload(&l.spec, &Coefficients::default(), &l.data);
    Report::new(&l.data, format!("coefficients {origin}, no refit"), &model, &baseline)
}

/// Writes `report` as markdown to `md` and its plots into `plots`: one
/// scatter per workload of `k`'s predictions, and the rho chart.
pub fn write_files(l: &Loaded, report: &Report, k: &Coefficients, md: &Path, plots: &Path, title: &str) -> Result<()> {
    std::fs::create_dir_all(plots).with_context(|| format!("{}: cannot create", plots.display()))?;
    let runs: Vec<String> = l.data.runs.iter().map(|p| p.display().to_string()).collect();
    let mut text = format!(
        "# {title}\n\nRecords: {} ({}), {} workloads, {} measured configurations. Spec: `{}` with the device's limits.\n\
         Model figures: {}. Baseline: the uncalibrated model (datasheet defaults).\n\n\
         rho and tau are Spearman's and Kendall's rank correlations between predicted cost and measured time over a \
         workload's configurations; regret top-1 is the measured time of the predicted best over the measured best, \
         minus one; best in top k is the measured best over the best measured among the k predicted fastest; retest \
         rho is the rank correlation of two measurement runs (the noise ceiling).\n\n",
        runs.join(", "),
        l.data.device.name,
        l.data.workloads.len(),
        l.data.workloads.iter().map(|w| w.samples.len()).sum::<usize>(),
        l.spec_name,
        report.method,
    );
    text += &report.table();
    // The bias of the predictions judged: held out where cross-validated.
    let predicted: Vec<Vec<f64>> = l.data.workloads.iter().map(|w| evaluate::predict(&l.spec, k, w)).collect();
    let held_out = report.held_out_predictions.len() == l.data.workloads.len();
    let judged = if held_out { &report.held_out_predictions } else { &predicted };
    text += &super::bias::table(&super::bias::by_class(&l.spec, &l.data, judged));
    text += "\n![rho per workload](";
    text += &format!(
        "{}/rho.svg)\n\nPredicted against measured time per workload: `{}/<workload>.svg`; every configuration's \
         measured and predicted time, and with cross-validation the prediction of the fit that did not see its \
         workload: `{}/predictions.csv`.\n",
        plot_dir_name(plots),
        plot_dir_name(plots),
        plot_dir_name(plots)
    );
    crate::atomic_write::write(md, text.as_bytes())?;
    plot::rho_chart(&plots.join("rho.svg"), report)?;
    // With cross-validation, each workload's prediction by the fit that
    // did not see it as well.
    let mut csv = String::from(
        "workload,tile_m,tile_n,tile_k,warps_m,warps_n,stages,placement,split_k,pingpong,measured_us,predicted_us",
    );
    csv += if held_out { ",held_out_us\n" } else { "\n" };
    for (i, w) in l.data.workloads.iter().enumerate() {
        let p = &predicted[i];
        let h = if held_out { report.held_out_predictions.get(i) } else { None };
        let t = w.times();
        plot::scatter(&plots.join(format!("{}.svg", w.workload.name())), w.workload.name(), p, &t)?;
        for (j, ((s, measured), predicted)) in w.samples.iter().zip(&t).zip(p).enumerate() {
            let st = &s.state;
            csv += &format!(
                "{},{},{},{},{},{},{},{},{},{},{measured:.3},{predicted:.3}",
                w.workload.name(),
                st.tile.m,
                st.tile.n,
                st.tile.k,
                st.warps_m,
                st.warps_n,
                st.stages,
                st.placement.name(),
                st.split_k,
                u8::from(st.pingpong)
            );
            if let Some(v) = h.and_then(|h| h.get(j)) {
                csv += &format!(",{v:.3}");
            }
            csv.push('\n');
        }
    }
    crate::atomic_write::write(&plots.join("predictions.csv"), csv.as_bytes())?;
    Ok(())
}

fn plot_dir_name(p: &Path) -> String {
    p.file_name().map_or_else(|| "plots".into(), |n| n.to_string_lossy().into_owned())
}

/// Prints the report's table and means on stdout.
pub fn print(report: &Report) {
    println!("{} ({})\n", report.gpu, report.method);
    print!("{}", report.table());
    println!(
        "\nheld-out/evaluated means: rho {:.3}, tau {:.3}, regret top-1 {:.1}%, best in top 8 {:.1}% (top-8 tuning's shortlist {:.1}%)  (baseline rho {:.3}; retest ceiling {})",
        report.model.rho,
        report.model.tau,
        report.model.regret_top1 * 100.0,
        report.model.top8_share * 100.0,
        report.model.tuned8_share * 100.0,
        report.baseline.rho,
        report.retest_rho.map_or("-".into(), |r| format!("{r:.3}"))
    );
}
