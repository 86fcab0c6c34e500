//! Autoscaling of a hop's capacity by target tracking (`autoscale = { … }` on a hop).
//!
//! Capacity is counted in *units* of `step` workers ([`ScaleUnit`]): a group of `step` workers
//! of the hop's single pool (`unit = "workers"`), or one replica behind the hop's balancer
//! (`unit = "replicas"`, `step` = the replica's workers). The controller below is the same for
//! both: it only decides how many units serve. The rule (docs/MODEL.md, "Autoscaling"):
//!
//! - every `evaluation_period` the metric's time average over the period is read: utilisation
//!   (∫busy workers ÷ ∫workers) or queue length per unit (∫queued ÷ ∫units);
//! - desired units = ⌈online units × metric ÷ target⌉, clamped to [min, max];
//! - above online + provisioning units: the difference is launched and serves
//!   `scale_up_delay` later;
//! - below the online units, with nothing provisioning and at least `scale_down_cooldown` since
//!   the last change of capacity: the hop shrinks to the desired units at once (busy workers
//!   finish their jobs; no new job starts above the new capacity).

use crate::engine::Nanos;

/// What the controller tracks (read from its snake_case name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScaleMetric {
    /// Busy workers ÷ workers (time average over the period).
    Utilization,
    /// Queued attempts ÷ units (time average over the period): SQS-style backlog per instance.
    QueuePerUnit,
}

impl ScaleMetric {
    /// The name in the scenario format.
    pub fn name(self) -> &'static str {
        match self {
            ScaleMetric::Utilization => "utilization",
            ScaleMetric::QueuePerUnit => "queue_per_unit",
        }
    }
}

/// What one unit of capacity is (read from its snake_case name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScaleUnit {
    /// One replica behind the hop's balancer, with its own workers and queue; a removed replica
    /// drains (serves what it holds) but gets no new work.
    Replicas,
    /// `step` workers of the hop's one pool (one replica).
    Workers,
}

impl ScaleUnit {
    /// The name in the scenario format.
    pub fn name(self) -> &'static str {
        match self {
            ScaleUnit::Workers => "workers",
            ScaleUnit::Replicas => "replicas",
        }
    }
}

/// A validated target-tracking rule.
#[derive(Clone, Debug, PartialEq)]
pub struct AutoscaleSpec {
    /// The tracked metric.
    pub metric: ScaleMetric,
    /// Its target value (utilisation in (0, 1]; queued attempts per unit > 0).
    pub target: f64,
    /// Averaging window and time between two decisions.
    pub evaluation_period: Nanos,
    /// Provisioning time: a launched unit serves this long after the decision.
    pub scale_up_delay: Nanos,
    /// No scale-down until this long after the last change of capacity.
    pub scale_down_cooldown: Nanos,
    /// Fewest units.
    pub min_units: u32,
    /// Most units.
    pub max_units: u32,
    /// Workers per unit.
    pub step: u32,
    /// What a unit is.
    pub unit: ScaleUnit,
    /// Units serving at the start.
    pub initial_units: u32,
}

impl AutoscaleSpec {
    /// Desired units from the metric's time average `metric` with `online` units serving.
    pub fn desired_units(&self, online: u32, metric: f64) -> u32 {
        // Both metrics are per unit of online capacity (utilisation per worker, queue per unit),
        // so online × metric ÷ target is the capacity that would bring the metric to target.
        let raw = f64::from(online) * metric / self.target;
        // A relative tolerance keeps ⌈2.0000000001⌉ from launching a third unit.
        let units = (raw * (1.0 - 1e-12)).ceil();
        (units.clamp(f64::from(self.min_units), f64::from(self.max_units))) as u32
    }

    /// One line for reports.
    pub fn words(&self) -> String {
        let unit = match self.unit {
            ScaleUnit::Workers => format!("{} workers", self.step),
            ScaleUnit::Replicas => format!("replicas of {} workers", self.step),
        };
        format!(
            "autoscaled {}–{} × {unit} on {} {} (every {}, +{} provisioning, {} cooldown)",
            self.min_units,
            self.max_units,
            self.metric.name(),
            self.target,
            crate::engine::time::duration_words(self.evaluation_period),
            crate::engine::time::duration_words(self.scale_up_delay),
            crate::engine::time::duration_words(self.scale_down_cooldown),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(metric: ScaleMetric, target: f64) -> AutoscaleSpec {
        AutoscaleSpec {
            metric,
            target,
            evaluation_period: 1,
            scale_up_delay: 0,
            scale_down_cooldown: 0,
            min_units: 2,
            max_units: 10,
            step: 4,
            unit: ScaleUnit::Workers,
            initial_units: 2,
        }
    }

    #[test]
    fn desired_units_track_the_target_within_min_and_max() {
        let s = spec(ScaleMetric::Utilization, 0.5);
        assert_eq!(s.desired_units(3, 1.0), 6);
        assert_eq!(s.desired_units(4, 0.5), 4, "at target: no change, despite rounding");
        assert_eq!(s.desired_units(4, 0.51), 5);
        assert_eq!(s.desired_units(8, 1.0), 10, "clamped at max");
        assert_eq!(s.desired_units(8, 0.0), 2, "clamped at min");
        let q = spec(ScaleMetric::QueuePerUnit, 10.0);
        assert_eq!(q.desired_units(3, 25.0), 8, "75 queued ÷ 10 per unit");
    }
}
