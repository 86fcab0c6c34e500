//! The cache chart (`cache.svg`/`.png`, drawn when a scenario has a `kind = "cache"` hop): per
//! cache hop, its hit ratio over time and the load its misses put on the backend (the next hop's
//! attempts/s), every variant on the same axes, fault windows (a `cache_flush`, a slow backend)
//! shaded.

use super::{
    downsample, draw_time_mesh, fault_key, rate, shade_faults, spike_key, time_axis, variant_lines_key, with_key,
    DrawResult, ATTEMPTS, FONT, POINTS_MAX,
};
use crate::report::charts::narrow;
use crate::report::charts::palette::draw_variant_line;
use crate::report::data::ReportData;
use crate::runner::SERIES_COLUMNS;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Indices of the cache hops of the run.
pub fn cache_hops(data: &ReportData) -> Vec<usize> {
    let hops = &data.variants[0].setup.hops;
    (0..hops.len()).filter(|&h| hops[h].cache.is_some() && h + 1 < hops.len()).collect()
}

/// Hit ratio (%) and backend attempts/s per cache hop over time.
pub fn draw_cache<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &ReportData) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let title = format!(
        "{}: cache hit ratio and backend load (mean of {})",
        data.scenario,
        crate::report::format::count_of(u64::from(data.replications), "replication")
    );
    let root = narrow::titled(root, &title, 24)?;
    let mut key = variant_lines_key(data);
    key.extend(fault_key(data, None));
    key.extend(spike_key(data));
    let root = with_key(&root, &key)?;
    let caches = cache_hops(data);
    let ratio_col = SERIES_COLUMNS.iter().position(|c| *c == "cache_hit_ratio").expect("a catalogued column");
    let first = &data.variants[0];
    let panels = root.split_evenly((caches.len(), 2));
    let (t_max, unit) = time_axis(data);
    for (p, panel) in panels.iter().enumerate() {
        let (h, backend) = (caches[p / 2], p % 2 == 1);
        let lines: Vec<Vec<(f64, f64)>> = data
            .variants
            .iter()
            .map(|v| {
                if backend {
                    rate(&v.hop_series[h + 1], ATTEMPTS, data.bucket_s, unit)
                } else {
                    let s = &v.hop_series[h];
                    // Buckets without a lookup have no ratio: they are left out, not drawn as 0.
                    let pts: Vec<(f64, f64)> = s
                        .rows
                        .iter()
                        .enumerate()
                        .filter(|(_, r)| r[ratio_col - 1] > 0.0)
                        .map(|(b, r)| (b as f64 * data.bucket_s / unit.secs, 100.0 * r[ratio_col]))
                        .collect();
                    downsample(&pts, POINTS_MAX)
                }
            })
            .collect();
        let (caption, y_desc, y_max) = if backend {
            let y_max = lines.iter().flatten().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.1;
            let backend_name = &first.hop_series[h + 1].name;
            (
                format!("hop {backend_name}: attempts/s (the misses of {})", first.hop_series[h].name),
                "attempts/s",
                y_max,
            )
        } else {
            (format!("hop {}: hit ratio", first.hop_series[h].name), "hits ÷ lookups (%)", 105.0)
        };
        let mut chart = ChartBuilder::on(panel)
            .caption(caption, (FONT, 17))
            .margin(10)
            .margin_right(20)
            .x_label_area_size(44)
            .y_label_area_size(78)
            .build_cartesian_2d(0.0..t_max, 0.0..y_max)?;
        draw_time_mesh(&mut chart, (unit.desc, y_desc), false)?;
        shade_faults(&mut chart, first, None, (t_max, 0.0, y_max), unit)?;
        let styles = crate::report::charts::Lines::of(data);
        for i in styles.order() {
            draw_variant_line!(chart, styles, i, lines[i].iter().copied(), 2)?;
        }
    }
    Ok(())
}
