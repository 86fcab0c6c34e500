//! `map`'s files: `map.json` (every cell and bisection probe), `map.csv` (one row per variant and
//! cell), the charts `map.svg`/`map.png` (one heat map per variant, boundaries marked) and
//! `boundaries.svg`/`.png` (every variant's boundary on one chart), `report.html`, and the text
//! printed on stdout.

use super::charts::{narrow, palette, DrawResult, Figure, Rendered, FONT};
use super::files::{self, OutputError};
use super::format::fmt_tick;
use super::html::{escape, head, swatch};
use crate::runner::map::{Axis, BoundaryStatus, Estimate, MapFile, Spacing, VariantRow};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// `map.json` text.
pub fn map_json(map: &MapFile) -> Vec<u8> {
    let value = serde_json::to_value(map).expect("a map serialises");
    let mut s = serde_json::to_string_pretty(&value).expect("JSON values serialise");
    s.push('\n');
    s.into_bytes()
}

fn num(x: Option<f64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

/// `map.csv`: one row per variant and cell, with both settings as `run --set` takes them.
pub fn map_csv(map: &MapFile) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let header = [
        "variant",
        "x",
        "y",
        "set_x",
        "set_y",
        "runs",
        "judged",
        "metastable",
        "not_observable",
        "p_metastable",
        "p_ci95_low",
        "p_ci95_high",
        "recovery_median_s",
        "peak_after_over_capacity_median",
        "left",
        "leave_median_s",
    ];
    w.write_record(header).expect("in memory");
    for row in &map.rows {
        for v in &row.variants {
            for c in &v.cells {
                let e = &c.estimate;
                w.write_record([
                    v.variant.clone(),
                    c.x.to_string(),
                    row.y.to_string(),
                    c.settings[0].clone(),
                    c.settings[1].clone(),
                    e.runs.to_string(),
                    e.judged.to_string(),
                    e.metastable.to_string(),
                    e.not_observable.to_string(),
                    num(e.p),
                    num(e.p_ci95.map(|c| c[0])),
                    num(e.p_ci95.map(|c| c[1])),
                    num(e.recovery_median_s),
                    num(e.peak_after_over_capacity_median),
                    e.left.map(|n| n.to_string()).unwrap_or_default(),
                    num(e.leave_median_s),
                ])
                .expect("in memory");
            }
        }
    }
    w.into_inner().expect("in memory")
}

/// A variant's rows, y ascending.
fn rows_of(map: &MapFile, v: usize) -> impl Iterator<Item = (f64, &VariantRow)> {
    map.rows.iter().map(move |r| (r.y, &r.variants[v]))
}

/// Share of a variant's judged cells that do not tip (p < ½): the map's stable area.
pub fn stable_share(map: &MapFile, v: usize) -> Option<f64> {
    let tips: Vec<bool> = rows_of(map, v).flat_map(|(_, r)| r.cells.iter().filter_map(|c| c.estimate.tips())).collect();
    (!tips.is_empty()).then(|| tips.iter().filter(|&&t| !t).count() as f64 / tips.len() as f64)
}

/// Mean boundary over the rows where one was found, and how many rows that is.
fn mean_boundary(map: &MapFile, v: usize) -> (Option<f64>, usize) {
    let xs: Vec<f64> = rows_of(map, v).filter_map(|(_, r)| r.boundary.x).collect();
    let n = xs.len();
    ((n > 0).then(|| xs.iter().sum::<f64>() / n as f64), n)
}

/// The answer: each variant's stable share of the map and mean boundary, most stable first.
pub fn ranking_lines(map: &MapFile) -> Vec<String> {
    let mut order: Vec<usize> = (0..map.variants.len()).collect();
    order.sort_by(|&a, &b| {
        let key = |v: usize| stable_share(map, v).unwrap_or(-1.0);
        key(b).total_cmp(&key(a)).then(a.cmp(&b))
    });
    let rows = map.rows.len();
    order
        .iter()
        .enumerate()
        .map(|(rank, &v)| {
            let share = stable_share(map, v)
                .map_or("nothing judged".into(), |s| format!("{:.0}% of the map stable", s * 100.0));
            let (mean, found) = mean_boundary(map, v);
            let boundary = match mean {
                Some(x) => {
                    format!("boundary at {} ≈ {} on average over {found} of {rows} rows", map.x.path, map.x.show(x))
                }
                None => "no boundary inside the map".to_string(),
            };
            // Only a strict lead is called one (every variant stable everywhere is a tie).
            let ahead = order
                .get(1)
                .is_some_and(|&next| stable_share(map, v).unwrap_or(-1.0) > stable_share(map, next).unwrap_or(-1.0));
            let lead = if rank == 0 && ahead { " — moves the cliff furthest" } else { "" };
            format!("{}. {}: {share}, {boundary}{lead}", rank + 1, map.variants[v])
        })
        .collect()
}

/// The sentence that says what was counted.
pub fn definition_line(map: &MapFile) -> String {
    let d = &map.definition;
    format!(
        "metastable = still overloaded {} s after the trigger ended (over the {} s before: goodput below {}% of arrivals, or hop 0's backlog growing past twice its pre-trigger peak); up to {} replications per cell{}, seed {}",
        fmt_tick(d.hold_s),
        fmt_tick(d.window_s),
        fmt_tick(d.goodput_share * 100.0),
        d.replications,
        if d.full { "" } else { " (fewer once the 95% interval is on one side of 50%)" },
        map.seed
    )
}

/// With `leave`: how many of a variant's metastable runs left their storm before the horizon,
/// and the range of the cells' median times to leave.
fn leave_line(map: &MapFile, v: usize) -> String {
    let cells: Vec<&Estimate> = rows_of(map, v).flat_map(|(_, r)| r.cells.iter().map(|c| &c.estimate)).collect();
    let stuck: u32 = cells.iter().map(|e| e.metastable).sum();
    let left: u32 = cells.iter().filter_map(|e| e.left).sum();
    let medians: Vec<f64> = cells.iter().filter_map(|e| e.leave_median_s).collect();
    let range = match (medians.iter().copied().reduce(f64::min), medians.iter().copied().reduce(f64::max)) {
        (Some(a), Some(b)) => format!("; cell medians {}–{} s after the trigger", fmt_tick(a), fmt_tick(b)),
        _ => String::new(),
    };
    format!("  time to leave: {left} of {stuck} metastable runs left their storm before the horizon{range}")
}

/// One character per cell, by its 95% interval so that no class is claimed inside the noise:
/// ' ' below 10%, '.' below 50%, 'o' from 50%, '#' from 90% (the whole interval on that side),
/// '~' uncertain (the interval spans 50%), '?' none judged.
fn glyph(e: &Estimate) -> char {
    let Some(p) = e.p else { return '?' };
    let [lo, hi] = e.p_ci95.unwrap_or([p, p]);
    if hi < 0.1 {
        ' '
    } else if lo >= 0.9 {
        '#'
    } else if hi < 0.5 {
        '.'
    } else if lo >= 0.5 {
        'o'
    } else {
        '~'
    }
}

/// True when a cell's 95% interval spans ½: which side it is on is not known.
fn uncertain(e: &Estimate) -> bool {
    e.p_ci95.is_some_and(|[lo, hi]| lo < 0.5 && hi >= 0.5)
}

/// The text `map` prints: the definition, a character map per variant, and the ranking; `fit`
/// wraps a prose line to the terminal's width (the maps are never wrapped).
pub fn map_text(map: &MapFile, fit: &dyn Fn(&str) -> String) -> String {
    let mut out = String::new();
    let title = format!(
        "{}: P(metastable) over {} (x, {}) × {} (y, {})",
        map.scenario,
        map.x.describe(),
        map.x.spacing.word(),
        map.y.describe(),
        map.y.spacing.word()
    );
    out.push_str(&fit(&title));
    out.push_str(&fit(&definition_line(map)));
    out.push_str(
        "  key (95% interval): ' ' <10%  '.' <50%  'o' ≥50%  '#' ≥90%  '~' uncertain (spans 50%)  '?' not observable  '|' boundary\n",
    );
    let label_w = map.rows.iter().map(|r| map.y.show(r.y).chars().count()).max().unwrap_or(1);
    // Two characters per cell while the map fits a laptop's terminal.
    let cw = if label_w + 4 + 2 * map.x.points <= 100 { 2 } else { 1 };
    for (v, name) in map.variants.iter().enumerate() {
        let share = stable_share(map, v).map_or("nothing judged".into(), |s| format!("{:.0}% stable", s * 100.0));
        let _ = writeln!(out, "{name} ({share}):");
        for row in map.rows.iter().rev() {
            let r = &row.variants[v];
            let mut line = String::new();
            for c in &r.cells {
                // The boundary sits between the two cells around it.
                let before = r.boundary.x.is_some_and(|x| c.x >= x && line.chars().all(|ch| ch != '|'));
                if before {
                    line.push('|');
                }
                line.extend(std::iter::repeat_n(glyph(&c.estimate), cw));
            }
            let _ = writeln!(out, "  {:>label_w$} {line}", map.y.show(row.y));
        }
        let (first, last) = (map.x.show(map.x.lo), map.x.show(map.x.hi));
        let span = (cw * map.x.points).saturating_sub(first.chars().count()).max(last.chars().count() + 2);
        let _ = writeln!(out, "  {:>label_w$} {first}{last:>span$}   {}", "", map.x.path);
        if map.definition.leave {
            out.push_str(&fit(&leave_line(map, v)));
        }
    }
    out.push_str("Which variant moves the cliff furthest (share of the map that does not tip):\n");
    for line in ranking_lines(map) {
        out.push_str(&fit(&format!("  {line}")));
    }
    out
}

/// Colour of a probability: pale blue-white at 0, orange at ½, dark red at 1.
fn heat(p: f64) -> RGBColor {
    let stops = [(0.0, (240.0, 246.0, 252.0)), (0.5, (244.0, 165.0, 82.0)), (1.0, (150.0, 0.0, 38.0))];
    let p = p.clamp(0.0, 1.0);
    let (a, b) = if p <= 0.5 { (stops[0], stops[1]) } else { (stops[1], stops[2]) };
    let t = (p - a.0) / (b.0 - a.0);
    let mix = |x: f64, y: f64| (x + t * (y - x)).round() as u8;
    RGBColor(mix(a.1 .0, b.1 .0), mix(a.1 .1, b.1 .1), mix(a.1 .2, b.1 .2))
}

/// Grey of cells with nothing judged.
const NO_DATA: RGBColor = RGBColor(200, 200, 200);

/// About six round values inside the axis's range (1-2-5 steps; on a log axis the 1-2-5 values
/// of each decade), each with its label.
fn ticks(axis: &Axis) -> Vec<(f64, String)> {
    // Round values in the terms the axis is read in (a fault's length, not its end).
    let offset = axis.lo - axis.shown(axis.lo);
    let (lo, hi) = (axis.shown(axis.lo), axis.shown(axis.hi));
    let mut values = Vec::new();
    match axis.spacing {
        Spacing::Linear => {
            let raw = (hi - lo) / 5.0;
            let mag = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag);
            let mut v = (lo / step).ceil() * step;
            while v <= hi * (1.0 + 1e-12) + 1e-12 {
                values.push(v);
                v += step;
            }
        }
        Spacing::Log => {
            let mut decade = 10f64.powf(lo.log10().floor());
            while decade <= hi {
                for m in [1.0, 2.0, 5.0] {
                    let v = m * decade;
                    if v >= lo * (1.0 - 1e-12) && v <= hi * (1.0 + 1e-12) {
                        values.push(v);
                    }
                }
                decade *= 10.0;
            }
        }
    }
    let unit = if axis.kind == crate::runner::plan_range::Kind::Duration { " s" } else { "" };
    values.into_iter().map(|v| (grid_pos(axis, v + offset), format!("{}{unit}", fmt_tick(v)))).collect()
}

/// Draws `axis`'s ticks and labels beside a chart whose plotting area is `plot` in pixels
/// (x axis below it when `horizontal`, y axis to its left otherwise).
fn draw_ticks<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    axis: &Axis,
    horizontal: bool,
    to_px: &dyn Fn(f64) -> (i32, i32),
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let style = (FONT, 13).into_font().color(&BLACK);
    // `to_px` gives the backend's pixels; `area` draws relative to its own corner.
    let (bx, by) = area.get_base_pixel();
    for (at, label) in ticks(axis) {
        let (px, py) = to_px(at);
        let (px, py) = (px - bx, py - by);
        if horizontal {
            area.draw(&PathElement::new(vec![(px, py), (px, py + 5)], BLACK.stroke_width(1)))?;
            let w = 7 * label.chars().count() as i32;
            area.draw(&Text::new(label, (px - w / 2, py + 8), style.clone()))?;
        } else {
            area.draw(&PathElement::new(vec![(px - 5, py), (px, py)], BLACK.stroke_width(1)))?;
            let w = 7 * label.chars().count() as i32;
            area.draw(&Text::new(label, (px - 8 - w, py - 7), style.clone()))?;
        }
    }
    Ok(())
}

/// The position of value `x` in grid units (0 at `lo`, points − 1 at `hi`).
fn grid_pos(axis: &Axis, x: f64) -> f64 {
    axis.position(x) * (axis.points - 1) as f64
}

/// The axes of a chart in grid units: their descriptions, and round values as ticks.
fn draw_axes<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    chart: &mut ChartContext<'_, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    map: &MapFile,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    chart
        .configure_mesh()
        .disable_mesh()
        .x_labels(0)
        .y_labels(0)
        .x_desc(axis_desc(&map.x))
        .y_desc(axis_desc(&map.y))
        .axis_desc_style((FONT, 14))
        .draw()?;
    let (x0, y0) = (-0.5, -0.5);
    draw_ticks(area, &map.x, true, &|p| chart.backend_coord(&(p, y0)))?;
    draw_ticks(area, &map.y, false, &|p| chart.backend_coord(&(x0, p)))?;
    Ok(())
}

fn axis_desc(axis: &Axis) -> String {
    match axis.spacing {
        Spacing::Linear => axis.describe(),
        Spacing::Log => format!("{} (log scale)", axis.describe()),
    }
}

/// The heat maps: one panel per variant.
pub struct HeatFigure<'a> {
    /// The map.
    pub map: &'a MapFile,
}

const PANEL_W: u32 = 560;
const PANEL_H: u32 = 470;

fn columns(variants: usize) -> usize {
    variants.clamp(1, 3)
}

impl HeatFigure<'_> {
    /// Canvas height for `cols` panels per row, with `key` lines of key under the title.
    fn height(&self, cols: usize, key: u32) -> u32 {
        let rows = self.map.variants.len().div_ceil(cols) as u32;
        48 + 24 * key + PANEL_H * rows
    }
}

impl Figure for HeatFigure<'_> {
    fn stem(&self) -> String {
        "map".into()
    }

    fn caption(&self) -> String {
        format!(
            "Probability of a metastable outcome per cell (colour; grey: not observable; white stroke: its 95% interval spans ½) with each row's tipping boundary (black dot: the bisection's answer; bar: its interval). {}.",
            definition_line(self.map)
        )
    }

    fn size(&self) -> (u32, u32) {
        let cols = columns(self.map.variants.len());
        (PANEL_W * cols as u32, self.height(cols, 1))
    }

    fn narrow_size(&self) -> Option<(u32, u32)> {
        Some((narrow::NARROW_PX, self.height(1, 2)))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let map = self.map;
        let slim = narrow::is_narrow(root);
        let body = narrow::titled(root, &format!("{}: probability of a metastable outcome", map.scenario), 22)?;
        let (title, body) = body.split_vertically(if slim { 56 } else { 32 });
        // The colour key: a ramp from 0 to 1, then the marks (on a second line when narrow).
        for i in 0..=100 {
            let x = 20 + 2 * i;
            title.draw(&Rectangle::new([(x, 6), (x + 2, 22)], heat(f64::from(i) / 100.0).filled()))?;
        }
        let small = (FONT, 14).into_font().color(&BLACK);
        title.draw(&Text::new("0", (8, 8), small.clone()))?;
        title.draw(&Text::new("1", (226, 8), small.clone()))?;
        title.draw(&Rectangle::new([(250, 6), (266, 22)], NO_DATA.filled()))?;
        title.draw(&Text::new("not observable", (272, 6), small.clone()))?;
        let marks = "╱ uncertain (95% interval spans ½)   ● boundary, ─ its interval";
        title.draw(&Text::new(marks, if slim { (20, 32) } else { (390, 6) }, small))?;
        let n = map.variants.len();
        let cols = if slim { 1 } else { columns(n) };
        let panels = body.split_evenly((n.div_ceil(cols), cols));
        for (v, panel) in panels.iter().enumerate().take(n) {
            draw_heat(panel, map, v)?;
        }
        Ok(())
    }
}

fn draw_heat<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, map: &MapFile, v: usize) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (nx, ny) = (map.x.points as f64, map.y.points as f64);
    let share = stable_share(map, v).map_or("nothing judged".into(), |s| format!("{:.0}% stable", s * 100.0));
    let mut chart = ChartBuilder::on(area)
        .caption(format!("{} ({share})", map.variants[v]), (FONT, 17))
        .margin(8)
        .x_label_area_size(46)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5..nx - 0.5, -0.5..ny - 0.5)?;
    draw_axes(area, &mut chart, map)?;
    for row in &map.rows {
        let r = &row.variants[v];
        let yi = row.y_index as f64;
        chart.draw_series(r.cells.iter().map(|c| {
            let colour = c.estimate.p.map_or(NO_DATA, heat);
            let xi = c.x_index as f64;
            Rectangle::new([(xi - 0.5, yi - 0.5), (xi + 0.5, yi + 0.5)], colour.filled())
        }))?;
        // A cell whose interval spans ½ is marked: its colour is a point estimate only.
        chart.draw_series(r.cells.iter().filter(|c| uncertain(&c.estimate)).map(|c| {
            let (xi, yi) = (c.x_index as f64, yi);
            PathElement::new(vec![(xi - 0.3, yi - 0.3), (xi + 0.3, yi + 0.3)], WHITE.stroke_width(2))
        }))?;
    }
    for row in &map.rows {
        let b = &row.variants[v].boundary;
        let yi = row.y_index as f64;
        if let (BoundaryStatus::Found, Some(x), Some([lo, hi])) = (b.status, b.x, b.interval) {
            let (x, lo, hi) = (grid_pos(&map.x, x), grid_pos(&map.x, lo), grid_pos(&map.x, hi));
            chart.draw_series(std::iter::once(PathElement::new(vec![(lo, yi), (hi, yi)], BLACK.stroke_width(2))))?;
            chart.draw_series(std::iter::once(Circle::new((x, yi), 4, BLACK.filled())))?;
        }
    }
    Ok(())
}

/// Every variant's boundary on one chart: which one moves the cliff furthest.
pub struct BoundaryFigure<'a> {
    /// The map.
    pub map: &'a MapFile,
}

impl Figure for BoundaryFigure<'_> {
    fn stem(&self) -> String {
        "boundaries".into()
    }

    fn caption(&self) -> String {
        format!(
            "Tipping boundary per row and variant: the {} at which half of the runs stay metastable (dot), bars its interval; the key counts the rows where it was found, where no cell tips and where every cell does (those rows have no point).",
            self.map.x.path
        )
    }

    fn size(&self) -> (u32, u32) {
        (1100, 680 + 24 * self.map.variants.len().div_ceil(2) as u32)
    }

    fn narrow_size(&self) -> Option<(u32, u32)> {
        Some((narrow::NARROW_PX, 620 + 24 * self.map.variants.len() as u32))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let map = self.map;
        let names: Vec<&str> = map.variants.iter().map(String::as_str).collect();
        let colours = palette::colours_of(&names);
        let per_row = narrow::columns(root, 2);
        let root = narrow::titled(root, &format!("{}: where each variant tips", map.scenario), 22)?;
        let (title, body) = root.split_vertically(8 + 24 * map.variants.len().div_ceil(per_row) as u32);
        for (v, name) in map.variants.iter().enumerate() {
            let (col, line) = ((v % per_row) as i32, (v / per_row) as i32);
            let (x, y) = (20 + 540 * col, 4 + 24 * line);
            let found = map.rows.iter().filter(|r| r.variants[v].boundary.status == BoundaryStatus::Found).count();
            let none = map.rows.iter().filter(|r| r.variants[v].boundary.status == BoundaryStatus::NoneTip).count();
            let all = map.rows.iter().filter(|r| r.variants[v].boundary.status == BoundaryStatus::AllTip).count();
            let text = format!("{name}: found in {found} rows, none tip in {none}, all tip in {all}");
            title.draw(&Rectangle::new([(x, y + 3), (x + 14, y + 15)], colours[v].filled()))?;
            title.draw(&Text::new(text, (x + 20, y), (FONT, 14).into_font().color(&BLACK)))?;
        }
        let (nx, ny) = (map.x.points as f64, map.y.points as f64);
        let mut chart = ChartBuilder::on(&body)
            .margin(12)
            .x_label_area_size(46)
            .y_label_area_size(80)
            .build_cartesian_2d(-0.5..nx - 0.5, -0.5..ny - 0.5)?;
        draw_axes(&body, &mut chart, map)?;
        // Light grid lines at the ticks.
        for (p, _) in ticks(&map.x) {
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(p, -0.5), (p, ny - 0.5)],
                RGBColor(230, 230, 230),
            )))?;
        }
        for (p, _) in ticks(&map.y) {
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(-0.5, p), (nx - 0.5, p)],
                RGBColor(230, 230, 230),
            )))?;
        }
        for (v, colour) in colours.iter().enumerate() {
            let points: Vec<(f64, f64, f64, f64)> = map
                .rows
                .iter()
                .filter_map(|r| {
                    let b = &r.variants[v].boundary;
                    let [lo, hi] = b.interval?;
                    Some((r.y_index as f64, grid_pos(&map.x, b.x?), grid_pos(&map.x, lo), grid_pos(&map.x, hi)))
                })
                .collect();
            // A slight vertical offset per variant keeps overlapping bars apart.
            // Kept within ±0.3 of the row whatever the number of variants.
            let n = map.variants.len() as f64;
            let dy = (v as f64 - (n - 1.0) / 2.0) * (0.6 / n).min(0.08);
            chart.draw_series(std::iter::once(PathElement::new(
                points.iter().map(|p| (p.1, p.0 + dy)).collect::<Vec<_>>(),
                colour.stroke_width(2),
            )))?;
            for p in &points {
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(p.2, p.0 + dy), (p.3, p.0 + dy)],
                    colour.stroke_width(1),
                )))?;
                chart.draw_series(std::iter::once(Circle::new((p.1, p.0 + dy), 4, colour.filled())))?;
            }
        }
        Ok(())
    }
}

/// `report.html` of a map.
pub fn map_html(map: &MapFile, rendered: &Rendered) -> String {
    let mut h = head(&format!("retrystorm map: {}", map.scenario));
    let _ = write!(
        h,
        "<h1>{}</h1>\n<p class=\"meta\">Metastability map of {} (x) × {} (y) · seed {} · retrystorm {}</p>\n\
         <nav><a href=\"#answer\">Answer</a> · <a href=\"#charts\">Charts</a> · <a href=\"#boundaries\">Boundaries</a></nav>\n\
         <h2 id=\"answer\">Answer</h2>\n<p>{}</p>\n<ol class=\"findings\">\n",
        escape(&map.scenario),
        escape(&map.x.describe()),
        escape(&map.y.describe()),
        map.seed,
        escape(crate::report::summary::VERSION),
        escape(&definition_line(map))
    );
    for line in ranking_lines(map) {
        let text = line.split_once(". ").map_or(line.as_str(), |(_, t)| t);
        let _ = writeln!(h, "<li>{}</li>", escape(text));
    }
    h.push_str("</ol>\n");
    super::html::charts_section(&mut h, &rendered.charts);
    let rows = map.rows.len() * map.variants.len();
    let _ = write!(
        h,
        "<h2 id=\"boundaries\">Boundaries</h2>\n<details><summary>Each row's boundary per variant ({rows} rows; the charts above draw them)</summary>\n<div class=\"scroll\"><table>\n<tr><th>variant</th>"
    );
    let _ = writeln!(
        h,
        "<th>{}</th><th>boundary ({})</th><th>interval (values decided on either side)</th><th>probes</th></tr>",
        escape(&map.y.describe()),
        escape(&map.x.path)
    );
    let names: Vec<&str> = map.variants.iter().map(String::as_str).collect();
    let colours = palette::colours_of(&names);
    for (v, name) in map.variants.iter().enumerate() {
        for row in &map.rows {
            let b = &row.variants[v].boundary;
            let (at, interval) = match (b.status, b.x, b.interval) {
                (BoundaryStatus::Found, Some(x), Some([lo, hi])) => {
                    (map.x.show(x), format!("{} – {}", map.x.show(lo), map.x.show(hi)))
                }
                (BoundaryStatus::NoneTip, _, _) => ("none tips in range".into(), "—".into()),
                (BoundaryStatus::AllTip, _, _) => ("all tip in range".into(), "—".into()),
                (BoundaryStatus::Unclear | BoundaryStatus::Found, _, _) => {
                    ("unclear (not monotone)".into(), "—".into())
                }
            };
            let _ = writeln!(
                h,
                "<tr><td>{}{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                swatch(colours[v]),
                escape(name),
                escape(&map.y.show(row.y)),
                escape(&at),
                escape(&interval),
                b.probes.len()
            );
        }
    }
    h.push_str("</table></div></details>\n");
    super::html::tail(
        &mut h,
        "map.json and map.csv hold every cell; each cell's two settings re-run it with `retrystorm run --set`.",
    );
    h
}

/// Writes `map.json`, `map.csv` and (for a whole map) the charts and `report.html` to `dir`;
/// returns the files written.
pub fn write_map(dir: &Path, map: &MapFile) -> Result<Vec<PathBuf>, OutputError> {
    let mut written = Vec::new();
    for (name, bytes) in [("map.json", map_json(map)), ("map.csv", map_csv(map))] {
        let path = dir.join(name);
        files::write_atomic(&path, &bytes)?;
        written.push(path);
    }
    written.extend(render_map(dir, map)?);
    Ok(written)
}

/// Writes the charts and `report.html` of a whole map (nothing for a shard) to `dir` from its
/// `map.json` (`retrystorm plot` on a map's directory); returns the files written.
pub fn render_map(dir: &Path, map: &MapFile) -> Result<Vec<PathBuf>, OutputError> {
    let mut written = Vec::new();
    if map.shard.is_none() {
        let mut rendered = Rendered::default();
        rendered.add(dir, &HeatFigure { map })?;
        rendered.add(dir, &BoundaryFigure { map })?;
        let report = dir.join("report.html");
        files::write_atomic(&report, map_html(map, &rendered).as_bytes())?;
        written.extend(rendered.files);
        written.push(report);
    }
    Ok(written)
}
