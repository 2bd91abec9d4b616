//! DeepNet (Wang et al. 2022), the setting of its §4.3 analysis: the model update after
//! ONE plain SGD step from initialization, against depth, for Post-LN and DeepNorm.
//!
//! ```text
//! θ₁     = θ₀ − η ∇L(θ₀)           no momentum, no clipping, no weight decay
//! ‖ΔF‖   = mean over positions p of ‖F(x, θ₁)_p − F(x, θ₀)_p‖₂   (as model_update)
//! u(η)   = ‖ΔF‖ / η                the analysis's Θ(η) update, per unit step size
//! η      = s / ‖∇L(θ₀)‖            per cell, for each step length s = ‖θ₁ − θ₀‖
//! ```
//!
//! The analysis takes η → 0, where u(η) no longer depends on η. What decides whether a
//! step is small enough, and whether it stays above the f32 rounding of the weights, is its
//! length ‖Δθ‖ = η‖∇L(θ₀)‖, and ‖∇L(θ₀)‖ ranges from about 2 to 17 over the cells. At a
//! fixed η = 1e-4, Post-LN's update at N = 96 is saturated (‖ΔF‖ ≈ 11 ≈ √(2d), two
//! unrelated normalized outputs). So each cell steps a fixed length s, at every s of
//! [`ModelUpdateConfig::sgd_step_lengths`], from the same θ₀, and records u for each; the
//! ratio of the two u is the check that the step is small enough. Model, depths, seeds,
//! task and the batch x are experiment D's ([`crate::experiments::model_update`]).
//!
//! # Shapes
//! `x` is `[batch, 2n + 1]` tokens; F is `[batch, 2n + 1, d_model]`; a cell records one u
//! per step length.

use addnorm::NormAutodiffBackend;
use addnorm::nn::{Placement, TransformerStack};
use burn::module::AutodiffModule;
use burn::optim::SgdConfig;
use serde::{Deserialize, Serialize};

use crate::experiments::model_update::{ModelUpdateConfig, update_size};
use crate::experiments::train::TrainConfig;
use crate::experiments::train::TrainOptions;
use crate::experiments::train::gradients::global_gradient_norm;
use crate::experiments::train::loss::objective;
use crate::experiments::train::run::optimize;
use crate::runner::jobs::JobPlan;

/// One cell's update per unit step size, at each step length.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SgdUpdateRun {
    /// The placement.
    pub placement: Placement,
    /// N.
    pub depth: usize,
    /// The seed.
    pub seed: u64,
    /// ‖∇L(θ₀)‖, the global gradient norm at initialization.
    pub gradient_norm: f64,
    /// The step sizes η = s / ‖∇L(θ₀)‖, one per configured step length s.
    pub learning_rates: Vec<f64>,
    /// u(η) = ‖ΔF‖ / η after one SGD step at each η (NaN if the step was not finite).
    pub updates: Vec<f64>,
}

impl SgdUpdateRun {
    /// u at the smallest η: the analysis's limit η → 0 as closely as the run gets.
    pub fn at_smallest(&self) -> f64 {
        self.learning_rates
            .iter()
            .zip(&self.updates)
            .min_by(|a, b| a.0.total_cmp(b.0))
            .map_or(f64::NAN, |(_, &u)| u)
    }

    /// u at the largest η over u at the smallest: 1 where the update is linear in η.
    pub fn linearity(&self) -> f64 {
        let largest = self
            .learning_rates
            .iter()
            .zip(&self.updates)
            .max_by(|a, b| a.0.total_cmp(b.0))
            .map_or(f64::NAN, |(_, &u)| u);
        largest / self.at_smallest()
    }
}

/// ‖∇L(θ₀)‖ on the first training batch of `tc`, the batch the SGD step takes.
fn gradient_norm<B: NormAutodiffBackend>(
    model: &TransformerStack<B>,
    tc: &TrainConfig,
    device: &B::Device,
) -> f64 {
    let batch = tc.task.training_batch(tc.seed, 0, tc.batch_size);
    let (inputs, targets, mask) = batch.to_tensors::<B>(device);
    let loss = objective(model.forward(inputs), targets, mask, tc.z_loss);
    let grads = loss.backward();
    global_gradient_norm(model, &grads)
}

/// Takes one SGD step of each configured length from the same initialization of one cell.
pub fn sgd_update_one<B: NormAutodiffBackend>(
    config: &ModelUpdateConfig,
    (placement, depth, seed): (Placement, usize, u64),
    device: &B::Device,
) -> SgdUpdateRun {
    let tc = config
        .train_config(placement, depth, seed)
        .with_grad_clip(None);
    let initial: TransformerStack<B> =
        crate::experiments::train::seeded::init_model(&tc.model.stack, seed, device);
    let inner = initial.valid().head.weight.device();
    let (x, _, _) = tc
        .task
        .validation_set(seed, config.batch_size)
        .to_tensors::<B::InnerBackend>(&inner);
    let f0 = initial.valid().features(x.clone());
    let norm = gradient_norm(&initial, &tc, device);
    let learning_rates: Vec<f64> = config.sgd_step_lengths.iter().map(|s| s / norm).collect();
    let updates = learning_rates
        .iter()
        .map(|&eta| {
            let mut sgd = SgdConfig::new().init::<B, TransformerStack<B>>();
            let options = TrainOptions::default();
            let (model, measured) =
                optimize(initial.clone(), &mut sgd, &tc, &options, (0, eta), device);
            match measured {
                Ok(_) if eta.is_finite() => update_size(&model, x.clone(), &f0) / eta,
                _ => f64::NAN,
            }
        })
        .collect();
    SgdUpdateRun {
        placement,
        depth,
        seed,
        gradient_norm: norm,
        learning_rates,
        updates,
    }
}

/// Runs every cell of `config`, `plan.jobs` at a time, with a progress bar named `label`;
/// the runs come back in [`ModelUpdateConfig::cells`] order.
pub fn sgd_updates<B: NormAutodiffBackend>(
    config: &ModelUpdateConfig,
    label: &str,
    progress: bool,
    plan: JobPlan,
    device: &B::Device,
) -> Vec<SgdUpdateRun> {
    crate::runner::jobs::run_jobs_with_bar(
        &config.cells(),
        plan,
        (label, progress),
        |c| format!("{} N={} seed {}", c.0, c.1, c.2),
        |&cell| sgd_update_one::<B>(config, cell, device),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(learning_rates: Vec<f64>, updates: Vec<f64>) -> SgdUpdateRun {
        SgdUpdateRun {
            placement: Placement::Post,
            depth: 6,
            seed: 0,
            gradient_norm: 1.0,
            learning_rates,
            updates,
        }
    }

    #[test]
    fn the_smallest_step_is_read_whatever_the_order() {
        let r = run(vec![1e-4, 1e-3], vec![2.0, 3.0]);
        assert_eq!(r.at_smallest(), 2.0);
        assert_eq!(r.linearity(), 1.5);
        let r = run(vec![1e-3, 1e-4], vec![3.0, 2.0]);
        assert_eq!(r.at_smallest(), 2.0);
        assert_eq!(r.linearity(), 1.5);
    }

    #[test]
    fn no_step_gives_nan() {
        assert!(run(vec![], vec![]).at_smallest().is_nan());
    }
}
