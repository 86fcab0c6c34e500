//! The validated description of one simulation: what `scenario` produces and `sim` consumes.

use super::dist::Dist;
use super::fault::{Fault, FaultKind, InService};
use super::overload::OverloadSpec;
use super::policy::RetryPolicy;
use crate::engine::Nanos;
use crate::metrics::capacity::{capacity_per_s, CapacityInputs};
use crate::metrics::{HopShape, RunShape};

/// How a tenant's clients generate logical requests.
#[derive(Clone, Debug)]
pub enum Arrival {
    /// Each client sends `requests_per_client` requests, the first at U(start, start+spread),
    /// each next one as soon as the previous reached a terminal state.
    Herd {
        /// Earliest first request.
        start: Nanos,
        /// Width of the window of first requests.
        spread: Nanos,
        /// Requests per client (≥ 1).
        requests_per_client: u32,
    },
    /// Open loop, Poisson process at `rate_per_s` for the whole tenant.
    Poisson {
        /// Requests per second (> 0).
        rate_per_s: f64,
    },
    /// Each client sends its next request `think` after the previous one ends.
    Closed {
        /// First request at U(start, start+spread).
        start: Nanos,
        /// Width of the window of first requests.
        spread: Nanos,
        /// Pause between a terminal state and the next request.
        think: Nanos,
    },
    /// Piecewise-constant Poisson rate: `(from, rate_per_s)` steps sorted by `from`, first at 0.
    Profile {
        /// Steps of the rate.
        steps: Vec<(Nanos, f64)>,
    },
    /// Replayed from a production trace (timestamps or per-interval rates), see `model::trace`.
    Trace(super::trace::TraceArrival),
    /// Poisson arrivals whose rate rises (or falls) linearly from `from_rate_per_s` at 0 to
    /// `rate_per_s` at `over`, then stays there. Not a load spike (no recovery trigger).
    Ramp {
        /// Rate at t = 0 (≥ 0).
        from_rate_per_s: f64,
        /// Rate from `over` on (> 0).
        rate_per_s: f64,
        /// Length of the ramp (> 0).
        over: Nanos,
    },
}

/// A population of clients sharing arrivals, a retry policy and a payload mix.
#[derive(Clone, Debug)]
pub struct TenantSpec {
    /// Scenario name.
    pub name: String,
    /// Number of clients (≥ 1).
    pub clients: u32,
    /// Arrival pattern.
    pub arrival: Arrival,
    /// Index into [`SimSpec::policies`].
    pub policy: usize,
    /// Share of requests answered with a non-retryable 4xx.
    pub invalid_fraction: f64,
    /// Share of requests that always fail with a retryable 5xx at the effect hop.
    pub poison_fraction: f64,
    /// What the tenant's client process adds to each retry's backoff (zero: nothing).
    pub timing: ClientTiming,
}

/// The client process's own delays on a retry (`client_timing`; docs/MODEL.md, "Client
/// timing"): a real client fires a retry later than its backoff says, by its per-retry
/// overhead, its timers' lateness, and a part that grows with how busy the process is — the
/// attempts it has sent in the current time-series bucket so far, per second — which is the same
/// for every client of a herd at once, so backoff without jitter carries it into the wall.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientTiming {
    /// Added to every retry: the work between the failure and the next attempt.
    pub overhead: Nanos,
    /// Added to every retry: the timer's lateness on an idle process.
    pub lateness: Nanos,
    /// Added per 1,000 attempts/s the tenant is sending (the current bucket's count so far,
    /// divided by the bucket's width).
    pub lateness_per_1000_per_s: Nanos,
    /// The process's work on each attempt its clients start (first tries and retries), one
    /// attempt at a time: an attempt due at `t` is sent at `max(t, when the process is free) +
    /// work` — a saturated client sends at most one attempt per `work`, in the order they fell
    /// due, so attempts due together leave one after another.
    pub work: Nanos,
}

impl ClientTiming {
    /// Whether it adds nothing (the default: today's results).
    pub fn is_zero(&self) -> bool {
        *self == ClientTiming::default()
    }

    /// Whether it shifts retries (a part other than `work` is set).
    pub fn shifts_retries(&self) -> bool {
        !ClientTiming { work: 0, ..*self }.is_zero()
    }

    /// The delay added to a retry while the tenant sends `attempts_per_s`.
    pub fn added(&self, attempts_per_s: f64) -> Nanos {
        let busy = (self.lateness_per_1000_per_s as f64 * attempts_per_s / 1_000.0).min(Nanos::MAX as f64) as Nanos;
        self.overhead.saturating_add(self.lateness).saturating_add(busy)
    }
}

/// What a delivery gets when it finds its key claimed by a delivery still being processed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InProgress {
    /// A retryable conflict (HTTP 409) at once: the caller retries later.
    Conflict,
    /// It holds its worker until the original finishes, then gets the stored result (or runs
    /// itself if the original failed and released the key).
    Wait,
}

/// An idempotency store at a hop (docs/MODEL.md, "Idempotency and duplicates").
#[derive(Clone, Debug)]
pub struct IdempotencySpec {
    /// How long a key lives after the effect commits.
    pub ttl: Nanos,
    /// What a duplicate gets while the original is in progress.
    pub in_progress: InProgress,
}

/// A service in the chain.
#[derive(Clone, Debug)]
pub struct HopSpec {
    /// Scenario name.
    pub name: String,
    /// Concurrency (≥ 1).
    pub workers: u32,
    /// Waiting room; a full queue answers 503 at once.
    pub queue_limit: u32,
    /// Service time.
    pub service: Dist,
    /// One-way network delay to reach the hop (the reply takes another draw).
    pub network: Dist,
    /// Policy this hop uses to call the next hop in a chain (index into [`SimSpec::policies`]);
    /// `None` in a call graph, where [`HopSpec::calls`] names each edge's policy.
    pub downstream_policy: Option<usize>,
    /// Idempotency store, if any.
    pub idempotency: Option<IdempotencySpec>,
    /// True when the hop's service commits a side effect (counted for duplicates).
    pub effect: bool,
    /// Per-tenant queues served round-robin (`fair`) instead of one FIFO queue.
    pub fair: bool,
    /// What the hop is: a queueing service, an optimistic-concurrency register or a cache.
    pub kind: HopKind,
    /// Queue discipline, shedding and admission control (default: none).
    pub overload: OverloadSpec,
    /// Replicas behind a load balancer, each with the fields above (default: one).
    pub replicas: super::replicas::ReplicaSpec,
    // Call graphs and connection pools (`model::graph`).
    /// The downstream calls made while serving an attempt (a chain hop: one edge to the next hop).
    pub calls: Vec<super::graph::Edge>,
    /// Whether `calls` are made one after another or all at once.
    pub calls_mode: super::graph::CallsMode,
    /// The connection pool the downstream calls go through, if any.
    pub pool: Option<super::graph::PoolSpec>,
    /// Service time × a function of utilisation (`model::load_latency`).
    pub load_latency: Option<super::load_latency::LoadLatency>,
    /// Target-tracking autoscaling of `workers` or of the replicas (`model::autoscale`).
    /// With `unit = replicas`, [`HopSpec::replicas`]' count is the most replicas (`max`): every
    /// one has its state from the start, and [`HopSpec::replicas_at_start`] of them serve.
    pub autoscale: Option<super::autoscale::AutoscaleSpec>,
}

/// What a hop is (`kind` in the scenario file).
#[derive(Clone, Debug)]
pub enum HopKind {
    /// A queueing service: workers, a queue, service times (the default).
    Service,
    /// `kind = "occ"`: an optimistic-concurrency register (a read and a conditional write)
    /// instead of a queueing service.
    Occ,
    /// `kind = "cache"`: a cache in front of the next hop (its backend).
    Cache(super::cache::CacheSpec),
}

impl HopSpec {
    /// The cache of a `kind = "cache"` hop.
    pub fn cache(&self) -> Option<&super::cache::CacheSpec> {
        match &self.kind {
            HopKind::Cache(c) => Some(c),
            HopKind::Service | HopKind::Occ => None,
        }
    }

    /// Whether the hop is an optimistic-concurrency register (`kind = "occ"`).
    pub fn is_occ(&self) -> bool {
        match self.kind {
            HopKind::Occ => true,
            HopKind::Service | HopKind::Cache(_) => false,
        }
    }

    /// Replicas serving at the start: the `replicas` of the file (the count, unless autoscaling
    /// of replicas allocated more).
    pub fn replicas_at_start(&self) -> u32 {
        match &self.autoscale {
            Some(a) if a.unit == super::autoscale::ScaleUnit::Replicas => a.initial_units,
            _ => self.replicas.count,
        }
    }
}

/// Everything a run needs, validated: nothing here can fail at run time.
#[derive(Clone, Debug)]
pub struct SimSpec {
    /// Scenario name.
    pub name: String,
    /// No new arrivals at or after this instant.
    pub horizon: Nanos,
    /// The run stops here even if requests are still in flight (2 × horizon by default).
    pub drain_limit: Nanos,
    /// Width of a time-series bucket.
    pub bucket: Nanos,
    /// Hard limit on processed events; hitting it marks the run truncated.
    pub max_events: u64,
    /// How long calm must hold before the system counts as recovered.
    pub recovery_hold: Nanos,
    /// Tenants, in file order.
    pub tenants: Vec<TenantSpec>,
    /// Hops, in chain order (hop 0 receives client requests).
    pub hops: Vec<HopSpec>,
    /// Retry policies referenced by tenants and hops.
    pub policies: Vec<RetryPolicy>,
    /// Faults, sorted by start.
    pub faults: Vec<Fault>,
}

impl SimSpec {
    /// Index of the tenant named `name`.
    pub fn tenant_index(&self, name: &str) -> Option<usize> {
        self.tenants.iter().position(|t| t.name == name)
    }

    /// Index of the hop named `name`.
    pub fn hop_index(&self, name: &str) -> Option<usize> {
        self.hops.iter().position(|h| h.name == name)
    }

    /// The kinds of the faults active at hop `hop` at `now`.
    pub fn active_faults(&self, hop: usize, now: Nanos) -> impl Iterator<Item = &FaultKind> {
        self.faults.iter().filter(move |f| f.hop == hop && f.active_at(now)).map(|f| &f.kind)
    }

    /// The kinds of the faults active on replica `replica` of hop `hop` at `now` (faults on the
    /// whole hop and those aimed at this replica).
    pub fn active_faults_on(&self, hop: usize, replica: u32, now: Nanos) -> impl Iterator<Item = &FaultKind> {
        self.faults
            .iter()
            .filter(move |f| f.hop == hop && f.replica.is_none_or(|r| r == replica) && f.active_at(now))
            .map(|f| &f.kind)
    }

    /// A service on replica `replica` of hop `hop` from `start` to `end`: the instant a crash
    /// (`outage` with `in_service` other than `complete`) stops it and what it does, if one does:
    /// `start` when one is down already (a crashed replica serves nothing), else the first one
    /// starting in (start, end].
    pub fn crash_during(&self, hop: usize, replica: u32, start: Nanos, end: Nanos) -> Option<(Nanos, InService)> {
        self.faults
            .iter()
            .filter(|f| f.hop == hop && f.replica.is_none_or(|r| r == replica))
            .filter_map(|f| match f.kind {
                FaultKind::Outage { in_service } if in_service != InService::Complete => {
                    if f.active_at(start) {
                        Some((start, in_service))
                    } else if start < f.from && f.from <= end {
                        Some((f.from, in_service))
                    } else {
                        None
                    }
                }
                FaultKind::Outage { .. }
                | FaultKind::Hang
                | FaultKind::Throttle { .. }
                | FaultKind::ErrorRate { .. }
                | FaultKind::LostReply { .. }
                | FaultKind::Slow { .. }
                | FaultKind::Capacity { .. }
                | FaultKind::CacheFlush => None,
            })
            .min_by_key(|&(at, _)| at)
    }

    /// Whether some fault crashes hop `hop` (an `outage` whose `in_service` is not `complete`).
    pub fn crashes(&self, hop: usize) -> bool {
        self.faults.iter().any(|f| f.hop == hop && f.is_crash())
    }

    /// End of the last fault window (0 without faults).
    pub fn last_fault_end(&self) -> Nanos {
        self.faults.iter().map(|f| f.to).max().unwrap_or(0)
    }

    /// End of the last load spike: a profile step whose rate exceeds the profile's first rate.
    pub fn last_spike_end(&self) -> Option<Nanos> {
        let spikes = self.tenants.iter().filter_map(|t| match &t.arrival {
            Arrival::Profile { steps } => {
                let base = steps[0].1;
                (0..steps.len())
                    .filter(|&i| steps[i].1 > base)
                    .map(|i| steps.get(i + 1).map_or(self.horizon, |s| s.0))
                    .max()
            }
            Arrival::Herd { .. }
            | Arrival::Poisson { .. }
            | Arrival::Closed { .. }
            | Arrival::Trace(_)
            | Arrival::Ramp { .. } => None,
        });
        spikes.max()
    }

    /// The end of the last trigger (fault or load spike) recovery is measured from, if any.
    pub fn trigger_end(&self) -> Option<Nanos> {
        let fault = (!self.faults.is_empty()).then(|| self.last_fault_end());
        fault.max(self.last_spike_end())
    }

    /// Start of the first trigger (fault or spike), for the pre-trigger baseline.
    pub fn first_trigger_start(&self) -> Option<Nanos> {
        let spike_start = self.tenants.iter().filter_map(|t| match &t.arrival {
            Arrival::Profile { steps } => steps.iter().find(|s| s.1 > steps[0].1).map(|s| s.0),
            Arrival::Herd { .. }
            | Arrival::Poisson { .. }
            | Arrival::Closed { .. }
            | Arrival::Trace(_)
            | Arrival::Ramp { .. } => None,
        });
        self.first_fault_start().into_iter().chain(spike_start).min()
    }

    /// Start of the first fault window, if any.
    pub fn first_fault_start(&self) -> Option<Nanos> {
        self.faults.iter().map(|f| f.from).min()
    }

    /// Number of time-series buckets covering `[0, drain_limit]`.
    pub fn bucket_count(&self) -> usize {
        (self.drain_limit / self.bucket) as usize + 1
    }

    /// What the scalar metrics need of this spec, as plain data.
    pub fn run_shape(&self) -> RunShape {
        RunShape {
            bucket: self.bucket,
            horizon: self.horizon,
            recovery_hold: self.recovery_hold,
            trigger_end: self.trigger_end(),
            first_trigger_start: self.first_trigger_start(),
            hops: (0..self.hops.len())
                .map(|i| {
                    let h = &self.hops[i];
                    // Load-dependent latency: a lone request (u = 1/workers) sets the recovery
                    // baseline's floor.
                    let alone = h.load_latency.map_or(1.0, |l| l.factor_at(1, h.workers));
                    HopShape {
                        workers: h.workers.saturating_mul(h.replicas_at_start()),
                        capacity_per_s: self.capacity_per_s(i),
                        service_mean_alone_ns: h.service.mean_ns(1) * alone,
                    }
                })
                .collect(),
            tenants: self.tenants.len(),
            failing_by_design: self
                .tenants
                .iter()
                .map(|t| (t.invalid_fraction + t.poison_fraction).min(1.0))
                .fold(0.0, f64::max),
        }
    }

    /// Hop `hop`'s capacity in attempts per second, by the one definition
    /// ([`crate::metrics::capacity::capacity_per_s`]): its workers, service time (load-dependent
    /// latency applied), the time its workers are held waiting on downstream calls, and its
    /// replicas serving at the start. `None` for a cache (no worker limit) or a hop that takes no
    /// time.
    pub fn capacity_per_s(&self, hop: usize) -> Option<f64> {
        let h = &self.hops[hop];
        let inputs = CapacityInputs {
            workers: h.cache().is_none().then_some(h.workers),
            replicas: h.replicas_at_start(),
            service_ns: |k: u32| h.service.mean_ns(k) * h.load_latency.map_or(1.0, |l| l.factor_at(k, h.workers)),
            constant_service: h.load_latency.is_none() && !matches!(h.service, super::dist::Dist::Load { .. }),
            held_ns: self.held_downstream_ns(hop),
        };
        capacity_per_s(&inputs)
    }

    /// Mean time (ns) a worker of hop `hop` stays held waiting on its downstream calls when they
    /// answer at once: per stage, the longest of its calls' (probability × response time), summed
    /// over stages. A call's response time is the callee's network delay there and back, its
    /// service time alone (a cache: its lookup time) and its own downstream hold.
    pub fn held_downstream_ns(&self, hop: usize) -> f64 {
        let h = &self.hops[hop];
        let mut total = 0.0;
        let mut stage: Option<(u32, f64)> = None;
        for e in &h.calls {
            let response = e.probability * self.response_ns(e.hop);
            stage = match stage {
                Some((s, longest)) if s == e.stage => Some((s, longest.max(response))),
                Some((_, longest)) => {
                    total += longest;
                    Some((e.stage, response))
                }
                None => Some((e.stage, response)),
            };
        }
        total + stage.map_or(0.0, |(_, longest)| longest)
    }

    /// First attempts per second each hop is offered before any fault or load spike, from the
    /// tenants' open-loop rates (Poisson, a profile's first step, a ramp's final rate, a trace's
    /// mean) carried down the calls by their probabilities; `None` when some tenant's rate is not
    /// set by its arrivals (herd, closed loop). Retries are not counted: this is the load of a
    /// healthy system.
    pub fn offered_per_s(&self) -> Option<Vec<f64>> {
        let mut entry = 0.0;
        for t in &self.tenants {
            entry += match &t.arrival {
                Arrival::Poisson { rate_per_s } | Arrival::Ramp { rate_per_s, .. } => *rate_per_s,
                Arrival::Profile { steps } => steps[0].1,
                Arrival::Trace(trace) => trace.mean_rate_per_s(),
                Arrival::Herd { .. } | Arrival::Closed { .. } => return None,
            };
        }
        // The calls form no cycle (validated): as many passes as hops settle every rate.
        let mut rates = vec![0.0; self.hops.len()];
        for _ in 0..self.hops.len() {
            let mut next = vec![0.0; self.hops.len()];
            next[0] = entry;
            for (i, h) in self.hops.iter().enumerate() {
                for e in &h.calls {
                    next[e.hop] += rates[i] * e.probability;
                }
            }
            rates = next;
        }
        Some(rates)
    }

    /// Mean time (ns) from sending an attempt to hop `hop` to its reply when nothing queues.
    fn response_ns(&self, hop: usize) -> f64 {
        let h = &self.hops[hop];
        let alone = h.load_latency.map_or(1.0, |l| l.factor_at(1, h.workers));
        let service = h.service.mean_ns(1) * if h.cache().is_some() { 1.0 } else { alone };
        2.0 * h.network.mean_ns(0) + service + if h.cache().is_some() { 0.0 } else { self.held_downstream_ns(hop) }
    }
}
