//! Validation: a [`RawScenario`] becomes a [`SimSpec`] whose every value is in range, or an
//! [`Invalid`] naming the field, the value and the fix.

use super::checks::{count, finite_at_least, positive, probability, read_kind, show, unknown, Words, V};
use super::error::{shorten, Invalid};
use super::hop_kind::HopKindName;
use super::kind_fields::{refuse_unread, ArrivalFields, DistFields};
use super::raw::{parse_duration, Dur, RawArrival, RawDist, RawFault, RawHop, RawScenario, RawTenant};
use crate::engine::{Nanos, NS_PER_MS, NS_PER_S};
use crate::model::{
    Arrival, ClientTiming, Dist, Fault, FaultKind, HopKind, HopSpec, IdempotencySpec, InProgress, RetryPolicy, SimSpec,
    TenantSpec,
};

/// The most a client's own delay (`client_timing`, each part) may add to a retry.
const CLIENT_DELAY_MAX: Nanos = 60 * NS_PER_S;

/// Clients above this many are refused before anything is allocated.
pub const CLIENTS_MAX: i64 = 50_000_000;
/// Bytes of memory a client costs at most (arrival slot, request counter, call and attempt).
pub const BYTES_PER_CLIENT_MAX: u64 = 400;
/// Time-series buckets above this many are refused.
pub const BUCKETS_MAX: u64 = 2_000_000;
/// Most tenants, hops and policies a scenario may define: the simulation keeps their indices in
/// `u16` (and hop indices in the top bits of draw keys), so larger counts would be truncated.
pub const TENANTS_MAX: usize = 1_000;
/// See [`TENANTS_MAX`].
pub const HOPS_MAX: usize = 64;
/// See [`TENANTS_MAX`].
pub const POLICIES_MAX: usize = 1_000;

/// Longest scenario, tenant, hop, policy or variant name, in characters.
pub const NAME_MAX_CHARS: usize = 64;

/// Top-level values that are not part of the simulated system.
#[derive(Clone, Debug)]
pub struct Meta {
    /// Master seed.
    pub seed: u64,
    /// Independent replications.
    pub replications: u32,
}

/// Validates the whole file; warnings are invariant violations that do not stop a run.
pub fn validate(raw: &RawScenario) -> V<(Meta, SimSpec, Vec<String>)> {
    scenario_name(&raw.name)?;
    super::import::begin(&raw.base_dir);
    let seed = raw.seed.unwrap_or(1);
    let seed =
        u64::try_from(seed).map_err(|_| Invalid::at("seed", format!("is {seed}; use a non-negative integer")))?;
    let replications = count(raw.replications.unwrap_or(1), "replications", 1, 10_000)? as u32;
    let horizon = positive(raw.horizon, "horizon")?;
    let bucket = raw.bucket.map_or(Ok(default_bucket(horizon)), |b| positive(b, "bucket"))?;
    let drain_limit = match raw.drain_limit {
        Some(Dur(d)) if d < horizon => {
            return Err(Invalid::at("drain_limit", format!("is {} but must be ≥ horizon ({})", show(d), show(horizon))))
        }
        Some(Dur(d)) => d,
        None => horizon.saturating_mul(2),
    };
    if drain_limit / bucket > BUCKETS_MAX {
        return Err(Invalid::at(
            "bucket",
            format!(
                "{} gives {} time-series buckets over the {} run (at most {BUCKETS_MAX}); use a wider bucket",
                show(bucket),
                drain_limit / bucket,
                show(drain_limit)
            ),
        ));
    }
    let max_events = count(raw.max_events.unwrap_or(2_000_000_000), "max_events", 1, i64::MAX)? as u64;
    let recovery_hold = raw.recovery_hold.map_or(5 * NS_PER_S, |d| d.0);
    for (path, n, max) in [
        ("tenant", raw.tenant.len(), TENANTS_MAX),
        ("hop", raw.hop.len(), HOPS_MAX),
        ("policy", raw.policy.len(), POLICIES_MAX),
    ] {
        if n > max {
            return Err(Invalid::at(path, format!("{n} are defined; at most {max} are supported: merge some of them")));
        }
    }
    let policy_names: Vec<&str> = raw.policy.keys().map(String::as_str).collect();
    let policies = raw.policy.iter().map(|(name, p)| super::policies::policy(name, p)).collect::<V<Vec<_>>>()?;
    let tenants = tenants(raw, &policy_names)?;
    let hops = hops(raw, &policy_names, &policies, &tenants)?;
    let faults = faults(&raw.fault, &hops)?;
    time_advances(&tenants, &hops)?;
    let spec = SimSpec {
        name: raw.name.clone(),
        horizon,
        drain_limit,
        bucket,
        max_events,
        recovery_hold,
        tenants,
        hops,
        policies,
        faults,
    };
    let mut warnings = super::import::take_warnings();
    warnings.extend(super::invariants::warnings(&spec));
    warnings.extend(super::sanity::warnings(&spec));
    warnings.extend(super::graph::warnings(&spec));
    Ok((Meta { seed, replications }, spec, warnings))
}

/// The scenario name is a label that also names the default output directory
/// (`output/NAME`): 1–64 ASCII letters, digits, `-`, `_` or `.`, starting with a letter or digit,
/// so it can never be empty, `.`, `..`, absolute, contain a path separator or a control character.
pub fn scenario_name(name: &str) -> V<()> {
    let chars = name.chars().count();
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    let problem = if name.is_empty() {
        Some("is empty".to_string())
    } else if chars > NAME_MAX_CHARS {
        Some(format!("is {chars} characters long (at most {NAME_MAX_CHARS})"))
    } else if let Some(c) = name.chars().find(|c| !allowed(*c)) {
        Some(format!("`{}` contains {}", shorten(name, 40), describe_char(c)))
    } else if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        Some(format!("`{name}` does not start with a letter or digit"))
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(p) => Err(Invalid::at(
            "name",
            format!("{p}; the name is a label that also names the output directory output/NAME: use 1-{NAME_MAX_CHARS} letters, digits, `-`, `_` or `.`, starting with a letter or digit, e.g. name = \"outage-herd\" (choose where files go with --out)"),
        )),
    }
}

fn describe_char(c: char) -> String {
    match c {
        '/' | '\\' => format!("a path separator `{c}`"),
        c if c.is_control() => format!("a control character `{}`", c.escape_default()),
        ' ' => "a space".to_string(),
        c => format!("the character `{c}`"),
    }
}

/// Tenant, hop and variant names address entries in `--set` paths and messages
/// (`hop.NAME.workers`): non-empty, at most 64 characters, no `.` and no control character.
fn check_name(name: &str, kind: &str, index: usize) -> V<()> {
    let chars = name.chars().count();
    if name.trim().is_empty() || name.contains('.') || name.chars().any(char::is_control) || chars > NAME_MAX_CHARS {
        return Err(Invalid::at(
            &format!("{kind}.{index}.name"),
            format!("{kind} name `{}` must be non-empty, at most {NAME_MAX_CHARS} characters and contain no `.` or control character (it is used in paths like `{kind}.NAME.field`)", shorten(name, 40)),
        ));
    }
    Ok(())
}

/// The index of the first entry whose name repeats an earlier one (O(n log n), not O(n²)).
pub fn first_duplicate<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<usize> {
    let mut seen = std::collections::HashSet::new();
    names.into_iter().position(|n| !seen.insert(n))
}

/// A closed loop with no think time against hops that answer in zero time would issue requests
/// forever at one instant: simulated time never advances, and memory runs out.
fn time_advances(tenants: &[TenantSpec], hops: &[HopSpec]) -> V<()> {
    let instant = hops.iter().all(|h| h.service.mean_ns(1) == 0.0 && h.network.mean_ns(1) == 0.0);
    let stuck = tenants.iter().find(|t| matches!(t.arrival, Arrival::Closed { think: 0, .. }));
    match stuck {
        Some(t) if instant => Err(Invalid::at(
            &format!("tenant.{}.arrival.think", t.name),
            "is 0 and every hop answers in 0 time (service and network means 0), so simulated time would never advance; give think or a hop's service a positive duration",
        )),
        _ => Ok(()),
    }
}

fn default_bucket(horizon: Nanos) -> Nanos {
    (horizon / 1_000).max(NS_PER_MS)
}

fn tenants(raw: &RawScenario, policy_names: &[&str]) -> V<Vec<TenantSpec>> {
    if raw.tenant.is_empty() {
        return Err(Invalid::at("tenant", "no [[tenant]] is defined; add one with name, clients, arrival and policy"));
    }
    // Blame the tenant whose clients push the running total over the limit.
    let mut total: i64 = 0;
    for t in &raw.tenant {
        total = total.saturating_add(t.clients.max(0));
        if total > CLIENTS_MAX {
            let gib = total as f64 * BYTES_PER_CLIENT_MAX as f64 / (1u64 << 30) as f64;
            return Err(Invalid::at(
                &format!("tenant.{}.clients", t.name),
                format!("brings the total to {total} clients, which would need up to {gib:.1} GiB; at most {CLIENTS_MAX} are simulated in all"),
            ));
        }
    }
    for (i, t) in raw.tenant.iter().enumerate() {
        check_name(&t.name, "tenant", i)?;
    }
    if let Some(i) = first_duplicate(raw.tenant.iter().map(|t| t.name.as_str())) {
        let why = format!("`{}` is defined twice; tenant names must be unique", raw.tenant[i].name);
        return Err(Invalid::at(&format!("tenant.{i}.name"), why));
    }
    let mut out = Vec::new();
    for t in &raw.tenant {
        out.push(tenant(t, policy_names)?);
    }
    Ok(out)
}

fn tenant(t: &RawTenant, policy_names: &[&str]) -> V<TenantSpec> {
    let at = |field: &str| format!("tenant.{}.{field}", t.name);
    let clients = count(t.clients, &at("clients"), 1, CLIENTS_MAX)? as u32;
    let policy = policy_names
        .iter()
        .position(|p| *p == t.policy)
        .ok_or_else(|| unknown(&at("policy"), "policy", &t.policy, policy_names))?;
    let invalid_fraction = probability(t.invalid_fraction, &at("invalid_fraction"))?;
    let poison_fraction = probability(t.poison_fraction, &at("poison_fraction"))?;
    if invalid_fraction + poison_fraction > 1.0 {
        return Err(Invalid::at(
            &at("poison_fraction"),
            format!(
                "invalid_fraction {invalid_fraction} + poison_fraction {poison_fraction} exceed 1; lower one of them"
            ),
        ));
    }
    let arrival = arrival(&t.arrival, &at("arrival"))?;
    let timing = t.client_timing.as_ref().map_or_else(ClientTiming::default, |c| ClientTiming {
        overhead: c.overhead.map_or(0, |d| d.0),
        lateness: c.lateness.map_or(0, |d| d.0),
        lateness_per_1000_per_s: c.lateness_per_1000_per_s.map_or(0, |d| d.0),
    });
    for (field, value) in [
        ("overhead", timing.overhead),
        ("lateness", timing.lateness),
        ("lateness_per_1000_per_s", timing.lateness_per_1000_per_s),
    ] {
        if value > CLIENT_DELAY_MAX {
            return Err(Invalid::at(
                &at(&format!("client_timing.{field}")),
                format!(
                    "is {}; a client's own delay on a retry is at most 1m (it is added to every retry)",
                    show(value)
                ),
            ));
        }
    }
    Ok(TenantSpec { name: t.name.clone(), clients, arrival, policy, invalid_fraction, poison_fraction, timing })
}

fn arrival(a: &RawArrival, at: &str) -> V<Arrival> {
    let field = |f: &str| format!("{at}.{f}");
    let start = a.start.map_or(0, |d| d.0);
    let spread = a.spread.map_or(0, |d| d.0);
    let kind = super::tagged::read_name::<ArrivalKindName>(&a.kind)
        .map_err(|names| unknown(&field("kind"), "arrival kind", &a.kind, names))?;
    refuse_unread::<ArrivalFields>("arrival kind", &a.kind, &a.written(), at)?;
    match kind {
        ArrivalKindName::Trace => super::trace::arrival(a, at),
        ArrivalKindName::Ramp => ramp(a, at),
        ArrivalKindName::Herd => {
            let requests_per_client =
                count(a.requests_per_client.unwrap_or(1), &field("requests_per_client"), 1, 1_000_000)? as u32;
            Ok(Arrival::Herd { start, spread, requests_per_client })
        }
        ArrivalKindName::Poisson => {
            let rate = a.rate_per_s.ok_or_else(|| Invalid::at(at, "kind `poisson` needs rate_per_s, e.g. 40.0"))?;
            let rate_per_s = rate_value(rate, &field("rate_per_s"))?;
            if rate_per_s == 0.0 {
                return Err(Invalid::at(&field("rate_per_s"), "is 0; a Poisson tenant needs a positive rate"));
            }
            Ok(Arrival::Poisson { rate_per_s })
        }
        ArrivalKindName::Closed => Ok(Arrival::Closed { start, spread, think: a.think.map_or(0, |d| d.0) }),
        ArrivalKindName::Profile => {
            let steps = a.steps.as_ref().filter(|s| !s.is_empty()).ok_or_else(|| {
                Invalid::at(at, "kind `profile` needs steps, e.g. [{ from = \"0s\", rate_per_s = 40.0 }]")
            })?;
            if steps[0].from.0 != 0 {
                let first = show(steps[0].from.0);
                return Err(Invalid::at(
                    &field("steps"),
                    format!("the first step starts at {first}; it must start at \"0s\""),
                ));
            }
            let mut out = Vec::with_capacity(steps.len());
            for (i, s) in steps.iter().enumerate() {
                if i > 0 && s.from.0 <= steps[i - 1].from.0 {
                    return Err(Invalid::at(
                        &field("steps"),
                        format!(
                            "step {i} starts at {} which is not after the previous step; sort the steps by `from`",
                            show(s.from.0)
                        ),
                    ));
                }
                out.push((s.from.0, rate_value(s.rate_per_s, &field("steps"))?));
            }
            Ok(Arrival::Profile { steps: out })
        }
    }
}

fn rate_value(rate: f64, path: &str) -> V<f64> {
    finite_at_least(rate, 0.0, path, "a rate must be a finite number ≥ 0 (requests per second)")?;
    if rate > 1e9 {
        return Err(Invalid::at(path, format!("is {rate}; at most 1e9 requests per second are simulated")));
    }
    Ok(rate)
}

fn dist(d: &RawDist, at: &str) -> V<Dist> {
    let field = |f: &str| format!("{at}.{f}");
    let need = |v: Option<Dur>, f: &str| {
        v.map(|d| d.0).ok_or_else(|| Invalid::at(at, format!("dist `{}` needs `{f}`", d.dist)))
    };
    let name = super::tagged::read_name::<DistName>(&d.dist)
        .map_err(|names| unknown(&field("dist"), "dist", &d.dist, names))?;
    refuse_unread::<DistFields>("dist", &d.dist, &d.written(), at)?;
    match name {
        DistName::Empirical => super::empirical::dist(d, at),
        DistName::Lognormal
            if d.p50.is_some()
                || d.p75.is_some()
                || d.p90.is_some()
                || d.p95.is_some()
                || d.p99.is_some()
                || d.p999.is_some() =>
        {
            Ok(super::empirical::fitted_lognormal(d, at)?.expect("percentiles are given"))
        }
        name @ (DistName::Constant | DistName::Exponential) => {
            let mean = need(d.mean, "mean")?;
            Ok(if name == DistName::Constant { Dist::Constant { mean } } else { Dist::Exponential { mean } })
        }
        name @ (DistName::Lognormal | DistName::NormalAbs) => {
            let (mean, sd) = (need(d.mean, "mean")?, need(d.sd, "sd")?);
            if name == DistName::Lognormal {
                if mean == 0 {
                    return Err(Invalid::at(&field("mean"), "is 0; a log-normal needs a positive mean"));
                }
                Ok(Dist::LogNormal { mean, sd })
            } else {
                Ok(Dist::NormalAbs { mean, sd })
            }
        }
        DistName::Load => {
            Ok(Dist::Load { base: need(d.base, "base")?, per_inflight: need(d.per_inflight, "per_inflight")? })
        }
    }
}

/// `{ kind = "ramp", from_rate_per_s = 0.0, rate_per_s = 300.0, over = "8s" }`.
fn ramp(a: &RawArrival, at: &str) -> V<Arrival> {
    let field = |f: &str| format!("{at}.{f}");
    let rate = a.rate_per_s.ok_or_else(|| {
        Invalid::at(at, "kind `ramp` needs rate_per_s (the rate at the end of the ramp) and over, e.g. rate_per_s = 300.0, over = \"8s\"")
    })?;
    let rate_per_s = rate_value(rate, &field("rate_per_s"))?;
    if rate_per_s == 0.0 {
        return Err(Invalid::at(&field("rate_per_s"), "is 0; the rate a ramp reaches must be positive"));
    }
    let from_rate_per_s = rate_value(a.from_rate_per_s.unwrap_or(0.0), &field("from_rate_per_s"))?;
    let over = a.over.ok_or_else(|| Invalid::at(at, "kind `ramp` needs over, the ramp's length, e.g. \"8s\""))?;
    let over = positive(over, &field("over"))?;
    Ok(Arrival::Ramp { from_rate_per_s, rate_per_s, over })
}

/// An arrival's `kind` as written (the validated arrival is `model::Arrival`, which carries
/// each kind's values); the names listed in messages come from this type, in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum ArrivalKindName {
    Herd,
    Poisson,
    Closed,
    Profile,
    Trace,
    Ramp,
}

/// A service or network `dist` as written (the validated one is `model::Dist`); the names
/// listed in messages come from this type, in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum DistName {
    Constant,
    Exponential,
    Lognormal,
    NormalAbs,
    Load,
    Empirical,
}

/// A hop's `scheduling` of its queue among tenants: one FIFO, or fair (round-robin over the
/// tenants' lanes); the names listed in messages come from this type.
#[derive(Clone, Copy, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum Scheduling {
    Fifo,
    Fair,
}

fn hops(raw: &RawScenario, policy_names: &[&str], policies: &[RetryPolicy], tenants: &[TenantSpec]) -> V<Vec<HopSpec>> {
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

fn faults(raw: &[RawFault], hops: &[HopSpec]) -> V<Vec<Fault>> {
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
