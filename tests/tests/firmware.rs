//! The firmware in QEMU, checked from the host: its on-target tests pass,
//! the schedules it computes for the attention benchmark, a GPT-2 block and
//! a Llama 3 8B block (on `stress_gpu` and `toy_gpu`, with WFC and exact DP)
//! equal the host's bit for bit, so does the digest of every schedule of
//! the generated chains, and neither image links an allocator.
//!
//! The firmware and the runner are built once (release, for
//! thumbv7em-none-eabihf; the runner for the host) and each image is run
//! once; `qemu-system-arm` is installed first if it is missing (as root).

use hwwfc_fixtures::{self as fixtures, Solver, CASES, SCHEDULE_CAPACITY};
use hwwfc_tests::elf::Image;
use hwwfc_tests::firmware::{self, Elfs, Run};
use std::sync::OnceLock;

struct Firmware {
    elfs: Elfs,
    app: Run,
    tests: Run,
}

fn firmware() -> &'static Firmware {
    static FIRMWARE: OnceLock<Result<Firmware, String>> = OnceLock::new();
    let built = FIRMWARE.get_or_init(|| {
        let elfs = firmware::build()?;
        let runner = firmware::build_runner()?;
        let app = firmware::run(&runner, &elfs.app, false)?;
        let tests = firmware::run(&runner, &elfs.tests, false)?;
        Ok(Firmware { elfs, app, tests })
    });
    match built {
        Ok(f) => f,
        Err(e) => panic!("the firmware could not be built or run: {e}"),
    }
}

#[test]
fn the_firmware_pins_the_core_dependencies_of_the_host() {
    if let Err(e) = firmware::check_lockfiles() {
        panic!("{e}");
    }
}

#[test]
fn on_target_tests_pass() {
    let f = firmware();
    assert!(f.tests.passed(), "the on-target tests failed (exit {:?}):\n{}", f.tests.exit_code, f.tests.output);
    assert!(f.tests.frames.iter().any(|l| l.message == "all tests passed!"), "{}", f.tests.output);
}

#[test]
fn the_benchmark_image_solves_every_case() {
    let f = firmware();
    assert!(f.app.passed(), "the benchmark image failed (exit {:?}):\n{}", f.app.exit_code, f.app.output);
    assert_eq!(f.app.records("phase").len(), CASES.len() * 5, "{}", f.app.output);
}

#[test]
fn schedules_on_target_equal_the_hosts_bit_for_bit() {
    let f = firmware();
    let records = f.app.records("schedule");
    let mut buf = [0u8; SCHEDULE_CAPACITY];
    let mut compared = 0;
    for case in CASES {
        for solver in Solver::ALL {
            let host = fixtures::case_schedule(&case, solver, &mut buf).expect("the host solves the case");
            let target = records
                .iter()
                .find(|r| {
                    r.get("model") == Some(case.model)
                        && r.get("spec") == Some(case.spec)
                        && r.get("solver") == Some(solver.name())
                })
                .and_then(|r| r.bytes("bytes"))
                .unwrap_or_else(|| panic!("no schedule of {case:?} by {solver:?} on target:\n{}", f.app.output));
            assert_eq!(target, host, "{} on {} by {}: target and host differ", case.model, case.spec, solver.name());
            compared += 1;
        }
    }
    assert_eq!(compared, CASES.len() * Solver::ALL.len());
    assert!(compared >= 20, "{compared} schedules compared");
}

#[test]
fn generated_chains_digest_equals_the_hosts() {
    let f = firmware();
    let record = f.tests.records("chains").pop().unwrap_or_else(|| panic!("no chains record:\n{}", f.tests.output));
    assert_eq!(record.number("count"), Some(fixtures::CHAIN_COUNT as u64));
    let host = fixtures::chains_digest().expect("the host solves the chains");
    assert_eq!(record.number("digest"), Some(host.0), "the schedules of the generated chains differ");
}

#[test]
fn systick_counts_40_instructions_per_tick() {
    let f = firmware();
    let r = f.tests.records("calibration").pop().unwrap_or_else(|| panic!("no calibration:\n{}", f.tests.output));
    let (instructions, ticks) = (r.number("instructions").unwrap(), r.number("ticks").unwrap());
    assert!((instructions as f64 / ticks as f64 - 40.0).abs() < 0.05, "{instructions} instructions in {ticks} ticks");
}

#[test]
fn no_image_links_an_allocator() {
    let f = firmware();
    for elf in [&f.elfs.app, &f.elfs.tests] {
        let image = Image::read(elf).unwrap();
        assert!(image.symbols.len() > 100, "{}: no symbol table", elf.display());
        assert_eq!(image.allocation_symbols(), Vec::<String>::new(), "{} links an allocator", elf.display());
    }
}
