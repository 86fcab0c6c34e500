//! Paired differences between variants run on common random numbers (CRN), against a baseline.
//!
//! Every variant of a study runs replication r with the same derived seed, so replication r of
//! two variants sees the same arrivals, service times and faults. The difference
//! d_r = metric(variant, r) − metric(baseline, r) then cancels the noise the variants share, and
//! the Student-t interval of the mean of the d_r is usually much narrower than an interval that
//! treats the two samples as independent. Both are reported: the paired one is the answer, the
//! unpaired (Welch) one shows what CRN bought.

use super::VariantResult;
use crate::metrics::catalogue::Metric;
use crate::metrics::stats::Stat;

/// The difference of one metric between a variant and the baseline.
#[derive(Clone, Debug, PartialEq)]
pub struct Difference {
    /// The per-replication differences d_r summarised: mean, sd, Student-t 95% CI with n − 1
    /// degrees of freedom, and the d_r themselves (`None` where either side is null).
    pub paired: Stat,
    /// mean(variant) − mean(baseline) over all non-null values of each (equals the paired mean
    /// unless some replications are null on one side only).
    pub unpaired_mean: Option<f64>,
    /// 95% CI of mean(variant) − mean(baseline) treating the two samples as independent
    /// (Welch: unequal variances, Welch–Satterthwaite degrees of freedom). `None` when either
    /// side has fewer than two non-null values.
    pub unpaired_ci95: Option<[f64; 2]>,
}

/// One variant's differences against the baseline, per system metric (in metric order).
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// The variant.
    pub variant: String,
    /// The baseline variant it is compared with.
    pub baseline: String,
    /// Metric name and difference.
    pub metrics: Vec<(Metric, Difference)>,
}

/// Compares `variant` with `baseline` replication by replication.
///
/// Both must come from the same study (same replications, same seeds): the pairing is by index.
pub fn difference(variant: &Stat, baseline: &Stat) -> Difference {
    assert_eq!(variant.values.len(), baseline.values.len(), "paired samples come from one study");
    let d: Vec<Option<f64>> = variant.values.iter().zip(&baseline.values).map(|(v, b)| Some((*v)? - (*b)?)).collect();
    let unpaired_mean = variant.mean.zip(baseline.mean).map(|(v, b)| v - b);
    Difference {
        paired: Stat::from_values(d),
        unpaired_mean,
        unpaired_ci95: crate::metrics::stats::welch_interval(&present(variant), &present(baseline), 0.95),
    }
}

fn present(stat: &Stat) -> Vec<f64> {
    stat.values.iter().flatten().copied().collect()
}

/// Every variant but the baseline, compared with `variants[baseline]` on the system metrics.
/// Empty with a single variant.
pub fn comparisons(variants: &[VariantResult], baseline: usize) -> Vec<Comparison> {
    let base = &variants[baseline];
    variants
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != baseline)
        .map(|(_, v)| Comparison {
            variant: v.name.clone(),
            baseline: base.name.clone(),
            metrics: v
                .metrics
                .iter()
                .filter_map(|(metric, stat)| Some((*metric, difference(stat, base.metrics.get(*metric)?))))
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(values: &[Option<f64>]) -> Stat {
        Stat::from_values(values.to_vec())
    }

    #[test]
    fn pairs_by_replication_and_skips_nulls() {
        let v = stat(&[Some(11.0), Some(12.0), None, Some(15.0)]);
        let b = stat(&[Some(10.0), Some(10.0), Some(9.0), Some(12.0)]);
        let d = difference(&v, &b);
        assert_eq!(d.paired.values, vec![Some(1.0), Some(2.0), None, Some(3.0)]);
        assert_eq!(d.paired.mean, Some(2.0));
        assert_eq!(d.paired.sd, Some(1.0));
        // t(0.975, 2) = 4.3027 (tables); half-width 4.3027 × 1 / √3.
        let [lo, hi] = d.paired.ci95.expect("three pairs");
        assert!((hi - lo - 2.0 * 4.3027 / 3f64.sqrt()).abs() < 1e-3, "{lo} {hi}");
    }

    #[test]
    fn shared_noise_cancels_in_the_paired_interval() {
        // The variant is the baseline plus 1 with the same noise: the paired CI is exact.
        let noise = [3.0, -1.0, 4.0, -1.5, 0.5];
        let b = stat(&noise.map(|x| Some(100.0 + x)));
        let v = stat(&noise.map(|x| Some(101.0 + x)));
        let d = difference(&v, &b);
        let [lo, hi] = d.paired.ci95.expect("pairs");
        assert!((lo - 1.0).abs() < 1e-9 && (hi - 1.0).abs() < 1e-9);
        let [ulo, uhi] = d.unpaired_ci95.expect("samples");
        assert!(ulo < 0.0 && uhi > 2.0, "unpaired interval ignores the pairing: [{ulo}, {uhi}]");
    }
}
