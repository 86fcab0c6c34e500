//! Load over time: small multiples (variant × hop or tenant) with first attempts and retries
//! stacked, and an overlay of all variants on a log axis.

use super::axes::{log_bound, LogAxis};
use super::key::{with_key, KeyItem, Swatch};
use super::narrow;
use super::{downsample, variant_colour, DrawResult, Group, Lines, FAULT_FILL, FONT};
use crate::metrics::capacity::capacity_with_workers;
use crate::metrics::catalogue::Metric;
use crate::report::charts::palette::draw_variant_line;
use crate::report::data::{ReportData, VariantData};
use crate::report::format::{fmt_num, fmt_tick};
use crate::runner::{column_index, MeanSeries, SERIES_COLUMNS, WORKERS_COLUMN};
use plotters::coord::ranged1d::ValueFormatter;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

mod cache;
mod tenants;
pub use cache::{cache_hops, draw_cache};
pub use tenants::COLUMNS_MAX as TENANT_COLUMNS_MAX;

/// Most points a line gets (longer series are averaged down).
pub(super) const POINTS_MAX: usize = 1500;

// Columns of `SERIES_COLUMNS` used here.
const ATTEMPTS: usize = column_index(&SERIES_COLUMNS, "attempts");
const FIRST_ATTEMPTS: usize = column_index(&SERIES_COLUMNS, "first_attempts");

fn series_of(v: &VariantData, scope: Group) -> &[MeanSeries] {
    match scope {
        Group::Hops => &v.hop_series,
        Group::Tenants => &v.tenant_series,
    }
}

/// (time in `unit`, value per second) of column `col`.
pub(super) fn rate(series: &MeanSeries, col: usize, bucket_s: f64, unit: TimeUnit) -> Vec<(f64, f64)> {
    let points: Vec<(f64, f64)> =
        series.rows.iter().enumerate().map(|(b, r)| (b as f64 * bucket_s / unit.secs, r[col] / bucket_s)).collect();
    downsample(&points, POINTS_MAX)
}

/// The unit of a time axis: seconds for short runs, minutes or hours for long ones, so ticks
/// read `2 h`, not `7,200`.
#[derive(Clone, Copy, Debug)]
pub(super) struct TimeUnit {
    pub(super) secs: f64,
    pub(super) desc: &'static str,
}

impl TimeUnit {
    fn for_span(span_s: f64) -> TimeUnit {
        if span_s > 3.0 * 3600.0 {
            TimeUnit { secs: 3600.0, desc: "time since start (h)" }
        } else if span_s > 600.0 {
            TimeUnit { secs: 60.0, desc: "time since start (min)" }
        } else {
            TimeUnit { secs: 1.0, desc: "time since start (s)" }
        }
    }

    /// The unit's symbol.
    fn short(self) -> &'static str {
        match self.secs {
            s if s >= 3600.0 => "h",
            s if s >= 60.0 => "min",
            _ => "s",
        }
    }
}

/// The time axis: its end (in its unit) and the unit.
pub(super) fn time_axis(data: &ReportData) -> (f64, TimeUnit) {
    let buckets = data.variants.iter().flat_map(|v| v.hop_series.iter().map(|s| s.rows.len())).max().unwrap_or(0);
    let span_s = buckets.max(2) as f64 * data.bucket_s;
    let unit = TimeUnit::for_span(span_s);
    (span_s / unit.secs, unit)
}

pub(super) fn shade_faults<DB: DrawingBackend, CT>(
    chart: &mut ChartContext<'_, DB, CT>,
    v: &VariantData,
    hop: Option<&str>,
    (t_max, y_low, y_high): (f64, f64, f64),
    unit: TimeUnit,
) -> DrawResult
where
    DB::ErrorType: 'static,
    CT: plotters::coord::CoordTranslate<From = (f64, f64)>,
{
    for f in v.setup.faults.iter().filter(|f| hop.is_none_or(|h| f.hop == h)) {
        let (from, to) = (f.from_s / unit.secs, (f.to_s / unit.secs).min(t_max));
        let area = Rectangle::new([(from, y_low), (to, y_high)], FAULT_FILL.mix(0.18).filled());
        chart.draw_series(std::iter::once(area))?;
    }
    // A load spike reaches every hop through the first one.
    for s in &v.setup.spikes {
        let (from, to) = (s.from_s / unit.secs, (s.to_s / unit.secs).min(t_max));
        let area = Rectangle::new([(from, y_low), (to, y_high)], SPIKE_FILL.mix(0.16).filled());
        chart.draw_series(std::iter::once(area))?;
    }
    Ok(())
}

/// Tint of load-spike windows.
const SPIKE_FILL: RGBColor = RGBColor(230, 120, 30);

/// Legend entry for the load spikes, if any.
pub(super) fn spike_key(data: &ReportData) -> Option<KeyItem> {
    let mut kinds: Vec<String> = Vec::new();
    for s in data.variants.iter().flat_map(|v| &v.setup.spikes) {
        let text = format!("{} at {}/s", s.tenant, fmt_tick(s.rate_per_s));
        if !kinds.contains(&text) {
            kinds.push(text);
        }
    }
    (!kinds.is_empty()).then(|| (Swatch::Fill(SPIKE_FILL.mix(0.3)), format!("load spike: {}", kinds.join("; "))))
}

/// Legend entry for the fault windows drawn at `hop` (all hops when None), if there are any.
pub(super) fn fault_key(data: &ReportData, hop: Option<&str>) -> Option<KeyItem> {
    let mut kinds: Vec<String> = Vec::new();
    for v in &data.variants {
        for f in v.setup.faults.iter().filter(|f| hop.is_none_or(|h| f.hop == h)) {
            let text = if hop.is_some() { f.summary.clone() } else { format!("{} at {}", f.summary, f.hop) };
            if !kinds.contains(&text) {
                kinds.push(text);
            }
        }
    }
    (!kinds.is_empty()).then(|| (Swatch::Fill(FAULT_FILL.mix(0.3)), format!("fault window: {}", kinds.join("; "))))
}

/// A capacity line with its value written just above it at the right end: `points` (time in the
/// chart's unit, attempts/s) are a step line when capacity moves over time (autoscaling), two
/// points otherwise. `lift` maps a capacity to the label's height.
fn draw_capacity<DB: DrawingBackend, CT>(
    chart: &mut ChartContext<'_, DB, CT>,
    points: Vec<(f64, f64)>,
    t_max: f64,
    lift: impl Fn(f64) -> f64,
) -> DrawResult
where
    DB::ErrorType: 'static,
    CT: plotters::coord::CoordTranslate<From = (f64, f64)>,
{
    let Some(&(_, last)) = points.last() else { return Ok(()) };
    let moves = points.iter().any(|p| p.1 != last);
    chart.draw_series(DashedLineSeries::new(points, 8, 5, BLACK.stroke_width(2)))?;
    let style = TextStyle::from((FONT, 13).into_font()).pos(Pos::new(HPos::Right, VPos::Bottom));
    let words = if moves { "capacity now" } else { "capacity" };
    let text = Text::new(format!("{words} {}/s ", fmt_tick(last)), (t_max, lift(last)), style);
    chart.draw_series(std::iter::once(text))?;
    Ok(())
}

/// Hop `h`'s capacity over time in variant `v` as (time in `unit`, attempts/s): a step line
/// following its workers (autoscaling) where they move, else a flat line over `[from, t_max]`.
fn capacity_points(
    v: &VariantData,
    h: usize,
    cap: f64,
    (from, t_max): (f64, f64),
    unit: TimeUnit,
    bucket_s: f64,
) -> Vec<(f64, f64)> {
    let rows = v.hop_series.get(h).map_or(&[][..], |s| &s.rows[..]);
    let start = rows.first().map_or(0.0, |r| r[WORKERS_COLUMN]);
    if rows.iter().all(|r| r[WORKERS_COLUMN] == start) {
        return vec![(from, cap), (t_max, cap)];
    }
    let mut points = Vec::with_capacity(2 * rows.len());
    for (b, r) in rows.iter().enumerate() {
        let level = capacity_with_workers(cap, r[WORKERS_COLUMN], start);
        let (t0, t1) = (b as f64 * bucket_s / unit.secs, (b + 1) as f64 * bucket_s / unit.secs);
        if t1 < from || t0 > t_max {
            continue;
        }
        points.push((t0.max(from), level));
        points.push((t1.min(t_max), level));
    }
    points
}

/// Grid, tick labels and axis descriptions of a time chart, in the style every load chart shares;
/// `small` for the panels of a grid of small multiples.
pub(super) fn draw_time_mesh<DB, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, Y>>,
    (x_desc, y_desc): (&str, &str),
    small: bool,
) -> DrawResult
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    Y: Ranged<ValueType = f64> + ValueFormatter<f64>,
{
    let (label, desc) = if small { (13, 14) } else { (14, 15) };
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .y_label_formatter(&|y| fmt_tick(*y))
        .x_label_formatter(&|x| fmt_tick(*x))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.08))
        .label_style((FONT, label))
        .axis_desc_style((FONT, desc))
        .draw()?;
    Ok(())
}

/// Small multiples: one row per variant, one column per hop (or tenant).
pub fn draw_grid<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &ReportData, scope: Group) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let what = if scope == Group::Hops { "each hop" } else { "each tenant" };
    let title = format!(
        "{}: attempts/s at {what} per variant — first attempts vs retries (mean of {})",
        data.scenario,
        crate::report::format::count_of(u64::from(data.replications), "replication")
    );
    let root = narrow::titled(root, &title, 24)?;
    // Many tenants: the busiest few keep a column, the rest are summed into "others".
    let grouping = if scope == Group::Tenants { tenants::grouping(data) } else { None };
    let grid: Vec<Vec<tenants::Column>> = data
        .variants
        .iter()
        .map(|v| match &grouping {
            Some(g) => tenants::columns(v, g),
            None => {
                let scoped = |c: usize| match scope {
                    Group::Hops => v.hops.get(c).map(|h| &h.1),
                    Group::Tenants => v.tenants.get(c).map(|t| &t.1),
                };
                series_of(v, scope).iter().enumerate().map(|(c, s)| (s.clone(), scoped(c))).collect()
            }
        })
        .collect();
    let columns = grid[0].len();
    let (t_max, unit) = time_axis(data);
    // One y scale per column so the variants' loads compare at a glance: linear, or logarithmic
    // when the loads span decades (one variant's spike would flatten the others' walls).
    let y_scales: Vec<YScale> = (0..columns)
        .map(|c| {
            let peaks: Vec<f64> = grid
                .iter()
                .map(|row| rate(&row[c].0, ATTEMPTS, data.bucket_s, unit).iter().map(|p| p.1).fold(0.0, f64::max))
                .collect();
            let peak = peaks.iter().copied().fold(0.0, f64::max);
            let capacity = if scope == Group::Hops { data.variants[0].capacity_per_s(c) } else { None };
            YScale::for_column(peak, &peaks, capacity)
        })
        .collect();
    let y_max: Vec<f64> = y_scales.iter().map(|y| y.max).collect();
    let capacity_drawn = scope == Group::Hops
        && data.variants.iter().any(|v| (0..columns).any(|c| v.capacity_per_s(c).is_some_and(|cap| cap <= y_max[c])));
    let mut key = vec![
        (Swatch::Fill(BLACK.mix(0.7)), "first attempts (variant colour)".to_string()),
        (Swatch::Fill(BLACK.mix(0.2)), "retries, stacked on top (light tint)".to_string()),
    ];
    if capacity_drawn {
        key.push((Swatch::Dashed(BLACK.mix(1.0)), "capacity (attempts/s the workers can complete)".to_string()));
    }
    if let Some(g) = &grouping {
        key.push((Swatch::Fill(WHITE.mix(0.0)), tenants::others_key(data, g)));
    }
    key.extend(fault_key(data, None));
    key.extend(spike_key(data));
    let root = with_key(&root, &key)?;
    // Narrow: one panel per row, a variant's columns one under the other.
    let per_row = narrow::columns(&root, columns);
    let panels = root.split_evenly((data.variants.len() * columns / per_row, per_row));
    for (i, v) in data.variants.iter().enumerate() {
        for (c, column) in grid[i].iter().enumerate() {
            let panel = &panels[i * columns + c];
            let bottom_row = i + 1 == data.variants.len() && (per_row == columns || c + 1 == columns);
            draw_panel(panel, data, v, i, scope, (c, column), (t_max, y_scales[c]), bottom_row)?;
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn draw_panel<DB: DrawingBackend>(
    panel: &DrawingArea<DB, Shift>,
    data: &ReportData,
    v: &VariantData,
    index: usize,
    scope: Group,
    (column, (series, scoped)): (usize, &tenants::Column),
    (t_max, y): (f64, YScale),
    bottom_row: bool,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (_, unit) = time_axis(data);
    let colour = variant_colour(data, index);
    let mean_of = |metric: Metric| scoped.and_then(|row| row.mean(metric));
    let capacity = if scope == Group::Hops { v.capacity_per_s(column) } else { None };
    let mut caption = match scope {
        Group::Hops => format!("{} · hop {}", v.label(), series.name),
        Group::Tenants if scoped.is_none() => format!("{} · {}", v.label(), series.name),
        Group::Tenants => format!("{} · tenant {}", v.label(), series.name),
    };
    if let Some(peak) = mean_of(Metric::PeakAttemptsPerS) {
        caption.push_str(&format!(" · peak {}/s", fmt_num(peak)));
        // Far below capacity the ratio is noise to the reader (0.0000496×): leave it out.
        if let Some(ratio) = mean_of(Metric::PeakOverCapacity).filter(|&r| r >= 0.01) {
            caption.push_str(&format!(" = {}× capacity", fmt_num(ratio)));
        }
    }
    // What hits the hop when it comes back, which the peak during the fault hides.
    if let Some(after) = mean_of(Metric::PeakAfterOverCapacity).filter(|&r| r >= 0.01) {
        caption.push_str(&format!(" · after the trigger {}×", fmt_num(after)));
    }
    let mut builder = ChartBuilder::on(panel);
    builder
        .caption(caption, (FONT, 17).into_font().color(&colour.mix(1.0)))
        .margin(8)
        .margin_right(20)
        .x_label_area_size(if bottom_row { 42 } else { 26 })
        .y_label_area_size(78);
    let hop = (scope == Group::Hops).then_some(series.name.as_str());
    let x_desc = if bottom_row { unit.desc } else { "" };
    let stack = Stack { data, v, column, hop, series, colour, capacity, t_max, unit };
    match y.log_floor {
        Some(floor) => {
            let mut chart = builder.build_cartesian_2d(0.0..t_max, LogAxis::new(floor, y.max))?;
            draw_time_mesh(&mut chart, (x_desc, "attempts/s (log scale)"), true)?;
            stack.draw(&mut chart, (floor, y.max), |cap| cap * (y.max / floor).powf(0.02))
        }
        None => {
            let mut chart = builder.build_cartesian_2d(0.0..t_max, 0.0..y.max)?;
            draw_time_mesh(&mut chart, (x_desc, "attempts/s"), true)?;
            stack.draw(&mut chart, (0.0, y.max), |cap| cap + y.max * 0.02)
        }
    }
}

/// The y axis of a column of load panels.
#[derive(Clone, Copy, Debug)]
struct YScale {
    /// Top of the axis.
    max: f64,
    /// Bottom of a logarithmic axis; None: linear from 0.
    log_floor: Option<f64>,
}

/// A column's loads span decades when its highest peak is at least this many times the
/// smaller of capacity and the lowest variant's peak.
const LOG_SPAN: f64 = 30.0;

impl YScale {
    /// The scale of a column whose variants peak at `peaks` (highest `peak`) against `capacity`.
    fn for_column(peak: f64, peaks: &[f64], capacity: Option<f64>) -> YScale {
        let lowest = peaks.iter().copied().filter(|&p| p > 0.0).fold(f64::INFINITY, f64::min);
        let reference = capacity.map_or(lowest, |c| c.min(lowest));
        if peak > 0.0 && reference.is_finite() && reference > 0.0 && peak / reference >= LOG_SPAN {
            let floor = log_floor(peak, Some(reference));
            return YScale { max: log_bound(peak.max(capacity.unwrap_or(0.0)), 1.3, true), log_floor: Some(floor) };
        }
        // Show capacity when it is within reach of the load; a far-away line would squash it.
        let reach = capacity.filter(|&cap| cap <= peak * 3.0).unwrap_or(0.0);
        YScale { max: (peak.max(reach) * 1.12).max(1.0), log_floor: None }
    }
}

/// What one load panel stacks: first attempts and retries of one series, with capacity and faults.
struct Stack<'a> {
    data: &'a ReportData,
    v: &'a VariantData,
    /// The series' index among the variant's hops (for its capacity over time).
    column: usize,
    hop: Option<&'a str>,
    series: &'a MeanSeries,
    colour: RGBColor,
    capacity: Option<f64>,
    t_max: f64,
    unit: TimeUnit,
}

impl Stack<'_> {
    /// Draws onto `chart` whose y axis spans `(low, high)`; `label_y` places the capacity label.
    fn draw<DB, Y>(
        &self,
        chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, Y>>,
        (low, high): (f64, f64),
        label_y: impl Fn(f64) -> f64,
    ) -> DrawResult
    where
        DB: DrawingBackend,
        DB::ErrorType: 'static,
        Y: Ranged<ValueType = f64>,
    {
        shade_faults(chart, self.v, self.hop, (self.t_max, low, high), self.unit)?;
        let floor =
            |pts: Vec<(f64, f64)>| -> Vec<(f64, f64)> { pts.into_iter().map(|(t, y)| (t, y.max(low))).collect() };
        let total = floor(rate(self.series, ATTEMPTS, self.data.bucket_s, self.unit));
        let first = floor(rate(self.series, FIRST_ATTEMPTS, self.data.bucket_s, self.unit));
        let colour = self.colour;
        // Retries are stacked on the first attempts: the light band between the two curves.
        chart.draw_series(AreaSeries::new(total, low, colour.mix(0.3).filled()).border_style(colour))?;
        chart.draw_series(AreaSeries::new(first, low, colour.filled()))?;
        if let Some(cap) = self.capacity.filter(|&cap| cap <= high && cap >= low) {
            // The label sits just above the dashed line, not on it.
            let points = capacity_points(self.v, self.column, cap, (0.0, self.t_max), self.unit, self.data.bucket_s)
                .into_iter()
                .map(|(t, c)| (t, c.clamp(low, high)))
                .collect();
            draw_capacity(chart, points, self.t_max, label_y)?;
        }
        Ok(())
    }
}

/// Smallest y of the log axis: two decades under the lower of capacity and peak, so the
/// capacity line and the shape around it both show; zero buckets sit on the floor.
fn log_floor(peak: f64, capacity: Option<f64>) -> f64 {
    let reference = capacity.map_or(peak, |c| c.min(peak)).max(1e-3);
    log_bound(reference, 100.0, false)
}

/// Runs of points at or above `floor`, each extended by its neighbours (pinned to the floor) so
/// a drop to zero is drawn down to the axis; buckets under the floor draw nothing, instead of a
/// line along the bottom where every variant's zeros would pile up.
fn visible_segments(line: &[(f64, f64)], floor: f64) -> Vec<Vec<(f64, f64)>> {
    let mut segments = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    for (i, &(t, y)) in line.iter().enumerate() {
        if y >= floor {
            if current.is_empty() && i > 0 {
                current.push((line[i - 1].0, floor));
            }
            current.push((t, y));
        } else if !current.is_empty() {
            current.push((t, floor));
            segments.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        segments.push(current);
    }
    segments
}

/// One panel per hop, every variant's attempts/s as a line on a log axis.
pub fn draw_compare<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &ReportData) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let hops = data.variants[0].hop_series.len();
    let has_capacity = data.variants.iter().any(|v| (0..hops).any(|h| v.capacity_per_s(h).is_some()));
    let title = format!(
        "{}: attempts/s per variant{} (log scale, mean of {})",
        data.scenario,
        if has_capacity { " against capacity" } else { "" },
        crate::report::format::count_of(u64::from(data.replications), "replication")
    );
    let root = narrow::titled(root, &title, 24)?;
    let mut key = variant_lines_key(data);
    if has_capacity {
        key.push((Swatch::Dashed(BLACK.mix(1.0)), "capacity".to_string()));
    }
    key.extend(fault_key(data, None));
    key.extend(spike_key(data));
    let root = with_key(&root, &key)?;
    let first = &data.variants[0];
    let panels = root.split_evenly((first.hop_series.len(), 1));
    let (t_max, unit) = time_axis(data);
    // The wall after the trigger is what hits the service when it comes back: a linear zoom of
    // that stretch sits right of each log panel, where a few × capacity stays readable.
    let after = trigger_end(data).map(|t| t / unit.secs).filter(|&t| t < t_max);
    for (h, row) in panels.iter().enumerate() {
        let lines: Vec<Vec<(f64, f64)>> =
            data.variants.iter().map(|v| rate(&v.hop_series[h], ATTEMPTS, data.bucket_s, unit)).collect();
        let (panel, zoom) = match after {
            Some(_) if narrow::is_narrow(row) => {
                // Narrow: the log panel on top, the zoom and its list under it.
                let (top, bottom) = row.split_vertically(row.dim_in_pixel().1 * 400 / 760);
                let width = bottom.dim_in_pixel().0;
                let (zoom, list) = bottom.split_horizontally(width.saturating_sub(after_list_px(data)).max(width / 2));
                (top, Some((zoom, list)))
            }
            Some(_) => {
                // The list of figures gets a column of its own, right of the zoom, never on it.
                let list_px = after_list_px(data);
                let charts_px = row.dim_in_pixel().0.saturating_sub(list_px);
                let (charts, list) = row.split_horizontally(charts_px);
                let (left, right) = charts.split_horizontally(charts_px * 58 / 100);
                (left, Some((right, list)))
            }
            None => (row.clone(), None),
        };
        if let (Some((zoom, list)), Some(from)) = (&zoom, after) {
            draw_after_panel(zoom, data, h, &lines, (from, t_max), unit)?;
            draw_after_list(list, data, h)?;
        }
        let panel = &panel;
        let peak = lines.iter().flatten().map(|p| p.1).fold(0.0, f64::max).max(1.0);
        let capacity = first.capacity_per_s(h);
        let y_min = log_floor(peak, capacity);
        let y_max = log_bound(peak.max(capacity.unwrap_or(0.0)), 1.3, true);
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("hop {}", first.hop_series[h].name), (FONT, 18))
            .margin(10)
            .margin_right(24)
            .x_label_area_size(44)
            .y_label_area_size(84)
            .build_cartesian_2d(0.0..t_max, LogAxis::new(y_min, y_max))?;
        draw_time_mesh(&mut chart, (unit.desc, "attempts/s (log scale)"), false)?;
        shade_faults(&mut chart, first, Some(&first.hop_series[h].name), (t_max, y_min, y_max), unit)?;
        if let Some(cap) = capacity.filter(|&cap| cap < y_max) {
            let points = capacity_points(first, h, cap, (0.0, t_max), unit, data.bucket_s);
            draw_capacity(&mut chart, points, t_max, |c| c * (y_max / y_min).powf(0.015))?;
        }
        let styles = Lines::of(data);
        for i in styles.order() {
            for seg in visible_segments(&lines[i], y_min) {
                draw_variant_line!(chart, styles, i, seg, 2)?;
            }
        }
    }
    Ok(())
}

/// End of the last trigger (fault or load spike) in seconds, the same in every variant.
pub(super) fn trigger_end(data: &ReportData) -> Option<f64> {
    data.variants.iter().filter_map(|v| v.setup.trigger_end_s).reduce(f64::max)
}

/// Linear panel of attempts/s at hop `h` from the trigger's end `from` to `t_max` (both in
/// `unit`), capacity dashed, each variant's mean peak after the trigger ÷ capacity written in its colour.
fn draw_after_panel<DB: DrawingBackend>(
    panel: &DrawingArea<DB, Shift>,
    data: &ReportData,
    h: usize,
    lines: &[Vec<(f64, f64)>],
    (from, t_max): (f64, f64),
    unit: TimeUnit,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let first = &data.variants[0];
    let after: Vec<Vec<(f64, f64)>> =
        lines.iter().map(|l| l.iter().copied().filter(|p| p.0 >= from).collect()).collect();
    let peak = after.iter().flatten().map(|p| p.1).fold(0.0, f64::max);
    let capacity = first.capacity_per_s(h);
    // Capacity far above the load would flatten the lines the zoom is for; its ratio is written.
    let reach = capacity.filter(|&cap| cap <= peak * 3.0).unwrap_or(0.0);
    let y_max = (peak.max(reach) * 1.12).max(1.0);
    let mut chart = ChartBuilder::on(panel)
        .caption(format!("after the trigger ends ({} {}), linear scale", fmt_tick(from), unit.short()), (FONT, 18))
        .margin(10)
        .margin_right(24)
        .x_label_area_size(44)
        .y_label_area_size(84)
        .build_cartesian_2d(from..t_max, 0.0..y_max)?;
    draw_time_mesh(&mut chart, (unit.desc, "attempts/s"), false)?;
    if let Some(cap) = capacity.filter(|&cap| cap <= y_max) {
        let points = capacity_points(first, h, cap, (from, t_max), unit, data.bucket_s);
        chart.draw_series(DashedLineSeries::new(points, 8, 5, BLACK.stroke_width(2)))?;
    }
    let styles = Lines::of(data);
    for i in styles.order() {
        draw_variant_line!(chart, styles, i, after[i].iter().copied(), 2)?;
    }
    Ok(())
}

/// Font size and line height (px) of the list of figures right of the zoom.
const LIST_FONT_PX: u32 = 14;
const LIST_LINE_PX: i32 = 20;

/// The lines of the list beside hop `h`'s zoom: a heading, each coloured variant's mean peak
/// after the trigger (over capacity when there is one), then one grey line for the others.
fn after_list(data: &ReportData, h: usize) -> Vec<(String, RGBColor)> {
    let capacity = data.variants[0].capacity_per_s(h);
    let metric = if capacity.is_some() { Metric::PeakAfterOverCapacity } else { Metric::PeakAfterPerS };
    let unit_sign = if capacity.is_some() { "×" } else { "/s" };
    let heading = if capacity.is_some() { "peak after ÷ capacity" } else { "peak after, attempts/s" };
    let value = |i: usize| data.variants[i].hops.get(h).and_then(|row| row.1.mean(metric));
    let styles = Lines::of(data);
    let mut out = vec![(heading.to_string(), BLACK)];
    let n = data.variants.len();
    for i in (0..n).filter(|&i| styles.led(i)) {
        if let Some(x) = value(i) {
            out.push((format!("{} {}{unit_sign}", data.variants[i].name, fmt_num(x)), styles.colour(i)));
        }
    }
    let rest: Vec<f64> = (0..n).filter(|&i| !styles.led(i)).filter_map(value).collect();
    if !rest.is_empty() {
        let (lo, hi) = rest.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        out.push((
            format!("{} others {}–{}{unit_sign}", rest.len(), fmt_num(lo), fmt_num(hi)),
            super::palette::REST_GREY,
        ));
    }
    out
}

/// Width in pixels of the list column of `load_compare` (0 without a trigger to zoom after):
/// its longest line at a generous 0.62 em per character, plus margins.
pub(super) fn after_list_px(data: &ReportData) -> u32 {
    if trigger_end(data).is_none() {
        return 0;
    }
    let hops = data.variants[0].hop_series.len();
    let chars = (0..hops).flat_map(|h| after_list(data, h)).map(|(t, _)| t.chars().count()).max().unwrap_or(0);
    (chars as f64 * f64::from(LIST_FONT_PX) * 0.62).ceil() as u32 + 24
}

/// The list of figures beside the zoom, one per line from the top of its column.
fn draw_after_list<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, data: &ReportData, h: usize) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let style = |c: RGBColor| (FONT, LIST_FONT_PX).into_font().color(&c).pos(Pos::new(HPos::Left, VPos::Top));
    for (k, (text, colour)) in after_list(data, h).into_iter().enumerate() {
        area.draw(&Text::new(text, (4, 46 + k as i32 * LIST_LINE_PX), style(colour)))?;
    }
    Ok(())
}

/// One line swatch per variant drawn in colour (past [`super::palette::LEADERS_MAX`] variants, the
/// leaders, then one grey entry for the rest); a variant whose every hop series equals a later
/// one's is drawn under it, so its entry says so.
pub(super) fn variant_lines_key(data: &ReportData) -> Vec<KeyItem> {
    let same = |a: &VariantData, b: &VariantData| {
        a.hop_series.len() == b.hop_series.len()
            && a.hop_series.iter().zip(&b.hop_series).all(|(x, y)| x.rows == y.rows)
    };
    let vs = &data.variants;
    Lines::of(data).key(|i| {
        let v = &vs[i];
        match vs[i + 1..].iter().rev().find(|w| same(v, w)) {
            Some(w) => format!("{} — identical to {}, hidden under it", v.label(), w.name),
            None => v.label(),
        }
    })
}

/// Column of goodput (success replies that reached a caller still waiting, already per second:
/// `timely_goodput_per_s`, the one goodput of summary.json and stdout) and of the backlog level.
const GOODPUT: usize = column_index(&SERIES_COLUMNS, "timely_goodput_per_s");
const BACKLOG: usize = column_index(&SERIES_COLUMNS, "backlog");

/// Goodput (successes a caller was waiting for, per second) and backlog (attempts inside the hop at each bucket's end) over time,
/// per hop, every variant on the same axes, fault windows shaded: how fast each recovers.
pub fn draw_goodput_backlog<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &ReportData) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let title = format!(
        "{}: goodput and backlog per hop (mean of {})",
        data.scenario,
        crate::report::format::count_of(u64::from(data.replications), "replication")
    );
    let root = narrow::titled(root, &title, 24)?;
    let mut key = variant_lines_key(data);
    key.extend(fault_key(data, None));
    key.extend(spike_key(data));
    let root = with_key(&root, &key)?;
    let first = &data.variants[0];
    let hops = first.hop_series.len();
    let panels = root.split_evenly((hops, 2));
    let (t_max, unit) = time_axis(data);
    for (p, panel) in panels.iter().enumerate() {
        let (h, backlog) = (p / 2, p % 2 == 1);
        let lines: Vec<Vec<(f64, f64)>> = data
            .variants
            .iter()
            .map(|v| {
                let s = &v.hop_series[h];
                if backlog {
                    let pts: Vec<(f64, f64)> = s
                        .rows
                        .iter()
                        .enumerate()
                        .map(|(b, r)| ((b + 1) as f64 * data.bucket_s / unit.secs, r[BACKLOG]))
                        .collect();
                    downsample(&pts, POINTS_MAX)
                } else {
                    let pts: Vec<(f64, f64)> = s
                        .rows
                        .iter()
                        .enumerate()
                        .map(|(b, r)| (b as f64 * data.bucket_s / unit.secs, r[GOODPUT]))
                        .collect();
                    downsample(&pts, POINTS_MAX)
                }
            })
            .collect();
        let y_max = lines.iter().flatten().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.1;
        let what = if backlog { "backlog (attempts in the hop)" } else { "goodput/s" };
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("hop {}: {what}", first.hop_series[h].name), (FONT, 17))
            .margin(10)
            .margin_right(20)
            .x_label_area_size(44)
            .y_label_area_size(78)
            .build_cartesian_2d(0.0..t_max, 0.0..y_max)?;
        draw_time_mesh(&mut chart, (unit.desc, if backlog { "attempts" } else { "awaited successes/s" }), false)?;
        shade_faults(&mut chart, first, Some(&first.hop_series[h].name), (t_max, 0.0, y_max), unit)?;
        let styles = Lines::of(data);
        for i in styles.order() {
            draw_variant_line!(chart, styles, i, lines[i].iter().copied(), 2)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_skip_buckets_under_the_floor_but_reach_down_to_it() {
        let line = [(0.0, 5.0), (1.0, 0.0), (2.0, 0.0), (3.0, 7.0), (4.0, 8.0)];
        let segments = visible_segments(&line, 1.0);
        assert_eq!(segments, vec![vec![(0.0, 5.0), (1.0, 1.0)], vec![(2.0, 1.0), (3.0, 7.0), (4.0, 8.0)]]);
    }
}
