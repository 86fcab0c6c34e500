//! Fuzz target: any bytes → parse → validate → a bounded run; see `fuzz/README.md`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| retrystorm_fuzz::check_scenario_bytes(data));
