//! PNG line charts for the report, drawn with plotters and an embedded DejaVu font (no
//! system fonts needed).
//!
//! A [`Chart`] is a title, axis titles, optional log axes, optional shaded bands, and a list
//! of [`Series`]. Several charts can share one image side by side. Tick marks come from
//! [`ticks`] (decades on log axes, whole numbers on integer axes, labels that never
//! overlap), and the legend from [`legend`], in a strip below each chart so that it never
//! covers data.
//!
//! # Shapes
//! Each series is a list of `(x, y)` points; non-finite and (on log axes) non-positive
//! points are skipped. An image of `k` charts is `k × width_each` by `height` pixels, plus
//! the tallest legend strip.

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::LabError;

pub mod coord;
pub mod legend;
pub mod ticks;

pub use ticks::{Tick, Values};

/// One line on a chart.
#[derive(Clone, Debug)]
pub struct Series {
    /// The legend label.
    pub label: String,
    /// The points.
    pub points: Vec<(f64, f64)>,
    /// Index into the palette.
    pub color: usize,
    /// Dashed (reference lines) or solid.
    pub dashed: bool,
}

impl Series {
    /// The swatch that draws this series.
    fn swatch(&self) -> legend::Swatch {
        legend::Swatch::Line {
            color: PALETTE[self.color % PALETTE.len()],
            dashed: self.dashed,
        }
    }
}

/// A shaded region between two curves (for example Lemma 2's band).
#[derive(Clone, Debug)]
pub struct Band {
    /// The legend label.
    pub label: String,
    /// `(x, low, high)` triples.
    pub points: Vec<(f64, f64, f64)>,
}

/// One chart.
#[derive(Clone, Debug, Default)]
pub struct Chart {
    /// The title.
    pub title: String,
    /// The x-axis label.
    pub x_label: String,
    /// The y-axis label.
    pub y_label: String,
    /// Log-scale x axis.
    pub log_x: bool,
    /// Log-scale y axis.
    pub log_y: bool,
    /// What the x values are (integer axes get whole-number ticks). Default: real.
    pub x_values: Values,
    /// Explicit x tick values (a grid's values), instead of automatic ones.
    pub x_ticks: Option<Vec<f64>>,
    /// The lines.
    pub series: Vec<Series>,
    /// Shaded bands, drawn under the lines.
    pub bands: Vec<Band>,
}

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The embedded font cannot be invalid; if it were, text would be skipped.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
    });
}

fn plot_err(e: impl std::fmt::Display) -> LabError {
    LabError::Invalid(format!("plot: {e}"))
}

impl Chart {
    fn visible(&self, (x, y): (f64, f64)) -> bool {
        x.is_finite() && y.is_finite() && (!self.log_x || x > 0.0) && (!self.log_y || y > 0.0)
    }

    fn range(&self) -> ((f64, f64), (f64, f64)) {
        let mut pts: Vec<(f64, f64)> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .collect();
        for b in &self.bands {
            pts.extend(b.points.iter().flat_map(|&(x, lo, hi)| [(x, lo), (x, hi)]));
        }
        pts.retain(|&p| self.visible(p));
        if pts.is_empty() {
            return ((0.0, 1.0), (0.0, 1.0));
        }
        let fold = |f: fn(&(f64, f64)) -> f64| {
            pts.iter()
                .map(f)
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                    (lo.min(v), hi.max(v))
                })
        };
        let pad = |(lo, hi): (f64, f64), log: bool| {
            if log {
                (lo / 1.3, hi * 1.3)
            } else {
                // A flat series (every rate 0) gets a readable span around its value.
                let span = if hi > lo { hi - lo } else { lo.abs().max(1.0) };
                (lo - 0.05 * span, hi + 0.05 * span)
            }
        };
        (
            pad(fold(|p| p.0), self.log_x),
            pad(fold(|p| p.1), self.log_y),
        )
    }

    /// The legend's entries: bands first, then the series, in order.
    fn legend_entries(&self) -> Vec<legend::Entry> {
        let bands = self.bands.iter().map(|b| legend::Entry {
            label: b.label.clone(),
            swatch: legend::Swatch::Band,
        });
        // A series with nothing to draw (a pair not run at this warm-up) has no entry.
        let drawn = self
            .series
            .iter()
            .filter(|s| s.points.iter().any(|&p| self.visible(p)));
        let lines = drawn.map(|s| legend::Entry {
            label: s.label.clone(),
            swatch: s.swatch(),
        });
        bands.chain(lines).collect()
    }

    /// The legend strip's height in a chart `width` pixels wide.
    pub fn legend_height(&self, width: u32) -> u32 {
        let entries = self.legend_entries();
        let labels: Vec<&str> = entries.iter().map(|e| e.label.as_str()).collect();
        legend::height(&labels, width)
    }

    /// Whether every series has its own colour-and-dash style (and so its own legend
    /// sample); returns the first label that repeats another's style.
    pub fn repeated_style(&self) -> Option<&str> {
        self.series.iter().enumerate().find_map(|(i, s)| {
            self.series[..i]
                .iter()
                .any(|t| t.swatch() == s.swatch())
                .then_some(s.label.as_str())
        })
    }

    /// The x and y axes as drawn by [`save_png`] at `(width_each, height)` (the chart's
    /// panel less its legend strip), each with its length in pixels.
    pub fn axes(&self, (width, height): (u32, u32)) -> [(ticks::Axis, f64); 2] {
        let ((x0, x1), (y0, y1)) = self.range();
        let x_axis = ticks::Axis {
            lo: x0,
            hi: x1,
            log: self.log_x,
            values: self.x_values,
            horizontal: true,
        };
        let y_axis = ticks::Axis {
            lo: y0,
            hi: y1,
            log: self.log_y,
            values: Values::Real,
            horizontal: false,
        };
        // The mesh's length: the panel less the label areas, margins and caption.
        let x_pixels = f64::from(width.saturating_sub(Y_LABEL_AREA + 2 * MARGIN));
        let y_pixels = f64::from(height.saturating_sub(X_LABEL_AREA + 2 * MARGIN + CAPTION));
        [(x_axis, x_pixels), (y_axis, y_pixels)]
    }

    /// The x and y ticks as drawn by [`save_png`] at `(width_each, height)`.
    pub fn ticks(&self, size: (u32, u32)) -> (Vec<Tick>, Vec<Tick>) {
        let [(x_axis, x_pixels), (y_axis, y_pixels)] = self.axes(size);
        let x_ticks = match &self.x_ticks {
            Some(values) => x_axis.ticks_at(values, x_pixels),
            None => x_axis.ticks(x_pixels),
        };
        (x_ticks, y_axis.ticks(y_pixels))
    }

    /// Draws the chart into `area`, its legend into the bottom `strip` pixels.
    fn draw_on(
        &self,
        area: &DrawingArea<BitMapBackend<'_>, Shift>,
        strip: u32,
    ) -> Result<(), LabError> {
        let (_, height) = area.dim_in_pixel();
        let (plot, legend_area) = area.split_vertically(height - strip);
        legend::draw(&legend_area, &self.legend_entries()).map_err(plot_err)?;
        let ((x0, x1), (y0, y1)) = self.range();
        let (x_ticks, y_ticks) = self.ticks(plot.dim_in_pixel());
        let axis = |lo, hi, log, ticks: &[Tick]| coord::TickedAxis {
            lo,
            hi,
            log,
            ticks: ticks.iter().map(|t| t.value).collect(),
        };
        let x_axis = axis(x0, x1, self.log_x, &x_ticks);
        let y_axis = axis(y0, y1, self.log_y, &y_ticks);
        let x_format = move |v: &f64| label_at(&x_ticks, *v);
        let y_format = move |v: &f64| label_at(&y_ticks, *v);
        let mut chart = ChartBuilder::on(&plot)
            .caption(&self.title, ("sans-serif", 20))
            .margin(MARGIN)
            .x_label_area_size(X_LABEL_AREA)
            .y_label_area_size(Y_LABEL_AREA)
            .build_cartesian_2d(x_axis, y_axis)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .x_desc(self.x_label.as_str())
            .y_desc(self.y_label.as_str())
            .x_label_formatter(&x_format)
            .y_label_formatter(&y_format)
            .label_style(("sans-serif", 13))
            .draw()
            .map_err(plot_err)?;
        for band in &self.bands {
            let mut poly: Vec<(f64, f64)> = band.points.iter().map(|&(x, lo, _)| (x, lo)).collect();
            poly.extend(band.points.iter().rev().map(|&(x, _, hi)| (x, hi)));
            let shade = RGBColor(200, 200, 200).mix(0.5).filled();
            chart
                .draw_series(std::iter::once(Polygon::new(poly, shade)))
                .map_err(plot_err)?;
        }
        for s in &self.series {
            let color = PALETTE[s.color % PALETTE.len()];
            let style = color.stroke_width(2);
            let pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|&p| self.visible(p))
                .collect();
            if s.dashed {
                chart
                    .draw_series(DashedLineSeries::new(pts, 6, 4, style))
                    .map_err(plot_err)?;
                continue;
            }
            chart
                .draw_series(LineSeries::new(pts.clone(), style))
                .map_err(plot_err)?;
            if pts.len() <= 12 {
                let dots = pts.into_iter().map(|p| Circle::new(p, 3, color.filled()));
                chart.draw_series(dots).map_err(plot_err)?;
            }
        }
        Ok(())
    }
}

/// The label of the tick at `value` (every key point is one of `ticks`).
fn label_at(ticks: &[Tick], value: f64) -> String {
    ticks
        .iter()
        .find(|t| (t.value - value).abs() <= 1e-9 * t.value.abs().max(1e-300))
        .map_or_else(|| ticks::format_value(value), |t| t.label.clone())
}

/// The chart's outer margin, in pixels.
const MARGIN: u32 = 12;
/// The height of the x axis's tick labels and title, in pixels.
const X_LABEL_AREA: u32 = 44;
/// The width of the y axis's tick labels and title, in pixels.
const Y_LABEL_AREA: u32 = 70;
/// The caption's height, in pixels (20 px text and its spacing).
const CAPTION: u32 = 30;

/// One PNG: its file name and its charts, side by side at `width_each × height` pixels
/// each (plus the legend strip).
#[derive(Clone, Debug)]
pub struct Figure {
    /// The file name, e.g. `figure_3.png`.
    pub file: &'static str,
    /// The charts, left to right.
    pub charts: Vec<Chart>,
    /// Each chart's width, in pixels.
    pub width_each: u32,
    /// The charts' height above the legend strip, in pixels.
    pub height: u32,
}

impl Figure {
    /// Writes the PNG into `dir`.
    ///
    /// # Errors
    /// If the file cannot be written.
    pub fn save(&self, dir: &Path) -> Result<(), LabError> {
        save_png(
            &dir.join(self.file),
            &self.charts,
            self.width_each,
            self.height,
        )
    }

    /// The PNG's size in pixels, legend strip included.
    pub fn size(&self) -> (u32, u32) {
        let strip = self
            .charts
            .iter()
            .map(|c| c.legend_height(self.width_each))
            .max()
            .unwrap_or(0);
        (
            self.width_each * self.charts.len().max(1) as u32,
            self.height + strip,
        )
    }
}

/// Draws `charts` side by side into one PNG of `width_each × height` pixels per chart, plus
/// the tallest legend strip below.
///
/// # Errors
/// If the file cannot be written.
pub fn save_png(
    path: &Path,
    charts: &[Chart],
    width_each: u32,
    height: u32,
) -> Result<(), LabError> {
    register_fonts();
    let width = width_each * charts.len().max(1) as u32;
    let strip = charts
        .iter()
        .map(|c| c.legend_height(width_each))
        .max()
        .unwrap_or(0);
    let root = BitMapBackend::new(path, (width, height + strip)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let panels = root.split_evenly((1, charts.len().max(1)));
    for (chart, panel) in charts.iter().zip(panels.iter()) {
        chart.draw_on(panel, strip)?;
    }
    root.present().map_err(plot_err)
}
