//! On-target tests of the core, run by defmt-test on the Cortex-M4F of
//! QEMU's `mps2-an386` (`cargo xtask qemu`, or `cargo test` in firmware/).
//!
//! Each test logs its progress over defmt; a failed check panics, and the
//! panic handler ends QEMU with a non-zero status. The host reads two
//! records back: the SysTick calibration and the digest of the generated
//! chains (which the parity test recomputes on the host).

#![no_std]
#![no_main]

use hwwfc_core::{models, Coefficients, HardwareSpec};
use hwwfc_firmware::fixtures::{self, LAYERS};

// defmt-test allows only tests and hooks in its module: helpers live here.

/// The attention benchmark's problem on `spec`.
fn attention(spec: &HardwareSpec) -> fixtures::Problem {
    let graph = models::builtin::<LAYERS>("attention", None).unwrap();
    fixtures::Problem::build(&graph, spec, &Coefficients::default()).unwrap()
}

/// Equal within a relative 1e-5 (sums of the same costs in another order).
fn close(a: f32, b: f32) -> bool {
    (a - b).abs() <= 1e-5 * a.abs().max(b.abs())
}

#[defmt_test::tests]
mod tests {
    use hwwfc_core::built::BuildError;
    use hwwfc_core::cost::COEFFICIENTS_VERSION;
    use hwwfc_core::graph::GraphError;
    use hwwfc_core::models::{self, ModelError};
    use hwwfc_core::problem::evaluate;
    use hwwfc_core::space::SpaceKind;
    use hwwfc_core::wire::{self, Message, WireError};
    use hwwfc_core::{
        exact, exhaustive, presets, wfc, Coefficients, Constraint, DType, Domain, Graph, HardwareSpec, Op, Problem,
        Schedule, SolveError, StateIndex,
    };
    use hwwfc_firmware::counter::INSTRUCTIONS_PER_TICK;
    use hwwfc_firmware::fixtures::{self, Case, Digest, Solver, LAYERS, SCHEDULE_CAPACITY, WORDS};
    use hwwfc_firmware::measure;

    use super::{attention, close};

    #[init]
    fn init() {
        hwwfc_firmware::init();
    }

    #[test]
    fn systick_ticks_every_40_instructions() {
        // A loop of two instructions (subs, bne) per iteration.
        const ITERATIONS: u32 = 1_000_000;
        let (_, empty) = measure(|| ());
        let (_, m) = measure(|| {
            // SAFETY: a register-only countdown loop.
            unsafe {
                core::arch::asm!(
                    "2:",
                    "subs {0}, {0}, #1",
                    "bne 2b",
                    inout(reg) ITERATIONS => _,
                    options(nomem, nostack)
                )
            }
        });
        let instructions = 2 * ITERATIONS;
        let ticks = m.ticks - empty.ticks;
        defmt::println!(
            "hwwfc:calibration instructions={=u32} ticks={=u32} overhead_ticks={=u32}",
            instructions,
            ticks,
            empty.ticks
        );
        let counted = ticks * INSTRUCTIONS_PER_TICK;
        let error = counted.abs_diff(instructions);
        defmt::assert!(
            error <= instructions / 1000,
            "{=u32} ticks x 40 = {=u32} != {=u32}",
            ticks,
            counted,
            instructions
        );
    }

    #[test]
    fn attention_on_stress_gpu_softmax_16_others_32() {
        let p = attention(&presets::stress_gpu());
        let graph = models::builtin::<LAYERS>("attention", None).unwrap();
        let (w, stats) = wfc::solve::<_, LAYERS, WORDS>(&p, &wfc::WfcConfig::default()).unwrap();
        let (e, _) = exact::solve::<_, LAYERS, WORDS>(&p).unwrap();
        defmt::assert_eq!(w.states.as_slice(), e.states.as_slice());
        defmt::assert_eq!(w.cost, e.cost);
        defmt::assert_eq!(stats.backtracks, 0);
        for (i, layer) in graph.layers().iter().enumerate() {
            let s = p.layer(i).unwrap().state(w.states[i]).unwrap();
            let side = if layer.name == "softmax" { 16 } else { 32 };
            defmt::assert_eq!((s.tile.m, s.tile.n), (side, side), "layer {=str}", layer.name.as_str());
        }
        defmt::assert_eq!(p.combinations(), 10_935_000);
    }

    #[test]
    fn attention_on_toy_gpu_wfc_equals_exact() {
        let p = attention(&presets::toy_gpu());
        defmt::assert_eq!(p.combinations(), 3_359_232);
        let (e, _) = exact::solve::<_, LAYERS, WORDS>(&p).unwrap();
        for lookahead in [true, false] {
            let cfg = wfc::WfcConfig { lookahead, ..Default::default() };
            let (w, stats) = wfc::solve::<_, LAYERS, WORDS>(&p, &cfg).unwrap();
            defmt::assert_eq!(w.states.as_slice(), e.states.as_slice(), "lookahead {=bool}", lookahead);
            defmt::assert_eq!(w.cost, e.cost);
            defmt::assert_eq!(stats.collapses, 6);
        }
        defmt::assert_eq!(evaluate(&p, &e.states), Some(e.cost));
    }

    #[test]
    fn builtin_models_solve_and_wfc_is_never_cheaper_than_exact() {
        for case in &fixtures::CASES {
            let (spec, graph) = case.inputs().unwrap();
            let p = fixtures::Problem::build(&graph, &spec, &Coefficients::default()).unwrap();
            let (w, _) = wfc::solve::<_, LAYERS, WORDS>(&p, &wfc::WfcConfig::default()).unwrap();
            let (e, _) = exact::solve::<_, LAYERS, WORDS>(&p).unwrap();
            defmt::assert!(e.cost <= w.cost || close(e.cost, w.cost), "{}", case);
            defmt::assert_eq!(evaluate(&p, &w.states), Some(w.cost));
            defmt::info!("{=str} on {=str}: WFC {=f32} us, exact {=f32} us", case.model, case.spec, w.cost, e.cost);
        }
    }

    #[test]
    fn generated_chains() {
        let mut digest = Digest::default();
        let (mut solved, mut enumerated) = (0u32, 0u32);
        for seed in 0..fixtures::CHAIN_COUNT {
            let graph = fixtures::chain(seed).unwrap();
            for name in fixtures::SPECS {
                let spec = fixtures::spec(name).unwrap();
                let outcome = fixtures::solve_both(&graph, &spec);
                if let Ok(o) = &outcome {
                    match (&o.wfc, &o.exact) {
                        (Ok((w, _)), Ok((e, _))) => {
                            solved += 1;
                            defmt::assert!(
                                e.cost <= w.cost || close(e.cost, w.cost),
                                "seed {=u32} on {=str}",
                                seed,
                                name
                            );
                            defmt::assert_eq!(evaluate(&o.problem, &w.states), Some(w.cost));
                            let ev = evaluate(&o.problem, &e.states).unwrap();
                            defmt::assert!(close(ev, e.cost));
                            if o.problem.combinations() <= 20_000 {
                                enumerated += 1;
                                let x = exhaustive::solve::<_, LAYERS, WORDS>(&o.problem, 20_000).unwrap();
                                defmt::assert!(
                                    close(x.cost, e.cost),
                                    "seed {=u32}: {=f32} vs {=f32}",
                                    seed,
                                    x.cost,
                                    e.cost
                                );
                            }
                        }
                        (Err(a), Err(b)) => defmt::assert_eq!(a, b),
                        _ => defmt::panic!("seed {=u32} on {=str}: one solver failed alone", seed, name),
                    }
                }
                fixtures::digest_outcome(&mut digest, &outcome).unwrap();
            }
        }
        defmt::info!("{=u32} chains solved, {=u32} checked against enumeration", solved, enumerated);
        defmt::assert!(solved > 0 && enumerated > 0);
        defmt::println!("hwwfc:chains count={=u32} digest={=u64}", fixtures::CHAIN_COUNT, digest.0);
    }

    #[test]
    fn schedule_round_trips_through_postcard() {
        let mut buf = [0u8; SCHEDULE_CAPACITY];
        let mut again = [0u8; SCHEDULE_CAPACITY];
        for case in &fixtures::CASES {
            for solver in Solver::ALL {
                let bytes = fixtures::case_schedule(case, solver, &mut buf).unwrap();
                let schedule: Schedule<LAYERS> = wire::from_bytes(bytes).unwrap();
                defmt::assert_eq!(schedule.choices.len(), models::builtin::<LAYERS>(case.model, None).unwrap().len());
                let total: f32 = schedule.choices.iter().map(|c| c.unary_us + c.transition_us).sum();
                defmt::assert!(close(total, schedule.cost_us));
                let re = wire::to_slice(&schedule, &mut again).unwrap();
                defmt::assert_eq!(&*re, bytes);
            }
        }
    }

    #[test]
    fn inputs_round_trip_through_postcard() {
        let mut buf = [0u8; <Graph<LAYERS> as Message>::MAX_ENCODED_LEN];
        for name in fixtures::SPECS {
            let spec = fixtures::spec(name).unwrap();
            let bytes = wire::to_slice(&spec, &mut buf).unwrap();
            defmt::assert_eq!(wire::from_bytes::<HardwareSpec>(bytes).unwrap(), spec);
        }
        let k = Coefficients::default();
        let bytes = wire::to_slice(&k, &mut buf).unwrap();
        defmt::assert_eq!(wire::from_bytes::<Coefficients>(bytes).unwrap(), k);
        let mut dags = 0;
        for model in models::NAMES {
            // A model of more layers than the firmware holds is refused.
            let g = match models::builtin::<LAYERS>(model, None) {
                Ok(g) => g,
                Err(e) => {
                    defmt::assert_eq!(e, ModelError::Graph(GraphError::TooManyLayers { capacity: LAYERS }));
                    continue;
                }
            };
            dags += usize::from(!g.is_chain());
            let bytes = wire::to_slice(&g, &mut buf).unwrap();
            defmt::assert_eq!(wire::from_bytes::<Graph<LAYERS>>(bytes).unwrap(), g);
        }
        // A DAG's input lists travel too.
        defmt::assert!(dags >= 1);
    }

    #[test]
    fn infeasible_layer_is_an_error() {
        // No row of any tile is a multiple of 64 KB.
        let mut spec = presets::stress_gpu();
        spec.alignment_bytes = 1 << 16;
        let graph = models::builtin::<LAYERS>("attention", None).unwrap();
        let r = fixtures::Problem::build(&graph, &spec, &Coefficients::default());
        defmt::assert_eq!(r.err(), Some(BuildError::Infeasible { layer: 0, constraint: Constraint::Alignment }));

        // Two layers whose states can never follow each other.
        struct Blocked;
        impl Problem<WORDS> for Blocked {
            fn layer_count(&self) -> usize {
                2
            }
            fn domain(&self, _: usize) -> Domain<WORDS> {
                Domain::first(4).unwrap()
            }
            fn unary(&self, _: usize, s: StateIndex) -> f32 {
                s as f32
            }
            fn transition(&self, _: usize, _: StateIndex, _: StateIndex) -> f32 {
                0.0
            }
            fn compatible(&self, _: usize, _: StateIndex, _: StateIndex) -> bool {
                false
            }
        }
        let w = wfc::solve::<_, LAYERS, WORDS>(&Blocked, &wfc::WfcConfig::default());
        defmt::assert!(matches!(w, Err(SolveError::Infeasible { .. })));
        let e = exact::solve::<_, LAYERS, WORDS>(&Blocked);
        defmt::assert!(matches!(e, Err(SolveError::Infeasible { .. })));
    }

    #[test]
    fn capacity_overflow_is_an_error() {
        let mut g = Graph::<2>::new();
        let op = Op::MatMul { m: 64, n: 64, k: 64, batch: 1, dtype: DType::F16 };
        g.push("a", op).unwrap();
        g.push("b", op).unwrap();
        defmt::assert_eq!(g.push("c", op), Err(GraphError::TooManyLayers { capacity: 2 }));
        defmt::assert_eq!(
            models::builtin::<4>("gpt2-block", None).err(),
            Some(ModelError::Graph(GraphError::TooManyLayers { capacity: 4 }))
        );
        // The CUDA space has 480 matmul states; a domain here holds 64.
        let mut cuda = presets::toy_gpu();
        cuda.space = SpaceKind::Cuda;
        let graph = models::builtin::<LAYERS>("attention", None).unwrap();
        let r = fixtures::Problem::build(&graph, &cuda, &Coefficients::default());
        defmt::assert_eq!(r.err(), Some(BuildError::TooManyStates { layer: 0, states: 480, capacity: 64 }));
        // An output buffer too small for the schedule.
        let mut buf = [0u8; SCHEDULE_CAPACITY];
        let len = fixtures::case_schedule(&fixtures::CASES[0], Solver::Wfc, &mut buf).unwrap().len();
        let schedule: Schedule<LAYERS> = wire::from_bytes(&buf[..len]).unwrap();
        let mut small = [0u8; 32];
        defmt::assert_eq!(wire::to_slice(&schedule, &mut small).err(), Some(WireError::BufferTooSmall));
        defmt::assert_eq!(wire::to_slice(&schedule, &mut small[..1]).err(), Some(WireError::BufferTooSmall));
    }

    #[test]
    fn coefficients_of_another_cost_model_are_refused() {
        let mut buf = [0u8; <Coefficients as Message>::MAX_ENCODED_LEN];
        let len = wire::to_slice(&Coefficients::default(), &mut buf).unwrap().len();
        defmt::assert_eq!(buf[2], COEFFICIENTS_VERSION);
        buf[2] = COEFFICIENTS_VERSION - 1;
        defmt::assert_eq!(
            wire::from_bytes::<Coefficients>(&buf[..len]).err(),
            Some(WireError::CostModelVersion { found: COEFFICIENTS_VERSION - 1, expected: COEFFICIENTS_VERSION })
        );
        // The H200 coefficients in the first wire format, which had no cost
        // model's version, and in the current one.
        let old: &[u8] = include_bytes!("../../tests/fixtures/coefficients-wire-v1.postcard");
        defmt::assert_eq!(
            wire::from_bytes::<Coefficients>(old).err(),
            Some(WireError::UnsupportedVersion { found: 1 })
        );
        let h200: &[u8] = include_bytes!("../../calib-data/h200/coefficients.postcard");
        let k = wire::from_bytes::<Coefficients>(h200).unwrap();
        defmt::assert!(k.validate().is_ok());
        let p = fixtures::Problem::build(
            &models::builtin::<LAYERS>("attention", None).unwrap(),
            &presets::stress_gpu(),
            &k,
        );
        defmt::assert!(p.is_ok());
    }

    #[test]
    fn corrupt_bytes_are_rejected() {
        let mut buf = [0u8; SCHEDULE_CAPACITY + 1];
        let case = Case { model: "attention", spec: "stress_gpu" };
        let len = fixtures::case_schedule(&case, Solver::Exact, &mut buf).unwrap().len();
        let good = buf;
        let decode = |bytes: &[u8]| wire::from_bytes::<Schedule<LAYERS>>(bytes).err();
        defmt::assert_eq!(decode(&[]), Some(WireError::Truncated));
        defmt::assert_eq!(decode(&good[..1]), Some(WireError::Truncated));
        // Every shorter prefix ends early.
        for cut in 2..len {
            defmt::assert_eq!(decode(&good[..cut]), Some(WireError::UnexpectedEnd), "cut at {=usize}", cut);
        }
        let mut bad = good;
        bad[0] = 99;
        defmt::assert_eq!(decode(&bad[..len]), Some(WireError::UnsupportedVersion { found: 99 }));
        let mut bad = good;
        bad[1] = wire::Kind::Graph as u8;
        defmt::assert_eq!(decode(&bad[..len]), Some(WireError::WrongKind { found: 4 }));
        defmt::assert_eq!(decode(&good[..len + 1]), Some(WireError::TrailingBytes));
        // Byte 12 is the first choice's placement (after the version, the
        // kind, the count, the index, the tile, the warps, the stages, the
        // split and ping-pong): an enum of five variants (the last,
        // `Epilogue`, is 4).
        defmt::assert_eq!(&good[2..12], &[6, 12, 32, 32, 32, 1, 1, 1, 1, 0]);
        let mut bad = good;
        bad[12] = hwwfc_core::Placement::Epilogue as u8 + 1;
        defmt::assert_eq!(decode(&bad[..len]), Some(WireError::Malformed));
        // Any single corrupted byte decodes to an error or to some schedule,
        // never to a fault.
        let mut rejected = 0u32;
        for i in 0..len {
            for flip in [0x01u8, 0x80, 0xFF] {
                let mut bad = good;
                bad[i] ^= flip;
                if decode(&bad[..len]).is_some() {
                    rejected += 1;
                }
            }
        }
        defmt::info!("{=u32} of {=usize} corruptions rejected", rejected, 3 * len);
        defmt::assert!(rejected > 0);
    }
}
