//! Replicas of a hop behind a load balancer: how many, how the balancer picks one,
//! and how it learns that a replica is bad (active health checks, passive outlier ejection).
//! The default (one replica, no health checking) is the plain hop.

use crate::engine::Nanos;

/// How the balancer in front of a hop's replicas picks one for an arriving attempt (read from
/// its snake_case name; the first is the default).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Balancer {
    /// Each next attempt to the next replica in turn (skipping ones taken out of rotation).
    RoundRobin,
    /// A uniformly random replica.
    Random,
    /// The replica with the fewest attempts inside it (queued, in service or waiting on a
    /// downstream call); ties are taken in turn: the first tied replica at or after a cursor
    /// that moves past each pick (HAProxy `leastconn` round-robins among servers of equal load,
    /// NGINX `least_conn` tries tied servers in weighted round robin).
    LeastConnections,
    /// Two distinct replicas drawn at random; the one with fewer attempts inside wins (ties: the
    /// first drawn). Mitzenmacher's "power of two choices"; Envoy's `LEAST_REQUEST`.
    PowerOfTwo,
    /// The fewest attempts inside; a uniformly random replica among the tied ones (the
    /// balancer's stream).
    LeastConnectionsRandom,
    /// The fewest attempts inside; ties go to the lowest index (Stability Sim's rule, and this
    /// simulator's earlier `least_connections`).
    LeastConnectionsFirst,
}

impl Balancer {
    /// The scenario-file name.
    pub fn name(self) -> &'static str {
        match self {
            Balancer::RoundRobin => "round_robin",
            Balancer::Random => "random",
            Balancer::LeastConnections => "least_connections",
            Balancer::PowerOfTwo => "power_of_two",
            Balancer::LeastConnectionsRandom => "least_connections_random",
            Balancer::LeastConnectionsFirst => "least_connections_first",
        }
    }
}

/// Active health checking: the balancer probes every replica each `interval`; a probe fails
/// when the replica is crashed (an `outage` or `hang` fault is active on it). After
/// `unhealthy_threshold` consecutive failed probes the replica leaves the rotation, after
/// `healthy_threshold` consecutive good ones it comes back (Envoy's health checker).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HealthCheck {
    /// Time between probes of a replica (the first at `interval`).
    pub interval: Nanos,
    /// Consecutive failed probes that mark a healthy replica unhealthy (≥ 1).
    pub unhealthy_threshold: u32,
    /// Consecutive good probes that mark an unhealthy replica healthy again (≥ 1).
    pub healthy_threshold: u32,
}

/// Passive outlier detection as Envoy's `consecutive_5xx`: `consecutive_errors` errors in a
/// row from one replica (503 replies and the caller's timeouts; a success resets the count)
/// eject it for `base_ejection_time` × the number of times it has been ejected (capped at
/// `max_ejection_time`), unless `max_ejection_percent` of the replicas are already ejected (at
/// least one replica may always be ejected, as in Envoy).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OutlierDetection {
    /// Consecutive errors that eject (Envoy default 5).
    pub consecutive_errors: u32,
    /// Ejection time of the first ejection (Envoy default 30 s).
    pub base_ejection_time: Nanos,
    /// Upper bound of one ejection (Envoy default 300 s).
    pub max_ejection_time: Nanos,
    /// Share of the replicas that may be ejected at once, in percent (Envoy default 10).
    pub max_ejection_percent: f64,
}

/// A hop's replicas and their balancer.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplicaSpec {
    /// Number of identical replicas (each with the hop's workers, queue and overload control).
    pub count: u32,
    /// How the balancer picks a replica.
    pub balancer: Balancer,
    /// Active health checking, if any.
    pub health_check: Option<HealthCheck>,
    /// Passive outlier ejection, if any.
    pub outlier: Option<OutlierDetection>,
}

impl Default for ReplicaSpec {
    fn default() -> Self {
        ReplicaSpec { count: 1, balancer: Balancer::RoundRobin, health_check: None, outlier: None }
    }
}

impl ReplicaSpec {
    /// True when the balancer can take a replica out of rotation.
    pub fn health_aware(&self) -> bool {
        self.health_check.is_some() || self.outlier.is_some()
    }

    /// Replicas that may be ejected at the same time out of `replicas` serving (the count, or
    /// fewer under autoscaling): `max_ejection_percent` of them, rounded down, but at least one
    /// (Envoy ejects one host whatever the percentage).
    pub fn max_ejected(&self, replicas: u32) -> u32 {
        self.outlier.map_or(0, |o| ((o.max_ejection_percent / 100.0 * f64::from(replicas)).floor() as u32).max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_ejection_cap_follows_envoy() {
        let outlier = OutlierDetection {
            consecutive_errors: 5,
            base_ejection_time: 1,
            max_ejection_time: 10,
            max_ejection_percent: 10.0,
        };
        let spec = |count| ReplicaSpec { count, outlier: Some(outlier), ..ReplicaSpec::default() };
        // 10% of 3 is 0.3: Envoy still ejects one; of 25, two; of 100, ten.
        assert_eq!([spec(3), spec(25), spec(100)].map(|s| s.max_ejected(s.count)), [1, 2, 10]);
        assert_eq!(spec(100).max_ejected(30), 3, "of the replicas serving (autoscaling)");
        assert_eq!(ReplicaSpec::default().max_ejected(1), 0);
    }

    /// The balancer is health-aware (keeps a health record per replica) with active checks, with
    /// outlier ejection, or with both, and not with neither.
    #[test]
    fn a_balancer_is_health_aware_with_either_kind_of_health_checking() {
        let check = HealthCheck { interval: 1_000, unhealthy_threshold: 1, healthy_threshold: 1 };
        let outlier = OutlierDetection {
            consecutive_errors: 5,
            base_ejection_time: 1,
            max_ejection_time: 10,
            max_ejection_percent: 10.0,
        };
        let spec = |health_check, outlier| ReplicaSpec { count: 3, health_check, outlier, ..ReplicaSpec::default() };
        let aware =
            [spec(None, None), spec(Some(check), None), spec(None, Some(outlier)), spec(Some(check), Some(outlier))]
                .map(|s| s.health_aware());
        assert_eq!(aware, [false, true, true, true]);
    }
}
