//! The benchmark image: solves every fixture case (the attention benchmark,
//! a GPT-2 block and a Llama 3 8B block on `stress_gpu` and `toy_gpu`) with
//! WFC and with exact DP, and reports for each the instructions and stack
//! of every phase and the encoded schedules. `cargo xtask qemu` turns the
//! records into its table; the parity test compares the schedules with the
//! host's, byte for byte.

#![no_std]
#![no_main]

use hwwfc_core::{exact, wfc, Coefficients};
use hwwfc_firmware::fixtures::{self, Case, FixtureError, Problem, Solver, LAYERS, SCHEDULE_CAPACITY, WORDS};
use hwwfc_firmware::{exit, measure, report, stack, EXIT_FAILURE, EXIT_SUCCESS};

#[cortex_m_rt::entry]
fn main() -> ! {
    hwwfc_firmware::init();
    defmt::info!("hwwfc-firmware: {=usize} cases, {=usize} bytes of stack", fixtures::CASES.len(), stack::size());
    let mut failed = 0;
    for case in &fixtures::CASES {
        if let Err(e) = run(case) {
            defmt::error!("{=str} on {=str}: {}", case.model, case.spec, e);
            failed += 1;
        }
    }
    report::stack(stack::size(), hwwfc_firmware::peak_stack());
    if failed > 0 {
        defmt::error!("{=usize} of {=usize} cases failed", failed, fixtures::CASES.len());
        exit(EXIT_FAILURE)
    }
    defmt::info!("all cases solved");
    exit(EXIT_SUCCESS)
}

fn run(case: &Case) -> Result<(), FixtureError> {
    let (spec, graph) = case.inputs()?;
    let coefficients = Coefficients::default();
    // The results stay where the calls put them (matched by reference, not
    // moved), so that this frame holds one copy of each.
    let (built, m) = measure(|| Problem::build(&graph, &spec, &coefficients));
    let problem = built.as_ref().map_err(|e| FixtureError::Build(*e))?;
    report::phase(case, "build", &m);
    let (w, m) = measure(|| wfc::solve::<_, LAYERS, WORDS>(problem, &wfc::WfcConfig::default()));
    let (w, stats) = w.as_ref().map_err(|e| FixtureError::Solve(*e))?;
    report::phase(case, "wfc", &m);
    let (e, m) = measure(|| exact::solve::<_, LAYERS, WORDS>(problem));
    let (e, _) = e.as_ref().map_err(|e| FixtureError::Solve(*e))?;
    report::phase(case, "exact", &m);
    defmt::info!(
        "{=str} on {=str}: {=usize} layers, WFC {=f32} us ({=u32} backtracks), exact {=f32} us, same states: {=bool}",
        case.model,
        case.spec,
        graph.len(),
        w.cost,
        stats.backtracks,
        e.cost,
        w.states == e.states
    );
    let mut buf = [0u8; SCHEDULE_CAPACITY];
    for (solver, solution, phase) in [(Solver::Wfc, w, "encode-wfc"), (Solver::Exact, e, "encode-exact")] {
        let (bytes, m) = measure(|| fixtures::encode(problem, solution, &mut buf).map(|b| b.len()));
        let len = bytes?;
        report::phase(case, phase, &m);
        report::schedule(case, solver, buf.get(..len).unwrap_or(&[]));
    }
    Ok(())
}
