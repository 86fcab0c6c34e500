//! Charts on a narrow screen: each run chart is drawn a second time for the HTML report at
//! [`NARROW_PX`] wide, with its panels stacked one per row, so that on a laptop or a window of
//! 800 px its text keeps the size it was drawn at instead of shrinking (or scrolling sideways).
//! The PNG and SVG files keep the wide drawing.
//!
//! A chart chooses its layout from the width of the area it is given ([`is_narrow`]), so one
//! drawing function serves both; titles and notes wrap to the width ([`titled`], [`wrap_chars`]).

use super::FONT;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Width of the narrow drawing: an 800 px window less the page's margins.
pub const NARROW_PX: u32 = 760;

/// Whether `root` is a narrow drawing (then panels stack one per row).
pub fn is_narrow<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>) -> bool {
    root.dim_in_pixel().0 < NARROW_PX + 100
}

/// Panels per row: `wide` on a wide drawing, one on a narrow one.
pub fn columns<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, wide: usize) -> usize {
    if is_narrow(root) {
        1
    } else {
        wide
    }
}

/// Width in pixels of `text` at `px`: plotters' estimate (the one its layout uses) with a tenth
/// to spare, as the browser's font may be wider than the one plotters measured.
fn text_width<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, text: &str, px: u32) -> u32 {
    let chars = text.chars().count() as u32;
    root.estimate_text_size(text, &TextStyle::from((FONT, px).into_font())).map_or(chars * px * 62 / 100, |s| s.0) * 11
        / 10
}

/// Whether `text` at `px` fits on one line `width` pixels wide (with [`text_width`]'s spare).
pub fn fits<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, text: &str, px: u32, width: u32) -> bool {
    text_width(root, text, px) <= width
}

/// The title on top of `root` (centred, `px` high; wrapped when it is wider than the area) and
/// the area below it, as plotters' `titled` returns.
pub fn titled<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    px: u32,
) -> Result<DrawingArea<DB, Shift>, Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let width = root.dim_in_pixel().0.saturating_sub(24);
    if text_width(root, title, px) <= width {
        return Ok(root.titled(title, (FONT, px))?);
    }
    // Too wide: at three quarters of the size, on as many lines as it needs.
    let small = (px * 3 / 4).max(14);
    let lines = wrap_chars(title, small, width);
    let line_px = small * 5 / 4;
    let height = 6 + line_px * lines.len() as u32 + 4;
    let (top, rest) = root.split_vertically(height);
    let centre = (root.dim_in_pixel().0 / 2) as i32;
    let style = TextStyle::from((FONT, small).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    for (k, line) in lines.iter().enumerate() {
        top.draw(&Text::new(line.clone(), (centre, 6 + (line_px * k as u32) as i32), style.clone()))?;
    }
    Ok(rest)
}

/// Draws `lines` from (`x`, `y`) down, `px` high, in `colour`; returns the height used.
pub fn draw_lines<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    lines: &[String],
    (x, y): (i32, i32),
    px: u32,
    colour: &RGBColor,
) -> Result<u32, Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let line_px = px * 5 / 4;
    let style = TextStyle::from((FONT, px).into_font()).color(colour).pos(Pos::new(HPos::Left, VPos::Top));
    for (k, line) in lines.iter().enumerate() {
        root.draw(&Text::new(line.clone(), (x, y + (line_px * k as u32) as i32), style.clone()))?;
    }
    Ok(line_px * lines.len() as u32)
}

/// `text` broken at spaces into lines of at most `width` pixels at `px`, at a conservative 0.62 em
/// per character (so a figure can size itself before it has a drawing area).
pub fn wrap_chars(text: &str, px: u32, width: u32) -> Vec<String> {
    super::empty::wrap(text, ((f64::from(width) / (0.62 * f64::from(px))) as usize).max(10))
}
