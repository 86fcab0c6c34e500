//! What the charts and the report draw from, and the extra files that carry it to disk.
//!
//! Charts are a pure function of a run's files: `write_study` writes `scenario.json`,
//! `delays.csv` and `latency.csv` next to the summary, reads the directory back
//! ([`crate::report::readback`]) and renders from that. So `retrystorm plot DIR` reproduces the
//! same charts byte for byte, and the write path tests the read path on every run.

use crate::metrics::catalogue::Metric;
use crate::metrics::stats::Stat;
use crate::report::format::csv_bytes;
use crate::report::setup::{condition_of, label_of, setup_of, PolicyInfo, Setup, VariantSetup};
use crate::runner::{MeanSeries, StatRow, Study};
use std::collections::BTreeMap;

pub use crate::metrics::delays::{delay_bin, delay_bin_low, DelayBin, DELAY_BINS_PER_DECADE};

/// Everything a run's report shows.
#[derive(Clone, Debug)]
pub struct ReportData {
    /// Scenario name.
    pub scenario: String,
    /// Master seed.
    pub seed: u64,
    /// Replications per variant.
    pub replications: u32,
    /// retrystorm version that produced the run.
    pub version: String,
    /// Width of a time-series bucket, in seconds.
    pub bucket_s: f64,
    /// Invariant warnings.
    pub warnings: Vec<String>,
    /// Per variant, in run order (which fixes each variant's colour).
    pub variants: Vec<VariantData>,
    /// What the verdict ranks by and requires.
    pub objective: crate::metrics::objective::Objective,
    /// Command line, overrides, scenario file and hash.
    pub provenance: crate::runner::Provenance,
    /// What an emulated run measured about itself (`emulate`, `compare --emulate`): these
    /// results were measured on real sockets, not simulated.
    pub emulation: Option<crate::runner::Emulation>,
}

/// One variant's results and configuration.
#[derive(Clone, Debug)]
pub struct VariantData {
    /// Variant name.
    pub name: String,
    /// What was simulated.
    pub setup: Setup,
    /// Whole-system metrics.
    pub metrics: StatRow,
    /// Per hop: name and metrics.
    pub hops: Vec<(String, StatRow)>,
    /// Per tenant: name and metrics.
    pub tenants: Vec<(String, StatRow)>,
    /// Replications that stopped early, with the reason.
    pub truncated: Vec<String>,
    /// Mean series per hop (only the active buckets).
    pub hop_series: Vec<MeanSeries>,
    /// Mean series per tenant (only the active buckets).
    pub tenant_series: Vec<MeanSeries>,
    /// Mean series per replica of the balanced hops (`replicas.csv`; empty without them).
    pub replica_series: Vec<crate::runner::ReplicaSeries>,
    /// Retry-delay histogram at hop 0 (all replications pooled).
    pub delays: Vec<DelayBin>,
    /// Latency of succeeded requests: (microseconds, count), all replications pooled.
    pub latency_us: Vec<(u64, u64)>,
}

/// `scenario.json`: the configuration of every variant.
pub fn scenario_json(study: &Study) -> serde_json::Value {
    let variants: Vec<VariantSetup> =
        study.variants.iter().map(|v| VariantSetup { name: v.name.clone(), setup: setup_of(&v.spec) }).collect();
    serde_json::json!({"scenario": study.scenario, "variants": variants})
}

/// `delays.csv`: per variant and retry number, the histogram of delays before that retry.
pub fn delays_csv(study: &Study) -> Vec<u8> {
    csv_bytes(|w| {
        w.write_record(["variant", "retry", "delay_s_low", "delay_s_high", "count"])?;
        for v in &study.variants {
            for bin in v.retry_delays.bins() {
                let record = [
                    v.name.clone(),
                    bin.retry.to_string(),
                    bin.low_s.to_string(),
                    bin.high_s.to_string(),
                    bin.count.to_string(),
                ];
                w.write_record(&record)?;
            }
        }
        Ok(())
    })
}

/// `latency.csv`: per variant, the pooled latency histogram of succeeded requests.
pub fn latency_csv(study: &Study) -> Vec<u8> {
    csv_bytes(|w| {
        w.write_record(["variant", "latency_us", "count"])?;
        for v in &study.variants {
            for (us, count) in &v.latency_us {
                w.write_record([v.name.clone(), us.to_string(), count.to_string()])?;
            }
        }
        Ok(())
    })
}

impl ReportData {
    /// True when recovery is worth reporting: some variant has a fault window, or recovery was
    /// measured after a load spike (a non-zero time, or a replication that never recovered).
    pub fn shows_recovery(&self) -> bool {
        self.variants.iter().any(|v| {
            !v.setup.faults.is_empty()
                || v.mean(Metric::Metastable).is_some_and(|m| m > 0.0)
                || v.mean(Metric::RecoveryTimeS).is_some_and(|r| r > 0.0)
        })
    }
}

impl VariantData {
    /// The mean of `metric` (whole system).
    pub fn mean(&self, metric: Metric) -> Option<f64> {
        self.metrics.mean(metric)
    }

    /// Capacity of hop `h` in attempts per second, if finite.
    pub fn capacity_per_s(&self, h: usize) -> Option<f64> {
        self.setup.hops.get(h).and_then(|hop| hop.capacity_per_s)
    }

    /// The name as legends and tables show it (see [`label_of`]).
    pub fn label(&self) -> String {
        label_of(&self.name, &self.setup)
    }

    /// The variant as the verdict reads it.
    pub fn candidate(&self) -> crate::runner::verdict::Candidate<'_> {
        crate::runner::verdict::Candidate::new(&self.name, &self.metrics, &self.hops, &self.tenants)
            .with_setup(self.label(), condition_of(&self.setup))
    }

    /// Policies the clients use (distinct, in tenant order).
    pub fn client_policies(&self) -> Vec<&PolicyInfo> {
        let mut out: Vec<&PolicyInfo> = Vec::new();
        for t in &self.setup.tenants {
            if let Some(p) = self.setup.policies.iter().find(|p| p.name == t.policy) {
                if !out.iter().any(|q| q.name == p.name) {
                    out.push(p);
                }
            }
        }
        out
    }
}

/// One varied parameter: its path and values as typed (labels) with numeric positions when
/// every value is a number or a duration.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepAxis {
    /// Override path, e.g. `tenant.main.clients`.
    pub path: String,
    /// Values as typed.
    pub labels: Vec<String>,
    /// Numeric positions (durations in seconds), if every value has one.
    pub numbers: Option<Vec<f64>>,
}

/// A sweep's results, as `sweep.json` holds them.
#[derive(Clone, Debug)]
pub struct SweepData {
    /// Scenario name.
    pub scenario: String,
    /// Master seed.
    pub seed: u64,
    /// Replications per variant and cell.
    pub replications: u32,
    /// Variant names in order (fixes their colours).
    pub variants: Vec<String>,
    /// Varied parameters, in `--vary` order (the last varies fastest across cells).
    pub axes: Vec<SweepAxis>,
    /// (cell, variant index, metric) → statistic.
    pub stats: BTreeMap<(usize, usize, Metric), Stat>,
}

impl SweepData {
    /// The cell index of value indices `coords` (mixed radix, last axis fastest).
    pub fn cell(&self, coords: &[usize]) -> usize {
        coords.iter().zip(&self.axes).fold(0, |acc, (&c, axis)| acc * axis.labels.len() + c)
    }

    /// The statistic of `metric` for variant `v` in `cell`, if the sweep holds it.
    pub fn stat(&self, cell: usize, v: usize, metric: Metric) -> Option<&Stat> {
        self.stats.get(&(cell, v, metric))
    }
}
