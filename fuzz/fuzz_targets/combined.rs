//! Fuzz target: bytes → a choice list → a random *valid* scenario combining features → every
//! replication run with the engine's conservation assertions on (`fuzz/src/combined.rs`).
#![no_main]

#[path = "../src/combined.rs"]
mod combined;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| combined::check_choices(&combined::choices_of_bytes(data)));
