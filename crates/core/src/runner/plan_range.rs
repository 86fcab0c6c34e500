//! The parameter `plan` varies: its path, its kind (whole numbers, real numbers or durations),
//! its range, the resolution the search stops at, and how its values are written (in messages,
//! in the report, and as the `--set` value each probe loads).
//!
//! The search works on the grid `lo, lo + r, lo + 2r, …, hi` (r the resolution; the last step
//! may be shorter), so a whole-number range with r = 1 probes exactly the integers. Durations
//! are held in seconds and snapped to whole nanoseconds, real numbers to 12 significant digits
//! (no `0.30000000000000004` in plan.json).

use crate::engine::time::{duration_words, parse_duration, NS_PER_S};
use serde::{Deserialize, Serialize};

/// The largest magnitude of a range's end: beyond it f64 values are not whole numbers, and a
/// range's width or grid could overflow.
pub const VALUE_MAX: f64 = 1e15;

/// The most grid steps in a range: a step index stays an exact f64 integer.
pub const STEPS_MAX: f64 = 9_007_199_254_740_992.0;

/// Which end of the passing values `plan` answers with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Find {
    /// The smallest value meeting every requirement (larger is better: workers, capacity).
    #[default]
    Smallest,
    /// The largest value still meeting every requirement (larger is worse: clients, arrival rate).
    Largest,
}

impl Find {
    /// `smallest` or `largest`.
    pub fn word(self) -> &'static str {
        match self {
            Find::Smallest => "smallest",
            Find::Largest => "largest",
        }
    }
}

/// What the parameter's values are.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Whole numbers (workers, clients).
    #[default]
    Integer,
    /// Real numbers (a rate, a multiplier).
    Real,
    /// Durations, held in seconds (a service time, a backoff base).
    Duration,
}

/// The varied parameter and its range.
#[derive(Clone, Debug, PartialEq)]
pub struct Range {
    /// The `--set` path.
    pub path: String,
    /// What its values are.
    pub kind: Kind,
    /// Lowest value (seconds for durations).
    pub lo: f64,
    /// Highest value.
    pub hi: f64,
    /// Grid step the search stops at.
    pub resolution: f64,
}

/// One end of a range, or a resolution: its kind and value (seconds for a duration).
fn parse_number(text: &str) -> Option<(Kind, f64)> {
    let t = text.trim();
    if let Ok(i) = t.parse::<i64>() {
        return Some((Kind::Integer, i as f64));
    }
    if let Ok(x) = t.parse::<f64>() {
        return x.is_finite().then_some((Kind::Real, x));
    }
    parse_duration(t).ok().map(|ns| (Kind::Duration, ns as f64 / NS_PER_S as f64))
}

/// Decimal places that write `x` exactly enough (at most 9).
fn decimals(x: f64) -> usize {
    (0..9)
        .find(|&d| {
            let scaled = x * 10f64.powi(d as i32);
            (scaled - scaled.round()).abs() < 1e-6 * scaled.abs().max(1.0)
        })
        .unwrap_or(9)
}

/// How one command-line range is named in messages, and its default grid.
#[derive(Clone, Copy, Debug)]
pub struct RangeFlag {
    /// The range's flag (`--vary`, `--across`).
    pub flag: &'static str,
    /// The flag that sets its grid step (`--resolution`, `--across-step`).
    pub step_flag: &'static str,
    /// The default grid of a range that is not whole numbers has at least this many steps (the
    /// step is the power of ten at or below the range ÷ `steps`).
    pub steps: f64,
}

/// `plan`'s searched setting: `--vary`, `--resolution`, ~100 steps by default.
pub const VARY: RangeFlag = RangeFlag { flag: "--vary", step_flag: "--resolution", steps: 100.0 };
/// `plan`'s swept second setting: `--across`, `--across-step`, ~10 values by default.
pub const ACROSS: RangeFlag = RangeFlag { flag: "--across", step_flag: "--across-step", steps: 10.0 };

impl Range {
    /// Parses `PATH=LO..HI` and the optional `--resolution`: both ends whole numbers, numbers
    /// (one with a decimal point makes the range real) or durations, LO ≤ HI; the resolution in
    /// the range's unit, positive (default: 1 for whole numbers, else the power of ten at or
    /// below 1% of the range).
    pub fn parse(text: &str, resolution: Option<&str>) -> Result<Range, String> {
        Self::parse_flag(VARY, text, resolution)
    }

    /// [`Range::parse`] for the range given by `names.flag`, its messages naming that flag and
    /// its default step the power of ten at or below the range ÷ `names.steps`.
    pub fn parse_flag(names: RangeFlag, text: &str, resolution: Option<&str>) -> Result<Range, String> {
        let flag = names.flag;
        let fix = format!(
            "write {flag} PATH=LO..HI, e.g. {flag} hop.api.workers=1..256, \
             {flag} hop.api.service.mean=5ms..50ms or {flag} tenant.main.arrival.rate_per_s=100.0..2000.0"
        );
        let (path, range) = text.split_once('=').ok_or_else(|| format!("{flag} `{text}`: {fix}"))?;
        let (lo_text, hi_text) =
            range.split_once("..").ok_or_else(|| format!("{flag} `{text}`: no `..` in the range; {fix}"))?;
        let end = |s: &str| {
            parse_number(s)
                .ok_or_else(|| format!("{flag} `{text}`: `{}` is not a number or a duration; {fix}", s.trim()))
        };
        let ((lk, lo), (hk, hi)) = (end(lo_text)?, end(hi_text)?);
        let kind = match (lk, hk) {
            (Kind::Integer, Kind::Integer) => Kind::Integer,
            (Kind::Duration, Kind::Duration) => Kind::Duration,
            (Kind::Integer | Kind::Real, Kind::Integer | Kind::Real) => Kind::Real,
            _ => {
                return Err(format!(
                    "{flag} `{text}`: unit mismatch: `{}` and `{}` must both be durations (e.g. 5ms..50ms) or both numbers (e.g. 1..256)",
                    lo_text.trim(),
                    hi_text.trim()
                ))
            }
        };
        if path.trim().is_empty() {
            return Err(format!("{flag} `{text}`: the path is empty; {fix}"));
        }
        if lo > hi {
            return Err(format!(
                "{flag} `{text}`: the range is empty ({} > {}); write the lower value first",
                lo_text.trim(),
                hi_text.trim()
            ));
        }
        if lo.abs().max(hi.abs()) > VALUE_MAX {
            return Err(format!(
                "{flag} `{text}`: an end beyond ±{VALUE_MAX:e}, where values lose whole-number precision and the grid cannot be computed; give a range within ±{VALUE_MAX:e}"
            ));
        }
        let span = hi - lo;
        let resolution = match resolution {
            None if kind == Kind::Integer => 1.0,
            None if span == 0.0 => 1.0,
            None => {
                let step = 10f64.powf((span / names.steps).log10().floor());
                if kind == Kind::Duration {
                    step.max(1.0 / NS_PER_S as f64)
                } else {
                    step
                }
            }
            Some(r) => Self::parse_resolution(names, r, kind, span)?,
        };
        let range = Range { path: path.trim().to_string(), kind, lo, hi, resolution };
        range.check_grid(names, text)?;
        Ok(range)
    }

    /// Checks a range read back from a file as [`Range::parse_flag`] checks one given.
    pub fn check(&self, names: RangeFlag) -> Result<(), String> {
        let text = format!("{}={}..{}", self.path, self.lo, self.hi);
        if !(self.lo.is_finite() && self.hi.is_finite() && self.lo <= self.hi) {
            return Err(format!("{} `{text}`: not a range LO ≤ HI", names.flag));
        }
        if self.lo.abs().max(self.hi.abs()) > VALUE_MAX {
            return Err(format!("{} `{text}`: an end beyond ±{VALUE_MAX:e}", names.flag));
        }
        if self.resolution.is_nan() || self.resolution <= 0.0 {
            return Err(format!("{} {}: must be above 0", names.step_flag, self.resolution));
        }
        self.check_grid(names, &text)
    }

    /// Refuses a grid the search cannot walk: more than [`STEPS_MAX`] steps, or a step below the
    /// precision its values are written with (12 significant digits: neighbours would be equal).
    fn check_grid(&self, names: RangeFlag, text: &str) -> Result<(), String> {
        let (flag, step_flag) = (names.flag, names.step_flag);
        let span = self.hi - self.lo;
        let steps = span / self.resolution;
        if !steps.is_finite() || steps > STEPS_MAX {
            return Err(format!(
                "{flag} `{text}` at {step_flag} {:e}: {steps:.3e} grid steps, more than the {STEPS_MAX:e} the search can count; give a coarser {step_flag} (at least {})",
                self.resolution,
                10f64.powf((span / STEPS_MAX).log10().ceil())
            ));
        }
        let top = self.lo.abs().max(self.hi.abs());
        if self.kind == Kind::Real && span > 0.0 && self.resolution < top * 1e-11 {
            return Err(format!(
                "{flag} `{text}` at {step_flag} {:e}: a step below the 12 significant digits values are written with (neighbouring values would be equal); give {step_flag} at least {:e}",
                self.resolution,
                top * 1e-11
            ));
        }
        Ok(())
    }

    /// Every value of the grid, `lo` to `hi`.
    pub fn grid(&self) -> Vec<f64> {
        (0..=self.steps()).map(|k| self.value(k)).collect()
    }

    fn parse_resolution(names: RangeFlag, text: &str, kind: Kind, span: f64) -> Result<f64, String> {
        let (flag, step_flag) = (names.flag, names.step_flag);
        let example = match kind {
            Kind::Integer => "a whole number such as 1 or 10",
            Kind::Real => "a number such as 0.5",
            Kind::Duration => "a duration such as 1ms",
        };
        let (k, r) = parse_number(text)
            .ok_or_else(|| format!("{step_flag} `{text}`: not a number or a duration; write {example}"))?;
        let fits = match kind {
            Kind::Integer => k == Kind::Integer,
            Kind::Real => k != Kind::Duration,
            Kind::Duration => k == Kind::Duration,
        };
        if !fits {
            return Err(format!(
                "{step_flag} `{text}`: unit mismatch with the {flag} range, which is in {}; write {example}",
                match kind {
                    Kind::Integer => "whole numbers",
                    Kind::Real => "numbers",
                    Kind::Duration => "durations",
                }
            ));
        }
        if r <= 0.0 {
            return Err(format!("{step_flag} `{text}`: must be above 0; write {example}"));
        }
        if span > 0.0 && r > span {
            return Err(format!("{step_flag} `{text}` is wider than the {flag} range; give at most the range's width"));
        }
        Ok(r)
    }

    /// Grid steps from `lo` to `hi`.
    pub fn steps(&self) -> u64 {
        ((self.hi - self.lo) / self.resolution - 1e-9).ceil().max(0.0) as u64
    }

    /// The value at grid step `k` (`hi` at the last).
    pub fn value(&self, k: u64) -> f64 {
        if k >= self.steps() {
            self.hi
        } else {
            self.snap(self.lo + k as f64 * self.resolution)
        }
    }

    fn snap(&self, x: f64) -> f64 {
        match self.kind {
            Kind::Integer => x.round(),
            Kind::Duration => (x * NS_PER_S as f64).round() / NS_PER_S as f64,
            Kind::Real => format!("{x:.11e}").parse().expect("a formatted float parses"),
        }
    }

    /// The `--set` value of `x`.
    pub fn toml_value(&self, x: f64) -> toml::Value {
        match self.kind {
            Kind::Integer => toml::Value::Integer(x as i64),
            Kind::Real => toml::Value::Float(x),
            Kind::Duration => toml::Value::String(duration_words((x * NS_PER_S as f64).round() as u64)),
        }
    }

    /// `x` in the parameter's unit at the resolution's precision: `14`, `812.5`, `5.3 ms`.
    pub fn show(&self, x: f64) -> String {
        match self.kind {
            Kind::Integer => format!("{}", x as i64),
            Kind::Real => {
                let d = decimals(self.resolution).max(decimals(self.lo));
                format!("{x:.d$}")
            }
            Kind::Duration => {
                let top = self.hi.abs().max(self.lo.abs());
                let (div, suffix) = if top < 1e-3 {
                    (1e-6, "µs")
                } else if top < 1.0 {
                    (1e-3, "ms")
                } else if top < 120.0 {
                    (1.0, "s")
                } else {
                    (60.0, "min")
                };
                let d = decimals(self.resolution / div).max(decimals(self.lo / div));
                format!("{:.d$} {suffix}", x / div)
            }
        }
    }
}

/// Serde for values that are whole numbers in a whole-number range: written as `14`, not `14.0`
/// (plan.json stays as it was for integer parameters; any number reads back).
pub mod whole {
    use serde::{Serialize, Serializer};

    fn as_int(x: f64) -> Option<i64> {
        (x.fract() == 0.0 && x.abs() < 9e15).then_some(x as i64)
    }

    /// Serialises `x`, integral values as integers.
    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        match as_int(*x) {
            Some(i) => i.serialize(s),
            None => x.serialize(s),
        }
    }

    /// Reads any JSON number.
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        <f64 as serde::Deserialize>::deserialize(d)
    }

    /// [`serialize`] for an optional value.
    pub mod option {
        use serde::{Serialize, Serializer};

        /// Serialises `x`, integral values as integers, None as null.
        pub fn serialize<S: Serializer>(x: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
            match x {
                Some(v) => super::serialize(v, s),
                None => None::<i64>.serialize(s),
            }
        }
    }

    /// The CSV/text form: integral values without `.0`.
    pub fn text(x: f64) -> String {
        as_int(x).map_or_else(|| x.to_string(), |i| i.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_in_their_unit_and_refuse_mismatches() {
        let r = Range::parse("hop.api.service.mean=5ms..50ms", None).unwrap();
        assert_eq!((r.kind, r.lo, r.hi), (Kind::Duration, 0.005, 0.05));
        // 1% of 45 ms is 0.45 ms: the power of ten at or below it is 0.1 ms.
        assert!((r.resolution - 1e-4).abs() < 1e-15, "{}", r.resolution);
        assert_eq!(r.steps(), 450);
        assert_eq!(r.value(3), 0.0053);
        assert_eq!(r.show(r.value(3)), "5.3 ms");
        assert_eq!(r.toml_value(0.0053), toml::Value::String("5ms 300us".into()));
        let rate = Range::parse("tenant.main.arrival.rate_per_s=100..2000.0", Some("5")).unwrap();
        assert_eq!((rate.kind, rate.resolution, rate.steps()), (Kind::Real, 5.0, 380));
        assert_eq!(rate.show(815.0), "815");
        let ints = Range::parse("hop.api.workers=1..256", None).unwrap();
        assert_eq!((ints.kind, ints.resolution, ints.steps(), ints.value(13)), (Kind::Integer, 1.0, 255, 14.0));
        // Resolution that does not divide the range: the last step is shorter.
        let r = Range::parse("x=0..10", Some("4")).unwrap();
        assert_eq!((0..=r.steps()).map(|k| r.value(k)).collect::<Vec<_>>(), [0.0, 4.0, 8.0, 10.0]);
        for (vary, resolution, says) in [
            ("hop.api.workers=8..2", None, "the range is empty"),
            ("hop.api.service.mean=50ms..5ms", None, "the range is empty"),
            ("hop.api.service.mean=5ms..50", None, "unit mismatch"),
            ("hop.api.workers=1..lots", None, "`lots` is not a number or a duration"),
            ("hop.api.workers", None, "PATH=LO..HI"),
            ("hop.api.service.mean=5ms..50ms", Some("0.1"), "unit mismatch"),
            ("hop.api.workers=1..256", Some("0.5"), "unit mismatch"),
            ("hop.api.workers=1..256", Some("0"), "above 0"),
            ("hop.api.workers=1..8", Some("9"), "wider than the --vary range"),
            // Bounds: ends, grid steps and a step finer than the written precision.
            ("policy.client.multiplier=-1e308..1e308", None, "an end beyond ±1e15"),
            ("policy.client.multiplier=1.0..1e300", Some("1e-300"), "an end beyond ±1e15"),
            ("policy.client.multiplier=1.0..1e15", Some("1e-300"), "grid steps, more than"),
            ("policy.client.multiplier=1.0..2.0", Some("1e-14"), "below the 12 significant digits"),
        ] {
            let err = Range::parse(vary, resolution).unwrap_err();
            assert!(err.contains(says), "{vary} {resolution:?}: {err}");
        }
    }
}
