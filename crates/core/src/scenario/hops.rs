//! Validation of `[[hop]]`: names, the chain or call graph, each hop's kind, workers, queue,
//! service, idempotency store, overload control, scaling and replicas.

use super::checks::{count, unknown, V};
use super::dists::dist;
use super::error::Invalid;
use super::hop_kind::HopKindName;
use super::names::{check_name, first_duplicate};
use super::raw::{parse_duration, RawHop, RawScenario};
use crate::engine::Nanos;
use crate::model::{Dist, HopKind, HopSpec, IdempotencySpec, InProgress, RetryPolicy, TenantSpec};

/// A hop's `scheduling` of its queue among tenants: one FIFO, or fair (round-robin over the
/// tenants' lanes); the names listed in messages come from this type.
#[derive(Clone, Copy, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Scheduling {
    Fifo,
    Fair,
}

pub(super) fn hops(
    raw: &RawScenario,
    policy_names: &[&str],
    policies: &[RetryPolicy],
    tenants: &[TenantSpec],
) -> V<Vec<HopSpec>> {
    if raw.hop.is_empty() {
        return Err(Invalid::at("hop", "no [[hop]] is defined; add one with name, workers and service"));
    }
    for (i, h) in raw.hop.iter().enumerate() {
        check_name(&h.name, "hop", i)?;
    }
    if let Some(i) = first_duplicate(raw.hop.iter().map(|h| h.name.as_str())) {
        let why = format!("`{}` is defined twice; hop names must be unique", raw.hop[i].name);
        return Err(Invalid::at(&format!("hop.{i}.name"), why));
    }
    let graph = super::graph::edges(raw, policy_names)?;
    let mut out: Vec<HopSpec> = Vec::new();
    for (i, h) in raw.hop.iter().enumerate() {
        let caller_deadline = if let Some(edges) = &graph {
            super::graph::caller_deadline(edges, i, policies, tenants)
        } else if i == 0 {
            tenants.iter().filter_map(|t| policies[t.policy].deadline).max()
        } else {
            out[i - 1].downstream_policy.and_then(|p| policies[p].deadline)
        };
        let next = if graph.is_some() { None } else { raw.hop.get(i + 1) };
        out.push(hop(h, next, graph.is_some(), policy_names, caller_deadline)?);
    }
    let chain = graph.is_none();
    super::graph::attach(&mut out, &raw.hop, graph)?;
    for h in &out {
        if h.cache().is_some() && h.calls.is_empty() {
            let why = "is a `kind = \"cache\"` hop that calls nothing, so its misses would have no backend; list its backend in `calls`";
            return Err(Invalid::at(&format!("hop.{}", h.name), why));
        }
    }
    // The last hop performs the side effect unless the file says which hops do; an explicit
    // `effect = false` everywhere is honoured (no hop then counts executions).
    // A call graph has no "last hop": there the file marks its effect hops.
    if chain && !out.iter().any(|h| h.effect) && raw.hop.iter().all(|h| h.effect.is_none()) {
        out.last_mut().expect("at least one hop").effect = true;
    }
    Ok(out)
}

fn hop(
    h: &RawHop,
    next: Option<&RawHop>,
    in_graph: bool,
    policy_names: &[&str],
    caller_deadline: Option<Nanos>,
) -> V<HopSpec> {
    let at = |field: &str| format!("hop.{}.{field}", h.name);
    // Each kind reads its own fields and refuses the others (scenario/hop_kind.rs).
    let kind = super::hop_kind::kind(h, &at)?;
    let workers = count(h.workers.unwrap_or(1), &at("workers"), 1, 10_000_000)? as u32;
    let queue_limit = count(h.queue_limit.unwrap_or(u32::MAX as i64), &at("queue_limit"), 0, u32::MAX as i64)? as u32;
    // A cache (scenario/cache.rs) answers lookups with its hit latency and no worker limit.
    // In a call graph a cache's backend is its `calls` edge, checked once the edges are attached.
    let (workers, service, model_kind) = match kind {
        HopKindName::Service => {
            let service = h.service.as_ref().ok_or_else(|| {
                Invalid::at(
                    &format!("hop.{}", h.name),
                    "has no `service`; add e.g. service = { dist = \"constant\", mean = \"1ms\" }",
                )
            })?;
            (workers, dist(service, &at("service"))?, HopKind::Service)
        }
        HopKindName::Occ => {
            if let Some(n) = next {
                return Err(Invalid::at(
                    &format!("hop.{}", h.name),
                    format!("is a `kind = \"occ\"` register, which calls no other hop, but hop `{}` follows it; make the register the last hop", n.name),
                ));
            }
            (workers, Dist::Constant { mean: 0 }, HopKind::Occ)
        }
        HopKindName::Cache => {
            let c = super::cache::cache(h, next.is_some() || in_graph, &dist)?;
            (u32::MAX, c.hit_latency.clone(), HopKind::Cache(c))
        }
    };
    let network = h.network.as_ref().map_or(Ok(Dist::Constant { mean: 0 }), |n| dist(n, &at("network")))?;
    let downstream_policy = match (&h.downstream_policy, next) {
        (Some(p), Some(_)) => Some(
            policy_names
                .iter()
                .position(|n| n == p)
                .ok_or_else(|| unknown(&at("downstream_policy"), "policy", p, policy_names))?,
        ),
        (Some(_), None) => {
            return Err(Invalid::at(&at("downstream_policy"), "is set on the last hop, which calls nothing; remove it"))
        }
        (None, Some(n)) => {
            return Err(Invalid::at(
                &format!("hop.{}", h.name),
                format!("calls hop `{}` next but has no downstream_policy; name the policy it retries with", n.name),
            ))
        }
        (None, None) => None,
    };
    let idempotency = match &h.idempotency {
        None => None,
        Some(store) => Some(IdempotencySpec {
            ttl: ttl(&store.ttl.0, &at("idempotency.ttl"), caller_deadline)?,
            in_progress: match store.in_progress.as_deref().unwrap_or("conflict") {
                "conflict" => InProgress::Conflict,
                "wait" => InProgress::Wait,
                other => {
                    return Err(unknown(
                        &at("idempotency.in_progress"),
                        "in-progress mode",
                        other,
                        &["conflict", "wait"],
                    ))
                }
            },
        }),
    };
    let effect = h.effect.unwrap_or(idempotency.is_some());
    let overload = super::overload::overload(h, &at)?;
    let load_latency = h
        .load_latency
        .as_ref()
        .map(|l| super::scaling::load_latency(l, &|f: &str| at(&format!("load_latency.{f}"))))
        .transpose()?;
    // Autoscaling of replicas allocates `max` replicas (scenario/replicas.rs gets the slots).
    let file_replicas = count(h.replicas.unwrap_or(1), &at("replicas"), 1, super::replicas::MAX_REPLICAS)? as u32;
    let autoscale = h
        .autoscale
        .as_ref()
        .map(|a| super::scaling::autoscale(a, workers, file_replicas, &|f: &str| at(&format!("autoscale.{f}"))))
        .transpose()?;
    let slots = autoscale.as_ref().filter(|a| a.unit == crate::model::ScaleUnit::Replicas).map(|a| a.max_units);
    let fair = match h.scheduling.as_deref().map(super::tagged::read_name::<Scheduling>).transpose() {
        Ok(None | Some(Scheduling::Fifo)) => false,
        Ok(Some(Scheduling::Fair)) => true,
        Err(names) => {
            let given = h.scheduling.as_deref().unwrap_or_default();
            return Err(unknown(&at("scheduling"), "scheduling", given, names));
        }
    };
    let replicas = super::replicas::replicas(h, workers, slots, &at)?;
    Ok(HopSpec {
        name: h.name.clone(),
        workers,
        queue_limit,
        service,
        network,
        downstream_policy,
        idempotency,
        effect,
        fair,
        kind: model_kind,
        overload,
        replicas,
        calls: Vec::new(),
        calls_mode: crate::model::CallsMode::Sequence,
        pool: None,
        load_latency,
        autoscale,
    })
}

/// `"78h"` or `"window+6h"` (the caller policy's deadline plus a margin, never jittered).
fn ttl(text: &str, at: &str, window: Option<Nanos>) -> V<Nanos> {
    let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    let ttl = if let Some(rest) = compact.strip_prefix("window") {
        let window = window.ok_or_else(|| {
            Invalid::at(at, format!("`{text}` derives the TTL from the window, but the policy calling this hop has no deadline; set one or give the TTL directly"))
        })?;
        let margin = match rest.strip_prefix('+') {
            Some(m) => parse_duration(m).map_err(|e| Invalid::at(at, e))?,
            None if rest.is_empty() => 0,
            None => return Err(Invalid::at(at, format!("`{text}`: write \"window\" or \"window+6h\""))),
        };
        window.saturating_add(margin)
    } else {
        parse_duration(text).map_err(|e| Invalid::at(at, e))?
    };
    if ttl == 0 {
        return Err(Invalid::at(at, "is 0; an idempotency key must live for a positive time"));
    }
    Ok(ttl)
}
