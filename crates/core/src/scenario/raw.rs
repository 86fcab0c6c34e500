//! The scenario file as written: serde structs that mirror the TOML, before validation.
//!
//! Every table refuses unknown keys. Counts are read as signed integers and rates as floats so
//! that validation, not serde, explains a negative or absurd value.

use super::tagged;
use crate::model::{BudgetKind, FaultKind};
use schemars::JsonSchema;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// A duration written as a human string ("100ms", "10s", "72h"), in nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dur(pub u64);

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = DurText::deserialize(deserializer)?;
        parse_duration(&text.0).map(Dur).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Dur {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        crate::engine::duration_schema::DurationString::schema_name()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        crate::engine::duration_schema::DurationString::json_schema(generator)
    }
}

/// A duration string kept as text (for values such as `ttl = "window+6h"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DurText(pub String);

impl<'de> Deserialize<'de> for DurText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        crate::engine::time::de_duration_text(deserializer).map(DurText)
    }
}

pub use crate::engine::time::parse_duration;

/// The whole file.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    /// Scenario name (non-empty); the default output directory is `output/<name>/`.
    pub name: String,
    /// Master seed, an integer ≥ 0 (1).
    pub seed: Option<i64>,
    /// No new arrivals at or after this instant.
    pub horizon: Dur,
    /// Width of a time-series bucket (horizon/1000, at least 1 ms).
    pub bucket: Option<Dur>,
    /// Independent runs, 1…10,000 (1).
    pub replications: Option<i64>,
    /// Hard limit on events taken from the queue (2·10⁹); reaching it marks the run truncated.
    pub max_events: Option<i64>,
    /// The run stops here even with requests in flight (2 × horizon).
    pub drain_limit: Option<Dur>,
    /// How long calm must hold for `recovery_time_s` (5 s).
    pub recovery_hold: Option<Dur>,
    /// `[[tenant]]`: groups of clients, each with its arrivals and retry policy.
    #[serde(default)]
    pub tenant: Vec<RawTenant>,
    /// `[policy.NAME]`: retry policies by name.
    #[serde(default)]
    pub policy: BTreeMap<String, RawPolicy>,
    /// `[[hop]]`: the services, in call order (or a call graph).
    #[serde(default)]
    pub hop: Vec<RawHop>,
    /// `[[fault]]`: what goes wrong, where and when.
    #[serde(default)]
    pub fault: Vec<RawFault>,
    /// `[[variant]]`: named overrides compared on common random numbers.
    #[serde(default)]
    pub variant: Vec<RawVariant>,
    /// Directory that relative data and import paths are read from (the scenario file's).
    #[serde(skip)]
    pub base_dir: std::path::PathBuf,
    pub objective: Option<RawObjective>,
    pub map: Option<RawMap>,
}

/// `[map]`: the axes and judgement `retrystorm map` uses when its flags do not give them.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawMap {
    /// `PATH=LO..HI` of the x axis (the one bisected).
    pub x: Option<String>,
    /// `PATH=LO..HI` of the y axis.
    pub y: Option<String>,
    /// Points per axis.
    pub points: Option<i64>,
    /// `linear` or `log`.
    pub x_spacing: Option<String>,
    /// `linear` or `log`.
    pub y_spacing: Option<String>,
    /// How long after the trigger a run is judged.
    pub hold: Option<Dur>,
    /// The span before that instant the rates are summed over.
    pub window: Option<Dur>,
    /// Goodput below this share of the arriving requests is overloaded.
    pub goodput_share: Option<f64>,
    /// Most replications per cell.
    pub replications: Option<i64>,
    /// Bisection steps per row.
    pub bisect: Option<i64>,
    /// Run to the horizon and measure the time to leave a storm.
    pub leave: Option<bool>,
}

/// `[objective]`: ranking criteria and requirements for the verdict.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawObjective {
    #[serde(default)]
    pub rank: Vec<String>,
    #[serde(default)]
    pub require: Vec<String>,
    /// Tie thresholds per ranked metric: `"0.5pp"`, `"10%"` or a number (kept as TOML values so
    /// a bad one is refused with the field's name).
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, serde_json::Value>")]
    pub tie: std::collections::BTreeMap<String, toml::Value>,
}

/// `[[tenant]]`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTenant {
    /// Unique, no `.`.
    pub name: String,
    /// Clients, 1…50,000,000 over all tenants.
    pub clients: i64,
    /// How the clients' requests arrive.
    pub arrival: RawArrival,
    /// The name of a `[policy.NAME]`.
    pub policy: String,
    /// Share of requests answered at the first hop with a non-retryable 4xx (0).
    pub invalid_fraction: Option<f64>,
    /// Share of requests whose payload fails with a retryable 5xx at the effect hop, every time (0).
    pub poison_fraction: Option<f64>,
    /// What the client process adds to each retry (`{ overhead, lateness, lateness_per_1000_per_s }`).
    pub client_timing: Option<RawClientTiming>,
}

/// `client_timing = { overhead = "0.2ms", lateness = "1ms", lateness_per_1000_per_s = "2ms" }`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawClientTiming {
    pub overhead: Option<Dur>,
    pub lateness: Option<Dur>,
    pub lateness_per_1000_per_s: Option<Dur>,
    pub work: Option<Dur>,
}

/// `arrival = { kind = "…", … }`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawArrival {
    pub kind: String,
    pub start: Option<Dur>,
    pub spread: Option<Dur>,
    pub requests_per_client: Option<i64>,
    pub rate_per_s: Option<f64>,
    pub think: Option<Dur>,
    pub steps: Option<Vec<RawStep>>,
    /// `kind = "trace"`: the CSV file and how to read and replay it (see `scenario::trace`).
    pub file: Option<String>,
    pub format: Option<String>,
    pub column: Option<String>,
    pub time_column: Option<String>,
    pub unit: Option<String>,
    pub interval: Option<Dur>,
    pub per: Option<String>,
    pub time_scale: Option<f64>,
    pub volume_scale: Option<f64>,
    #[serde(rename = "loop")]
    pub looped: Option<bool>,
    /// `kind = "ramp"`: the rate at 0 and the ramp's length.
    pub from_rate_per_s: Option<f64>,
    pub over: Option<Dur>,
}

impl RawArrival {
    /// Every field but `kind`, by its name in the file, with whether it is written. The
    /// destructuring names every field: a new one fails to compile until it is listed here
    /// (and read by some kind in `kind_fields::ArrivalFields`, which a test checks).
    pub fn written(&self) -> [(&'static str, bool); 18] {
        let RawArrival {
            kind: _,
            start,
            spread,
            requests_per_client,
            rate_per_s,
            think,
            steps,
            file,
            format,
            column,
            time_column,
            unit,
            interval,
            per,
            time_scale,
            volume_scale,
            looped,
            from_rate_per_s,
            over,
        } = self;
        [
            ("start", start.is_some()),
            ("spread", spread.is_some()),
            ("requests_per_client", requests_per_client.is_some()),
            ("rate_per_s", rate_per_s.is_some()),
            ("think", think.is_some()),
            ("steps", steps.is_some()),
            ("file", file.is_some()),
            ("format", format.is_some()),
            ("column", column.is_some()),
            ("time_column", time_column.is_some()),
            ("unit", unit.is_some()),
            ("interval", interval.is_some()),
            ("per", per.is_some()),
            ("time_scale", time_scale.is_some()),
            ("volume_scale", volume_scale.is_some()),
            ("loop", looped.is_some()),
            ("from_rate_per_s", from_rate_per_s.is_some()),
            ("over", over.is_some()),
        ]
    }
}

/// One step of a `profile` arrival.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawStep {
    pub from: Dur,
    pub rate_per_s: f64,
}

/// `[policy.NAME]`. With `preset`, the preset's values fill every field left out.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPolicy {
    pub preset: Option<String>,
    pub jitter: Option<String>,
    pub base: Option<Dur>,
    pub multiplier: Option<f64>,
    pub cap: Option<Dur>,
    pub max_attempts: Option<i64>,
    pub deadline: Option<Dur>,
    pub attempt_timeout: Option<Dur>,
    pub deadline_mode: Option<String>,
    pub honor_retry_after: Option<RawRetryAfter>,
    pub throttle_base: Option<Dur>,
    pub ratio: Option<f64>,
    pub schedule: Option<Vec<Dur>>,
    pub budget: Option<RawBudget>,
    pub breaker: Option<RawBreaker>,
    /// A real retry config to start from (gRPC JSON, Envoy YAML, AWS profile, resilience4j YAML).
    pub import: Option<String>,
    /// Which entry of the imported file: `service/method`, a route or instance, a profile.
    pub select: Option<String>,
    /// Failures retried: any of "transient", "throttling", "timeout" (default: all).
    pub retry_on: Option<Vec<String>>,
    /// Hedged requests.
    pub hedge: Option<RawHedge>,
    /// Cancel the work started downstream when the caller gives up.
    pub cancel_on_timeout: Option<bool>,
    /// Finagle's automatic requeues of refused attempts (needs a `finagle` budget).
    pub requeue: Option<bool>,
    /// What a caller does with a reply to an attempt it timed out on: "ignore" or "accept".
    pub late_reply: Option<String>,
    /// Which AWS SDK's standard mode `preset = "aws-standard"` follows (`presets::AWS_SDKS`).
    pub sdk: Option<String>,
}

impl RawPolicy {
    /// Every field, by its name in the file, with whether it is written. The destructuring names
    /// every field: a new one fails to compile until it is listed here.
    pub fn written(&self) -> [(&'static str, bool); 23] {
        let RawPolicy {
            preset,
            jitter,
            base,
            multiplier,
            cap,
            max_attempts,
            deadline,
            attempt_timeout,
            deadline_mode,
            honor_retry_after,
            throttle_base,
            ratio,
            schedule,
            budget,
            breaker,
            import,
            select,
            retry_on,
            hedge,
            cancel_on_timeout,
            requeue,
            late_reply,
            sdk,
        } = self;
        [
            ("preset", preset.is_some()),
            ("jitter", jitter.is_some()),
            ("base", base.is_some()),
            ("multiplier", multiplier.is_some()),
            ("cap", cap.is_some()),
            ("max_attempts", max_attempts.is_some()),
            ("deadline", deadline.is_some()),
            ("attempt_timeout", attempt_timeout.is_some()),
            ("deadline_mode", deadline_mode.is_some()),
            ("honor_retry_after", honor_retry_after.is_some()),
            ("throttle_base", throttle_base.is_some()),
            ("ratio", ratio.is_some()),
            ("schedule", schedule.is_some()),
            ("budget", budget.is_some()),
            ("breaker", breaker.is_some()),
            ("import", import.is_some()),
            ("select", select.is_some()),
            ("retry_on", retry_on.is_some()),
            ("hedge", hedge.is_some()),
            ("cancel_on_timeout", cancel_on_timeout.is_some()),
            ("requeue", requeue.is_some()),
            ("late_reply", late_reply.is_some()),
            ("sdk", sdk.is_some()),
        ]
    }
}

/// `hedge = { after = "50ms" | "p95", max_share = 0.1 }`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHedge {
    pub after: String,
    pub max_share: Option<f64>,
    pub throttle: Option<RawHedgeThrottle>,
}

/// `throttle = { max_tokens = 10, token_ratio = 0.1, charge_unanswered = false }` inside `hedge`
/// (gRFC A6).
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHedgeThrottle {
    pub max_tokens: Option<f64>,
    pub token_ratio: Option<f64>,
    pub charge_unanswered: Option<bool>,
}

/// `honor_retry_after = true | false | "at_least" | "exact" | "aws"`.
#[derive(Clone, Debug, Deserialize, PartialEq, JsonSchema)]
#[serde(untagged)]
pub enum RawRetryAfter {
    /// true = "at_least", false = ignore.
    Flag(bool),
    /// A named mode.
    Mode(String),
}

/// `budget = { kind = "aws_quota", scope = "tenant", … }`: the scope, and the kind with its
/// fields, read into `model::BudgetKind` at validation (`scenario::tagged`), which refuses a field
/// the kind does not take.
#[derive(Clone, Debug, Default)]
pub struct RawBudget {
    pub scope: Option<String>,
    /// `kind` and the kind's fields, as written.
    pub kind: toml::Table,
}

impl<'de> Deserialize<'de> for RawBudget {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = RawBudget;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a budget table")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawBudget, A::Error> {
                let mut budget = RawBudget::default();
                while let Some(key) = map.next_key_seed(tagged::Key(budget_keys()))? {
                    match key.as_str() {
                        "scope" => budget.scope = Some(map.next_value()?),
                        _ => {
                            budget.kind.insert(key, map.next_value()?);
                        }
                    }
                }
                Ok(budget)
            }
        }
        deserializer.deserialize_struct("RawBudget", budget_keys(), Fields)
    }
}

/// The keys of a budget table: `kind`, `scope` and every field of a [`BudgetKind`].
fn budget_keys() -> &'static [&'static str] {
    static KEYS: OnceLock<Vec<&'static str>> = OnceLock::new();
    KEYS.get_or_init(|| tagged::keys_with::<BudgetKind>(&["kind", "scope"]))
}

/// `breaker = { scope = "client", window = "10s", threshold = 0.5, … }`.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawBreaker {
    pub scope: Option<String>,
    pub window: Option<Dur>,
    pub threshold: Option<f64>,
    pub min_calls: Option<i64>,
    pub open_for: Option<Dur>,
    pub probes: Option<i64>,
    pub retries_only: Option<bool>,
}

/// A distribution table: `{ dist = "constant", mean = "1ms" }`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawDist {
    pub dist: String,
    pub mean: Option<Dur>,
    pub sd: Option<Dur>,
    pub base: Option<Dur>,
    pub per_inflight: Option<Dur>,
    /// `dist = "empirical"`: a histogram CSV (bucket upper bounds and counts) …
    pub file: Option<String>,
    pub unit: Option<String>,
    pub cumulative: Option<bool>,
    /// … or percentiles (also `dist = "lognormal"` fitted through two of them).
    pub min: Option<Dur>,
    pub p50: Option<Dur>,
    pub p75: Option<Dur>,
    pub p90: Option<Dur>,
    pub p95: Option<Dur>,
    pub p99: Option<Dur>,
    pub p999: Option<Dur>,
}

impl RawDist {
    /// Every field but `dist`, by name, with whether it is written. The destructuring names
    /// every field: a new one fails to compile until it is listed here (and read by some kind in
    /// `kind_fields::DistFields`, which a test checks).
    pub fn written(&self) -> [(&'static str, bool); 14] {
        let RawDist {
            dist: _,
            mean,
            sd,
            base,
            per_inflight,
            file,
            unit,
            cumulative,
            min,
            p50,
            p75,
            p90,
            p95,
            p99,
            p999,
        } = self;
        [
            ("mean", mean.is_some()),
            ("sd", sd.is_some()),
            ("base", base.is_some()),
            ("per_inflight", per_inflight.is_some()),
            ("file", file.is_some()),
            ("unit", unit.is_some()),
            ("cumulative", cumulative.is_some()),
            ("min", min.is_some()),
            ("p50", p50.is_some()),
            ("p75", p75.is_some()),
            ("p90", p90.is_some()),
            ("p95", p95.is_some()),
            ("p99", p99.is_some()),
            ("p999", p999.is_some()),
        ]
    }
}

/// `idempotency = { ttl = "78h" }` or `{ ttl = "window+6h", in_progress = "wait" }`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawIdempotency {
    pub ttl: DurText,
    pub in_progress: Option<String>,
}

/// `[[hop]]`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHop {
    pub name: String,
    pub workers: Option<i64>,
    pub queue_limit: Option<i64>,
    pub kind: Option<String>,
    pub service: Option<RawDist>,
    pub network: Option<RawDist>,
    pub downstream_policy: Option<String>,
    pub idempotency: Option<RawIdempotency>,
    pub effect: Option<bool>,
    pub scheduling: Option<String>,
    pub discipline: Option<String>,
    pub codel_target: Option<Dur>,
    pub codel_interval: Option<Dur>,
    pub shed_queue_length: Option<i64>,
    pub shed_retries_queue_length: Option<i64>,
    pub retry_priority: Option<bool>,
    pub admission: Option<RawAdmission>,
    // Replicas behind a load balancer (`scenario/replicas.rs`).
    pub replicas: Option<i64>,
    pub balancer: Option<String>,
    pub health_check: Option<RawHealthCheck>,
    pub outlier_detection: Option<RawOutlierDetection>,
    /// Call graph (`scenario::graph`): the hop's downstream calls and how they run.
    pub calls: Option<Vec<RawCall>>,
    pub calls_mode: Option<String>,
    /// The connection pool the hop's downstream calls go through.
    pub pool: Option<RawPool>,
    /// `load_latency = { kind = "exponential", rate = 4 }`: the kind and its fields, read into
    /// `model::LoadLatency` at validation.
    #[schemars(with = "Option<crate::model::LoadLatency>")]
    pub load_latency: Option<toml::Table>,
    pub autoscale: Option<RawAutoscale>,
    /// `kind = "cache"`: the cache's table (scenario/cache.rs).
    pub cache: Option<RawCache>,
}

impl RawHop {
    /// Every field but `name` and `kind`, by its name in the file, with whether it is written.
    /// The destructuring names every field: a new one fails to compile until it is listed here
    /// (and read by some hop kind in `hop_kind::HopFields`, which a test checks).
    pub fn written(&self) -> [(&'static str, bool); 25] {
        let RawHop {
            name: _,
            kind: _,
            workers,
            queue_limit,
            service,
            network,
            downstream_policy,
            idempotency,
            effect,
            scheduling,
            discipline,
            codel_target,
            codel_interval,
            shed_queue_length,
            shed_retries_queue_length,
            retry_priority,
            admission,
            replicas,
            balancer,
            health_check,
            outlier_detection,
            calls,
            calls_mode,
            pool,
            load_latency,
            autoscale,
            cache,
        } = self;
        [
            ("workers", workers.is_some()),
            ("queue_limit", queue_limit.is_some()),
            ("service", service.is_some()),
            ("network", network.is_some()),
            ("downstream_policy", downstream_policy.is_some()),
            ("idempotency", idempotency.is_some()),
            ("effect", effect.is_some()),
            ("scheduling", scheduling.is_some()),
            ("discipline", discipline.is_some()),
            ("codel_target", codel_target.is_some()),
            ("codel_interval", codel_interval.is_some()),
            ("shed_queue_length", shed_queue_length.is_some()),
            ("shed_retries_queue_length", shed_retries_queue_length.is_some()),
            ("retry_priority", retry_priority.is_some()),
            ("admission", admission.is_some()),
            ("replicas", replicas.is_some()),
            ("balancer", balancer.is_some()),
            ("health_check", health_check.is_some()),
            ("outlier_detection", outlier_detection.is_some()),
            ("calls", calls.is_some()),
            ("calls_mode", calls_mode.is_some()),
            ("pool", pool.is_some()),
            ("load_latency", load_latency.is_some()),
            ("autoscale", autoscale.is_some()),
            ("cache", cache.is_some()),
        ]
    }
}

/// `cache = { keys = 100, key_distribution = "uniform" | { zipf = 1.1 }, ttl = "5s",
/// ttl_jitter = 0.1, capacity = 80, eviction = "lru" | "fifo", coalesce = false, hit_latency = … }`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCache {
    pub keys: i64,
    #[schemars(with = "Option<serde_json::Value>")]
    pub key_distribution: Option<toml::Value>,
    pub ttl: Option<Dur>,
    pub ttl_jitter: Option<f64>,
    pub capacity: Option<i64>,
    pub eviction: Option<String>,
    pub coalesce: Option<bool>,
    pub hit_latency: Option<RawDist>,
}

/// `health_check = { interval = "1s", unhealthy_threshold = 2, healthy_threshold = 1 }`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHealthCheck {
    pub interval: Dur,
    pub unhealthy_threshold: Option<i64>,
    pub healthy_threshold: Option<i64>,
}

/// `outlier_detection = { consecutive_errors = 5, base_ejection_time = "30s", ... }`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawOutlierDetection {
    pub consecutive_errors: Option<i64>,
    pub base_ejection_time: Option<Dur>,
    pub max_ejection_time: Option<Dur>,
    pub max_ejection_percent: Option<f64>,
}

/// One edge of a call graph: `{ hop = "db", policy = "svc-db", probability = 1.0, required = true }`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawCall {
    pub hop: String,
    pub policy: String,
    pub probability: Option<f64>,
    pub required: Option<bool>,
    pub stage: Option<i64>,
}

/// `pool = { size = 20, acquire_timeout = "1s", queue_limit = 1000 }`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawPool {
    pub size: i64,
    pub acquire_timeout: Option<Dur>,
    pub queue_limit: Option<i64>,
}

/// `admission = { kind = "aimd", initial = 50, ... , reject = "429", retry_after = "1s" }`: the
/// reply to a refused attempt, and the kind with its fields, read into
/// `overload::AdmissionKind` at validation (`scenario::tagged`), which refuses a field the kind
/// does not take.
#[derive(Clone, Debug, Default)]
pub struct RawAdmission {
    pub reject: Option<String>,
    pub retry_after: Option<Dur>,
    /// `kind` and the kind's fields, as written.
    pub kind: toml::Table,
}

impl<'de> Deserialize<'de> for RawAdmission {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut kind = toml::Table::deserialize(deserializer)?;
        let reject = kind.remove("reject").map(String::deserialize).transpose().map_err(D::Error::custom)?;
        let retry_after = kind.remove("retry_after").map(Dur::deserialize).transpose().map_err(D::Error::custom)?;
        Ok(RawAdmission { reject, retry_after, kind })
    }
}

/// `autoscale = { target = 0.6, max = 10, … }` or `[hop.autoscale]`.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawAutoscale {
    pub metric: Option<String>,
    pub target: Option<f64>,
    pub evaluation_period: Option<Dur>,
    pub scale_up_delay: Option<Dur>,
    pub scale_down_cooldown: Option<Dur>,
    pub min: Option<i64>,
    pub max: Option<i64>,
    pub step: Option<i64>,
    /// `"replicas"` or `"workers"` (default: replicas when the hop has `replicas` > 1).
    pub unit: Option<String>,
}

/// `[[fault]]`: where and when, and the kind with its parameters, read into `model::FaultKind`
/// at validation (`scenario::tagged`), which refuses a field the kind does not take.
#[derive(Clone, Debug)]
pub struct RawFault {
    pub hop: String,
    pub from: Dur,
    pub to: Dur,
    /// The replica it hits (0-based; absent: the whole hop).
    pub replica: Option<i64>,
    /// `kind` and the kind's fields, as written.
    pub kind: toml::Table,
}

impl<'de> Deserialize<'de> for RawFault {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> Visitor<'de> for Fields {
            type Value = RawFault;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a fault table")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawFault, A::Error> {
                let (mut hop, mut from, mut to, mut replica, mut kind) = (None, None, None, None, toml::Table::new());
                while let Some(key) = map.next_key_seed(tagged::Key(fault_keys()))? {
                    match key.as_str() {
                        "hop" => hop = Some(map.next_value()?),
                        "from" => from = Some(map.next_value()?),
                        "to" => to = Some(map.next_value()?),
                        "replica" => replica = Some(map.next_value()?),
                        _ => {
                            kind.insert(key, map.next_value()?);
                        }
                    }
                }
                let missing = <A::Error as serde::de::Error>::missing_field;
                Ok(RawFault {
                    hop: hop.ok_or_else(|| missing("hop"))?,
                    from: from.ok_or_else(|| missing("from"))?,
                    to: to.ok_or_else(|| missing("to"))?,
                    replica,
                    kind,
                })
            }
        }
        deserializer.deserialize_struct("RawFault", fault_keys(), Fields)
    }
}

/// The keys of a fault table: `hop`, `kind`, `from`, `to`, `replica` and every field of a [`FaultKind`].
fn fault_keys() -> &'static [&'static str] {
    static KEYS: OnceLock<Vec<&'static str>> = OnceLock::new();
    KEYS.get_or_init(|| tagged::keys_with::<FaultKind>(&["hop", "kind", "from", "to", "replica"]))
}

/// `[[variant]]`: a name and overrides applied on top of the base scenario.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawVariant {
    pub name: String,
    #[serde(default)]
    #[schemars(with = "BTreeMap<String, serde_json::Value>")]
    pub set: BTreeMap<String, toml::Value>,
}
