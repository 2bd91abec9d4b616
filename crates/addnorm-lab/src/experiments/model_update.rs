//! DeepNet (Wang et al. 2022), Fig. 5: the model update at the start of training, against
//! depth, for Post-LN and DeepNorm.
//!
//! ```text
//! ‖ΔF‖_t = mean over positions p of ‖F(x, θ_t)_p − F(x, θ₀)_p‖₂
//! F(x, θ)  the features the output head reads (TransformerStack::features)
//! x        a fixed batch (the run's validation set); θ_t the parameters after t steps
//! ```
//!
//! DeepNet's tiny models are 64-128-2 (d, d_ff, heads); DeepNorm scales the residual by
//! α = (2N)^¼ and W^V, W^O, W₁, W₂ at initialization by β = (8N)^−¼. Each run trains with
//! Adam (β = (0.9, 0.98), as DeepNet) at a constant LR without warm-up for `steps` steps.
//!
//! # Shapes
//! `x` is `[batch, 2n + 1]` tokens; F is `[batch, 2n + 1, d_model]`; a run records one
//! ‖ΔF‖ per step.

use addnorm::NormAutodiffBackend;
use addnorm::nn::{Placement, TransformerStack};
use burn::config::Config;
use burn::module::AutodiffModule;
use burn::tensor::{ElementConversion, Int, Tensor};
use serde::{Deserialize, Serialize};

use crate::experiments::model::ModelConfig;
use crate::experiments::task::Task;
use crate::experiments::train::run::{adamw, optimize};
use crate::experiments::train::{TrainConfig, TrainOptions};
use crate::runner::jobs::JobPlan;

/// Experiment D's set-up, a Burn [`Config`]. Part of the demo's `config.json`.
#[derive(Config, Debug)]
pub struct ModelUpdateConfig {
    /// The task trained on.
    pub task: Task,
    /// The model of every cell (each cell sets its placement and depth; DeepNet's tiny
    /// model is d = 64, d_ff = 128, 2 heads, with LayerNorm) and the backend.
    pub model: ModelConfig,
    /// Placements compared. Default: Post-LN and DeepNorm
    #[config(default = "vec![Placement::Post, Placement::DeepNorm]")]
    pub placements: Vec<Placement>,
    /// Depths N. Default: 6, 12, 24, 48, 96
    #[config(default = "vec![6, 12, 24, 48, 96]")]
    pub depths: Vec<usize>,
    /// Seeds. Default: 0, 1, 2
    #[config(default = "vec![0, 1, 2]")]
    pub seeds: Vec<u64>,
    /// The constant learning rate. Default: 1e-4
    #[config(default = 1e-4)]
    pub learning_rate: f64,
    /// Steps recorded. Default: 5
    #[config(default = 5)]
    pub steps: usize,
    /// Sequences per batch, and in x. Default: 8
    #[config(default = 8)]
    pub batch_size: usize,
    /// The step lengths s = ‖Δθ‖ of the one-SGD-step part
    /// ([`crate::experiments::sgd_update`]): each cell steps at η = s / ‖∇L(θ₀)‖ for every s,
    /// from the same θ₀. Default: 3e-4, 1e-4 (on DeepNet's tiny models at N ≤ 96, u at the
    /// two lengths agrees within 3.3%; at 1e-3 against 1e-4, Post-LN's N = 48 and 96 cells
    /// differ by up to 17%)
    #[config(default = "vec![3e-4, 1e-4]")]
    pub sgd_step_lengths: Vec<f64>,
}

impl ModelUpdateConfig {
    /// The training configuration of one (placement, depth, seed).
    pub fn train_config(&self, placement: Placement, depth: usize, seed: u64) -> TrainConfig {
        let model = self.model.placed(placement, depth);
        TrainConfig::for_task(self.task, model)
            .with_learning_rate(self.learning_rate)
            .with_warmup_steps(0)
            .with_final_lr_fraction(1.0)
            .with_beta_2(0.98)
            .with_steps(self.steps)
            .with_batch_size(self.batch_size)
            .with_seed(seed)
            .with_stats_every(0)
    }

    /// Every (placement, depth, seed), deepest first (so that the longest cells start
    /// first when several run at once).
    pub fn cells(&self) -> Vec<(Placement, usize, u64)> {
        let mut cells: Vec<(Placement, usize, u64)> = self
            .placements
            .iter()
            .flat_map(|&p| {
                self.depths
                    .iter()
                    .flat_map(move |&d| self.seeds.iter().map(move |&s| (p, d, s)))
            })
            .collect();
        cells.sort_by_key(|c| std::cmp::Reverse(c.1));
        cells
    }
}

/// One run's model updates.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ModelUpdateRun {
    /// The placement.
    pub placement: Placement,
    /// N.
    pub depth: usize,
    /// The seed.
    pub seed: u64,
    /// ‖ΔF‖ after steps 1..=steps (NaN from a non-finite step on).
    pub updates: Vec<f64>,
}

impl ModelUpdateRun {
    /// ‖ΔF‖ after the first step: the update "at the very beginning of training" that
    /// DeepNet finds exploding for Post-LN.
    pub fn first(&self) -> f64 {
        self.updates.first().copied().unwrap_or(f64::NAN)
    }

    /// ‖ΔF‖ after the last step.
    pub fn last(&self) -> f64 {
        self.updates.last().copied().unwrap_or(f64::NAN)
    }
}

/// ‖F(x, θ) − F(x, θ₀)‖ averaged over positions, given F(x, θ₀) as `f0`.
pub(crate) fn update_size<B: NormAutodiffBackend>(
    model: &TransformerStack<B>,
    x: Tensor<B::InnerBackend, 2, Int>,
    f0: &Tensor<B::InnerBackend, 3>,
) -> f64 {
    let f = model.valid().features(x);
    let per_position = (f - f0.clone()).square().sum_dim(2).sqrt();
    per_position.mean().into_scalar().elem()
}

/// Trains one cell for `config.steps` steps and records ‖ΔF‖ after each.
pub fn model_update_one<B: NormAutodiffBackend>(
    config: &ModelUpdateConfig,
    (placement, depth, seed): (Placement, usize, u64),
    device: &B::Device,
) -> ModelUpdateRun {
    let tc = config.train_config(placement, depth, seed);
    let mut model: TransformerStack<B> =
        crate::experiments::train::seeded::init_model(&tc.model.stack, seed, device);
    let mut optimizer = adamw::<B>(&tc);
    let inner = model.valid().head.weight.device();
    let (x, _, _) = tc
        .task
        .validation_set(seed, config.batch_size)
        .to_tensors::<B::InnerBackend>(&inner);
    let f0 = model.valid().features(x.clone());
    let mut updates = Vec::with_capacity(config.steps);
    let (options, schedule) = (TrainOptions::default(), tc.schedule());
    for step in 0..config.steps {
        let lr = schedule.at(step);
        let (next, measured) = optimize(model, &mut optimizer, &tc, &options, (step, lr), device);
        model = next;
        if measured.is_err() {
            updates.resize(config.steps, f64::NAN);
            break;
        }
        updates.push(update_size(&model, x.clone(), &f0));
    }
    ModelUpdateRun {
        placement,
        depth,
        seed,
        updates,
    }
}

/// Runs every cell, `plan.jobs` at a time, with a progress bar named `label`; the runs come
/// back in [`ModelUpdateConfig::cells`] order.
pub fn model_updates<B: NormAutodiffBackend>(
    config: &ModelUpdateConfig,
    label: &str,
    progress: bool,
    plan: JobPlan,
    device: &B::Device,
) -> Vec<ModelUpdateRun> {
    crate::runner::jobs::run_jobs_with_bar(
        &config.cells(),
        plan,
        (label, progress),
        |c| format!("{} N={} seed {}", c.0, c.1, c.2),
        |&cell| model_update_one::<B>(config, cell, device),
    )
}
