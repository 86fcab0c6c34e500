//! Latency CDF per variant on a log time axis, with p50 and p99 marked.

use super::axes::{log_bound, LogAxis};
use super::key::{with_key, KeyItem, Swatch};
use super::narrow;
use super::{DrawResult, Lines, FONT};
use crate::engine::time::us_to_secs;
use crate::metrics::catalogue::Metric;
use crate::report::charts::palette::draw_variant_line;
use crate::report::data::ReportData;
use crate::report::format::{fmt_num, fmt_secs};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The cumulative distribution of a (value µs, count) histogram: (seconds, % ≤ value).
pub fn cdf_points(latency_us: &[(u64, u64)]) -> Vec<(f64, f64)> {
    let total: u64 = latency_us.iter().map(|p| p.1).sum();
    let mut sorted = latency_us.to_vec();
    sorted.sort_unstable();
    let mut seen = 0u64;
    sorted
        .iter()
        .map(|&(us, count)| {
            seen += count;
            (us_to_secs(us.max(1) as f64), 100.0 * seen as f64 / total as f64)
        })
        .collect()
}

/// The smallest latency (seconds) whose cumulative share reaches `percent`.
pub fn quantile(cdf: &[(f64, f64)], percent: f64) -> Option<f64> {
    cdf.iter().find(|p| p.1 >= percent - 1e-9).map(|p| p.0)
}

/// The points of `cdf` (ascending) that move the line by more than `dx` decades or `dy` percent
/// from the last one kept, and the last: at chart resolution (4,000 steps across, 2,000 up) the
/// same drawing from a fraction of the points (a pooled histogram has thousands of values).
pub fn thinned(cdf: &[(f64, f64)], dx: f64, dy: f64) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (i, &(x, y)) in cdf.iter().enumerate() {
        let keep = match out.last() {
            None => true,
            Some(&(px, py)) => (x / px).log10() >= dx || y - py >= dy || i + 1 == cdf.len(),
        };
        if keep {
            out.push((x, y));
        } else if let Some(last) = out.last_mut() {
            // The share reached by this value, drawn at the last kept one: the step never lags.
            last.1 = y;
        }
    }
    out
}

/// One panel: a CDF line per variant with markers at p50 (circle) and p99 (triangle).
pub fn draw_cdf<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &ReportData) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let title = format!(
        "{}: latency of succeeded requests per variant ({} pooled)",
        data.scenario,
        crate::report::format::count_of(u64::from(data.replications), "replication")
    );
    let root = narrow::titled(root, &title, 24)?;
    let cdfs: Vec<Vec<(f64, f64)>> = data.variants.iter().map(|v| cdf_points(&v.latency_us)).collect();
    let styles = Lines::of(data);
    let mut key: Vec<KeyItem> = styles.key(|i| key_label(&data.variants[i], &cdfs[i]));
    key.push((Swatch::Fill(WHITE.mix(0.0)), "● p50   ▲ p99 (replications pooled)".to_string()));
    if cdfs.iter().all(Vec::is_empty) {
        return super::empty::one_line(&root, "no request succeeded in any variant: no latency to draw", BLACK);
    }
    let root = with_key(&root, &key)?;
    let all = cdfs.iter().flatten().map(|p| p.0);
    let (lo, hi) = all.fold((f64::INFINITY, 0.0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let (x_min, x_max) = if hi > 0.0 { (log_bound(lo, 1.1, false), log_bound(hi, 1.1, true)) } else { (1e-3, 1.0) };
    let mut chart = ChartBuilder::on(&root)
        .margin(14)
        .margin_right(28)
        .x_label_area_size(50)
        .y_label_area_size(80)
        .build_cartesian_2d(LogAxis::new(x_min, x_max), 0.0..100.0)?;
    chart
        .configure_mesh()
        .x_desc("latency: event timestamp → success (log scale)")
        .y_desc("% of succeeded requests at or below")
        .x_label_formatter(&|x| fmt_secs(*x))
        .y_label_formatter(&|y| format!("{y:.0}%"))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.08))
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 16))
        .draw()?;
    for (level, text) in [(50.0, "p50"), (99.0, "p99")] {
        let guide = DashedLineSeries::new(vec![(x_min, level), (x_max, level)], 4, 4, BLACK.mix(0.35).stroke_width(1));
        chart.draw_series(guide)?;
        let style = TextStyle::from((FONT, 13).into_font()).pos(Pos::new(HPos::Left, VPos::Bottom));
        chart.draw_series(std::iter::once(Text::new(text, (x_min * 1.05, level), style)))?;
    }
    for i in styles.order() {
        let (cdf, colour) = (&cdfs[i], styles.colour(i));
        let Some((p50, p99)) = quantile(cdf, 50.0).zip(quantile(cdf, 99.0)) else { continue };
        // A step line: the share jumps at each recorded value (thinned to what a pixel shows).
        let cdf = thinned(cdf, (x_max / x_min).log10() / 4000.0, 100.0 / 2000.0);
        let mut steps = Vec::with_capacity(cdf.len() * 2);
        let mut previous = 0.0;
        for &(x, y) in &cdf {
            steps.push((x, previous));
            steps.push((x, y));
            previous = y;
        }
        draw_variant_line!(chart, styles, i, steps, 2)?;
        if !styles.led(i) {
            continue;
        }
        chart.draw_series([
            Circle::new((p50, 50.0), 7, colour.filled()).into_dyn(),
            Circle::new((p50, 50.0), 7, BLACK.stroke_width(1)).into_dyn(),
            TriangleMarker::new((p99, 99.0), 9, colour.filled()).into_dyn(),
        ])?;
    }
    Ok(())
}

/// The legend label of a variant: its p50, p99 and share of successes.
fn key_label(v: &crate::report::data::VariantData, cdf: &[(f64, f64)]) -> String {
    let Some((p50, p99)) = quantile(cdf, 50.0).zip(quantile(cdf, 99.0)) else {
        return format!("{}: no request succeeded", v.label());
    };
    let succeeded =
        v.mean(Metric::SuccessRatio).map(|r| format!(", {}% succeeded", fmt_num(r * 100.0))).unwrap_or_default();
    format!("{}: p50 {}, p99 {}{succeeded}", v.label(), fmt_secs(p50), fmt_secs(p99))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thinned_cdf_keeps_its_ends_and_every_visible_step() {
        // 10,000 values 1 µs apart from 1 ms: 10,000 points, on a decade-wide axis.
        let hist: Vec<(u64, u64)> = (0..10_000).map(|k| (1_000 + k, 1)).collect();
        let cdf = cdf_points(&hist);
        let (dx, dy) = (1.0 / 4000.0, 100.0 / 2000.0);
        let thin = thinned(&cdf, dx, dy);
        // Each kept point but the first and last moved the line by dx across or dy up: at most
        // the axis's decades ÷ dx plus 100 % ÷ dy of them.
        let decades = (cdf.last().unwrap().0 / cdf[0].0).log10();
        let bound = (decades / dx).ceil() + (100.0 / dy).ceil() + 2.0;
        assert!((thin.len() as f64) <= bound && thin.len() < cdf.len() / 2, "{} of {}", thin.len(), cdf.len());
        assert_eq!(thin.first().map(|p| p.0), cdf.first().map(|p| p.0));
        assert_eq!(thin.last(), cdf.last());
        // At every kept x the share is at least the full CDF's there and less than a step above.
        for &(x, y) in &thin {
            let full = cdf.iter().rev().find(|p| p.0 <= x).map_or(0.0, |p| p.1);
            assert!(y >= full - 1e-9 && y - full <= 100.0 / 2000.0 + 0.01 + 1e-9, "{x} {y} {full}");
        }
        // A jump is never thinned away.
        let jump = cdf_points(&[(1_000, 1), (1_001, 1), (5_000, 998)]);
        assert_eq!(thinned(&jump, 1.0 / 4000.0, 0.05).last(), Some(&(0.005, 100.0)));
    }

    #[test]
    fn cdf_reaches_100_and_quantiles_follow_counts() {
        let cdf = cdf_points(&[(3000, 1), (1000, 2), (2000, 1)]);
        assert_eq!(cdf, vec![(0.001, 50.0), (0.002, 75.0), (0.003, 100.0)]);
        assert_eq!(quantile(&cdf, 50.0), Some(0.001));
        assert_eq!(quantile(&cdf, 99.0), Some(0.003));
        assert_eq!(quantile(&[], 50.0), None);
    }
}
