//! What a cancel does to an attempt, decided from the phase the attempt is in when the cancel
//! arrives (docs/MODEL.md, "Cancellation propagation"). The simulation applies it
//! (`sim/cancel.rs`): the queue, the worker, the downstream calls, the counters.

use super::Phase;
use crate::engine::Nanos;

/// The effect of a cancel on one attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CancelAction {
    /// Not cancelled: past its service (replying, or waiting on an in-progress idempotency key),
    /// or at a register, whose attempts are never stopped. Its caller only stopped waiting.
    Late,
    /// Not cancelled, over already (its reply was lost): only its slot is given back.
    Over,
    /// Cancelled on the wire (the cancel overtook it): it never enters the hop.
    Overtaken,
    /// Cancelled in the queue: it leaves it, no service spent.
    Dequeued,
    /// Cancelled in service: its worker is freed; `spent` of service is wasted and the
    /// `unspent` rest, counted as busy when the service started, never happens.
    InService { spent: Nanos, unspent: Nanos },
    /// Cancelled while it waits on its own downstream calls, which are cancelled with it; its
    /// worker is freed and its service, `spent`, wasted.
    Downstream { spent: Nanos },
}

impl CancelAction {
    /// The cancel of an attempt in `phase` arriving at `now`, at a register when `occ`; in
    /// service, the attempt's service started at `service_start` and lasts `service_ns`.
    #[inline]
    pub(super) fn of(phase: Phase, occ: bool, now: Nanos, service_start: Nanos, service_ns: Nanos) -> CancelAction {
        if occ {
            return if phase == Phase::Done { CancelAction::Over } else { CancelAction::Late };
        }
        let service_end = service_start.saturating_add(service_ns);
        match phase {
            Phase::Network => CancelAction::Overtaken,
            Phase::Queued => CancelAction::Dequeued,
            // Past its service end it waits on an in-progress key.
            Phase::Service if now >= service_end => CancelAction::Late,
            Phase::Service => CancelAction::InService { spent: now - service_start, unspent: service_end - now },
            Phase::Downstream => CancelAction::Downstream { spent: service_ns },
            Phase::Replying => CancelAction::Late,
            Phase::Done => CancelAction::Over,
        }
    }

    /// Whether the attempt leaves the hop (it was inside: queued, in service or downstream), and
    /// the service it wasted then.
    #[inline]
    pub(super) fn spent(self) -> Option<Nanos> {
        match self {
            CancelAction::Dequeued => Some(0),
            CancelAction::InService { spent, .. } | CancelAction::Downstream { spent } => Some(spent),
            CancelAction::Late | CancelAction::Over | CancelAction::Overtaken => None,
        }
    }

    /// Whether the attempt held a worker, which takes the next queued attempt.
    #[inline]
    pub(super) fn frees_worker(self) -> bool {
        match self {
            CancelAction::InService { .. } | CancelAction::Downstream { .. } => true,
            CancelAction::Late | CancelAction::Over | CancelAction::Overtaken | CancelAction::Dequeued => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PHASES: [Phase; 6] =
        [Phase::Network, Phase::Queued, Phase::Service, Phase::Downstream, Phase::Replying, Phase::Done];

    #[test]
    fn each_phase_meets_a_cancel_as_the_model_says() {
        let of = |phase| CancelAction::of(phase, false, 50, 30, 40);
        assert_eq!(of(Phase::Network), CancelAction::Overtaken);
        assert_eq!(of(Phase::Queued), CancelAction::Dequeued);
        assert_eq!(of(Phase::Service), CancelAction::InService { spent: 20, unspent: 20 });
        assert_eq!(of(Phase::Downstream), CancelAction::Downstream { spent: 40 });
        assert_eq!(of(Phase::Replying), CancelAction::Late);
        assert_eq!(of(Phase::Done), CancelAction::Over);
    }

    #[test]
    fn a_service_that_has_ended_is_not_cancelled() {
        // Service 30..70: at its end it waits on an in-progress key, and a cancel is late.
        assert_eq!(CancelAction::of(Phase::Service, false, 70, 30, 40), CancelAction::Late);
        assert_eq!(
            CancelAction::of(Phase::Service, false, 69, 30, 40),
            CancelAction::InService { spent: 39, unspent: 1 }
        );
        assert_eq!(
            CancelAction::of(Phase::Service, false, 30, 30, 40),
            CancelAction::InService { spent: 0, unspent: 40 }
        );
    }

    #[test]
    fn a_registers_attempt_is_never_stopped() {
        for phase in PHASES {
            let expected = if phase == Phase::Done { CancelAction::Over } else { CancelAction::Late };
            assert_eq!(CancelAction::of(phase, true, 50, 30, 40), expected, "{phase:?}");
        }
    }

    #[test]
    fn only_work_inside_the_hop_is_wasted_and_only_a_held_worker_is_freed() {
        let actions = PHASES.map(|phase| CancelAction::of(phase, false, 50, 30, 40));
        assert_eq!(actions.map(CancelAction::spent), [None, Some(0), Some(20), Some(40), None, None]);
        assert_eq!(actions.map(CancelAction::frees_worker), [false, false, true, true, false, false]);
    }
}
