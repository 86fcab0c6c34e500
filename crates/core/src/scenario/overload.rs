//! Validation of a hop's overload control: `discipline`, `codel_target`, `codel_interval`,
//! `shed_queue_length`, `shed_retries_queue_length`, `retry_priority` and `admission`.

use super::checks::{count, finite_at_least, positive, read_kind, show, unknown, Words, V};
use super::error::Invalid;
use super::raw::{Dur, RawAdmission, RawHop};
use crate::engine::NS_PER_MS;
use crate::model::{Admission, Discipline, OverloadSpec, RejectReply};
use serde::Deserialize;

/// A hop's `discipline` as written (its parameters are the hop's `codel_target` and
/// `codel_interval`); the names listed in messages come from this type.
#[derive(Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum DisciplineName {
    Fifo,
    Lifo,
    AdaptiveLifo,
    Codel,
    DeadlineDrop,
}

/// An admission table as written: its kind and that kind's fields (defaults and ranges are
/// applied in [`admission`]). The names and fields listed in messages come from this type.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[schemars(tag = "kind")]
pub(super) enum AdmissionKind {
    None,
    Concurrency {
        limit: i64,
    },
    TokenBucket {
        rate_per_s: f64,
        burst: Option<f64>,
    },
    Aimd {
        initial: Option<f64>,
        min: Option<f64>,
        max: Option<f64>,
        latency: Dur,
        backoff: Option<f64>,
    },
    Gradient {
        initial: Option<f64>,
        min: Option<f64>,
        max: Option<f64>,
        tolerance: Option<f64>,
        smoothing: Option<f64>,
        queue_size: Option<f64>,
        long_window: Option<i64>,
    },
}

/// The limits an AIMD or gradient limit moves within: `min`, `max` and the `initial` limit.
fn limit_range(
    initial: Option<f64>,
    min: Option<f64>,
    max: Option<f64>,
    at: &dyn Fn(&str) -> String,
) -> V<(f64, f64, f64)> {
    let min = finite_at_least(min.unwrap_or(1.0), 1.0, &at("min"), "the lowest limit must be finite and ≥ 1")?;
    let max = finite_at_least(max.unwrap_or(1000.0), min, &at("max"), &format!("it must be finite and ≥ min ({min})"))?;
    let initial = initial.unwrap_or(min.max(20.0).min(max));
    if !(min..=max).contains(&initial) {
        return Err(Invalid::at(
            &at("initial"),
            format!("is {initial}; it must be within [min, max] = [{min}, {max}]"),
        ));
    }
    Ok((initial, min, max))
}

pub(super) fn overload(h: &RawHop, at: &dyn Fn(&str) -> String) -> V<OverloadSpec> {
    let target = h.codel_target.map(|d| positive(d, &at("codel_target"))).transpose()?;
    let interval = h.codel_interval.map(|d| positive(d, &at("codel_interval"))).transpose()?;
    let name = h.discipline.as_deref().unwrap_or("fifo");
    let unused = |field: &str| Invalid::at(&at(field), format!("is not used by discipline `{name}`; remove it"));
    let kind: DisciplineName =
        super::tagged::read_name(name).map_err(|names| unknown(&at("discipline"), "discipline", name, names))?;
    let discipline = match kind {
        DisciplineName::Codel => {
            let (target, interval) = (target.unwrap_or(5 * NS_PER_MS), interval.unwrap_or(100 * NS_PER_MS));
            if target >= interval {
                let why = format!(
                    "is {} but codel_interval is {}; the target must be shorter than the interval (Fail at Scale: 5ms and 100ms)",
                    show(target),
                    show(interval)
                );
                return Err(Invalid::at(&at("codel_target"), why));
            }
            Discipline::Codel { target, interval }
        }
        DisciplineName::AdaptiveLifo if target.is_some() => return Err(unused("codel_target")),
        DisciplineName::AdaptiveLifo => Discipline::AdaptiveLifo { interval: interval.unwrap_or(100 * NS_PER_MS) },
        DisciplineName::Fifo | DisciplineName::Lifo | DisciplineName::DeadlineDrop if target.is_some() => {
            return Err(unused("codel_target"))
        }
        DisciplineName::Fifo | DisciplineName::Lifo | DisciplineName::DeadlineDrop if interval.is_some() => {
            return Err(unused("codel_interval"))
        }
        DisciplineName::Fifo => Discipline::Fifo,
        DisciplineName::Lifo => Discipline::Lifo,
        DisciplineName::DeadlineDrop => Discipline::DeadlineDrop,
    };
    let threshold = |v: Option<i64>, field: &str| -> V<u32> {
        v.map_or(Ok(u32::MAX), |n| count(n, &at(field), 0, i64::from(u32::MAX)).map(|n| n as u32))
    };
    let (admission, reject) = match &h.admission {
        None => (Admission::None, RejectReply::Unavailable),
        Some(a) => admission(a, &|f: &str| at(&format!("admission.{f}")))?,
    };
    Ok(OverloadSpec {
        discipline,
        shed_queue_length: threshold(h.shed_queue_length, "shed_queue_length")?,
        shed_retries_queue_length: threshold(h.shed_retries_queue_length, "shed_retries_queue_length")?,
        retry_priority: h.retry_priority.unwrap_or(false),
        admission,
        reject,
    })
}

fn admission(a: &RawAdmission, at: &dyn Fn(&str) -> String) -> V<(Admission, RejectReply)> {
    let table = at("");
    let words = Words {
        table: table.trim_end_matches('.'),
        field: at,
        family: "admission kind",
        siblings: &["reject", "retry_after"],
        not_used: &|kind, _, _| format!("is not used by admission kind `{kind}`; remove it"),
        missing: &|kind, field| {
            let example = match field {
                "limit" => "100",
                "rate_per_s" => "500.0",
                _ => "\"200ms\"",
            };
            format!("kind `{kind}` needs {field}, e.g. {field} = {example}")
        },
    };
    let admission = match read_kind::<AdmissionKind>(&a.kind, "kind", &words)? {
        AdmissionKind::None => Admission::None,
        AdmissionKind::Concurrency { limit } => {
            Admission::Concurrency { limit: count(limit, &at("limit"), 1, i64::from(u32::MAX))? as u32 }
        }
        AdmissionKind::TokenBucket { rate_per_s, burst } => {
            let rate_per_s =
                finite_at_least(rate_per_s, f64::MIN_POSITIVE, &at("rate_per_s"), "a rate must be finite and > 0")?;
            let burst = finite_at_least(burst.unwrap_or(1.0), 1.0, &at("burst"), "a burst must be finite and ≥ 1")?;
            Admission::TokenBucket { rate_per_s, burst }
        }
        AdmissionKind::Aimd { initial, min, max, latency, backoff } => {
            let (initial, min, max) = limit_range(initial, min, max, at)?;
            let latency = positive(latency, &at("latency"))?;
            let backoff = backoff.unwrap_or(0.9);
            if !(backoff > 0.0 && backoff < 1.0) {
                return Err(Invalid::at(&at("backoff"), format!("is {backoff}; it must be in (0, 1), e.g. 0.9")));
            }
            Admission::Aimd { initial, min, max, latency, backoff }
        }
        AdmissionKind::Gradient { initial, min, max, tolerance, smoothing, queue_size, long_window } => {
            let (initial, min, max) = limit_range(initial, min, max, at)?;
            let tolerance = finite_at_least(
                tolerance.unwrap_or(1.5),
                1.0,
                &at("tolerance"),
                "it must be finite and ≥ 1 (Netflix: 1.5)",
            )?;
            let smoothing = smoothing.unwrap_or(0.2);
            if !(smoothing > 0.0 && smoothing <= 1.0) {
                let why = format!("is {smoothing}; it must be in (0, 1] (Netflix: 0.2)");
                return Err(Invalid::at(&at("smoothing"), why));
            }
            let queue_size = finite_at_least(
                queue_size.unwrap_or(4.0),
                0.0,
                &at("queue_size"),
                "it must be finite and ≥ 0 (Netflix: 4)",
            )?;
            let long_window = count(long_window.unwrap_or(600), &at("long_window"), 1, 1_000_000)? as u32;
            Admission::Gradient { initial, min, max, tolerance, smoothing, queue_size, long_window }
        }
    };
    Ok((admission, reject(a, at)?))
}

fn reject(a: &RawAdmission, at: &dyn Fn(&str) -> String) -> V<RejectReply> {
    Ok(match (a.reject.as_deref(), a.retry_after) {
        (None | Some("503"), None) => RejectReply::Unavailable,
        (None | Some("503"), Some(_)) => {
            return Err(Invalid::at(
                &at("retry_after"),
                "is only sent with reject = \"429\"; remove it or set reject = \"429\"",
            ))
        }
        (Some("429"), Some(after)) => RejectReply::Throttled(after.0),
        (Some("429"), None) => {
            return Err(Invalid::at(&at("reject"), "is \"429\" without retry_after; add e.g. retry_after = \"1s\""))
        }
        (Some(other), _) => return Err(unknown(&at("reject"), "reject status", other, &["503", "429"])),
    })
}
