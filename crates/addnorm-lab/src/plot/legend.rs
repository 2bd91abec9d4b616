//! A chart's legend, laid out in columns in a strip below the plot so that it never
//! covers data.
//!
//! # Shapes
//! `n` entries in a strip `width` pixels wide take `columns = ⌊width / column width⌋`
//! columns (at least 1) and `⌈n / columns⌉` rows of [`ROW_HEIGHT`] pixels; the column
//! width is the widest label plus the line sample.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::ticks::CHAR_WIDTH;

/// One row's height, in pixels.
pub const ROW_HEIGHT: u32 = 20;
/// The line sample's length, in pixels.
const SAMPLE: i32 = 28;
/// Padding around the strip and between columns, in pixels.
const PAD: i32 = 12;

/// How an entry is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Swatch {
    /// A line of this colour, dashed or solid.
    Line {
        /// The colour.
        color: RGBColor,
        /// Dashed.
        dashed: bool,
    },
    /// A shaded band.
    Band,
}

/// One legend entry.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The label.
    pub label: String,
    /// How its sample looks.
    pub swatch: Swatch,
}

/// Columns and rows that `labels` take in a strip `width` pixels wide.
pub fn grid(labels: &[&str], width: u32) -> (usize, usize) {
    if labels.is_empty() {
        return (0, 0);
    }
    let columns = (width as usize / column_width(labels) as usize).clamp(1, labels.len());
    (columns, labels.len().div_ceil(columns))
}

/// The strip's height for `labels` at `width` pixels (0 without entries).
pub fn height(labels: &[&str], width: u32) -> u32 {
    let (_, rows) = grid(labels, width);
    if rows == 0 {
        0
    } else {
        rows as u32 * ROW_HEIGHT + PAD as u32
    }
}

/// The width of one column: the widest label, the sample and padding.
fn column_width(labels: &[&str]) -> u32 {
    let widest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    (widest as f64 * CHAR_WIDTH) as u32 + (SAMPLE + 2 * PAD) as u32
}

/// Draws `entries` into `area`, row by row.
///
/// # Errors
/// If plotters cannot draw.
pub fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[Entry],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let labels: Vec<&str> = entries.iter().map(|e| e.label.as_str()).collect();
    let (width, _) = area.dim_in_pixel();
    let (columns, _) = grid(&labels, width);
    let column = column_width(&labels) as i32;
    for (i, entry) in entries.iter().enumerate() {
        let x = PAD + (i % columns) as i32 * column;
        let y = PAD / 2 + (i / columns) as i32 * ROW_HEIGHT as i32 + ROW_HEIGHT as i32 / 2;
        draw_swatch(area, entry.swatch, (x, y))?;
        area.draw(&Text::new(
            entry.label.clone(),
            (x + SAMPLE + 6, y - 7),
            ("sans-serif", 13).into_font(),
        ))?;
    }
    Ok(())
}

/// A line (solid or dashed, as on the chart) or a band's shade, at `(x, y)`.
fn draw_swatch<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    swatch: Swatch,
    (x, y): (i32, i32),
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    match swatch {
        Swatch::Line { color, dashed } => {
            let style = color.stroke_width(2);
            if dashed {
                for start in (0..SAMPLE).step_by(10) {
                    let end = (start + 6).min(SAMPLE);
                    area.draw(&PathElement::new(vec![(x + start, y), (x + end, y)], style))?;
                }
            } else {
                area.draw(&PathElement::new(vec![(x, y), (x + SAMPLE, y)], style))?;
            }
            Ok(())
        }
        Swatch::Band => area.draw(&Rectangle::new(
            [(x, y - 6), (x + SAMPLE, y + 6)],
            RGBColor(200, 200, 200).filled(),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_wrap_into_columns_that_fit_the_width() {
        let short = ["post", "pre", "peri", "deepnorm"];
        assert_eq!(grid(&short, 640), (4, 1));
        let long = ["pre-layer, Lemma 2's setting (ReLU, d_ff = d, 1 head)"; 3];
        assert_eq!(grid(&long, 640), (1, 3));
        assert_eq!(height(&long, 640), 3 * ROW_HEIGHT + PAD as u32);
        assert_eq!(height(&[], 640), 0);
    }
}
