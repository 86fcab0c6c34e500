//! Validation of a cache hop: `kind = "cache"` with its `cache = { … }` table (docs/MODEL.md,
//! "Caches"). A cache has no workers, queue or service time of its own; the fields it would
//! ignore are refused with the field named, by `hop_kind.rs`.

use super::checks::{count, finite_at_least, positive, unknown, V};
use super::error::Invalid;
use super::raw::{RawDist, RawHop};
use crate::engine::Nanos;
use crate::model::cache::{CacheSpec, Eviction, KeyDistribution, KEYS_MAX};
use crate::model::Dist;

/// The cache of `kind = "cache"` hop `h` (the fields it does not read are refused before, in
/// `hop_kind.rs`); `dist` validates a distribution.
pub(super) fn cache(h: &RawHop, has_next: bool, dist: &dyn Fn(&RawDist, &str) -> V<Dist>) -> V<CacheSpec> {
    let at = |field: &str| format!("hop.{}.{field}", h.name);
    let Some(raw) = &h.cache else {
        return Err(Invalid::at(
            &format!("hop.{}", h.name),
            "is a `kind = \"cache\"` hop without its `cache` table; add e.g. cache = { keys = 100, ttl = \"5s\" }",
        ));
    };
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
    Ok(CacheSpec {
        keys,
        distribution,
        ttl,
        ttl_jitter,
        capacity,
        eviction,
        coalesce: raw.coalesce.unwrap_or(false),
        hit_latency,
    })
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
