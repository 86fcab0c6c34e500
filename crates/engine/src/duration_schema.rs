//! The JSON Schema of a duration string as [`parse_duration`](crate::time::parse_duration) reads
//! it, for the scenario format's schema (`retrystorm schema`).

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use std::borrow::Cow;

/// Every unit humantime 2 reads, longest spelling first so that a regex tries it before its
/// prefixes (`ms` before `m`).
pub const UNITS: [&str; 40] = [
    "nanos", "nsec", "ns", "usec", "us", "µs", "millis", "msec", "ms", "seconds", "second", "secs", "sec", "s",
    "minutes", "minute", "mins", "min", "m", "hours", "hour", "hrs", "hr", "h", "days", "day", "d", "weeks", "week",
    "wks", "wk", "w", "months", "month", "M", "years", "year", "yrs", "yr", "y",
];

/// The regular expression of a duration: one or more `<number><unit>` terms (`"1h 30m"`,
/// `"1.5s"`), spaces allowed around and between them. It is a little looser than the parser (a
/// duration too long for 64 bits of nanoseconds still matches); the one form it misses is a
/// space inside a number (`"1 0s"`), which the parser skips.
pub fn pattern() -> String {
    format!(r"^\s*{}$", terms())
}

/// The terms of a duration, unanchored, for patterns that embed one (`"window+6h"`).
pub fn terms() -> String {
    format!(r"(\d+(\.\d+)?\s*({})\s*)+", UNITS.join("|"))
}

/// A duration string (`"100ms"`, `"10s"`, `"72h"`): name it with `#[schemars(with = …)]` on a
/// field read through `de_nanos` or `de_duration_text`.
pub struct DurationString;

impl JsonSchema for DurationString {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A duration: a number and a unit (ns, us, ms, s, m, h, d, w, …), terms may add up (\"1h 30m\").",
            "type": "string",
            "pattern": pattern(),
            "examples": ["100ms", "10s", "5m", "72h", "1h 30m"]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The unit list is humantime's: each unit parses, and a near-miss does not.
    #[test]
    fn every_unit_parses_and_the_pattern_is_anchored() {
        for unit in UNITS {
            assert!(crate::time::parse_duration(&format!("2{unit}")).is_ok(), "2{unit}");
        }
        assert!(crate::time::parse_duration("2parsecs").is_err());
        let p = pattern();
        assert!(p.starts_with('^') && p.ends_with('$'), "{p}");
    }
}
