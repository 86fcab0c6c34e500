//! Virtual time: integer nanoseconds since the start of a run.

/// A point or span of virtual time, in nanoseconds. Integer so that runs are exact and portable.
pub type Nanos = u64;

/// Nanoseconds in one millisecond.
pub const NS_PER_MS: Nanos = 1_000_000;
/// Nanoseconds in one second.
pub const NS_PER_S: Nanos = 1_000_000_000;

/// Converts seconds (finite, non-negative) to nanoseconds, saturating at `u64::MAX`.
pub fn secs_to_ns(secs: f64) -> Nanos {
    debug_assert!(secs.is_finite() && secs >= 0.0, "secs_to_ns({secs})");
    let ns = secs * NS_PER_S as f64;
    if ns >= u64::MAX as f64 {
        u64::MAX
    } else {
        ns.round() as Nanos
    }
}

/// Converts nanoseconds to seconds: every ns → s conversion in the crate goes through here or
/// [`ns_f64_to_secs`].
pub fn ns_to_secs(ns: Nanos) -> f64 {
    ns_f64_to_secs(ns as f64)
}

/// Converts a (mean or sum of) nanoseconds held as a float to seconds.
pub fn ns_f64_to_secs(ns: f64) -> f64 {
    ns / NS_PER_S as f64
}

/// A duration in humantime's words (`1ms`, `2m 30s`): messages, reports and charts all say
/// durations this way.
pub fn duration_words(ns: Nanos) -> String {
    humantime::format_duration(std::time::Duration::from_nanos(ns)).to_string()
}

/// Converts microseconds (the latency histograms' unit) to seconds.
pub fn us_to_secs(us: f64) -> f64 {
    us / 1e6
}
