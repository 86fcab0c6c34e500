//! A run that can stop part-way, be copied, and go on with fresh random numbers: what multilevel
//! splitting needs (`runner/rare.rs`; docs/MODEL.md, "Rare events").
//!
//! [`Simulation::run_to_end`] stays the one loop of ordinary runs; [`Simulation::run_until`] is
//! its counterpart for runs that stop when a progress function reaches a level. It takes events
//! only from the queue, so it serves scenarios whose arrivals are all queued events (Poisson,
//! profiles, ramps, traces); herds and closed-loop clients, whose first requests the ordinary
//! loop holds outside the queue, are refused by [`branchable`].

use super::{Rngs, Simulation};
use crate::engine::{mix64, stream, Nanos, StreamKind};
use crate::model::{Arrival, SimSpec};

/// What [`Simulation::run_until`] watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProgressFn {
    /// Attempts inside hop 0 (queued, in service, or waiting on its downstream calls).
    Backlog,
    /// Retries waiting on a backoff timer, at every hop.
    RetriesPending,
}

/// Why [`Simulation::run_until`] stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// The progress function reached the level.
    Level,
    /// The next event is after the time limit (or the drain limit).
    Time,
    /// No event is left.
    Empty,
    /// `max_events` was reached.
    Events,
}

/// Whether `spec` can be split: every tenant's arrivals are queued events.
pub fn branchable(spec: &SimSpec) -> Result<(), String> {
    for t in &spec.tenants {
        match t.arrival {
            Arrival::Herd { .. } | Arrival::Closed { .. } => {
                return Err(format!(
                    "tenant `{}` has a herd or closed-loop arrival; splitting needs arrivals that are a stream (poisson, profile, ramp or trace)",
                    t.name
                ))
            }
            Arrival::Poisson { .. } | Arrival::Profile { .. } | Arrival::Trace(_) | Arrival::Ramp { .. } => {}
        }
    }
    Ok(())
}

impl Simulation<'_> {
    /// Schedules what a run starts with (arrival streams, probes, capacity restores,
    /// autoscaling), for [`Simulation::run_until`]; call once, on a scenario [`branchable`] allows.
    pub fn begin(&mut self) {
        self.schedule_poisson_starts();
        self.schedule_probes();
        self.schedule_capacity_restores();
        self.schedule_downstream_crashes();
        self.start_autoscaling();
    }

    /// The progress function's value now.
    pub fn progress(&self, f: ProgressFn) -> u64 {
        match f {
            ProgressFn::Backlog => {
                let replicas = self.spec.hops[0].replicas.count as usize;
                self.hops.iter().take(replicas).map(|h| u64::from(h.in_flight)).sum()
            }
            ProgressFn::RetriesPending => self.calls_riding as u64,
        }
    }

    /// The clock.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Events taken from the queue so far.
    pub fn events(&self) -> u64 {
        self.record.events
    }

    /// Processes events until `f` reaches `level`, the next event would be after `until` (or
    /// the drain limit), none is left, or `max_events` is hit; can be called again to go on.
    pub fn run_until(&mut self, f: ProgressFn, level: u64, until: Nanos) -> Stopped {
        loop {
            if self.progress(f) >= level {
                return Stopped::Level;
            }
            let Some(at) = self.queue.peek_time() else { return Stopped::Empty };
            if at > until || at > self.spec.drain_limit {
                return Stopped::Time;
            }
            if self.record.events >= self.spec.max_events {
                return Stopped::Events;
            }
            self.record.events += 1;
            let (t, event) = self.queue.pop().expect("peeked");
            self.advance_to(t);
            self.dispatch(event);
        }
    }

    /// Draws every random number from here on from streams keyed by `key` as well as the run's
    /// seed: a copy of a run reseeded with its own key goes on independently of the others (the
    /// state so far is kept; only the future differs).
    pub fn reseed(&mut self, key: u64) {
        let seed = mix64(self.seed ^ mix64(key.wrapping_add(0x9e37_79b9_7f4a_7c15)));
        self.rngs = Rngs::new(seed, self.replication, self.spec.tenants.len(), self.spec.hops.len());
        for (hop, lb) in self.lbs.iter_mut().enumerate() {
            if lb.rng.is_some() {
                lb.rng = Some(stream(seed, self.replication, StreamKind::Balancer, hop as u32));
            }
        }
        for (hop, cache) in self.caches.iter_mut().enumerate() {
            if let Some(c) = cache {
                c.rng = stream(seed, self.replication, StreamKind::Cache, hop as u32);
            }
        }
    }
}
