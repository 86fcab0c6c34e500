//! Virtual time: integer nanoseconds since the start of a run.

/// A point or span of virtual time, in nanoseconds. Integer so that runs are exact and portable.
pub type Nanos = u64;

/// Nanoseconds in one millisecond.
pub const NS_PER_MS: Nanos = 1_000_000;
/// Nanoseconds in one second.
pub const NS_PER_S: Nanos = 1_000_000_000;

/// Converts seconds (finite, non-negative) to nanoseconds, saturating at `u64::MAX`.
pub fn secs_to_ns(secs: f64) -> Nanos {
    assert!(secs.is_finite() && secs >= 0.0, "secs_to_ns({secs}): a duration must be finite and non-negative");
    let ns = secs * NS_PER_S as f64;
    if ns >= u64::MAX as f64 {
        u64::MAX
    } else {
        ns.round() as Nanos
    }
}

/// Converts nanoseconds to seconds.
pub fn ns_to_secs(ns: Nanos) -> f64 {
    ns as f64 / NS_PER_S as f64
}
