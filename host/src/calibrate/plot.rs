//! Plots of a report (SVG, with `plotters`): predicted against measured
//! time per workload, and the per-workload rho of the model, the baseline
//! and the test-retest ceiling. Each is drawn in memory and written with
//! [`crate::atomic_write`], so no plot is ever left half-written.

use super::report::Report;
use anyhow::{anyhow, Result};
use plotters::prelude::*;
use std::path::Path;

fn err<E: std::fmt::Display>(e: E) -> anyhow::Error {
    anyhow!("plot: {e}")
}

/// Predicted against measured time (both in microseconds, log axes).
pub fn scatter(path: &Path, title: &str, predicted: &[f64], measured: &[f64]) -> Result<()> {
    let lo = predicted.iter().chain(measured).copied().filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
    let hi = predicted.iter().chain(measured).copied().fold(0.0f64, f64::max);
    if !(lo.is_finite() && hi > lo) {
        return Ok(());
    }
    let (lo, hi) = (lo * 0.8, hi * 1.25);
    let mut svg = String::new();
    draw_scatter(&mut svg, title, predicted, measured, lo, hi)?;
    crate::atomic_write::write(path, svg.as_bytes())
}

fn draw_scatter(svg: &mut String, title: &str, predicted: &[f64], measured: &[f64], lo: f64, hi: f64) -> Result<()> {
    let root = SVGBackend::with_string(svg, (520, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d((lo..hi).log_scale(), (lo..hi).log_scale())
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("measured time (us)")
        .y_desc("predicted time (us)")
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(err)?;
    chart.draw_series(LineSeries::new([(lo, lo), (hi, hi)], RGBColor(180, 180, 180))).map_err(err)?;
    chart
        .draw_series(
            measured.iter().zip(predicted).map(|(&m, &p)| Circle::new((m, p), 2, RGBColor(31, 119, 180).filled())),
        )
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

/// A labelled, coloured series of one value per row.
type Series<'a> = (&'a str, RGBColor, Box<dyn Fn(usize) -> Option<f64> + 'a>);

/// Per-workload rho: the model, the baseline and the retest ceiling.
pub fn rho_chart(path: &Path, report: &Report) -> Result<()> {
    let n = report.rows.len();
    let lowest = report.rows.iter().flat_map(|r| [r.model.rho, r.baseline.rho]).fold(0.0f64, f64::min);
    let x_from = (lowest - 0.05).max(-1.0);
    let mut svg = String::new();
    draw_rho_chart(&mut svg, report, n, x_from)?;
    crate::atomic_write::write(path, svg.as_bytes())
}

fn draw_rho_chart(svg: &mut String, report: &Report, n: usize, x_from: f64) -> Result<()> {
    let root = SVGBackend::with_string(svg, (900, 140 + 18 * n as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("Spearman rho per workload ({})", report.method), ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(230)
        .build_cartesian_2d(x_from..1.0f64, 0..n)
        .map_err(err)?;
    let names: Vec<String> = report.rows.iter().map(|r| r.name.clone()).collect();
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|i| names.get(*i).cloned().unwrap_or_default())
        .x_desc("rho")
        .draw()
        .map_err(err)?;
    let series: [Series; 3] = [
        ("retest", RGBColor(150, 150, 150), Box::new(|i| report.rows[i].retest_rho)),
        ("baseline", RGBColor(255, 127, 14), Box::new(|i| Some(report.rows[i].baseline.rho))),
        ("model", RGBColor(31, 119, 180), Box::new(|i| Some(report.rows[i].model.rho))),
    ];
    for (label, color, value) in series {
        chart
            .draw_series((0..n).filter_map(|i| value(i).map(|v| Circle::new((v, i), 4, color.filled()))))
            .map_err(err)?
            .label(label)
            .legend(move |(x, y)| Circle::new((x, y), 4, color.filled()));
    }
    chart.configure_series_labels().background_style(WHITE).border_style(BLACK).draw().map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

/// One row of [`shares`]: a label, one share per item (in (0, 1]), and the
/// row's mean.
pub struct ShareRow {
    /// The row's label, drawn beside it.
    pub label: String,
    /// One share per item, such as each workload's first choice's share of
    /// the best.
    pub values: Vec<f64>,
    /// The mean over the items, drawn as a bar across the row.
    pub mean: f64,
}

/// Shares per row, in percent: a dot per item and a bar at the row's mean,
/// the first row at the top.
pub fn shares(path: &Path, title: &str, x_desc: &str, rows: &[ShareRow]) -> Result<()> {
    let lowest = rows.iter().flat_map(|r| r.values.iter().copied()).filter(|v| v.is_finite()).fold(1.0f64, f64::min);
    // Whole 5% steps, so that the axis reads plainly.
    let x_from = ((lowest * 100.0 - 2.0) / 5.0).floor() * 5.0;
    let mut svg = String::new();
    draw_shares(&mut svg, title, x_desc, rows, x_from.clamp(0.0, 95.0))?;
    crate::atomic_write::write(path, svg.as_bytes())
}

fn draw_shares(svg: &mut String, title: &str, x_desc: &str, rows: &[ShareRow], x_from: f64) -> Result<()> {
    let n = rows.len();
    let label_width = rows.iter().map(|r| r.label.len()).max().unwrap_or(10) as u32 * 7 + 16;
    let root = SVGBackend::with_string(svg, (520 + label_width, 120 + 44 * n as u32)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(label_width)
        .build_cartesian_2d(x_from..100.5f64, -0.5f64..(n as f64 - 0.5))
        .map_err(err)?;
    // Row i is drawn at y = n - 1 - i, so that the first row is on top.
    let y = |i: usize| (n - 1 - i) as f64;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|v| {
            // Rows sit on whole numbers; a tick between two names none.
            if (v - v.round()).abs() > 0.01 {
                return String::new();
            }
            let i = n as i64 - 1 - v.round() as i64;
            usize::try_from(i).ok().and_then(|i| rows.get(i)).map(|r| r.label.clone()).unwrap_or_default()
        })
        .x_desc(x_desc)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .light_line_style(WHITE)
        .draw()
        .map_err(err)?;
    let blue = RGBColor(31, 119, 180);
    chart
        .draw_series(
            rows.iter().enumerate().flat_map(|(i, r)| {
                r.values.iter().map(move |v| Circle::new((100.0 * v, y(i)), 3, blue.mix(0.6).filled()))
            }),
        )
        .map_err(err)?
        .label("a workload")
        .legend(move |(x, y)| Circle::new((x, y), 3, blue.filled()));
    chart
        .draw_series(rows.iter().enumerate().map(|(i, r)| {
            let (x, yy) = (100.0 * r.mean, y(i));
            PathElement::new(vec![(x, yy - 0.3), (x, yy + 0.3)], BLACK.stroke_width(2))
        }))
        .map_err(err)?
        .label("mean")
        .legend(|(x, y)| PathElement::new(vec![(x, y - 6), (x, y + 6)], BLACK.stroke_width(2)));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerLeft)
        .background_style(WHITE)
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}
