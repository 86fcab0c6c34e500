//! Measured service times: an inverse CDF through known (probability, value) points, linear
//! between them, with an exponential tail above the last point.
//!
//! Built by `scenario::empirical` from a histogram (bucket upper bounds and counts) or from
//! percentiles (p50, p90, p99, p999). One uniform draw per sample (inverse transform).

use crate::engine::Nanos;

/// A quantile function through `knots`: `(u, value_ns)` with u non-decreasing from 0 (two
/// knots at one u are a gap with no mass, e.g. an empty histogram bucket), values non-decreasing. Above the last knot (u < 1) the tail is exponential, continuing the
/// slope of the log-survival between the last two knots; a last knot at u = 1 is the maximum.
#[derive(Clone, Debug, PartialEq)]
pub struct Empirical {
    knots: Vec<(f64, f64)>,
    /// Mean of the tail's exponential above the last knot (0 when the last knot is at u = 1).
    tail_scale: f64,
    mean: f64,
    /// What it was built from (for reports), e.g. "histogram data/latency.csv".
    pub source: String,
}

impl Empirical {
    /// Builds the quantile function; `knots` must start at u = 0, have non-decreasing u in
    /// [0, 1] and non-decreasing values ≥ 0 (checked by the caller, asserted here).
    pub fn new(knots: Vec<(f64, f64)>, source: String) -> Empirical {
        assert!(knots.len() >= 2 && knots[0].0 == 0.0, "empirical knots must start at u = 0: {knots:?}");
        assert!(knots.windows(2).all(|w| w[1].0 >= w[0].0 && w[1].1 >= w[0].1 && w[1].0 <= 1.0), "{knots:?}");
        let (u_last, x_last) = knots[knots.len() - 1];
        let below = knots.iter().rev().find(|k| k.0 < u_last).copied();
        let tail_scale = if let (true, Some((u_prev, x_prev))) = (u_last < 1.0, below) {
            // Survival S(x) = (1 − u_last)·exp(−(x − x_last)/scale) matches the slope of
            // ln S between the last two knots.
            let drop = ((1.0 - u_prev) / (1.0 - u_last)).ln();
            ((x_last - x_prev) / drop).max(0.0)
        } else {
            0.0
        };
        let body: f64 = knots.windows(2).map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0).sum();
        let mean = body + (1.0 - u_last) * (x_last + tail_scale);
        Empirical { knots, tail_scale, mean, source }
    }

    /// The value at probability `u` in [0, 1).
    pub fn quantile(&self, u: f64) -> f64 {
        let k = &self.knots;
        let (u_last, x_last) = k[k.len() - 1];
        if u >= u_last {
            if u_last >= 1.0 || self.tail_scale == 0.0 {
                return x_last;
            }
            return x_last + self.tail_scale * ((1.0 - u_last) / (1.0 - u).max(f64::MIN_POSITIVE)).ln();
        }
        let i = k.partition_point(|&(ku, _)| ku <= u).max(1);
        let ((u0, x0), (u1, x1)) = (k[i - 1], k[i]);
        x0 + (x1 - x0) * (u - u0) / (u1 - u0)
    }

    /// The mean in nanoseconds.
    pub fn mean_ns(&self) -> f64 {
        self.mean
    }

    /// Draws one value from a uniform `u` in [0, 1).
    pub fn sample_from(&self, u: f64) -> Nanos {
        let v = self.quantile(u);
        if v.is_nan() || v <= 0.0 {
            0
        } else if v >= u64::MAX as f64 {
            u64::MAX
        } else {
            crate::engine::time::round_to_ns(v)
        }
    }
}

/// Log-normal μ and σ (of the underlying normal) through two percentiles `(p, value)`.
pub fn lognormal_from_percentiles(a: (f64, f64), b: (f64, f64)) -> (f64, f64) {
    use statrs::distribution::{ContinuousCDF, Normal};
    let n = Normal::new(0.0, 1.0).expect("standard normal");
    let (za, zb) = (n.inverse_cdf(a.0), n.inverse_cdf(b.0));
    let sigma = (b.1.ln() - a.1.ln()) / (zb - za);
    (a.1.ln() - sigma * za, sigma)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_and_the_mean_is_the_integral() {
        let e = Empirical::new(vec![(0.0, 0.0), (0.5, 10.0), (0.9, 20.0), (1.0, 40.0)], "t".into());
        assert_eq!(e.quantile(0.25), 5.0);
        assert_eq!(e.quantile(0.5), 10.0);
        assert!((e.quantile(0.95) - 30.0).abs() < 1e-9);
        // 0.5·5 + 0.4·15 + 0.1·30 = 11.5.
        assert!((e.mean_ns() - 11.5).abs() < 1e-9);
        // Tail: p90 = 20, p99 = 40 ⇒ scale = 20/ln 10; p999 = 40 + scale·ln 10 = 60.
        let t = Empirical::new(vec![(0.0, 0.0), (0.9, 20.0), (0.99, 40.0)], "t".into());
        assert!((t.quantile(0.999) - 60.0).abs() < 1e-9);
    }

    #[test]
    fn lognormal_through_two_percentiles() {
        let (mu, sigma) = lognormal_from_percentiles((0.5, 20.0), (0.99, 120.0));
        assert!((mu - 20f64.ln()).abs() < 1e-12);
        assert!((sigma - (6f64).ln() / 2.326_347_874).abs() < 1e-6, "{sigma}");
    }
}
