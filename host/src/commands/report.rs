//! `hwwfc report`: how well a cost model ranks the measured times.

use crate::calibrate::{fit::FitOptions, session};
use crate::cli::ReportArgs;
use crate::input::coefficients_file;
use anyhow::Result;

/// Runs the command.
pub fn run(args: &ReportArgs) -> Result<()> {
    let l = session::load(&args.data, args.spec.as_deref())?;
    let (report, k, md, plots, title) = match &args.coefficients {
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
                format!("Cost model on {} with {}", l.data.device.name, path.display()),
            )
        }
        None => {
            let report = session::cross_validation_report(&l, &FitOptions::default())?;
            // The plots show the fit on every workload.
            let all: Vec<_> = l.data.workloads.iter().collect();
            let k = crate::calibrate::fit::fit(
                &l.spec,
                &hwwfc_core::Coefficients::default(),
                &all,
                &FitOptions::default(),
            )?
            .coefficients;
            let title = format!("Cost model on {}: held-out evaluation", l.data.device.name);
            (report, k, args.data.join("REPORT.md"), args.data.join("plots"), title)
        }
    };
    if !args.no_files {
        session::write_files(&l, &report, &k, &md, &plots, &title)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report.to_json())?);
    } else {
        session::print(&report);
        if !args.no_files {
            eprintln!("wrote {} and {}/", md.display(), plots.display());
        }
    }
    Ok(())
}
