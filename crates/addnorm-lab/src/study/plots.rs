//! The demo's PNG plots: last-layer gradient against depth, per-layer gradient profiles,
//! Pre-LN residual growth against Lemma 2's band, and experiment B's loss curves.
//!
//! # Shapes
//! Not applicable: charts of the report's series.

use std::path::Path;

use addnorm::nn::Placement;

use super::config::label;
use super::layer_series::layer_series;
use super::measures::{profile, w2};
use super::record::DemoReport;
use crate::error::LabError;
use crate::experiments::norm_kind::NormKind;
use crate::experiments::sweep::SweepRun;
use crate::plot::{Band, Chart, Figure, Series, Values};

/// Writes every plot of `report` into `out`.
///
/// # Errors
/// If a PNG cannot be written.
pub fn draw_plots(report: &DemoReport, out: &Path) -> Result<(), LabError> {
    figures(report).iter().try_for_each(|f| f.save(out))
}

/// Every plot of `report`, in the order the report shows them.
pub fn figures(report: &DemoReport) -> Vec<Figure> {
    let mut figures = vec![
        gradient_per_layer(report),
        last_layer_vs_depth(report),
        loss_curves(report),
        residual_growth(report),
        super::plots_study::figure_3(report),
        super::plots_study::figure_3_paper_width(report),
        super::plots_study::warmup_grid(report),
        super::plots_study::peri_ln(report),
        super::plots_study::lr_sensitivity(report),
        super::plots_study::attention_logits(report),
        super::plots_study::model_update(report),
    ];
    figures.extend(super::plots_grid::lr_sensitivity_by_size(report));
    figures.extend(super::plots_grid::layer_scale_by_depth(report));
    figures
}

/// The probed (placement, norm) pairs that have a norm.
fn probed(report: &DemoReport) -> Vec<(Placement, NormKind)> {
    report
        .config
        .pairs
        .iter()
        .copied()
        .filter(|&(p, _)| p != Placement::None)
        .collect()
}

/// `gradient_per_layer.png`: experiment A's one-batch per-layer profiles, shallowest and
/// deepest.
fn gradient_per_layer(report: &DemoReport) -> Figure {
    let config = &report.config;
    let probed = probed(report);
    let per_layer = |depth: usize| Chart {
        title: format!("‖∂L/∂W₂^(l)‖ at initialization, L = {depth}"),
        x_label: "layer l".into(),
        x_values: Values::Integer,
        y_label: "‖∂L/∂W₂^(l)‖_F (L in nats)".into(),
        log_y: true,
        series: probed
            .iter()
            .enumerate()
            .map(|(i, &(p, n))| {
                layer_series(
                    label(p, n),
                    profile(&report.probe.results, p, n, depth, w2),
                    i,
                )
            })
            .collect(),
        ..Chart::default()
    };
    let depths = &config.probe.depths;
    Figure {
        file: "gradient_per_layer.png",
        charts: vec![
            per_layer(depths[0]),
            per_layer(*depths.last().unwrap_or(&depths[0])),
        ],
        width_each: 640,
        height: 440,
    }
}

/// `last_layer_vs_depth.png`: Theorem 1's slopes with reference slopes 0 and −½.
fn last_layer_vs_depth(report: &DemoReport) -> Figure {
    let probed = probed(report);
    let mut series: Vec<Series> = vec![];
    for (i, &(p, n)) in probed.iter().enumerate() {
        if let Some(fit) = report
            .probe
            .slopes
            .iter()
            .find(|f| f.placement == p && f.norm == n)
        {
            series.push(Series {
                label: format!("{} (slope {:.2})", label(p, n), fit.slope),
                points: fit.points.iter().map(|&(d, g)| (d as f64, g)).collect(),
                color: i,
                dashed: false,
            });
        }
    }
    for (slope, anchor, color) in [(0.0, Placement::Post, 7), (-0.5, Placement::Pre, 5)] {
        if let Some(fit) = report
            .probe
            .slopes
            .iter()
            .find(|f| f.placement == anchor && f.norm == NormKind::Layer)
        {
            let (d0, g0) = fit.points[0];
            series.push(Series {
                label: format!("slope {slope}"),
                points: fit
                    .points
                    .iter()
                    .map(|&(d, _)| (d as f64, g0 * (d as f64 / d0 as f64).powf(slope)))
                    .collect(),
                color,
                dashed: true,
            });
        }
    }
    Figure {
        file: "last_layer_vs_depth.png",
        charts: vec![Chart {
            title: "Last layer's ‖∂L/∂W₂‖ against depth (Theorem 1)".into(),
            x_label: "depth L (layers)".into(),
            x_values: Values::Integer,
            x_ticks: Some(
                report
                    .config
                    .probe
                    .depths
                    .iter()
                    .map(|&d| d as f64)
                    .collect(),
            ),
            y_label: "‖∂L/∂W₂^(L)‖_F (L in nats)".into(),
            log_x: true,
            log_y: true,
            series,
            ..Chart::default()
        }],
        width_each: 760,
        height: 480,
    }
}

/// `loss_curves.png`: experiment B's mean training loss, one chart per warm-up.
fn loss_curves(report: &DemoReport) -> Figure {
    let config = &report.config;
    let curves = |warmup: usize| Chart {
        title: format!(
            "training loss, LR {:e}, warm-up {warmup}",
            config.learning_rate
        ),
        x_label: "training step".into(),
        x_values: Values::Integer,
        y_label: "training loss (nats, mean over seeds)".into(),
        log_y: true,
        series: config
            .training_pairs()
            .into_iter()
            .enumerate()
            .map(|(i, (p, n))| {
                let group: Vec<&SweepRun> = report
                    .runs
                    .iter()
                    .filter(|r| r.placement == p && r.norm == n && r.warmup == warmup)
                    .collect();
                let len = group.iter().map(|r| r.losses.len()).min().unwrap_or(0);
                let points = (0..len)
                    .map(|s| {
                        (
                            s as f64,
                            group.iter().map(|r| r.losses[s]).sum::<f64>() / group.len() as f64,
                        )
                    })
                    .collect();
                Series {
                    label: label(p, n),
                    points,
                    color: i,
                    dashed: false,
                }
            })
            .collect(),
        ..Chart::default()
    };
    Figure {
        file: "loss_curves.png",
        charts: config
            .warmups
            .iter()
            .map(|&w| curves(w))
            .collect::<Vec<_>>(),
        width_each: 640,
        height: 440,
    }
}

/// `residual_growth.png`: experiment A's residual mean square against Lemma 2's band.
fn residual_growth(report: &DemoReport) -> Figure {
    let config = &report.config;
    let deepest = *config.probe.depths.last().unwrap_or(&1);
    let ms = |p, n| {
        profile(&report.probe.results, p, n, deepest, |r| {
            &r.residual_mean_square
        })
    };
    let color = |p, n| config.pairs.iter().position(|&q| q == (p, n)).unwrap_or(7);
    let growth: Vec<Series> = [
        (Placement::Pre, NormKind::Layer),
        (Placement::Pre, NormKind::Rms),
        (Placement::Post, NormKind::Layer),
    ]
    .into_iter()
    .map(|(p, n)| Series {
        label: label(p, n),
        points: ms(p, n)
            .into_iter()
            .enumerate()
            .map(|(l, m)| (l as f64, m))
            .collect(),
        color: color(p, n),
        dashed: false,
    })
    .collect();
    let mut growth = growth;
    let lemma = &report.config.lemma_2;
    let lemma_depth = *lemma.depths.last().unwrap_or(&1);
    growth.push(Series {
        label: "pre-layer, Lemma 2's setting (ReLU, d_ff = d, 1 head)".into(),
        points: profile(
            &report.lemma_2.results,
            Placement::Pre,
            NormKind::Layer,
            lemma_depth,
            |r| &r.residual_mean_square,
        )
        .into_iter()
        .enumerate()
        .map(|(l, m)| (l as f64, m))
        .collect(),
        color: 6,
        dashed: true,
    });
    Figure {
        file: "residual_growth.png",
        charts: vec![Chart {
            title: format!("residual stream E‖x_l‖²/d at initialization, L = {deepest}"),
            x_label: "layer l (0: embeddings)".into(),
            x_values: Values::Integer,
            y_label: "E‖x_l‖²/d (per feature)".into(),
            series: growth,
            bands: vec![Band {
                label: "Lemma 2: 1 + l/2 … 1 + 3l/2".into(),
                points: (0..=deepest)
                    .map(|l| (l as f64, 1.0 + l as f64 / 2.0, 1.0 + 1.5 * l as f64))
                    .collect(),
            }],
            ..Chart::default()
        }],
        width_each: 760,
        height: 480,
    }
}
