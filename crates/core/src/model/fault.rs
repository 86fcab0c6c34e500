//! Faults injected at a hop during a time window `[from, to)`.

use crate::engine::time::de_nanos;
use crate::engine::Nanos;

/// What a fault does while active: the one definition of the fault kinds. A scenario's
/// `[[fault]]` is read into it through serde (`scenario::tagged`): each variant is a `kind`
/// (its snake_case name), its fields the parameters that kind needs; any other is refused.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
#[schemars(tag = "kind")]
pub enum FaultKind {
    /// A crash: fail fast with 503 (a refused connection), and the attempts the replica was
    /// serving when it went down end as `in_service` says.
    Outage {
        /// What happens to the attempts in service when the outage starts (and to queued ones
        /// a worker would take during it): `reset` by default.
        #[serde(default)]
        in_service: InService,
    },
    /// Never answer: the caller's attempt timeout fires.
    Hang,
    /// Answer 429 with a Retry-After.
    Throttle {
        /// The server's Retry-After.
        #[serde(deserialize_with = "de_nanos")]
        #[schemars(with = "crate::engine::duration_schema::DurationString")]
        retry_after: Nanos,
    },
    /// Answer 503 with probability `p`.
    ErrorRate {
        /// Probability of a 503, in [0, 1].
        p: f64,
    },
    /// Lose each reply with probability `p` after the hop did the work (and committed any side
    /// effect): the caller's attempt timeout fires and it retries.
    LostReply {
        /// Probability that a reply is lost, in [0, 1].
        p: f64,
    },
    /// Multiply service times by `factor`.
    Slow {
        /// Slow-down factor (> 0).
        factor: f64,
    },
    /// Only `workers` workers serve.
    Capacity {
        /// Workers available during the fault.
        workers: u32,
    },
    /// A cache hop's store is emptied at `from` and stores nothing until `to` (a cold restart;
    /// a short window is an instant flush).
    CacheFlush,
}

impl FaultKind {
    /// The scenario-file name of this fault kind.
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::Outage { .. } => "outage",
            FaultKind::Hang => "hang",
            FaultKind::Throttle { .. } => "throttle",
            FaultKind::ErrorRate { .. } => "error_rate",
            FaultKind::LostReply { .. } => "lost_reply",
            FaultKind::Slow { .. } => "slow",
            FaultKind::Capacity { .. } => "capacity",
            FaultKind::CacheFlush => "cache_flush",
        }
    }
}

/// What a crash (`outage`) does to the attempts a replica was serving when it went down.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, schemars::JsonSchema)]
#[schemars(rename_all = "snake_case")]
pub enum InService {
    /// The connection is reset: each fails at the crash instant with a 503 the caller sees.
    #[default]
    Reset,
    /// No reply ever comes: the caller waits for its attempt timeout (as `hang`).
    Lost,
    /// They finish and succeed as if nothing happened (the simulator's earlier rule).
    Complete,
}

impl<'de> serde::Deserialize<'de> for InService {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        [InService::Reset, InService::Lost, InService::Complete].into_iter().find(|m| m.name() == name).ok_or_else(
            || {
                serde::de::Error::custom(format!(
                    "is \"{name}\"; write \"reset\" (the default: the caller sees a connection reset at the crash), \
                 \"lost\" (no reply: the caller's attempt timeout fires) or \"complete\" (the work finishes as if \
                 nothing happened)"
                ))
            },
        )
    }
}

impl InService {
    /// The scenario-file name.
    pub fn name(self) -> &'static str {
        match self {
            InService::Reset => "reset",
            InService::Lost => "lost",
            InService::Complete => "complete",
        }
    }
}

/// A validated fault on hop `hop` over `[from, to)`.
#[derive(Clone, Debug)]
pub struct Fault {
    /// Index of the hop.
    pub hop: usize,
    /// The replica it hits (`None`: every replica of the hop).
    pub replica: Option<u32>,
    /// What it does.
    pub kind: FaultKind,
    /// Start (inclusive).
    pub from: Nanos,
    /// End (exclusive).
    pub to: Nanos,
}

impl Fault {
    /// Whether it crashes its hop: an `outage` whose `in_service` is not `complete` (the work in
    /// service, and the jobs waiting on their downstream calls, stop at `from`).
    pub fn is_crash(&self) -> bool {
        matches!(self.kind, FaultKind::Outage { in_service } if in_service != InService::Complete)
    }

    /// True while the fault is active at `now`.
    pub fn active_at(&self, now: Nanos) -> bool {
        self.from <= now && now < self.to
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_listed_once_under_its_name() {
        let all = [
            FaultKind::Outage { in_service: InService::Reset },
            FaultKind::Hang,
            FaultKind::Throttle { retry_after: 1 },
            FaultKind::ErrorRate { p: 0.1 },
            FaultKind::LostReply { p: 0.1 },
            FaultKind::Slow { factor: 2.0 },
            FaultKind::Capacity { workers: 1 },
            FaultKind::CacheFlush,
        ];
        let names: Vec<&str> = all.iter().map(FaultKind::name).collect();
        assert_eq!(names, crate::scenario::tagged::names::<FaultKind>());
    }
}
