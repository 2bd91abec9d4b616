//! Measuring a probe: one cell's gradients at initialization ([`probe_one`]), the cells of
//! a grid at once ([`probe_pairs`]), and the log-log slopes over depth ([`fit_slopes`]).
//!
//! ```text
//! last_ffn_grad_norm = ‖∂L/∂W₂^{(L)}‖_F of one batch at initialization
//! slope              least squares of ln(GM over seeds) against ln(L)
//! ```
//!
//! # Shapes
//! Each run uses one `[batch, 2n + 1]` batch.

use std::path::Path;

use addnorm::NormAutodiffBackend;
use addnorm::nn::Placement;
use burn::tensor::ElementConversion;

use super::config::ProbeConfig;
use super::record::{LayerGradients, ProbeReport, ProbeResult, SlopeFit};
use crate::error::{LabError, write_json};
use crate::experiments::norm_kind::NormKind;
use crate::experiments::train::gradients::layer_gradient_norms;
use crate::experiments::train::loss::masked_cross_entropy;
use crate::stats::fit::log_log_slope;

/// Runs one cell of the grid.
pub fn probe_one<B>(
    config: &ProbeConfig,
    placement: Placement,
    norm: NormKind,
    depth: usize,
    seed: u64,
    device: &B::Device,
) -> ProbeResult
where
    B: NormAutodiffBackend,
{
    let model = crate::experiments::train::seeded::init_model::<B>(
        &config.cell_model(placement, norm, depth),
        seed,
        device,
    );
    let batch = config.task.training_batch(seed, 0, config.batch_size);
    let (inputs, targets, mask) = batch.to_tensors::<B>(device);
    let (logits, stats) = model.forward_with_stats(inputs);
    let loss = masked_cross_entropy(logits, targets, mask);
    let loss_value: f64 = loss.clone().into_scalar().elem();
    let grads = loss.backward();
    let norms = layer_gradient_norms(&model, &grads);
    let column = |c: usize| norms.iter().map(|row| row[c]).collect::<Vec<f64>>();
    ProbeResult {
        placement,
        norm,
        depth,
        seed,
        loss: loss_value,
        last_ffn_grad_norm: norms.last().map_or(0.0, |row| row[5]),
        grad_norms: LayerGradients {
            w_q: column(0),
            w_k: column(1),
            w_v: column(2),
            w_o: column(3),
            w_1: column(4),
            w_2: column(5),
        },
        residual_mean_square: stats.residual_rms.iter().map(|r| r * r).collect(),
        residual_rms: stats.residual_rms,
    }
}

/// Fits the slopes of every (placement, norm) pair in `results`.
pub fn fit_slopes(config: &ProbeConfig, results: &[ProbeResult]) -> Vec<SlopeFit> {
    let mut fits = vec![];
    for placement in &config.placements {
        for norm in &config.norms {
            let points: Vec<(usize, f64)> = config
                .depths
                .iter()
                .filter_map(|&depth| {
                    let logs: Vec<f64> = results
                        .iter()
                        .filter(|r| {
                            r.placement == *placement
                                && r.norm == *norm
                                && r.depth == depth
                                && r.last_ffn_grad_norm > 0.0
                        })
                        .map(|r| r.last_ffn_grad_norm.ln())
                        .collect();
                    (!logs.is_empty())
                        .then(|| (depth, (logs.iter().sum::<f64>() / logs.len() as f64).exp()))
                })
                .collect();
            if points.len() >= 2 {
                let xy: Vec<(f64, f64)> = points.iter().map(|&(d, g)| (d as f64, g)).collect();
                fits.push(SlopeFit {
                    placement: *placement,
                    norm: *norm,
                    slope: log_log_slope(&xy),
                    points,
                });
            }
        }
    }
    fits
}

/// Runs `pairs` × depths × seeds on the configured model, `plan.jobs` cells at a time, and
/// fits the slopes. `label` names the progress bar.
pub fn probe_pairs<B>(
    config: &ProbeConfig,
    pairs: &[(Placement, NormKind)],
    label: &str,
    progress: bool,
    plan: crate::runner::jobs::JobPlan,
    device: &B::Device,
) -> ProbeReport
where
    B: NormAutodiffBackend,
{
    let cells: Vec<(Placement, NormKind, usize, u64)> = pairs
        .iter()
        .flat_map(|&(p, n)| {
            config
                .depths
                .iter()
                .flat_map(move |&d| config.seeds.iter().map(move |&s| (p, n, d, s)))
        })
        .collect();
    let results = crate::runner::jobs::run_jobs_with_bar(
        &cells,
        plan,
        (label, progress),
        |&(p, n, d, s)| format!("{p}-{} L={d} seed {s}", n.name()),
        |&(placement, norm, depth, seed)| {
            probe_one::<B>(config, placement, norm, depth, seed, device)
        },
    );
    ProbeReport {
        slopes: fit_slopes(config, &results),
        config: config.clone(),
        results,
    }
}

/// Runs every placement × norm of the grid, writes `probe.json` into `out` (if given), and returns the report.
///
/// # Errors
/// If `out` cannot be written.
pub fn probe<B>(
    config: &ProbeConfig,
    out: Option<&Path>,
    progress: bool,
    device: &B::Device,
) -> Result<ProbeReport, LabError>
where
    B: NormAutodiffBackend,
{
    let pairs = config.pairs();
    let plan = crate::runner::jobs::JobPlan::new(None, None, config.model.backend);
    let report = probe_pairs::<B>(config, &pairs, "probe", progress, plan, device);
    if let Some(out) = out {
        std::fs::create_dir_all(out).map_err(|e| LabError::io(out, e))?;
        write_json(&out.join("probe.json"), &report)?;
    }
    Ok(report)
}
