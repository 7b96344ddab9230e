//! The schedule as a text table, with a summary of the search.

use super::ScheduleView;
use crate::describe;
use crate::input::model_file::Origin as ModelOrigin;
use crate::timing::Timing;
use std::fmt::Write;

/// Left or right alignment of a column.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    /// Padded on the right.
    Left,
    /// Padded on the left.
    Right,
}

/// Lays out rows under a header, each column as wide as its widest cell;
/// the last column is not padded.
pub(crate) fn layout(header: &[(&str, Align)], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|(h, _)| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let head: Vec<String> = header.iter().map(|(h, _)| h.to_string()).collect();
    for row in std::iter::once(&head).chain(rows) {
        let mut line = String::new();
        for (i, ((cell, w), (_, align))) in row.iter().zip(&widths).zip(header).enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            let last = i + 1 == header.len();
            match align {
                Align::Right => line.push_str(&format!("{cell:>w$}")),
                Align::Left if last => line.push_str(cell),
                Align::Left => line.push_str(&format!("{cell:<w$}")),
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A signed percentage with enough digits to show a small one.
fn percent(p: f64) -> String {
    if p == 0.0 || p.abs() >= 0.001 {
        format!("{p:+.3}%")
    } else {
        format!("{p:+.1e}%")
    }
}

fn timing(t: &Timing) -> String {
    format!("{:.1} us (median of {})", t.median_us, t.repeats)
}

/// Renders the report.
pub fn render(v: &ScheduleView<'_>) -> String {
    let mut out = String::new();
    let o = v.outcome;
    let problem = &o.problem;
    let seq = match &v.model.origin {
        ModelOrigin::BuiltIn { seq, .. } => format!(", seq {seq}"),
        ModelOrigin::File(path) => format!(", from {}", path.display()),
    };
    let _ = writeln!(
        out,
        "model {} ({} layers{seq}) on {}{} ({} space), {} coefficients\n",
        v.model.name,
        v.model.graph.len(),
        v.spec.spec.name,
        v.spec.partition.map(|p| format!(" partition: {p}")).unwrap_or_default(),
        match v.spec.spec.space {
            hwwfc_core::space::SpaceKind::Tiles => "tiles",
            hwwfc_core::space::SpaceKind::Cuda => "cuda",
            hwwfc_core::space::SpaceKind::Hopper => "hopper",
        },
        v.coefficients.origin,
    );

    let header = [
        ("layer", Align::Left),
        ("op", Align::Left),
        ("tile", Align::Left),
        ("warps", Align::Left),
        ("stages", Align::Right),
        ("split", Align::Right),
        ("placement", Align::Left),
        ("layout", Align::Left),
        ("cost_us", Align::Right),
        ("trans_us", Align::Right),
        ("left", Align::Right),
        ("removed", Align::Left),
    ];
    let mut rows = Vec::new();
    let choices = o.primary().map(|s| s.choices.as_slice()).unwrap_or(&[]);
    for ((layer, plan), choice) in v.model.graph.layers().iter().zip(problem.layers()).zip(choices) {
        let s = &choice.state;
        rows.push(vec![
            layer.name.to_string(),
            describe::layer(layer),
            describe::tile(s),
            describe::warps(s),
            s.stages.to_string(),
            s.split_k.to_string(),
            s.placement.name().to_string(),
            s.layout.name().to_string(),
            format!("{:.2}", choice.unary_us),
            format!("{:.2}", choice.transition_us),
            format!("{}/{}", plan.domain.len(), plan.candidates.len()),
            describe::removed(&plan.removed),
        ]);
    }
    out.push_str(&layout(&header, &rows));
    out.push('\n');

    let _ = writeln!(
        out,
        "combinations:  {} candidate, {} after the constraints",
        problem.space_combinations(),
        problem.combinations()
    );
    if let Some(w) = &o.wfc {
        let st = &w.stats;
        let _ = writeln!(
            out,
            "wfc:           {:.3} us predicted ({} collapses, {} propagations, {} backtracks)",
            w.solution.cost, st.collapses, st.propagations, st.backtracks
        );
    }
    if let Some(e) = &o.exact {
        let _ = writeln!(out, "exact:         {:.3} us predicted (optimal)", e.solution.cost);
    }
    if let Some(why) = &o.exact_skipped {
        let _ = writeln!(out, "exact:         {why}");
    }
    match o.greedy {
        Some(c) => {
            let _ =
                writeln!(out, "greedy:        {c:.3} us predicted (each layer's cheapest state, the edges ignored)");
        }
        None => {
            let _ = writeln!(out, "greedy:        infeasible (each layer's cheapest state breaks a hard coupling)");
        }
    }
    match (o.agree(), &o.wfc, &o.exact) {
        (Some(true), _, _) => {
            let _ = writeln!(out, "solvers:       agree (same states)");
        }
        (Some(false), Some(w), Some(e)) => {
            let gap = percent(o.gap_percent().unwrap_or(0.0));
            let verdict = if o.equal_cost().unwrap_or(false) {
                format!("disagree on states, gap {gap}: the same cost within f32 rounding")
            } else {
                format!("DISAGREE: WFC's schedule costs {gap} against the optimum")
            };
            let _ = writeln!(out, "solvers:       {verdict}");
            let layers = v.model.graph.layers();
            for (i, (a, b)) in w.schedule.choices.iter().zip(&e.schedule.choices).enumerate() {
                if a.index != b.index {
                    let name = layers.get(i).map(|l| l.name.as_str()).unwrap_or("?");
                    let _ = writeln!(
                        out,
                        "               layer `{name}`: wfc {} ({:.4} us), exact {} ({:.4} us)",
                        describe::state(&a.state),
                        a.unary_us + a.transition_us,
                        describe::state(&b.state),
                        b.unary_us + b.transition_us,
                    );
                }
            }
        }
        _ => {}
    }
    let mut times = vec![format!("build {}", timing(&o.build))];
    if let Some(w) = &o.wfc {
        times.push(format!("wfc {}", timing(&w.timing)));
    }
    if let Some(e) = &o.exact {
        times.push(format!("exact {}", timing(&e.timing)));
    }
    let _ = writeln!(out, "time:          {}", times.join(", "));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::coefficients_file::LoadedCoefficients;
    use crate::input::{model_file, spec_file};
    use crate::solve::{self, Solvers};
    use hwwfc_core::problem::evaluate;
    use hwwfc_core::Schedule;

    #[test]
    fn a_disagreement_shows_the_gap_and_the_layers() {
        let spec = spec_file::load("stress_gpu").unwrap();
        let model = model_file::load("attention", None).unwrap();
        let coefficients = LoadedCoefficients::default_model();
        let solvers = Solvers { wfc: true, exact: true };
        let mut outcome =
            solve::run(&model.graph, &spec.spec, &coefficients.coefficients, solvers, Default::default()).unwrap();
        // Replace WFC's answer with a worse feasible one: the next state of
        // the last layer's domain.
        let wfc = outcome.wfc.as_mut().unwrap();
        let last = outcome.problem.layers().len() - 1;
        let chosen = wfc.solution.states[last];
        let other = outcome.problem.layers()[last].domain.iter().find(|&s| s != chosen).unwrap();
        wfc.solution.states[last] = other;
        wfc.solution.cost = evaluate(&*outcome.problem, &wfc.solution.states).unwrap();
        wfc.schedule = Schedule::from_solution(&outcome.problem, &wfc.solution).unwrap();
        assert_eq!(outcome.agree(), Some(false));
        assert_eq!(outcome.equal_cost(), Some(false));
        let gap = outcome.gap_percent().unwrap();
        assert!(gap > 0.0);
        let view = ScheduleView { spec: &spec, model: &model, coefficients: &coefficients, outcome: &outcome };
        let text = render(&view);
        assert!(
            text.contains(&format!("solvers:       DISAGREE: WFC's schedule costs {} against", percent(gap))),
            "{text}"
        );
        assert!(text.contains("layer `ffn_up`: wfc "), "{text}");
        let json = super::super::json::report(&view);
        let json = serde_json::to_value(json).unwrap();
        assert_eq!(json["agree"], false);
        assert_eq!(json["equal_cost"], false);
        assert!(json["gap_percent"].as_f64().unwrap() > 0.0);
    }

    #[test]
    fn columns_align() {
        let t = layout(
            &[("a", Align::Left), ("n", Align::Right), ("z", Align::Left)],
            &[vec!["long".into(), "1".into(), "x".into()], vec!["s".into(), "100".into(), "y".into()]],
        );
        assert_eq!(t, "a       n  z\nlong    1  x\ns     100  y\n");
        assert_eq!(percent(2.5), "+2.500%");
        assert_eq!(percent(9.5e-6), "+9.5e-6%");
        assert_eq!(percent(0.0), "+0.000%");
    }
}
