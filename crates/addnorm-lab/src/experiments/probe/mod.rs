//! Experiment A: gradients at initialization, with no training (Xiong et al. 2020, §3).
//!
//! For every placement × norm × depth × seed: build the model (W^Q = W^K = 0 by default, the
//! theory's setting), take one batch, and record
//!
//! ```text
//! ‖∂L/∂W‖_F          for W ∈ {W^Q, W^K, W^V, W^O, W₁, W₂} of every layer
//! last_ffn_grad_norm = ‖∂L/∂W₂^{(L)}‖_F       (the last layer's second FFN weight)
//! residual RMS       √(E x_l²) of the residual stream, l = 0..L
//! slope              least squares of ln(last_ffn_grad_norm) against ln(L)
//! ```
//!
//! Theorem 1 predicts a slope ≈ 0 for Post-LN and ≈ −½ for Pre-LN; Lemma 2 bounds Pre-LN's
//! residual growth by 1 + l/2 ≤ E‖x_l‖²/d ≤ 1 + 3l/2.
//!
//! # Shapes
//! Each run uses one `[batch, 2n + 1]` batch; per-layer arrays have L entries (L + 1 for the
//! residual RMS).

use std::path::Path;

use addnorm::NormAutodiffBackend;
use addnorm::backend::Kind;
use addnorm::nn::{Activation, Placement, TransformerStackConfig};
use burn::tensor::ElementConversion;
use serde::{Deserialize, Serialize};

use crate::error::{LabError, write_json};
use crate::gradients::layer_gradient_norms;
use crate::grid::{NormKind, log_log_slope, stack_config};
use crate::loss::masked_cross_entropy;
use crate::task::Task;

/// The grid and model of a probe. Saved in `probe.json`.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct ProbeConfig {
    /// The task whose first batch is used.
    pub task: Task,
    /// Placements to compare.
    pub placements: Vec<Placement>,
    /// Norms to compare.
    pub norms: Vec<NormKind>,
    /// Depths L.
    pub depths: Vec<usize>,
    /// Seeds per cell.
    pub seeds: Vec<u64>,
    /// Model width d.
    pub d_model: usize,
    /// Attention heads.
    pub n_heads: usize,
    /// Feed-forward width.
    pub d_ff: usize,
    /// Sequences in the batch.
    pub batch_size: usize,
    /// Start W^Q and W^K at zero (the theory's setting).
    pub zero_init_query_key: bool,
    /// The feed-forward nonlinearity (Lemma 2 assumes ReLU). Default: GELU.
    #[serde(default)]
    pub activation: Activation,
    /// The backend it ran on (informative).
    pub backend: Kind,
}

impl ProbeConfig {
    /// Every (placement, norm) pair of the grid.
    pub fn pairs(&self) -> Vec<(Placement, NormKind)> {
        self.placements
            .iter()
            .flat_map(|&p| self.norms.iter().map(move |&n| (p, n)))
            .collect()
    }

    /// The model of one grid cell.
    pub fn model(
        &self,
        placement: Placement,
        norm: NormKind,
        depth: usize,
    ) -> TransformerStackConfig {
        self.task
            .fit(stack_config(
                self.d_model,
                self.n_heads,
                self.d_ff,
                depth,
                placement,
                norm,
            ))
            .with_zero_init_query_key(self.zero_init_query_key)
            .with_activation(self.activation)
    }
}

/// Per-layer gradient norms of one run, one array per weight (index l − 1 is layer l).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct LayerGradients {
    /// ‖∂L/∂W^Q‖_F per layer.
    pub w_q: Vec<f64>,
    /// ‖∂L/∂W^K‖_F per layer.
    pub w_k: Vec<f64>,
    /// ‖∂L/∂W^V‖_F per layer.
    pub w_v: Vec<f64>,
    /// ‖∂L/∂W^O‖_F per layer.
    pub w_o: Vec<f64>,
    /// ‖∂L/∂W₁‖_F per layer.
    pub w_1: Vec<f64>,
    /// ‖∂L/∂W₂‖_F per layer.
    pub w_2: Vec<f64>,
}

/// One probe run.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ProbeResult {
    /// `post`, `pre`, `peri`, `deepnorm`, `rezero` or `none`.
    pub placement: Placement,
    /// `layer`, `rms`, `dyt` or `identity`.
    pub norm: NormKind,
    /// L.
    pub depth: usize,
    /// The seed.
    pub seed: u64,
    /// The loss of the batch at initialization.
    pub loss: f64,
    /// ‖∂L/∂W₂^{(L)}‖_F.
    pub last_ffn_grad_norm: f64,
    /// Per-layer gradient norms.
    pub grad_norms: LayerGradients,
    /// √(E x_l²) for l = 0..L.
    pub residual_rms: Vec<f64>,
    /// E‖x_l‖²/d = residual_rms², for comparison with Lemma 2.
    pub residual_mean_square: Vec<f64>,
}

/// The fitted log-log slope of one (placement, norm) pair.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SlopeFit {
    /// The placement name.
    pub placement: Placement,
    /// The norm name.
    pub norm: NormKind,
    /// The slope of ln(last_ffn_grad_norm) against ln(depth), over the seeds' geometric means.
    pub slope: f64,
    /// (depth, geometric mean over seeds of last_ffn_grad_norm).
    pub points: Vec<(usize, f64)>,
}

/// The whole probe: what `probe.json` holds.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct ProbeReport {
    /// The grid.
    pub config: ProbeConfig,
    /// One element per run.
    pub results: Vec<ProbeResult>,
    /// One slope per (placement, norm).
    pub slopes: Vec<SlopeFit>,
}

impl ProbeReport {
    /// The slope fitted for `placement` and `norm`, if it was probed.
    pub fn slope(&self, placement: Placement, norm: NormKind) -> Option<f64> {
        self.slopes
            .iter()
            .find(|s| s.placement == placement && s.norm == norm)
            .map(|s| s.slope)
    }
}

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
    let model = crate::seeded::init_model::<B>(&config.model(placement, norm, depth), seed, device);
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
    plan: crate::jobs::JobPlan,
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
    let results = crate::jobs::run_jobs_with_bar(
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
    let plan = crate::jobs::JobPlan::new(None, None, config.backend);
    let report = probe_pairs::<B>(config, &pairs, "probe", progress, plan, device);
    if let Some(out) = out {
        std::fs::create_dir_all(out).map_err(|e| LabError::io(out, e))?;
        write_json(&out.join("probe.json"), &report)?;
    }
    Ok(report)
}
