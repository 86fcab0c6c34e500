//! Validation of a cache hop: `kind = "cache"` with its `cache = { … }` table (docs/MODEL.md,
//! "Caches"). A cache has no workers, queue or service time of its own; everything it ignores is
//! refused with the field named.

use super::checks::{count, finite_at_least, positive, unknown, V};
use super::error::Invalid;
use super::raw::{RawDist, RawHop};
use crate::engine::Nanos;
use crate::model::cache::{CacheSpec, Eviction, KeyDistribution, KEYS_MAX};
use crate::model::Dist;

/// The fields of `[[hop]]` a cache would silently ignore, each with the reason.
fn ignored(h: &RawHop) -> [(&'static str, bool, &'static str); 9] {
    [
        ("workers", h.workers.is_some(), "it has no worker limit: every lookup is served at once"),
        ("queue_limit", h.queue_limit.is_some(), "it has no queue"),
        ("scheduling", h.scheduling.is_some(), "it has no queue to schedule"),
        ("service", h.service.is_some(), "its lookup time is `cache.hit_latency`"),
        ("idempotency", h.idempotency.is_some(), "it has no idempotency store; put it on the backend"),
        ("effect", h.effect.is_some(), "it commits no side effect"),
        ("discipline", h.discipline.is_some(), "it has no queue"),
        ("load_latency", h.load_latency.is_some(), "it has no worker limit, so no load to slow its lookups"),
        ("autoscale", h.autoscale.is_some(), "it has no workers or replicas to scale"),
    ]
}

/// The cache of hop `h` (`Ok(None)` when the hop is not a cache); `dist` validates a distribution.
pub(super) fn cache(
    h: &RawHop,
    is_cache: bool,
    has_next: bool,
    dist: &dyn Fn(&RawDist, &str) -> V<Dist>,
) -> V<Option<CacheSpec>> {
    let at = |field: &str| format!("hop.{}.{field}", h.name);
    let raw =
        match (&h.cache, is_cache) {
            (None, false) => return Ok(None),
            (Some(_), false) => {
                return Err(Invalid::at(&at("cache"), "is only read on a cache hop; add kind = \"cache\" or remove it"))
            }
            (None, true) => return Err(Invalid::at(
                &format!("hop.{}", h.name),
                "is a `kind = \"cache\"` hop without its `cache` table; add e.g. cache = { keys = 100, ttl = \"5s\" }",
            )),
            (Some(c), true) => c,
        };
    if let Some((field, _, why)) = ignored(h).iter().find(|(_, present, _)| *present) {
        return Err(Invalid::at(&at(field), format!("a `kind = \"cache\"` hop ignores this field ({why}); remove it")));
    }
    let overload = [
        ("codel_target", h.codel_target.is_some()),
        ("codel_interval", h.codel_interval.is_some()),
        ("shed_queue_length", h.shed_queue_length.is_some()),
        ("shed_retries_queue_length", h.shed_retries_queue_length.is_some()),
        ("retry_priority", h.retry_priority.is_some()),
        ("admission", h.admission.is_some()),
    ];
    if let Some((field, _)) = overload.iter().find(|(_, present)| *present) {
        return Err(Invalid::at(
            &at(field),
            "a `kind = \"cache\"` hop has no queue or admission control; put overload control on its backend",
        ));
    }
    if !has_next {
        return Err(Invalid::at(
            &format!("hop.{}", h.name),
            "is a `kind = \"cache\"` hop but no hop follows it; add its backend (e.g. the database) as the next [[hop]]",
        ));
    }
    let keys = count(raw.keys, &at("cache.keys"), 1, i64::from(KEYS_MAX))? as u32;
    let distribution = key_distribution(raw.key_distribution.as_ref(), keys, &at("cache.key_distribution"))?;
    let ttl = match raw.ttl {
        None => Nanos::MAX,
        Some(d) => positive(d, &at("cache.ttl"))?,
    };
    let ttl_jitter = match raw.ttl_jitter {
        None => 0.0,
        Some(j) if raw.ttl.is_none() => {
            return Err(Invalid::at(
                &at("cache.ttl_jitter"),
                format!("is {j} but the cache has no ttl (entries never expire); set ttl or remove ttl_jitter"),
            ))
        }
        Some(j) if j.is_finite() && (0.0..1.0).contains(&j) => j,
        Some(j) => {
            return Err(Invalid::at(
                &at("cache.ttl_jitter"),
                format!("is {j}; it must be in [0, 1) (0.1 spreads each TTL over ×0.9…×1.1)"),
            ))
        }
    };
    let capacity = match raw.capacity {
        None => u32::MAX,
        Some(c) => count(c, &at("cache.capacity"), 1, i64::from(u32::MAX - 1))? as u32,
    };
    let eviction = match raw.eviction.as_deref() {
        None => Eviction::Lru,
        Some(name) => super::tagged::read_name(name)
            .map_err(|names| unknown(&at("cache.eviction"), "eviction policy", name, names))?,
    };
    let hit_latency = match &raw.hit_latency {
        None => Dist::Constant { mean: 0 },
        Some(d) => dist(d, &at("cache.hit_latency"))?,
    };
    Ok(Some(CacheSpec {
        keys,
        distribution,
        ttl,
        ttl_jitter,
        capacity,
        eviction,
        coalesce: raw.coalesce.unwrap_or(false),
        hit_latency,
    }))
}

/// `"uniform"` (default) or `{ zipf = S }` with S finite and > 0.
fn key_distribution(value: Option<&toml::Value>, keys: u32, at: &str) -> V<KeyDistribution> {
    let fix = "write \"uniform\" or { zipf = 1.1 }";
    match value {
        None => Ok(KeyDistribution::Uniform),
        Some(toml::Value::String(s)) if s == "uniform" => Ok(KeyDistribution::Uniform),
        Some(toml::Value::String(s)) if s == "zipf" => {
            Err(Invalid::at(at, "`zipf` needs its exponent: write { zipf = 1.1 }"))
        }
        Some(toml::Value::String(s)) => Err(unknown(at, "key distribution", s, &["uniform", "zipf"])),
        Some(toml::Value::Table(t)) => {
            if let Some(other) = t.keys().find(|k| *k != "zipf") {
                return Err(Invalid::at(&format!("{at}.{other}"), format!("is not a key distribution field; {fix}")));
            }
            let s = match t.get("zipf") {
                Some(toml::Value::Float(f)) => *f,
                Some(toml::Value::Integer(i)) => *i as f64,
                Some(other) => {
                    return Err(Invalid::at(
                        &format!("{at}.zipf"),
                        format!("is {other}; the exponent is a number such as 1.1"),
                    ))
                }
                None => return Err(Invalid::at(at, format!("is an empty table; {fix}"))),
            };
            let s = finite_at_least(
                s,
                0.0,
                &format!("{at}.zipf"),
                "the exponent must be a finite number > 0, such as 1.1",
            )?;
            if s == 0.0 || s > 100.0 {
                return Err(Invalid::at(
                    &format!("{at}.zipf"),
                    format!("is {s}; the exponent must be in (0, 100] (0 would be uniform: write \"uniform\")"),
                ));
            }
            Ok(KeyDistribution::zipf(keys, s))
        }
        Some(other) => Err(Invalid::at(at, format!("is {other}; {fix}"))),
    }
}
