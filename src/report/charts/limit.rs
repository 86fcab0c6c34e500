//! The admission limit over time: the `admission_limit` series of each hop that has a
//! concurrency, AIMD or gradient limit, every variant with such a limit on one axis.

use super::key::with_key;
use super::load::{draw_time_mesh, fault_key, shade_faults, spike_key, time_axis, POINTS_MAX};
use super::narrow;
use super::{downsample, DrawResult, Lines, FONT};
use crate::report::data::ReportData;
use crate::runner::SERIES_COLUMNS;
use plotters::coord::Shift;
use plotters::prelude::*;

fn limit_column() -> usize {
    SERIES_COLUMNS.iter().position(|c| *c == "admission_limit").expect("a series column")
}

/// Hops (by index) where some variant has a limit (a non-zero `admission_limit`).
pub fn limited_hops(data: &ReportData) -> Vec<usize> {
    let col = limit_column();
    let hops = data.variants.first().map_or(0, |v| v.hop_series.len());
    (0..hops).filter(|&h| data.variants.iter().any(|v| v.hop_series[h].rows.iter().any(|r| r[col] > 0.0))).collect()
}

/// One panel per limited hop: the mean limit over time per variant (variants without a limit at
/// that hop draw nothing), faults shaded.
pub fn draw_limit<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &ReportData) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let title = format!("{}: admission limit over time (mean of {} replications)", data.scenario, data.replications);
    let root = narrow::titled(root, &title, 24)?;
    let hops = limited_hops(data);
    let col = limit_column();
    let limited =
        |v: &crate::report::data::VariantData| hops.iter().any(|&h| v.hop_series[h].rows.iter().any(|r| r[col] > 0.0));
    // Only the variants that have a limit are drawn; the key says which have none.
    let mut key = Lines::of(data).key(|i| {
        let v = &data.variants[i];
        if limited(v) {
            v.label()
        } else {
            format!("{} — no limit", v.name)
        }
    });
    key.extend(fault_key(data, None));
    key.extend(spike_key(data));
    let root = with_key(&root, &key)?;
    let panels = root.split_evenly((hops.len().max(1), 1));
    let (t_max, unit) = time_axis(data);
    let first = &data.variants[0];
    for (&h, panel) in hops.iter().zip(&panels) {
        let lines: Vec<Vec<(f64, f64)>> = data
            .variants
            .iter()
            .map(|v| {
                let rows = &v.hop_series[h].rows;
                if rows.iter().all(|r| r[col] == 0.0) {
                    return Vec::new();
                }
                let pts: Vec<(f64, f64)> =
                    rows.iter().enumerate().map(|(b, r)| (b as f64 * data.bucket_s / unit.secs, r[col])).collect();
                downsample(&pts, POINTS_MAX)
            })
            .collect();
        let y_max = lines.iter().flatten().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.15;
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("hop {}: concurrency limit in force", first.hop_series[h].name), (FONT, 17))
            .margin(10)
            .margin_right(20)
            .x_label_area_size(44)
            .y_label_area_size(78)
            .build_cartesian_2d(0.0..t_max, 0.0..y_max)?;
        draw_time_mesh(&mut chart, (unit.desc, "attempts admitted at once"), false)?;
        shade_faults(&mut chart, first, Some(&first.hop_series[h].name), (t_max, 0.0, y_max), unit)?;
        let styles = crate::report::charts::Lines::of(data);
        for i in styles.order() {
            let line = &lines[i];
            chart.draw_series(LineSeries::new(
                line.iter().copied(),
                styles.colour(i).stroke_width(styles.width(i, 2)),
            ))?;
        }
    }
    Ok(())
}
