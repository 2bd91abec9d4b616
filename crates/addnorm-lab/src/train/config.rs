//! What defines a training run ([`TrainConfig`], saved as `config.json`) and how to run it
//! ([`TrainOptions`]).
//!
//! ```text
//! lr(s)   warm-up then cosine decay to peak · final_lr_fraction (crate::schedule)
//! batch   [batch_size, 2n + 1] token ids of task, seeded by (seed, step)
//! ```
//!
//! # Shapes
//! Not applicable: configuration.

use addnorm::backend::Kind;
use addnorm::nn::TransformerStackConfig;
use serde::{Deserialize, Serialize};

use crate::schedule::WarmupCosine;
use crate::task::Task;

/// Everything that defines a training run. Saved as `config.json`.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct TrainConfig {
    /// The toy task.
    pub task: Task,
    /// The model (placement, norm, depth, width...). Its vocabulary and maximum length are
    /// set from the task by [`TrainConfig::new`].
    pub model: TransformerStackConfig,
    /// Peak learning rate.
    pub learning_rate: f64,
    /// Linear warm-up steps.
    pub warmup_steps: usize,
    /// Total optimizer steps.
    pub steps: usize,
    /// Sequences per batch.
    pub batch_size: usize,
    /// AdamW's decoupled weight decay (0 gives Adam).
    pub weight_decay: f64,
    /// Clip the global gradient norm to this value, if set.
    pub grad_clip: Option<f64>,
    /// The seed of the initialization, the data and dropout.
    pub seed: u64,
    /// Evaluate on the validation set every this many steps (and at the end).
    pub eval_every: usize,
    /// Record per-layer gradient norms and residual RMS every this many steps.
    pub stats_every: usize,
    /// Write a checkpoint every this many steps (and at the end).
    pub checkpoint_every: usize,
    /// Validation sequences.
    pub validation_size: usize,
    /// The final learning rate, as a fraction of the peak.
    pub final_lr_fraction: f64,
    /// The backend it ran on (informative).
    #[serde(with = "crate::dispatch::kind_by_name")]
    pub backend: Kind,
}

impl TrainConfig {
    /// A run of `task` with `model`, fitting the model's vocabulary and length to the task,
    /// with the lab's defaults for everything else (LR 1e-3, 100 warm-up steps, 500 steps,
    /// batch 32, no weight decay, no clipping, seed 0).
    pub fn new(task: Task, model: TransformerStackConfig) -> Self {
        let model = model
            .with_vocab_size(task.vocab_size())
            .with_max_seq_len(task.seq_len());
        Self {
            task,
            model,
            learning_rate: 1e-3,
            warmup_steps: 100,
            steps: 500,
            batch_size: 32,
            weight_decay: 0.0,
            grad_clip: None,
            seed: 0,
            eval_every: 50,
            stats_every: 50,
            checkpoint_every: 100,
            validation_size: 256,
            final_lr_fraction: 0.1,
            backend: addnorm::backend::PREFERRED,
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
