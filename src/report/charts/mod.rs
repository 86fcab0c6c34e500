//! Charts (plotters), each rendered as SVG and PNG, drawn from [`ReportData`] only.
//!
//! One colour per variant name across every chart and report (`palette`); black and grey are
//! kept for reference marks (capacity, caps, fault windows).

pub(crate) mod axes;
pub(crate) mod bars;
pub(crate) mod budget;
pub(crate) mod cap;
pub(crate) mod capacity;
pub(crate) mod delays;
pub(crate) mod empty;
pub(crate) mod key;
pub(crate) mod latency;
pub(crate) mod limit;
pub(crate) mod load;
pub(crate) mod measured;
pub(crate) mod narrow;
pub(crate) mod palette;
pub(crate) mod replicas;
pub(crate) mod sweep;

use super::files::{commit_temp, write_atomic, OutputError};
use crate::report::data::ReportData;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

pub use palette::{variant_colour, variant_colours, Lines};

/// Which series a chart of small multiples or grouped bars shows: one group per hop or per
/// tenant (the load grid and the scoped metric bars share it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// One group per hop.
    Hops,
    /// One group per tenant.
    Tenants,
}

/// Grey of fault windows.
pub const FAULT_FILL: RGBColor = RGBColor(120, 120, 120);
/// Font family of every chart.
pub const FONT: &str = "sans-serif";

/// What drawing a chart can fail with.
pub type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// The charts a run produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Chart {
    /// Small multiples per variant and hop: first attempts and retries stacked, capacity, faults.
    Load,
    /// Total attempts/s of every variant on one log axis per hop.
    LoadCompare,
    /// Bars with 95% CI whiskers of the headline metrics.
    Metrics,
    /// Latency CDF per variant with p50/p99 marked.
    Latency,
    /// Histograms of the retry delays per variant.
    Delays,
    /// Delay percentiles against the retry number.
    DelaysByRetry,
    /// Per-tenant load panels (runs with several tenants).
    TenantLoad,
    /// Per-tenant metric bars (runs with several tenants).
    TenantMetrics,
    /// Per-hop metric bars (chains).
    HopMetrics,
    /// Goodput and backlog over time per hop, every variant on one axis.
    GoodputBacklog,
    /// Attempts/s per replica of the balanced hops, one panel per variant.
    Replicas,
    /// Workers over time of autoscaled hops.
    Capacity,
    /// Cache hit ratio and backend load over time (runs with a cache hop).
    Cache,
    /// The admission control's concurrency limit over time (hops with a limit).
    AdmissionLimit,
    /// Retry-budget tokens and denials over time per budgeted tenant, every variant on one axis.
    Budget,
}

impl Chart {
    /// File stem (`<stem>.svg`, `<stem>.png`).
    pub fn stem(self) -> &'static str {
        match self {
            Chart::Load => "load",
            Chart::LoadCompare => "load_compare",
            Chart::Metrics => "metrics",
            Chart::Latency => "latency_cdf",
            Chart::Delays => "retry_delays",
            Chart::DelaysByRetry => "retry_delays_by_retry",
            Chart::TenantLoad => "tenant_load",
            Chart::TenantMetrics => "tenant_metrics",
            Chart::HopMetrics => "hop_metrics",
            Chart::GoodputBacklog => "goodput_backlog",
            Chart::Replicas => "replicas",
            Chart::Capacity => "capacity",
            Chart::Cache => "cache",
            Chart::AdmissionLimit => "admission_limit",
            Chart::Budget => "budget",
        }
    }

    /// A one-line caption for the report.
    pub fn caption(self) -> &'static str {
        match self {
            Chart::Load => "Load at each hop over time: first attempts (solid) and retries (light) stacked, against capacity and fault windows.",
            Chart::LoadCompare => "All variants on one logarithmic axis: how far above capacity each drives the hop, and for how long.",
            Chart::Metrics => "Headline metrics per variant; whiskers are 95% confidence intervals over the replications.",
            Chart::Latency => "Latency of succeeded requests (event timestamp to success), cumulative; markers at p50 and p99.",
            Chart::Delays => "Distribution of the delays clients waited before retrying; the dashed line is the policy's cap.",
            Chart::DelaysByRetry => "Median delay before retry k with the 10th–90th percentile band.",
            Chart::TenantLoad => "Load per tenant over time: first attempts and retries stacked.",
            Chart::TenantMetrics => "Metrics per tenant and variant, with 95% confidence intervals.",
            Chart::HopMetrics => "Metrics per hop of the chain: how retries multiply from layer to layer.",
            Chart::GoodputBacklog => "Goodput (successes/s) and backlog (attempts inside the hop) over time: how fast each variant recovers after the fault.",
            Chart::Replicas => "Attempts/s the load balancer sent to each replica, and when each was out of rotation (ejected or unhealthy).",
            Chart::Capacity => "Workers serving over time at each autoscaled hop: when added capacity arrives against the fault and the load.",
            Chart::Cache => "Cache hit ratio over time and the load its misses put on the backend: a flush or expiry wave shows as a dip in the ratio and a wall of backend attempts.",
            Chart::AdmissionLimit => "The admission limit in force over time (concurrency, AIMD or gradient), per hop that has one: how far an adaptive limit falls during the fault and how fast it comes back.",
            Chart::Budget => "Retry budgets over time per tenant: tokens left at the budget's retry decisions and the retries it denied, per variant.",
        }
    }

    /// The charts that apply to `data`.
    pub fn for_run(data: &ReportData) -> Vec<Chart> {
        let first = &data.variants[0];
        let mut charts = vec![Chart::Load, Chart::LoadCompare, Chart::GoodputBacklog, Chart::Metrics, Chart::Latency];
        if data.variants.iter().any(|v| !v.delays.is_empty()) {
            charts.extend([Chart::Delays, Chart::DelaysByRetry]);
        }
        if first.setup.tenants.len() > 1 {
            charts.extend([Chart::TenantLoad, Chart::TenantMetrics]);
        }
        if first.setup.hops.len() > 1 {
            charts.push(Chart::HopMetrics);
        }
        if data.variants.iter().any(|v| !v.replica_series.is_empty()) {
            charts.push(Chart::Replicas);
        }
        if !capacity::scaled_hops(data).is_empty() {
            charts.push(Chart::Capacity);
        }
        if !load::cache_hops(data).is_empty() {
            charts.push(Chart::Cache);
        }
        if !limit::limited_hops(data).is_empty() {
            charts.push(Chart::AdmissionLimit);
        }
        if !budget::budget_tenants(data).is_empty() {
            charts.push(Chart::Budget);
        }
        charts
    }

    fn size(self, data: &ReportData) -> (u32, u32) {
        let variants = data.variants.len() as u32;
        let first = &data.variants[0];
        let hops = first.setup.hops.len() as u32;
        let tenants = first.setup.tenants.len() as u32;
        let wide = |columns: u32| (560 * columns).clamp(1100, 1800);
        match self {
            Chart::Load => (wide(hops), 70 + 240 * variants),
            Chart::TenantLoad => (wide(tenants.min(load::TENANT_COLUMNS_MAX as u32)), 70 + 240 * variants),
            Chart::LoadCompare => (1100 + load::after_list_px(data), 70 + 400 * hops),
            Chart::GoodputBacklog => (1400, 90 + 330 * hops),
            Chart::Replicas => (1100, 90 + 240 * variants),
            Chart::Capacity => (1200, 120 + 380 * capacity::scaled_hops(data).len() as u32),
            Chart::AdmissionLimit => (1100, 90 + 360 * limit::limited_hops(data).len() as u32),
            Chart::Budget => (1400, 90 + 330 * budget::budget_tenants(data).len().max(1) as u32),
            Chart::Metrics => {
                let names: Vec<&str> = data.variants.iter().map(|v| v.name.as_str()).collect();
                (bars::three_panels_px(&names), 140 + 2 * (90 + 34 * variants))
            }
            Chart::TenantMetrics => (1200, 140 + 2 * (90 + 18 * tenants * (variants + 1))),
            Chart::HopMetrics => (1200, 140 + 2 * (90 + 18 * hops * (variants + 1))),
            Chart::Latency if data.variants.iter().all(|v| v.latency_us.is_empty()) => {
                (1100, 40 + 2 * empty::LINE_PANEL_PX)
            }
            Chart::Latency => (1100, 620),
            Chart::Delays => {
                let empty = data.variants.iter().filter(|v| delays::nothing_to_draw(v)).count() as u32;
                (1100, 70 + 200 * (variants - empty) + empty::LINE_PANEL_PX * empty)
            }
            Chart::DelaysByRetry => (1100, 620),
            Chart::Cache => (1400, 90 + 330 * load::cache_hops(data).len() as u32),
        }
    }

    /// Height of the narrow drawing ([`narrow`]): the wide one's, but with the panels that sit
    /// side by side stacked.
    fn narrow_height(self, data: &ReportData) -> u32 {
        let variants = data.variants.len() as u32;
        let first = &data.variants[0];
        let hops = first.setup.hops.len() as u32;
        let tenants = first.setup.tenants.len() as u32;
        let (_, wide) = self.size(data);
        // A legend of the variants takes about half a row more per variant at 760 px.
        let key_rows = 10 * variants;
        match self {
            Chart::Load => 70 + 240 * variants * hops,
            Chart::TenantLoad => 70 + 240 * variants * tenants.min(load::TENANT_COLUMNS_MAX as u32),
            Chart::LoadCompare if load::trigger_end(data).is_some() => 90 + 760 * hops + key_rows,
            Chart::Metrics => bars::metrics_narrow_px(data),
            Chart::TenantMetrics => 140 + 4 * (90 + 18 * tenants * (variants + 1)),
            Chart::HopMetrics => 140 + 4 * (90 + 18 * hops * (variants + 1)),
            Chart::LoadCompare
            | Chart::GoodputBacklog
            | Chart::Latency
            | Chart::DelaysByRetry
            | Chart::Budget
            | Chart::Cache
            | Chart::AdmissionLimit
            | Chart::Capacity => wide + key_rows,
            Chart::Replicas | Chart::Delays => wide,
        }
    }

    fn draw<DB: DrawingBackend>(self, root: &DrawingArea<DB, Shift>, data: &ReportData) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        match self {
            Chart::Load => load::draw_grid(root, data, Group::Hops)?,
            Chart::TenantLoad => load::draw_grid(root, data, Group::Tenants)?,
            Chart::LoadCompare => load::draw_compare(root, data)?,
            Chart::GoodputBacklog => load::draw_goodput_backlog(root, data)?,
            Chart::Replicas => replicas::draw(root, data)?,
            Chart::Capacity => capacity::draw_capacity(root, data)?,
            Chart::AdmissionLimit => limit::draw_limit(root, data)?,
            Chart::Budget => budget::draw_budget(root, data)?,
            Chart::Metrics => bars::draw_metrics(root, data)?,
            Chart::TenantMetrics => bars::draw_scoped(root, data, Group::Tenants)?,
            Chart::HopMetrics => bars::draw_scoped(root, data, Group::Hops)?,
            Chart::Latency => latency::draw_cdf(root, data)?,
            Chart::Delays => delays::draw_histograms(root, data)?,
            Chart::DelaysByRetry => delays::draw_by_retry(root, data)?,
            Chart::Cache => load::draw_cache(root, data)?,
        }
        Ok(())
    }
}

/// Something drawable as one chart file pair.
pub trait Figure {
    /// File stem (`<stem>.svg`, `<stem>.png`) and HTML anchor.
    fn stem(&self) -> String;
    /// One-line caption for the report.
    fn caption(&self) -> String;
    /// Canvas size in pixels.
    fn size(&self) -> (u32, u32);
    /// Canvas size of the narrow drawing for the HTML report ([`narrow`]), when the chart has
    /// one: then `draw` is called a second time on a canvas [`narrow::NARROW_PX`] wide.
    fn narrow_size(&self) -> Option<(u32, u32)> {
        None
    }
    /// Draws onto a white canvas.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static;
}

/// A chart of a run with its data.
pub struct RunFigure<'a> {
    /// Which chart.
    pub chart: Chart,
    /// The run.
    pub data: &'a ReportData,
}

impl Figure for RunFigure<'_> {
    fn stem(&self) -> String {
        self.chart.stem().to_string()
    }

    fn caption(&self) -> String {
        self.chart.caption().to_string()
    }

    fn size(&self) -> (u32, u32) {
        self.chart.size(self.data)
    }

    fn narrow_size(&self) -> Option<(u32, u32)> {
        Some((narrow::NARROW_PX, self.chart.narrow_height(self.data)))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        self.chart.draw(root, self.data)
    }
}

/// A chart rendered for the HTML report.
#[derive(Clone, Debug)]
pub struct RenderedChart {
    /// File stem and anchor.
    pub stem: String,
    /// Caption.
    pub caption: String,
    /// The SVG text.
    pub svg: String,
    /// The narrow drawing's SVG text, for a narrow screen, when the chart has one.
    pub narrow_svg: Option<String>,
}

fn draw_on<DB: DrawingBackend, F: Figure>(root: DrawingArea<DB, Shift>, figure: &F) -> DrawResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    figure.draw(&root)?;
    root.present()?;
    Ok(())
}

/// `figure` drawn as SVG text on a canvas of `size`.
fn svg_text<F: Figure>(figure: &F, size: (u32, u32)) -> Result<String, Box<dyn std::error::Error>> {
    let mut svg = String::new();
    draw_on(SVGBackend::with_string(&mut svg, size).into_drawing_area(), figure)?;
    Ok(svg)
}

/// Renders `figure` to `dir/<stem>.svg` and `dir/<stem>.png` (each written atomically), adding
/// each to `files` once it is complete; returns the SVG text, for the HTML report.
pub fn render<F: Figure>(dir: &Path, figure: &F, files: &mut Vec<PathBuf>) -> Result<RenderedChart, OutputError> {
    let size = figure.size();
    let stem = figure.stem();
    let svg_path = dir.join(format!("{stem}.svg"));
    let failed = |path: &Path, e: Box<dyn std::error::Error>| OutputError {
        path: path.to_path_buf(),
        message: format!("drawing the chart failed: {e}"),
    };
    // Both SVG drawings (the narrow one for the HTML report only) before any file is written.
    let svg = svg_text(figure, size).map_err(|e| failed(&svg_path, e))?;
    let narrow_svg =
        figure.narrow_size().map(|size| svg_text(figure, size)).transpose().map_err(|e| failed(&svg_path, e))?;
    write_atomic(&svg_path, svg.as_bytes())?;
    files.push(svg_path);
    let png_path = dir.join(format!("{stem}.png"));
    // The bitmap backend picks the encoder from the extension, so the temp file ends in `.png`
    // (and carries the process id, like every temporary, so concurrent writers never collide).
    let tmp = dir.join(format!(".{stem}.tmp-{}.png", std::process::id()));
    {
        let root = BitMapBackend::new(&tmp, size).into_drawing_area();
        if let Err(e) = draw_on(root, figure) {
            let _ = std::fs::remove_file(&tmp);
            return Err(failed(&png_path, e));
        }
    }
    commit_temp(&tmp, &png_path)?;
    files.push(png_path);
    Ok(RenderedChart { stem, caption: figure.caption(), svg, narrow_svg })
}

/// What [`write_charts`] produced: the files, and each chart's SVG text for the HTML report.
#[derive(Debug, Default)]
pub struct Rendered {
    /// Files written.
    pub files: Vec<PathBuf>,
    /// Each chart, in display order.
    pub charts: Vec<RenderedChart>,
}

impl Rendered {
    /// Renders `figure` and records its files and SVG.
    pub fn add<F: Figure>(&mut self, dir: &Path, figure: &F) -> Result<(), OutputError> {
        let chart = render(dir, figure, &mut self.files)?;
        self.charts.push(chart);
        Ok(())
    }
}

/// Writes every chart that applies to `data` into `out` (which keeps the files completed before
/// a failure). Past [`cap::PANELS_MAX`] variants or tenants, each chart draws that many, chosen by
/// the rule of [`cap`], and says so on the chart and in its caption.
pub fn write_charts(dir: &Path, data: &ReportData, out: &mut Rendered) -> Result<(), OutputError> {
    let (drawn, note) = cap::capped(data);
    let data = drawn.as_ref();
    for chart in Chart::for_run(data) {
        match &note {
            Some(note) => out.add(dir, &cap::Noted { inner: RunFigure { chart, data }, note })?,
            None => out.add(dir, &RunFigure { chart, data })?,
        }
    }
    Ok(())
}

/// Means of consecutive groups of rows so a chart never draws more than ~`limit` points.
pub fn downsample(points: &[(f64, f64)], limit: usize) -> Vec<(f64, f64)> {
    if points.len() <= limit {
        return points.to_vec();
    }
    let group = points.len().div_ceil(limit);
    points.chunks(group).map(|c| (c[0].0, c.iter().map(|p| p.1).sum::<f64>() / c.len() as f64)).collect()
}
