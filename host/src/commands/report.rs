//! `hwwfc report`: how well a cost model ranks the measured times.

use crate::calibrate::{fit::FitOptions, session};
use crate::cli::{HoldOut, ReportArgs};
use crate::input::{coefficients_file, workload_file};
use anyhow::{bail, Result};

/// Runs the command.
pub fn run(args: &ReportArgs) -> Result<()> {
    let l = session::load(&args.data, args.spec.as_deref())?;
    // Every label is checked before the fits, which take a while.
    let families = match &args.workloads {
        Some(file) => Some(session::families_of(&l, &workload_file::load_labelled(file)?, file)?),
        None => None,
    };
    if args.hold_out == HoldOut::Family {
        if args.coefficients.is_some() {
            bail!("--hold-out family cross-validates a fit, and --coefficients fits nothing: give one or the other");
        }
        if families.is_none() {
            bail!("--hold-out family needs --workloads FILE, whose \"family\" labels group the workloads");
        }
    }
    let (mut report, k, md, plots, title) = match &args.coefficients {
        Some(path) => {
            let loaded = coefficients_file::load(Some(path))?;
            // Coefficients of another GPU do not describe these records.
            let gpu = Some(l.data.device.name.as_str());
            if let Some(warning) =
                coefficients_file::check_provenance(&loaded, &l.spec_name, gpu, args.allow_other_gpu)?
            {
                eprintln!("warning: {warning}");
            }
            let stem = path.file_stem().map_or_else(|| "coefficients".into(), |s| s.to_string_lossy().into_owned());
            let report = session::coefficients_report(&l, &loaded.coefficients, &path.display().to_string());
            let md = args.data.join(format!("REPORT-{stem}.md"));
            let plots = args.data.join(format!("plots-{stem}"));
            (
                report,
                loaded.coefficients,
                md,
                plots,
                format!("Cost model on {} with {}", l.data.device_label(), path.display()),
            )
        }
        None if args.hold_out == HoldOut::Family => {
            let report = session::family_report(&l, families.as_deref().unwrap_or_default(), &FitOptions::default())?;
            let k = fit_all(&l)?;
            let title = format!("Cost model on {}: held out by model family", l.data.device_label());
            (report, k, args.data.join("REPORT-family.md"), args.data.join("plots-family"), title)
        }
        None => {
            let report = session::cross_validation_report(&l, &FitOptions::default())?;
            let k = fit_all(&l)?;
            let title = format!("Cost model on {}: held-out evaluation", l.data.device_label());
            (report, k, args.data.join("REPORT.md"), args.data.join("plots"), title)
        }
    };
    if let Some(f) = &families {
        if report.families.is_empty() {
            report.label_families(&f.iter().cloned().map(Some).collect::<Vec<_>>());
        }
    }
    if !args.no_files {
        session::write_files(&l, &report, &k, &md, &plots, &title)?;
    }
    if args.json {
        let mut json = report.to_json();
        json["partition"] = serde_json::to_value(l.data.partition)?;
        println!("{}", serde_json::to_string_pretty(&json)?);
    } else {
        session::print(&report);
        if !args.no_files {
            eprintln!("wrote {} and {}/", md.display(), plots.display());
        }
    }
    Ok(())
}

/// The fit on every workload, which the plots show.
fn fit_all(l: &session::Loaded) -> Result<hwwfc_core::Coefficients> {
    let all: Vec<_> = l.data.workloads.iter().collect();
    Ok(crate::calibrate::fit::fit(&l.spec, &hwwfc_core::Coefficients::default(), &all, &FitOptions::default())?
        .coefficients)
}
