//! The body of the `scenario` fuzz target, shared with the stable-Rust smoke run in
//! `tests/properties.rs` (which includes this file): any bytes → parse → validate → a bounded run.
//!
//! The property: nothing panics. Bad input must come back as one `ScenarioError` line; a valid
//! scenario must simulate (the engine asserts that time never goes backwards and that requests
//! are conserved, so a violation is a panic too).

use retrystorm::model::{sim, SimSpec};
use retrystorm::scenario::Scenario;

/// Events one run may process: a runaway input is truncated, which is a normal outcome.
pub const EVENTS_MAX: u64 = 20_000;
/// Clients per tenant: validation admits millions, but allocating them per input is too slow.
pub const CLIENTS_MAX: u32 = 100;
/// Time-series buckets per run, for the same reason.
pub const BUCKETS_MAX: u64 = 2_000;

/// Parses, validates and (when valid) runs `data` as a scenario file; panics on any bug.
pub fn check_scenario_bytes(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let scenario = match Scenario::from_source("fuzz.toml", text, &[]) {
        Ok(scenario) => scenario,
        Err(e) => {
            let message = e.to_string();
            assert!(!message.is_empty() && !message.contains('\n'), "not a one-line message: {message:?}");
            return;
        }
    };
    for variant in scenario.run_variants() {
        let record = sim::run(&bounded(variant.spec), scenario.seed, 0);
        assert!(record.events <= EVENTS_MAX, "max_events ignored: {} events", record.events);
    }
}

/// `spec` with its sizes clamped so that one input runs in milliseconds. Each change keeps the
/// spec valid (fewer clients, fewer events, wider buckets), so the run still checks the engine.
pub fn bounded(mut spec: SimSpec) -> SimSpec {
    spec.max_events = spec.max_events.min(EVENTS_MAX);
    for tenant in &mut spec.tenants {
        tenant.clients = tenant.clients.min(CLIENTS_MAX);
    }
    if spec.drain_limit / spec.bucket > BUCKETS_MAX {
        spec.bucket = spec.drain_limit / BUCKETS_MAX + 1;
    }
    spec
}
