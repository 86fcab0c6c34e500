//! Fuzz target: a run directory with one file replaced by any bytes → `plot`; see `fuzz/README.md`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| retrystorm_fuzz::check_plot_bytes(data));
