//! The plot of C's grids (`--full`): Wortsman et al. 2023's Fig. 1 at toy scale.
//!
//! ```text
//! lr_sensitivity_by_size.png   ℓ(η) against η (log) per size, baseline solid and
//!                              QK-layernorm dashed; S (own ℓ*) against N (log) per variant
//! ```
//!
//! # Shapes
//! Not applicable: charts of the report's series.

use super::record::DemoReport;
use crate::experiments::proxies::ProxyVariant;
use crate::plot::{Chart, Figure, Series};
use crate::stats::sensitivity::sensitivity;

/// `lr_sensitivity_by_size.png`, when the grid ran.
pub(super) fn lr_sensitivity_by_size(report: &DemoReport) -> Option<Figure> {
    super::wortsman_grid::largest(report)?;
    let c = &report.config.proxies;
    let sizes = &report.config.proxy_grid.sizes;
    let table = |size, v| super::wortsman_grid::table(report, size, v, &c.learning_rates);
    let mut curves = vec![];
    for (i, &size) in sizes.iter().enumerate() {
        for (v, dashed) in [
            (ProxyVariant::Baseline, false),
            (ProxyVariant::QkLayernorm, true),
        ] {
            let t = table(size, v);
            curves.push(Series {
                label: format!("{} {}", size.name(), v.name()),
                points: c
                    .learning_rates
                    .iter()
                    .copied()
                    .zip(t.curve(&t.all_seeds()))
                    .collect(),
                color: i,
                dashed,
            });
        }
    }
    let against_size = c
        .grid_variants()
        .into_iter()
        .enumerate()
        .map(|(i, v)| Series {
            label: v.name().into(),
            points: sizes
                .iter()
                .map(|&size| {
                    let t = table(size, v);
                    (size.parameters(), sensitivity(&t, &t.all_seeds()))
                })
                .collect(),
            color: i + 3,
            dashed: false,
        })
        .collect();
    Some(Figure {
        file: "lr_sensitivity_by_size.png",
        charts: vec![
            Chart {
                title: "final validation loss against LR by model size (Wortsman Fig. 1)".into(),
                x_label: "peak learning rate η".into(),
                x_ticks: Some(c.learning_rates.clone()),
                y_label: "validation loss ℓ(η) (nats; diverged = ℓ₀)".into(),
                log_x: true,
                series: curves,
                ..Chart::default()
            },
            Chart {
                title: "LR sensitivity against model size".into(),
                x_label: "non-embedding weights N = 12·d²·L".into(),
                x_ticks: Some(sizes.iter().map(|s| s.parameters()).collect()),
                y_label: "LR sensitivity S (own ℓ*, §2.2)".into(),
                log_x: true,
                series: against_size,
                ..Chart::default()
            },
        ],
        width_each: 620,
        height: 480,
    })
}
