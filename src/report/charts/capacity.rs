//! Capacity over time (autoscaling): the workers of each autoscaled hop, every variant on one
//! axis, fault windows and load spikes shaded.

use super::load::{draw_time_mesh, fault_key, shade_faults, spike_key, time_axis, variant_lines_key, POINTS_MAX};
use super::narrow;
use super::{downsample, DrawResult, Lines, FONT};
use crate::report::charts::palette::draw_variant_line;
use crate::report::data::ReportData;
use crate::runner::WORKERS_COLUMN;
use plotters::coord::Shift;
use plotters::prelude::*;

/// The hops whose workers change over time or differ between variants (autoscaled somewhere).
pub fn scaled_hops(data: &ReportData) -> Vec<usize> {
    let first = &data.variants[0];
    (0..first.hop_series.len())
        .filter(|&h| {
            let level = first.hop_series[h].rows.first().map_or(0.0, |r| r[WORKERS_COLUMN]);
            data.variants
                .iter()
                .any(|v| v.hop_series.get(h).is_some_and(|s| s.rows.iter().any(|r| r[WORKERS_COLUMN] != level)))
        })
        .collect()
}

/// One panel per autoscaled hop: workers serving at each bucket's end (mean over replications).
pub fn draw_capacity<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &ReportData) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let title = format!(
        "{}: workers serving over time (mean of {})",
        data.scenario,
        crate::report::format::count_of(u64::from(data.replications), "replication")
    );
    let root = narrow::titled(root, &title, 24)?;
    let mut key = variant_lines_key(data);
    key.extend(fault_key(data, None));
    key.extend(spike_key(data));
    let root = super::key::with_key(&root, &key)?;
    let hops = scaled_hops(data);
    let first = &data.variants[0];
    let (t_max, unit) = time_axis(data);
    for (panel, &h) in root.split_evenly((hops.len().max(1), 1)).iter().zip(&hops) {
        let lines: Vec<Vec<(f64, f64)>> = data
            .variants
            .iter()
            .map(|v| {
                let pts: Vec<(f64, f64)> = v.hop_series[h]
                    .rows
                    .iter()
                    .enumerate()
                    .map(|(b, r)| ((b + 1) as f64 * data.bucket_s / unit.secs, r[WORKERS_COLUMN]))
                    .collect();
                downsample(&pts, POINTS_MAX)
            })
            .collect();
        let y_max = lines.iter().flatten().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.15;
        let name = &first.hop_series[h].name;
        let mut chart = ChartBuilder::on(panel)
            .caption(
                format!("hop {name}: workers (autoscaled capacity; a capacity fault is not subtracted)"),
                (FONT, 17),
            )
            .margin(10)
            .margin_right(20)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..t_max, 0.0..y_max)?;
        draw_time_mesh(&mut chart, (unit.desc, "workers"), false)?;
        shade_faults(&mut chart, first, Some(name), (t_max, 0.0, y_max), unit)?;
        // Earlier variants are drawn wider, so a later variant with the same capacity shows on
        // top of it instead of hiding it.
        let n = lines.len() as u32;
        let styles = Lines::of(data);
        for i in styles.order() {
            let width = 2 + 2 * (n - 1 - i as u32).min(4);
            draw_variant_line!(chart, styles, i, lines[i].iter().copied(), width)?;
        }
    }
    Ok(())
}
