//! Field checks shared by validation, policy parsing and the invariant warnings: each returns the
//! value or an [`Invalid`] naming the field, the value and the fix. Everything in `scenario`
//! that checks a field uses these (and nothing here imports the files that use it).

use super::error::{closest, Invalid};
use super::raw::Dur;
use crate::engine::Nanos;

/// A checked value or the error naming the field.
pub(super) type V<T> = Result<T, Invalid>;

/// Human form of a duration for messages.
pub(super) use crate::engine::time::duration_words as show;

pub(super) fn positive(d: Dur, path: &str) -> V<Nanos> {
    if d.0 == 0 {
        return Err(Invalid::at(path, "is 0; it must be a positive duration such as \"100ms\""));
    }
    Ok(d.0)
}

pub(super) fn count(value: i64, path: &str, min: i64, max: i64) -> V<i64> {
    if value < min || value > max {
        return Err(Invalid::at(path, format!("is {value}; it must be between {min} and {max}")));
    }
    Ok(value)
}

pub(super) fn probability(value: Option<f64>, path: &str) -> V<f64> {
    let p = value.unwrap_or(0.0);
    if !(0.0..=1.0).contains(&p) {
        return Err(Invalid::at(path, format!("is {p}; a probability must be within [0, 1]")));
    }
    Ok(p)
}

pub(super) fn finite_at_least(value: f64, min: f64, path: &str, what: &str) -> V<f64> {
    if !value.is_finite() || value < min {
        return Err(Invalid::at(path, format!("is {value}; {what}")));
    }
    Ok(value)
}

pub(super) fn unknown(path: &str, kind: &str, value: &str, allowed: &[&str]) -> Invalid {
    let hint = closest(value, allowed.iter().copied()).map(|c| format!(" (did you mean `{c}`?)")).unwrap_or_default();
    Invalid::at(path, format!("unknown {kind} `{value}`; allowed: {}{hint}", allowed.join(", ")))
}
