//! Caps on what a chart draws, so 6,000 variants or 20,000 tenants never make a chart gigabytes
//! tall: at most [`PANELS_MAX`] variants and [`PANELS_MAX`] tenants are drawn, chosen by a stated
//! rule, and every chart says in one line of text what was left out (as does its caption).
//!
//! Variants: the baseline (the first) and the best-ranked others by the verdict. Tenants: those
//! with the most requests in the baseline (ties in file order), drawn in file order.

use super::{DrawResult, Figure, FONT};
use crate::metrics::catalogue::Metric;
use crate::report::data::ReportData;
use crate::runner::verdict::{verdict, Candidate};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// The most variants, and the most tenants, a run's charts draw (counted by the memory estimate).
pub const PANELS_MAX: usize = crate::runner::memory::CHART_PANELS_MAX;

/// Height of the line that says what a capped chart left out.
const NOTE_PX: u32 = 28;

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

impl<F: Figure> Figure for Noted<'_, F> {
    fn stem(&self) -> String {
        self.inner.stem()
    }

    fn caption(&self) -> String {
        format!("{} Capped: {}.", self.inner.caption(), self.note)
    }

    fn size(&self) -> (u32, u32) {
        let (w, h) = self.inner.size();
        (w, h + NOTE_PX)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult
    where
        DB::ErrorType: 'static,
    {
        let (top, rest) = root.split_vertically(NOTE_PX);
        let style = TextStyle::from((FONT, 15).into_font())
            .color(&RGBColor(150, 40, 0))
            .pos(Pos::new(HPos::Left, VPos::Center));
        top.draw(&Text::new(format!("Capped: {}", self.note), (12, NOTE_PX as i32 / 2), style))?;
        self.inner.draw(&rest)
    }
}
