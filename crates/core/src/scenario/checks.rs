//! Field checks shared by validation, policy parsing and the invariant warnings: each returns the
//! value or an [`Invalid`] naming the field, the value and the fix. Everything in `scenario`
//! that checks a field uses these (and nothing here imports the files that use it).

use super::error::{closest, shorten, some_names, with_suggestion, Invalid};
use super::raw::Dur;
use super::tagged;
use crate::engine::Nanos;
use serde::de::DeserializeOwned;
use toml::{Table, Value};

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

/// Shortest period of a timer that repeats through a run (a health check, an autoscaler's
/// evaluation): below it the timer alone makes billions of events (a 1 ns period hung a run).
pub(super) const PERIOD_MIN_NS: Nanos = 1_000_000;

/// A repeating timer's period: at least [`PERIOD_MIN_NS`].
pub(super) fn period(d: Dur, path: &str) -> V<Nanos> {
    if d.0 < PERIOD_MIN_NS {
        return Err(Invalid::at(
            path,
            format!(
                "is {}; a period this short repeats billions of times per run: give at least 1ms",
                crate::engine::time::duration_words(d.0)
            ),
        ));
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
    Invalid::at(path, format!("unknown {kind} `{}`; allowed: {}{hint}", shorten(value, 60), some_names(allowed, 12)))
}

/// How a family words its failures: where the table and its fields are, and what to call them.
pub(super) struct Words<'a> {
    /// Path of the table (`policy.client.budget`), where a missing tag or field is reported.
    pub table: &'a str,
    /// Path of field `f` of the table.
    pub field: &'a dyn Fn(&str) -> String,
    /// What a kind is called in messages ("budget kind").
    pub family: &'a str,
    /// Keys the table holds beside the kind's (`scope`), listed when a key is unknown.
    pub siblings: &'a [&'a str],
    /// A field another kind takes, written for `kind`: `not_used(kind, field, kind's fields)`.
    pub not_used: &'a dyn Fn(&str, &str, &[&str]) -> String,
    /// A required field absent: `missing(kind, field)`.
    pub missing: &'a dyn Fn(&str, &str) -> String,
}

/// Reads kind-tagged `table` into `T` (its kind named by key `tag`), wording every failure for
/// the user: a missing or unknown kind lists the kinds, a key no kind takes is an unknown field
/// (with the keys allowed and a did-you-mean), the rest as [`Words`] says.
pub(super) fn read_kind<T: DeserializeOwned>(table: &Table, tag: &str, words: &Words) -> V<T> {
    let kind = table.get(tag).and_then(Value::as_str).unwrap_or_default();
    tagged::read(table, tag).map_err(|e| match e {
        tagged::TagError::NoTag => {
            Invalid::at(words.table, format!("has no `{tag}`; add one of: {}", tagged::names::<T>().join(", ")))
        }
        tagged::TagError::Unknown { given, names } => unknown(&(words.field)(tag), words.family, &given, names),
        tagged::TagError::NotUsed { field, takes } => {
            let path = (words.field)(&field);
            if tagged::names::<T>().iter().any(|k| tagged::fields::<T>(k).contains(&field.as_str())) {
                Invalid::at(&path, (words.not_used)(kind, &field, takes))
            } else {
                let mut allowed = vec![tag];
                allowed.extend_from_slice(words.siblings);
                allowed.extend_from_slice(takes);
                unknown(&path, "field", &field, &allowed)
            }
        }
        tagged::TagError::Missing { field } => Invalid::at(words.table, (words.missing)(kind, field)),
        tagged::TagError::Value { field, message } => Invalid::at(&(words.field)(&field), with_suggestion(&message)),
    })
}
