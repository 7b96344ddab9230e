//! The core cannot panic: this image calls what a device runtime calls
//! (decoding the wire format, building a problem, the solvers (WFC, the
//! exact chain and DAG solvers) and the oracle, the cost model and the
//! constraints on decoded states, encoding the results) on inputs the
//! optimizer cannot see, and its panic handler calls a function that
//! exists nowhere.
//!
//! If any panic (an index out of bounds, an `unwrap` of `None`, a division
//! by zero, a failed assertion, ...) is reachable from these calls, the
//! handler is reachable too, and the link fails with
//! `undefined symbol: hwwfc_core_reached_a_panic`. If none is, fat LTO
//! removes the handler and the image links. `cargo xtask test` builds it.
//!
//! Arithmetic overflow is not a panic in this (release) build; the fuzz
//! targets, built with overflow checks, look for it.

#![no_std]
#![no_main]

use core::hint::black_box;
use hwwfc_core::problem::evaluate;
use hwwfc_core::propagate::{self, Propagation};
use hwwfc_core::schedule::Schedule;
use hwwfc_core::wire::{self, Message};
use hwwfc_core::{
    constraint, cost, exact, exact_dag, exhaustive, models, presets, resource, space, wfc, Coefficients, Domain, Graph,
    HardwareSpec, Problem, ScheduleProblem,
};

/// Bytes of an output buffer: more than any message of the host's capacity
/// takes (checked below).
const BUFFER: usize = 4096;

const _: () = assert!(
    <Graph<{ hwwfc_core::HOST_MAX_LAYERS }> as Message>::MAX_ENCODED_LEN <= BUFFER
        && <Schedule<{ hwwfc_core::HOST_MAX_LAYERS }> as Message>::MAX_ENCODED_LEN <= BUFFER
        && <HardwareSpec as Message>::MAX_ENCODED_LEN <= BUFFER
        && <Coefficients as Message>::MAX_ENCODED_LEN <= BUFFER
);

/// The inputs: bytes whose values the optimizer must not assume.
static INPUT: [u8; 4096] = [0; 4096];

/// Splits off a piece of `bytes` whose length is its first two bytes.
fn piece(bytes: &[u8]) -> (&[u8], &[u8]) {
    let Some(([lo, hi], rest)) = bytes.split_first_chunk::<2>() else {
        return (&[], &[]);
    };
    let len = u16::from_le_bytes([*lo, *hi]) as usize;
    rest.split_at_checked(len).unwrap_or((rest, &[]))
}

/// A small number drawn from a byte of `bytes`.
fn byte(bytes: &[u8], i: usize) -> u8 {
    bytes.get(i).copied().unwrap_or(0)
}

/// Everything a runtime does with one set of inputs, at capacity `L`
/// layers and `64 * W` states; the result only keeps the work alive.
fn run<const L: usize, const W: usize>(input: &[u8]) -> u32 {
    let (spec_bytes, rest) = piece(input);
    let (graph_bytes, rest) = piece(rest);
    let (coefficient_bytes, rest) = piece(rest);
    let (schedule_bytes, rest) = piece(rest);
    let (name_bytes, settings) = piece(rest);
    let mut score = 0u32;

    let spec = match wire::from_bytes::<HardwareSpec>(spec_bytes) {
        Ok(s) => s,
        Err(_) if byte(settings, 0) & 1 == 0 => presets::stress_gpu(),
        Err(_) => presets::toy_gpu(),
    };
    score += spec.validate().is_ok() as u32;
    let seq = u32::from_le_bytes([byte(settings, 1), byte(settings, 2), byte(settings, 3), byte(settings, 4)]);
    let graph = match wire::from_bytes::<Graph<L>>(graph_bytes) {
        Ok(g) => g,
        Err(_) => {
            let name = core::str::from_utf8(name_bytes).unwrap_or("attention");
            models::builtin::<L>(name, (seq > 0).then_some(seq)).unwrap_or_default()
        }
    };
    score += graph.validate().is_ok() as u32;
    let k = wire::from_bytes::<Coefficients>(coefficient_bytes).unwrap_or_default();
    score += k.validate().is_ok() as u32;

    // The cost model and the constraints on states that come from outside
    // the candidate tables (a decoded schedule's).
    if let Ok(decoded) = wire::from_bytes::<Schedule<L>>(schedule_bytes) {
        for (layer, choice) in graph.layers().iter().zip(decoded.choices.iter()) {
            let op = layer.op;
            score += constraint::check(&spec, &op, &choice.state).is_ok() as u32;
            score += cost::unary_cost(&spec, &k, &op, &choice.state).to_bits();
            score += cost::occupancy(&spec, &op, &choice.state);
            score += cost::grid(&spec, &op, &choice.state).waves as u32;
            score += resource::usage(&op, &choice.state).sram_bytes;
            score += space::applicable(&op, &choice.state) as u32;
            score += space::index_of(spec.space, op.kind(), &choice.state).unwrap_or(0) as u32;
            score +=
                cost::transition_cost(&spec, &k, op.output_bytes(), (&choice.state, &choice.state), true).to_bits();
            score += cost::input_bytes(&op) as u32;
            score += op.validate().is_ok() as u32;
        }
        let mut buf = [0u8; BUFFER];
        score += wire::to_slice(&decoded, &mut buf).map_or(0, |b| b.len() as u32);
    }

    let problem = match ScheduleProblem::<L, W>::build(&graph, &spec, &k) {
        Ok(p) => p,
        Err(_) => return score,
    };
    score += problem.combinations() as u32 + problem.space_combinations() as u32;
    let mut domains = [Domain::<W>::EMPTY; L];
    for (i, d) in domains.iter_mut().enumerate().take(problem.layer_count()) {
        *d = problem.domain(i);
    }
    let n = problem.layer_count().min(L);
    score += propagate::arc_consistency(&problem, domains.get_mut(..n).unwrap_or(&mut [])).map_or(0, |r| r.removed);

    let config = wfc::WfcConfig {
        max_backtracks: byte(settings, 5) as u32,
        propagation: if byte(settings, 6) & 1 == 0 { Propagation::Full } else { Propagation::Neighbours },
        lookahead: byte(settings, 6) & 2 == 0,
    };
    let mut out = [0u8; BUFFER];
    let solutions = [
        wfc::solve::<_, L, W>(&problem, &config).map(|(s, stats)| (s, stats.collapses)),
        exact::solve::<_, L, W>(&problem).map(|(s, stats)| (s, stats.relaxations)),
        exact_dag::solve::<_, L, W>(&problem, byte(settings, 8) as u64).map(|(s, stats)| (s, stats.cutset_layers)),
        exhaustive::solve::<_, L, W>(&problem, byte(settings, 7) as u64 * 1000).map(|s| (s, 0)),
    ];
    for (solution, work) in solutions.into_iter().flatten() {
        score += work;
        score += evaluate::<_, W>(&problem, &solution.states).map_or(0, f32::to_bits);
        if let Some(schedule) = Schedule::from_solution(&problem, &solution) {
            score += wire::to_slice(&schedule, &mut out).map_or(0, |b| b.len() as u32);
            score += wire::from_bytes::<Schedule<L>>(&out).is_ok() as u32;
        }
    }
    let mut buf = [0u8; BUFFER];
    score += wire::to_slice(&graph, &mut buf).map_or(0, |b| b.len() as u32);
    let mut buf = [0u8; <HardwareSpec as Message>::MAX_ENCODED_LEN];
    score += wire::to_slice(&spec, &mut buf).map_or(0, |b| b.len() as u32);
    let mut buf = [0u8; <Coefficients as Message>::MAX_ENCODED_LEN];
    score += wire::to_slice(&k, &mut buf).map_or(0, |b| b.len() as u32);
    score
}

/// The entry point (never run: the image exists to be linked).
#[no_mangle]
pub extern "C" fn _start() -> ! {
    let input: &[u8] = black_box(&INPUT[..]);
    // The firmware's capacities and the host's.
    black_box(run::<8, 1>(input));
    black_box(run::<{ hwwfc_core::HOST_MAX_LAYERS }, { hwwfc_core::HOST_DOMAIN_WORDS }>(input));
    loop {
        core::hint::spin_loop();
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    extern "Rust" {
        // Defined nowhere: a reachable panic fails the link here.
        fn hwwfc_core_reached_a_panic() -> !;
    }
    // SAFETY: never runs; the call exists only to fail the link when a
    // panic is reachable.
    unsafe { hwwfc_core_reached_a_panic() }
}
