//! Per-replica load: one panel per variant, one line per replica of the balanced hops
//! (attempts/s the balancer sent it), with the buckets in which it was out of rotation marked
//! under its line and the fault windows shaded. Drawn from `replicas.csv`.

use super::key::{with_key, KeyItem, Swatch};
use super::load::{draw_time_mesh, fault_key, shade_faults, time_axis};
use super::narrow;
use super::{downsample, palette, DrawResult, FONT};
use crate::report::data::ReportData;
use crate::runner::{column_index, REPLICA_COLUMNS};
use plotters::coord::Shift;
use plotters::prelude::*;

/// Replicas drawn per panel (beyond 8 lines one panel is unreadable); more are summarised.
const LINES_MAX: usize = 8;
/// Column of `REPLICA_COLUMNS`: attempts, out_of_rotation.
const ATTEMPTS: usize = column_index(&REPLICA_COLUMNS, "attempts");
const OUT: usize = column_index(&REPLICA_COLUMNS, "out_of_rotation");

pub fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &ReportData) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let title = format!(
        "{}: attempts/s per replica (mean of {})",
        data.scenario,
        crate::report::format::count_of(u64::from(data.replications), "replication")
    );
    let root = narrow::titled(root, &title, 24)?;
    let first = &data.variants[0];
    let names: Vec<&str> = first.replica_series.iter().take(LINES_MAX).map(|s| s.name.as_str()).collect();
    let mut key: Vec<KeyItem> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (Swatch::Line(palette::nth_colour(i).to_rgba()), n.to_string()))
        .collect();
    if first.replica_series.len() > LINES_MAX {
        key.push((
            Swatch::Line(BLACK.mix(0.0)),
            format!("(first {LINES_MAX} of {} replicas)", first.replica_series.len()),
        ));
    }
    key.push((Swatch::Fill(BLACK.mix(0.5)), "bar under the axis: out of rotation (share of replications)".to_string()));
    key.extend(fault_key(data, None));
    let root = with_key(&root, &key)?;
    let panels = root.split_evenly((data.variants.len(), 1));
    let (t_max, unit) = time_axis(data);
    let bucket = data.bucket_s;
    for (v, panel) in data.variants.iter().zip(panels.iter()) {
        let lines: Vec<Vec<(f64, f64)>> = v
            .replica_series
            .iter()
            .take(LINES_MAX)
            .map(|s| {
                let pts: Vec<(f64, f64)> = s
                    .rows
                    .iter()
                    .enumerate()
                    .map(|(b, r)| (b as f64 * bucket / unit.secs, r[ATTEMPTS] / bucket))
                    .collect();
                downsample(&pts, 1500)
            })
            .collect();
        let y_max = lines.iter().flatten().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.1;
        // Out-of-rotation bars sit below 0, one thin strip per replica.
        let strip = y_max / 40.0;
        let y_low = -strip * (lines.len() as f64 + 0.5);
        let mut chart = ChartBuilder::on(panel)
            .caption(v.name.as_str(), (FONT, 17))
            .margin(10)
            .margin_right(20)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..t_max, y_low..y_max)?;
        draw_time_mesh(&mut chart, (unit.desc, "attempts/s"), true)?;
        shade_faults(&mut chart, v, None, (t_max, 0.0, y_max), unit)?;
        for (i, s) in v.replica_series.iter().take(LINES_MAX).enumerate() {
            let colour = palette::nth_colour(i);
            chart.draw_series(LineSeries::new(lines[i].iter().copied(), colour.stroke_width(2)))?;
            let (top, bottom) = (-strip * (i as f64 + 0.2), -strip * (i as f64 + 1.0));
            let bars = s.rows.iter().enumerate().filter(|(_, r)| r[OUT] > 0.0).map(|(b, r)| {
                let (from, to) = (b as f64 * bucket / unit.secs, ((b + 1) as f64 * bucket / unit.secs).min(t_max));
                Rectangle::new([(from, top), (to, bottom)], colour.mix(0.25 + 0.75 * r[OUT]).filled())
            });
            chart.draw_series(bars)?;
        }
    }
    Ok(())
}
