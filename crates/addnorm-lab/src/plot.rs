//! PNG line charts for the report, drawn with plotters and an embedded DejaVu font (no
//! system fonts needed).
//!
//! A [`Chart`] is a title, axis labels, optional log axes, optional shaded bands, and a list
//! of [`Series`]. Several charts can share one image side by side.
//!
//! # Shapes
//! Each series is a list of `(x, y)` points; non-finite and (on log axes) non-positive
//! points are skipped.

use std::path::Path;
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::LabError;

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
                let span = (hi - lo).max(1e-12);
                (lo - 0.05 * span, hi + 0.05 * span)
            }
        };
        (
            pad(fold(|p| p.0), self.log_x),
            pad(fold(|p| p.1), self.log_y),
        )
    }

    fn draw_on(&self, area: &DrawingArea<BitMapBackend<'_>, Shift>) -> Result<(), LabError> {
        let ((x0, x1), (y0, y1)) = self.range();
        let mut builder = ChartBuilder::on(area);
        builder
            .caption(&self.title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64);
        macro_rules! finish {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(self.x_label.as_str())
                    .y_desc(self.y_label.as_str())
                    .label_style(("sans-serif", 13))
                    .draw()
                    .map_err(plot_err)?;
                for band in &self.bands {
                    let mut poly: Vec<(f64, f64)> =
                        band.points.iter().map(|&(x, lo, _)| (x, lo)).collect();
                    poly.extend(band.points.iter().rev().map(|&(x, _, hi)| (x, hi)));
                    chart
                        .draw_series(std::iter::once(Polygon::new(
                            poly,
                            RGBColor(200, 200, 200).mix(0.5).filled(),
                        )))
                        .map_err(plot_err)?
                        .label(band.label.as_str())
                        .legend(|(x, y)| {
                            Rectangle::new(
                                [(x, y - 5), (x + 16, y + 5)],
                                RGBColor(200, 200, 200).filled(),
                            )
                        });
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
                            .map_err(plot_err)?
                            .label(s.label.as_str())
                            .legend(move |(x, y)| {
                                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                            });
                    } else {
                        chart
                            .draw_series(LineSeries::new(pts.clone(), style))
                            .map_err(plot_err)?
                            .label(s.label.as_str())
                            .legend(move |(x, y)| {
                                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                            });
                        if pts.len() <= 12 {
                            chart
                                .draw_series(
                                    pts.into_iter().map(|p| Circle::new(p, 3, color.filled())),
                                )
                                .map_err(plot_err)?;
                        }
                    }
                }
                chart
                    .configure_series_labels()
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK.mix(0.3))
                    .label_font(("sans-serif", 13))
                    .position(SeriesLabelPosition::UpperRight)
                    .draw()
                    .map_err(plot_err)?;
            }};
        }
        match (self.log_x, self.log_y) {
            (false, false) => finish!(
                builder
                    .build_cartesian_2d(x0..x1, y0..y1)
                    .map_err(plot_err)?
            ),
            (true, false) => finish!(
                builder
                    .build_cartesian_2d((x0..x1).log_scale(), y0..y1)
                    .map_err(plot_err)?
            ),
            (false, true) => finish!(
                builder
                    .build_cartesian_2d(x0..x1, (y0..y1).log_scale())
                    .map_err(plot_err)?
            ),
            (true, true) => finish!(
                builder
                    .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
                    .map_err(plot_err)?
            ),
        }
        Ok(())
    }
}

/// Draws `charts` side by side into one PNG of `width_each × height` pixels per chart.
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
    let root = BitMapBackend::new(path, (width, height)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_err)?;
    let panels = root.split_evenly((1, charts.len().max(1)));
    for (chart, panel) in charts.iter().zip(panels.iter()) {
        chart.draw_on(panel)?;
    }
    root.present().map_err(plot_err)
}
