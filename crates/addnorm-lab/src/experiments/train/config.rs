//! What defines a training run ([`TrainConfig`], saved as `config.json`) and how to run it
//! ([`TrainOptions`]).
//!
//! ```text
//! lr(s)   warm-up then cosine decay to peak · final_lr_fraction (crate::experiments::train::schedule)
//! batch   [batch_size, 2n + 1] token ids of task, seeded by (seed, step)
//! loss    masked cross-entropy + z_loss · mean(log² Z)          (crate::experiments::train::loss)
//! AdamW   β = (0.9, beta_2), ε = 1e-8; θ ← θ − lr(s)·λ'·θ − lr(s)·Δ, where
//!         λ' = λ (Burn's coupled decay) or λ / lr_peak (independent decay)
//! ```
//!
//! # Shapes
//! Not applicable: configuration.

use burn::config::Config;

use super::schedule::WarmupCosine;
use crate::experiments::model::ModelConfig;
use crate::experiments::task::Task;

/// Everything that defines a training run, a Burn [`Config`] saved as `config.json`.
/// Build it with [`TrainConfig::for_task`], which fits the model to the task, then the
/// `with_*` setters.
#[derive(Config, Debug)]
pub struct TrainConfig {
    /// The toy task.
    pub task: Task,
    /// The model (placement, norm, depth, width...) and its backend.
    /// [`TrainConfig::for_task`] sets its vocabulary and maximum length from the task.
    pub model: ModelConfig,
    /// Peak learning rate. Default: 1e-3
    #[config(default = 1e-3)]
    pub learning_rate: f64,
    /// Linear warm-up steps. Default: 100
    #[config(default = 100)]
    pub warmup_steps: usize,
    /// Total optimizer steps. Default: 500
    #[config(default = 500)]
    pub steps: usize,
    /// Sequences per batch. Default: 32
    #[config(default = 32)]
    pub batch_size: usize,
    /// AdamW's decoupled weight decay λ (0 gives Adam). Default: 0
    #[config(default = 0.0)]
    pub weight_decay: f64,
    /// Decay by `λ · lr(s)/lr_peak` per step (Wortsman et al. 2023's *independent* decay)
    /// instead of Burn's `λ · lr(s)`. Burn's AdamW multiplies λ by the LR, so this passes
    /// it `λ / lr_peak`. Default: false
    #[config(default = false)]
    pub independent_weight_decay: bool,
    /// AdamW's β₂ (Burn's default 0.999; Wortsman et al. 2023 use 0.95). Default: 0.999
    #[config(default = 0.999)]
    pub beta_2: f64,
    /// The z-loss coefficient c: the objective adds `c · mean(log² Z)` over the scored
    /// positions (Wortsman et al. 2023 use 1e-4). Default: 0
    #[config(default = 0.0)]
    pub z_loss: f64,
    /// Clip the global gradient norm to this value, if set. Default: none
    #[config(default = "None")]
    pub grad_clip: Option<f64>,
    /// The seed of the initialization, the data and dropout. Default: 0
    #[config(default = 0)]
    pub seed: u64,
    /// Evaluate on the validation set every this many steps (and at the end). Default: 50
    #[config(default = 50)]
    pub eval_every: usize,
    /// Record per-layer gradient norms and residual RMS every this many steps. Default: 50
    #[config(default = 50)]
    pub stats_every: usize,
    /// Write a checkpoint every this many steps (and at the end). Default: 100
    #[config(default = 100)]
    pub checkpoint_every: usize,
    /// Validation sequences. Default: 256
    #[config(default = 256)]
    pub validation_size: usize,
    /// The final learning rate, as a fraction of the peak. Default: 0.1
    #[config(default = 0.1)]
    pub final_lr_fraction: f64,
}

impl TrainConfig {
    /// A run of `task` with `model`, the model's vocabulary and maximum length fitted to
    /// the task, and the defaults above for everything else.
    pub fn for_task(task: Task, model: ModelConfig) -> Self {
        let stack = task.fit(model.stack.clone());
        Self::new(task, model.with_stack(stack))
    }

    /// The λ' handed to Burn's AdamW, which decays by `lr(s) · λ'` per step: λ, or
    /// λ / lr_peak for independent decay (a decay of `λ · lr(s)/lr_peak`).
    pub fn burn_weight_decay(&self) -> f64 {
        if self.independent_weight_decay {
            self.weight_decay / self.learning_rate
        } else {
            self.weight_decay
        }
    }

    /// The learning-rate schedule.
    pub fn schedule(&self) -> WarmupCosine {
        WarmupCosine {
            peak: self.learning_rate,
            warmup: self.warmup_steps,
            total: self.steps,
            final_fraction: self.final_lr_fraction,
        }
    }
}

/// How to run (not what to train): resume, show progress, inject a fault.
#[derive(Clone, Debug, Default)]
pub struct TrainOptions {
    /// Continue from the run directory's last checkpoint, if there is one.
    pub resume: bool,
    /// Show a progress bar on standard error.
    pub progress: bool,
    /// Replace the loss of this step by NaN: exercises the divergence path.
    pub inject_nan_at: Option<usize>,
}
