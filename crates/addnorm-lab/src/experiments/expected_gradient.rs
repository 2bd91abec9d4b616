//! Xiong et al. 2020, Fig. 3 as published: the Frobenius norm of the *expected* gradient of
//! each feed-forward weight, per layer, at initialization.
//!
//! ```text
//! G_l(W) = ‖ (1/K) Σ_{k=1..K} ∂L_k/∂W^{(l)} ‖_F      W ∈ {W₁, W₂}, l = 1..L
//! L_k    the masked cross-entropy of batch k (K independent batches of one seed's data)
//! ```
//!
//! Unlike [`crate::experiments::probe`] (one batch, W^Q = W^K = 0, the setting of Theorem 1), the
//! model keeps its Xavier W^Q and W^K, as the paper's Fig. 3 does. Trend statistics over
//! seeds live in [`crate::study::claims`].
//!
//! Every batch scores the same number of positions, so the gradient of the loss over a
//! union of g batches is the mean of their g gradients: the K batches go through the model
//! in unions of at most [`UNION_SEQUENCES`] sequences (the same sequences, the same sum up
//! to rounding), which at d = 512 takes a fifth less time than one pass per batch.
//!
//! # Shapes
//! Each of the K batches is `[batch_size, 2n + 1]`, a union of g of them
//! `[g·batch_size, 2n + 1]`; a run yields `L` values per weight.

use addnorm::NormAutodiffBackend;
use addnorm::nn::{Placement, TransformerStack, TransformerStackConfig};
use burn::config::Config;
use burn::module::{Module, Param};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{ElementConversion, Tensor};
use serde::{Deserialize, Serialize};

use crate::experiments::norm_kind::NormKind;

use crate::experiments::model::ModelConfig;
use crate::experiments::task::{Batch, Task};
use crate::experiments::train::loss::masked_cross_entropy;
use crate::runner::jobs::JobPlan;

/// What to measure, a Burn [`Config`]. Saved in the demo's `figure_3.json` config.
#[derive(Config, Debug)]
pub struct ExpectedGradientConfig {
    /// The task whose batches are drawn.
    pub task: Task,
    /// The model of every cell (each cell sets its placement and depth; the paper keeps
    /// Xavier W^Q and W^K) and the backend.
    pub model: ModelConfig,
    /// Placements compared. Default: Post-LN and Pre-LN (the paper's)
    #[config(default = "vec![Placement::Post, Placement::Pre]")]
    pub placements: Vec<Placement>,
    /// The norm of every placement. Default: LayerNorm
    #[config(default = "NormKind::Layer")]
    pub norm: NormKind,
    /// Depths L. Default: 6 (the paper's)
    #[config(default = "vec![6]")]
    pub depths: Vec<usize>,
    /// Seeds. Default: 0 to 9 (the paper's 10)
    #[config(default = "(0..10).collect()")]
    pub seeds: Vec<u64>,
    /// K, the batches averaged per seed. Default: 32
    #[config(default = 32)]
    pub batches: usize,
    /// Sequences per batch. Default: 16
    #[config(default = 16)]
    pub batch_size: usize,
}

impl ExpectedGradientConfig {
    /// The model at `depth` for `placement`, fitted to the task.
    pub fn cell_model(&self, placement: Placement, depth: usize) -> TransformerStackConfig {
        self.task
            .fit(self.model.cell(placement, self.norm, depth).stack)
    }

    /// Every (placement, depth, seed), in report order.
    pub fn cells(&self) -> Vec<(Placement, usize, u64)> {
        self.placements
            .iter()
            .flat_map(|&p| {
                self.depths
                    .iter()
                    .flat_map(move |&d| self.seeds.iter().map(move |&s| (p, d, s)))
            })
            .collect()
    }
}

/// One seed's per-layer norms of the expected gradient.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ExpectedGradientRun {
    /// The placement.
    pub placement: Placement,
    /// L.
    pub depth: usize,
    /// The seed.
    pub seed: u64,
    /// G_l(W₁) for l = 1..L.
    pub w_1: Vec<f64>,
    /// G_l(W₂) for l = 1..L.
    pub w_2: Vec<f64>,
}

/// The two feed-forward weights of every block, in layer order: `[W₁⁽¹⁾, W₂⁽¹⁾, W₁⁽²⁾, …]`.
fn ffn_weights<B: AutodiffBackend>(model: &TransformerStack<B>) -> Vec<&Param<Tensor<B, 2>>> {
    model
        .blocks
        .iter()
        .flat_map(|b| [&b.feed_forward.inner.weight, &b.feed_forward.outer.weight])
        .collect()
}

/// `model` with autodiff tracking the FFN weights only: every other parameter is left out
/// ([`Module::no_grad`]), so the backward skips their weight gradients (the attention's
/// `dW`, about a sixth of a backward's multiply-adds) and the first block's attention. The
/// FFN weights' gradients are the same numbers: the same ops carry `dx` down the stack.
pub fn track_ffn_weights_only<B: AutodiffBackend>(
    model: TransformerStack<B>,
) -> TransformerStack<B> {
    let mut model = model.no_grad();
    for block in &mut model.blocks {
        let ffn = &mut block.feed_forward;
        ffn.inner.weight = ffn.inner.weight.clone().set_require_grad(true);
        ffn.outer.weight = ffn.outer.weight.clone().set_require_grad(true);
    }
    model
}

/// Batches are measured in unions of at most this many sequences: one forward and backward
/// over a union costs less than one per batch (at d = 512, the weights are packed for the
/// GEMM once per union instead of once per batch), and the cap bounds the activations kept
/// for the backward (about 150 MB at d = 512, L = 6). A constant, so that the groups, and
/// with them the bits, do not depend on the machine.
pub const UNION_SEQUENCES: usize = 128;

/// The summed gradients of the FFN weights over `batches` batches drawn for `seed`
/// (starting at batch `first`), on the inner backend: `Σ_k ∂L_k/∂W`.
///
/// Every batch scores the same number of positions, so the gradient of the masked
/// cross-entropy over a union of `g` batches is the mean of their `g` gradients; each union
/// of at most [`UNION_SEQUENCES`] sequences contributes `g` times its gradient.
pub fn summed_ffn_gradients<B: NormAutodiffBackend>(
    model: &TransformerStack<B>,
    task: &Task,
    (seed, first, batches, batch_size): (u64, usize, usize, usize),
    device: &B::Device,
) -> Vec<Tensor<B::InnerBackend, 2>> {
    let weights = ffn_weights(model);
    let mut sums: Vec<Option<Tensor<B::InnerBackend, 2>>> = vec![None; weights.len()];
    let per_union = (UNION_SEQUENCES / batch_size.max(1)).max(1);
    let ks: Vec<usize> = (first..first + batches).collect();
    for group in ks.chunks(per_union) {
        let parts: Vec<Batch> = group
            .iter()
            .map(|&k| task.training_batch(seed, k, batch_size))
            .collect();
        let (inputs, targets, mask) = Batch::concat(&parts).to_tensors::<B>(device);
        let grads = masked_cross_entropy(model.forward(inputs), targets, mask).backward();
        for (sum, w) in sums.iter_mut().zip(&weights) {
            // g times the union's mean gradient: the sum of its g batch gradients.
            let g = w
                .grad(&grads)
                .unwrap_or_else(|| w.val().inner().zeros_like())
                * group.len() as f64;
            *sum = Some(match sum.take() {
                Some(s) => s + g,
                None => g,
            });
        }
    }
    sums.into_iter().flatten().collect()
}

/// Measures one (placement, depth, seed) cell.
pub fn expected_gradient_one<B: NormAutodiffBackend>(
    config: &ExpectedGradientConfig,
    (placement, depth, seed): (Placement, usize, u64),
    device: &B::Device,
) -> ExpectedGradientRun {
    let model: TransformerStack<B> =
        track_ffn_weights_only(crate::experiments::train::seeded::init_model(
            &config.cell_model(placement, depth),
            seed,
            device,
        ));
    let k = config.batches.max(1);
    let sums = summed_ffn_gradients(
        &model,
        &config.task,
        (seed, 0, k, config.batch_size),
        device,
    );
    let norms: Vec<f64> = sums
        .into_iter()
        .map(|s| {
            (s / k as f64)
                .square()
                .sum()
                .sqrt()
                .into_scalar()
                .elem::<f64>()
        })
        .collect();
    ExpectedGradientRun {
        placement,
        depth,
        seed,
        w_1: norms.iter().step_by(2).copied().collect(),
        w_2: norms.iter().skip(1).step_by(2).copied().collect(),
    }
}

/// Measures every cell, `plan.jobs` at a time, with a progress bar named `label`.
pub fn expected_gradients<B: NormAutodiffBackend>(
    config: &ExpectedGradientConfig,
    label: &str,
    progress: bool,
    plan: JobPlan,
    device: &B::Device,
) -> Vec<ExpectedGradientRun> {
    crate::runner::jobs::run_jobs_with_bar(
        &config.cells(),
        plan,
        (label, progress),
        |c| format!("{} L={} seed {}", c.0, c.1, c.2),
        |&cell| expected_gradient_one::<B>(config, cell, device),
    )
}
