//! The calibrated coefficients travel in two files, JSON for people and
//! the wire format for the core and the firmware: both must give the core
//! the same numbers, and so the same predictions, bit for bit.

use hwwfc_core::{cost, models, wire, Coefficients, Problem, ScheduleProblem};

fn h200_files() -> (Coefficients, Coefficients) {
    let dir = hwwfc_tests::repo_root().join("calib-data/h200");
    let text = std::fs::read_to_string(dir.join("coefficients.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["format_version"].as_u64(), Some(cost::COEFFICIENTS_VERSION as u64));
    let json: Coefficients = serde_json::from_value(v["coefficients"].clone()).unwrap();
    let bytes = std::fs::read(dir.join("coefficients.postcard")).unwrap();
    let postcard: Coefficients = wire::from_bytes(&bytes).unwrap();
    (json, postcard)
}

#[test]
fn postcard_and_json_coefficients_are_the_same() {
    let (json, postcard) = h200_files();
    assert_eq!(json.to_array().map(f32::to_bits), postcard.to_array().map(f32::to_bits));
    assert!(postcard.validate().is_ok());
}

#[test]
fn postcard_and_json_coefficients_predict_the_same() {
    let (json, postcard) = h200_files();
    let spec_text = std::fs::read_to_string(hwwfc_tests::repo_root().join("specs/h200.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&spec_text).unwrap();
    let obj = v.as_object_mut().unwrap();
    obj.remove("source");
    obj.remove("notes");
    let spec: hwwfc_core::HardwareSpec = serde_json::from_value(v).unwrap();
    // Every built-in model at the host's capacities (the Mixtral-style
    // expert fan-out holds 44 layers); a problem that size wants a larger
    // stack than a test thread's.
    const L: usize = hwwfc_core::HOST_MAX_LAYERS;
    const W: usize = hwwfc_core::HOST_DOMAIN_WORDS;
    let check = move || {
        for name in models::NAMES {
            let g = models::builtin::<L>(name, None).unwrap();
            let a = Box::new(ScheduleProblem::<L, W>::build(&g, &spec, &json).unwrap());
            let b = Box::new(ScheduleProblem::<L, W>::build(&g, &spec, &postcard).unwrap());
            for layer in 0..a.layer_count() {
                for s in a.domain(layer).iter() {
                    assert_eq!(
                        a.unary(layer, s).to_bits(),
                        b.unary(layer, s).to_bits(),
                        "{name} layer {layer} state {s}"
                    );
                }
            }
        }
    };
    std::thread::Builder::new().stack_size(256 << 20).spawn(check).unwrap().join().unwrap();
}

#[test]
fn the_postcard_file_is_the_wire_encoding_of_the_json_file() {
    let (json, _) = h200_files();
    let bytes = std::fs::read(hwwfc_tests::repo_root().join("calib-data/h200/coefficients.postcard")).unwrap();
    let mut buf = [0u8; <Coefficients as wire::Message>::MAX_ENCODED_LEN];
    assert_eq!(wire::to_slice(&json, &mut buf).unwrap(), &bytes[..]);
    assert_eq!(bytes[..3], [wire::WIRE_VERSION, wire::Kind::Coefficients as u8, cost::COEFFICIENTS_VERSION]);
}
