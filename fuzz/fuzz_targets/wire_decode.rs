#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hwwfc_fuzz_checks::core_checks::wire_decode(data));
