//! `hwwfc schedule --sms N --smem-kb K`: a partition of the spec's GPU,
//! scheduled with the whole GPU's coefficients, and the partitions refused.

mod common;

use common::{schedule_error, schedule_json};

fn total(v: &serde_json::Value) -> f64 {
    v["exact_cost"].as_f64().unwrap()
}

#[test]
fn a_partition_is_scheduled_with_its_own_limits() {
    let model = ["--spec", "h200", "--model", "llama3-8b-block"];
    let whole = schedule_json(&model);
    assert!(whole["partition"].is_null());
    let mut last = total(&whole);
    for sms in ["64", "32", "16"] {
        let part = schedule_json(&[&model[..], &["--sms", sms]].concat());
        assert_eq!(part["partition"]["sms"], sms.parse::<u32>().unwrap());
        assert_eq!(part["partition"]["of_sms"], 132);
        assert!(total(&part) > last, "{sms} SMs: {} us, not above {last} us", total(&part));
        last = total(&part);
        // The same coefficients: the whole GPU's, built in.
        assert_eq!(part["coefficients"], whole["coefficients"]);
    }
    // A 64 KiB budget removes the matmul states that stage more (a softmax
    // stages little), and every layer still has one.
    let small = schedule_json(&[&model[..], &["--smem-kb", "64"]].concat());
    assert_eq!(small["partition"]["sram_per_block_bytes"], 65536);
    for (a, b) in small["layers"].as_array().unwrap().iter().zip(whole["layers"].as_array().unwrap()) {
        if a["kind"] != "matmul" {
            continue;
        }
        assert!(a["states_left"].as_u64().unwrap() > 0);
        assert!(a["states_left"].as_u64() < b["states_left"].as_u64(), "{}", a["name"]);
        assert!(a["removed"]["sram_capacity"].as_u64() > b["removed"]["sram_capacity"].as_u64());
    }
    assert!(total(&small) >= total(&whole));
}

#[test]
fn impossible_partitions_are_refused_in_one_line() {
    let e = schedule_error(&["--spec", "h200", "--sms", "0"]);
    assert!(e.contains("at least one SM"), "{e}");
    let e = schedule_error(&["--spec", "h200", "--sms", "200"]);
    assert!(e.contains("spec `h200`") && e.contains("200 SMs") && e.contains("132"), "{e}");
    let e = schedule_error(&["--spec", "h200", "--smem-kb", "300"]);
    assert!(e.contains("307200 bytes") && e.contains("232448"), "{e}");
    let e = schedule_error(&["--spec", "h200", "--smem-kb", "0"]);
    assert!(e.contains("more than 0 bytes"), "{e}");
}
