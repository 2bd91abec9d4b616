//! Tick marks and their labels for one chart axis.
//!
//! A linear axis gets "nice" steps (1, 2 or 5 × 10^k) aiming at about six ticks; a log axis
//! gets its decades, with 2× and 5× between them when the axis spans few decades, and
//! falls back to nice linear steps inside a range narrower than one decade. An integer
//! axis (steps, layers, depths) keeps only whole values, with a step of at least 1. Ticks
//! whose labels would overlap at the axis's pixel length are thinned (every 2nd, 3rd, …)
//! until they fit.
//!
//! Labels have just the digits their step needs: `0.001`, `0.5`, `20`, `1e-4`, `2e5`.
//!
//! # Shapes
//! An axis range `lo < hi` (`lo > 0` on a log axis) and its length in pixels give a list
//! of [`Tick`]s, each a value inside the range and its label.

/// What an axis shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Values {
    /// Real numbers. Default.
    #[default]
    Real,
    /// Whole numbers only (steps, layers, depths): no fractional ticks.
    Integer,
}

/// One tick: its position on the axis and its label.
#[derive(Clone, Debug, PartialEq)]
pub struct Tick {
    /// The axis value.
    pub value: f64,
    /// The label drawn at it.
    pub label: String,
}

/// One axis: its range, scale and kind of values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Axis {
    /// The lower end of the drawn range.
    pub lo: f64,
    /// The upper end of the drawn range.
    pub hi: f64,
    /// Logarithmic scale.
    pub log: bool,
    /// What the values are.
    pub values: Values,
    /// Horizontal (labels side by side) or vertical (labels stacked).
    pub horizontal: bool,
}

/// About the width of one character of the tick font (DejaVu Sans at 13 px: digits are
/// 0.64 em), in pixels, rounded up.
pub const CHAR_WIDTH: f64 = 8.5;
/// The height of one tick label, in pixels, with its spacing.
pub const LABEL_HEIGHT: f64 = 18.0;
/// The smallest gap between two horizontal labels, in pixels.
pub const LABEL_GAP: f64 = 10.0;

impl Axis {
    /// The ticks for an axis `pixels` long: inside the range, distinct labels that do not
    /// overlap. The densest candidate set that fits wins: on a log axis 1-2-5 per decade,
    /// then 1-3, then decades, then every other decade; on a linear axis ever larger nice
    /// steps.
    pub fn ticks(&self, pixels: f64) -> Vec<Tick> {
        let candidates: Vec<Vec<Tick>> = if self.log {
            log_candidates(self.lo, self.hi, self.values)
        } else {
            linear_candidates(self.lo, self.hi, self.values)
        };
        let fallback = candidates.last().cloned().unwrap_or_default();
        candidates
            .into_iter()
            .find(|ticks| self.fits(ticks, pixels))
            .unwrap_or(fallback)
    }

    /// Explicit tick values (a grid's learning rates, the depths probed), labelled by
    /// [`format_value`]; thinned to every 2nd, 3rd, … value until the labels fit.
    pub fn ticks_at(&self, values: &[f64], pixels: f64) -> Vec<Tick> {
        let inside: Vec<Tick> = values
            .iter()
            .filter(|&&v| v >= self.lo && v <= self.hi)
            .map(|&value| Tick {
                value,
                label: format_value(value),
            })
            .collect();
        (1..=inside.len().max(1))
            .map(|every| inside.iter().step_by(every).cloned().collect::<Vec<_>>())
            .find(|ticks| self.fits(ticks, pixels))
            .unwrap_or_default()
    }

    /// Where `value` lands along an axis `pixels` long, from its low end.
    pub fn position(&self, value: f64, pixels: f64) -> f64 {
        let fraction = if self.log {
            (value / self.lo).ln() / (self.hi / self.lo).ln()
        } else {
            (value - self.lo) / (self.hi - self.lo)
        };
        fraction * pixels
    }

    /// Whether neighbouring labels leave a gap at this pixel length.
    pub fn fits(&self, ticks: &[Tick], pixels: f64) -> bool {
        ticks.windows(2).all(|pair| {
            let distance =
                self.position(pair[1].value, pixels) - self.position(pair[0].value, pixels);
            distance >= self.room_needed(&pair[0], &pair[1])
        })
    }

    /// The distance two neighbouring labels need between their centres.
    fn room_needed(&self, a: &Tick, b: &Tick) -> f64 {
        if self.horizontal {
            let width = |t: &Tick| t.label.chars().count() as f64 * CHAR_WIDTH;
            (width(a) + width(b)) / 2.0 + LABEL_GAP
        } else {
            LABEL_HEIGHT
        }
    }
}

/// The nice steps (1, 2 or 5 × 10^k) from the one nearest above `raw` upwards.
fn nice_steps(raw: f64) -> impl Iterator<Item = f64> {
    let magnitude = 10f64.powf(raw.log10().floor());
    (0..12)
        .flat_map(move |k| [1.0, 2.0, 5.0].map(|m| m * magnitude * 10f64.powi(k)))
        .filter(move |&step| step >= raw * (1.0 - 1e-9))
}

/// Tick sets at ever larger nice steps, the first aiming at about eight ticks.
fn linear_candidates(lo: f64, hi: f64, values: Values) -> Vec<Vec<Tick>> {
    if !(hi > lo && lo.is_finite() && hi.is_finite()) {
        return vec![];
    }
    nice_steps((hi - lo) / 8.0)
        .map(|step| match values {
            Values::Integer => step.max(1.0).round(),
            Values::Real => step,
        })
        .map(|step| linear_ticks(lo, hi, step))
        .take_while(|ticks| !ticks.is_empty())
        .collect()
}

/// The multiples of `step` inside `[lo, hi]`.
fn linear_ticks(lo: f64, hi: f64, step: f64) -> Vec<Tick> {
    let decimals = decimals_of(step);
    let first = (lo / step - 1e-9).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    (first..=last)
        .map(|k| {
            let value = k as f64 * step;
            Tick {
                value,
                label: format_fixed(value, decimals),
            }
        })
        .collect()
}

/// Tick sets on a log axis: 1-2-5 per decade, 1-3, decades, every other decade. An axis
/// narrower than that (fewer than three ticks at 1-2-5) takes linear steps instead.
fn log_candidates(lo: f64, hi: f64, values: Values) -> Vec<Vec<Tick>> {
    if !(hi > lo && lo > 0.0 && hi.is_finite()) {
        return vec![];
    }
    let dense = log_ticks(lo, hi, values, &[1.0, 2.0, 5.0], 1);
    if dense.len() < 3 {
        return linear_candidates(lo, hi, values);
    }
    let mut candidates = vec![dense, log_ticks(lo, hi, values, &[1.0, 3.0], 1)];
    candidates.extend((1..=4).map(|every| log_ticks(lo, hi, values, &[1.0], every)));
    candidates.retain(|ticks| ticks.len() >= 2);
    candidates
}

/// `m × 10^k` for each mantissa `m` and every `every`-th decade `k`, inside `[lo, hi]`.
fn log_ticks(lo: f64, hi: f64, values: Values, mantissas: &[f64], every: i32) -> Vec<Tick> {
    let mut ticks = vec![];
    for k in (lo.log10().floor() as i32)..=(hi.log10().ceil() as i32) {
        if k.rem_euclid(every) != 0 {
            continue;
        }
        for &m in mantissas {
            let value = m * 10f64.powi(k);
            let inside = value >= lo * (1.0 - 1e-9) && value <= hi * (1.0 + 1e-9);
            let whole = values == Values::Real || (value >= 1.0 && value.fract() == 0.0);
            if inside && whole {
                ticks.push(Tick {
                    value,
                    label: format_log(m, k),
                });
            }
        }
    }
    ticks
}

/// The decimals a label needs to show `value` exactly (up to 12).
fn decimals_of(value: f64) -> usize {
    (0..12)
        .find(|&d| {
            let scaled = value * 10f64.powi(d as i32);
            (scaled.round() - scaled).abs() <= 1e-6 * scaled.abs().max(1.0)
        })
        .unwrap_or(12)
}

/// `value` with `decimals` decimals; scientific from 10⁵ (and never "-0").
fn format_fixed(value: f64, decimals: usize) -> String {
    if value == 0.0 {
        return "0".into();
    }
    if value.abs() >= 1e5 {
        return format!("{value:e}");
    }
    format!("{value:.decimals$}")
}

/// `m × 10^k`: plain from 0.001 to 10⁴, else `me±k`.
fn format_log(m: f64, k: i32) -> String {
    if (-3..=4).contains(&k) {
        format_fixed(m * 10f64.powi(k), k.min(0).unsigned_abs() as usize)
    } else {
        format!("{m}e{k}")
    }
}

/// Any value with the fewest digits that show it: plain from 0.001 to 10⁴, else
/// scientific (`3e-4`, `2.5e5`).
pub fn format_value(value: f64) -> String {
    let magnitude = value.abs();
    if value == 0.0 || (1e-3..1e5).contains(&magnitude) {
        format_fixed(value, decimals_of(value))
    } else {
        format!("{value:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(axis: Axis, pixels: f64) -> Vec<String> {
        axis.ticks(pixels).into_iter().map(|t| t.label).collect()
    }

    impl Axis {
        fn with_log(self) -> Self {
            Self { log: true, ..self }
        }
    }

    fn axis(lo: f64, hi: f64, log: bool, values: Values) -> Axis {
        Axis {
            lo,
            hi,
            log,
            values,
            horizontal: true,
        }
    }

    #[test]
    fn linear_integer_axes_have_whole_steps() {
        assert_eq!(
            labels(axis(0.8, 5.2, false, Values::Integer), 560.0),
            ["1", "2", "3", "4", "5"]
        );
        assert_eq!(
            labels(axis(-2.4, 50.4, false, Values::Integer), 560.0),
            ["0", "10", "20", "30", "40", "50"]
        );
    }

    #[test]
    fn linear_real_axes_have_the_decimals_of_their_step() {
        assert_eq!(
            labels(axis(1.25, 2.85, false, Values::Real), 360.0),
            ["1.4", "1.6", "1.8", "2.0", "2.2", "2.4", "2.6", "2.8"]
        );
        assert_eq!(
            labels(axis(-0.03, 0.62, false, Values::Real), 560.0),
            ["0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6"]
        );
    }

    #[test]
    fn log_axes_label_decades_and_fill_in_where_there_is_room() {
        assert_eq!(
            labels(axis(2.3e-4, 3.9e-1, true, Values::Real), 640.0),
            [
                "5e-4", "0.001", "0.002", "0.005", "0.01", "0.02", "0.05", "0.1", "0.2"
            ]
        );
        assert_eq!(
            labels(axis(4.6, 125.0, true, Values::Integer), 560.0),
            ["5", "10", "20", "50", "100"]
        );
        assert_eq!(
            labels(axis(0.04, 12.0, false, Values::Real).with_log(), 560.0),
            ["0.05", "0.1", "0.2", "0.5", "1", "2", "5", "10"]
        );
        assert_eq!(
            labels(axis(1e-6, 1e6, true, Values::Real), 400.0),
            ["1e-6", "1e-4", "0.01", "1", "100", "10000", "1e6"]
        );
    }

    #[test]
    fn explicit_ticks_show_their_values_and_thin_out() {
        let lrs = [3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1];
        let axis = axis(2.3e-4, 3.9e-1, true, Values::Real);
        let wide: Vec<String> = axis
            .ticks_at(&lrs, 640.0)
            .into_iter()
            .map(|t| t.label)
            .collect();
        assert_eq!(
            wide,
            ["3e-4", "0.001", "0.003", "0.01", "0.03", "0.1", "0.3"]
        );
        let narrow: Vec<String> = axis
            .ticks_at(&lrs, 200.0)
            .into_iter()
            .map(|t| t.label)
            .collect();
        assert_eq!(narrow, ["3e-4", "0.003", "0.03", "0.3"]);
        assert_eq!(format_value(2.5e5), "2.5e5");
        assert_eq!(format_value(-0.25), "-0.25");
        assert_eq!(format_value(48.0), "48");
    }

    #[test]
    fn a_log_axis_inside_one_decade_takes_linear_steps() {
        assert_eq!(
            labels(axis(1.25, 2.85, true, Values::Real), 360.0),
            ["1.5", "2.0", "2.5"]
        );
        let tall = Axis {
            horizontal: false,
            ..axis(1.25, 2.85, true, Values::Real)
        };
        assert_eq!(
            labels(tall, 360.0),
            ["1.4", "1.6", "1.8", "2.0", "2.2", "2.4", "2.6", "2.8"]
        );
    }

    #[test]
    fn crowded_labels_are_thinned_until_they_fit() {
        let wide = axis(0.0, 100.0, false, Values::Integer);
        assert_eq!(labels(wide, 60.0), ["0", "100"]);
        assert_eq!(labels(wide, 600.0), ["0", "20", "40", "60", "80", "100"]);
        assert!(wide.fits(&wide.ticks(60.0), 60.0));
        let tall = Axis {
            horizontal: false,
            ..wide
        };
        assert!(tall.ticks(100.0).len() <= 100 / 18 + 1);
    }
}
