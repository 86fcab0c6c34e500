//! A figure-wide legend strip under the title: legends inside plots end up covering data.

use super::{DrawResult, FONT};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// What a legend entry's swatch looks like.
#[derive(Clone, Copy, Debug)]
pub enum Swatch {
    /// A filled box.
    Fill(RGBAColor),
    /// A solid line.
    Line(RGBAColor),
    /// A dashed line.
    Dashed(RGBAColor),
    /// A variant's line: colour, line style and width.
    Styled(RGBAColor, Dash, u32),
}

/// A line's style: the second thing, after the colour, that tells variants apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dash {
    /// A solid line.
    Solid,
    /// Dashes.
    Dashed,
    /// Dots.
    Dotted,
    /// Long dashes.
    Long,
}

impl Dash {
    /// Dash and gap lengths in pixels (`None` for a solid line).
    pub fn pattern(self) -> Option<(u32, u32)> {
        match self {
            Dash::Solid => None,
            Dash::Dashed => Some((6, 3)),
            Dash::Dotted => Some((2, 3)),
            Dash::Long => Some((13, 4)),
        }
    }
}

/// One entry: swatch and label.
pub type KeyItem = (Swatch, String);

const SWATCH_PX: i32 = 22;
const GAP_PX: i32 = 8;
const ITEM_GAP_PX: i32 = 28;
const ROW_PX: i32 = 26;
const FONT_PX: u32 = 15;

fn item_width<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, label: &str) -> i32 {
    let width = area
        .estimate_text_size(label, &TextStyle::from((FONT, FONT_PX).into_font()))
        .map_or(8 * label.len() as u32, |s| s.0);
    SWATCH_PX + GAP_PX + width as i32
}

/// Lays the entries out in centred rows that fit `area`'s width: (row of entry indices, width).
fn rows<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, items: &[KeyItem]) -> Vec<(Vec<usize>, i32)> {
    // 60 px of room: the text width is an estimate, and a row must not reach the edge.
    let limit = area.dim_in_pixel().0 as i32 - 60;
    let mut out: Vec<(Vec<usize>, i32)> = Vec::new();
    for (i, (_, label)) in items.iter().enumerate() {
        let w = item_width(area, label);
        match out.last_mut() {
            Some((row, width)) if *width + ITEM_GAP_PX + w <= limit => {
                row.push(i);
                *width += ITEM_GAP_PX + w;
            }
            _ => out.push((vec![i], w)),
        }
    }
    out
}

/// The height [`with_key`] takes for `labels` on a canvas `width` pixels wide, estimated before
/// drawing (for a figure's size) at 9 px per character, wider than the 15 px font's average.
pub fn height_estimate(labels: &[String], width: u32) -> u32 {
    let limit = width as i32 - 60;
    let mut rows = 0;
    let mut used = 0;
    for label in labels {
        let w = SWATCH_PX + GAP_PX + 9 * label.chars().count() as i32;
        if rows == 0 || used + ITEM_GAP_PX + w > limit {
            rows += 1;
            used = w;
        } else {
            used += ITEM_GAP_PX + w;
        }
    }
    (rows * ROW_PX + 8) as u32
}

/// Splits a legend strip off the top of `area`, draws `items` in it and returns the rest.
pub fn with_key<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    items: &[KeyItem],
) -> Result<DrawingArea<DB, Shift>, Box<dyn std::error::Error>>
where
    DB::ErrorType: 'static,
{
    let layout = rows(area, items);
    let height = layout.len() as i32 * ROW_PX + 8;
    let (strip, rest) = area.split_vertically(height);
    draw_rows(&strip, items, &layout)?;
    Ok(rest)
}

fn draw_rows<DB: DrawingBackend>(
    strip: &DrawingArea<DB, Shift>,
    items: &[KeyItem],
    layout: &[(Vec<usize>, i32)],
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let full = strip.dim_in_pixel().0 as i32;
    let style = TextStyle::from((FONT, FONT_PX).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    for (r, (row, width)) in layout.iter().enumerate() {
        let y = r as i32 * ROW_PX + ROW_PX / 2 + 2;
        let mut x = (full - width) / 2;
        for &i in row {
            let (swatch, label) = &items[i];
            match *swatch {
                Swatch::Fill(c) => strip.draw(&Rectangle::new([(x, y - 7), (x + SWATCH_PX, y + 7)], c.filled()))?,
                Swatch::Line(c) => {
                    strip.draw(&PathElement::new(vec![(x, y), (x + SWATCH_PX, y)], c.stroke_width(3)))?
                }
                Swatch::Styled(c, dash, width) => match dash.pattern() {
                    None => strip.draw(&PathElement::new(vec![(x, y), (x + SWATCH_PX, y)], c.stroke_width(width)))?,
                    Some((on, off)) => {
                        let (on, step) = (on as i32, (on + off) as usize);
                        for start in (0..SWATCH_PX).step_by(step) {
                            let end = (start + on).min(SWATCH_PX);
                            strip.draw(&PathElement::new(vec![(x + start, y), (x + end, y)], c.stroke_width(width)))?;
                        }
                    }
                },
                Swatch::Dashed(c) => {
                    for start in (0..SWATCH_PX).step_by(8) {
                        let end = (start + 5).min(SWATCH_PX);
                        strip.draw(&PathElement::new(vec![(x + start, y), (x + end, y)], c.stroke_width(2)))?;
                    }
                }
            }
            strip.draw(&Text::new(label.clone(), (x + SWATCH_PX + GAP_PX, y), style.clone()))?;
            x += item_width(strip, label) + ITEM_GAP_PX;
        }
    }
    Ok(())
}
