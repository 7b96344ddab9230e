//! The C ABI called from Rust: capacities, error codes, stack needs.

use hwwfc_capi::*;
use hwwfc_core::space::SpaceKind;
use hwwfc_core::wire;
use hwwfc_core::{presets, Graph, HardwareSpec, Op};
use hwwfc_fixtures::{case_schedule, Solver, CASES, SCHEDULE_CAPACITY};

fn spec_bytes(spec: &HardwareSpec) -> Vec<u8> {
    let mut buf = [0u8; HWWFC_SPEC_MAX_LEN];
    wire::to_slice(spec, &mut buf).unwrap().to_vec()
}

fn model_bytes<const N: usize>(g: &Graph<N>) -> Vec<u8> {
    let mut buf = [0u8; HWWFC_MODEL_MAX_LEN];
    wire::to_slice(g, &mut buf).unwrap().to_vec()
}

type Entry =
    unsafe extern "C" fn(*const u8, usize, *const u8, usize, *const u8, usize, u32, *mut u8, usize, *mut usize) -> i32;

/// `call_here` on a thread with the stack `hwwfc_schedule` documents for
/// an unoptimized build.
fn call(f: Entry, spec: &[u8], model: &[u8], solver: u32) -> Result<Vec<u8>, i32> {
    let (spec, model) = (spec.to_vec(), model.to_vec());
    let run = move || call_here(f, &spec, &model, solver);
    std::thread::Builder::new().stack_size(4 << 20).spawn(run).unwrap().join().unwrap()
}

/// Calls `f` on this thread.
fn call_here(f: Entry, spec: &[u8], model: &[u8], solver: u32) -> Result<Vec<u8>, i32> {
    let mut out = vec![0u8; HWWFC_SCHEDULE_MAX_LEN];
    let mut len = 0usize;
    // SAFETY: valid buffers and lengths.
    let status = unsafe {
        f(
            spec.as_ptr(),
            spec.len(),
            model.as_ptr(),
            model.len(),
            std::ptr::null(),
            0,
            solver,
            out.as_mut_ptr(),
            out.len(),
            &mut len,
        )
    };
    if status == HWWFC_OK {
        out.truncate(len);
        Ok(out)
    } else {
        Err(status)
    }
}

#[test]
fn both_entry_points_give_the_rust_schedules() {
    let mut buf = [0u8; SCHEDULE_CAPACITY];
    for case in CASES {
        let (spec, graph) = case.inputs().unwrap();
        let (s, m) = (spec_bytes(&spec), model_bytes(&graph));
        for (solver, code) in [(Solver::Wfc, HWWFC_SOLVER_WFC), (Solver::Exact, HWWFC_SOLVER_EXACT)] {
            let expected = case_schedule(&case, solver, &mut buf).unwrap().to_vec();
            assert_eq!(call(hwwfc_schedule, &s, &m, code), Ok(expected.clone()), "{case:?}");
            assert_eq!(call(hwwfc_schedule_compact, &s, &m, code), Ok(expected), "{case:?}");
        }
    }
}

#[test]
fn capacities_are_enforced_with_their_own_codes() {
    let op = Op::MatMul { m: 256, n: 256, k: 256, batch: 1, dtype: hwwfc_core::DType::F16 };
    let mut long = Graph::<64>::new();
    for i in 0..17 {
        long.push(&format!("l{i}"), op).unwrap();
    }
    let toy = spec_bytes(&presets::toy_gpu());
    assert_eq!(
        call(hwwfc_schedule_compact, &toy, &model_bytes(&long), HWWFC_SOLVER_EXACT),
        Err(HWWFC_ERR_TOO_MANY_LAYERS)
    );
    assert!(call(hwwfc_schedule, &toy, &model_bytes(&long), HWWFC_SOLVER_EXACT).is_ok());

    // The CUDA space (480 matmul states) fits only the large entry point.
    let mut cuda = presets::toy_gpu();
    cuda.space = SpaceKind::Cuda;
    let mut short = Graph::<4>::new();
    short.push("mm", op).unwrap();
    let (c, m) = (spec_bytes(&cuda), model_bytes(&short));
    assert_eq!(call(hwwfc_schedule_compact, &c, &m, HWWFC_SOLVER_WFC), Err(HWWFC_ERR_TOO_MANY_STATES));
    assert!(call(hwwfc_schedule, &c, &m, HWWFC_SOLVER_WFC).is_ok());
}

#[test]
fn invalid_inputs_have_their_codes() {
    let mut bad = presets::stress_gpu();
    bad.alignment_bytes = 3;
    let graph = hwwfc_core::models::builtin::<8>("attention", None).unwrap();
    let m = model_bytes(&graph);
    assert_eq!(call(hwwfc_schedule, &spec_bytes(&bad), &m, HWWFC_SOLVER_WFC), Err(HWWFC_ERR_INVALID_SPEC));
    let mut infeasible = presets::stress_gpu();
    infeasible.alignment_bytes = 1 << 16;
    assert_eq!(call(hwwfc_schedule, &spec_bytes(&infeasible), &m, HWWFC_SOLVER_WFC), Err(HWWFC_ERR_INFEASIBLE));
    assert_eq!(call(hwwfc_schedule, &[], &m, HWWFC_SOLVER_WFC), Err(HWWFC_ERR_SPEC_BYTES));
    let empty = model_bytes(&Graph::<8>::new());
    assert_eq!(
        call(hwwfc_schedule, &spec_bytes(&presets::toy_gpu()), &empty, HWWFC_SOLVER_WFC),
        Err(HWWFC_ERR_INVALID_MODEL)
    );
    for code in 0..=HWWFC_ERR_PANIC {
        // SAFETY: a static NUL-terminated string.
        let name = unsafe { std::ffi::CStr::from_ptr(hwwfc_status_name(code)) }.to_str().unwrap();
        assert!(name.starts_with("HWWFC_") && name != "HWWFC_UNKNOWN_STATUS", "{code}");
    }
}

/// Runs `f` on a thread with `bytes` of stack (an overflow aborts the test).
fn with_stack(bytes: usize, f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new().stack_size(bytes).spawn(f).unwrap().join().unwrap();
}

/// The stacks documented for an unoptimized build (this test's): 4 MiB for
/// `hwwfc_schedule`, 128 KiB for `hwwfc_schedule_compact` (an optimized
/// build needs about a quarter of that).
#[test]
fn the_documented_stacks_suffice() {
    let s = spec_bytes(&presets::stress_gpu());
    let m = model_bytes(&hwwfc_core::models::builtin::<8>("llama3-8b-block", None).unwrap());
    // The large entry point at its capacities: 64 layers, each with the
    // hopper space's every matmul state.
    let mut hopper = presets::toy_gpu();
    hopper.space = SpaceKind::Hopper;
    hopper.sram_per_block_bytes = 232_448;
    hopper.sram_per_sm_bytes = 233_472;
    hopper.alignment_bytes = 16;
    let mut g = Graph::<64>::new();
    for i in 0..64 {
        g.push(&format!("l{i}"), Op::MatMul { m: 4096, n: 4096, k: 4096, batch: 1, dtype: hwwfc_core::DType::F16 })
            .unwrap();
    }
    let (s2, m2) = (spec_bytes(&hopper), model_bytes(&g));
    with_stack(4 << 20, move || {
        for solver in [HWWFC_SOLVER_WFC, HWWFC_SOLVER_EXACT] {
            assert!(call_here(hwwfc_schedule, &s2, &m2, solver).is_ok());
        }
    });
    with_stack(128 << 10, move || {
        for solver in [HWWFC_SOLVER_WFC, HWWFC_SOLVER_EXACT] {
            assert!(call_here(hwwfc_schedule_compact, &s, &m, solver).is_ok());
        }
    });
}
