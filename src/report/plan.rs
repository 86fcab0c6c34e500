//! `plan`'s files: `plan.json` (every probe with its statistics), `plan.csv` (one row per
//! variant × probe × requirement), the chart `plan.svg`/`plan.png` (each requirement's metric
//! against the parameter, the threshold and the chosen value marked) and `report.html`.

use super::charts::{palette, DrawResult, Figure, Rendered, FONT};
use super::files::{self, OutputError};
use super::format::{fmt_num, fmt_secs, fmt_tick};
use super::html::{escape, head, swatch};
use super::values;
use crate::metrics::objective::{Requirement, Verdict as Met};
use crate::runner::plan::PlanFile;
use crate::runner::plan_range::{whole, Find, Kind};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The colour of the plan's variant with index `index`: the palette's colour for its name, the
/// same as in `compare` and `run`.
fn plan_colour(plan: &PlanFile, index: usize) -> RGBColor {
    let names: Vec<&str> = plan.plans.iter().map(|p| p.variant.as_str()).collect();
    let at = plan.plans.iter().position(|p| p.index == index).unwrap_or(0);
    palette::colours_of(&names).get(at).copied().unwrap_or(palette::PALETTE[0])
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
pub fn plan_csv(plan: &PlanFile) -> Vec<u8> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let header =
        ["variant", "value", "requirement", "mean", "ci95_low", "ci95_high", "bound", "met", "meets_all", "chosen"];
    w.write_record(header).expect("in memory");
    for p in &plan.plans {
        for probe in &p.probes {
            for r in &probe.requirements {
                let (mean, ci) = (r.stat.as_ref().and_then(|s| s.mean), r.stat.as_ref().and_then(|s| s.ci95));
                w.write_record([
                    p.variant.clone(),
                    whole::text(probe.value),
                    r.requirement.clone(),
                    num(mean),
                    num(ci.map(|c| c[0])),
                    num(ci.map(|c| c[1])),
                    num(r.bound),
                    (r.verdict == Met::Met).to_string(),
                    probe.meets_all.to_string(),
                    (p.chosen == Some(probe.value)).to_string(),
                ])
                .expect("in memory");
            }
        }
    }
    w.into_inner().expect("in memory")
}

/// The answer lines (stdout and the report).
pub fn answer_lines(plan: &PlanFile) -> Vec<String> {
    let range = plan.range();
    let show = |x: f64| range.show(x);
    let step = if plan.kind == Kind::Integer && plan.resolution == 1.0 {
        String::new()
    } else {
        format!(" to within {}", show(plan.resolution))
    };
    let mut lines = vec![format!(
        "{}: {} {} in {}..{}{step} meeting {} with 95% confidence ({} replications per probe, seed {})",
        plan.scenario,
        plan.find.word(),
        plan.parameter,
        show(plan.lo),
        show(plan.hi),
        plan.requirements.join(" and "),
        plan.replications,
        plan.seed
    )];
    for p in &plan.plans {
        let probes: Vec<String> =
            p.probes.iter().map(|q| format!("{}{}", show(q.value), if q.meets_all { "✓" } else { "✗" })).collect();
        let answer = match p.chosen {
            Some(v) => format!("{} = {}", plan.parameter, show(v)),
            None => {
                // The end that should pass: the top for `smallest`, the bottom for `largest`.
                let (end, beyond) = match plan.find {
                    Find::Smallest => (p.probes.last(), format!("up to {}", show(plan.hi))),
                    Find::Largest => (p.probes.first(), format!("down to {}", show(plan.lo))),
                };
                let top = end;
                let missed: Vec<String> = top
                    .map(|q| {
                        q.requirements
                            .iter()
                            .filter(|r| r.verdict == Met::NotMet)
                            .map(|r| {
                                let metric = Requirement::parse(&r.requirement).ok().map(|x| x.metric.metric);
                                let shown = metric.map_or("—".into(), |m| values::value(m, r.stat.as_ref()));
                                format!("{} is {shown}", r.requirement)
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let at = top.map_or(String::new(), |q| show(q.value));
                format!("no value {beyond} meets every requirement (at {at}: {})", missed.join("; "))
            }
        };
        lines.push(format!("  {}: {answer}   (probes: {})", p.variant, probes.join(" ")));
        for w in &p.warnings {
            lines.push(format!("    warning: {w}"));
        }
    }
    lines
}

/// The chart: one panel per requirement, its metric's mean (95% CI whiskers) against the
/// parameter per variant, the threshold dashed, each variant's chosen value as a vertical line.
pub struct PlanFigure<'a> {
    /// The plan.
    pub plan: &'a PlanFile,
    /// Parsed requirements (for units and thresholds).
    pub requirements: &'a [Requirement],
}

impl Figure for PlanFigure<'_> {
    fn stem(&self) -> String {
        "plan".into()
    }

    fn caption(&self) -> String {
        format!(
            "Each requirement's metric against {} (mean and 95% CI per probe), the threshold dashed and each variant's chosen value as a vertical line.",
            self.plan.parameter
        )
    }

    fn size(&self) -> (u32, u32) {
        (1100, 60 + 380 * self.requirements.len().max(1) as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let (title, body) = root.split_vertically(60);
        title.draw(&Text::new(
            match self.plan.find {
                Find::Smallest => format!("{}: {} needed", self.plan.scenario, self.plan.parameter),
                Find::Largest => format!("{}: the most {} sustained", self.plan.scenario, self.plan.parameter),
            },
            (20, 8),
            (FONT, 22).into_font().color(&BLACK),
        ))?;
        // Key: each variant's colour and answer; the dashed black line is the threshold.
        let mut x = 20;
        for p in &self.plan.plans {
            let colour = plan_colour(self.plan, p.index);
            let answer =
                p.chosen.map_or("none in range".to_string(), |v| format!("chosen {}", self.plan.range().show(v)));
            let text = format!("{} ({answer})", p.variant);
            title.draw(&Rectangle::new([(x, 40), (x + 14, 52)], colour.filled()))?;
            title.draw(&Text::new(text.clone(), (x + 20, 38), (FONT, 15).into_font().color(&BLACK)))?;
            x += 40 + 8 * text.chars().count() as i32;
        }
        title.draw(&Text::new("- - threshold", (x, 38), (FONT, 15).into_font().color(&BLACK)))?;
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
        for p in &plan.plans {
            let colour = plan_colour(plan, p.index);
            let mut mine: Vec<(f64, f64)> = points.iter().filter(|q| q.0 == p.index).map(|q| (q.1, q.2)).collect();
            mine.sort_by(|a, b| a.0.total_cmp(&b.0));
            chart(&mine, &colour.stroke_width(2), false)?;
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
                .y_label_formatter(&|y| fmt_num(*y))
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
        "<h1>{} — capacity plan</h1>\n<p class=\"meta\">seed {} · {} replications per probe · retrystorm {}</p>\n\
         <nav><a href=\"#answer\">Answer</a> · <a href=\"#probes\">Probes</a> · <a href=\"#charts\">Chart</a></nav>\n\
         <h2 id=\"answer\">Answer</h2>\n<ul class=\"findings\">\n",
        escape(&plan.scenario),
        plan.seed,
        plan.replications,
        escape(&plan.version)
    );
    for line in answer_lines(plan) {
        let _ = writeln!(h, "<li>{}</li>", escape(line.trim()));
    }
    h.push_str("</ul>\n<h2 id=\"probes\">Probes</h2>\n<div class=\"scroll\"><table>\n<tr><th>variant</th><th>value</th><th>requirement</th><th>mean ± 95% CI</th><th>95% bound</th><th>met</th></tr>\n");
    for p in &plan.plans {
        for q in &p.probes {
            for r in &q.requirements {
                let metric =
                    crate::metrics::objective::Requirement::parse(&r.requirement).map(|x| x.metric.metric).ok();
                let shown = metric.map_or("—".into(), |m| values::value(m, r.stat.as_ref()));
                let bound = metric.zip(r.bound).map_or("—".into(), |(m, b)| values::plain(m, b));
                let _ = writeln!(
                    h,
                    "<tr><td>{}{}</td><td class=\"num\">{}{}</td><td><code>{}</code></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
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
    h.push_str("</table></div>\n<div id=\"charts\"></div>\n");
    super::html::charts_and_tail(&mut h, &rendered.charts, "plan.json and plan.csv hold every probe.");
    h
}

/// Writes `plan.json`, `plan.csv`, the chart and `report.html` to `dir`; returns the files.
pub fn write_plan(dir: &Path, plan: &PlanFile) -> Result<Vec<PathBuf>, OutputError> {
    let requirements: Vec<Requirement> = plan.requirements.iter().filter_map(|r| Requirement::parse(r).ok()).collect();
    let mut written = Vec::new();
    for (name, bytes) in [("plan.json", plan_json(plan)), ("plan.csv", plan_csv(plan))] {
        let path = dir.join(name);
        files::write_atomic(&path, &bytes)?;
        written.push(path);
    }
    let mut rendered = Rendered::default();
    if plan.shard.is_none() {
        rendered.add(dir, &PlanFigure { plan, requirements: &requirements })?;
        let report = dir.join("report.html");
        files::write_atomic(&report, plan_html(plan, &rendered).as_bytes())?;
        written.extend(rendered.files);
        written.push(report);
    }
    Ok(written)
}
