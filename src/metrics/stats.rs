//! Statistics across replications: mean, sd and the Student-t 95% confidence interval.

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

impl Stat {
    /// Summarises per-replication values.
    pub fn from_values(values: Vec<Option<f64>>) -> Stat {
        let present: Vec<f64> = values.iter().flatten().copied().collect();
        if present.is_empty() {
            return Stat { mean: None, sd: None, ci95: None, values };
        }
        let (mean, sd) = mean_sd(&present);
        let half = ci_half_width(sd, present.len(), 0.95);
        Stat { mean: Some(mean), sd: Some(sd), ci95: Some([mean - half, mean + half]), values }
    }
}

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
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64).expect("n ≥ 2 gives valid freedom");
    t.inverse_cdf(0.5 + level / 2.0) * sd / (n as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_interval_matches_tables() {
        // t(0.975, 9) = 2.2622 (standard tables).
        let half = ci_half_width(1.0, 10, 0.95);
        assert!((half - 2.2622 / 10f64.sqrt()).abs() < 1e-4);
        let s = Stat::from_values(vec![Some(1.0), None, Some(3.0)]);
        assert_eq!(s.mean, Some(2.0));
        assert_eq!(s.values.len(), 3);
    }
}
