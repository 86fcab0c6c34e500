//! Statistics across replications: mean, sd and the 95% confidence interval suited to the metric
//! ([`Interval`], chosen by the catalogue from the metric's unit): Student t where a value may be
//! negative (paired differences), Cox's log-scale interval for positive quantities, Student t
//! kept within [0, 1] for shares, Wilson's score interval for per-run flags.

use super::catalogue::Metric;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

/// A metric summarised over replications. `None` values (e.g. no recovery) are left out of the
/// mean and listed as `null`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Stat {
    /// Mean of the non-null values (null when all are null).
    pub mean: Option<f64>,
    /// Sample standard deviation (0 with one value).
    pub sd: Option<f64>,
    /// 95% confidence interval of the mean (Student t); equal bounds with one value.
    pub ci95: Option<[f64; 2]>,
    /// The per-replication values.
    pub values: Vec<Option<f64>>,
}

pub use super::catalogue::Interval;

impl Stat {
    /// Summarises per-replication values with the Student-t interval (values of any sign, e.g.
    /// paired differences).
    pub fn from_values(values: Vec<Option<f64>>) -> Stat {
        Stat::with_interval(values, Interval::Student)
    }

    /// Summarises per-replication values with the interval `kind`.
    pub fn with_interval(values: Vec<Option<f64>>, kind: Interval) -> Stat {
        let present: Vec<f64> = values.iter().flatten().copied().collect();
        if present.is_empty() {
            return Stat { mean: None, sd: None, ci95: None, values };
        }
        let (mean, sd) = mean_sd(&present);
        Stat { mean: Some(mean), sd: Some(sd), ci95: Some(interval_of(&present, (mean, sd), kind, 0.95)), values }
    }
}

/// The two-sided `level` interval of the mean of `xs` (non-empty) of kind `kind`; with one value
/// or none of spread, the mean itself.
pub fn interval(xs: &[f64], kind: Interval, level: f64) -> [f64; 2] {
    interval_of(xs, mean_sd(xs), kind, level)
}

/// [`interval`] of `xs` whose mean and sd are `(mean, sd)`. Each sum, logarithm and Student
/// quantile is taken once (a study of 2,000 replications takes one per metric, where it took
/// two or three, in the serial part of a parallel run).
fn interval_of(xs: &[f64], (mean, sd): (f64, f64), kind: Interval, level: f64) -> [f64; 2] {
    let n = xs.len();
    if n < 2 || sd == 0.0 {
        return [mean, mean];
    }
    let student = || {
        let half = student_quantile(n, level) * sd / (n as f64).sqrt();
        [mean - half, mean + half]
    };
    match kind {
        Interval::Student => student(),
        Interval::Positive => cox_interval(xs, level).unwrap_or_else(|| {
            let [low, high] = student();
            [low.max(0.0), high]
        }),
        Interval::Share => {
            let [low, high] = student();
            [low.max(0.0), high.min(1.0)]
        }
        Interval::Flag => {
            let ones = xs.iter().filter(|&&x| x > 0.0).count();
            wilson(ones, n, level)
        }
    }
}

/// The Student t quantile of a two-sided `level` interval from `n` ≥ 2 values (n − 1 degrees
/// of freedom).
fn student_quantile(n: usize, level: f64) -> f64 {
    StudentsT::new(0.0, 1.0, (n - 1) as f64).expect("n ≥ 2 gives valid freedom").inverse_cdf(0.5 + level / 2.0)
}

/// Largest spread of the logs (their sd) for which a positive metric gets Cox's interval. Past it
/// the values span more than e² between typical runs (e.g. dead letters of 3 in one run and
/// 40,000 in another), Cox's s⁴ term dominates and the upper bound explodes (about 1e190 for those
/// two runs): such values are not log-normal enough for the formula to mean
/// anything, and the Student interval raised to 0 is used instead (its coverage holds for any
/// distribution with a finite variance as n grows).
const COX_LOG_SD_MAX: f64 = 1.0;

/// Cox's interval for the mean of a log-normal quantity from `xs` (n ≥ 2); `None` unless every
/// value is positive and the logs' sd is at most [`COX_LOG_SD_MAX`].
fn cox_interval(xs: &[f64], level: f64) -> Option<[f64; 2]> {
    if !xs.iter().all(|&x| x > 0.0) {
        return None;
    }
    let logs: Vec<f64> = xs.iter().map(|x| x.ln()).collect();
    let (m, s) = mean_sd(&logs);
    (s <= COX_LOG_SD_MAX).then(|| {
        let n = xs.len() as f64;
        let s2 = s * s;
        let t = student_quantile(xs.len(), level);
        let half = t * (s2 / n + s2 * s2 / (2.0 * (n - 1.0))).sqrt();
        let centre = m + s2 / 2.0;
        [(centre - half).exp(), (centre + half).exp()]
    })
}

/// Wilson's score interval for a share of `ones` successes in `n` trials.
pub fn wilson(ones: usize, n: usize, level: f64) -> [f64; 2] {
    let z = statrs::distribution::Normal::new(0.0, 1.0).expect("standard normal").inverse_cdf(0.5 + level / 2.0);
    let (k, n) = (ones as f64, n as f64);
    let p = k / n;
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    // At k = 0 (k = n) the bound is exactly 0 (1); the formula leaves rounding noise (2.8e-17).
    let lo = if ones == 0 { 0.0 } else { (centre - half).max(0.0) };
    let hi = if k == n { 1.0 } else { (centre + half).min(1.0) };
    [lo, hi]
}

/// Fewest replications for an interval worth reading: with fewer, t(0.975, n − 1) ≥ 4.3 makes
/// every interval wider than four standard errors each side.
pub const USEFUL_REPLICATIONS_MIN: usize = 4;

/// The statistics of one scope's metrics, in the order the run produced them; serialised as a
/// JSON object keyed by metric name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StatRow(#[serde(with = "super::catalogue::as_map")] pub Vec<(Metric, Stat)>);

impl StatRow {
    /// The statistic of `metric`, if the row has it.
    pub fn get(&self, metric: Metric) -> Option<&Stat> {
        self.0.iter().find(|(m, _)| *m == metric).map(|(_, s)| s)
    }

    /// The mean of `metric`, if the row has it and it is not null.
    pub fn mean(&self, metric: Metric) -> Option<f64> {
        self.get(metric).and_then(|s| s.mean)
    }

    /// (metric, statistic) in production order.
    pub fn iter(&self) -> std::slice::Iter<'_, (Metric, Stat)> {
        self.0.iter()
    }
}

impl<'a> IntoIterator for &'a StatRow {
    type Item = &'a (Metric, Stat);
    type IntoIter = std::slice::Iter<'a, (Metric, Stat)>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// Mean and sample standard deviation (n − 1), in input order (deterministic).
pub fn mean_sd(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (mean, 0.0);
    }
    let var = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt())
}

/// Half-width of the two-sided `level` confidence interval of a mean of `n` values with sample
/// sd `sd` (Student t with n − 1 degrees of freedom; 0 when n < 2).
pub fn ci_half_width(sd: f64, n: usize, level: f64) -> f64 {
    if n < 2 || sd == 0.0 {
        return 0.0;
    }
    student_quantile(n, level) * sd / (n as f64).sqrt()
}

/// The two-sided `level` prediction interval for one new value from the distribution `xs` were
/// drawn from (normal theory: mean ± t(n − 1) · sd · √(1 + 1/n)), kept within the values a run
/// of a metric of interval kind `kind` can take (a count's is never below 0, a share's within
/// [0, 1]: coverage is kept, as no run falls outside); `None` with fewer than 2 values. With no
/// spread among `xs` it is the single point of their mean.
pub fn prediction_interval(xs: &[f64], kind: Interval, level: f64) -> Option<[f64; 2]> {
    let n = xs.len();
    if n < 2 {
        return None;
    }
    let (mean, sd) = mean_sd(xs);
    let half = ci_half_width(sd, n, level) * ((n + 1) as f64).sqrt();
    let [low, high] = kind.range();
    Some([(mean - half).max(low), (mean + half).min(high)])
}

/// Welch's two-sided `level` interval for mean(a) − mean(b) (unequal variances,
/// Welch–Satterthwaite degrees of freedom); `None` with fewer than 2 values on either side. With
/// no spread on either side it is the single point of the difference.
pub fn welch_interval(a: &[f64], b: &[f64], level: f64) -> Option<[f64; 2]> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let ((mean_a, sd_a), (mean_b, sd_b)) = (mean_sd(a), mean_sd(b));
    let (va, vb) = (sd_a * sd_a / a.len() as f64, sd_b * sd_b / b.len() as f64);
    let diff = mean_a - mean_b;
    let se2 = va + vb;
    if se2 == 0.0 {
        return Some([diff, diff]);
    }
    let freedom = se2 * se2 / (va * va / (a.len() - 1) as f64 + vb * vb / (b.len() - 1) as f64);
    let t = StudentsT::new(0.0, 1.0, freedom).expect("positive freedom").inverse_cdf(0.5 + level / 2.0);
    let half = t * se2.sqrt();
    Some([diff - half, diff + half])
}

/// Shuffles drawn by [`permutation_p`]: the p-value's Monte-Carlo standard error is at most
/// √(0.05 × 0.95 / 20,000) ≈ 0.0015 near the 0.05 threshold.
pub const PERMUTATION_DRAWS: u32 = 20_000;

/// Two-sided permutation test of "`a` and `b` are draws of one distribution" on the difference
/// of their means: the share of random relabellings of the pooled values (`draws` of them,
/// from a fixed seed, so the answer is reproducible) whose |mean difference| is at least the
/// observed one less `slack` (a measurement resolution), counted as (1 + hits) / (1 + draws).
/// Unlike Welch's interval it assumes no shape of the distribution: a metric with two modes
/// (a run that sticks in overload or recovers) and a few runs all in one mode is judged by how
/// often the simulation's own replications fall that way. `None` when either side is empty or
/// the relabellings are too few for any answer below 0.05 (fewer than 40 distinct ones).
pub fn permutation_p(a: &[f64], b: &[f64], slack: f64, draws: u32) -> Option<f64> {
    use rand::{RngExt, SeedableRng};
    let (n, m) = (a.len(), b.len());
    if n == 0 || m == 0 {
        return None;
    }
    // Distinct relabellings: C(n + m, n), computed until it passes 40.
    let small = n.min(m);
    let mut labellings = 1.0_f64;
    for i in 0..small {
        labellings = labellings * (n + m - i) as f64 / (i + 1) as f64;
    }
    if labellings < 40.0 {
        return None;
    }
    let observed = (mean_sd(a).0 - mean_sd(b).0).abs() - slack.max(0.0);
    let mut pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    let total: f64 = pooled.iter().sum();
    // Sums differ from the observed one by rounding alone when the split is the same.
    let tolerance = 1e-9 * pooled.iter().fold(0.0_f64, |acc, x| acc.max(x.abs())).max(1e-300);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x9e37_79b9_7f4a_7c15);
    let mut hits: u32 = 0;
    for _ in 0..draws {
        // A partial Fisher–Yates shuffle: the first n of the pooled values are the new `a`.
        let mut sum_a = 0.0;
        for i in 0..n {
            let j = rng.random_range(i..n + m);
            pooled.swap(i, j);
            sum_a += pooled[i];
        }
        let difference = (sum_a / n as f64 - (total - sum_a) / m as f64).abs();
        hits += u32::from(difference >= observed - tolerance);
    }
    Some((1.0 + f64::from(hits)) / (1.0 + f64::from(draws)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welch_matches_a_hand_computation() {
        // a: mean 2, var 1, n 3; b: mean 5, var 4, n 3. se² = 1/3 + 4/3 = 5/3;
        // ν = (5/3)² / ((1/3)²/2 + (4/3)²/2) = 25/9 / (17/18) = 50/17 ≈ 2.941; t(0.975, 2.941) is just above t(0.975, 3) = 3.182.
        let [lo, hi] = welch_interval(&[1.0, 2.0, 3.0], &[3.0, 5.0, 7.0], 0.95).expect("two samples");
        assert!(((lo + hi) / 2.0 + 3.0).abs() < 1e-12);
        let t = StudentsT::new(0.0, 1.0, 50.0 / 17.0).expect("valid").inverse_cdf(0.975);
        assert!(((hi - lo) / 2.0 - t * (5.0f64 / 3.0).sqrt()).abs() < 1e-9);
        assert!(t > 3.182 && t < 3.3, "t = {t}");
        assert_eq!(welch_interval(&[1.0], &[2.0, 3.0], 0.95), None);
    }

    #[test]
    fn wilson_bounds_are_exact_at_none_and_all() {
        // k = 0 of 5: [0, z²/(n + z²)] = [0, 3.8415/8.8415]; k = n mirrors it.
        let [lo, hi] = wilson(0, 5, 0.95);
        assert_eq!(lo, 0.0);
        assert!((hi - 3.841_459 / 8.841_459).abs() < 1e-6, "{hi}");
        let [lo, hi] = wilson(5, 5, 0.95);
        assert_eq!(hi, 1.0);
        assert!((lo - 5.0 / 8.841_459).abs() < 1e-6, "{lo}");
    }

    #[test]
    fn prediction_interval_matches_tables() {
        // Ten values with mean 5.5 and sd √(55/6) = 3.0277; t(0.975, 9) = 2.2622 (standard
        // tables): 5.5 ± 2.2622 · 3.0277 · √1.1 = 5.5 ± 7.1836.
        let xs: Vec<f64> = (1..=10).map(f64::from).collect();
        let [lo, hi] = prediction_interval(&xs, Interval::Student, 0.95).expect("ten values");
        assert!((lo - (5.5 - 7.1836)).abs() < 1e-3 && (hi - (5.5 + 7.1836)).abs() < 1e-3, "[{lo}, {hi}]");
        assert_eq!(prediction_interval(&[2.0, 2.0, 2.0], Interval::Positive, 0.95), Some([2.0, 2.0]));
        assert_eq!(prediction_interval(&[1.0], Interval::Positive, 0.95), None);
        // Kept within the metric's range: a count's lower bound at 0 (not 5.5 − 7.18), a
        // share's bounds within [0, 1].
        assert_eq!(prediction_interval(&xs, Interval::Positive, 0.95).map(|[lo, _]| lo), Some(0.0));
        let shares = [0.2, 0.9, 1.0, 0.95];
        let [lo, hi] = prediction_interval(&shares, Interval::Share, 0.95).expect("four values");
        assert!(lo >= 0.0 && hi == 1.0, "[{lo}, {hi}]");
    }

    #[test]
    fn intervals_respect_each_metrics_range() {
        // Positive: a 2-replication recovery time never gets a negative lower bound.
        let [lo, hi] = interval(&[0.05, 0.7], Interval::Positive, 0.95);
        assert!(lo >= 0.0 && hi > 0.7, "[{lo}, {hi}]");
        // Values spread over decades (dead letters 3 and 40,000): not Cox's e^438 ≈ 1e190
        // but the Student interval raised to 0: 20,001.5 ± 12.706 · 28,282.4/√2 ≈ [0, 274,100].
        let [lo, hi] = interval(&[3.0, 40_000.0], Interval::Positive, 0.95);
        assert_eq!(lo, 0.0);
        assert!((hi - (20_001.5 + 12.706_2 * 28_282.39 / 2f64.sqrt())).abs() < 50.0, "{hi}");
        // Cox by hand: logs of 1 and e are 0 and 1 (mean 0.5, variance 0.5); t(0.975, 1) = 12.706.
        let [lo, hi] = interval(&[1.0, std::f64::consts::E], Interval::Positive, 0.95);
        let half = 12.706_2 * (0.5f64 / 2.0 + 0.25 / 2.0).sqrt();
        assert!((lo - (0.75 - half).exp()).abs() < 1e-3 && (hi / (0.75 + half).exp() - 1.0).abs() < 1e-3);
        // With a zero among the values: the t interval floored at 0.
        let [lo, _] = interval(&[0.0, 0.1, 3.0], Interval::Positive, 0.95);
        assert_eq!(lo, 0.0);
        // Shares stay in [0, 1].
        let [lo, hi] = interval(&[0.999, 0.2, 1.0], Interval::Share, 0.95);
        assert!(lo >= 0.0 && hi <= 1.0);
        // Wilson for 3 of 10 at 95% (z = 1.96): [0.1078, 0.6032] (standard tables).
        let [lo, hi] = wilson(3, 10, 0.95);
        assert!((lo - 0.1078).abs() < 1e-3 && (hi - 0.6032).abs() < 1e-3, "[{lo}, {hi}]");
        let [lo, hi] = interval(&[1.0, 1.0, 0.0, 1.0], Interval::Flag, 0.95);
        assert!(lo > 0.0 && hi <= 1.0);
        // Differences keep the plain t interval, negative bounds and all.
        assert!(interval(&[-1.0, 0.5, 2.0], Interval::Student, 0.95)[0] < 0.0);
    }

    #[test]
    fn t_interval_matches_tables() {
        // t(0.975, 9) = 2.2622 (standard tables).
        let half = ci_half_width(1.0, 10, 0.95);
        assert!((half - 2.2622 / 10f64.sqrt()).abs() < 1e-4);
        let s = Stat::from_values(vec![Some(1.0), None, Some(3.0)]);
        assert_eq!(s.mean, Some(2.0));
        assert_eq!(s.values.len(), 3);
    }

    #[test]
    fn a_permutation_test_matches_its_exact_distribution() {
        // 1 value against 3: C(4, 1) = 4 labellings, too few for any answer below 0.05.
        assert_eq!(permutation_p(&[3.0], &[0.0, 1.0, 2.0], 0.0, 1_000), None);
        // a = {10, 11, 12} against b = 0..20 (mean 9.5): the observed |difference| is 1.5. The
        // exact share of the C(23, 3) = 1,771 labellings at least that far apart is counted by
        // enumerating them, independently of the Monte-Carlo draws.
        let a = [10.0, 11.0, 12.0];
        let b: Vec<f64> = (0..20).map(f64::from).collect();
        let pooled: Vec<f64> = a.iter().chain(&b).copied().collect();
        let total: f64 = pooled.iter().sum();
        let observed = (11.0 - b.iter().sum::<f64>() / 20.0_f64).abs();
        let (mut hits, mut all) = (0u32, 0u32);
        for i in 0..23 {
            for j in i + 1..23 {
                for k in j + 1..23 {
                    let s = pooled[i] + pooled[j] + pooled[k];
                    hits += u32::from((s / 3.0 - (total - s) / 20.0).abs() >= observed - 1e-9);
                    all += 1;
                }
            }
        }
        let exact = f64::from(hits) / f64::from(all);
        let p = permutation_p(&a, &b, 0.0, PERMUTATION_DRAWS).expect("enough labellings");
        // Four Monte-Carlo standard errors of a share estimated from 20,000 draws.
        let se = (exact * (1.0 - exact) / f64::from(PERMUTATION_DRAWS)).sqrt();
        assert!((p - exact).abs() <= 4.0 * se + 1.0 / f64::from(PERMUTATION_DRAWS), "p {p} against exact {exact}");
    }

    #[test]
    fn a_permutation_test_rejects_a_shift_and_keeps_two_modes() {
        // Three values far above all of 100: only the labellings putting the three largest in
        // `a` reach the observed difference, 1 in C(103, 3) = 176,851: p is (1 + 0)/(1 + draws).
        let b: Vec<f64> = (0..100).map(|i| f64::from(i) / 100.0).collect();
        let p = permutation_p(&[5.0, 5.1, 5.2], &b, 0.0, PERMUTATION_DRAWS).expect("enough");
        assert!(p < 0.001, "{p}");
        // Two modes, half the runs at 1 and half at 2.4 (a run that recovers, one that sticks):
        // of the pooled 53 values at 1 and 50 at 2.4, three at 1 (|1 − 1.7| = 0.7) or three at
        // 2.4 (|2.4 − 1.658| = 0.742) are as far apart: C(53, 3) + C(50, 3) of C(103, 3)
        // labellings, p ≈ 0.132 + 0.111 = 0.243. Welch's interval, reading the three runs' small
        // spread as the distribution's, rejects it.
        let modes: Vec<f64> = (0..100).map(|i| if i % 2 == 0 { 1.0 } else { 2.4 }).collect();
        let p = permutation_p(&[1.0, 1.0, 1.0], &modes, 0.0, PERMUTATION_DRAWS).expect("enough");
        assert!((0.2..0.3).contains(&p), "{p}");
        let welch = welch_interval(&[1.0, 1.01, 0.99], &modes, 0.95).expect("two samples");
        assert!(welch[1] < 0.0, "Welch rejects: {welch:?}");
        // The slack widens what counts as equal: a shift by less than it is no difference.
        let p = permutation_p(&[5.0, 5.1, 5.2], &b, 10.0, PERMUTATION_DRAWS).expect("enough");
        assert!(p > 0.99, "{p}");
    }
}
