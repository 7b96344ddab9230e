//! Prints the attention benchmark's schedule on the two virtual specs.
use hwwfc_core::{exact, models, presets, wfc, Coefficients, Problem, ScheduleProblem};

fn main() {
    for spec in [presets::stress_gpu(), presets::toy_gpu()] {
        let graph = models::builtin::<8>("attention", None).unwrap();
        let p = ScheduleProblem::<8, 1>::build(&graph, &spec, &Coefficients::default()).unwrap();
        println!("{}: space {} combos, after constraints {}", spec.name, p.space_combinations(), p.combinations());
        let (w, ws) = wfc::solve::<_, 8, 1>(&p, &wfc::WfcConfig::default()).unwrap();
        let (e, _) = exact::solve::<_, 8, 1>(&p).unwrap();
        for (i, l) in p.layers().iter().enumerate() {
            let s = l.state(w.states[i]).unwrap();
            let mut costs: Vec<(f32, String)> = l
                .domain
                .iter()
                .map(|x| {
                    let st = l.state(x).unwrap();
                    (p.unary(i, x), format!("{}x{} {} {}", st.tile.m, st.tile.n, st.placement.name(), st.layout.name()))
                })
                .collect();
            costs.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
            println!(
                "  {:?} -> {}x{} {:?} {:?} cands {} left {} removed {:?}",
                graph.layers()[i].name,
                s.tile.m,
                s.tile.n,
                s.placement,
                s.layout,
                l.candidates.len(),
                l.domain.len(),
                l.removed
            );
            for c in costs.iter().take(6) {
                println!("       {:10.2} {}", c.0, c.1);
            }
        }
        println!("  wfc {} exact {} stats {:?} agree {}", w.cost, e.cost, ws, w.states == e.states);
    }
}
