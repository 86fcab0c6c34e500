//! How a metric's value is shown to a person: units scaled to the value (ms, s, min, h, days;
//! k and M), shares as percentages with CIs in percentage points, and precision that follows the
//! 95% confidence interval (no `±0.000`; an exact value says so; one replication shows no ±).

use crate::metrics::catalogue::{Metric, Unit};
use crate::metrics::stats::Stat;

/// Significant digits kept in a CI half-width.
const HALF_DIGITS: i32 = 2;

/// Decimal places that show `half` with [`HALF_DIGITS`] significant digits (at most 12).
fn decimals_for(half: f64) -> usize {
    if half <= 0.0 || !half.is_finite() {
        return 0;
    }
    let mag = half.log10().floor() as i32;
    (HALF_DIGITS - 1 - mag).clamp(0, 12) as usize
}

/// Most significant digits a mean with an interval shows (a tighter interval does not add more).
const MEAN_DIGITS: i32 = 4;

/// Decimal places that keep [`MEAN_DIGITS`] significant digits of `m` (none for |m| ≥ 1,000).
fn mean_decimals_max(m: f64) -> usize {
    if m == 0.0 || !m.is_finite() {
        return 12;
    }
    let mag = m.abs().log10().floor() as i32;
    (MEAN_DIGITS - 1 - mag).clamp(0, 12) as usize
}

/// A number with thousands separators and `decimals` places.
pub fn grouped(x: f64, decimals: usize) -> String {
    let text = format!("{:.*}", decimals, x.abs());
    let (int, frac) = text.split_once('.').map_or((text.as_str(), None), |(i, f)| (i, Some(f)));
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(f);
    }
    if x < 0.0 && out.chars().any(|c| c.is_ascii_digit() && c != '0') {
        out.insert(0, '-');
    }
    out
}

/// Three significant digits (for values without a CI).
pub fn sig3(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let mag = x.abs().log10().floor() as i32;
    grouped(x, (2 - mag).clamp(0, 6) as usize)
}

/// A duration unit chosen for a value in seconds: (divisor, suffix).
fn time_unit(secs: f64) -> (f64, &'static str) {
    let a = secs.abs();
    if a == 0.0 {
        (1.0, " s")
    } else if a < 1.0 {
        (1e-3, " ms")
    } else if a < 120.0 {
        (1.0, " s")
    } else if a < 7200.0 {
        (60.0, " min")
    } else if a < 172_800.0 {
        (3600.0, " h")
    } else {
        (86_400.0, " days")
    }
}

/// The display scale and suffix of `unit` for a value near `x`.
fn scale(unit: Unit, x: f64) -> (f64, &'static str) {
    match unit {
        Unit::Seconds => time_unit(x),
        Unit::Share => (0.01, "%"),
        Unit::Times => (1.0, "×"),
        Unit::PerSecond if x.abs() >= 1e6 => (1e6, "M/s"),
        Unit::PerSecond if x.abs() >= 1e4 => (1e3, "k/s"),
        Unit::PerSecond => (1.0, "/s"),
        Unit::Count if x.abs() >= 1e7 => (1e6, "M"),
        Unit::Count | Unit::Flag => (1.0, ""),
    }
}

/// A plain value of `metric` (no CI), scaled to its unit.
pub fn plain(metric: Metric, x: f64) -> String {
    let (div, suffix) = scale(metric.def().unit, x);
    let v = x / div;
    let body = if metric.def().unit == Unit::Count && div == 1.0 && v.fract() == 0.0 { grouped(v, 0) } else { sig3(v) };
    format!("{body}{suffix}")
}

/// A metric's mean with its 95% CI half-width at the precision the CI supports: `12.7 s ±0.31 s`,
/// `92.6% ±0.4 pp`, or its bounds when the interval is not symmetric (`0.375 s [0.0123–11.4]`), `10,000 (exact)` when every replication agrees, the bare value with one
/// replication, `—` without a value, and for flags the count of replications (`3 of 10`).
pub fn value(metric: Metric, stat: Option<&Stat>) -> String {
    let Some(stat) = stat else { return "—".into() };
    let Some(mean) = stat.mean else { return format!("— ({})", metric.def().null_means) };
    let unit = metric.def().unit;
    let n = stat.values.iter().flatten().count();
    if unit == Unit::Flag {
        let count = stat.values.iter().flatten().filter(|&&v| v > 0.0).count();
        return format!("{count} of {}", stat.values.len());
    }
    let nulls = stat.values.len() - n;
    let null_note = if nulls > 0 { format!(" [{nulls} {}]", metric.def().null_means) } else { String::new() };
    let (div, suffix) = scale(unit, mean);
    let m = mean / div;
    let half = stat.ci95.map_or(0.0, |[lo, hi]| (hi - lo) / 2.0) / div;
    if n < 2 {
        return format!("{}{suffix}{null_note}", sig3(m));
    }
    // A half-width at the rounding noise of the mean (identical values summed in another
    // order) is no interval: the replications agree.
    if half <= m.abs() * 1e-9 {
        let body = if m.fract() == 0.0 { grouped(m, 0) } else { sig3(m) };
        return format!("{body}{suffix} (exact){null_note}");
    }
    // Precision follows the interval, up to MEAN_DIGITS significant digits of the mean: a
    // half-width below one unit of that last digit is written `±<unit` (`22.70 s ±<0.01 s`, not
    // `22.700076 s ±0.000061`).
    let d_cap = mean_decimals_max(m);
    let d = decimals_for(half).min(d_cap);
    if decimals_for(half) > d_cap && half < 0.5 * 10f64.powi(-(d as i32)) {
        let ci_suffix = if unit == Unit::Share { " pp" } else { suffix };
        let below = grouped(10f64.powi(-(d as i32)), d);
        return format!("{}{suffix} ±<{below}{ci_suffix}{null_note}", grouped(m, d));
    }
    // An interval kept within the metric's range (log scale, floored at 0, a share within
    // [0, 1]) is not symmetric about the mean: its bounds are written, not a ±.
    if let Some([lo, hi]) = stat.ci95.map(|[lo, hi]| [lo / div, hi / div]) {
        if ((hi - m) - (m - lo)).abs() > 0.05 * (hi - lo) {
            let unit_mark = if unit == Unit::Share { "%" } else { "" };
            return format!("{}{suffix} [{}–{}{unit_mark}]{null_note}", grouped(m, d), grouped(lo, d), grouped(hi, d));
        }
    }
    // The ± says its unit: `48.79k/s ±0.45k/s`, `12.7 s ±0.31 s`, `92.6% ±0.4 pp`.
    let ci_suffix = if unit == Unit::Share { " pp" } else { suffix };
    format!("{}{suffix} ±{}{ci_suffix}{null_note}", grouped(m, d), grouped(half, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat(xs: &[f64]) -> Stat {
        Stat::from_values(xs.iter().map(|&x| Some(x)).collect())
    }

    #[test]
    fn precision_follows_the_interval_and_units_scale() {
        assert_eq!(value(Metric::Attempts, Some(&stat(&[80_000.0, 80_000.0]))), "80,000 (exact)");
        assert_eq!(value(Metric::Attempts, Some(&stat(&[79_000.0]))), "79,000");
        // Share: 92.6% with a half-width in percentage points.
        let s = value(Metric::SuccessRatio, Some(&stat(&[0.92, 0.93, 0.925])));
        assert!(s.starts_with("92.5%") && s.ends_with(" pp"), "{s}");
        assert_eq!(value(Metric::RecoveryTimeS, Some(&stat(&[0.0125]))), "12.5 ms");
        assert_eq!(value(Metric::RecoveryTimeS, Some(&stat(&[600.0]))), "10.0 min");
        assert_eq!(value(Metric::RecoveryTimeS, Some(&stat(&[3.0 * 86_400.0]))), "3.00 days");
        let nulls = Stat::from_values(vec![Some(10.0), None]);
        assert_eq!(value(Metric::RecoveryTimeS, Some(&nulls)), "10.0 s [1 not recovered]");
        assert_eq!(value(Metric::Metastable, Some(&stat(&[1.0, 0.0, 1.0]))), "2 of 3");
        assert_eq!(grouped(-1234.5, 1), "-1,234.5");
        // Equal replications whose mean picks up rounding noise still read as exact.
        let noisy = Stat::from_values(vec![Some(12.7), Some(12.7 + 1e-14), Some(12.7)]);
        assert_eq!(value(Metric::RecoveryTimeS, Some(&noisy)), "12.7 s (exact)");
        // An interval kept within the range is written by its bounds.
        let skewed = Stat::with_interval(vec![Some(0.05), Some(0.7)], Metric::RecoveryTimeS.interval());
        let text = value(Metric::RecoveryTimeS, Some(&skewed));
        assert!(text.starts_with("375 ms [") && !text.contains('-') && !text.contains('±'), "{text}");
        // A very tight interval does not add digits past four significant ones of the mean.
        let tight = Stat::from_values(vec![Some(22.700_01), Some(22.700_08), Some(22.700_14)]);
        assert_eq!(value(Metric::CompletionTimeS, Some(&tight)), "22.70 s ±<0.01 s");
        let tight = Stat::from_values(vec![Some(9.241), Some(9.2457), Some(9.25)]);
        assert_eq!(value(Metric::Amplification, Some(&tight)), "9.246× ±0.011×");
        let share = Stat::from_values(vec![Some(0.92941), Some(0.92942), Some(0.92943)]);
        assert_eq!(value(Metric::SuccessRatio, Some(&share)), "92.94% ±<0.01 pp");
        assert_eq!(value(Metric::Attempts, Some(&stat(&[92_457.0, 92_400.0, 92_520.0]))), "92,459 ±149");
        assert_eq!(decimals_for(0.031), 3);
        assert_eq!(decimals_for(12.0), 0);
    }
}
