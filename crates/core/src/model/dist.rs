//! Service-time and network-delay distributions.

use crate::engine::Nanos;
use rand::{Rng, RngExt};
use statrs::distribution::Normal;

/// A validated service-time (or network-delay) distribution. All parameters in nanoseconds.
#[derive(Clone, Debug)]
pub enum Dist {
    /// Always `mean`.
    Constant {
        /// The value.
        mean: Nanos,
    },
    /// Exponential with the given mean.
    Exponential {
        /// Mean.
        mean: Nanos,
    },
    /// Log-normal with the given mean and standard deviation.
    LogNormal {
        /// Mean of the distribution (not of its log).
        mean: Nanos,
        /// Standard deviation of the distribution.
        sd: Nanos,
    },
    /// |Normal(mean, sd)|.
    NormalAbs {
        /// Mean of the underlying normal.
        mean: Nanos,
        /// Standard deviation of the underlying normal.
        sd: Nanos,
    },
    /// `base + per_inflight × in-flight`: latency that grows with load.
    Load {
        /// Latency with nothing else in flight.
        base: Nanos,
        /// Extra latency per request in flight at the hop (including this one).
        per_inflight: Nanos,
    },
    /// Measured: inverse CDF of a histogram or of percentiles (`model::empirical`).
    Empirical(std::sync::Arc<super::empirical::Empirical>),
}

impl Dist {
    /// The mean service time when `in_flight` requests are in service (for capacity figures).
    pub fn mean_ns(&self, in_flight: u32) -> f64 {
        match *self {
            Dist::Constant { mean } | Dist::Exponential { mean } | Dist::LogNormal { mean, .. } => mean as f64,
            Dist::NormalAbs { mean, sd } => normal_abs_mean(mean as f64, sd as f64),
            Dist::Load { base, per_inflight } => base as f64 + per_inflight as f64 * f64::from(in_flight),
            Dist::Empirical(ref e) => e.mean_ns(),
        }
    }

    /// Always zero, drawing nothing (a hop without network delay).
    pub fn is_zero(&self) -> bool {
        matches!(*self, Dist::Constant { mean: 0 })
    }

    /// Draws one value; `in_flight` matters only for [`Dist::Load`].
    pub fn sample<R: Rng>(&self, rng: &mut R, in_flight: u32) -> Nanos {
        let value = match *self {
            Dist::Empirical(ref e) => return e.sample_from(rng.random()),
            Dist::Constant { mean } => return mean,
            Dist::Load { base, per_inflight } => {
                return base.saturating_add(per_inflight.saturating_mul(u64::from(in_flight)))
            }
            Dist::Exponential { mean } => {
                let u: f64 = rng.random();
                -(mean as f64) * (1.0 - u).ln()
            }
            Dist::LogNormal { mean, sd } => {
                let (mu, sigma) = lognormal_params(mean as f64, sd as f64);
                (mu + sigma * standard_normal(rng)).exp()
            }
            Dist::NormalAbs { mean, sd } => (mean as f64 + sd as f64 * standard_normal(rng)).abs(),
        };
        to_ns(value)
    }
}

/// μ and σ of the underlying normal for a log-normal with the given mean and sd.
pub fn lognormal_params(mean: f64, sd: f64) -> (f64, f64) {
    let sigma2 = (1.0 + (sd * sd) / (mean * mean)).ln();
    (mean.ln() - sigma2 / 2.0, sigma2.sqrt())
}

/// Mean of |X| for X ~ Normal(mu, sd) (the folded normal).
pub fn normal_abs_mean(mu: f64, sd: f64) -> f64 {
    if sd == 0.0 {
        return mu.abs();
    }
    use statrs::distribution::ContinuousCDF;
    let n = Normal::new(0.0, 1.0).expect("standard normal");
    let z = mu / sd;
    sd * (2.0 / std::f64::consts::PI).sqrt() * (-z * z / 2.0).exp() + mu * (1.0 - 2.0 * n.cdf(-z))
}

/// One standard normal draw by the Box–Muller transform (two uniforms, one value: simple and
/// portable; the stream position per draw is fixed, which keeps runs reproducible).
pub fn standard_normal<R: Rng>(rng: &mut R) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

fn to_ns(value: f64) -> Nanos {
    if value.is_nan() || value <= 0.0 {
        0
    } else if value >= u64::MAX as f64 {
        u64::MAX
    } else {
        crate::engine::time::round_to_ns(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{stream, StreamKind};

    #[test]
    fn load_dependent_latency_is_linear() {
        let d = Dist::Load { base: 1_000, per_inflight: 10 };
        let mut rng = stream(1, 0, StreamKind::Aux, 0);
        assert_eq!(d.sample(&mut rng, 0), 1_000);
        assert_eq!(d.sample(&mut rng, 7), 1_070);
    }

    #[test]
    fn sample_means_match_within_four_standard_errors() {
        // n = 40 000 draws: the standard error of the mean is sd/200; 4 SE keeps the false-failure
        // rate below 1e-4 for a fixed seed that is in any case deterministic.
        let cases = [
            (Dist::Exponential { mean: 1_000_000 }, 1_000_000.0),
            (Dist::LogNormal { mean: 1_000_000, sd: 500_000 }, 500_000.0),
            (Dist::NormalAbs { mean: 10_000_000, sd: 2_000_000 }, 2_000_000.0),
        ];
        for (dist, sd) in cases {
            let mut rng = stream(9, 0, StreamKind::Aux, 1);
            let n = 40_000;
            let mean = (0..n).map(|_| dist.sample(&mut rng, 1) as f64).sum::<f64>() / n as f64;
            let se = sd / (n as f64).sqrt();
            assert!((mean - dist.mean_ns(1)).abs() < 4.0 * se, "{dist:?}: mean {mean}");
        }
    }
}
