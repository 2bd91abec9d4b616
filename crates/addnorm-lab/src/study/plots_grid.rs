//! The plots of the `--full` grids: Wortsman et al. 2023's Fig. 1 at toy scale, and CaiT's
//! depth grid.
//!
//! ```text
//! lr_sensitivity_by_size.png   ℓ(η) against η (log) per size, baseline solid and
//!                              QK-layernorm dashed; S (own ℓ*) against N (log) per variant
//! layer_scale_by_depth.png     success rate against depth L (log), Pre-LN alone and with
//!                              LayerScale (the report's table gives their exact intervals)
//! ```
//!
//! # Shapes
//! Not applicable: charts of the report's series.

use super::record::DemoReport;
use crate::experiments::proxies::ProxyVariant;
use crate::plot::{Chart, Figure, Series, Values};
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

/// `layer_scale_by_depth.png`, when the depth grid ran.
pub(super) fn layer_scale_by_depth(report: &DemoReport) -> Option<Figure> {
    let depths = &report.config.depth_grid.depths;
    if report.depth_grid.is_empty() {
        return None;
    }
    let series = ["Pre-LN", "Pre-LN + LayerScale"]
        .into_iter()
        .enumerate()
        .map(|(i, label)| Series {
            label: label.into(),
            points: depths
                .iter()
                .filter_map(|&depth| {
                    let (ok, n) = super::cait::counts(report, depth)[i];
                    (n > 0).then(|| (depth as f64, ok as f64 / n as f64))
                })
                .collect(),
            color: i,
            dashed: false,
        })
        .collect();
    Some(Figure {
        file: "layer_scale_by_depth.png",
        charts: vec![Chart {
            title: format!(
                "success rate against depth at LR {:e}, no warm-up (CaiT's LayerScale, ε = {:e})",
                report.config.learning_rate, report.config.depth_grid.layer_scale_init
            ),
            x_label: "depth L".into(),
            x_ticks: Some(depths.iter().map(|&d| d as f64).collect()),
            x_values: Values::Integer,
            y_label: "success rate (≥ 99% exact, no divergence)".into(),
            log_x: true,
            series,
            ..Chart::default()
        }],
        width_each: 760,
        height: 480,
    })
}
