//! A per-layer profile as a chart series, shared by [`super::plots`] and `plots_study`.
//!
//! # Shapes
//! A profile of L values becomes L points (l, value), l = 1..=L.

use crate::plot::Series;

/// A per-layer profile as a solid line over layers 1..=L.
pub(super) fn layer_series(label: String, profile: Vec<f64>, color: usize) -> Series {
    Series {
        label,
        points: profile
            .into_iter()
            .enumerate()
            .map(|(l, g)| ((l + 1) as f64, g))
            .collect(),
        color,
        dashed: false,
    }
}
