//! Training one configuration: AdamW with warm-up and cosine decay, optional global-norm
//! clipping, per-step metrics, atomic checkpoints, exact resume, and a clean stop on
//! divergence.
//!
//! ```text
//! for s in start..S:
//!     batch_s  = task.training_batch(seed, s)            (a resumed run sees the same data)
//!     loss_s   = masked_cross_entropy(model(batch_s))
//!     g        = ∇loss_s;  stop if loss_s or ‖g‖ is not finite (diverged)
//!     g        ← g · min(1, c/‖g‖)                        (with --grad-clip c)
//!     θ        ← AdamW(θ, g, lr(s))
//! ```
//!
//! Files in the run directory:
//! - `config.json`: the [`TrainConfig`], everything needed to rerun;
//! - `metrics.csv`: one row per step (step, lr, loss, grad_norm, validation metrics every
//!   `eval_every` steps, per-layer gradient norms, residual RMS and attention maxima every
//!   `stats_every` steps);
//! - `checkpoints/step-NNNNNN/` and `checkpoint.json` (the index, replaced atomically);
//! - `summary.json`: the [`TrainSummary`].
//!
//! One concept per file: [`config`] (what to train), [`summary`] (what came out),
//! [`metrics`] (`metrics.csv`), [`checkpoint`] (saving and resuming), [`run`] (the loop),
//! [`qk_gain`] (the QK norms' γ, recorded with each evaluation).
//!
//! # Shapes
//! Batches are `[batch_size, 2n + 1]` token ids; the model returns `[batch, 2n + 1, vocab]`.

pub mod checkpoint;
pub mod config;
pub mod gradients;
pub mod loss;
pub mod metrics;
pub mod qk_gain;
pub mod run;
pub mod schedule;
pub mod seeded;
pub mod summary;

pub use config::{TrainConfig, TrainOptions};
pub use run::{run_files, train};
pub use summary::{Divergence, Evaluation, TrainSummary};
