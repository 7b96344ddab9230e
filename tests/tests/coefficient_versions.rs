//! Coefficients carry the cost model's version in their wire header (wire
//! format version 2), so that coefficients fitted under one cost model are
//! never used under another. The core, the C ABI and the host's coefficient
//! loader refuse, each with its typed error:
//!
//! - a file of the first wire format, which had no cost model's version:
//!   `tests/fixtures/coefficients-wire-v1.postcard`, H200 coefficients as
//!   `calib-data/h200/coefficients.postcard` held them in that format;
//! - coefficients whose header names another cost model's version.

use hwwfc::input::coefficients_file;
use hwwfc_capi::{
    hwwfc_cost_model_version, hwwfc_schedule, hwwfc_schedule_compact, hwwfc_status_name, HWWFC_ERR_COEFFICIENT_BYTES,
    HWWFC_ERR_COST_MODEL_VERSION, HWWFC_OK, HWWFC_SCHEDULE_MAX_LEN, HWWFC_SOLVER_WFC,
};
use hwwfc_core::cost::COEFFICIENTS_VERSION;
use hwwfc_core::wire::{self, Message, WireError, WIRE_VERSION};
use hwwfc_core::{models, presets, Coefficients, Graph};
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    hwwfc_tests::repo_root().join("tests/fixtures/coefficients-wire-v1.postcard")
}

fn h200() -> PathBuf {
    hwwfc_tests::repo_root().join("calib-data/h200/coefficients.postcard")
}

fn encode<T: Message>(value: &T) -> Vec<u8> {
    let mut buf = vec![0u8; T::MAX_ENCODED_LEN];
    wire::to_slice(value, &mut buf).unwrap().to_vec()
}

type Entry =
    unsafe extern "C" fn(*const u8, usize, *const u8, usize, *const u8, usize, u32, *mut u8, usize, *mut usize) -> i32;

/// The status of scheduling the attention benchmark on `stress_gpu` with
/// `coefficients` through the C ABI entry point `f`.
fn c_status(f: Entry, coefficients: &[u8]) -> i32 {
    let spec = encode(&presets::stress_gpu());
    let model = encode(&models::builtin::<8>("attention", None).unwrap());
    let coefficients = coefficients.to_vec();
    // On a thread with the stack `hwwfc_schedule` documents for an
    // unoptimized build.
    let call = move || {
        let mut out = vec![0u8; HWWFC_SCHEDULE_MAX_LEN];
        let mut len = 0usize;
        // SAFETY: valid buffers and their lengths.
        unsafe {
            f(
                spec.as_ptr(),
                spec.len(),
                model.as_ptr(),
                model.len(),
                coefficients.as_ptr(),
                coefficients.len(),
                HWWFC_SOLVER_WFC,
                out.as_mut_ptr(),
                out.len(),
                &mut len,
            )
        }
    };
    std::thread::Builder::new().stack_size(4 << 20).spawn(call).unwrap().join().unwrap()
}

/// The host loader's error for the file `path`, as the command prints it.
fn host_error(path: &Path) -> String {
    format!("{:#}", coefficients_file::load(Some(path)).unwrap_err())
}

#[test]
fn the_first_wire_format_is_refused() {
    let old = std::fs::read(fixture()).unwrap();
    // The first format's 2-byte header: version 1, then the message kind
    // (no cost model's version).
    assert_eq!(old[..2], [1, Coefficients::KIND as u8]);

    assert_eq!(wire::from_bytes::<Coefficients>(&old), Err(WireError::UnsupportedVersion { found: 1 }));
    assert_eq!(c_status(hwwfc_schedule, &old), HWWFC_ERR_COEFFICIENT_BYTES);
    assert_eq!(c_status(hwwfc_schedule_compact, &old), HWWFC_ERR_COEFFICIENT_BYTES);
    assert_eq!(
        host_error(&fixture()),
        format!("{}: unsupported format version 1 (this build reads version {WIRE_VERSION})", fixture().display())
    );
}

#[test]
fn coefficients_of_another_cost_model_are_refused() {
    let good = std::fs::read(h200()).unwrap();
    assert_eq!(good[..3], [WIRE_VERSION, Coefficients::KIND as u8, COEFFICIENTS_VERSION]);
    assert_eq!(hwwfc_cost_model_version(), COEFFICIENTS_VERSION);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("coefficient-versions");
    std::fs::create_dir_all(&dir).unwrap();
    for found in [COEFFICIENTS_VERSION - 1, COEFFICIENTS_VERSION + 1] {
        let mut bytes = good.clone();
        bytes[2] = found;
        assert_eq!(
            wire::from_bytes::<Coefficients>(&bytes),
            Err(WireError::CostModelVersion { found, expected: COEFFICIENTS_VERSION })
        );
        assert_eq!(c_status(hwwfc_schedule, &bytes), HWWFC_ERR_COST_MODEL_VERSION);
        assert_eq!(c_status(hwwfc_schedule_compact, &bytes), HWWFC_ERR_COST_MODEL_VERSION);
        let path = dir.join(format!("cost-model-{found}.postcard"));
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(
            host_error(&path),
            format!(
                "{}: coefficients of cost model version {found}; this build reads version {COEFFICIENTS_VERSION}",
                path.display()
            )
        );
    }
    // SAFETY: a static NUL-terminated string.
    let name = unsafe { std::ffi::CStr::from_ptr(hwwfc_status_name(HWWFC_ERR_COST_MODEL_VERSION)) };
    assert_eq!(name.to_str(), Ok("HWWFC_ERR_COST_MODEL_VERSION"));
}

#[test]
fn the_current_file_is_accepted_everywhere() {
    let bytes = std::fs::read(h200()).unwrap();
    let k: Coefficients = wire::from_bytes(&bytes).unwrap();
    assert_eq!(c_status(hwwfc_schedule, &bytes), HWWFC_OK);
    assert_eq!(c_status(hwwfc_schedule_compact, &bytes), HWWFC_OK);
    let from_postcard = coefficients_file::load(Some(&h200())).unwrap();
    let json = hwwfc_tests::repo_root().join("calib-data/h200/coefficients.json");
    let from_json = coefficients_file::load(Some(&json)).unwrap();
    let bits = |c: &Coefficients| c.to_array().map(f32::to_bits);
    assert_eq!(bits(&from_postcard.coefficients), bits(&k));
    assert_eq!(bits(&from_json.coefficients), bits(&k));
    // A graph is no coefficients, whatever its bytes.
    let graph = encode(&Graph::<8>::new());
    assert_eq!(c_status(hwwfc_schedule, &graph), HWWFC_ERR_COEFFICIENT_BYTES);
}
