//! Horizontal bar charts of metrics with 95% CI whiskers: per variant, and grouped per hop or
//! tenant.

use super::axes::CategoryAxis;
use super::key::{with_key, KeyItem, Swatch};
use super::narrow;
use super::{variant_colour, DrawResult, Group, FONT};
use crate::metrics::catalogue::Metric;
use crate::metrics::stats::Stat;
use crate::report::data::ReportData;
use crate::report::format::{fmt_tick, fmt_value};
use crate::runner::StatRow;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A metric panel: which metric and how to title it (scale, unit and the meaning of a null value
/// come from the catalogue).
struct Shown {
    metric: Metric,
    title: &'static str,
    axis: &'static str,
    /// A reference value drawn as a dashed line, with its label.
    reference: Option<(f64, &'static str)>,
}

const fn metric(metric: Metric, title: &'static str, axis: &'static str) -> Shown {
    Shown { metric, title, axis, reference: None }
}

fn headline_metrics(with_recovery: bool) -> Vec<Shown> {
    let last = if with_recovery {
        metric(Metric::RecoveryTimeS, "Recovery time after the last fault or spike", "seconds (null: not recovered)")
    } else {
        metric(Metric::LatencySP99, "p99 latency of succeeded requests", "seconds")
    };
    // After a fault or spike the planner's question is the load when the service comes back,
    // not the peak of retries refused while it was down.
    let peak = if with_recovery {
        (
            Metric::PeakAfterOverCapacity,
            "Load when it comes back: peak after the trigger",
            "peak attempts/s after ÷ capacity (×)",
        )
    } else {
        (Metric::PeakOverCapacity, "Peak load over capacity at the first hop", "peak attempts/s ÷ capacity (×)")
    };
    vec![
        Shown {
            reference: Some((1.0, "no retries")),
            ..metric(Metric::Amplification, "Amplification: attempts per request", "attempts ÷ logical requests (×)")
        },
        Shown { reference: Some((1.0, "capacity")), ..metric(peak.0, peak.1, peak.2) },
        metric(Metric::SuccessRatio, "Requests that succeeded", "% of logical requests"),
        metric(Metric::Dlq, "Dead-lettered requests (DLQ)", "requests per run"),
        metric(Metric::Duplicates, "Duplicated side effects", "side effects executed again, per run"),
        last,
    ]
}

/// Width in pixels of the category labels' area: room for the longest label (14 px text at a
/// generous 0.62 em per character).
fn label_px<'a>(labels: impl Iterator<Item = &'a str>) -> u32 {
    let longest = labels.map(|l| l.chars().count()).max().unwrap_or(0);
    ((longest as f64 * 14.0 * 0.62).ceil() as u32 + 18).max(60)
}

/// Width of a chart of three bar panels side by side: each panel its labels plus 330 px of
/// bars and values, at least 1200 px in all.
pub fn three_panels_px(labels: &[&str]) -> u32 {
    (3 * (label_px(labels.iter().copied()) + 330)).max(1200)
}

/// One bar: its vertical position, statistic and colour.
struct Bar<'a> {
    y: f64,
    stat: Option<&'a Stat>,
    colour: RGBColor,
}

struct Panel<'a> {
    title: String,
    axis: &'a str,
    scale: f64,
    suffix: &'a str,
    /// What a null value means for this metric, e.g. `never recovered`.
    null_words: &'static str,
    reference: Option<(f64, &'a str)>,
    bars: Vec<Bar<'a>>,
    /// Category labels at their y positions.
    labels: Vec<(f64, String)>,
}

impl<'a> Panel<'a> {
    /// The panel of metric `m` with its bars and category labels.
    fn of(m: &'a Shown, bars: Vec<Bar<'a>>, labels: Vec<(f64, String)>) -> Self {
        Panel {
            title: m.title.to_string(),
            axis: m.axis,
            scale: m.metric.def().unit.scale(),
            suffix: m.metric.def().unit.suffix(),
            null_words: m.metric.def().null_means,
            reference: m.reference,
            bars,
            labels,
        }
    }
}

impl Panel<'_> {
    /// The largest value drawn (interval tops included, the reference line too), at least 0.
    fn x_max(&self) -> f64 {
        let s = self.scale;
        let high = |st: &Stat| st.ci95.map_or(st.mean.unwrap_or(0.0), |c| c[1]) * s;
        let x_max = self.bars.iter().filter_map(|b| b.stat).map(high).fold(0.0, f64::max);
        self.reference.map_or(x_max, |(r, _)| x_max.max(r * s))
    }

    /// Every bar is known and nothing rises above zero: the panel is one line of text.
    fn is_zero(&self) -> bool {
        self.x_max() == 0.0 && self.bars.iter().all(|b| b.stat.and_then(|st| st.mean).is_some())
    }
}

fn draw_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, panel: &Panel) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let s = panel.scale;
    let x_max = panel.x_max();
    let all_zero = x_max == 0.0;
    if panel.is_zero() {
        // Nothing to compare: one line of text instead of an axis of empty bars.
        let text = format!("{}: 0 in every variant and replication", panel.title);
        return super::empty::one_line(area, &text, BLACK);
    }
    let y_top = panel.bars.iter().map(|b| b.y).fold(0.0, f64::max) + 0.7;
    let label_points: Vec<f64> = panel.labels.iter().map(|l| l.0).collect();
    let label_px = label_px(panel.labels.iter().map(|l| l.1.as_str()));
    // Tick labels about 65 px apart at most, so wide numbers never run into each other.
    let plot_px = area.dim_in_pixel().0.saturating_sub(label_px + 28);
    // Room on the right for the value labels: 30% more than the largest value, and more where a
    // label (14 px text at a generous 0.62 em per character) would run off the panel.
    let x_max = if all_zero {
        1.0
    } else {
        let fits = |(at, text): (f64, String)| {
            let text_px = text.chars().count() as f64 * 14.0 * 0.62 + 6.0;
            let room = (f64::from(plot_px) - text_px).max(f64::from(plot_px) * 0.25);
            at * f64::from(plot_px) / room
        };
        let labels = panel.bars.iter().filter_map(|b| value_label(b, s, (panel.suffix, panel.null_words)));
        labels.map(fits).fold(x_max * 1.3, f64::max)
    };
    let x_ticks = (plot_px / 65).clamp(2, 6) as usize;
    let mut chart = ChartBuilder::on(area)
        .caption(&panel.title, (FONT, 17))
        .margin(10)
        .margin_right(18)
        .x_label_area_size(44)
        .y_label_area_size(label_px)
        .build_cartesian_2d(0.0..x_max, CategoryAxis { range: -0.7..y_top, ticks: label_points })?;
    let labels = &panel.labels;
    chart
        .configure_mesh()
        .x_desc(panel.axis)
        .y_label_formatter(&|y| labels.iter().find(|l| (l.0 - y).abs() < 1e-9).map(|l| l.1.clone()).unwrap_or_default())
        .x_label_formatter(&|x| if all_zero { String::new() } else { fmt_tick(*x) })
        .disable_y_mesh()
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.08))
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 14))
        .x_labels(x_ticks)
        .draw()?;
    if let Some((r, text)) = panel.reference {
        let x = r * s;
        let dashed = DashedLineSeries::new(vec![(x, -0.7), (x, y_top)], 6, 4, BLACK.mix(0.6).stroke_width(1));
        chart.draw_series(dashed)?;
        let grey = BLACK.mix(0.7);
        let style = TextStyle::from((FONT, 12).into_font()).pos(Pos::new(HPos::Left, VPos::Top)).color(&grey);
        chart.draw_series(std::iter::once(Text::new(format!(" {text}"), (x, y_top), style)))?;
    }
    for bar in &panel.bars {
        draw_bar(&mut chart, bar, s, (panel.suffix, panel.null_words))?;
    }
    Ok(())
}

fn draw_bar<DB: DrawingBackend, CT>(
    chart: &mut ChartContext<'_, DB, CT>,
    bar: &Bar,
    s: f64,
    (suffix, nulls): (&str, &str),
) -> DrawResult
where
    DB::ErrorType: 'static,
    CT: plotters::coord::CoordTranslate<From = (f64, f64)>,
{
    let half = 0.36;
    let y = bar.y;
    let Some(mean) = bar.stat.and_then(|st| st.mean) else {
        // Off the axis line by a few pixels, vertically centred on the bar's row.
        let style = TextStyle::from((FONT, 13).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
        let text = Text::new(format!("   n/a: {nulls} in every replication"), (0.0, y), style);
        chart.draw_series(std::iter::once(text))?;
        return Ok(());
    };
    let st = bar.stat.expect("mean implies a stat");
    let m = mean * s;
    chart.draw_series(std::iter::once(Rectangle::new([(0.0, y - half), (m, y + half)], bar.colour.filled())))?;
    let (lo, hi) = st.ci95.map_or((m, m), |c| (c[0] * s, c[1] * s));
    let whisker = BLACK.stroke_width(2);
    let cap = half * 0.55;
    chart.draw_series([
        PathElement::new(vec![(lo, y), (hi, y)], whisker),
        PathElement::new(vec![(lo, y - cap), (lo, y + cap)], whisker),
        PathElement::new(vec![(hi, y - cap), (hi, y + cap)], whisker),
    ])?;
    let Some((at, text)) = value_label(bar, s, (suffix, nulls)) else { return Ok(()) };
    let style = TextStyle::from((FONT, 14).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    chart.draw_series(std::iter::once(Text::new(text, (at, y), style)))?;
    Ok(())
}

/// A bar's value label and where it starts (the end of the bar or of its whisker), for a bar
/// with a mean.
fn value_label(bar: &Bar, s: f64, (suffix, nulls): (&str, &str)) -> Option<(f64, String)> {
    let st = bar.stat?;
    let m = st.mean? * s;
    let hi = st.ci95.map_or(m, |c| c[1] * s);
    let missing = st.values.iter().filter(|v| v.is_none()).count();
    let mut text = fmt_value(m, suffix);
    if missing > 0 {
        text.push_str(&format!(" ({missing}/{} {nulls})", st.values.len()));
    }
    Some((hi.max(m), format!(" {text}")))
}

/// The headline metrics per variant: a 3 × 2 grid of bar panels.
pub fn draw_metrics<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &ReportData) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let title = format!(
        "{}: key metrics per variant (mean of {}, whiskers: 95% CI)",
        data.scenario,
        crate::report::format::count_of(u64::from(data.replications), "replication")
    );
    let root = narrow::titled(root, &title, 24)?;
    let narrow = narrow::is_narrow(&root);
    metric_panels(data, |panels| {
        let areas = if narrow {
            // Narrow: one panel per row, a panel of zeros one line high.
            let mut rest = root.clone();
            let mut areas = Vec::new();
            for panel in panels {
                let (area, below) = rest.split_vertically(bar_panel_px(panel, data.variants.len()));
                areas.push(area);
                rest = below;
            }
            areas
        } else {
            root.split_evenly((2, 3))
        };
        for (panel, area) in panels.iter().zip(&areas) {
            draw_panel(area, panel)?;
        }
        Ok(())
    })
}

/// Height of one bar panel of `variants` bars drawn one per row (a panel of zeros: its line).
fn bar_panel_px(panel: &Panel, variants: usize) -> u32 {
    if panel.is_zero() {
        super::empty::LINE_PANEL_PX + 16
    } else {
        90 + 34 * variants as u32
    }
}

/// Height of the narrow drawing of the headline metrics: title and panels one per row.
pub fn metrics_narrow_px(data: &ReportData) -> u32 {
    metric_panels(data, |panels| 60 + panels.iter().map(|p| bar_panel_px(p, data.variants.len())).sum::<u32>())
}

/// The headline metrics' panels, handed to `f`.
fn metric_panels<R>(data: &ReportData, f: impl FnOnce(&[Panel]) -> R) -> R {
    let with_recovery = data.shows_recovery();
    let rows: Vec<&StatRow> = data.variants.iter().map(|v| &v.metrics).collect();
    let metrics: Vec<Shown> = headline_metrics(with_recovery)
        .into_iter()
        .map(|m| peak_fallback(m, &rows, "Peak load at the first hop"))
        .collect();
    let n = data.variants.len();
    let labels: Vec<(f64, String)> =
        data.variants.iter().enumerate().map(|(i, v)| ((n - 1 - i) as f64, v.name.clone())).collect();
    let panels: Vec<Panel> = metrics
        .iter()
        .map(|m| {
            let bars = data
                .variants
                .iter()
                .enumerate()
                .map(|(i, v)| Bar {
                    y: (n - 1 - i) as f64,
                    stat: v.metrics.get(m.metric),
                    colour: variant_colour(data, i),
                })
                .collect();
            Panel::of(m, bars, labels.clone())
        })
        .collect();
    f(&panels)
}

/// Peak over capacity says little when there is no capacity (an `occ` register) or the load
/// stays far below it (0.0000496×): then the panel shows the peak in attempts/s instead.
fn peak_fallback(m: Shown, rows: &[&StatRow], title: &'static str) -> Shown {
    if m.metric != Metric::PeakOverCapacity {
        return m;
    }
    let largest = rows
        .iter()
        .filter_map(|row| row.get(m.metric)?.mean)
        .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))));
    if largest.is_some_and(|r| r >= 0.05) {
        m
    } else {
        metric(Metric::PeakAttemptsPerS, title, "peak attempts per second (capacity far above, or none)")
    }
}

fn scoped_metrics(scope: Group) -> Vec<Shown> {
    match scope {
        Group::Hops => vec![
            metric(
                Metric::Amplification,
                "Attempts at each hop per logical request",
                "attempts ÷ logical requests (×)",
            ),
            Shown {
                reference: Some((1.0, "capacity")),
                ..metric(Metric::PeakOverCapacity, "Peak load over capacity", "peak attempts/s ÷ capacity (×)")
            },
            metric(Metric::WastedWorkS, "Wasted work (caller had given up)", "service seconds per run"),
            metric(Metric::QueueWaitSMean, "Mean queue wait", "seconds"),
        ],
        Group::Tenants => vec![
            metric(Metric::SuccessRatio, "Requests that succeeded", "% of the tenant's requests"),
            metric(Metric::Dlq, "Dead-lettered requests (DLQ)", "requests per run"),
            metric(Metric::Amplification, "Attempts per request", "attempts ÷ logical requests (×)"),
            metric(Metric::LatencySP99, "p99 latency of succeeded requests", "seconds"),
        ],
    }
}

/// Metrics per hop (chains) or per tenant, one group of variant bars per hop/tenant.
pub fn draw_scoped<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &ReportData, scope: Group) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let what = if scope == Group::Hops { "hop" } else { "tenant" };
    let title = format!(
        "{}: metrics per {what} and variant (mean of {}, whiskers: 95% CI)",
        data.scenario,
        crate::report::format::count_of(u64::from(data.replications), "replication")
    );
    let root = narrow::titled(root, &title, 24)?;
    let key: Vec<KeyItem> = data
        .variants
        .iter()
        .enumerate()
        .map(|(i, v)| (Swatch::Fill(variant_colour(data, i).mix(1.0)), v.label()))
        .collect();
    let root = with_key(&root, &key)?;
    let areas = if narrow::is_narrow(&root) { root.split_evenly((4, 1)) } else { root.split_evenly((2, 2)) };
    let rows =
        |v: &crate::report::data::VariantData| if scope == Group::Hops { v.hops.clone() } else { v.tenants.clone() };
    let groups: Vec<String> = rows(&data.variants[0]).into_iter().map(|r| r.0).collect();
    let n = data.variants.len();
    let stride = (n + 1) as f64;
    let y_of = |g: usize, i: usize| (groups.len() - 1 - g) as f64 * stride + (n - 1 - i) as f64;
    let labels: Vec<(f64, String)> =
        groups.iter().enumerate().map(|(g, name)| (y_of(g, 0) - (n - 1) as f64 / 2.0, name.clone())).collect();
    let all_rows: Vec<_> = data.variants.iter().map(rows).collect();
    let scoped_rows: Vec<&StatRow> = all_rows.iter().flat_map(|rows| rows.iter().map(|(_, row)| row)).collect();
    let metrics: Vec<Shown> =
        scoped_metrics(scope).into_iter().map(|m| peak_fallback(m, &scoped_rows, "Peak load at each hop")).collect();
    for (m, area) in metrics.iter().zip(&areas) {
        let mut bars = Vec::new();
        for (i, variant_rows) in all_rows.iter().enumerate() {
            for (g, (_, row)) in variant_rows.iter().enumerate().take(groups.len()) {
                bars.push(Bar { y: y_of(g, i), stat: row.get(m.metric), colour: variant_colour(data, i) });
            }
        }
        draw_panel(area, &Panel::of(m, bars, labels.clone()))?;
    }
    Ok(())
}
