//! What a run produced: validation [`Evaluation`]s, a [`Divergence`] if it stopped early,
//! and the [`TrainSummary`] saved as `summary.json`.
//!
//! # Shapes
//! Not applicable: serialized records.

use serde::{Deserialize, Serialize};

use super::loss::Accuracy;

/// Validation metrics.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// The step after which it was measured (number of optimizer steps taken).
    pub step: usize,
    /// Validation loss.
    pub loss: f64,
    /// Validation accuracy.
    pub accuracy: Accuracy,
    /// The mean log-partition log Z of the output logits over the scored positions.
    #[serde(default)]
    pub log_z: f64,
    /// The largest attention logit of any layer on the validation batch.
    #[serde(default)]
    pub max_attention_logit: f64,
    /// The largest attention logit of each layer, layer 0 first (empty in runs recorded
    /// before it existed).
    #[serde(default)]
    pub attention_logits: Vec<f64>,
    /// rms(γ_Q)·rms(γ_K) of each layer's QK norms (super::qk_gain); empty without QK norms
    /// and in runs recorded before it existed.
    #[serde(default)]
    pub qk_gain: Vec<f64>,
    /// `√(mean(x_l²))` of the residual stream on the validation batch: the embeddings x₀,
    /// then each block's output (N + 1 values; empty in runs recorded before it existed).
    #[serde(default)]
    pub residual_rms: Vec<f64>,
}

impl Evaluation {
    /// Layer 0's largest attention logit, the one Wortsman et al. 2023 plot (NaN if not
    /// recorded).
    pub fn layer_0_logit(&self) -> f64 {
        self.attention_logits.first().copied().unwrap_or(f64::NAN)
    }
}

/// Why a run stopped early.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Divergence {
    /// The step at which a non-finite value appeared.
    pub step: usize,
    /// What was not finite.
    pub reason: String,
    /// The step of the last good checkpoint kept on disk, if any.
    pub last_checkpoint: Option<usize>,
}

/// The outcome of a run. Saved as `summary.json`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct TrainSummary {
    /// Optimizer steps completed.
    pub steps_completed: usize,
    /// Set when the run stopped on a non-finite loss or gradient.
    pub diverged: Option<Divergence>,
    /// The validation metrics of the initial model (step 0): ℓ₀ of the LR sensitivity.
    #[serde(default)]
    pub initial_evaluation: Option<Evaluation>,
    /// Every validation evaluation after a step, in order.
    pub evaluations: Vec<Evaluation>,
    /// The first evaluated step with ≥ 99% exact-sequence accuracy.
    pub steps_to_99_exact: Option<usize>,
    /// The training loss of every completed step.
    pub losses: Vec<f64>,
    /// The global gradient norm of every completed step, before clipping (empty in runs
    /// recorded before it existed).
    #[serde(default)]
    pub grad_norms: Vec<f64>,
    /// Wall-clock seconds of this invocation's steps.
    pub wall_seconds: f64,
    /// Steps per second of this invocation.
    pub steps_per_second: f64,
}

impl TrainSummary {
    /// The last evaluation, if any.
    pub fn final_evaluation(&self) -> Option<&Evaluation> {
        self.evaluations.last()
    }
}
