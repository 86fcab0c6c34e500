//! The metric catalogue: every scalar metric a run produces, defined once. Its name (the key in
//! `summary.json`, `summary.csv` and `sweep.csv`), its labels, unit, better direction and the
//! scopes it is measured in. The summary files, the terminal table, the HTML report, the charts
//! and the plain-language reading all name metrics through [`Metric`], so a rename is one edit
//! here and a metric that is produced but not catalogued (or the reverse) fails
//! `catalogue_matches_what_a_run_produces` in `metrics::summary`.

use serde::de::{Deserialize, Deserializer, Error as _};
use serde::{Serialize, Serializer};
use std::fmt;

/// What a value counts, and so how it is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A count per run (requests, attempts).
    Count,
    /// A dimensionless multiple, shown with `×`.
    Times,
    /// A share in [0, 1], shown ×100 with `%`.
    Share,
    /// Seconds, shown as a duration.
    Seconds,
    /// A rate per second.
    PerSecond,
    /// 1 or 0 per run (its mean is the share of runs).
    Flag,
}

impl Unit {
    /// Multiplier for display (100 for shares shown in %).
    pub const fn scale(self) -> f64 {
        match self {
            Unit::Share => 100.0,
            Unit::Count | Unit::Times | Unit::Seconds | Unit::PerSecond | Unit::Flag => 1.0,
        }
    }

    /// Written after a displayed value: `×`, `%`, ` s` (charts format it as a duration), or nothing.
    pub const fn suffix(self) -> &'static str {
        match self {
            Unit::Times => "×",
            Unit::Share => "%",
            Unit::Seconds => " s",
            Unit::Count | Unit::PerSecond | Unit::Flag => "",
        }
    }

    /// The suffix inside a table whose heading already names the unit (seconds say `(s)` there).
    pub const fn cell_suffix(self) -> &'static str {
        match self {
            Unit::Seconds => "",
            other @ (Unit::Count | Unit::Times | Unit::Share | Unit::PerSecond | Unit::Flag) => other.suffix(),
        }
    }
}

/// Which way is better, for rankings and findings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// Lower values are better (load, latency, losses).
    Lower,
    /// Higher values are better (successes).
    Higher,
    /// Neither: a description of the run (requests, events).
    Neither,
}

/// Where a metric is measured: whole system, per hop, per tenant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scopes {
    /// In the whole-system row (`metrics` of a variant).
    pub global: bool,
    /// In every hop's row.
    pub hop: bool,
    /// In every tenant's row.
    pub tenant: bool,
    /// In every replica's row (hops with `replicas` > 1; `replicas` in summary.json).
    pub replica: bool,
}

/// Where a metric is measured: the whole system, a hop or a tenant (not `model::budget::Scope`,
/// who shares a budget).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricScope {
    /// Whole system.
    Global,
    /// One hop.
    Hop,
    /// One tenant.
    Tenant,
}

impl Scopes {
    /// True when the metric is measured in `scope`.
    pub const fn has(self, scope: MetricScope) -> bool {
        match scope {
            MetricScope::Global => self.global,
            MetricScope::Hop => self.hop,
            MetricScope::Tenant => self.tenant,
        }
    }
}

const G: Scopes = Scopes { global: true, hop: false, tenant: false, replica: false };
const GHT: Scopes = Scopes { global: true, hop: true, tenant: true, replica: false };
const GH: Scopes = Scopes { global: true, hop: true, tenant: false, replica: false };
const GT: Scopes = Scopes { global: true, hop: false, tenant: true, replica: false };
const H: Scopes = Scopes { global: false, hop: true, tenant: false, replica: false };
// Replica scope.
const GHTR: Scopes = Scopes { replica: true, ..GHT };
const HR: Scopes = Scopes { replica: true, ..H };
const R: Scopes = Scopes { global: false, hop: false, tenant: false, replica: true };

/// A catalogued metric's definition.
#[derive(Clone, Copy, Debug)]
pub struct MetricDef {
    /// The name in every output file (ends in its unit where it has one: `_s`, `_per_s`).
    pub name: &'static str,
    /// Heading in the HTML summary table.
    pub label: &'static str,
    /// Column heading in the terminal table (short).
    pub short: &'static str,
    /// The metric inside a sentence of the reading.
    pub words: &'static str,
    /// What the value counts.
    pub unit: Unit,
    /// Which way is better.
    pub better: Better,
    /// Where it is measured.
    pub scopes: Scopes,
    /// What a null value means, e.g. `never recovered`.
    pub null_means: &'static str,
}

macro_rules! catalogue {
    ($($variant:ident: $name:literal, $label:literal, $short:literal, $words:literal, $unit:ident, $better:ident, $scopes:ident, $null:literal;)*) => {
        /// A scalar metric of a run (see the module documentation).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Metric {
            $(
                #[doc = concat!("`", $name, "`: ", $words, ".")]
                $variant,
            )*
        }

        impl Metric {
            /// Every catalogued metric, in catalogue order.
            pub const ALL: &'static [Metric] = &[$(Metric::$variant),*];

            /// The metric's definition.
            pub const fn def(self) -> &'static MetricDef {
                match self {
                    $(Metric::$variant => &MetricDef {
                        name: $name,
                        label: $label,
                        short: $short,
                        words: $words,
                        unit: Unit::$unit,
                        better: Better::$better,
                        scopes: $scopes,
                        null_means: $null,
                    },)*
                }
            }
        }
    };
}

catalogue! {
    Requests: "requests", "requests", "requests", "logical requests created", Count, Neither, GT, "no value";
    Attempts: "attempts", "attempts", "attempts", "attempts sent", Count, Lower, GHTR, "no value";
    FirstAttempts: "first_attempts", "first attempts", "first", "first tries", Count, Neither, H, "no value";
    Retries: "retries", "retries", "retries", "retries sent", Count, Lower, GHT, "no value";
    Amplification: "amplification", "amplification", "amplif.", "attempts per request", Times, Lower, GHT, "no value";
    Succeeded: "succeeded", "succeeded requests", "ok", "requests that succeeded", Count, Higher, GT, "no value";
    Rejected: "rejected", "rejected", "rejected", "requests rejected as non-retryable", Count, Lower, GT, "no value";
    Dlq: "dlq", "DLQ", "dlq", "requests dead-lettered", Count, Lower, GT, "no value";
    DlqDeadline: "dlq_deadline", "DLQ: deadline", "dlq dl", "requests dead-lettered at their deadline", Count, Lower, GT, "no value";
    DlqBudget: "dlq_budget", "DLQ: budget", "dlq bud", "requests dead-lettered by a retry budget", Count, Lower, GT, "no value";
    RetriesDenied: "retries_denied", "retries denied", "denied", "retries refused by a budget", Count, Neither, GT, "no value";
    LocalRejections: "local_rejections", "local rejections", "local", "attempts failed locally (breaker, throttle)", Count, Neither, GT, "no value";
    InFlight: "in_flight", "in flight", "in flight", "requests still in flight when the run stopped", Count, Lower, GT, "no value";
    SuccessRatio: "success_ratio", "succeeded", "success", "success ratio", Share, Higher, GT, "no value";
    Duplicates: "duplicates", "duplicates", "dup", "duplicated side effects", Count, Lower, GHT, "no value";
    DuplicatesTtlExpired: "duplicates_ttl_expired", "duplicates (TTL expired)", "dup ttl", "side effects re-executed after the idempotency key expired", Count, Lower, GHT, "no value";
    DuplicatesNoKey: "duplicates_no_key", "duplicates (no key)", "dup nokey", "side effects re-executed without an idempotency store", Count, Lower, GHT, "no value";
    Deduplicated: "deduplicated", "deduplicated", "dedup", "deliveries answered from a completed idempotency key (no side effect)", Count, Neither, GHT, "no value";
    InProgressConflicts: "in_progress_conflicts", "in-progress conflicts", "409", "deliveries refused because the key was still in progress", Count, Neither, GHT, "no value";
    Released: "released", "keys released", "released", "idempotency keys released after a failed handler", Count, Neither, GHT, "no value";
    PeakAttemptsPerS: "peak_attempts_per_s", "peak attempts/s", "peak/s", "peak attempts per second", PerSecond, Lower, GHT, "no value";
    CapacityPerS: "capacity_per_s", "capacity/s", "cap/s", "capacity in attempts per second", PerSecond, Neither, GH, "no value";
    PeakOverCapacity: "peak_over_capacity", "peak ÷ capacity", "peak/cap", "peak load ÷ capacity", Times, Lower, GH, "no value";
    PeakAfterPerS: "peak_after_per_s", "peak attempts/s after recovery", "peak after/s", "peak attempts per second after the trigger ended", PerSecond, Lower, GH, "no trigger";
    PeakAfterOverCapacity: "peak_after_over_capacity", "peak after recovery ÷ capacity", "after/cap", "peak load after the trigger ÷ capacity", Times, Lower, GH, "no trigger";
    TimeOverCapacityAfterS: "time_over_capacity_after_s", "time over capacity after (s)", "over cap s", "time above capacity after the trigger ended", Seconds, Lower, GH, "no trigger";
    BacklogPeak: "backlog_peak", "peak backlog", "backlog", "largest backlog (attempts queued, in service or waiting downstream)", Count, Lower, GH, "no value";
    BacklogClearedS: "backlog_cleared_s", "backlog cleared (s)", "cleared s", "time from the trigger's end until the backlog cleared and no retry was pending", Seconds, Lower, GH, "not cleared or not recovered";
    LatencySMean: "latency_s_mean", "mean latency of successes (s)", "mean s", "mean latency of succeeded requests", Seconds, Lower, GT, "no success";
    LatencySP50: "latency_s_p50", "p50 latency of successes (s)", "p50 s", "p50 latency of succeeded requests", Seconds, Lower, GT, "no success";
    LatencySP90: "latency_s_p90", "p90 latency of successes (s)", "p90 s", "p90 latency of succeeded requests", Seconds, Lower, GT, "no success";
    LatencySP99: "latency_s_p99", "p99 latency of successes (s)", "p99 s", "p99 latency of succeeded requests", Seconds, Lower, GT, "no success";
    LatencySP999: "latency_s_p999", "p99.9 latency of successes (s)", "p999 s", "p99.9 latency of succeeded requests", Seconds, Lower, GT, "no success";
    LatencySMax: "latency_s_max", "max latency of successes (s)", "max s", "longest latency of a succeeded request", Seconds, Lower, GT, "no success";
    OkReplies: "ok_replies", "ok replies", "ok", "success replies", Count, Neither, HR, "no value";
    Overflow: "overflow", "overflow", "overflow", "attempts refused by a full queue", Count, Lower, H, "no value";
    LostReplies: "lost_replies", "lost replies", "lost", "replies lost on the way back", Count, Lower, H, "no value";
    Shed: "shed", "shed", "shed", "attempts shed by a queue-length threshold or CoDel", Count, Neither, H, "no value";
    DroppedExpired: "dropped_expired", "dropped expired", "expired", "queued attempts dropped because their caller had given up", Count, Neither, H, "no value";
    RejectedByLimit: "rejected_by_limit", "rejected by limit", "limited", "attempts refused by admission control", Count, Neither, H, "no value";
    PoolWaitSMean: "pool_wait_s_mean", "mean pool wait (s)", "pool wait s", "mean wait for a connection of the hop's pool (hops with a pool)", Seconds, Lower, H, "no connection handed out";
    PoolWaitSP99: "pool_wait_s_p99", "p99 pool wait (s)", "pool p99 s", "p99 wait for a connection of the hop's pool (hops with a pool)", Seconds, Lower, H, "no connection handed out";
    PoolWaitersPeak: "pool_waiters_peak", "peak pool waiters", "pool waiters", "most calls waiting for a connection at once (hops with a pool)", Count, Lower, H, "no value";
    PoolAcquireTimeouts: "pool_acquire_timeouts", "pool acquire timeouts", "pool t/o", "calls that gave up waiting for a connection (hops with a pool)", Count, Lower, H, "no value";
    PoolQueueFull: "pool_queue_full", "pool queue full", "pool full", "calls refused because the pool's wait queue was full (hops with a pool)", Count, Lower, H, "no value";
    WorkersPeak: "workers_peak", "peak workers", "workers", "most workers serving at once (autoscaling)", Count, Neither, H, "no value";
    WorkerSeconds: "worker_seconds", "worker-seconds", "worker·s", "workers integrated over the traffic window (the capacity's cost)", Count, Lower, H, "no value";
    ReplicaShareMax: "replica_share_max", "largest replica share", "max share", "largest share of the hop's attempts one replica took (1 ÷ replicas when even; balanced hops)", Share, Lower, H, "no attempt";
    ReplicaOutOfRotationSMax: "replica_out_of_rotation_s_max", "longest out of rotation (s)", "max out s", "longest time one replica was out of the balancer's rotation (balanced hops)", Seconds, Neither, H, "no value";
    ScaleUps: "scale_ups", "scale-ups", "ups", "launched capacity units that came online", Count, Neither, H, "no value";
    ScaleUpAfterTriggerS: "scale_up_after_trigger_s", "first scale-up after trigger (s)", "up s", "time from the trigger's start until added capacity served", Seconds, Lower, H, "no scale-up after a trigger";
    CacheHits: "cache_hits", "cache hits", "hits", "cache lookups answered from a live entry", Count, Higher, H, "no value";
    CacheMisses: "cache_misses", "cache misses forwarded", "misses", "cache misses forwarded to the backend", Count, Lower, H, "no value";
    CacheCoalesced: "cache_coalesced", "coalesced waits", "coalesced", "cache misses that waited for another miss's fill of the same key", Count, Neither, H, "no value";
    CacheHitRatio: "cache_hit_ratio", "cache hit ratio", "hit ratio", "cache hit ratio (hits ÷ lookups)", Share, Higher, H, "not a cache";
    Hedges: "hedges", "hedges", "hedges", "hedge attempts sent (also in attempts)", Count, Neither, GH, "no value";
    Cancelled: "cancelled", "cancelled", "cancel", "attempts cancelled because their caller gave up", Count, Neither, H, "no value";
    ThroughputPerS: "throughput_per_s", "throughput/s", "thru/s", "services completed per second of the hop's serving span (the horizon, or to its last completion when it drained after it)", PerSecond, Neither, H, "no value";
    TimelyGoodputPerS: "timely_goodput_per_s", "goodput/s", "good/s", "success replies that reached a waiting caller, per second of the hop's serving span", PerSecond, Higher, H, "no value";
    GoodputRatio: "goodput_ratio", "goodput ÷ throughput", "good/thru", "share of completed services whose success reached a waiting caller", Share, Higher, GH, "nothing served";
    WastedTimedOutS: "wasted_timed_out_s", "wasted: timed out (s)", "w tmo s", "service run to the end for a caller that had timed out", Seconds, Lower, GH, "no value";
    WastedHedgeS: "wasted_hedge_s", "wasted: hedge loser (s)", "w hedge s", "service of the slower copy of a hedged attempt", Seconds, Lower, GH, "no value";
    WastedCancelledS: "wasted_cancelled_s", "wasted: cancelled (s)", "w cancel s", "service spent before a cancellation", Seconds, Lower, GH, "no value";
    WastedLostReplyS: "wasted_lost_reply_s", "wasted: lost reply (s)", "w lost s", "service whose reply was lost", Seconds, Lower, GH, "no value";
    Executions: "executions", "executions", "exec", "side effects executed", Count, Neither, H, "no value";
    CompletionTimeS: "completion_time_s", "completion (s)", "done s", "time of the last terminal state", Seconds, Lower, G, "requests still in flight";
    WastedWorkS: "wasted_work_s", "wasted work (s)", "wasted s", "service time spent after the caller gave up", Seconds, Lower, GH, "no value";
    BusyS: "busy_s", "worker time busy (s)", "busy s", "service time spent", Seconds, Neither, H, "no value";
    QueueWaitSMean: "queue_wait_s_mean", "mean queue wait (s)", "wait s", "mean queue wait", Seconds, Lower, H, "no service or still queued";
    RecoveryTimeS: "recovery_time_s", "recovery (s)", "recovery s", "recovery time after the last fault or spike", Seconds, Lower, G, "not recovered";
    Recovered: "recovered", "recovered", "recov.", "share of runs that recovered", Flag, Higher, G, "no value";
    Metastable: "metastable", "metastable", "metast.", "share of runs that never recovered", Flag, Lower, G, "no value";
    RecoveryUnobservable: "recovery_unobservable", "recovery not observable", "unobs.", "share of runs whose recovery could not be observed (no fault or load spike, a trigger until the horizon, nothing succeeded or was attempted after it, or the run was cut off before its backlog drained)", Flag, Neither, G, "no value";
    RecoveryCutOff: "recovery_cut_off", "recovery cut off", "cut off", "share of runs whose recovery could not be observed because a limit cut the run before its backlog drained", Flag, Neither, G, "no value";
    Events: "events", "events", "events", "events simulated", Count, Neither, G, "no value";
    Truncated: "truncated", "truncated", "trunc.", "share of runs cut short by a limit", Flag, Lower, G, "no value";
    FailedReplies: "failed_replies", "failed replies", "failed", "failure replies sent (5xx, 429, 4xx, overflow)", Count, Lower, R, "no value";
    TrafficShare: "traffic_share", "share of the hop's attempts", "share", "share of the hop's attempts the balancer sent to the replica", Share, Neither, R, "no value";
    Ejections: "ejections", "ejections", "ejected", "times outlier detection ejected the replica", Count, Neither, R, "no value";
    OutOfRotationS: "out_of_rotation_s", "out of rotation (s)", "out s", "time the replica was out of the balancer's rotation (ejected or unhealthy)", Seconds, Neither, R, "no value";
}

impl Metric {
    /// The name in output files.
    pub const fn name(self) -> &'static str {
        self.def().name
    }

    /// The metric named `name`, if catalogued.
    pub fn from_name(name: &str) -> Option<Metric> {
        Metric::ALL.iter().copied().find(|m| m.name() == name)
    }

    /// The 95% interval its mean gets ([`Interval`]): every catalogued metric is
    /// a value of its own that cannot be negative, so its unit decides (paired differences
    /// between variants, which can be negative, use the Student interval in `runner::compare`).
    pub const fn interval(self) -> Interval {
        match self.def().unit {
            Unit::Count | Unit::Times | Unit::Seconds | Unit::PerSecond => Interval::Positive,
            Unit::Share => Interval::Share,
            Unit::Flag => Interval::Flag,
        }
    }

    /// The metrics measured per replica, in catalogue order.
    pub fn in_replica_scope() -> impl Iterator<Item = Metric> {
        Metric::ALL.iter().copied().filter(|m| m.def().scopes.replica)
    }

    /// The metrics measured in `scope`, in catalogue order.
    pub fn in_scope(scope: MetricScope) -> impl Iterator<Item = Metric> {
        Metric::ALL.iter().copied().filter(move |m| m.def().scopes.has(scope))
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Metric {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Metric {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Metric::from_name(&name).ok_or_else(|| D::Error::custom(format!("unknown metric `{name}`")))
    }
}

/// Serde for `Vec<(Metric, T)>` as a JSON object keyed by metric name, in order
/// (`#[serde(with = "as_map")]`).
pub mod as_map {
    use super::Metric;
    use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
    use serde::ser::{SerializeMap, Serializer};
    use serde::Serialize;
    use std::fmt;
    use std::marker::PhantomData;

    /// Writes the pairs as an object in order.
    pub fn serialize<S: Serializer, T: Serialize>(pairs: &[(Metric, T)], s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(pairs.len()))?;
        for (m, v) in pairs {
            map.serialize_entry(m, v)?;
        }
        map.end()
    }

    /// Reads an object into pairs, in order; an unknown metric name is an error.
    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<(Metric, T)>, D::Error> {
        struct Pairs<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Pairs<T> {
            type Value = Vec<(Metric, T)>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object keyed by metric name")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(pair) = map.next_entry()? {
                    out.push(pair);
                }
                Ok(out)
            }
        }
        d.deserialize_map(Pairs(PhantomData))
    }
}

/// One scope's metrics as produced by a run, in catalogue terms (`metrics::summary` builds them).
pub type MetricRow = Vec<(Metric, Option<f64>)>;

/// Which 95% interval a metric's mean gets ([`Metric::interval`]; computed by the statistics' `interval`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interval {
    /// Any real value (paired differences): mean ± t · sd/√n.
    Student,
    /// A quantity that cannot be negative (counts, durations, rates, multiples). All values
    /// positive: Cox's interval for the mean of a log-normal quantity, exp(ȳ + s²/2 ± t ·
    /// √(s²/n + s⁴/(2(n − 1)))) with ȳ, s² the mean and variance of the logs — never below 0,
    /// and wider above than below as skewed positive data are. Some value 0, or the logs spread
    /// by more than 1 sd: the Student interval with its lower bound raised to 0 (a true mean is
    /// never below 0, so coverage is kept).
    Positive,
    /// A share in [0, 1] (a ratio per run): the Student interval kept within [0, 1] (coverage is
    /// kept: the true mean lies in [0, 1]).
    Share,
    /// A 0/1 per run, whose mean is the share of runs: Wilson's score interval for k of n.
    Flag,
}

impl Interval {
    /// The values a run can take: any real value, at least 0, or within [0, 1].
    pub const fn range(self) -> [f64; 2] {
        match self {
            Interval::Student => [f64::NEG_INFINITY, f64::INFINITY],
            Interval::Positive => [0.0, f64::INFINITY],
            Interval::Share | Interval::Flag => [0.0, 1.0],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_round_trip() {
        for (i, m) in Metric::ALL.iter().enumerate() {
            assert_eq!(Metric::from_name(m.name()), Some(*m));
            assert!(Metric::ALL[..i].iter().all(|o| o.name() != m.name()), "`{m}` catalogued twice");
            let json = serde_json::to_string(m).unwrap();
            assert_eq!(serde_json::from_str::<Metric>(&json).unwrap(), *m);
        }
        assert!(serde_json::from_str::<Metric>("\"no_such_metric\"").is_err());
    }
}
