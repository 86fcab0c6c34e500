//! Axis types with tick marks placed where a reader wants them: categories at their bars, and
//! logarithmic axes ticked at 1-2-5 steps (plotters' own log axis ticks only decades, or at
//! odd places on short ranges).

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use std::ops::Range;

/// A linear axis whose ticks sit exactly at the given positions (bar categories).
pub struct CategoryAxis {
    /// Visible range.
    pub range: Range<f64>,
    /// Tick positions.
    pub ticks: Vec<f64>,
}

impl Ranged for CategoryAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let share = (value - self.range.start) / (self.range.end - self.range.start);
        pixel(share, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        major_ticks(&self.ticks, hint)
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// The pixel at `share` (0 at the start of the range, 1 at its end) between `limit`'s ends.
fn pixel(share: f64, limit: (i32, i32)) -> i32 {
    limit.0 + (share * f64::from(limit.1 - limit.0)).round() as i32
}

/// Our axes draw only their own ticks, as bold key points, and no light grid points.
fn major_ticks<Hint: KeyPointHint>(ticks: &[f64], hint: Hint) -> Vec<f64> {
    if hint.weight().allow_light_points() {
        Vec::new()
    } else {
        ticks.to_vec()
    }
}

/// A base-10 logarithmic axis over `[low, high]` (both > 0) with 1-2-5 ticks.
pub struct LogAxis {
    low: f64,
    high: f64,
    ticks: Vec<f64>,
}

impl LogAxis {
    /// An axis covering `[low, high]`; ticks at 1-2-5 × 10^k for spans up to three decades,
    /// at decades beyond that, and at every integer multiple of the decade within one decade.
    pub fn new(low: f64, high: f64) -> LogAxis {
        assert!(low > 0.0 && high > low, "log axis needs 0 < low < high, got {low}..{high}");
        let decades = (high / low).log10();
        let steps: &[f64] = if decades > 3.5 {
            &[1.0]
        } else if decades > 1.2 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
        };
        let mut ticks = Vec::new();
        let mut decade = low.log10().floor() as i32;
        while 10f64.powi(decade) <= high {
            for step in steps {
                // Round to kill representation noise so labels print as 0.2, not 0.20000000000000004.
                let tick = round_sig(step * 10f64.powi(decade));
                if tick >= low * (1.0 - 1e-9) && tick <= high * (1.0 + 1e-9) {
                    ticks.push(tick);
                }
            }
            decade += 1;
        }
        LogAxis { low, high, ticks }
    }

    /// An axis covering `[low, high]` with ticks exactly at `ticks` (e.g. a sweep's values).
    pub fn with_ticks(low: f64, high: f64, ticks: Vec<f64>) -> LogAxis {
        assert!(low > 0.0 && high > low, "log axis needs 0 < low < high, got {low}..{high}");
        LogAxis { low, high, ticks }
    }

    /// The tick positions.
    #[cfg(test)]
    pub fn ticks(&self) -> &[f64] {
        &self.ticks
    }
}

fn round_sig(x: f64) -> f64 {
    let digits = 12 - x.abs().log10().floor() as i32;
    if (0..=300).contains(&digits) {
        let scale = 10f64.powi(digits);
        (x * scale).round() / scale
    } else {
        x
    }
}

impl Ranged for LogAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        // Non-positive values land far below the axis (off the plot) instead of failing.
        let v = if *value > 0.0 { *value } else { self.low * 1e-6 };
        let share = (v.log10() - self.low.log10()) / (self.high.log10() - self.low.log10());
        pixel(share, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        major_ticks(&self.ticks, hint)
    }

    fn range(&self) -> Range<f64> {
        self.low..self.high
    }
}

/// A bound `factor` beyond `x` on a log axis, rounded out to a whole multiple of its decade
/// (23.8 → 30, 8.2 → 8), which keeps the axis tight around the data.
pub fn log_bound(x: f64, factor: f64, up: bool) -> f64 {
    let target = if up { x * factor } else { x / factor };
    let decade = 10f64.powf(target.log10().floor());
    let multiple = target / decade;
    // Guard against representation noise (3.0000000000000004 must stay 3).
    let whole = if up { (multiple - 1e-9).ceil() } else { (multiple + 1e-9).floor() };
    round_sig(whole.max(1.0) * decade)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_follow_1_2_5_and_stay_in_range() {
        assert_eq!(LogAxis::new(5.0, 100.0).ticks(), &[5.0, 10.0, 20.0, 50.0, 100.0]);
        assert_eq!(LogAxis::new(1e-3, 1e3).ticks(), &[1e-3, 1e-2, 0.1, 1.0, 10.0, 100.0, 1e3]);
        assert_eq!(LogAxis::new(0.15, 0.45).ticks(), &[0.2, 0.3, 0.4]);
        assert_eq!(log_bound(8.2, 1.0, false), 8.0);
        assert_eq!(log_bound(21.6, 1.1, true), 30.0);
        assert_eq!(log_bound(0.3, 1.0, true), 0.3);
    }
}
