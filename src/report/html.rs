//! `report.html`: one self-contained page (inline CSS and SVG, no network) with the key findings,
//! the warnings, a summary table, the scenario and every chart.

use super::charts::{palette, variant_colours, RenderedChart};
use super::data::ReportData;
use super::data::SweepData;
use super::format::fmt_num;
use super::reading::key_findings;
use super::setup::Setup;
use crate::metrics::catalogue::Metric;
use plotters::style::RGBColor;
use std::fmt::Write;

const STYLE: &str = "
body { font-family: system-ui, -apple-system, 'Segoe UI', 'DejaVu Sans', sans-serif; margin: 0 auto;
       max-width: 1400px; padding: 24px; color: #1a1a1a; line-height: 1.45; box-sizing: border-box; }
h1 { margin-bottom: 0; } .meta { color: #555; margin-top: 4px; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: 4px; margin-top: 36px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; display: block; overflow-x: auto; max-width: 100%; }
td:first-child { white-space: nowrap; } th { white-space: normal; vertical-align: bottom; min-width: 4.5em; }
.scroll { overflow-x: auto; max-width: 100%; } td.outcomes { text-align: center; white-space: nowrap; }
nav.toc { margin: 12px 0; } nav.toc a { margin-right: 14px; } .verdict li { margin-bottom: 4px; }
th, td { border-bottom: 1px solid #e4e4e4; padding: 4px 6px; text-align: left; vertical-align: top; }
th { background: #f6f6f6; } td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.num:has(span.nw) { white-space: normal; } .nw { white-space: nowrap; }
.swatch { display: inline-block; width: 12px; height: 12px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
.findings li { margin-bottom: 6px; } .warn { background: #fff7e0; border-left: 4px solid #e69f00; padding: 8px 14px; }
figure { margin: 20px 0 36px; overflow-x: auto; } figcaption { color: #444; margin-bottom: 8px; }
/* A chart keeps at least 1,000 px (its text ≥ 2/3 of its drawn size). Below 1,000 px the charts
   that have one show their narrow drawing instead (760 px wide, panels stacked); the others
   shrink to 2/3 of their drawn width (an inline min-width) and then scroll sideways rather than
   shrink their text below reading size. */
figure svg { max-width: 100%; min-width: 1000px; height: auto; border: 1px solid #eee; box-sizing: border-box; }
figure .narrow { display: none; } figure .narrow svg { min-width: 600px; }
@media (max-width: 999px) { figure .wide { display: none; } figure .narrow { display: block; } }
code { background: #f3f3f3; padding: 1px 4px; border-radius: 3px; }
";

/// Escapes text for HTML.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

/// Columns of the summary table (headings, scales and units from the catalogue).
/// Nine, so that the table with its outcome counts fits 1,400 px (p50 latency and attempts,
/// which amplification implies, are in summary.csv).
const SUMMARY_COLUMNS: [Metric; 9] = [
    Metric::SuccessRatio,
    Metric::PeakAfterOverCapacity,
    Metric::TimeOverCapacityAfterS,
    Metric::RecoveryTimeS,
    Metric::Dlq,
    Metric::LatencySP99,
    Metric::Amplification,
    Metric::PeakOverCapacity,
    Metric::Duplicates,
];

/// The sweep table's columns: the headline after recovery first, the dead letters beside it.
const SWEEP_COLUMNS: [Metric; 5] =
    [Metric::SuccessRatio, Metric::PeakAfterOverCapacity, Metric::Dlq, Metric::Amplification, Metric::PeakOverCapacity];

/// A column heading: the whole-run peak is the peak during the trigger when there is one (the
/// post-recovery peak has its own column).
fn heading(m: Metric, trigger: bool) -> &'static str {
    if trigger && m == Metric::PeakOverCapacity {
        "peak during the trigger ÷ capacity"
    } else {
        m.def().label.trim_end_matches(" (s)")
    }
}

/// The page head: title and style.
pub fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        escape(title)
    )
}

/// The charts section: each chart with its caption (and its narrow drawing when it has one).
pub fn charts_section(h: &mut String, charts: &[RenderedChart]) {
    h.push_str("<h2 id=\"charts\">Charts</h2>\n");
    for chart in charts {
        let _ =
            write!(h, "<figure id=\"{}\">\n<figcaption>{}</figcaption>\n", escape(&chart.stem), escape(&chart.caption));
        match &chart.narrow_svg {
            Some(narrow) => {
                let _ = write!(
                    h,
                    "<div class=\"wide\">{}</div>\n<div class=\"narrow\">{}</div>",
                    chart.svg.trim(),
                    narrow.trim()
                );
            }
            // No narrow drawing: the chart may shrink to 2/3 of its drawn width (its text to 2/3
            // of its size) before it scrolls, so a 1,100 px chart fits an 800 px window.
            None => match svg_width(&chart.svg) {
                Some(w) => h.push_str(&chart.svg.trim().replacen(
                    "<svg ",
                    &format!("<svg style=\"min-width:{}px\" ", w * 2 / 3),
                    1,
                )),
                None => h.push_str(chart.svg.trim()),
            },
        }
        h.push_str("\n</figure>\n");
    }
}

/// The width an SVG was drawn at (its `width` attribute).
fn svg_width(svg: &str) -> Option<u32> {
    let tag = &svg[svg.find("<svg ")?..];
    let tag = &tag[..tag.find('>')?];
    let at = tag.find(" width=\"")? + 8;
    tag[at..].split('"').next()?.parse().ok()
}

/// The end of the page: where the files are and how to redraw them.
pub fn tail(h: &mut String, plot_hint: &str) {
    let _ = write!(
        h,
        "<p class=\"meta\">Every chart is also in this directory as <code>.svg</code> and <code>.png</code>. {}</p>\n</body>\n</html>\n",
        escape(plot_hint)
    );
}

/// The whole page of a run.
pub fn report_html(data: &ReportData, charts: &[RenderedChart]) -> String {
    let mut h = head(&format!("retrystorm report: {}", data.scenario));
    let names: Vec<&str> = data.variants.iter().map(|v| v.name.as_str()).collect();
    let _ = write!(
        h,
        "<h1>{}{}</h1>\n<p class=\"meta\">{}: {} · {} each · seed {} · retrystorm {}</p>\n",
        escape(&data.scenario),
        if data.emulation.is_some() { " — measured on 127.0.0.1" } else { "" },
        crate::report::format::count_of(names.len() as u64, "variant"),
        escape(&names.join(", ")),
        crate::report::format::count_of(
            u64::from(data.replications),
            if data.emulation.is_some() { "measured run" } else { "replication" }
        ),
        data.seed,
        escape(&data.version)
    );
    let p = &data.provenance;
    if !p.scenario_file.is_empty() {
        let _ = writeln!(
            h,
            "<p class=\"meta\">Scenario <code>{}</code> (FNV-1a {}){}{}</p>",
            escape(&p.scenario_file),
            escape(&p.scenario_hash),
            if p.overrides.is_empty() {
                String::new()
            } else {
                format!(" · --set {}", escape(&p.overrides.join(" --set ")))
            },
            if p.command.is_empty() {
                String::new()
            } else {
                format!(" · command: <code>{}</code>", escape(&p.command.join(" ")))
            },
        );
    }
    let _ = writeln!(
        h,
        "<nav class=\"toc\">{}<a href=\"#verdict\">Verdict</a><a href=\"#key\">Key results</a>\
         <a href=\"#charts\">Charts</a><a href=\"#summary\">Summary</a><a href=\"#scenario\">Scenario</a></nav>",
        if data.emulation.is_some() { "<a href=\"#measured\">Measured</a>" } else { "" }
    );
    if let Some(e) = &data.emulation {
        measured_section(&mut h, e);
    }
    verdict_section(&mut h, data);
    h.push_str("<h2 id=\"key\">Key results</h2>\n<ul class=\"findings\">\n");
    for finding in key_findings(data) {
        let _ = writeln!(h, "<li>{}</li>", escape(&finding));
    }
    h.push_str("</ul>\n");
    warnings(&mut h, data);
    // The charts before the tables: the summary and the per-variant detail follow them.
    charts_section(&mut h, charts);
    summary_table(&mut h, data);
    scenario_section(&mut h, data);
    tail(&mut h, "Re-render charts and this page from the run's files with `retrystorm plot DIR`.");
    h
}

/// The verdict: variants ranked under the objective, requirements met or not.
fn verdict_section(h: &mut String, data: &ReportData) {
    let (_, lines) = super::verdict_text::for_data(data);
    let _ = writeln!(
        h,
        "<h2 id=\"verdict\">Verdict</h2>\n<p class=\"answer\"><strong>{}</strong></p>\n<p>{}</p>\n<ul class=\"verdict\">",
        escape(&lines[0]),
        escape(&lines[1])
    );
    for line in &lines[2..] {
        let _ = writeln!(h, "<li>{}</li>", escape(line.trim()));
    }
    h.push_str("</ul>\n");
}

/// The whole page of a sweep: findings, the charts and a table of the headline metrics per cell.
pub fn sweep_html(data: &SweepData, charts: &[RenderedChart]) -> String {
    let mut h = head(&format!("retrystorm sweep: {}", data.scenario));
    let cells: usize = data.axes.iter().map(|a| a.labels.len()).product();
    let axes: Vec<String> = data.axes.iter().map(|a| format!("{} ∈ {{{}}}", a.path, a.labels.join(", "))).collect();
    let _ = write!(
        h,
        "<h1>{} — sweep</h1>\n<p class=\"meta\">{}: {} · variants {} · {} per cell · seed {}</p>\n",
        escape(&data.scenario),
        crate::report::format::count_of(cells as u64, "cell"),
        escape(&axes.join("; ")),
        escape(&data.variants.join(", ")),
        crate::report::format::count_of(u64::from(data.replications), "replication"),
        data.seed
    );
    h.push_str("<h2>Key results</h2>\n<ul class=\"findings\">\n");
    for finding in super::reading::sweep_findings(data) {
        let _ = writeln!(h, "<li>{}</li>", escape(&finding));
    }
    h.push_str("</ul>\n");
    if charts.is_empty() {
        h.push_str(
            "<p>No charts: a sweep over three or more parameters has no single view; see <code>sweep.csv</code>.</p>\n",
        );
    } else {
        charts_section(&mut h, charts);
    }
    let _ = write!(
        h,
        "<h2 id=\"summary\">Summary</h2>\n<p>Mean over {} replications with its 95% confidence interval: ± its half-width where the \
         interval is symmetric (Student t), [low–high] where it is kept within the metric's range (log scale for \
         positive quantities, clipped for shares, Wilson for per-run flags; docs/MODEL.md). Every metric, with paired differences against the baseline: <code>sweep.csv</code>.</p>\n<table>\n<tr><th>cell</th><th>variant</th>",
        data.replications
    );
    let trigger = (0..cells).any(|c| {
        (0..data.variants.len())
            .any(|v| data.stat(c, v, Metric::PeakAfterOverCapacity).is_some_and(|s| s.mean.is_some()))
    });
    headings(&mut h, &SWEEP_COLUMNS, trigger);
    h.push_str("</tr>\n");
    let names: Vec<&str> = data.variants.iter().map(String::as_str).collect();
    let colours = palette::colours_of(&names);
    for cell in 0..cells {
        for (v, name) in data.variants.iter().enumerate() {
            if data.stat(cell, v, Metric::Attempts).is_none() {
                continue;
            }
            let _ = write!(
                h,
                "<tr><td>{}</td><td>{}{}</td>",
                escape(&super::reading::cell_words(data, cell)),
                swatch(colours[v]),
                escape(name)
            );
            for metric in SWEEP_COLUMNS {
                let cell_text = data.stat(cell, v, metric).map_or("–".into(), |s| cell_text(s, metric));
                let _ = write!(h, "<td class=\"num\">{}</td>", escape(&cell_text));
            }
            h.push_str("</tr>\n");
        }
    }
    h.push_str("</table>\n");
    tail(&mut h, "Re-render the charts and this page with `retrystorm plot DIR`.");
    h
}

/// An emulated run: what was measured and where, and (`compare --emulate`) how far it agrees
/// with the simulation, before anything else.
fn measured_section(h: &mut String, e: &crate::runner::Emulation) {
    let _ = writeln!(
        h,
        "<h2 id=\"measured\">Measured on real sockets</h2>\n<p>These results were <strong>measured</strong>, not simulated: \
         the scenario's clients and hops ran as processes talking HTTP over real sockets at <code>127.0.0.1</code>, \
         at --time-scale {} ({} s of wall time). {}</p>",
        super::format::fmt_tick(e.time_scale),
        fmt_num(e.wall_s),
        if e.warnings.is_empty() {
            "This machine kept up with the scenario's clock (no warnings).".to_string()
        } else {
            format!(
                "This machine gave {}; see Warnings below.",
                crate::report::format::count_of(e.warnings.len() as u64, "warning")
            )
        }
    );
    if let Some(c) = &e.comparison {
        let _ = writeln!(
            h,
            "<p>{} (also in <code>comparison.csv</code>):</p>\n<table>\n<tr><th>variant</th><th>metric</th><th>simulated</th><th>measured</th><th>{}</th></tr>",
            escape(&upper_first(&c.method)),
            escape(&c.judged_by)
        );
        for r in &c.rows {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                escape(&r.variant),
                escape(&r.metric),
                escape(&r.simulated),
                escape(&r.measured),
                if r.verdict == "NO" { "<strong>NO</strong>".to_string() } else { escape(&r.verdict) }
            );
        }
        h.push_str("</table>\n<ul class=\"findings\">\n");
        for note in &c.notes {
            let _ = writeln!(h, "<li>{}</li>", escape(note).replace('\n', "<br>"));
        }
        h.push_str("</ul>\n");
    }
}

fn upper_first(s: &str) -> String {
    let mut chars = s.chars();
    chars.next().map_or(String::new(), |c| c.to_uppercase().chain(chars).collect())
}

fn warnings(h: &mut String, data: &ReportData) {
    let groups = data.variants.iter().map(|v| (v.name.clone(), v.truncated.as_slice()));
    let truncated: Vec<String> = crate::runner::truncations(groups, data.replications as usize)
        .into_iter()
        .map(|t| {
            let groups: Vec<String> =
                t.groups.iter().map(|(g, n)| format!("{g} {n} of {}", data.replications)).collect();
            format!("{} of {} runs stopped early ({}): {}", t.stopped, t.total, t.why, groups.join(", "))
        })
        .collect();
    let measured = data.emulation.as_ref().map_or(&[][..], |e| e.warnings.as_slice());
    if data.warnings.is_empty() && truncated.is_empty() && measured.is_empty() {
        h.push_str("<h2>Warnings</h2>\n<p>None: the scenario passed every invariant check.</p>\n");
        return;
    }
    h.push_str("<h2>Warnings</h2>\n<div class=\"warn\"><ul>\n");
    for w in measured {
        let _ = writeln!(h, "<li>Measurement: {}</li>", escape(w));
    }
    for w in &data.warnings {
        let _ = writeln!(h, "<li>{}</li>", escape(w));
    }
    for t in &truncated {
        let _ = writeln!(h, "<li>{} — their results are partial</li>", escape(t));
    }
    h.push_str("</ul></div>\n");
}

/// A variant's colour swatch (its colour from the one palette).
pub fn swatch(c: RGBColor) -> String {
    format!("<span class=\"swatch\" style=\"background:#{:02x}{:02x}{:02x}\"></span>", c.0, c.1, c.2)
}

fn summary_table(h: &mut String, data: &ReportData) {
    let _ = write!(
        h,
        "<h2 id=\"summary\">Summary</h2>\n<p>Mean over {} replications with its 95% confidence interval: ± its half-width where the \
         interval is symmetric (Student t), [low–high] where it is kept within the metric's range (log scale for \
         positive quantities, clipped for shares, Wilson for per-run flags; docs/MODEL.md). Whole system; the first hop for load figures.</p>\n<table>\n<tr><th>variant</th>",
        data.replications
    );
    headings(h, &SUMMARY_COLUMNS, data.variants.iter().any(|v| v.setup.trigger_end_s.is_some()));
    let runs = data.replications;
    let _ = writeln!(h, "<th>runs of {runs}: recovered · metastable · not observable</th></tr>");
    let colours = variant_colours(data);
    for (i, v) in data.variants.iter().enumerate() {
        let _ = write!(h, "<tr><td>{}{}</td>", swatch(colours[i]), escape(&v.label()));
        for metric in SUMMARY_COLUMNS {
            let cell = match v.metrics.get(metric) {
                Some(s) => cell_text(s, metric),
                None => "–".into(),
            };
            let _ = write!(h, "<td class=\"num\">{}</td>", breakable(&cell));
        }
        let _ = write!(h, "<td class=\"outcomes\">{}</td>", escape(&outcome_counts(&v.metrics)));
        h.push_str("</tr>\n");
    }
    h.push_str(
        "</table>\n<p>Full metrics per hop and tenant: <code>summary.csv</code> and <code>summary.json</code>.</p>\n",
    );
}

/// How many replications recovered, stayed overloaded (metastable) or could not show a recovery.
pub fn outcome_counts(metrics: &crate::metrics::stats::StatRow) -> String {
    let count = |m: Metric| metrics.get(m).map_or(0, |s| s.values.iter().filter(|v| **v == Some(1.0)).count());
    let cut = count(Metric::RecoveryCutOff);
    let cut = if cut > 0 { format!(" ({cut} cut off)") } else { String::new() };
    format!(
        "{} · {} · {}{cut}",
        count(Metric::Recovered),
        count(Metric::Metastable),
        count(Metric::RecoveryUnobservable)
    )
}

fn headings(h: &mut String, columns: &[Metric], trigger: bool) {
    for m in columns {
        let _ = write!(h, "<th>{}</th>", escape(heading(*m, trigger)));
    }
}

/// A table cell: the same text as the terminal table's ([`values::value`]: units scaled to the
/// value, precision following the 95% CI, `(exact)` when every replication agrees).
/// A summary cell whose interval (` ±…` or ` […]`) may go to a second line when the table is
/// too wide for the page, the value and the interval each kept whole.
fn breakable(cell: &str) -> String {
    match cell.find(" ±").or_else(|| cell.find(" [")) {
        Some(at) => format!(
            "<span class=\"nw\">{}</span> <span class=\"nw\">{}</span>",
            escape(&cell[..at]),
            escape(&cell[at + 1..])
        ),
        None => format!("<span class=\"nw\">{}</span>", escape(cell)),
    }
}

fn cell_text(s: &crate::metrics::stats::Stat, metric: Metric) -> String {
    super::values::value(metric, Some(s))
}

fn setup_tables(h: &mut String, s: &Setup) {
    h.push_str("<h3>Tenants</h3>\n<table>\n<tr><th>tenant</th><th>clients</th><th>arrivals</th><th>policy</th><th>invalid</th><th>poison</th></tr>\n");
    for t in &s.tenants {
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td><td class=\"num\">{}%</td><td class=\"num\">{}%</td></tr>",
            escape(&t.name),
            fmt_num(f64::from(t.clients)),
            escape(&t.arrival),
            escape(&t.policy),
            fmt_num(t.invalid_fraction * 100.0),
            fmt_num(t.poison_fraction * 100.0)
        );
    }
    h.push_str("</table>\n<h3>Hops (in chain order)</h3>\n<table>\n<tr><th>hop</th><th>workers</th><th>service time</th><th>capacity</th><th>queue limit</th><th>calls next hop with</th><th>idempotency TTL</th></tr>\n");
    for hop in &s.hops {
        let capacity = hop.capacity_per_s.map_or("unbounded".into(), |c| format!("{}/s", fmt_num(c)));
        let ttl = hop.idempotency_ttl_s.map_or("none".into(), super::format::fmt_secs);
        let _ = writeln!(
            h,
            "<tr><td>{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
            escape(&hop.name),
            if hop.cache.is_some() {
                "–".to_string()
            } else {
                hop.replicas.as_ref().map_or(hop.workers.to_string(), |r| format!("{} each; {}", hop.workers, escape(r)))
            },
            escape(hop.cache.as_ref().map_or(&hop.service, |c| c)),
            escape(&capacity),
            if hop.queue_limit == u32::MAX { "unbounded".into() } else { fmt_num(f64::from(hop.queue_limit)) },
            escape(hop.downstream_policy.as_deref().unwrap_or("–")),
            escape(&ttl)
        );
    }
    h.push_str("</table>\n<h3>Faults</h3>\n");
    if s.faults.is_empty() {
        h.push_str("<p>None.</p>\n");
    } else {
        h.push_str("<table>\n<tr><th>hop</th><th>fault</th><th>from (s)</th><th>to (s)</th></tr>\n");
        for f in &s.faults {
            let _ = writeln!(
                h,
                "<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                escape(&f.hop),
                escape(&f.summary),
                fmt_num(f.from_s),
                fmt_num(f.to_s)
            );
        }
        h.push_str("</table>\n");
    }
}

fn scenario_section(h: &mut String, data: &ReportData) {
    let first = &data.variants[0].setup;
    let _ = write!(
        h,
        "<h2 id=\"scenario\">Scenario</h2>\n<p>Arrivals until {}; time series in buckets of {}.</p>\n",
        super::format::fmt_secs(first.horizon_s),
        super::format::fmt_secs(data.bucket_s)
    );
    setup_tables(h, first);
    let _ = writeln!(
        h,
        "<details><summary>Retry policies per variant ({}) and what else each variant changes</summary>\n<table>\n<tr><th>variant</th><th>policy</th><th>settings</th></tr>",
        data.variants.len()
    );
    let colours = variant_colours(data);
    for (i, v) in data.variants.iter().enumerate() {
        for p in &v.setup.policies {
            let _ = writeln!(
                h,
                "<tr><td>{}{}</td><td>{}</td><td>{}</td></tr>",
                swatch(colours[i]),
                escape(&v.name),
                escape(&p.name),
                escape(&p.summary)
            );
        }
    }
    h.push_str("</table>\n");
    // Variants may change more than policies (`set = { "hop.api.workers" = 4 }`): show those whole.
    for v in data.variants.iter().skip(1) {
        let s = &v.setup;
        if s.tenants != first.tenants || s.hops != first.hops || s.faults != first.faults {
            let _ = writeln!(h, "<h3>Variant {}: differs beyond its policies</h3>", escape(&v.name));
            setup_tables(h, s);
        }
    }
    h.push_str("</details>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(escape("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
    }
}
