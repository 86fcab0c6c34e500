//! Retry-delay distributions: a histogram per variant (log time axis, the cap marked, the share
//! of delays exactly at the cap written out) and delay percentiles against the retry number.

use super::axes::{log_bound, LogAxis};
use super::key::{with_key, KeyItem, Swatch};
use super::narrow;
use super::{variant_colour, DrawResult, Lines, FONT};
use crate::report::charts::palette::draw_variant_line;
use crate::report::data::{delay_bin, delay_bin_low, DelayBin, ReportData, VariantData};
use crate::report::format::{fmt_num, fmt_secs};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::collections::BTreeMap;

/// Fewest samples a retry number needs before its percentiles are drawn.
const SAMPLES_MIN: u64 = 30;

/// A variant's delays pooled over retry numbers: display-bin index → count, plus the counts of
/// exact zeros and of delays exactly at a cap.
struct Pooled {
    bins: BTreeMap<i32, u64>,
    zero: u64,
    at_cap: u64,
    total: u64,
}

fn pool(delays: &[DelayBin]) -> Pooled {
    let mut p = Pooled { bins: BTreeMap::new(), zero: 0, at_cap: 0, total: 0 };
    for b in delays {
        p.total += b.count;
        if b.high_s == 0.0 {
            p.zero += b.count;
            continue;
        }
        if b.low_s == b.high_s {
            p.at_cap += b.count;
        }
        *p.bins.entry(delay_bin(b.low_s)).or_default() += b.count;
    }
    p
}

fn pct(count: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        100.0 * count as f64 / total as f64
    }
}

/// The delay (seconds) below which `share` (0–1) of the binned delays fall; log-linear inside a
/// bin, exact for point masses. `bins` must be sorted by `low_s`.
pub fn binned_quantile(bins: &[&DelayBin], share: f64) -> Option<f64> {
    let total: u64 = bins.iter().map(|b| b.count).sum();
    if total == 0 {
        return None;
    }
    let target = share * total as f64;
    let mut seen = 0.0;
    for b in bins {
        let next = seen + b.count as f64;
        if next >= target {
            if b.low_s == b.high_s || b.low_s == 0.0 {
                return Some(b.low_s);
            }
            let frac = ((target - seen) / b.count as f64).clamp(0.0, 1.0);
            return Some(b.low_s * (b.high_s / b.low_s).powf(frac));
        }
        seen = next;
    }
    bins.last().map(|b| b.high_s)
}

/// Display range of the log axis in bin indices: from the decade under the 1st percentile of the
/// non-zero delays of all variants (rarer tiny delays are counted in the leftmost bar) to a bin
/// past the largest, so a cap at the top stays inside the plot.
fn axis_range(data: &ReportData) -> (i32, i32) {
    let mut all: Vec<DelayBin> =
        data.variants.iter().flat_map(|v| v.delays.iter().filter(|b| b.high_s > 0.0).cloned()).collect();
    all.sort_by(|a, b| a.low_s.total_cmp(&b.low_s));
    let refs: Vec<&DelayBin> = all.iter().collect();
    let low = binned_quantile(&refs, 0.01).unwrap_or(1e-3).max(1e-9);
    let per = crate::report::data::DELAY_BINS_PER_DECADE;
    let first = low.log10().floor() as i32 * per;
    let top = all.iter().map(|b| delay_bin(b.low_s)).max().unwrap_or(first);
    (first, (top + 3).max(first + per))
}

/// One histogram panel per variant, on a shared log time axis and a shared share-of-retries axis.
pub fn draw_histograms<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &ReportData) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let title = format!(
        "{}: delay before a retry, per variant (all retry numbers, {} pooled)",
        data.scenario,
        crate::report::format::count_of(u64::from(data.replications), "replication")
    );
    let root = narrow::titled(root, &title, 24)?;
    let (first, last) = axis_range(data);
    let pooled: Vec<Pooled> = data
        .variants
        .iter()
        .map(|v| {
            let mut p = pool(&v.delays);
            // Fold delays outside the axis into its edge bins so every delay is counted.
            let mut folded = BTreeMap::new();
            for (&i, &c) in &p.bins {
                *folded.entry(i.clamp(first, last - 1)).or_default() += c;
            }
            p.bins = folded;
            p
        })
        .collect();
    let y_max = pooled.iter().flat_map(|p| p.bins.values().map(move |&c| pct(c, p.total))).fold(1.0, f64::max) * 1.15;
    let empty: Vec<bool> = data.variants.iter().map(nothing_to_draw).collect();
    let panels = super::empty::split_panels(&root, &empty);
    // The time axis is labelled under the last panel that has one.
    let bottom = empty.iter().rposition(|e| !e).unwrap_or(0);
    for (i, ((v, p), panel)) in data.variants.iter().zip(&pooled).zip(panels.iter()).enumerate() {
        if empty[i] {
            let why = if p.total == 0 {
                "no retries to draw (no request was retried)".to_string()
            } else {
                format!("all {} retries were immediate (0 s): nothing on a log time axis", fmt_num(p.total as f64))
            };
            super::empty::one_line(panel, &format!("{} — {why}", v.label()), variant_colour(data, i))?;
        } else {
            draw_histogram(panel, v, p, variant_colour(data, i), (first, last, y_max), i == bottom)?;
        }
    }
    Ok(())
}

/// True when a variant has no positive retry delay: its panel is one line of text.
pub fn nothing_to_draw(v: &VariantData) -> bool {
    v.delays.iter().all(|b| b.high_s <= 0.0 || b.count == 0)
}

fn draw_histogram<DB: DrawingBackend>(
    panel: &DrawingArea<DB, Shift>,
    v: &VariantData,
    p: &Pooled,
    colour: RGBColor,
    (first, last, y_max): (i32, i32, f64),
    bottom_row: bool,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let policies: Vec<String> =
        v.client_policies().iter().map(|p| format!("policy {}: {}", p.name, p.summary)).collect();
    let k_max = v.delays.iter().map(|b| b.retry).max().unwrap_or(0);
    // The policies when they fit on the line (they are also in the report's table), else the
    // name and the count only.
    let sampled = format!("{} delays sampled (retries 1–{k_max})", fmt_num(p.total as f64));
    let full = format!("{} · {} · {sampled}", v.name, policies.join("; "));
    let caption = if narrow::fits(panel, &full, 16, panel.dim_in_pixel().0.saturating_sub(20)) {
        full
    } else {
        format!("{} · {sampled}", v.name)
    };
    let (x_min, x_max) = (delay_bin_low(first), delay_bin_low(last));
    let mut chart = ChartBuilder::on(panel)
        .caption(caption, (FONT, 16).into_font().color(&colour.mix(1.0)))
        .margin(8)
        .margin_right(24)
        .x_label_area_size(if bottom_row { 44 } else { 24 })
        .y_label_area_size(78)
        .build_cartesian_2d(LogAxis::new(x_min, x_max), 0.0..y_max)?;
    chart
        .configure_mesh()
        .x_desc(if bottom_row { "delay before the retry (log scale)" } else { "" })
        .y_desc("% of retries")
        .x_label_formatter(&|x| fmt_secs(*x))
        .y_label_formatter(&|y| format!("{y:.0}%"))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.08))
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
        .draw()?;
    let bars = p.bins.iter().map(|(&i, &c)| {
        Rectangle::new([(delay_bin_low(i), 0.0), (delay_bin_low(i + 1), pct(c, p.total))], colour.filled())
    });
    chart.draw_series(bars)?;
    let note_style = TextStyle::from((FONT, 14).into_font()).pos(Pos::new(HPos::Left, VPos::Top));
    let mut notes = Vec::new();
    if p.zero > 0 {
        notes.push(format!("{}% immediate (0 s, not on the log axis)", fmt_num(pct(p.zero, p.total))));
    }
    let below: u64 = v.delays.iter().filter(|b| b.high_s > 0.0 && b.low_s < x_min).map(|b| b.count).sum();
    if below > 0 {
        notes.push(format!("{}% below {} (in the first bar)", fmt_num(pct(below, p.total)), fmt_secs(x_min)));
    }
    if p.total == 0 {
        notes.push("no retries".to_string());
    }
    for policy in v.client_policies() {
        let cap = policy.cap_s;
        if cap <= x_min || cap >= x_max || !super::empty::has_cap(policy) {
            continue;
        }
        chart.draw_series(DashedLineSeries::new(vec![(cap, 0.0), (cap, y_max)], 6, 4, BLACK.stroke_width(2)))?;
        let mut text = format!("cap {}", fmt_secs(cap));
        if p.at_cap > 0 {
            text.push_str(&format!(": {}% of retries waited exactly the cap", fmt_num(pct(p.at_cap, p.total))));
        }
        let style = TextStyle::from((FONT, 14).into_font()).pos(Pos::new(HPos::Right, VPos::Top));
        chart.draw_series(std::iter::once(Text::new(text, (cap / 1.04, y_max * 0.97), style)))?;
    }
    for (k, note) in notes.into_iter().enumerate() {
        let y = y_max * (0.97 - 0.16 * k as f64);
        chart.draw_series(std::iter::once(Text::new(note, (x_min * 1.15, y), note_style.clone())))?;
    }
    Ok(())
}

/// Median delay before retry k (line) with the 10th–90th percentile band, every variant.
pub fn draw_by_retry<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &ReportData) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let title = format!(
        "{}: delay before retry k per variant — median and 10th–90th percentile ({} pooled)",
        data.scenario,
        crate::report::format::count_of(u64::from(data.replications), "replication")
    );
    let root = narrow::titled(root, &title, 22)?;
    let styles = Lines::of(data);
    let mut key: Vec<KeyItem> = styles.key(|i| {
        let v = &data.variants[i];
        let immediate = v.delays.iter().all(|b| b.high_s == 0.0);
        if immediate {
            format!("{}: no delay (immediate retries)", v.label())
        } else {
            v.label()
        }
    });
    key.push((Swatch::Fill(BLACK.mix(0.12)), "10th–90th percentile band".to_string()));
    // Per variant, per retry k: (p10, p50, p90), skipping thinly sampled retry numbers.
    let curves: Vec<Vec<(u32, [f64; 3])>> = data.variants.iter().map(|v| percentiles(&v.delays)).collect();
    let positive = curves.iter().flatten().flat_map(|(_, q)| q.iter().copied()).filter(|&x| x > 0.0);
    let (lo, hi) = positive.fold((f64::INFINITY, 0.0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
    let (y_min, y_max) = if hi > 0.0 { (log_bound(lo, 1.1, false), log_bound(hi, 1.1, true)) } else { (1e-3, 1.0) };
    // Caps of the policies that have one, inside the axis: the only ones drawn and keyed.
    let caps: Vec<f64> = {
        let mut c: Vec<f64> = data
            .variants
            .iter()
            .flat_map(|v| v.client_policies())
            .filter(|p| super::empty::has_cap(p))
            .map(|p| p.cap_s)
            .filter(|&c| c > y_min && c < y_max)
            .collect();
        c.sort_by(f64::total_cmp);
        c.dedup();
        c
    };
    if !caps.is_empty() {
        key.push((Swatch::Dashed(BLACK.mix(1.0)), "cap".to_string()));
    }
    let root = with_key(&root, &key)?;
    if hi <= 0.0 {
        return super::empty::one_line(
            &root,
            "no positive delay before any retry in any variant: nothing to draw",
            BLACK,
        );
    }
    let k_max = curves.iter().flatten().map(|c| c.0).max().unwrap_or(1).max(2);
    let mut chart = ChartBuilder::on(&root)
        .margin(14)
        .margin_right(28)
        .x_label_area_size(50)
        .y_label_area_size(90)
        .build_cartesian_2d(0.7..f64::from(k_max) + 0.3, LogAxis::new(y_min, y_max))?;
    chart
        .configure_mesh()
        .x_desc("retry number k (1 = first retry)")
        .y_desc("delay before retry k (log scale)")
        .x_labels(k_max as usize + 1)
        .x_label_formatter(&|x| if (x - x.round()).abs() < 1e-9 { format!("{x:.0}") } else { String::new() })
        .y_label_formatter(&|y| fmt_secs(*y))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.08))
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 16))
        .draw()?;
    for cap in &caps {
        let line =
            DashedLineSeries::new(vec![(0.7, *cap), (f64::from(k_max) + 0.3, *cap)], 6, 4, BLACK.stroke_width(1));
        chart.draw_series(line)?;
    }
    for i in styles.order() {
        let (curve, colour, led) = (&curves[i], styles.colour(i), styles.led(i));
        let visible: Vec<&(u32, [f64; 3])> = curve.iter().filter(|(_, q)| q[1] > 0.0).collect();
        if visible.is_empty() {
            continue;
        }
        let clamp = |x: f64| x.max(y_min);
        let mut band: Vec<(f64, f64)> = visible.iter().map(|(k, q)| (f64::from(*k), clamp(q[2]))).collect();
        band.extend(visible.iter().rev().map(|(k, q)| (f64::from(*k), clamp(q[0]))));
        let median: Vec<(f64, f64)> = visible.iter().map(|(k, q)| (f64::from(*k), q[1])).collect();
        if !led {
            // The rest: the median only, no band or markers.
            draw_variant_line!(chart, styles, i, median, 2)?;
            continue;
        }
        chart.draw_series(std::iter::once(Polygon::new(band, colour.mix(0.15).filled())))?;
        draw_variant_line!(chart, styles, i, median.clone(), 3)?;
        chart.draw_series(median.into_iter().map(|p| Circle::new(p, 4, colour.filled())))?;
    }
    Ok(())
}

fn percentiles(delays: &[DelayBin]) -> Vec<(u32, [f64; 3])> {
    let mut by_retry: BTreeMap<u32, Vec<&DelayBin>> = BTreeMap::new();
    for b in delays {
        by_retry.entry(b.retry).or_default().push(b);
    }
    by_retry
        .into_iter()
        .filter_map(|(k, mut bins)| {
            if bins.iter().map(|b| b.count).sum::<u64>() < SAMPLES_MIN {
                return None;
            }
            bins.sort_by(|a, b| a.low_s.total_cmp(&b.low_s).then(a.high_s.total_cmp(&b.high_s)));
            let q = |s| binned_quantile(&bins, s).unwrap_or(0.0);
            Some((k, [q(0.1), q(0.5), q(0.9)]))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bin(low_s: f64, high_s: f64, count: u64) -> DelayBin {
        DelayBin { retry: 1, low_s, high_s, count }
    }

    #[test]
    fn binned_quantiles_are_exact_at_point_masses_and_inside_bins_otherwise() {
        let zero = bin(0.0, 0.0, 2);
        let spread = bin(1.0, 10.0, 2);
        let cap = bin(10.0, 10.0, 6);
        let bins = vec![&zero, &spread, &cap];
        assert_eq!(binned_quantile(&bins, 0.1), Some(0.0));
        // 30% is halfway through the [1, 10) bin: log-linear midpoint √10.
        assert!((binned_quantile(&bins, 0.3).unwrap() - 10f64.sqrt()).abs() < 1e-12);
        assert_eq!(binned_quantile(&bins, 0.9), Some(10.0));
        assert_eq!(binned_quantile(&[], 0.5), None);
    }
}
