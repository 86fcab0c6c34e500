//! What a chart draws where there is nothing to plot: one line of text saying why, instead of an
//! empty axis; and the rule for reference lines that exist only for some policies.

use super::{DrawResult, FONT};
use crate::report::data::PolicyInfo;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Height in pixels of a panel replaced by its one line of text.
pub const LINE_PANEL_PX: u32 = 34;

/// Writes `text` (in `colour`) as one line, vertically centred and left-aligned in `area`.
pub fn one_line<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, text: &str, colour: RGBColor) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (_, h) = area.dim_in_pixel();
    let style = TextStyle::from((FONT, 16).into_font()).color(&colour).pos(Pos::new(HPos::Left, VPos::Center));
    area.draw(&Text::new(text.to_string(), (16, h as i32 / 2), style))?;
    Ok(())
}

/// True when a policy's delays have a cap worth marking: its jitter grows towards `cap` (not
/// `none`, which retries at once, nor `schedule`, whose delays are listed) and the cap is finite.
pub fn has_cap(policy: &PolicyInfo) -> bool {
    !matches!(policy.jitter.as_str(), "none" | "schedule") && policy.cap_s.is_finite() && policy.cap_s > 0.0
}

/// Splits `area` vertically into panels: those flagged `true` in `line_only` get
/// [`LINE_PANEL_PX`], the others share the rest evenly.
pub fn split_panels<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    line_only: &[bool],
) -> Vec<DrawingArea<DB, Shift>> {
    let (_, h) = area.dim_in_pixel();
    let lines = line_only.iter().filter(|&&x| x).count() as u32;
    let full = (line_only.len() as u32 - lines).max(1);
    let each = h.saturating_sub(lines * LINE_PANEL_PX) / full;
    let mut breaks = Vec::new();
    let mut y = 0u32;
    for &line in line_only.iter().take(line_only.len().saturating_sub(1)) {
        y += if line { LINE_PANEL_PX } else { each };
        breaks.push(y as i32);
    }
    area.split_by_breakpoints(Vec::<i32>::new(), breaks)
}
