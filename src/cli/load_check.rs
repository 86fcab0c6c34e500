//! The load check `validate` and `init` print before anything runs: each hop's offered load
//! against its capacity (the one definition, `SimSpec::capacity_per_s`, which counts the time
//! workers are held on downstream calls), with a warning for a hop overloaded before any fault.

use crate::engine::time::ns_f64_to_secs;
use crate::model::SimSpec;
use crate::report::format::fmt_num;

/// Utilisation from which a hop is called near its capacity.
const NEAR: f64 = 0.9;

/// The check's lines, and the warnings (a hop at or over capacity before any fault).
pub fn load_check(spec: &SimSpec) -> (Vec<String>, Vec<String>) {
    let offered = spec.offered_per_s();
    let mut lines = Vec::new();
    let mut warnings = Vec::new();
    for (h, hop) in spec.hops.iter().enumerate() {
        let Some(cap) = spec.capacity_per_s(h) else {
            lines.push(format!("load check: hop {}: no worker limit (unbounded capacity)", hop.name));
            continue;
        };
        let held = ns_f64_to_secs(spec.held_downstream_ns(h));
        let held_words = if held > 0.0 {
            format!(
                " = workers ÷ (service + held downstream): its workers held {} s on downstream calls per attempt",
                fmt_num(held)
            )
        } else {
            String::new()
        };
        let Some(rate) = offered.as_ref().map(|r| r[h]) else {
            lines.push(format!(
                "load check: hop {}: capacity {}/s{held_words}; offered load not estimated (herd or closed-loop arrivals)",
                hop.name,
                fmt_num(cap)
            ));
            continue;
        };
        let u = rate / cap;
        lines.push(format!(
            "load check: hop {}: offered ≈ {}/s against capacity {}/s{held_words}: {}% of capacity",
            hop.name,
            fmt_num(rate),
            fmt_num(cap),
            fmt_num(100.0 * u)
        ));
        if u >= 1.0 {
            warnings.push(format!(
                "hop {} is overloaded before any fault: ≈ {}/s offered against a capacity of {}/s; its backlog grows from the start, so every variant will look metastable. Add workers (≥ {}) or lower the load",
                hop.name,
                fmt_num(rate),
                fmt_num(cap),
                (f64::from(hop.workers) * u).ceil()
            ));
        } else if u >= NEAR {
            warnings.push(format!(
                "hop {} runs at {}% of its capacity before any fault: queues build on noise alone",
                hop.name,
                fmt_num(100.0 * u)
            ));
        }
    }
    (lines, warnings)
}
