//! Virtual time: integer nanoseconds since the start of a run.

/// A point or span of virtual time, in nanoseconds. Integer so that runs are exact and portable.
pub type Nanos = u64;

/// Nanoseconds in one millisecond.
pub const NS_PER_MS: Nanos = 1_000_000;
/// Nanoseconds in one second.
pub const NS_PER_S: Nanos = 1_000_000_000;

/// Converts seconds (finite, non-negative) to nanoseconds, saturating at `u64::MAX`.
#[inline]
pub fn secs_to_ns(secs: f64) -> Nanos {
    assert!(secs.is_finite() && secs >= 0.0, "secs_to_ns({secs}): a duration must be finite and non-negative");
    let ns = secs * NS_PER_S as f64;
    if ns >= u64::MAX as f64 {
        u64::MAX
    } else {
        round_to_ns(ns)
    }
}

/// `x.round() as Nanos` (half away from zero) for `0 ≤ x < 2^64`, without calling libm's
/// `round`: the default x86-64 target has no rounding instruction, and the call was 2.5% of a
/// queue-bound run (docs/PERFORMANCE.md). The integer part comes from the conversion, which
/// truncates, and the remainder `x − t` is exact: below 2^53 by Sterbenz's lemma (`t ≤ x < t + 1
/// ≤ 2t`, or `t = 0`), from 2^53 on because every such double is an integer (`t = x`).
#[inline]
pub fn round_to_ns(x: f64) -> Nanos {
    debug_assert!((0.0..u64::MAX as f64).contains(&x), "round_to_ns({x}) is for 0 ≤ x < 2^64");
    // Through `i64` below 2^63: one instruction each way, where `u64`'s conversions take several
    // (x86-64 before AVX-512 has none for unsigned integers). From 2^63 on, `x` is an integer.
    if x < I64_END {
        let t = x as i64;
        (if x - t as f64 >= 0.5 { t + 1 } else { t }) as Nanos
    } else {
        x as Nanos
    }
}

/// 2^63, the first double past `i64`.
const I64_END: f64 = 9_223_372_036_854_775_808.0;

/// Converts nanoseconds to seconds: every ns → s conversion in the crate goes through here or
/// [`ns_f64_to_secs`].
#[inline]
pub fn ns_to_secs(ns: Nanos) -> f64 {
    ns_f64_to_secs(ns as f64)
}

/// Converts a (mean or sum of) nanoseconds held as a float to seconds.
#[inline]
pub fn ns_f64_to_secs(ns: f64) -> f64 {
    ns / NS_PER_S as f64
}

/// A duration in humantime's words (`1ms`, `2m 30s`): messages, reports and charts all say
/// durations this way.
pub fn duration_words(ns: Nanos) -> String {
    humantime::format_duration(std::time::Duration::from_nanos(ns)).to_string()
}

/// A duration in seconds as `250 ms`, `1.5 s`, `2 min`.
pub fn fmt_secs(s: f64) -> String {
    let trim = crate::text::fmt_tick;
    if s == 0.0 {
        "0 s".into()
    } else if s < 1e-3 {
        format!("{} µs", trim(s * 1e6))
    } else if s < 1.0 {
        format!("{} ms", trim(s * 1e3))
    } else if s < 120.0 {
        format!("{} s", trim(s))
    } else if s < 7200.0 {
        format!("{} min", trim(s / 60.0))
    } else {
        format!("{} h", trim(s / 3600.0))
    }
}

/// Converts microseconds (the latency histograms' unit) to seconds.
#[inline]
pub fn us_to_secs(us: f64) -> f64 {
    us / 1e6
}

/// Parses "100ms", "1m 30s", "72h" into nanoseconds, with a message that says what is allowed.
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    if trimmed.starts_with('-') {
        return Err(format!("invalid duration `{text}`: durations cannot be negative"));
    }
    let parsed = humantime::parse_duration(trimmed).map_err(|e| {
        // humantime says "expected number at 0" for "NaN" or "inf": say what a duration is instead.
        #[allow(clippy::wildcard_enum_match_arm, reason = "humantime's error: its other variants' own words are right")]
        let why = match e {
            humantime::DurationError::NumberExpected(_) | humantime::DurationError::InvalidCharacter(_) => {
                "a duration is a number followed by a unit".to_string()
            }
            other => other.to_string(),
        };
        format!("invalid duration `{text}` ({why}); write e.g. \"250ms\", \"10s\", \"5m\" or \"72h\"")
    })?;
    u64::try_from(parsed.as_nanos())
        .map_err(|_| format!("duration `{text}` is longer than the ~584 years a u64 of nanoseconds holds"))
}

/// Serde `deserialize_with` for a duration string ("100ms", "10s") in nanoseconds: the model's
/// kind enums (budgets, faults, jitter) read their durations through it.
pub fn de_nanos<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Nanos, D::Error> {
    parse_duration(&de_duration_text(deserializer)?).map_err(serde::de::Error::custom)
}

/// [`de_nanos`] for a list of durations.
pub fn de_nanos_list<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<Nanos>, D::Error> {
    struct Text(String);
    impl<'de> serde::Deserialize<'de> for Text {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            de_duration_text(deserializer).map(Text)
        }
    }
    let texts: Vec<Text> = serde::Deserialize::deserialize(deserializer)?;
    texts.iter().map(|t| parse_duration(&t.0).map_err(serde::de::Error::custom)).collect()
}

/// A duration string kept as text, refusing anything that is not a string with a message that
/// says what a duration looks like.
pub fn de_duration_text<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    struct Visitor;
    impl serde::de::Visitor<'_> for Visitor {
        type Value = String;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a duration string such as \"100ms\", \"10s\" or \"72h\"")
        }
        fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<String, E> {
            Ok(v.to_string())
        }
    }
    deserializer.deserialize_str(Visitor)
}

#[cfg(test)]
mod tests {
    use super::{fmt_secs, round_to_ns, I64_END};

    /// `round_to_ns` is `f64::round` over every kind of value: halves, the neighbours of halves,
    /// integers, tiny values, values past 2^52 (where halves stop existing) and near 2^64.
    #[test]
    fn rounding_is_f64_round_exactly() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut values = vec![0.0, 0.5, 1.5, 2.5, 0.499_999_999_999_999_94, 4_503_599_627_370_495.5];
        values.extend([
            2f64.powi(52),
            2f64.powi(53) + 2.0,
            2f64.powi(63),
            I64_END,
            I64_END - 1024.0,
            u64::MAX as f64 * 0.999_999_9,
        ]);
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let bits = (x % 64) as i32;
            let v = (x >> 11) as f64 / (1u64 << 53) as f64 * 2f64.powi(bits);
            values.extend([v, v.floor() + 0.5, f64::from_bits((v.floor() + 0.5).to_bits() - 1), v.floor()]);
        }
        for v in values.into_iter().filter(|v| (0.0..u64::MAX as f64).contains(v)) {
            assert_eq!(round_to_ns(v), v.round() as u64, "{v:e}");
        }
    }

    #[test]
    fn seconds_read_in_their_unit() {
        assert_eq!(fmt_secs(0.0), "0 s");
        assert_eq!(fmt_secs(2e-5), "20 µs");
        assert_eq!(fmt_secs(0.25), "250 ms");
        assert_eq!(fmt_secs(10.0), "10 s");
        assert_eq!(fmt_secs(150.0), "2.5 min");
        assert_eq!(fmt_secs(9000.0), "2.5 h");
    }
}
