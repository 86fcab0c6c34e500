//! Autoscaling in a run: the target-tracking controller of `model::autoscale` on the event
//! queue, and the capacity series and counters it leaves in the record.
//!
//! State changes only at events, so the metric's time integrals are exact: before each event
//! (`advance_to`), every scaled hop adds its busy workers, queue length (attempts inside the hop
//! not holding a worker) and workers times the time since the previous event.
//!
//! With `unit = "replicas"` the hop's `max` replicas all exist from the start and the balancer
//! routes to the first `Lb::active` of them: a scale-up raises `active` when the provisioning
//! delay has passed, a scale-down lowers it at once. A replica above `active` gets no new work
//! but serves what it holds (drains); nothing is dropped. The metric is read over the active
//! replicas (a draining replica is neither load nor capacity, as target tracking reads the
//! instances in service), and the capacity (`workers` series, worker-seconds) counts them.

use super::{Event, Simulation};
use crate::engine::Nanos;
use crate::model::{AutoscaleSpec, ScaleMetric, ScaleUnit};

/// The controller of one hop.
#[derive(Clone)]
pub(super) struct Scaler {
    spec: AutoscaleSpec,
    /// Units serving.
    online: u32,
    /// Units launched and still provisioning.
    pending: u32,
    /// When capacity last changed (a unit came online or the hop shrank).
    last_change: Nanos,
    /// Integrals since the last decision: busy workers, queued attempts, workers (× ns).
    busy_area: u128,
    queue_area: u128,
    workers_area: u128,
    /// Integral of workers over [0, horizon] so far, and the instant it covers up to.
    worker_ns: u128,
    marked: Nanos,
}

impl Scaler {
    pub(super) fn new(spec: &AutoscaleSpec) -> Box<Scaler> {
        Box::new(Scaler {
            spec: spec.clone(),
            online: spec.initial_units,
            pending: 0,
            last_change: 0,
            busy_area: 0,
            queue_area: 0,
            workers_area: 0,
            worker_ns: 0,
            marked: 0,
        })
    }

    fn workers(&self) -> u32 {
        self.online * self.spec.step
    }

    /// The state held from the last mark until `t`.
    fn accumulate(&mut self, t: Nanos, busy: u32, in_flight: u32, horizon: Nanos) {
        let dt = u128::from(t - self.marked);
        let workers = u128::from(self.workers());
        self.busy_area += u128::from(busy) * dt;
        self.queue_area += u128::from(in_flight.saturating_sub(busy)) * dt;
        self.workers_area += workers * dt;
        self.worker_ns += workers * u128::from(t.min(horizon) - self.marked.min(horizon));
        self.marked = t;
    }

    /// The metric's time average since the last decision, and a fresh window.
    fn take_metric(&mut self) -> f64 {
        let per = match self.spec.metric {
            ScaleMetric::Utilization => self.busy_area,
            ScaleMetric::QueuePerUnit => self.queue_area * u128::from(self.spec.step),
        };
        let value = if self.workers_area == 0 { 0.0 } else { per as f64 / self.workers_area as f64 };
        (self.busy_area, self.queue_area, self.workers_area) = (0, 0, 0);
        value
    }
}

impl Simulation<'_> {
    /// Controllers for the hops with `autoscale`, and their first decisions.
    pub(super) fn start_autoscaling(&mut self) {
        for hop in 0..self.spec.hops.len() {
            let Some(spec) = &self.spec.hops[hop].autoscale else { continue };
            // The controller lives in the hop's first replica (the only one when scaling workers).
            let srv = self.lbs[hop].base as usize;
            self.hops[srv].scaler = Some(Scaler::new(spec));
            self.scaled_hops.push(hop as u16);
            self.record.hops[hop].workers_peak = spec.initial_units * spec.step;
            self.queue.push(spec.evaluation_period, Event::AutoscaleTick { hop: hop as u16 });
        }
    }

    /// Before the event at `t`: the scaled hops' integrals up to `t`.
    pub(super) fn accumulate_scalers(&mut self, t: Nanos) {
        let horizon = self.spec.horizon;
        for &hop in &self.scaled_hops {
            let lb = &self.lbs[hop as usize];
            let (base, active) = (lb.base as usize, lb.active as usize);
            // A one-replica hop (scaling workers) is its base; otherwise its active replicas.
            let (busy, in_flight) = self.hops[base..base + active]
                .iter()
                .fold((0u32, 0u32), |(b, f), s| (b.saturating_add(s.busy), f.saturating_add(s.in_flight)));
            let state = &mut self.hops[base];
            state.scaler.as_mut().expect("a scaled hop has a scaler").accumulate(t, busy, in_flight, horizon);
        }
    }

    /// A decision: launch units above target, shrink below it (after the cooldown).
    pub(super) fn on_autoscale_tick(&mut self, hop: u16) {
        let h = hop as usize;
        let srv = self.lbs[h].base as usize;
        let now = self.now;
        let scaler = self.hops[srv].scaler.as_mut().expect("a scaled hop has a scaler");
        let metric = scaler.take_metric();
        let desired = scaler.spec.desired_units(scaler.online, metric);
        let (online, pending) = (scaler.online, scaler.pending);
        let (delay, cooldown, period) =
            (scaler.spec.scale_up_delay, scaler.spec.scale_down_cooldown, scaler.spec.evaluation_period);
        if desired > online + pending {
            let units = desired - online - pending;
            scaler.pending += units;
            self.queue.push(now.saturating_add(delay), Event::CapacityReady { hop, units });
        } else if desired < online && pending == 0 && now - scaler.last_change >= cooldown {
            scaler.online = desired;
            scaler.last_change = now;
            self.capacity_moved(h);
        }
        let s = self.hops[srv].scaler.as_ref().expect("scaled");
        let (seed, replication) = (self.seed, self.replication);
        assert!(
            s.online + s.pending <= s.spec.max_units && s.online >= s.spec.min_units,
            "hop {h}: {} online + {} provisioning units outside [{}, {}] (seed {seed}, replication {replication})",
            s.online,
            s.pending,
            s.spec.min_units,
            s.spec.max_units
        );
        // Keep deciding while traffic may come or work is left; an idle, drained run ends.
        if now < self.spec.horizon || !self.queue.is_empty() {
            self.queue.push(now.saturating_add(period), Event::AutoscaleTick { hop });
        }
    }

    /// Launched units start serving: the queue is served up to the new capacity.
    pub(super) fn on_capacity_ready(&mut self, hop: u16, units: u32) {
        let h = hop as usize;
        let srv = self.lbs[h].base as usize;
        let now = self.now;
        let scaler = self.hops[srv].scaler.as_mut().expect("a scaled hop has a scaler");
        scaler.pending -= units;
        scaler.online += units;
        scaler.last_change = now;
        self.capacity_moved(h);
        let counters = &mut self.record.hops[h];
        counters.scale_ups += 1;
        if now >= self.first_fault_start && counters.scale_up_after_trigger_ns.is_none() {
            counters.scale_up_after_trigger_ns = Some(now - self.first_fault_start);
        }
        while self.hops[srv].busy < self.effective_workers(srv) {
            let Some(next) = self.next_queued(h, srv) else { break };
            self.start_service(next);
        }
    }

    /// The controller's online units take effect: the one replica's workers, or the replicas
    /// the balancer routes to (those above drain); the capacity series and peak follow.
    fn capacity_moved(&mut self, hop: usize) {
        let b = self.bucket();
        let srv = self.lbs[hop].base as usize;
        let scaler = self.hops[srv].scaler.as_ref().expect("a scaled hop has a scaler");
        let (unit, online, workers) = (scaler.spec.unit, scaler.online, scaler.workers());
        match unit {
            ScaleUnit::Workers => self.hops[srv].workers = workers,
            ScaleUnit::Replicas => {
                let lb = &mut self.lbs[hop];
                let (seed, replication) = (self.seed, self.replication);
                assert!(
                    online >= 1 && online <= lb.count,
                    "hop {hop}: {online} replicas online but {} allocated (seed {seed}, replication {replication})",
                    lb.count
                );
                lb.active = online;
            }
        }
        self.record.hop_series[hop][b].workers = workers;
        let counters = &mut self.record.hops[hop];
        counters.workers_peak = counters.workers_peak.max(workers);
    }

    /// At the end of a run: the capacity series carried forward (constant for hops without
    /// autoscaling) and the worker-seconds over [0, horizon].
    pub(super) fn fill_capacity_series(&mut self) {
        let horizon = self.spec.horizon;
        for (hop, series) in self.record.hop_series.iter_mut().enumerate() {
            // Capacity is the hop's workers over the replicas serving.
            let mut last = self.spec.hops[hop].workers * self.spec.hops[hop].replicas_at_start();
            for bucket in series.iter_mut() {
                if bucket.workers == 0 {
                    bucket.workers = last;
                }
                last = bucket.workers;
            }
            let counters = &mut self.record.hops[hop];
            let srv = self.lbs[hop].base as usize;
            counters.worker_ns = match self.hops[srv].scaler.as_mut() {
                Some(s) => {
                    s.accumulate(self.now.max(s.marked), 0, 0, horizon);
                    let rest = u128::from(horizon.saturating_sub(self.now)) * u128::from(s.workers());
                    s.worker_ns + rest
                }
                None => {
                    let h = &self.spec.hops[hop];
                    counters.workers_peak = h.workers * h.replicas_at_start();
                    u128::from(counters.workers_peak) * u128::from(horizon)
                }
            };
        }
    }
}
