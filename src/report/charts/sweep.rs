//! Sweep charts, drawn from `sweep.json`: a metric against the varied parameter with 95% CI
//! bands (one varied parameter), or heatmaps per variant (two varied parameters).

use super::axes::{log_bound, CategoryAxis, LogAxis};
use super::key::{with_key, KeyItem, Swatch};
use super::narrow;
use super::{palette, DrawResult, FONT};
use crate::metrics::catalogue::Metric;
use crate::report::data::{SweepAxis, SweepData};
use crate::report::format::fmt_value;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A sweep chart's metric and its panel title (scale and unit come from the catalogue).
pub struct SweepMetric {
    /// The metric.
    pub metric: Metric,
    /// Panel title.
    pub title: &'static str,
}

impl SweepMetric {
    /// Scale for display (100 for shares in %).
    pub fn scale(&self) -> f64 {
        self.metric.def().unit.scale()
    }

    /// Unit after values: `×`, `%`; ` s` formats a duration.
    pub fn suffix(&self) -> &'static str {
        self.metric.def().unit.suffix()
    }
}

/// The metrics a sweep chart shows, in panel order (see [`sweep_metrics`] for the first).
pub const SWEEP_METRICS: [SweepMetric; 6] = [
    SweepMetric { metric: Metric::PeakOverCapacity, title: "Peak load ÷ capacity (×)" },
    SweepMetric { metric: Metric::Amplification, title: "Attempts per request (×)" },
    SweepMetric { metric: Metric::SuccessRatio, title: "Requests that succeeded (%)" },
    SweepMetric { metric: Metric::Dlq, title: "Dead-lettered requests per run" },
    SweepMetric { metric: Metric::Duplicates, title: "Duplicated side effects per run" },
    SweepMetric { metric: Metric::LatencySP99, title: "p99 latency of succeeded requests (s)" },
];

/// The panels of `data`'s sweep chart: the headline is the load after recovery, so with a
/// trigger (a post-recovery peak in some cell) the first panel is the peak after recovery; without
/// one, the run's peak.
pub fn sweep_metrics(data: &SweepData) -> [SweepMetric; 6] {
    let mut metrics = SWEEP_METRICS;
    let cells: usize = data.axes.iter().map(|a| a.labels.len()).product();
    let after = (0..cells).any(|c| {
        (0..data.variants.len())
            .any(|v| data.stat(c, v, Metric::PeakAfterOverCapacity).is_some_and(|s| s.mean.is_some()))
    });
    if after {
        metrics[0] =
            SweepMetric { metric: Metric::PeakAfterOverCapacity, title: "Peak load after recovery ÷ capacity (×)" };
    }
    metrics
}

/// The horizontal axis of a one-parameter sweep: (low, high, log?) over the swept values'
/// positions (numeric, or 0, 1, 2, … for names).
fn x_positions(axis: &SweepAxis) -> (Vec<f64>, bool) {
    match &axis.numbers {
        Some(xs) => {
            let (lo, hi) = xs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
            // A wide positive range (1,000 to 100,000 clients) reads best on a log axis.
            (xs.clone(), log_like(lo, hi))
        }
        None => ((0..axis.labels.len()).map(|i| i as f64).collect(), false),
    }
}

/// True when a range of positive positions is wide enough for [`x_positions`] to use a log axis.
fn log_like(lo: f64, hi: f64) -> bool {
    lo > 0.0 && hi / lo >= 20.0
}

/// The colour of the sweep's variant `v`: the palette's colour for its name.
fn sweep_colour(data: &SweepData, v: usize) -> RGBColor {
    let names: Vec<&str> = data.variants.iter().map(String::as_str).collect();
    palette::colours_of(&names)[v]
}

/// One panel per headline metric: the metric against the varied parameter, a line per variant
/// with its 95% CI as a band.
pub fn draw_lines<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &SweepData) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let axis = &data.axes[0];
    let title = format!(
        "{}: metrics against {} per variant (mean, band: 95% CI, {} per cell)",
        data.scenario,
        axis.path,
        crate::report::format::count_of(u64::from(data.replications), "replication")
    );
    let root = narrow::titled(root, &title, 22)?;
    let key: Vec<KeyItem> = data
        .variants
        .iter()
        .enumerate()
        .map(|(i, v)| (Swatch::Line(sweep_colour(data, i).mix(1.0)), v.clone()))
        .collect();
    let root = with_key(&root, &key)?;
    let (xs, log) = x_positions(axis);
    let per_row = narrow::columns(&root, 3);
    let panels = root.split_evenly((6 / per_row, per_row));
    for (m, panel) in sweep_metrics(data).iter().zip(panels.iter()) {
        if log {
            let (lo, hi) = (xs.iter().copied().fold(f64::INFINITY, f64::min), xs.iter().copied().fold(0.0, f64::max));
            let x_axis = LogAxis::with_ticks(lo / 1.25, hi * 1.25, xs.clone());
            draw_line_panel(panel, data, m, &xs, x_axis)?;
        } else {
            let (lo, hi) = (xs.iter().copied().fold(f64::INFINITY, f64::min), xs.iter().copied().fold(0.0, f64::max));
            let pad = ((hi - lo) * 0.06).max(0.3);
            let x_axis = CategoryAxis { range: lo - pad..hi + pad, ticks: xs.clone() };
            draw_line_panel(panel, data, m, &xs, x_axis)?;
        }
    }
    Ok(())
}

fn draw_line_panel<DB: DrawingBackend, X>(
    panel: &DrawingArea<DB, Shift>,
    data: &SweepData,
    m: &SweepMetric,
    xs: &[f64],
    x_axis: X,
) -> DrawResult
where
    DB::ErrorType: 'static,
    X: Ranged<ValueType = f64, FormatOption = plotters::coord::ranged1d::DefaultFormatting>,
{
    let axis = &data.axes[0];
    // Per variant: (x, mean, ci low, ci high) of every cell that holds the metric.
    let series: Vec<Vec<(f64, f64, f64, f64)>> = (0..data.variants.len())
        .map(|v| {
            xs.iter()
                .enumerate()
                .filter_map(|(c, &x)| {
                    let s = data.stat(data.cell(&[c]), v, m.metric)?;
                    let mean = s.mean? * m.scale();
                    let [lo, hi] = s.ci95.map_or([mean, mean], |c| [c[0] * m.scale(), c[1] * m.scale()]);
                    Some((x, mean, lo, hi))
                })
                .collect()
        })
        .collect();
    if series.iter().flatten().all(|p| p.3 == 0.0) {
        // Nothing to plot: the panel's title and one line of text, not an empty axis.
        let note = if series.iter().all(Vec::is_empty) {
            "no value in any variant or cell"
        } else {
            "0 in every variant and cell"
        };
        let (_, h) = panel.dim_in_pixel();
        let style = TextStyle::from((FONT, 15).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
        panel.draw(&Text::new(format!("{}: {note}", m.title), (16, h as i32 / 2), style))?;
        return Ok(());
    }
    let y_max = series.iter().flatten().map(|p| p.3).fold(0.0, f64::max) * 1.1;
    // Values that span decades (all positive) read on a log axis, where linear growth against a
    // log x axis is not mistaken for an explosion.
    let y_min = series.iter().flatten().map(|p| p.2.min(p.1)).fold(f64::INFINITY, f64::min);
    let y_log = y_min > 0.0 && y_max / y_min >= Y_LOG_SPAN;
    let labels = &axis.labels;
    let x_desc = if log_like(xs.iter().copied().fold(f64::INFINITY, f64::min), xs.iter().copied().fold(0.0, f64::max))
        && axis.numbers.is_some()
    {
        format!("{} (log scale)", axis.path)
    } else {
        axis.path.clone()
    };
    // A number typed in the --vary list is shown with thousands separators (1,000, not 1000).
    let x_label = |x: &f64| {
        xs.iter()
            .position(|p| (p - x).abs() <= 1e-9 * p.abs().max(1.0))
            .map(|i| match labels[i].parse::<f64>() {
                Ok(n) if axis.numbers.is_some() => crate::report::format::fmt_tick(n),
                _ => labels[i].clone(),
            })
            .unwrap_or_default()
    };
    let mut builder = ChartBuilder::on(panel);
    builder.caption(m.title, (FONT, 17)).margin(10).margin_right(20).x_label_area_size(46).y_label_area_size(70);
    macro_rules! finish {
        ($chart:expr, $y_desc:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .x_desc(x_desc.as_str())
                .y_desc($y_desc)
                .x_label_formatter(&x_label)
                .y_label_formatter(&|y| crate::report::format::fmt_tick(*y))
                .light_line_style(WHITE.mix(0.0))
                .bold_line_style(BLACK.mix(0.08))
                .label_style((FONT, 13))
                .axis_desc_style((FONT, 14))
                .draw()?;
            for (v, points) in series.iter().enumerate() {
                let colour = sweep_colour(data, v);
                if points.len() > 1 {
                    let mut band: Vec<(f64, f64)> = points.iter().map(|p| (p.0, p.3)).collect();
                    band.extend(points.iter().rev().map(|p| (p.0, p.2)));
                    chart.draw_series(std::iter::once(Polygon::new(band, colour.mix(0.15).filled())))?;
                }
                chart.draw_series(LineSeries::new(points.iter().map(|p| (p.0, p.1)), colour.stroke_width(2)))?;
                chart.draw_series(points.iter().map(|p| Circle::new((p.0, p.1), 4, colour.filled())))?;
            }
        }};
    }
    if y_log {
        let y_axis = LogAxis::new(log_bound(y_min, 1.2, false), log_bound(y_max, 1.0, true));
        finish!(builder.build_cartesian_2d(x_axis, y_axis)?, "log scale");
    } else {
        finish!(builder.build_cartesian_2d(x_axis, 0.0..y_max)?, "");
    }
    Ok(())
}

/// A sweep panel's y axis is logarithmic when its positive values span this factor or more.
const Y_LOG_SPAN: f64 = 30.0;

/// Viridis (perceptually uniform, readable with colour-vision deficiencies and in greyscale) at
/// `t` in [0, 1], interpolated between nine of its published colours.
pub fn viridis(t: f64) -> RGBColor {
    const STOPS: [(u8, u8, u8); 9] = [
        (68, 1, 84),
        (71, 44, 122),
        (59, 81, 139),
        (44, 113, 142),
        (33, 144, 141),
        (39, 173, 129),
        (92, 200, 99),
        (170, 220, 50),
        (253, 231, 37),
    ];
    let x = t.clamp(0.0, 1.0) * (STOPS.len() - 1) as f64;
    let i = (x.floor() as usize).min(STOPS.len() - 2);
    let f = x - i as f64;
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    RGBColor(mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Heatmaps of `metric` over two varied parameters, one panel per variant, one colour scale.
pub fn draw_heatmaps<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &SweepData, m: &SweepMetric) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (rows, cols) = (&data.axes[0], &data.axes[1]);
    let title = format!(
        "{}: {} over {} × {} per variant (mean of {} per cell)",
        data.scenario,
        m.title,
        rows.path,
        cols.path,
        crate::report::format::count_of(u64::from(data.replications), "replication")
    );
    let root = narrow::titled(root, &title, 22)?;
    let values: Vec<f64> = (0..data.variants.len())
        .flat_map(|v| (0..rows.labels.len() * cols.labels.len()).filter_map(move |c| data.stat(c, v, m.metric)?.mean))
        .map(|x| x * m.scale())
        .collect();
    let (lo, hi) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
    let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
    let shade = |x: f64| viridis(if hi > lo { (x - lo) / (hi - lo) } else { 0.5 });
    let key: Vec<KeyItem> = (0..5)
        .map(|k| {
            let x = lo + (hi - lo) * k as f64 / 4.0;
            let label =
                if k == 0 { format!("colour scale: {}", fmt_value(x, m.suffix())) } else { fmt_value(x, m.suffix()) };
            (Swatch::Fill(shade(x).mix(1.0)), label)
        })
        .collect();
    let root = with_key(&root, &key)?;
    let columns = narrow::columns(&root, data.variants.len().min(3));
    let panels = root.split_evenly((data.variants.len().div_ceil(columns), columns));
    for (v, panel) in panels.iter().enumerate().take(data.variants.len()) {
        let tick = |n: usize| (0..n).map(|i| i as f64).collect::<Vec<_>>();
        let x_axis = CategoryAxis { range: -0.5..cols.labels.len() as f64 - 0.5, ticks: tick(cols.labels.len()) };
        let y_axis = CategoryAxis { range: -0.5..rows.labels.len() as f64 - 0.5, ticks: tick(rows.labels.len()) };
        let colour = sweep_colour(data, v);
        let mut chart = ChartBuilder::on(panel)
            .caption(&data.variants[v], (FONT, 18).into_font().color(&colour.mix(1.0)))
            .margin(12)
            .x_label_area_size(46)
            .y_label_area_size(90)
            .build_cartesian_2d(x_axis, y_axis)?;
        let label_of = |labels: &[String], x: f64| labels.get(x.round() as usize).cloned().unwrap_or_default();
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc(cols.path.as_str())
            .y_desc(rows.path.as_str())
            .x_label_formatter(&|x| label_of(&cols.labels, *x))
            .y_label_formatter(&|y| label_of(&rows.labels, *y))
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .draw()?;
        for r in 0..rows.labels.len() {
            for c in 0..cols.labels.len() {
                let Some(mean) = data.stat(data.cell(&[r, c]), v, m.metric).and_then(|s| s.mean) else { continue };
                let x = mean * m.scale();
                let (fx, fy) = (c as f64, r as f64);
                let fill = shade(x);
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(fx - 0.5, fy - 0.5), (fx + 0.5, fy + 0.5)],
                    fill.filled(),
                )))?;
                // Light text on the dark end of viridis, dark text on the light end.
                let ink = if (f64::from(fill.0) * 0.3 + f64::from(fill.1) * 0.59 + f64::from(fill.2) * 0.11) < 128.0 {
                    WHITE
                } else {
                    BLACK
                };
                let style =
                    TextStyle::from((FONT, 14).into_font()).pos(Pos::new(HPos::Center, VPos::Center)).color(&ink);
                chart.draw_series(std::iter::once(Text::new(fmt_value(x, m.suffix()), (fx, fy), style)))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viridis_runs_from_purple_to_yellow_and_clamps() {
        assert_eq!(viridis(0.0), RGBColor(68, 1, 84));
        assert_eq!(viridis(1.0), RGBColor(253, 231, 37));
        assert_eq!(viridis(-3.0), viridis(0.0));
        assert_eq!(viridis(0.5), RGBColor(33, 144, 141));
    }
}

/// The charts of a sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepChart {
    /// Headline metrics against the one varied parameter.
    Lines,
    /// Heatmap of `SWEEP_METRICS[i]` over two varied parameters.
    Heatmap(usize),
}

impl SweepChart {
    /// The charts that apply: lines for one varied parameter, heatmaps of the peak and of the
    /// success ratio for two, none beyond (a grid of three or more axes needs a custom view).
    pub fn for_sweep(data: &SweepData) -> Vec<SweepChart> {
        match data.axes.len() {
            1 => vec![SweepChart::Lines],
            2 => vec![SweepChart::Heatmap(0), SweepChart::Heatmap(2)],
            _ => Vec::new(),
        }
    }
}

/// A sweep chart with its data.
pub struct SweepFigure<'a> {
    /// Which chart.
    pub chart: SweepChart,
    /// The sweep.
    pub data: &'a SweepData,
}

impl super::Figure for SweepFigure<'_> {
    fn stem(&self) -> String {
        match self.chart {
            SweepChart::Lines => "sweep_metrics".into(),
            SweepChart::Heatmap(i) => format!("sweep_heatmap_{}", sweep_metrics(self.data)[i].metric),
        }
    }

    fn caption(&self) -> String {
        match self.chart {
            SweepChart::Lines => {
                format!("Headline metrics against {}; bands are 95% confidence intervals.", self.data.axes[0].path)
            }
            SweepChart::Heatmap(i) => format!(
                "{} for every combination of {} and {}, one panel per variant, one colour scale.",
                sweep_metrics(self.data)[i].title,
                self.data.axes[0].path,
                self.data.axes[1].path
            ),
        }
    }

    fn size(&self) -> (u32, u32) {
        match self.chart {
            SweepChart::Lines => (1500, 860),
            SweepChart::Heatmap(_) => {
                let panels_down = self.data.variants.len().div_ceil(3) as u32;
                let cells_down = self.data.axes[0].labels.len() as u32;
                (1500, 110 + panels_down * (130 + 48 * cells_down))
            }
        }
    }

    fn narrow_size(&self) -> Option<(u32, u32)> {
        let key = 26 * self.data.variants.len().div_ceil(3) as u32;
        match self.chart {
            SweepChart::Lines => Some((narrow::NARROW_PX, 110 + key + 6 * 300)),
            SweepChart::Heatmap(_) => {
                let cells_down = self.data.axes[0].labels.len() as u32;
                Some((narrow::NARROW_PX, 140 + self.data.variants.len() as u32 * (130 + 48 * cells_down)))
            }
        }
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        match self.chart {
            SweepChart::Lines => draw_lines(root, self.data),
            SweepChart::Heatmap(i) => draw_heatmaps(root, self.data, &sweep_metrics(self.data)[i]),
        }
    }
}
