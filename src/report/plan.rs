//! `plan`'s files: `plan.json` (every probe with its statistics), `plan.csv` (one row per
//! variant × probe × requirement), the chart `plan.svg`/`plan.png` (each requirement's metric
//! against the parameter, the threshold and the chosen value marked) and `report.html`. A
//! two-setting plan (`--across`) draws `frontier.svg`/`frontier.png` instead: per variant the
//! least first setting meeting every requirement at each value of the second, the cheapest
//! combination ringed.

use super::charts::key::{self, KeyItem, Swatch};
use super::charts::{narrow, palette, DrawResult, Figure, Rendered, FONT};
use super::files::{self, OutputError};
use super::format::{fmt_secs, fmt_tick, tick_decimals};
use super::html::{escape, head, swatch};
use super::values;
use crate::metrics::objective::{Requirement, Verdict as Met};
use crate::runner::plan::{by_variant, cheapest, PlanFile, Probe, VariantPlan};
use crate::runner::plan_range::{whole, Find, Kind};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The colour of the plan's variant with index `index`: the palette's colour for its name, the
/// same as in `compare` and `run`.
fn plan_colour(plan: &PlanFile, index: usize) -> RGBColor {
    let names: Vec<&str> = plan.variants.iter().map(String::as_str).collect();
    palette::colours_of(&names).get(index).copied().unwrap_or(palette::OTHERS[0])
}

/// `plan.json` text (floats round-trip exactly, so a merged plan is byte-identical).
pub fn plan_json(plan: &PlanFile) -> Vec<u8> {
    let value = serde_json::to_value(plan).expect("a plan serialises");
    let mut s = serde_json::to_string_pretty(&value).expect("JSON values serialise");
    s.push('\n');
    s.into_bytes()
}

fn num(x: Option<f64>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

/// `plan.csv`: variant, value, requirement, mean, CI, the bound compared, met, meets_all, chosen.
/// A two-setting plan has a second column, `at`: the second setting's value.
pub fn plan_csv(plan: &PlanFile) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let two = plan.across.is_some();
    let header = [
        "variant",
        "at",
        "value",
        "requirement",
        "mean",
        "ci95_low",
        "ci95_high",
        "bound",
        "met",
        "meets_all",
        "chosen",
    ];
    w.write_record(header.iter().filter(|&&h| two || h != "at")).expect("in memory");
    for p in &plan.plans {
        for probe in &p.probes {
            for r in &probe.requirements {
                let (mean, ci) = (r.stat.as_ref().and_then(|s| s.mean), r.stat.as_ref().and_then(|s| s.ci95));
                let at = p.at.map(whole::text);
                w.write_record([p.variant.clone()].into_iter().chain(at).chain([
                    whole::text(probe.value),
                    r.requirement.clone(),
                    num(mean),
                    num(ci.map(|c| c[0])),
                    num(ci.map(|c| c[1])),
                    num(r.bound),
                    (r.verdict == Met::Met).to_string(),
                    probe.meets_all.to_string(),
                    (p.chosen == Some(probe.value)).to_string(),
                ]))
                .expect("in memory");
            }
        }
    }
    w.into_inner().expect("in memory")
}

/// How a probe was judged, with the opening of the parenthesis the headline closes: the one-sided
/// 95% bound over the replications, or, with one, that run's value alone, which is no confidence
/// at all (the bound of one value is the value).
fn confidence_words(replications: u32) -> String {
    if replications >= 2 {
        format!("with 95% confidence ({replications} replications per probe")
    } else {
        "on one run per probe, with no confidence (1 replication: its value is the bound; \
         --replications 10 or more gives a 95% bound"
            .to_string()
    }
}

/// The answer lines (stdout and the report).
pub fn answer_lines(plan: &PlanFile) -> Vec<String> {
    if plan.across.is_some() {
        return frontier_lines(plan);
    }
    let range = plan.range();
    let show = |x: f64| range.show(x);
    let step = step_words(plan);
    let mut lines = vec![format!(
        "{}: {} {} in {}..{}{step} meeting {} {}, seed {})",
        plan.scenario,
        plan.find.word(),
        plan.parameter,
        show(plan.lo),
        show(plan.hi),
        plan.requirements.join(" and "),
        confidence_words(plan.replications),
        plan.seed
    )];
    for p in &plan.plans {
        let probes: Vec<String> =
            p.probes.iter().map(|q| format!("{}{}", show(q.value), if q.meets_all { "✓" } else { "✗" })).collect();
        let answer = match p.chosen {
            Some(v) => format!("{} = {}", plan.parameter, show(v)),
            None => {
                let end = end_probe(plan, p);
                let at = end.map_or(String::new(), |q| show(q.value));
                format!(
                    "no value {} meets every requirement (at {at}: {})",
                    toward_end(plan),
                    end.map_or(String::new(), missed)
                )
            }
        };
        lines.push(format!("  {}: {answer}   (probes: {})", p.variant, probes.join(" ")));
        for w in &p.warnings {
            lines.push(format!("    warning: {w}"));
        }
    }
    lines
}

/// ` to within STEP` when the search's grid is not the whole numbers, else nothing.
fn step_words(plan: &PlanFile) -> String {
    if plan.kind == Kind::Integer && plan.resolution == 1.0 {
        String::new()
    } else {
        format!(" to within {}", plan.range().show(plan.resolution))
    }
}

/// The end of the searched range that should pass, in words: `up to HI` for `smallest`,
/// `down to LO` for `largest`.
fn toward_end(plan: &PlanFile) -> String {
    let range = plan.range();
    match plan.find {
        Find::Smallest => format!("up to {}", range.show(plan.hi)),
        Find::Largest => format!("down to {}", range.show(plan.lo)),
    }
}

/// The probe of `p` at the end of the range that should pass (the top for `smallest`, the
/// bottom for `largest`).
fn end_probe<'a>(plan: &PlanFile, p: &'a VariantPlan) -> Option<&'a Probe> {
    match plan.find {
        Find::Smallest => p.probes.last(),
        Find::Largest => p.probes.first(),
    }
}

/// The requirements `probe` did not meet, with their values (for `plan`'s own sentences).
pub(crate) fn missed_requirements(probe: &Probe) -> String {
    missed(probe)
}

/// The requirements `probe` did not meet, with their values: `success_ratio >= 0.999 is 97.30%`.
fn missed(probe: &Probe) -> String {
    let missed: Vec<String> = probe
        .requirements
        .iter()
        .filter(|r| r.verdict == Met::NotMet)
        .map(|r| {
            let metric = Requirement::parse(&r.requirement).ok().map(|x| x.metric.metric);
            let shown = metric.map_or("—".into(), |m| values::value(m, r.stat.as_ref()));
            format!("{} is {shown}", r.requirement)
        })
        .collect();
    missed.join("; ")
}

/// The answer lines of a two-setting plan: the question, then per variant its cheapest
/// combination and its frontier (wrapped within 100 columns), and the searches' warnings.
fn frontier_lines(plan: &PlanFile) -> Vec<String> {
    let across = plan.across.as_ref().expect("a two-setting plan");
    let (range, second) = (plan.range(), across.range());
    let grid = second.grid();
    let step = step_words(plan);
    let mut lines = vec![format!(
        "{}: {} {} in {}..{}{step} at each {} in {}..{} ({} values) meeting {} {}, seed {})",
        plan.scenario,
        plan.find.word(),
        plan.parameter,
        range.show(plan.lo),
        range.show(plan.hi),
        across.parameter,
        second.show(across.lo),
        second.show(across.hi),
        grid.len(),
        plan.requirements.join(" and "),
        confidence_words(plan.replications),
        plan.seed
    )];
    for group in by_variant(plan) {
        let name = &group[0].variant;
        lines.push(match cheapest(&group, plan.find) {
            Some(best) => format!(
                "  {name}: cheapest {} = {} at {} = {}",
                plan.parameter,
                range.show(best.chosen.expect("a cheapest entry has its value")),
                across.parameter,
                second.show(best.at.unwrap_or(across.lo))
            ),
            None => {
                // The search's end that should pass, at the second setting's last value.
                let last = group.last().expect("a variant has its searches");
                let why = end_probe(plan, last).map_or(String::new(), |q| {
                    format!(
                        "; at {} = {} and {} = {}: {}",
                        across.parameter,
                        second.show(last.at.unwrap_or(across.hi)),
                        plan.parameter,
                        range.show(q.value),
                        missed(q)
                    )
                });
                format!(
                    "  {name}: no combination in range meets every requirement ({} {} at every {} in {}..{}{why})",
                    plan.parameter,
                    toward_end(plan),
                    across.parameter,
                    second.show(across.lo),
                    second.show(across.hi)
                )
            }
        });
        let points: Vec<String> = group
            .iter()
            .map(|p| {
                let at = second.show(p.at.unwrap_or(across.lo));
                format!("{at}→{}", p.chosen.map_or("none".to_string(), |v| range.show(v)))
            })
            .collect();
        lines.push(format!("    frontier ({} → {}): {}", across.parameter, plan.parameter, points.join(", ")));
        for p in &group {
            for w in &p.warnings {
                lines.push(format!(
                    "    warning at {} = {}: {w}",
                    across.parameter,
                    second.show(p.at.unwrap_or(across.lo))
                ));
            }
        }
    }
    lines
}

/// The frontier chart of a two-setting plan: per variant the chosen first setting (y) at each
/// value of the second (x), a cross at the top where none in range meets every requirement, the
/// cheapest combination ringed.
pub struct FrontierFigure<'a> {
    /// The plan (with its `across`).
    pub plan: &'a PlanFile,
}

impl Figure for FrontierFigure<'_> {
    fn stem(&self) -> String {
        "frontier".into()
    }

    fn caption(&self) -> String {
        let across = self.plan.across.as_ref().map_or("", |a| a.parameter.as_str());
        format!(
            "The {} {} meeting every requirement at each {across} (a cross at the edge: none in range), each variant's cheapest combination ringed.",
            self.plan.find.word(),
            self.plan.parameter
        )
    }

    fn size(&self) -> (u32, u32) {
        let rows = self.key_rows(1000).len() as u32;
        (1000, 560 + 24 * rows)
    }

    fn narrow_size(&self) -> Option<(u32, u32)> {
        let rows = self.key_rows(narrow::NARROW_PX).len() as u32;
        Some((narrow::NARROW_PX, 580 + 24 * rows))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let plan = self.plan;
        let across = plan.across.as_ref().expect("a two-setting plan");
        let rows = self.key_rows(root.dim_in_pixel().0);
        let root = narrow::titled(
            root,
            &format!("{}: the {} {} at each {}", plan.scenario, plan.find.word(), plan.parameter, across.parameter),
            20,
        )?;
        let (title, body) = root.split_vertically(8 + 24 * rows.len() as u32);
        for (row, items) in rows.iter().enumerate() {
            let y = 4 + 24 * row as i32;
            for (x, colour, text) in items {
                if let Some(colour) = colour {
                    title.draw(&Rectangle::new([(*x, y + 2), (x + 14, y + 14)], colour.filled()))?;
                }
                title.draw(&Text::new(text.clone(), (x + 20, y), (FONT, 15).into_font().color(&BLACK)))?;
            }
        }
        let (x0, x1) = (across.lo, across.hi.max(across.lo + across.step));
        let pad_x = (x1 - x0) * 0.04;
        let groups = by_variant(plan);
        // The values found, on a log axis for a wide whole-number range (as plan.png's x-axis);
        // above them a band with one row per variant, where a cross says "none in range".
        let (lo, hi) = (plan.lo, plan.hi.max(plan.lo + plan.resolution));
        let log_y = lo > 0.0 && hi >= if plan.kind == Kind::Integer { 16.0 } else { 100.0 } * lo;
        let row = |k: usize| -> f64 {
            if log_y {
                hi * (hi / lo).powf(0.05 * (k as f64 + 1.0))
            } else {
                hi + (hi - lo) * 0.05 * (k as f64 + 1.0)
            }
        };
        let top = row(groups.len());
        let x_tick = |x: f64| if across.kind == Kind::Duration { fmt_secs(x) } else { fmt_tick(x) };
        let y_tick = |y: f64| {
            if y > hi * (1.0 + 1e-9) {
                String::new()
            } else if plan.kind == Kind::Duration {
                fmt_secs(y)
            } else {
                fmt_tick(y)
            }
        };
        let y_desc = if log_y { format!("{} (log scale)", plan.parameter) } else { plan.parameter.clone() };
        macro_rules! panel {
            ($y:expr) => {{
                let mut chart = ChartBuilder::on(&body)
                    .margin(12)
                    .margin_right(30)
                    .x_label_area_size(48)
                    .y_label_area_size(80)
                    .build_cartesian_2d(x0 - pad_x..x1 + pad_x, $y)?;
                chart
                    .configure_mesh()
                    .x_desc(across.parameter.as_str())
                    .y_desc(y_desc.as_str())
                    .x_label_formatter(&|x| x_tick(*x))
                    .y_label_formatter(&|y| y_tick(*y))
                    .label_style((FONT, 15))
                    .axis_desc_style((FONT, 16))
                    .draw()?;
                let grey = RGBColor(90, 90, 90);
                chart.draw_series(DashedLineSeries::new(
                    [(x0 - pad_x, hi), (x1 + pad_x, hi)],
                    6,
                    4,
                    grey.stroke_width(1),
                ))?;
                for (k, group) in groups.iter().enumerate() {
                    let colour = plan_colour(plan, group[0].index);
                    // One point per value planned, unjoined: between two of them nothing was run.
                    for p in group {
                        let x = p.at.unwrap_or(across.lo);
                        match p.chosen {
                            Some(v) => {
                                chart.draw_series(std::iter::once(Circle::new((x, v), 5, colour.filled())))?;
                            }
                            None => {
                                chart.draw_series(std::iter::once(Cross::new(
                                    (x, row(k)),
                                    5,
                                    colour.stroke_width(2),
                                )))?;
                            }
                        }
                    }
                    if let Some(best) = cheapest(group, plan.find) {
                        let at = (best.at.unwrap_or(across.lo), best.chosen.expect("found"));
                        chart.draw_series(std::iter::once(Circle::new(at, 11, colour.stroke_width(2))))?;
                    }
                }
            }};
        }
        if log_y {
            panel!(super::charts::axes::LogAxis::new(lo / (hi / lo).powf(0.04), top));
        } else {
            panel!(lo - (hi - lo) * 0.04..top);
        }
        Ok(())
    }
}

impl FrontierFigure<'_> {
    /// The key: per variant its colour and cheapest combination, laid out in rows within
    /// `width` pixels (at 8.5 px per character of the 15 px font), so no text leaves the canvas.
    fn key_rows(&self, width: u32) -> Vec<Vec<(i32, Option<RGBColor>, String)>> {
        let plan = self.plan;
        let (range, second) = (plan.range(), plan.across.as_ref().map(|a| a.range()));
        let mut rows: Vec<Vec<(i32, Option<RGBColor>, String)>> = vec![Vec::new()];
        let mut x = 20;
        let mut place = |colour: Option<RGBColor>, text: String| {
            let w = 36 + (8.5 * text.chars().count() as f64) as i32;
            if x + w > width as i32 - 10 && x > 20 {
                rows.push(Vec::new());
                x = 20;
            }
            rows.last_mut().expect("a row").push((x, colour, text));
            x += w;
        };
        for group in by_variant(plan) {
            let answer = match (cheapest(&group, plan.find), &second) {
                (Some(best), Some(s)) => {
                    format!("{} at {}", range.show(best.chosen.expect("found")), s.show(best.at.unwrap_or(s.lo)))
                }
                (None, _) | (Some(_), None) => "none in range".to_string(),
            };
            place(Some(plan_colour(plan, group[0].index)), format!("{} ({answer})", group[0].variant));
        }
        place(None, format!("× above the dashed line: none {}", toward_end(plan)));
        rows
    }
}

/// The chart: one panel per requirement, its metric's mean (95% CI whiskers) against the
/// parameter per variant, the threshold dashed, each variant's chosen value as a vertical line.
pub struct PlanFigure<'a> {
    /// The plan.
    pub plan: &'a PlanFile,
    /// Parsed requirements (for units and thresholds).
    pub requirements: &'a [Requirement],
}

impl PlanFigure<'_> {
    /// The key: each variant's colour and answer, then the threshold's dashes.
    fn key(&self) -> Vec<KeyItem> {
        let mut items: Vec<KeyItem> = self
            .plan
            .plans
            .iter()
            .map(|p| {
                let answer =
                    p.chosen.map_or("none in range".to_string(), |v| format!("chosen {}", self.plan.range().show(v)));
                (Swatch::Fill(plan_colour(self.plan, p.index).into()), format!("{} ({answer})", p.variant))
            })
            .collect();
        items.push((Swatch::Dashed(BLACK.into()), "threshold".into()));
        items
    }

    fn title(&self) -> String {
        match self.plan.find {
            Find::Smallest => format!("{}: {} needed", self.plan.scenario, self.plan.parameter),
            Find::Largest => format!("{}: the most {} sustained", self.plan.scenario, self.plan.parameter),
        }
    }

    fn height(&self, width: u32) -> u32 {
        let labels: Vec<String> = self.key().into_iter().map(|k| k.1).collect();
        let title = if width < 800 { 70 } else { 44 };
        title + key::height_estimate(&labels, width) + 380 * self.requirements.len().max(1) as u32
    }
}

impl Figure for PlanFigure<'_> {
    fn stem(&self) -> String {
        "plan".into()
    }

    fn caption(&self) -> String {
        format!(
            "Each requirement's metric against {} ({}, one point per value probed), the threshold dashed and each variant's chosen value as a vertical line.",
            self.plan.parameter,
            if self.plan.replications >= 2 { "mean and 95% CI per probe" } else { "one run's value per probe, no CI" }
        )
    }

    fn size(&self) -> (u32, u32) {
        (1100, self.height(1100))
    }

    fn narrow_size(&self) -> Option<(u32, u32)> {
        Some((narrow::NARROW_PX, self.height(narrow::NARROW_PX)))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let body = narrow::titled(root, &self.title(), 22)?;
        let body = key::with_key(&body, &self.key())?;
        let panels = body.split_evenly((self.requirements.len().max(1), 1));
        for (r, (req, panel)) in self.requirements.iter().zip(&panels).enumerate() {
            draw_requirement(panel, self.plan, req, r)?;
        }
        Ok(())
    }
}

/// Draws a polyline (dashed or solid) onto the current panel.
type LineDrawer<'a> = dyn FnMut(&[(f64, f64)], &ShapeStyle, bool) -> DrawResult + 'a;

fn draw_requirement<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    plan: &PlanFile,
    req: &Requirement,
    r: usize,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let scale = req.metric.metric.def().unit.scale();
    let points: Vec<(usize, f64, f64, f64, f64)> = plan
        .plans
        .iter()
        .flat_map(|p| {
            p.probes.iter().filter_map(move |q| {
                let s = q.requirements.get(r)?.stat.as_ref()?;
                let [lo, hi] = s.ci95?;
                Some((p.index, q.value, s.mean? * scale, lo * scale, hi * scale))
            })
        })
        .collect();
    let threshold = req.threshold * scale;
    let ys = points.iter().flat_map(|p| [p.3, p.4]).chain([threshold]);
    let (mut y0, mut y1) = ys.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), y| (a.min(y), b.max(y)));
    let pad = ((y1 - y0) * 0.08).max(threshold.abs() * 0.05).max(1e-9);
    y0 -= pad;
    y1 += pad;
    // A share's axis stays within 0–100% (a CI's whisker beyond it is cut at the edge).
    if req.metric.metric.def().unit == crate::metrics::catalogue::Unit::Share {
        (y0, y1) = (y0.max(0.0), y1.min(scale));
    }
    let y_decimals = tick_decimals(y0, y1, 10);
    // A log axis for wide whole-number ranges (1..256 workers); durations and rates read better
    // on a linear one unless they span two decades (log tick labels crowd at the top of a decade).
    let decades = if plan.kind == Kind::Integer { 16.0 } else { 100.0 };
    let log_x = plan.lo > 0.0 && plan.hi >= decades * plan.lo;
    let caption = format!("{} (threshold {})", req, values::plain(req.metric.metric, req.threshold));
    let x_desc = if log_x { format!("{} (log scale)", plan.parameter) } else { plan.parameter.clone() };
    let def = req.metric.metric.def();
    let unit = def.unit.suffix().trim();
    let y_desc = if unit.is_empty() {
        def.label.to_string()
    } else {
        format!("{} ({unit})", def.label.trim_end_matches(" (s)"))
    };
    let (xl, xh) = (plan.lo, plan.hi);
    let x_tick = |x: f64| if plan.kind == Kind::Duration { fmt_secs(x) } else { fmt_tick(x) };
    let draw = |chart: &mut LineDrawer| -> DrawResult {
        chart(&[(xl, threshold), (xh, threshold)], &BLACK.mix(0.7).stroke_width(2), true)?;
        // Probes only, unjoined: a line between two probes would draw values never run.
        for p in &plan.plans {
            let colour = plan_colour(plan, p.index);
            if let Some(v) = p.chosen {
                chart(&[(v, y0), (v, y1)], &colour.stroke_width(2), true)?;
            }
        }
        Ok(())
    };
    macro_rules! panel {
        ($x:expr) => {{
            let mut chart = ChartBuilder::on(area)
                .caption(&caption, (FONT, 17))
                .margin(12)
                .margin_right(30)
                .x_label_area_size(44)
                .y_label_area_size(80)
                .build_cartesian_2d($x, y0..y1)?;
            chart
                .configure_mesh()
                .x_desc(x_desc.as_str())
                .y_desc(y_desc.as_str())
                .x_label_formatter(&|x| x_tick(*x))
                .y_label_formatter(&|y| values::grouped(*y, y_decimals))
                .label_style((FONT, 14))
                .axis_desc_style((FONT, 15))
                .draw()?;
            for q in &points {
                let colour = plan_colour(plan, q.0);
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(q.1, q.3), (q.1, q.4)],
                    colour.stroke_width(1),
                )))?;
                chart.draw_series(std::iter::once(Circle::new((q.1, q.2), 4, colour.filled())))?;
            }
            let mut line = |pts: &[(f64, f64)], style: &ShapeStyle, dashed: bool| -> DrawResult {
                if dashed {
                    chart.draw_series(DashedLineSeries::new(pts.iter().copied(), 8, 5, *style))?;
                } else {
                    chart.draw_series(LineSeries::new(pts.iter().copied(), *style))?;
                }
                Ok(())
            };
            draw(&mut line)?;
        }};
    }
    if log_x {
        // Our log axis: 1-2-5 ticks, each once (plotters' own drew the decade's label twice).
        panel!(super::charts::axes::LogAxis::new(xl, xh));
    } else {
        panel!(xl..xh);
    }
    Ok(())
}

/// The plan's `report.html`: the answer, the probes and the chart.
pub fn plan_html(plan: &PlanFile, rendered: &Rendered) -> String {
    let mut h = head(&format!("retrystorm plan: {}", plan.scenario));
    let _ = write!(
        h,
        "<h1>{} — capacity plan</h1>\n<p class=\"meta\">seed {} · {} per probe · retrystorm {}</p>\n\
         <nav><a href=\"#answer\">Answer</a> · <a href=\"#charts\">Chart</a> · <a href=\"#probes\">Probes</a></nav>\n\
         <h2 id=\"answer\">Answer</h2>\n<ul class=\"findings\">\n",
        escape(&plan.scenario),
        plan.seed,
        if plan.replications == 1 {
            "1 replication".to_string()
        } else {
            format!("{} replications", plan.replications)
        },
        escape(&plan.version)
    );
    // Each variant's answer first; its frontier and the searches' warnings (indented on stdout)
    // fold under the chart.
    let (answers, detail): (Vec<String>, Vec<String>) =
        answer_lines(plan).into_iter().partition(|line| !line.starts_with("    "));
    for line in &answers {
        let _ = writeln!(h, "<li>{}</li>", escape(line.trim()));
    }
    h.push_str("</ul>\n");
    super::html::charts_section(&mut h, &rendered.charts);
    if !detail.is_empty() {
        let _ = writeln!(
            h,
            "<h2 id=\"detail\">Frontier and warnings</h2>\n<details><summary>{}: each variant's frontier and its searches' warnings</summary>\n<ul class=\"findings\">",
            crate::report::format::count_of(detail.len() as u64, "line")
        );
        for line in &detail {
            let _ = writeln!(h, "<li>{}</li>", escape(line.trim()));
        }
        h.push_str("</ul></details>\n");
    }
    let second = plan.across.as_ref().map(|a| (a.parameter.as_str(), a.range()));
    let probes: usize = plan.plans.iter().map(|p| p.probes.len()).sum();
    let _ = write!(
        h,
        "<h2 id=\"probes\">Probes</h2>\n<details><summary>Every probe and requirement ({}; the chart above draws them)</summary>\n<div class=\"scroll\"><table>\n<tr><th>variant</th>{}<th>value</th><th>requirement</th><th>{}</th><th>{}</th><th>met</th></tr>\n",
        crate::report::format::count_of(probes as u64, "probe"),
        second.as_ref().map_or(String::new(), |(name, _)| format!("<th><code>{}</code></th>", escape(name))),
        if plan.replications >= 2 { "mean ± 95% CI" } else { "value (one run: no CI)" },
        if plan.replications >= 2 { "95% bound" } else { "bound (one run: its value)" }
    );
    for p in &plan.plans {
        let at = second
            .as_ref()
            .zip(p.at)
            .map_or(String::new(), |((_, r), x)| format!("<td class=\"num\">{}</td>", escape(&r.show(x))));
        for q in &p.probes {
            for r in &q.requirements {
                let metric =
                    crate::metrics::objective::Requirement::parse(&r.requirement).map(|x| x.metric.metric).ok();
                let shown = metric.map_or("—".into(), |m| values::value(m, r.stat.as_ref()));
                let bound = metric.zip(r.bound).map_or("—".into(), |(m, b)| values::plain(m, b));
                let _ = writeln!(
                    h,
                    "<tr><td>{}{}</td>{at}<td class=\"num\">{}{}</td><td><code>{}</code></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                    swatch(plan_colour(plan, p.index)),
                    escape(&p.variant),
                    escape(&plan.range().show(q.value)),
                    if p.chosen == Some(q.value) { " (chosen)" } else { "" },
                    escape(&r.requirement),
                    escape(&shown),
                    escape(&bound),
                    if r.verdict == Met::Met { "yes" } else { "no" }
                );
            }
        }
    }
    h.push_str("</table></div></details>\n");
    super::html::tail(&mut h, "plan.json and plan.csv hold every probe.");
    h
}

/// Writes `plan.json`, `plan.csv`, the chart and `report.html` to `dir`; returns the files.
pub fn write_plan(dir: &Path, plan: &PlanFile) -> Result<Vec<PathBuf>, OutputError> {
    let mut written = Vec::new();
    for (name, bytes) in [("plan.json", plan_json(plan)), ("plan.csv", plan_csv(plan))] {
        let path = dir.join(name);
        files::write_atomic(&path, &bytes)?;
        written.push(path);
    }
    written.extend(render_plan(dir, plan)?);
    Ok(written)
}

/// Writes the chart and `report.html` of a whole plan (nothing for a shard) to `dir` from its
/// `plan.json` (`retrystorm plot` on a plan's directory); returns the files written.
pub fn render_plan(dir: &Path, plan: &PlanFile) -> Result<Vec<PathBuf>, OutputError> {
    let requirements: Vec<Requirement> = plan.requirements.iter().filter_map(|r| Requirement::parse(r).ok()).collect();
    let mut written = Vec::new();
    let mut rendered = Rendered::default();
    if plan.shard.is_none() {
        if plan.across.is_some() {
            rendered.add(dir, &FrontierFigure { plan })?;
        } else {
            rendered.add(dir, &PlanFigure { plan, requirements: &requirements })?;
        }
        let report = dir.join("report.html");
        files::write_atomic(&report, plan_html(plan, &rendered).as_bytes())?;
        written.extend(rendered.files);
        written.push(report);
    }
    Ok(written)
}
