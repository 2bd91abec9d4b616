//! What a sweep measured: one [`SweepRun`] per run, the aggregates per cell and per
//! configuration, and the [`SweepReport`] that `sweep.json` holds.
//!
//! # Shapes
//! Per-step arrays have one entry per optimizer step.

use addnorm::nn::Placement;
use serde::{Deserialize, Serialize};

use super::config::SweepConfig;
use crate::experiments::norm_kind::NormKind;
use crate::experiments::train::summary::Evaluation;
use crate::stats::sensitivity::RunLoss;

/// One run of the grid.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SweepRun {
    /// The placement name.
    pub placement: Placement,
    /// The norm name.
    pub norm: NormKind,
    /// Depth.
    pub depth: usize,
    /// Warm-up steps.
    pub warmup: usize,
    /// Peak LR.
    pub learning_rate: f64,
    /// Seed.
    pub seed: u64,
    /// Whether it diverged (see the module docs).
    pub diverged: bool,
    /// Final validation loss (NaN when it stopped on a non-finite value).
    pub final_loss: f64,
    /// Final token accuracy.
    pub final_token_accuracy: f64,
    /// Final exact-sequence accuracy.
    pub final_exact_accuracy: f64,
    /// First evaluated step with ≥ 99% exact accuracy.
    pub steps_to_99_exact: Option<usize>,
    /// ℓ₀: the validation loss of the initial model (the training loss of step 0 for
    /// runs recorded before the initial evaluation existed).
    pub initial_loss: f64,
    /// Training losses, every step.
    pub losses: Vec<f64>,
    /// Global gradient norms before clipping, every step.
    #[serde(default)]
    pub grad_norms: Vec<f64>,
    /// The initial evaluation (step 0), then every evaluation of the run.
    #[serde(default)]
    pub evaluations: Vec<Evaluation>,
}

/// The aggregate of one (placement, depth, warm-up, LR) cell over its seeds.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SweepCell {
    /// The placement name.
    pub placement: Placement,
    /// Depth.
    pub depth: usize,
    /// Warm-up steps.
    pub warmup: usize,
    /// Peak LR.
    pub learning_rate: f64,
    /// Diverged runs.
    pub diverged: usize,
    /// Runs.
    pub runs: usize,
    /// Mean final validation loss of the runs that did not diverge (NaN if none).
    pub mean_final_loss: f64,
    /// Mean final exact accuracy over all runs (diverged count as 0).
    pub mean_exact_accuracy: f64,
    /// Mean final token accuracy over all runs (diverged count as 0).
    pub mean_token_accuracy: f64,
    /// Median steps to 99% exact accuracy over the runs that reached it.
    pub median_steps_to_99: Option<usize>,
}

/// Per (placement, depth, warm-up): stability across the LR grid.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SweepConfiguration {
    /// The placement name.
    pub placement: Placement,
    /// Depth.
    pub depth: usize,
    /// Warm-up steps.
    pub warmup: usize,
    /// The largest LR at which no seed diverged.
    pub largest_stable_lr: Option<f64>,
    /// Wortsman et al.'s LR sensitivity against the best loss of every configuration of
    /// the sweep (lower is more robust; see [`crate::stats::sensitivity`]).
    pub lr_sensitivity: f64,
}

/// What `sweep.json` holds.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct SweepReport {
    /// The grid.
    pub config: SweepConfig,
    /// Every run.
    pub runs: Vec<SweepRun>,
    /// Every cell.
    pub cells: Vec<SweepCell>,
    /// Every configuration.
    pub configurations: Vec<SweepConfiguration>,
}

impl SweepRun {
    /// What the run ended with, as LR sensitivity reads it.
    pub fn loss(&self) -> RunLoss {
        RunLoss {
            final_loss: self.final_loss,
            initial_loss: self.initial_loss,
            diverged: self.diverged,
        }
    }
}
