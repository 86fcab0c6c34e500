//! The measured load over the simulated one (`compare --emulate`): per variant, the attempts per
//! second at the entry hop, the simulated range over the replications shaded, the simulated mean
//! dashed and the emulated runs' measurement (their mean) as a line in the variant's colour.

use super::{palette, DrawResult, Figure, FONT};
use crate::engine::time::ns_to_secs;
use crate::report::format::{fmt_num, fmt_tick};
use crate::runner::{Study, ATTEMPTS_COLUMN};
use plotters::coord::Shift;
use plotters::prelude::*;

/// The chart of `simulated` (its replications) and `measured` (one emulated run per variant,
/// the same variants in the same order).
pub struct MeasuredLoad<'a> {
    /// The simulation.
    pub simulated: &'a Study,
    /// The emulated runs.
    pub measured: &'a Study,
}

/// What the measured line is: one run, or the mean of several (`--emulate-runs`).
fn measured_words(runs: u32) -> String {
    if runs > 1 {
        format!("mean of {runs} runs")
    } else {
        "one run".to_string()
    }
}

/// The chart's caption (the report reads the chart back from its file, without the study).
pub const CAPTION: &str = "Attempts per second at the entry hop: the simulated range over the replications shaded, its mean dashed, the load measured on real sockets at 127.0.0.1 as a line (the title says how many runs).";

/// Height of one variant's panel.
const PANEL_PX: u32 = 260;

impl Figure for MeasuredLoad<'_> {
    fn stem(&self) -> String {
        "load_measured".into()
    }

    fn caption(&self) -> String {
        CAPTION.into()
    }

    fn size(&self) -> (u32, u32) {
        (1100, 80 + PANEL_PX * self.simulated.variants.len().max(1) as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let sim = self.simulated;
        let hop = sim.variants.first().and_then(|v| v.hop_series.first()).map_or("", |s| s.name.as_str());
        let (title, body) = root.split_vertically(80);
        title.draw(&Text::new(
            format!("{}: attempts/s at {hop}, simulated vs measured on 127.0.0.1", sim.scenario),
            (20, 8),
            (FONT, 22).into_font().color(&BLACK),
        ))?;
        let grey = RGBColor(110, 110, 110);
        title.draw(&Rectangle::new([(20, 46), (48, 58)], grey.mix(0.3).filled()))?;
        let key = format!(
            "simulated range over {} replications        - - simulated mean        measured ({}, colour)",
            sim.replications,
            measured_words(self.measured.replications)
        );
        title.draw(&Text::new(key, (56, 44), (FONT, 15).into_font().color(&BLACK)))?;
        let names: Vec<&str> = sim.variants.iter().map(|v| v.name.as_str()).collect();
        let colours = palette::colours_of(&names);
        let bucket_s = ns_to_secs(sim.bucket);
        let panels = body.split_evenly((sim.variants.len().max(1), 1));
        for (k, (v, panel)) in sim.variants.iter().zip(&panels).enumerate() {
            let Some(m) = self.measured.variants.get(k) else { continue };
            let range: Vec<[f64; 2]> = v.attempts_range.first().cloned().unwrap_or_default();
            let mean: Vec<f64> = v
                .hop_series
                .first()
                .map_or(Vec::new(), |s| s.rows.iter().map(|r| r[ATTEMPTS_COLUMN] / bucket_s).collect());
            let got: Vec<f64> = m
                .hop_series
                .first()
                .map_or(Vec::new(), |s| s.rows.iter().map(|r| r[ATTEMPTS_COLUMN] / bucket_s).collect());
            // Up to the last bucket where anything happened, in either.
            let active = |xs: &[f64]| xs.iter().rposition(|&x| x > 0.0).map_or(0, |i| i + 1);
            let hi_of = range.iter().map(|r| r[1] / bucket_s).collect::<Vec<_>>();
            let n = active(&hi_of).max(active(&got)).max(1);
            let t = |b: usize| b as f64 * bucket_s;
            let y_max = hi_of.iter().chain(&got).take(n.max(hi_of.len())).fold(1.0f64, |a, &b| a.max(b)) * 1.08;
            let mut chart = ChartBuilder::on(panel)
                .caption(v.name.as_str(), (FONT, 17).into_font().color(&colours[k]))
                .margin(10)
                .margin_right(30)
                .x_label_area_size(40)
                .y_label_area_size(80)
                .build_cartesian_2d(0.0..t(n), 0.0..y_max)?;
            chart
                .configure_mesh()
                .x_desc("time since start (s)")
                .y_desc("attempts/s")
                .x_label_formatter(&|x| fmt_tick(*x))
                .y_label_formatter(&|y| fmt_num(*y))
                .label_style((FONT, 14))
                .axis_desc_style((FONT, 15))
                .draw()?;
            let mut band: Vec<(f64, f64)> =
                range.iter().take(n).enumerate().map(|(b, r)| (t(b), r[1] / bucket_s)).collect();
            band.extend(range.iter().take(n).enumerate().rev().map(|(b, r)| (t(b), r[0] / bucket_s)));
            chart.draw_series(std::iter::once(Polygon::new(band, grey.mix(0.3).filled())))?;
            chart.draw_series(DashedLineSeries::new(
                mean.iter().take(n).enumerate().map(|(b, &y)| (t(b), y)),
                6,
                4,
                grey.stroke_width(2),
            ))?;
            chart.draw_series(LineSeries::new(
                got.iter().take(n).enumerate().map(|(b, &y)| (t(b), y)),
                colours[k].stroke_width(2),
            ))?;
        }
        Ok(())
    }
}
