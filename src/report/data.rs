//! What the charts and the report draw from, and the extra files that carry it to disk.
//!
//! Charts are a pure function of a run's files: `write_study` writes `scenario.json`,
//! `delays.csv` and `latency.csv` next to the summary, reads the directory back
//! ([`crate::report::readback`]) and renders from that. So `retrystorm plot DIR` reproduces the
//! same charts byte for byte, and the write path tests the read path on every run.

use crate::engine::time::{duration_words, ns_to_secs};
use crate::engine::Nanos;
use crate::metrics::catalogue::Metric;
use crate::metrics::stats::Stat;
use crate::model::budget::{BudgetKind, BudgetSpec, Scope};
use crate::model::policy::{DeadlineMode, RetryAfterMode};
use crate::model::{Arrival, Dist, FaultKind, Jitter, RetryPolicy, SimSpec};
use crate::report::format::csv_bytes;
use crate::runner::{MeanSeries, StatRow, Study};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use crate::metrics::delays::{delay_bin, delay_bin_low, DelayBin, DELAY_BINS_PER_DECADE};

/// Everything a run's report shows.
#[derive(Clone, Debug)]
pub struct ReportData {
    /// Scenario name.
    pub scenario: String,
    /// Master seed.
    pub seed: u64,
    /// Replications per variant.
    pub replications: u32,
    /// retrystorm version that produced the run.
    pub version: String,
    /// Width of a time-series bucket, in seconds.
    pub bucket_s: f64,
    /// Invariant warnings.
    pub warnings: Vec<String>,
    /// Per variant, in run order (which fixes each variant's colour).
    pub variants: Vec<VariantData>,
    /// What the verdict ranks by and requires.
    pub objective: crate::metrics::objective::Objective,
    /// Command line, overrides, scenario file and hash.
    pub provenance: crate::runner::Provenance,
}

/// One variant's results and configuration.
#[derive(Clone, Debug)]
pub struct VariantData {
    /// Variant name.
    pub name: String,
    /// What was simulated.
    pub setup: Setup,
    /// Whole-system metrics.
    pub metrics: StatRow,
    /// Per hop: name and metrics.
    pub hops: Vec<(String, StatRow)>,
    /// Per tenant: name and metrics.
    pub tenants: Vec<(String, StatRow)>,
    /// Replications that stopped early, with the reason.
    pub truncated: Vec<String>,
    /// Mean series per hop (only the active buckets).
    pub hop_series: Vec<MeanSeries>,
    /// Mean series per tenant (only the active buckets).
    pub tenant_series: Vec<MeanSeries>,
    /// Mean series per replica of the balanced hops (`replicas.csv`; empty without them).
    pub replica_series: Vec<crate::runner::ReplicaSeries>,
    /// Retry-delay histogram at hop 0 (all replications pooled).
    pub delays: Vec<DelayBin>,
    /// Latency of succeeded requests: (microseconds, count), all replications pooled.
    pub latency_us: Vec<(u64, u64)>,
}

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
    /// Replicas and balancer in words, for hops with more than one replica (issue 15).
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
    if t.is_zero() {
        return String::new();
    }
    format!(
        "; each retry +{} overhead, +{} lateness, +{} per 1,000 attempts/s (client timing)",
        duration_words(t.overhead),
        duration_words(t.lateness),
        duration_words(t.lateness_per_1000_per_s)
    )
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
        Jitter::Full | Jitter::Equal | Jitter::Decorrelated | Jitter::DecorrelatedV2 => jitter.name().to_string(),
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
    let kind = match &budget.kind {
        BudgetKind::AwsQuota { capacity, retry_cost, .. } => {
            format!("AWS retry quota ({capacity} tokens, {retry_cost} per retry)")
        }
        BudgetKind::GrpcThrottle { max_tokens, token_ratio } => {
            format!("gRPC throttle ({max_tokens} tokens, +{token_ratio} per success)")
        }
        BudgetKind::Finagle { percent, min_retries_per_s, .. } => {
            format!("Finagle budget ({}% of requests + {min_retries_per_s}/s)", percent * 100.0)
        }
        BudgetKind::Ratio { ratio, .. } => format!("retry ratio ≤ {ratio}"),
        BudgetKind::AdaptiveThrottle { k, .. } => format!("adaptive throttle (K = {k})"),
        BudgetKind::TokenBucket { capacity, per_request } => {
            format!("token bucket ({capacity} tokens, +{per_request} per request)")
        }
        BudgetKind::ConcurrentRetries { budget_percent, min_retry_concurrency } => {
            format!("concurrent retries ≤ max({budget_percent}% of active calls, {min_retry_concurrency})")
        }
    };
    format!("budget: {kind}, {}", scope_words(budget.scope))
}

fn scope_words(scope: Scope) -> &'static str {
    match scope {
        Scope::Client => "per client",
        Scope::Tenant => "per tenant",
        Scope::Global => "global",
    }
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

/// `scenario.json`: the configuration of every variant.
pub fn scenario_json(study: &Study) -> serde_json::Value {
    let variants: Vec<VariantSetup> =
        study.variants.iter().map(|v| VariantSetup { name: v.name.clone(), setup: setup_of(&v.spec) }).collect();
    serde_json::json!({"scenario": study.scenario, "variants": variants})
}

/// `delays.csv`: per variant and retry number, the histogram of delays before that retry.
pub fn delays_csv(study: &Study) -> Vec<u8> {
    csv_bytes(|w| {
        w.write_record(["variant", "retry", "delay_s_low", "delay_s_high", "count"])?;
        for v in &study.variants {
            for bin in v.retry_delays.bins() {
                let record = [
                    v.name.clone(),
                    bin.retry.to_string(),
                    bin.low_s.to_string(),
                    bin.high_s.to_string(),
                    bin.count.to_string(),
                ];
                w.write_record(&record)?;
            }
        }
        Ok(())
    })
}

/// `latency.csv`: per variant, the pooled latency histogram of succeeded requests.
pub fn latency_csv(study: &Study) -> Vec<u8> {
    csv_bytes(|w| {
        w.write_record(["variant", "latency_us", "count"])?;
        for v in &study.variants {
            for (us, count) in &v.latency_us {
                w.write_record([v.name.clone(), us.to_string(), count.to_string()])?;
            }
        }
        Ok(())
    })
}

impl ReportData {
    /// True when recovery is worth reporting: some variant has a fault window, or recovery was
    /// measured after a load spike (a non-zero time, or a replication that never recovered).
    pub fn shows_recovery(&self) -> bool {
        self.variants.iter().any(|v| {
            !v.setup.faults.is_empty()
                || v.mean(Metric::Metastable).is_some_and(|m| m > 0.0)
                || v.mean(Metric::RecoveryTimeS).is_some_and(|r| r > 0.0)
        })
    }
}

impl VariantData {
    /// The mean of `metric` (whole system).
    pub fn mean(&self, metric: Metric) -> Option<f64> {
        self.metrics.mean(metric)
    }

    /// Capacity of hop `h` in attempts per second, if finite.
    pub fn capacity_per_s(&self, h: usize) -> Option<f64> {
        self.setup.hops.get(h).and_then(|hop| hop.capacity_per_s)
    }

    /// The name as legends and tables show it (see [`label_of`]).
    pub fn label(&self) -> String {
        label_of(&self.name, &self.setup)
    }

    /// The variant as the verdict reads it.
    pub fn candidate(&self) -> crate::runner::verdict::Candidate<'_> {
        crate::runner::verdict::Candidate::new(&self.name, &self.metrics, &self.hops, &self.tenants)
            .with_setup(self.label(), condition_of(&self.setup))
    }

    /// Policies the clients use (distinct, in tenant order).
    pub fn client_policies(&self) -> Vec<&PolicyInfo> {
        let mut out: Vec<&PolicyInfo> = Vec::new();
        for t in &self.setup.tenants {
            if let Some(p) = self.setup.policies.iter().find(|p| p.name == t.policy) {
                if !out.iter().any(|q| q.name == p.name) {
                    out.push(p);
                }
            }
        }
        out
    }
}

/// One varied parameter: its path and values as typed (labels) with numeric positions when
/// every value is a number or a duration.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepAxis {
    /// Override path, e.g. `tenant.main.clients`.
    pub path: String,
    /// Values as typed.
    pub labels: Vec<String>,
    /// Numeric positions (durations in seconds), if every value has one.
    pub numbers: Option<Vec<f64>>,
}

/// A sweep's results, as `sweep.json` holds them.
#[derive(Clone, Debug)]
pub struct SweepData {
    /// Scenario name.
    pub scenario: String,
    /// Master seed.
    pub seed: u64,
    /// Replications per variant and cell.
    pub replications: u32,
    /// Variant names in order (fixes their colours).
    pub variants: Vec<String>,
    /// Varied parameters, in `--vary` order (the last varies fastest across cells).
    pub axes: Vec<SweepAxis>,
    /// (cell, variant index, metric) → statistic.
    pub stats: BTreeMap<(usize, usize, Metric), Stat>,
}

impl SweepData {
    /// The cell index of value indices `coords` (mixed radix, last axis fastest).
    pub fn cell(&self, coords: &[usize]) -> usize {
        coords.iter().zip(&self.axes).fold(0, |acc, (&c, axis)| acc * axis.labels.len() + c)
    }

    /// The statistic of `metric` for variant `v` in `cell`, if the sweep holds it.
    pub fn stat(&self, cell: usize, v: usize, metric: Metric) -> Option<&Stat> {
        self.stats.get(&(cell, v, metric))
    }
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
