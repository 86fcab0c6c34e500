//! Validation of `[[fault]]`: the hop and replica it hits, its window, its kind and values, and
//! no two windows of one kind overlapping on one target.

use super::checks::{count, probability, read_kind, show, unknown, Words, V};
use super::error::Invalid;
use super::raw::RawFault;
use crate::model::{Fault, FaultKind, HopSpec};

pub(super) fn faults(raw: &[RawFault], hops: &[HopSpec]) -> V<Vec<Fault>> {
    let hop_names: Vec<&str> = hops.iter().map(|h| h.name.as_str()).collect();
    let mut out: Vec<Fault> = Vec::new();
    for (i, f) in raw.iter().enumerate() {
        let at = |field: &str| format!("fault.{i}.{field}");
        let hop =
            hop_names.iter().position(|n| *n == f.hop).ok_or_else(|| unknown(&at("hop"), "hop", &f.hop, &hop_names))?;
        if f.to.0 <= f.from.0 {
            return Err(Invalid::at(
                &at("to"),
                format!("is {} but from is {}; a fault window needs from < to", show(f.to.0), show(f.from.0)),
            ));
        }
        let workers = |w: i64| count(w, &at("workers"), 0, 10_000_000);
        let words = Words {
            table: &format!("fault.{i}"),
            field: &at,
            family: "fault kind",
            siblings: &["hop", "from", "to"],
            not_used: &|kind, _, _| format!("is not used by fault kind `{kind}`; remove it"),
            missing: &|kind, field| {
                let example = match field {
                    "retry_after" => ", e.g. \"1s\"",
                    "p" => ", e.g. 0.1",
                    "factor" => ", e.g. 10.0",
                    "workers" => ", e.g. 2",
                    _ => "",
                };
                format!("kind `{kind}` needs {field}{example}")
            },
        };
        let kind = read_kind(&f.kind, "kind", &words);
        let kind = kind.map_err(|e| match f.kind.get("workers").and_then(toml::Value::as_integer) {
            // serde refuses a negative count as "expected u32": name the allowed range instead.
            Some(w) if e.path.last().is_some_and(|p| p == "workers") => workers(w).err().unwrap_or(e),
            _ => e,
        })?;
        match kind {
            FaultKind::Outage { .. } | FaultKind::Hang | FaultKind::Throttle { .. } => {}
            FaultKind::ErrorRate { p } | FaultKind::LostReply { p } => {
                probability(Some(p), &at("p"))?;
            }
            FaultKind::Slow { factor } => {
                if !(factor.is_finite() && factor > 0.0 && factor <= 1e6) {
                    return Err(Invalid::at(
                        &at("factor"),
                        format!("is {factor}; it must be a finite number in (0, 1e6]"),
                    ));
                }
            }
            FaultKind::Capacity { workers: w } => {
                workers(i64::from(w))?;
            }
            FaultKind::CacheFlush if hops[hop].cache().is_none() => {
                let why = format!("`{}` is not a cache; a `cache_flush` fault targets a `kind = \"cache\"` hop", f.hop);
                return Err(Invalid::at(&at("hop"), why));
            }
            FaultKind::CacheFlush => {}
        }
        let replica = super::replicas::fault_replica(f.replica, i, &f.hop, hops[hop].replicas.count)?;
        let fault = Fault { hop, replica, kind, from: f.from.0, to: f.to.0 };
        if let Some(other) = out.iter().position(|o| {
            o.hop == hop
                && o.replica == replica
                && o.kind.name() == fault.kind.name()
                && o.from < fault.to
                && fault.from < o.to
        }) {
            return Err(Invalid::at(
                &at("from"),
                format!(
                    "this `{}` window [{}, {}) on hop `{}` overlaps fault {other}'s [{}, {}); merge them or make them disjoint",
                    fault.kind.name(),
                    show(f.from.0),
                    show(f.to.0),
                    f.hop,
                    show(out[other].from),
                    show(out[other].to)
                ),
            ));
        }
        out.push(fault);
    }
    out.sort_by_key(|f| (f.from, f.to, f.hop));
    Ok(out)
}
