//! NormFormer's Fig. 2 at toy scale (Shleifer et al. 2021): the average L1 gradient of
//! each layer's second FFN weight over the first steps of training, for a model and the
//! same model with NormFormer's three additions.
//!
//! ```text
//! g_t^(l)   mean_ij |∂L_t/∂W₂^(l)_ij|        at step t, before clipping (if the run clips)
//!                                             and the update
//! G^(l)     mean over t = 1..T of g_t^(l)      one run (variant, seed)
//! training  the given TrainConfig (its LR schedule over its own steps), stopped after T
//! ```
//!
//! # Shapes
//! Batches are the run's `[batch_size, 2n + 1]`; a run yields one value per layer.

use addnorm::NormAutodiffBackend;
use addnorm::nn::TransformerStack;
use burn::config::Config;
use burn::tensor::ElementConversion;
use serde::{Deserialize, Serialize};

use crate::experiments::train::run::{adamw, gradients, update};
use crate::experiments::train::{TrainConfig, TrainOptions};

/// The two models compared.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum EarlyVariant {
    /// The run's model as configured (Pre-LN).
    Baseline,
    /// The same with NormFormer's additions (`TransformerBlockConfig::normformer`).
    NormFormer,
}

impl EarlyVariant {
    /// Both, baseline first.
    pub const ALL: [EarlyVariant; 2] = [EarlyVariant::Baseline, EarlyVariant::NormFormer];

    /// `config` for this variant.
    pub fn apply(self, config: TrainConfig) -> TrainConfig {
        match self {
            EarlyVariant::Baseline => config,
            EarlyVariant::NormFormer => {
                let block = config.model.block().clone().normformer();
                let model = config.model.clone().with_block(block);
                TrainConfig { model, ..config }
            }
        }
    }
}

/// How long and over which seeds, a Burn [`Config`]; part of the demo's `config.json`.
#[derive(Config, Debug)]
pub struct EarlyGradientConfig {
    /// T, the steps averaged. Default: 100
    #[config(default = 100)]
    pub steps: usize,
    /// Seeds. Default: 0 to 9
    #[config(default = "(0..10).collect()")]
    pub seeds: Vec<u64>,
}

impl EarlyGradientConfig {
    /// Every (variant, seed), by variant then seed.
    pub fn cells(&self) -> Vec<(EarlyVariant, u64)> {
        EarlyVariant::ALL
            .into_iter()
            .flat_map(|v| self.seeds.iter().map(move |&s| (v, s)))
            .collect()
    }
}

/// One run's profile.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct EarlyGradientRun {
    /// The variant.
    pub variant: EarlyVariant,
    /// The seed.
    pub seed: u64,
    /// G^(l) for l = 1..L (NaN for every layer if a step's loss was not finite).
    pub w_2: Vec<f64>,
}

/// Trains `config` for `steps` steps, exactly as its own run would (the training loop's
/// `gradients` and `update`), and returns G^(l) of every layer (NaN for every layer if a
/// step's loss or gradient norm was not finite).
pub fn early_gradient_profile<B: NormAutodiffBackend>(
    config: &TrainConfig,
    steps: usize,
    device: &B::Device,
) -> Vec<f64> {
    let mut model: TransformerStack<B> =
        super::train::seeded::init_model(&config.model.stack, config.seed, device);
    let mut optimizer = adamw::<B>(config);
    let (options, schedule) = (TrainOptions::default(), config.schedule());
    let layers = model.blocks.len();
    let mut sums = vec![0.0; layers];
    for step in 0..steps {
        let Ok(g) = gradients(&model, config, &options, step, device) else {
            return vec![f64::NAN; layers];
        };
        for (sum, block) in sums.iter_mut().zip(&model.blocks) {
            let w = block.feed_forward.outer.weight.grad(&g.grads);
            *sum += w.map_or(0.0, |w| w.abs().mean().into_scalar().elem::<f64>());
        }
        model = update(model, &mut optimizer, config, schedule.at(step), g).0;
    }
    sums.into_iter().map(|s| s / steps.max(1) as f64).collect()
}
