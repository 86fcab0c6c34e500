//! A variant's setup in words (`scenario.json`'s `variants`): what each tenant, hop, policy and
//! fault is, the spikes, and the labels and conditions the table, the verdict and the charts name
//! a variant by.

use crate::engine::time::{duration_words, ns_to_secs};
use crate::engine::Nanos;
use crate::model::budget::{BudgetSpec, Scope};
use crate::model::policy::{DeadlineMode, RetryAfterMode};
use crate::model::{Arrival, Dist, FaultKind, Jitter, RetryPolicy, SimSpec};
use serde::{Deserialize, Serialize};

/// The simulated configuration of one variant, as the report describes it (`scenario.json`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Setup {
    /// No new arrivals after this, seconds.
    pub horizon_s: f64,
    /// Tenants in file order.
    pub tenants: Vec<TenantInfo>,
    /// Hops in chain order.
    pub hops: Vec<HopInfo>,
    /// Retry policies.
    pub policies: Vec<PolicyInfo>,
    /// Faults sorted by start.
    pub faults: Vec<FaultInfo>,
    /// Load spikes: profile steps whose rate exceeds the tenant's first rate.
    #[serde(default)]
    pub spikes: Vec<SpikeInfo>,
    /// End of the last trigger (fault or load spike), seconds; recovery is measured from here.
    #[serde(default)]
    pub trigger_end_s: Option<f64>,
}

/// A load spike: one profile step of a tenant above that tenant's first rate.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct SpikeInfo {
    /// Tenant whose arrivals spike.
    pub tenant: String,
    /// Start, seconds.
    pub from_s: f64,
    /// End, seconds (the next step, or the horizon).
    pub to_s: f64,
    /// Arrivals per second during the spike.
    pub rate_per_s: f64,
}

/// A tenant, described.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TenantInfo {
    /// Name.
    pub name: String,
    /// Number of clients.
    pub clients: u32,
    /// Arrival pattern in words.
    pub arrival: String,
    /// Name of its retry policy.
    pub policy: String,
    /// Share of requests answered with a non-retryable 4xx.
    pub invalid_fraction: f64,
    /// Share of requests that always fail with a retryable 5xx.
    pub poison_fraction: f64,
}

/// A hop, described.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct HopInfo {
    /// Name.
    pub name: String,
    /// Concurrency.
    pub workers: u32,
    /// Queue limit.
    pub queue_limit: u32,
    /// Service-time distribution in words.
    pub service: String,
    /// The hop's capacity, attempts/s (`SimSpec::capacity_per_s`, the one definition; None when
    /// unbounded: a cache, or no service time).
    pub capacity_per_s: Option<f64>,
    /// Policy used to call the next hop.
    pub downstream_policy: Option<String>,
    /// Idempotency-key time to live, seconds.
    pub idempotency_ttl_s: Option<f64>,
    /// Replicas and balancer in words, for hops with more than one replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<String>,
    /// A cache hop's configuration in words (`kind = "cache"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<String>,
}

/// A retry policy, described.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PolicyInfo {
    /// Name.
    pub name: String,
    /// Jitter strategy (scenario-file name).
    pub jitter: String,
    /// Un-jittered first delay, seconds.
    pub base_s: f64,
    /// Growth factor per retry.
    pub multiplier: f64,
    /// Largest delay, seconds.
    pub cap_s: f64,
    /// Attempts including the first try.
    pub max_attempts: u32,
    /// Total time budget, seconds.
    pub deadline_s: Option<f64>,
    /// Per-attempt timeout, seconds.
    pub attempt_timeout_s: Option<f64>,
    /// The whole policy in one line.
    pub summary: String,
}

/// A fault, described.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FaultInfo {
    /// Name of the hop it hits.
    pub hop: String,
    /// Kind (scenario-file name).
    pub kind: String,
    /// Start, seconds.
    pub from_s: f64,
    /// End, seconds.
    pub to_s: f64,
    /// The kind with its parameter in words, e.g. `throttle (Retry-After 1s)`.
    pub summary: String,
}

/// One line of `scenario.json`'s `variants` list.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct VariantSetup {
    /// Variant name.
    pub name: String,
    /// Its configuration.
    #[serde(flatten)]
    pub setup: Setup,
}

fn dist_words(dist: &Dist) -> String {
    let d = |ns: Nanos| duration_words(ns);
    match *dist {
        Dist::Constant { mean } => format!("constant {}", d(mean)),
        Dist::Exponential { mean } => format!("exponential, mean {}", d(mean)),
        Dist::LogNormal { mean, sd } => format!("lognormal, mean {}, sd {}", d(mean), d(sd)),
        Dist::NormalAbs { mean, sd } => format!("|normal({}, {})|", d(mean), d(sd)),
        Dist::Load { base, per_inflight } => format!("{} + {} × in-flight", d(base), d(per_inflight)),
        Dist::Empirical(ref e) => format!("empirical ({}), mean {}", e.source, d(e.mean_ns() as u64)),
    }
}

/// A tenant's `client_timing` in words, after its arrivals (nothing when it adds nothing).
fn client_timing_words(t: &crate::model::ClientTiming) -> String {
    let retry = if !t.shifts_retries() {
        String::new()
    } else {
        format!(
            "; each retry +{} overhead, +{} lateness, +{} per 1,000 attempts/s (client timing)",
            duration_words(t.overhead),
            duration_words(t.lateness),
            duration_words(t.lateness_per_1000_per_s)
        )
    };
    let work = if t.work == 0 {
        String::new()
    } else {
        format!("; each attempt waits for {} of the client process's work, one at a time", duration_words(t.work))
    };
    retry + &work
}

fn arrival_words(arrival: &Arrival) -> String {
    let d = |ns: Nanos| duration_words(ns);
    match arrival {
        Arrival::Herd { start, spread, requests_per_client } => format!(
            "herd: {requests_per_client} request(s) per client, first at U({}, {})",
            d(*start),
            d(start + spread)
        ),
        Arrival::Poisson { rate_per_s } => format!("poisson, {rate_per_s}/s"),
        Arrival::Ramp { from_rate_per_s, rate_per_s, over } => {
            format!("poisson, ramp {from_rate_per_s}/s → {rate_per_s}/s over {}, then steady", d(*over))
        }
        Arrival::Closed { start, spread, think } => {
            format!("closed loop, think {}, first at U({}, {})", d(*think), d(*start), d(start + spread))
        }
        Arrival::Profile { steps } => {
            let parts: Vec<String> = steps.iter().map(|(from, rate)| format!("{rate}/s from {}", d(*from))).collect();
            format!("profile: {}", parts.join(", "))
        }
        Arrival::Trace(t) => format!(
            "trace {} (mean {:.1}/s, time ×{}, volume ×{}{})",
            t.file,
            t.mean_rate_per_s(),
            t.time_scale,
            t.volume_scale,
            if t.looped { ", looped" } else { "" }
        ),
    }
}

/// What a strategy whose name misleads a reader means: `none` is not "no retries" and
/// `exponential` is not "exponential with jitter".
pub fn strategy_gloss(jitter: &str) -> Option<&'static str> {
    match jitter {
        "none" => Some("immediate retry"),
        "exponential" => Some("no jitter"),
        _ => None,
    }
}

fn jitter_words(jitter: &Jitter) -> String {
    match jitter {
        Jitter::Proportional { ratio } => format!("proportional ±{ratio}"),
        Jitter::Schedule { delays } => {
            let parts: Vec<String> = delays.iter().map(|&ns| duration_words(ns)).collect();
            format!("schedule [{}]", parts.join(", "))
        }
        Jitter::None | Jitter::Exponential => {
            format!("{} — {}", jitter.name(), strategy_gloss(jitter.name()).unwrap_or_default())
        }
        Jitter::Full | Jitter::Equal | Jitter::Decorrelated | Jitter::DecorrelatedV2 | Jitter::DecorrelatedFinagle => {
            jitter.name().to_string()
        }
    }
}

fn policy_info(p: &RetryPolicy) -> PolicyInfo {
    let mut summary = format!(
        "{}, base {}, ×{}, cap {}, {} attempts",
        jitter_words(&p.jitter),
        duration_words(p.base),
        p.multiplier,
        duration_words(p.cap),
        p.attempts_max
    );
    if let Some(t) = p.attempt_timeout {
        summary.push_str(&format!(", timeout {}", duration_words(t)));
    }
    if let Some(dl) = p.deadline {
        summary.push_str(&format!(", deadline {}", duration_words(dl)));
    }
    if p.deadline_mode == DeadlineMode::Propagate {
        summary.push_str(", inherits the caller's deadline");
    }
    summary.push_str(&retry_after_words(p.retry_after));
    if p.retry_on != crate::model::RetryOn::ALL {
        let on = [
            ("transient", p.retry_on.transient),
            ("throttling", p.retry_on.throttling),
            ("timeout", p.retry_on.timeout),
        ];
        let kinds: Vec<&str> = on.iter().filter(|(_, b)| *b).map(|(n, _)| *n).collect();
        let kinds = if kinds.is_empty() { "nothing".to_string() } else { kinds.join(", ") };
        summary.push_str(&format!(", retries {kinds} failures only"));
    }
    if let Some(budget) = &p.budget {
        summary.push_str(&format!(", {}", budget_words(budget)));
    }
    if p.requeue {
        summary.push_str(", requeues refused attempts at once (Finagle)");
    }
    if p.late_reply == crate::model::LateReply::Accept {
        summary.push_str(", takes a success that arrives after its attempt timed out");
    }
    if let Some(b) = &p.breaker {
        summary.push_str(&format!(
            ", breaker ({}, opens at {}% failures over {})",
            scope_words(b.scope),
            b.threshold * 100.0,
            duration_words(b.window)
        ));
    }
    if let Some(preset) = &p.preset {
        summary = format!("preset {preset}: {summary}");
    }
    PolicyInfo {
        name: p.name.clone(),
        jitter: p.jitter.name().to_string(),
        base_s: ns_to_secs(p.base),
        multiplier: p.multiplier,
        cap_s: ns_to_secs(p.cap),
        max_attempts: p.attempts_max,
        deadline_s: p.deadline.map(ns_to_secs),
        attempt_timeout_s: p.attempt_timeout.map(ns_to_secs),
        summary,
    }
}

// No wildcard arms here: a new mode, kind or strategy must get its words (the compiler says where).
fn retry_after_words(mode: RetryAfterMode) -> String {
    match mode {
        // Waiting at least the Retry-After is the default, so only the other modes are named.
        RetryAfterMode::Ignore => ", ignores Retry-After".into(),
        RetryAfterMode::AtLeast => String::new(),
        RetryAfterMode::Exact => ", waits exactly Retry-After".into(),
        RetryAfterMode::AwsClamp => ", Retry-After clamped to [backoff, backoff + 5 s] (AWS)".into(),
    }
}

fn budget_words(budget: &BudgetSpec) -> String {
    format!("budget: {}, {}", budget.kind.words(), budget.scope.words())
}

fn scope_words(scope: Scope) -> &'static str {
    scope.words()
}

/// A cache hop in words, for `scenario.json` and the report's hop table.
fn cache_words(c: &crate::model::cache::CacheSpec) -> String {
    use crate::model::cache::{Eviction, KeyDistribution};
    let keys = match &c.distribution {
        KeyDistribution::Uniform => format!("{} uniform keys", c.keys),
        KeyDistribution::Zipf { s, .. } => format!("{} Zipf({s}) keys", c.keys),
    };
    let ttl = match (c.ttl, c.ttl_jitter) {
        (Nanos::MAX, _) => "no TTL".to_string(),
        (t, j) if j > 0.0 => format!("TTL {} ×U({}, {})", duration_words(t), 1.0 - j, 1.0 + j),
        (t, _) => format!("TTL {}", duration_words(t)),
    };
    let capacity = match c.capacity {
        u32::MAX => "unbounded".to_string(),
        n => format!("{n} entries {}", if c.eviction == Eviction::Lru { "LRU" } else { "FIFO" }),
    };
    let coalesce = if c.coalesce { ", coalescing misses" } else { "" };
    format!("cache: {keys}, {ttl}, {capacity}{coalesce}; lookup {}", dist_words(&c.hit_latency))
}

fn fault_summary(kind: &FaultKind) -> String {
    match kind {
        FaultKind::Throttle { retry_after } => format!("throttle (429, Retry-After {})", duration_words(*retry_after)),
        FaultKind::ErrorRate { p } => format!("error rate (503 with p = {p})"),
        FaultKind::LostReply { p } => format!("lost replies (p = {p})"),
        FaultKind::Slow { factor } => format!("slow (service time ×{factor})"),
        FaultKind::Capacity { workers } => format!("capacity ({workers} workers)"),
        FaultKind::Outage { .. } => "outage (503)".to_string(),
        FaultKind::Hang => "hang (no answer)".to_string(),
        FaultKind::CacheFlush => "cache flush (emptied; stores nothing until the window ends)".to_string(),
    }
}

/// "3 replicas behind least_connections, health checks every 1 s, outlier ejection after 5
/// errors" (None for a hop with one replica).
fn replica_words(h: &crate::model::HopSpec) -> Option<String> {
    let r = &h.replicas;
    if r.count == 1 {
        return None;
    }
    let mut words = match &h.autoscale {
        Some(a) if a.unit == crate::model::ScaleUnit::Replicas => format!(
            "{} replicas (autoscaled {}–{}) behind {}",
            a.initial_units,
            a.min_units,
            a.max_units,
            r.balancer.name()
        ),
        _ => format!("{} replicas behind {}", r.count, r.balancer.name()),
    };
    if let Some(c) = r.health_check {
        words.push_str(&format!(", health checks every {}", duration_words(c.interval)));
    }
    if let Some(o) = r.outlier {
        words.push_str(&format!(
            ", outlier ejection after {} errors ({} × ejections)",
            o.consecutive_errors,
            duration_words(o.base_ejection_time)
        ));
    }
    Some(words)
}

/// The name as legends, tables and the verdict show it: a variant named after its clients'
/// strategy says what that strategy means when the name alone misleads (`none — immediate
/// retry`).
pub fn label_of(name: &str, setup: &Setup) -> String {
    match strategy_gloss(name).filter(|_| named_after_strategy(name, setup)) {
        Some(gloss) => format!("{name} — {gloss}"),
        None => name.to_string(),
    }
}

/// True when every client of the variant uses the jitter strategy the variant is named after.
pub fn named_after_strategy(name: &str, setup: &Setup) -> bool {
    let mut policies: Vec<&PolicyInfo> = Vec::new();
    for t in &setup.tenants {
        if let Some(p) = setup.policies.iter().find(|p| p.name == t.policy) {
            policies.push(p);
        }
    }
    !policies.is_empty() && policies.iter().all(|p| p.jitter == name)
}

/// What a variant runs under besides its choices (policies, capacity, overload control): its
/// faults, its load (tenants' clients and arrivals) and its topology (the hops). Variants whose
/// conditions differ compare conditions, not policies.
pub fn condition_of(setup: &Setup) -> Vec<(String, String)> {
    let faults = if setup.faults.is_empty() {
        "none".to_string()
    } else {
        let parts: Vec<String> = setup
            .faults
            .iter()
            .map(|f| {
                format!(
                    "{} at {} {}–{}",
                    f.summary,
                    f.hop,
                    super::format::fmt_secs(f.from_s),
                    super::format::fmt_secs(f.to_s)
                )
            })
            .collect();
        parts.join(", ")
    };
    let load: Vec<String> =
        setup.tenants.iter().map(|t| format!("{} {} clients, {}", t.name, t.clients, t.arrival)).collect();
    let hops: Vec<&str> = setup.hops.iter().map(|h| h.name.as_str()).collect();
    vec![("faults".into(), faults), ("load".into(), load.join("; ")), ("hops".into(), hops.join(", "))]
}

/// Describes a simulated configuration for `scenario.json`.
pub fn setup_of(spec: &SimSpec) -> Setup {
    let policy_name = |i: usize| spec.policies[i].name.clone();
    Setup {
        horizon_s: ns_to_secs(spec.horizon),
        tenants: spec
            .tenants
            .iter()
            .map(|t| TenantInfo {
                name: t.name.clone(),
                clients: t.clients,
                arrival: arrival_words(&t.arrival) + &client_timing_words(&t.timing),
                policy: policy_name(t.policy),
                invalid_fraction: t.invalid_fraction,
                poison_fraction: t.poison_fraction,
            })
            .collect(),
        hops: spec
            .hops
            .iter()
            .enumerate()
            .map(|(i, h)| HopInfo {
                name: h.name.clone(),
                workers: h.workers,
                queue_limit: h.queue_limit,
                service: dist_words(&h.service),
                capacity_per_s: spec.capacity_per_s(i),
                downstream_policy: calls_words(spec, h).or_else(|| h.downstream_policy.map(policy_name)),
                idempotency_ttl_s: h.idempotency.as_ref().map(|i| ns_to_secs(i.ttl)),
                replicas: replica_words(h),
                cache: h.cache().map(cache_words),
            })
            .collect(),
        policies: spec.policies.iter().map(policy_info).collect(),
        faults: spec
            .faults
            .iter()
            .map(|f| FaultInfo {
                hop: spec.hops[f.hop].name.clone(),
                kind: f.kind.name().to_string(),
                from_s: ns_to_secs(f.from),
                to_s: ns_to_secs(f.to),
                summary: match f.replica {
                    None => fault_summary(&f.kind),
                    Some(r) => format!("{} on replica {r}", fault_summary(&f.kind)),
                },
            })
            .collect(),
        spikes: spikes_of(spec),
        trigger_end_s: spec.trigger_end().map(ns_to_secs),
    }
}

/// The load spikes of every tenant (same rule as `SimSpec::last_spike_end`).
fn spikes_of(spec: &SimSpec) -> Vec<SpikeInfo> {
    let mut out = Vec::new();
    for t in &spec.tenants {
        if let Arrival::Profile { steps } = &t.arrival {
            let base = steps[0].1;
            for (i, &(from, rate)) in steps.iter().enumerate().filter(|(_, s)| s.1 > base) {
                let to = steps.get(i + 1).map_or(spec.horizon, |s| s.0);
                out.push(SpikeInfo {
                    tenant: t.name.clone(),
                    from_s: ns_to_secs(from),
                    to_s: ns_to_secs(to),
                    rate_per_s: rate,
                });
            }
        }
    }
    out
}

/// How a hop calls others, for the report's hop table, when a chain's policy name does not say it
/// all: a call graph's calls by stage (`auth (p1), then db (p2) ∥ recs (p3, p 0.5, optional)`)
/// and a pool. `None` for a chain hop without a pool (the table shows its policy).
fn calls_words(spec: &SimSpec, h: &crate::model::HopSpec) -> Option<String> {
    let pool = h.pool.map(|p| format!("pool of {}", p.size));
    let calls = if h.downstream_policy.is_some() {
        spec.policies[h.downstream_policy?].name.clone()
    } else {
        let mut text = String::new();
        for (i, e) in h.calls.iter().enumerate() {
            if i > 0 {
                text.push_str(if e.stage == h.calls[i - 1].stage { " ∥ " } else { ", then " });
            }
            let mut notes = vec![spec.policies[e.policy].name.clone()];
            if e.probability < 1.0 {
                notes.push(format!("p {}", e.probability));
            }
            if !e.required {
                notes.push("optional".into());
            }
            text.push_str(&format!("{} ({})", spec.hops[e.hop].name, notes.join(", ")));
        }
        text
    };
    match pool {
        Some(pool) => Some(format!("{calls}; {pool}")),
        None if h.downstream_policy.is_some() || h.calls.is_empty() => None,
        None => Some(calls),
    }
}
