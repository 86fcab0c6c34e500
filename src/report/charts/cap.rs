//! Caps on what a chart draws, so 6,000 variants or 20,000 tenants never make a chart gigabytes
//! tall: at most [`PANELS_MAX`] variants and [`PANELS_MAX`] tenants are drawn, chosen by a stated
//! rule, and every chart says in one line of text what was left out (as does its caption).
//!
//! Variants: the baseline (the first) and the best-ranked others by the verdict. Tenants: those
//! with the most requests in the baseline (ties in file order), drawn in file order.

use super::{narrow, DrawResult, Figure};
use crate::metrics::catalogue::Metric;
use crate::report::data::ReportData;
use crate::runner::verdict::{verdict, Candidate};
use plotters::coord::Shift;
use plotters::prelude::*;

/// The most variants, and the most tenants, a run's charts draw (counted by the memory estimate).
pub const PANELS_MAX: usize = crate::runner::memory::CHART_PANELS_MAX;

/// `data` cut to what the charts draw, and the line saying what was left out (None: nothing).
pub fn capped(data: &ReportData) -> (std::borrow::Cow<'_, ReportData>, Option<String>) {
    let variants = data.variants.len();
    let tenants = data.variants.first().map_or(0, |v| v.tenants.len());
    if variants <= PANELS_MAX && tenants <= PANELS_MAX {
        return (std::borrow::Cow::Borrowed(data), None);
    }
    let mut out = data.clone();
    let mut notes = Vec::new();
    if variants > PANELS_MAX {
        let candidates: Vec<Candidate> = data.variants.iter().map(|v| v.candidate()).collect();
        let ranking = verdict(&data.objective, &candidates).ranking;
        let mut keep: Vec<usize> = vec![0];
        for r in &ranking {
            if keep.len() == PANELS_MAX {
                break;
            }
            if let Some(i) = data.variants.iter().position(|v| v.name == r.variant) {
                if !keep.contains(&i) {
                    keep.push(i);
                }
            }
        }
        keep.sort_unstable();
        out.variants = keep.iter().map(|&i| data.variants[i].clone()).collect();
        notes.push(format!(
            "{PANELS_MAX} of {variants} variants drawn (the baseline and the best ranked by the verdict); the other {} are in summary.json and timeseries.csv",
            variants - PANELS_MAX
        ));
    }
    if tenants > PANELS_MAX {
        let base = &data.variants[0];
        let requests = |t: usize| base.tenants[t].1.mean(Metric::Requests).unwrap_or(0.0);
        let mut order: Vec<usize> = (0..tenants).collect();
        order.sort_by(|&a, &b| requests(b).total_cmp(&requests(a)).then(a.cmp(&b)));
        let mut keep: Vec<usize> = order.into_iter().take(PANELS_MAX).collect();
        keep.sort_unstable();
        for v in &mut out.variants {
            v.tenants = keep.iter().map(|&t| v.tenants[t].clone()).collect();
            v.tenant_series = keep.iter().filter_map(|&t| v.tenant_series.get(t).cloned()).collect();
            v.setup.tenants = keep.iter().filter_map(|&t| v.setup.tenants.get(t).cloned()).collect();
        }
        notes.push(format!(
            "{PANELS_MAX} of {tenants} tenants drawn (those with the most requests); the other {} are in summary.json and timeseries.csv",
            tenants - PANELS_MAX
        ));
    }
    (std::borrow::Cow::Owned(out), Some(notes.join("; ")))
}

/// A figure with one line of text on top saying what its chart left out.
pub struct Noted<'a, F> {
    /// The chart.
    pub inner: F,
    /// What was left out.
    pub note: &'a str,
}

/// Size of the note's text.
const NOTE_FONT_PX: u32 = 15;

impl<F> Noted<'_, F> {
    /// The note's lines on a canvas `width` wide.
    fn lines(&self, width: u32) -> Vec<String> {
        narrow::wrap_chars(&format!("Capped: {}", self.note), NOTE_FONT_PX, width.saturating_sub(24))
    }

    /// Height of the note on a canvas `width` wide.
    fn note_px(&self, width: u32) -> u32 {
        10 + NOTE_FONT_PX * 5 / 4 * self.lines(width).len() as u32
    }
}

impl<F: Figure> Figure for Noted<'_, F> {
    fn stem(&self) -> String {
        self.inner.stem()
    }

    fn caption(&self) -> String {
        format!("{} Capped: {}.", self.inner.caption(), self.note)
    }

    fn size(&self) -> (u32, u32) {
        let (w, h) = self.inner.size();
        (w, h + self.note_px(w))
    }

    fn narrow_size(&self) -> Option<(u32, u32)> {
        let (w, h) = self.inner.narrow_size()?;
        Some((w, h + self.note_px(w)))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let width = root.dim_in_pixel().0;
        let (top, rest) = root.split_vertically(self.note_px(width));
        narrow::draw_lines(&top, &self.lines(width), (12, 5), NOTE_FONT_PX, &RGBColor(150, 40, 0))?;
        self.inner.draw(&rest)
    }
}
