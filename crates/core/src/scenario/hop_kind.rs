//! A hop's `kind` (`service`, `occ`, `cache`) and the `[[hop]]` fields each kind reads: a field
//! written that its kind does not read is refused by name, with the reason. Which fields a kind
//! reads comes from a type ([`HopFields`], whose variants are the kinds), and which fields are
//! written from `RawHop::written()`, whose destructuring names every field; a test in
//! `kind_fields.rs` checks both against the raw struct. The reasons below are wording only: a
//! field with none is still refused, with the kinds that read it.

use super::checks::{unknown, V};
use super::error::Invalid;
use super::kind_fields::{first_unread, readers};
use super::raw::RawHop;
use super::tagged;
use serde::de::IgnoredAny;

/// What a hop is (`kind` in the scenario file; `service` when absent); the names listed in
/// messages come from this type.
#[derive(Clone, Copy, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum HopKindName {
    Service,
    Occ,
    Cache,
}

/// A field of the schema: only its name is read.
type F = Option<IgnoredAny>;

/// The fields of `[[hop]]` each kind reads besides `name` and `kind` (its kinds are
/// [`HopKindName`]'s, in its order: a test checks).
#[derive(serde::Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[allow(dead_code, reason = "a schema: only the names of its variants' fields are read")]
pub(super) enum HopFields {
    /// A queueing service: workers, a queue, service times, and everything around them.
    Service {
        workers: F,
        queue_limit: F,
        service: F,
        network: F,
        downstream_policy: F,
        idempotency: F,
        effect: F,
        scheduling: F,
        discipline: F,
        codel_target: F,
        codel_interval: F,
        shed_queue_length: F,
        shed_retries_queue_length: F,
        retry_priority: F,
        admission: F,
        replicas: F,
        balancer: F,
        health_check: F,
        outlier_detection: F,
        calls: F,
        calls_mode: F,
        pool: F,
        load_latency: F,
        autoscale: F,
    },
    /// An optimistic-concurrency register: reached over the network, answers a read and a
    /// conditional write at once, calls nothing.
    Occ { network: F },
    /// A cache in front of its backend, which it calls (through a pool, if any) on a miss.
    Cache { network: F, downstream_policy: F, calls: F, calls_mode: F, pool: F, cache: F },
}

/// The kind of hop `h` (`at` names its fields).
pub(super) fn kind(h: &RawHop, at: &dyn Fn(&str) -> String) -> V<HopKindName> {
    let name = h.kind.as_deref().unwrap_or("service");
    let kind = tagged::read_name(name).map_err(|names| unknown(&at("kind"), "hop kind", name, names))?;
    refuse_ignored(h, kind, name, at)?;
    Ok(kind)
}

/// Refuses the first field of `h` that its kind (`name`) does not read, with the reason.
fn refuse_ignored(h: &RawHop, kind: HopKindName, name: &str, at: &dyn Fn(&str) -> String) -> V<()> {
    let Some(field) = first_unread::<HopFields>(name, &h.written()) else { return Ok(()) };
    let noun = match kind {
        HopKindName::Occ => "register",
        HopKindName::Service | HopKindName::Cache => "hop",
    };
    let (why, fix) = match ignored_because(kind, field) {
        Some((why, fix)) => (why.to_string(), fix.to_string()),
        None => {
            let kinds: Vec<String> = readers::<HopFields>(field).iter().map(|k| format!("kind = \"{k}\"")).collect();
            let quoted: Vec<String> = kinds.iter().map(|k| format!("`{k}`")).collect();
            (format!("only a {} hop reads it", quoted.join(" or ")), format!("set {} or remove it", kinds.join(" or ")))
        }
    };
    Err(Invalid::at(&at(field), format!("a `kind = \"{name}\"` {noun} ignores this field ({why}); {fix}")))
}

/// Why a hop of `kind` does not read `field`, in the words of the model (docs/MODEL.md, "Caches"
/// and "The `occ` hop"), and the fix.
fn ignored_because(kind: HopKindName, field: &str) -> Option<(&'static str, &'static str)> {
    let overload = ["discipline", "codel_target", "codel_interval", "shed_queue_length", "shed_retries_queue_length"];
    let overload = overload.contains(&field) || ["retry_priority", "admission"].contains(&field);
    let replicas = ["replicas", "balancer", "health_check", "outlier_detection"].contains(&field);
    match kind {
        HopKindName::Service => None,
        HopKindName::Cache => Some(match field {
            "idempotency" => ("it has no idempotency store", "move it to the backend"),
            _ if overload => ("it has no queue or admission control", "move it to the backend"),
            "workers" => ("it has no worker limit: every lookup is served at once", "remove it"),
            "queue_limit" => ("it has no queue", "remove it"),
            "scheduling" => ("it has no queue to schedule", "remove it"),
            "service" => ("its lookup time is `cache.hit_latency`", "remove it"),
            "effect" => ("it commits no side effect", "remove it"),
            "load_latency" => ("it has no worker limit, so no load to slow its lookups", "remove it"),
            "autoscale" => ("it has no workers or replicas to scale", "remove it"),
            _ if replicas => ("it is one store", "remove it"),
            _ => return None,
        }),
        HopKindName::Occ => Some(match field {
            "workers" => ("it has no workers and no capacity limit", "remove it"),
            "queue_limit" => ("it has no queue", "remove it"),
            "scheduling" => ("it has no queue to schedule", "remove it"),
            "service" => ("it has no service time", "remove it"),
            "idempotency" => ("it has no idempotency store", "remove it"),
            "effect" => ("its writes are not counted as side effects", "remove it"),
            "downstream_policy" | "calls" | "calls_mode" | "pool" => ("it calls no other hop", "remove it"),
            "load_latency" | "autoscale" => ("it has no workers or service time", "remove it"),
            _ if overload => ("it has no queue or admission control", "remove it"),
            _ if replicas => ("it is one register", "remove it"),
            _ => return None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(toml_hop: &str) -> Option<String> {
        let h: RawHop = toml::from_str(toml_hop).expect("a hop");
        let at = |f: &str| format!("hop.{}.{f}", h.name);
        kind(&h, &at).err().map(|e| format!("{} {}", e.path.join("."), e.message))
    }

    #[test]
    fn each_kind_refuses_what_it_ignores_with_the_reason() {
        let occ = refusal("name = \"r\"\nkind = \"occ\"\npool = { size = 2 }").expect("occ calls nothing");
        assert!(occ.contains("hop.r.pool"), "{occ}");
        assert!(occ.contains("a `kind = \"occ\"` register ignores this field (it calls no other hop)"), "{occ}");
        let cache = refusal("name = \"c\"\nkind = \"cache\"\ncache = { keys = 1 }\nadmission = { kind = \"aimd\" }")
            .expect("a cache");
        assert!(cache.contains("hop.c.admission"), "{cache}");
        assert!(cache.contains("(it has no queue or admission control); move it to the backend"), "{cache}");
        let service =
            refusal("name = \"s\"\nkind = \"service\"\ncache = { keys = 1 }").expect("a service reads no cache");
        assert!(service.contains("hop.s.cache"), "{service}");
        let unnamed = refusal("name = \"s\"\ncache = { keys = 1 }").expect("a hop without kind is a service");
        assert_eq!(unnamed, service);
        assert!(
            service.contains("(only a `kind = \"cache\"` hop reads it); set kind = \"cache\" or remove it"),
            "{service}"
        );
        assert_eq!(refusal("name = \"c\"\nkind = \"cache\"\ncache = { keys = 1 }\nnetwork = { dist = \"constant\", mean = \"1ms\" }\npool = { size = 2 }"), None);
        assert_eq!(refusal("name = \"r\"\nkind = \"occ\"\nnetwork = { dist = \"constant\", mean = \"1ms\" }"), None);
    }

    #[test]
    fn every_field_a_kind_ignores_has_its_reason() {
        for kind in [HopKindName::Occ, HopKindName::Cache] {
            let name = tagged::names::<HopKindName>()[kind as usize];
            let reads = tagged::fields::<HopFields>(name);
            for field in tagged::fields::<HopFields>("service").iter().chain(&["cache"]) {
                let reason = ignored_because(kind, field);
                if reads.contains(field) {
                    assert_eq!(reason, None, "`{name}` reads `{field}`");
                } else if *field != "cache" {
                    assert!(reason.is_some(), "`{name}` ignores `{field}` without a reason");
                }
            }
        }
    }
}
