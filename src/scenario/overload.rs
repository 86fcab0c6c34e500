//! Validation of a hop's overload control: `discipline`, `codel_target`, `codel_interval`,
//! `shed_queue_length`, `shed_retries_queue_length`, `retry_priority` and `admission`.

use super::checks::{count, finite_at_least, positive, show, unknown, V};
use super::error::Invalid;
use super::raw::{RawAdmission, RawHop};
use crate::engine::NS_PER_MS;
use crate::model::{Admission, Discipline, OverloadSpec, RejectReply};

const DISCIPLINES: [&str; 5] = ["fifo", "lifo", "adaptive_lifo", "codel", "deadline_drop"];
const ADMISSIONS: [&str; 5] = ["none", "concurrency", "token_bucket", "aimd", "gradient"];

pub(super) fn overload(h: &RawHop, at: &dyn Fn(&str) -> String) -> V<OverloadSpec> {
    let target = h.codel_target.map(|d| positive(d, &at("codel_target"))).transpose()?;
    let interval = h.codel_interval.map(|d| positive(d, &at("codel_interval"))).transpose()?;
    let name = h.discipline.as_deref().unwrap_or("fifo");
    let unused = |field: &str| Invalid::at(&at(field), format!("is not used by discipline `{name}`; remove it"));
    let discipline = match name {
        "codel" => {
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
        "adaptive_lifo" if target.is_some() => return Err(unused("codel_target")),
        "adaptive_lifo" => Discipline::AdaptiveLifo { interval: interval.unwrap_or(100 * NS_PER_MS) },
        "fifo" | "lifo" | "deadline_drop" if target.is_some() => return Err(unused("codel_target")),
        "fifo" | "lifo" | "deadline_drop" if interval.is_some() => return Err(unused("codel_interval")),
        "fifo" => Discipline::Fifo,
        "lifo" => Discipline::Lifo,
        "deadline_drop" => Discipline::DeadlineDrop,
        other => return Err(unknown(&at("discipline"), "discipline", other, &DISCIPLINES)),
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
    let kind = a.kind.as_str();
    let present = [
        ("limit", a.limit.is_some()),
        ("rate_per_s", a.rate_per_s.is_some()),
        ("burst", a.burst.is_some()),
        ("initial", a.initial.is_some()),
        ("min", a.min.is_some()),
        ("max", a.max.is_some()),
        ("latency", a.latency.is_some()),
        ("backoff", a.backoff.is_some()),
        ("tolerance", a.tolerance.is_some()),
        ("smoothing", a.smoothing.is_some()),
        ("queue_size", a.queue_size.is_some()),
        ("long_window", a.long_window.is_some()),
    ];
    let used: &[&str] = match kind {
        "none" => &[],
        "concurrency" => &["limit"],
        "token_bucket" => &["rate_per_s", "burst"],
        "aimd" => &["initial", "min", "max", "latency", "backoff"],
        "gradient" => &["initial", "min", "max", "tolerance", "smoothing", "queue_size", "long_window"],
        other => return Err(unknown(&at("kind"), "admission kind", other, &ADMISSIONS)),
    };
    if let Some((field, _)) = present.iter().find(|(f, set)| *set && !used.contains(f)) {
        return Err(Invalid::at(&at(field), format!("is not used by admission kind `{kind}`; remove it")));
    }
    let need = |field: &str, example: &str| {
        let table = at("");
        Invalid::at(table.trim_end_matches('.'), format!("kind `{kind}` needs {field}, e.g. {field} = {example}"))
    };
    let admission = match kind {
        "none" => Admission::None,
        "concurrency" => {
            let limit = a.limit.ok_or_else(|| need("limit", "100"))?;
            Admission::Concurrency { limit: count(limit, &at("limit"), 1, i64::from(u32::MAX))? as u32 }
        }
        "token_bucket" => {
            let rate = a.rate_per_s.ok_or_else(|| need("rate_per_s", "500.0"))?;
            let rate_per_s =
                finite_at_least(rate, f64::MIN_POSITIVE, &at("rate_per_s"), "a rate must be finite and > 0")?;
            let burst = finite_at_least(a.burst.unwrap_or(1.0), 1.0, &at("burst"), "a burst must be finite and ≥ 1")?;
            Admission::TokenBucket { rate_per_s, burst }
        }
        _ => {
            let min =
                finite_at_least(a.min.unwrap_or(1.0), 1.0, &at("min"), "the lowest limit must be finite and ≥ 1")?;
            let max = a.max.unwrap_or(1000.0);
            let max = finite_at_least(max, min, &at("max"), &format!("it must be finite and ≥ min ({min})"))?;
            let initial = a.initial.unwrap_or(min.max(20.0).min(max));
            if !(min..=max).contains(&initial) {
                return Err(Invalid::at(
                    &at("initial"),
                    format!("is {initial}; it must be within [min, max] = [{min}, {max}]"),
                ));
            }
            if kind == "gradient" {
                let tolerance = a.tolerance.unwrap_or(1.5);
                let tolerance =
                    finite_at_least(tolerance, 1.0, &at("tolerance"), "it must be finite and ≥ 1 (Netflix: 1.5)")?;
                let smoothing = a.smoothing.unwrap_or(0.2);
                if !(smoothing > 0.0 && smoothing <= 1.0) {
                    let why = format!("is {smoothing}; it must be in (0, 1] (Netflix: 0.2)");
                    return Err(Invalid::at(&at("smoothing"), why));
                }
                let queue_size = a.queue_size.unwrap_or(4.0);
                let queue_size =
                    finite_at_least(queue_size, 0.0, &at("queue_size"), "it must be finite and ≥ 0 (Netflix: 4)")?;
                let long_window = count(a.long_window.unwrap_or(600), &at("long_window"), 1, 1_000_000)? as u32;
                let admission =
                    Admission::Gradient { initial, min, max, tolerance, smoothing, queue_size, long_window };
                return Ok((admission, reject(a, at)?));
            }
            let latency = positive(a.latency.ok_or_else(|| need("latency", "\"200ms\""))?, &at("latency"))?;
            let backoff = a.backoff.unwrap_or(0.9);
            if !(backoff > 0.0 && backoff < 1.0) {
                return Err(Invalid::at(&at("backoff"), format!("is {backoff}; it must be in (0, 1), e.g. 0.9")));
            }
            Admission::Aimd { initial, min, max, latency, backoff }
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
