//! Charts (plotters), each rendered as SVG and PNG with one colour per variant throughout.

use super::files::{commit_temp, temp_path, OutputError};
use crate::runner::Study;
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// Okabe–Ito: a palette that stays distinguishable with the common colour-vision deficiencies.
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(240, 228, 66),
    RGBColor(0, 0, 0),
];

/// The colour of variant `i` in every chart.
pub fn variant_colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// Renders `draw` to `dir/stem.svg` and `dir/stem.png` (each written atomically).
pub fn render_both(
    dir: &Path,
    stem: &str,
    size: (u32, u32),
    draw: impl Fn(DrawingArea<SVGBackend, Shift>) -> DrawResult + Copy,
    draw_png: impl Fn(DrawingArea<BitMapBackend, Shift>) -> DrawResult,
) -> Result<Vec<PathBuf>, OutputError> {
    let svg_path = dir.join(format!("{stem}.svg"));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        draw(root).map_err(|e| OutputError { path: svg_path.clone(), message: e.to_string() })?;
    }
    super::files::write_atomic(&svg_path, svg.as_bytes())?;
    let png_path = dir.join(format!("{stem}.png"));
    let tmp = temp_path(&png_path).with_extension("png");
    {
        let root = BitMapBackend::new(&tmp, size).into_drawing_area();
        draw_png(root).map_err(|e| OutputError { path: png_path.clone(), message: e.to_string() })?;
    }
    commit_temp(&tmp, &png_path)?;
    Ok(vec![svg_path, png_path])
}

/// Load over time: per hop, attempts/s of every variant (solid) and its retries/s (thin), the
/// hop's capacity (dashed black) and the fault windows (shaded).
pub fn draw_load<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, study: &Study) -> DrawResult
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let title = format!("{}: load over time per hop ({} replications, mean)", study.scenario, study.replications);
    let root = root.titled(&title, ("sans-serif", 22))?;
    let first = &study.variants[0];
    let panels = root.split_evenly((first.hop_series.len(), 1));
    let buckets = super::summary::active_buckets(study).max(2);
    let bucket_s = study.bucket as f64 / 1e9;
    let t_max = buckets as f64 * bucket_s;
    for (h, panel) in panels.iter().enumerate() {
        let hop = &first.spec.hops[h];
        let capacity = f64::from(hop.workers) / (hop.service.mean_ns(hop.workers) / 1e9);
        let peak = study
            .variants
            .iter()
            .flat_map(|v| v.hop_series[h].rows.iter().take(buckets).map(|r| r[0] / bucket_s))
            .fold(0.0f64, f64::max);
        let show_capacity = capacity.is_finite() && capacity <= peak * 3.0;
        let y_max = (if show_capacity { peak.max(capacity) } else { peak } * 1.1).max(1.0);
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("hop `{}`", hop.name), ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..t_max, 0.0..y_max)?;
        chart
            .configure_mesh()
            .x_desc("time since start (s)")
            .y_desc("attempts per second")
            .light_line_style(WHITE.mix(0.0))
            .draw()?;
        for f in first.spec.faults.iter().filter(|f| f.hop == h) {
            let (from, to) = (f.from as f64 / 1e9, (f.to as f64 / 1e9).min(t_max));
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(from, 0.0), (to, y_max)],
                    RGBColor(0, 0, 0).mix(0.08).filled(),
                )))?
                .label(format!("fault: {}", f.kind.name()))
                .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], RGBColor(0, 0, 0).mix(0.15).filled()));
        }
        if show_capacity {
            let dashed = DashedLineSeries::new(vec![(0.0, capacity), (t_max, capacity)], 8, 6, BLACK.stroke_width(1));
            chart
                .draw_series(dashed)?
                .label(format!("capacity {capacity:.0}/s"))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK));
        }
        for (i, v) in study.variants.iter().enumerate() {
            let colour = variant_colour(i);
            let rows = &v.hop_series[h].rows;
            let line = |col: usize| {
                rows.iter().take(buckets).enumerate().map(move |(b, r)| (b as f64 * bucket_s, r[col] / bucket_s))
            };
            chart
                .draw_series(LineSeries::new(line(0), colour.stroke_width(2)))?
                .label(format!("{}: attempts/s", v.name))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2)));
            chart
                .draw_series(LineSeries::new(line(2), colour.mix(0.55).stroke_width(1)))?
                .label(format!("{}: retries/s", v.name))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour.mix(0.55).stroke_width(1)));
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .label_font(("sans-serif", 13))
            .draw()?;
    }
    root.present()?;
    Ok(())
}

/// Writes every chart of a study to `dir`; returns the files written.
pub fn write_charts(dir: &Path, study: &Study) -> Result<Vec<PathBuf>, OutputError> {
    let hops = study.variants[0].hop_series.len() as u32;
    let size = (1100, 120 + 360 * hops);
    render_both(dir, "load", size, |root| draw_load(root, study), |root| draw_load(root, study))
}
