#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hwwfc_fuzz_checks::host_checks::host_inputs(data));
