//! Call graphs: the downstream calls a hop makes while serving an attempt, stage by
//! stage (the calls of one stage in parallel, a join at its end), each made with its edge's
//! probability and retried with its edge's policy. `sequence` is one call per stage, `parallel`
//! one stage. A chain hop has one required edge with probability 1, so its job is exactly the
//! old "call the next hop, finish with its outcome".

use super::{Event, Phase, Reply, Simulation};
use crate::engine::Handle;
use crate::model::graph::edge_coin;

/// A job's progress through its hop's downstream calls (kept in its [`super::Attempt`]).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct JobCalls {
    /// Calls of the current stage made and not yet ended.
    pending: u8,
    /// Index of the first edge of the next stage.
    next: u8,
    /// The worst outcome of a required call so far.
    outcome: Outcome,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    #[default]
    Ok,
    /// A required call failed (retryable for the caller: 5xx).
    Failed,
    /// A required call was rejected (non-retryable 4xx, passed on as such).
    Rejected,
}

impl Outcome {
    fn reply(self) -> Reply {
        match self {
            Outcome::Ok => Reply::Ok,
            Outcome::Failed => Reply::Failed,
            Outcome::Rejected => Reply::Rejected,
        }
    }
}

impl Simulation<'_> {
    /// Whether the attempt keyed `key` makes edge `i` of `hop` (its probability's coin).
    fn makes_call(&self, hop: usize, i: usize, key: u64) -> bool {
        let p = self.spec.hops[hop].calls[i].probability;
        p >= 1.0 || edge_coin(key, i) < p
    }

    /// The handler reached its downstream calls (`hop` has at least one edge).
    pub(super) fn start_calls(&mut self, handle: Handle, hop: usize) {
        self.start_stage(handle, hop, 0);
    }

    /// Queues the start of every crash (an `outage` whose `in_service` is `reset` or `lost`) of
    /// a hop that makes downstream calls, within the run: [`Simulation::on_crash_downstream`].
    pub(super) fn schedule_downstream_crashes(&mut self) {
        for f in &self.spec.faults {
            if f.is_crash() && !self.spec.hops[f.hop].calls.is_empty() && f.from <= self.spec.drain_limit {
                self.queue.push(f.from, Event::CrashDownstream { hop: f.hop as u16 });
            }
        }
    }

    /// A crash of hop `hop` starts: every job of the crashed replicas still waiting on its
    /// downstream calls is stopped, the process that made them being gone. Its calls are
    /// cancelled (their connections reset: every attempt they wait on is sent a cancel, as
    /// `cancel_on_timeout` does), an idempotency key it holds is released, and the job ends as
    /// work in service does in that crash: `reset`, its caller gets a 503 now; `lost`, no reply
    /// (the caller's timeout fires). The jobs are found by one pass over the attempts, in slot
    /// order, when the crash starts.
    pub(super) fn on_crash_downstream(&mut self, hop: usize) {
        let now = self.now;
        let waiting: Vec<Handle> = self
            .attempts
            .iter_handles()
            .filter(|(_, a)| a.hop as usize == hop && a.phase == Phase::Downstream)
            .map(|(h, _)| h)
            .collect();
        for handle in waiting {
            // Stopping one job can end another in the same instant (a cancel that frees a
            // worker, a connection handed on): each is looked at again when its turn comes.
            let Some(a) = self.attempts.get(handle).filter(|a| a.phase == Phase::Downstream) else { continue };
            let srv = a.server as usize;
            let Some((_, in_service)) = self.crash_during(hop, srv, now, now).filter(|&(at, _)| at == now) else {
                continue;
            };
            let children = self.links.take_children(handle);
            self.cancel_calls(&children);
            let Some(a) = self.attempts.get_mut(handle) else { continue };
            if std::mem::take(&mut a.holds_key) {
                let (tenant, request_id) = (a.tenant as usize, a.request_id);
                self.settle_key(hop, tenant, request_id, false);
            }
            self.crashed_in_service(handle, hop, srv, in_service);
        }
    }

    /// Makes the calls of the first stage from edge `from` on that makes any (each edge's coin),
    /// or finishes the job when no stage is left.
    fn start_stage(&mut self, handle: Handle, hop: usize, mut from: usize) {
        let a = self.attempts.get(handle).expect("live");
        let key = a.draw_key;
        let edges = &self.spec.hops[hop].calls;
        while from < edges.len() {
            let stage = edges[from].stage;
            let end = (from..edges.len()).find(|&i| edges[i].stage != stage).unwrap_or(edges.len());
            let chosen: Vec<usize> = (from..end).filter(|&i| self.makes_call(hop, i, key)).collect();
            if chosen.is_empty() {
                from = end;
                continue;
            }
            // Every call of the stage is counted before any starts: one may end at once (a local
            // rejection with no retry left), and the stage must not end before the others ran.
            let calls = &mut self.attempts.get_mut(handle).expect("live").calls;
            calls.pending = chosen.len() as u8;
            calls.next = end as u8;
            for i in chosen {
                let edge = &self.spec.hops[hop].calls[i];
                self.call_downstream(handle, edge.hop, edge.policy);
            }
            return;
        }
        let outcome = self.attempts.get(handle).expect("live").calls.outcome;
        self.finish_job(handle, outcome.reply());
    }

    /// The downstream call of job `parent` to hop `called` ended with `reply`. When it was the
    /// last of its stage, the next stage starts, unless a required call failed: then the job
    /// fails and the later stages are not made.
    pub(super) fn call_ended(&mut self, parent: Handle, called: usize, reply: Reply) {
        let (seed, replication) = (self.seed, self.replication);
        let a = self.attempts.get_mut(parent).expect("a job is live while its calls are");
        let hop = a.hop as usize;
        let edges = &self.spec.hops[hop].calls;
        let i = edges.iter().position(|e| e.hop == called).expect("edges to one hop are unique (validated)");
        if edges[i].required {
            let this = match reply {
                Reply::Ok => Outcome::Ok,
                Reply::Rejected => Outcome::Rejected,
                Reply::Failed | Reply::Refused | Reply::Throttled(_) | Reply::Timeout | Reply::LocalReject => {
                    Outcome::Failed
                }
            };
            a.calls.outcome = a.calls.outcome.max(this);
        }
        a.calls.pending = a.calls.pending.checked_sub(1).unwrap_or_else(|| {
            panic!("hop {hop}: a downstream call ended with none pending (seed {seed}, replication {replication})")
        });
        if a.calls.pending > 0 {
            return;
        }
        match a.calls.outcome {
            Outcome::Ok => {
                let next = usize::from(a.calls.next);
                self.start_stage(parent, hop, next);
            }
            failed @ (Outcome::Failed | Outcome::Rejected) => self.finish_job(parent, failed.reply()),
        }
    }
}
