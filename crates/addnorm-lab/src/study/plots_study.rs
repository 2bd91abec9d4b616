//! The plots of the study's newer parts: Fig. 3 as published, Pre-LN against Peri-LN in
//! experiment B, experiment C's LR curves and attention logits, experiment D's model
//! update against depth.
//!
//! ```text
//! figure_3.png           GM_seeds ‖E ∇W^(l)‖ against l (W₁, W₂), Post and Pre, L = 6
//! figure_3_paper_width.png  the same at the paper's widths (d = 512, d_ff = 1024)
//! warmup_grid.png        Post-LN's capped final loss against warm-up, one line per peak
//!                        LR; App. H's fixed LR dashed (Xiong Fig. 2)
//! peri_ln.png            rms(x_l) against l after training (GM over seeds), and the mean
//!                        ‖g‖ against step, Pre-LN and Peri-LN at B's LR without warm-up
//! lr_sensitivity.png     ℓ(η) against η (log), baseline and QK-layernorm, floor dashed
//! attention_logits.png   layer 0's max attention logit against step (log), both variants,
//!                        top LRs
//! model_update.png       ‖ΔF‖ after the first step against N (log-log), Post and DeepNorm;
//!                        ‖ΔF‖ over the first steps per N; ‖ΔF‖/η after one SGD step
//!                        against N, each step length (dashed: the larger)
//! ```
//!
//! # Shapes
//! Not applicable: charts of the report's series.

use addnorm::nn::{Placement, TransformerBlockConfig};

use super::layer_series::layer_series;
use super::record::DemoReport;
use crate::experiments::expected_gradient::ExpectedGradientRun;
use crate::experiments::proxies::ProxyVariant;
use crate::plot::{Chart, Figure, Series, Values};

/// `figure_3.png`: the two FFN weights' expected-gradient profiles at the paper's depth.
pub(super) fn figure_3(report: &DemoReport) -> Figure {
    let c = &report.config.figure_3;
    figure_3_charts(
        "figure_3.png",
        &report.figure_3,
        c.depths[0],
        c.model.block(),
    )
}

/// `figure_3_paper_width.png`: Fig. 3 again at the paper's widths (d = 512).
pub(super) fn figure_3_paper_width(report: &DemoReport) -> Figure {
    let c = &report.config.figure_3_paper_width;
    let depth = c.depths.first().copied().unwrap_or(6);
    figure_3_charts(
        "figure_3_paper_width.png",
        &report.figure_3_paper_width,
        depth,
        c.model.block(),
    )
}

/// Fig. 3's two panels (W₁, W₂) of `runs` at `depth`, titled with the model's width.
fn figure_3_charts(
    file: &'static str,
    runs: &[ExpectedGradientRun],
    depth: usize,
    block: &TransformerBlockConfig,
) -> Figure {
    let chart = |weight: usize, name: &str| Chart {
        title: format!(
            "‖E ∇{name}^(l)‖ at init, L = {depth}, d = {} (Xiong Fig. 3)",
            block.d_model
        ),
        x_label: "layer l".into(),
        x_values: Values::Integer,
        y_label: "‖E ∇W^(l)‖_F (L in nats)".into(),
        log_y: true,
        series: [Placement::Post, Placement::Pre]
            .iter()
            .enumerate()
            .map(|(i, &p)| {
                let profile = super::xiong::figure_3_profile(runs, p, depth, weight);
                layer_series(format!("{p}-layer"), profile, i)
            })
            .collect(),
        ..Chart::default()
    };
    Figure {
        file,
        charts: vec![chart(0, "W₁"), chart(1, "W₂")],
        width_each: 640,
        height: 440,
    }
}

/// `warmup_grid.png`: Fig. 2's grid, the capped final loss against the warm-up length per
/// peak LR, with App. H's fixed LR as a dashed level.
pub(super) fn warmup_grid(report: &DemoReport) -> Figure {
    let g = &report.config.warmup_grid;
    let (profiles, fixed) = super::warmup_grid::capped_profiles(report);
    let longest = g.warmups.iter().copied().max().unwrap_or(0) as f64;
    let mut series: Vec<Series> = profiles
        .into_iter()
        .enumerate()
        .map(|(i, (lr, points))| Series {
            label: format!("Post-LN, peak LR {lr:e}"),
            points,
            color: i,
            dashed: false,
        })
        .collect();
    series.push(Series {
        label: format!("fixed LR {:e}, no warm-up", g.fixed_learning_rate),
        points: vec![(0.0, fixed), (longest, fixed)],
        color: series.len(),
        dashed: true,
    });
    Figure {
        file: "warmup_grid.png",
        charts: vec![Chart {
            title: "Post-LN: final loss over warm-up × peak LR (Xiong Fig. 2, App. H)".into(),
            x_label: "warm-up steps".into(),
            x_values: Values::Integer,
            x_ticks: Some(g.warmups.iter().map(|&w| w as f64).collect()),
            y_label: "final validation loss, capped at ℓ₀ (nats, mean over seeds)".into(),
            series,
            ..Chart::default()
        }],
        width_each: 760,
        height: 480,
    }
}

/// `peri_ln.png`: Pre-LN against Peri-LN in B's no-warm-up runs, the residual stream
/// after training and the gradient norm over training.
pub(super) fn peri_ln(report: &DemoReport) -> Figure {
    let placements = [Placement::Pre, Placement::Peri];
    let runs = |p| super::peri_ln::runs_of(report, p);
    let residual = Chart {
        title: "residual stream after training (Kim et al. 2025)".into(),
        x_label: "layer l (0: embeddings)".into(),
        x_values: Values::Integer,
        y_label: "rms(x_l) per feature, GM over seeds".into(),
        log_y: true,
        series: placements
            .iter()
            .enumerate()
            .map(|(i, &p)| {
                let group = runs(p);
                let profile = super::measures::per_layer_gm(&group, |r| {
                    r.evaluations.last().map_or(&EMPTY, |e| &e.residual_rms)
                });
                Series {
                    label: format!("{p}-layer"),
                    points: profile
                        .into_iter()
                        .enumerate()
                        .map(|(l, v)| (l as f64, v))
                        .collect(),
                    color: i,
                    dashed: false,
                }
            })
            .collect(),
        ..Chart::default()
    };
    let gradients = Chart {
        title: "global gradient norm during training".into(),
        x_label: "training step".into(),
        x_values: Values::Integer,
        y_label: "‖g‖₂ before clipping, mean over seeds".into(),
        log_y: true,
        series: placements
            .iter()
            .enumerate()
            .map(|(i, &p)| {
                let group = runs(p);
                let len = group.iter().map(|r| r.grad_norms.len()).min().unwrap_or(0);
                Series {
                    label: format!("{p}-layer"),
                    points: (0..len)
                        .map(|t| {
                            let values: Vec<f64> = group.iter().map(|r| r.grad_norms[t]).collect();
                            ((t + 1) as f64, crate::stats::sample::mean(&values))
                        })
                        .collect(),
                    color: i,
                    dashed: false,
                }
            })
            .collect(),
        ..Chart::default()
    };
    Figure {
        file: "peri_ln.png",
        charts: vec![residual, gradients],
        width_each: 640,
        height: 440,
    }
}

/// An empty profile, for runs recorded before the residual stream was measured.
static EMPTY: Vec<f64> = Vec::new();

/// `lr_sensitivity.png`: the loss-vs-LR curves.
pub(super) fn lr_sensitivity(report: &DemoReport) -> Figure {
    let c = &report.config.proxies;
    let mut series: Vec<Series> = super::wortsman::lr_curves(report)
        .into_iter()
        .enumerate()
        .map(|(i, (variant, curve))| Series {
            label: variant.name().into(),
            points: c.learning_rates.iter().copied().zip(curve).collect(),
            color: i,
            dashed: false,
        })
        .collect();
    let (first, last) = (
        c.learning_rates[0],
        *c.learning_rates.last().unwrap_or(&1.0),
    );
    for (label, value, color) in [
        (
            "context-free loss",
            c.task.context_free_loss().unwrap_or(f64::NAN),
            7,
        ),
        ("entropy floor", c.task.entropy_floor(), 5),
    ] {
        series.push(Series {
            label: label.into(),
            points: vec![(first, value), (last, value)],
            color,
            dashed: true,
        });
    }
    Figure {
        file: "lr_sensitivity.png",
        charts: vec![Chart {
            title: "final validation loss against LR (Wortsman et al. 2023)".into(),
            x_label: "peak learning rate η".into(),
            x_ticks: Some(c.learning_rates.clone()),
            y_label: "validation loss ℓ(η) (nats; diverged = ℓ₀)".into(),
            log_x: true,
            series,
            ..Chart::default()
        }],
        width_each: 760,
        height: 480,
    }
}

/// `attention_logits.png`: layer 0's largest attention logit against step at the two top
/// LRs.
pub(super) fn attention_logits(report: &DemoReport) -> Figure {
    let c = &report.config.proxies;
    let top: Vec<f64> = c.learning_rates.iter().rev().take(2).copied().collect();
    let mut series = vec![];
    for (i, variant) in [ProxyVariant::Baseline, ProxyVariant::QkLayernorm]
        .into_iter()
        .enumerate()
    {
        for (j, &lr) in top.iter().enumerate() {
            let runs: Vec<_> = report
                .proxies
                .iter()
                .filter(|r| r.variant == variant && r.run.learning_rate == lr)
                .collect();
            let Some(first) = runs.first() else { continue };
            let points = (0..first.run.evaluations.len())
                .map(|k| {
                    let step = first.run.evaluations[k].step as f64;
                    let values = runs.iter().filter_map(|r| r.run.evaluations.get(k));
                    let gm = crate::stats::fit::geometric_mean(values.map(|e| e.layer_0_logit()));
                    (step, gm)
                })
                .collect();
            series.push(Series {
                label: format!("{} LR {lr:e}", variant.name()),
                points,
                color: 2 * i + j,
                dashed: j > 0,
            });
        }
    }
    Figure {
        file: "attention_logits.png",
        charts: vec![Chart {
            title: "layer 0's largest attention logit during training (Wortsman et al. Fig. 2)"
                .into(),
            x_label: "training step".into(),
            x_values: Values::Integer,
            y_label: "max attention logit q·k/√d_h (GM over seeds)".into(),
            log_y: true,
            series,
            ..Chart::default()
        }],
        width_each: 760,
        height: 480,
    }
}

/// `model_update.png`: the early model update against depth, and over the first steps.
pub(super) fn model_update(report: &DemoReport) -> Figure {
    let placements = [Placement::Post, Placement::DeepNorm];
    let against_depth = Chart {
        title: "‖ΔF‖ after the first step against depth (DeepNet Fig. 5)".into(),
        x_label: "depth N (layers)".into(),
        x_values: Values::Integer,
        x_ticks: Some(
            super::deepnet::last_update_profile(report, Placement::Post)
                .iter()
                .map(|&(n, _)| n)
                .collect(),
        ),
        y_label: "‖ΔF‖ (GM over seeds)".into(),
        log_x: true,
        log_y: true,
        series: placements
            .iter()
            .enumerate()
            .map(|(i, &p)| Series {
                label: format!("{p}"),
                points: super::deepnet::last_update_profile(report, p),
                color: i,
                dashed: false,
            })
            .collect(),
        ..Chart::default()
    };
    let over_steps = Chart {
        title: "‖ΔF‖ over the first steps (solid Post-LN, dashed DeepNorm)".into(),
        x_label: "training step".into(),
        x_values: Values::Integer,
        y_label: "‖ΔF‖ (GM over seeds)".into(),
        log_y: true,
        series: placements
            .iter()
            .flat_map(|&p| {
                super::deepnet::update_curves(report, p)
                    .into_iter()
                    .enumerate()
                    .map(move |(i, (depth, curve))| Series {
                        label: format!("{p} N={depth}"),
                        points: curve
                            .into_iter()
                            .enumerate()
                            .map(|(t, u)| ((t + 1) as f64, u))
                            .collect(),
                        color: i,
                        dashed: p == Placement::DeepNorm,
                    })
            })
            .collect(),
        ..Chart::default()
    };
    Figure {
        file: "model_update.png",
        charts: vec![against_depth, over_steps, sgd_against_depth(report)],
        width_each: 640,
        height: 440,
    }
}

/// `model_update.png`'s third panel: ‖ΔF‖/η after one SGD step against depth, Post-LN
/// and DeepNorm, one line per step length s (dashed: the larger).
fn sgd_against_depth(report: &DemoReport) -> Chart {
    let lengths = &report.config.model_update.sgd_step_lengths;
    let smallest = lengths.iter().copied().fold(f64::INFINITY, f64::min);
    let series = [Placement::Post, Placement::DeepNorm]
        .iter()
        .enumerate()
        .flat_map(|(i, &p)| {
            lengths.iter().enumerate().map(move |(k, &s)| Series {
                label: format!("{p} s={s:e}"),
                points: super::deepnet::sgd_profile(report, p, k),
                color: i,
                dashed: s != smallest,
            })
        })
        .collect();
    Chart {
        title: "‖ΔF‖/η after ONE SGD step against depth (DeepNet §4.3)".into(),
        x_label: "depth N (layers)".into(),
        x_values: Values::Integer,
        x_ticks: Some(
            report
                .config
                .model_update
                .depths
                .iter()
                .map(|&n| n as f64)
                .collect(),
        ),
        y_label: "‖ΔF‖/η (GM over seeds)".into(),
        log_x: true,
        log_y: true,
        series,
        ..Chart::default()
    }
}
