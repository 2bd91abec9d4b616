//! One plotters coordinate for every axis the lab draws: linear or logarithmic, with our
//! own tick values ([`super::ticks`]) as its only key points, so the mesh draws exactly the
//! ticks that were checked for overlap.
//!
//! # Formula
//! A value `v` lands at `p₀ + f·(p₁ − p₀)` pixels, with `f = (v − lo)/(hi − lo)` on a linear
//! axis and `f = ln(v/lo)/ln(hi/lo)` on a log axis.
//!
//! # Shapes
//! A range `lo < hi` (`lo > 0` on a log axis) and a list of tick values inside it.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};

/// An axis's coordinate: its range, scale and tick values.
#[derive(Clone, Debug)]
pub struct TickedAxis {
    /// The drawn range's lower end.
    pub lo: f64,
    /// The drawn range's upper end.
    pub hi: f64,
    /// Logarithmic scale.
    pub log: bool,
    /// The tick values, drawn as the mesh's lines and labelled.
    pub ticks: Vec<f64>,
}

impl TickedAxis {
    /// Where `value` falls between the ends, as a fraction (0 at `lo`, 1 at `hi`).
    pub fn fraction(&self, value: f64) -> f64 {
        if self.log {
            (value / self.lo).ln() / (self.hi / self.lo).ln()
        } else {
            (value - self.lo) / (self.hi - self.lo)
        }
    }
}

impl Ranged for TickedAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, (start, end): (i32, i32)) -> i32 {
        let pixels = self.fraction(*value) * f64::from(end - start);
        start + pixels.round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // Bold lines at the ticks only; no light minor grid.
        if hint.weight().allow_light_points() {
            vec![]
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_linear_and_log_ranges_onto_pixels() {
        let linear = TickedAxis {
            lo: 0.0,
            hi: 10.0,
            log: false,
            ticks: vec![0.0, 5.0, 10.0],
        };
        assert_eq!(linear.map(&5.0, (0, 100)), 50);
        assert_eq!(linear.map(&2.5, (400, 0)), 300);
        let log = TickedAxis {
            lo: 1.0,
            hi: 100.0,
            log: true,
            ticks: vec![1.0, 10.0, 100.0],
        };
        assert_eq!(log.map(&10.0, (0, 200)), 100);
        assert_eq!(log.map(&100.0, (0, 200)), 200);
    }
}
