//! What a chart draws where there is nothing to plot: one line of text saying why, instead of an
//! empty axis; and the rule for reference lines that exist only for some policies.

use super::{DrawResult, FONT};
use crate::report::setup::PolicyInfo;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Height in pixels of a panel replaced by its one line of text.
pub const LINE_PANEL_PX: u32 = 34;

/// Writes `text` (in `colour`) as one line, vertically centred and left-aligned in `area`;
/// text wider than the area (at a generous 0.62 em per character) wraps at spaces into as many
/// lines as it needs, centred together, so it never runs off the panel or over its neighbour.
pub fn one_line<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, text: &str, colour: RGBColor) -> DrawResult
where
    DB::ErrorType: 'static,
{
    const FONT_PX: u32 = 16;
    let (w, h) = area.dim_in_pixel();
    let chars_max = ((f64::from(w.saturating_sub(32)) / (f64::from(FONT_PX) * 0.62)) as usize).max(20);
    let lines = wrap(text, chars_max);
    let style = TextStyle::from((FONT, FONT_PX).into_font()).color(&colour).pos(Pos::new(HPos::Left, VPos::Center));
    let step = FONT_PX as i32 + 6;
    let top = h as i32 / 2 - (lines.len() as i32 - 1) * step / 2;
    for (k, line) in lines.into_iter().enumerate() {
        area.draw(&Text::new(line, (16, top + k as i32 * step), style.clone()))?;
    }
    Ok(())
}

/// `text` broken at spaces into lines of at most `width` characters (a longer word keeps a line
/// of its own).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split(' ') {
        match lines.last_mut() {
            Some(line) if line.chars().count() + 1 + word.chars().count() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
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

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wrap_breaks_at_spaces_within_the_width() {
        assert_eq!(wrap("no tokens to draw here", 10), vec!["no tokens", "to draw", "here"]);
        assert_eq!(wrap("short", 10), vec!["short"]);
        assert_eq!(wrap("averyveryverylongword x", 5), vec!["averyveryverylongword", "x"]);
    }
}
