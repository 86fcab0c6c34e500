//! Fuzz target: a sweep shard with `sweep.json` or `sweep.csv` replaced by any bytes → `merge`;
//! see `fuzz/README.md`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| retrystorm_fuzz::check_merge_bytes(data));
