//! The admission limit over time: the `admission_limit` series of each hop that has a
//! concurrency, AIMD or gradient limit, every variant with such a limit on one axis.

use super::key::{with_key, Swatch};
use super::load::{draw_time_mesh, fault_key, shade_faults, spike_key, time_axis, POINTS_MAX};
use super::narrow;
use super::{downsample, DrawResult, Lines, FONT};
use crate::report::charts::palette::draw_variant_line;
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

/// The key's words for the variants without a limit: `no limit: a, b, …` said once, the names
/// in pieces of at most 60 characters so that the legend can wrap between them.
fn no_limit_words(names: &[&str]) -> Vec<String> {
    let mut pieces: Vec<String> = Vec::new();
    let mut current = String::from("no limit:");
    for (i, name) in names.iter().enumerate() {
        let item = if i + 1 < names.len() { format!("{name},") } else { (*name).to_string() };
        if current.chars().count() + 1 + item.chars().count() > 60 && current != "no limit:" {
            pieces.push(std::mem::take(&mut current));
            current = item;
        } else {
            current.push(' ');
            current.push_str(&item);
        }
    }
    pieces.push(current);
    pieces
}

/// One panel per limited hop: the mean limit over time per variant (variants without a limit at
/// that hop draw nothing), faults shaded.
pub fn draw_limit<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &ReportData) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let title = format!(
        "{}: admission limit over time (mean of {})",
        data.scenario,
        crate::report::format::count_of(u64::from(data.replications), "replication")
    );
    let root = narrow::titled(root, &title, 24)?;
    let hops = limited_hops(data);
    let col = limit_column();
    let limited =
        |v: &crate::report::data::VariantData| hops.iter().any(|&h| v.hop_series[h].rows.iter().any(|r| r[col] > 0.0));
    // Only the variants that have a limit are drawn; one entry of the key names the others.
    let (with, without): (Vec<usize>, Vec<usize>) = (0..data.variants.len()).partition(|&i| limited(&data.variants[i]));
    let mut key = Lines::of(data).key_of(&with, |i| data.variants[i].label());
    if !without.is_empty() {
        let names: Vec<&str> = without.iter().map(|&i| data.variants[i].name.as_str()).collect();
        key.extend(no_limit_words(&names).into_iter().map(|words| (Swatch::Fill(WHITE.mix(0.0)), words)));
    }
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
            draw_variant_line!(chart, styles, i, lines[i].iter().copied(), 2)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::no_limit_words;

    #[test]
    fn the_variants_without_a_limit_are_named_once() {
        assert_eq!(no_limit_words(&["fifo", "lifo"]), vec!["no limit: fifo, lifo"]);
        let many = ["a-rather-long-variant-name"; 5];
        let pieces = no_limit_words(&many);
        assert_eq!(pieces.len(), 3, "{pieces:?}");
        assert_eq!(pieces.iter().filter(|p| p.contains("no limit")).count(), 1);
        assert!(pieces.iter().all(|p| p.chars().count() <= 60), "{pieces:?}");
        assert_eq!(pieces.join(" "), format!("no limit: {}", many.join(", ")));
    }
}
