//! Wortsman et al. 2023, "Small-scale proxies for large-scale Transformer training
//! instabilities", at toy scale: attention-logit growth and QK-layernorm, output-logit
//! divergence and z-loss, and LR sensitivity.
//!
//! ```text
//! task        the Markov language (crate::experiments::task): a loss at every position
//! model       `model`: Pre-LN with LayerNorm, N blocks of width d, GELU
//! optimizer   AdamW β = (0.9, 0.95), ε = 1e-8, global-norm clipping at 1, warm-up
//!             5% of the steps then cosine; independent decay λ = 1e-4 (Burn's AdamW is
//!             handed λ / lr_peak, crate::experiments::train::TrainConfig::burn_weight_decay)
//! variants    baseline        over the LR grid 3e-4 … 3e-1 (×√10 apart, 7 points)
//!             qk-layernorm    the same, with separate LayerNorms on queries and keys
//!             long-warm-up    qk-layernorm with `long_warmup` of the steps as warm-up
//!                             (§3.2.1), same total steps; when `long_warmup > 0`
//!             no-decay        λ = 0, QK-layernorm, one high LR         (output logits)
//!             no-decay+z-loss the same, plus 1e-4 · mean(log² Z)
//!             softcap         the baseline with Gemma 2's attention-logit soft cap
//!                             c·tanh(S/c), at the top LR only; when `softcap > 0`
//!             coupled-decay   qk-layernorm with Burn's coupled decay λ_c · lr(s)
//!                             (Fig. 6; run by crate::experiments::proxy_grid)
//! measured    final validation loss, ℓ₀ (the initial one), the largest attention logit
//!             and the mean log Z at every evaluation
//! ```
//!
//! # Shapes
//! Batches are `[batch_size, 2n + 1]` tokens of the Markov language.

use burn::config::Config;
use serde::{Deserialize, Serialize};

use crate::experiments::norm_kind::NormKind;

use crate::experiments::model::ModelConfig;
use crate::experiments::sweep::SweepRun;
use crate::experiments::task::Task;
use crate::experiments::train::TrainConfig;

/// The four training set-ups compared.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "kebab-case")]
pub enum ProxyVariant {
    /// Pre-LN with independent weight decay.
    Baseline,
    /// The baseline with QK-layernorm.
    QkLayernorm,
    /// QK-layernorm, no weight decay.
    NoDecay,
    /// QK-layernorm, no weight decay, z-loss 1e-4.
    NoDecayZLoss,
    /// QK-layernorm with a longer warm-up ([`ProxyConfig::long_warmup`] of the steps).
    LongWarmup,
    /// The baseline with the attention logits soft-capped at [`ProxyConfig::softcap`]
    /// (Gemma 2), at the top LR.
    SoftCap,
    /// QK-layernorm with weight decay coupled to the LR
    /// ([`ProxyConfig::coupled_weight_decay`] · lr(s) per step; Fig. 6).
    CoupledDecay,
}

impl ProxyVariant {
    /// The kebab-case name used in run names, plots and reports.
    pub fn name(self) -> &'static str {
        match self {
            ProxyVariant::Baseline => "baseline",
            ProxyVariant::QkLayernorm => "qk-layernorm",
            ProxyVariant::NoDecay => "no-decay",
            ProxyVariant::NoDecayZLoss => "no-decay+z-loss",
            ProxyVariant::LongWarmup => "qk-layernorm+long-warm-up",
            ProxyVariant::SoftCap => "softcap",
            ProxyVariant::CoupledDecay => "qk-layernorm+coupled-decay",
        }
    }

    fn qk_layernorm(self) -> bool {
        !matches!(self, ProxyVariant::Baseline | ProxyVariant::SoftCap)
    }
}

/// Experiment C's set-up, a Burn [`Config`]. Part of the demo's `config.json`.
#[derive(Config, Debug)]
pub struct ProxyConfig {
    /// The Markov language.
    pub task: Task,
    /// The model of every variant (Pre-LN with LayerNorm; the variants add QK-layernorm)
    /// and the backend.
    pub model: ModelConfig,
    /// The LR grid of the baseline and QK-layernorm variants. Default: 3e-4 … 3e-1, ×√10
    /// apart (7 points)
    #[config(default = "vec![3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1]")]
    pub learning_rates: Vec<f64>,
    /// The one LR of the two no-decay variants. Default: 1e-1
    #[config(default = 1e-1)]
    pub z_loss_learning_rate: f64,
    /// Seeds of every variant. Default: 0, 1, 2
    #[config(default = "vec![0, 1, 2]")]
    pub seeds: Vec<u64>,
    /// Steps per run. Default: 300
    #[config(default = 300)]
    pub steps: usize,
    /// Sequences per batch. Default: 16
    #[config(default = 16)]
    pub batch_size: usize,
    /// Independent weight decay λ of the decayed variants. Default: 1e-4
    #[config(default = 1e-4)]
    pub weight_decay: f64,
    /// The z-loss coefficient. Default: 1e-4
    #[config(default = 1e-4)]
    pub z_loss: f64,
    /// The long-warm-up variant's warm-up, as a fraction of the steps (the others take
    /// [`ProxyConfig::WARMUP`]); 0 leaves the variant out. Default: 0.25 (§3.2.1)
    #[config(default = 0.25)]
    pub long_warmup: f64,
    /// The soft cap c of the softcap variant, run at the top LR; 0 leaves the variant out.
    /// Default: 50 (Gemma 2's attention cap)
    #[config(default = 50.0)]
    pub softcap: f64,
    /// λ_c of the coupled-decay variant: Burn's AdamW decays by λ_c · lr(s) per step.
    /// Default: 0.1 (Wortsman et al. 2023, Fig. 6: AdamW's default coupling)
    #[config(default = 0.1)]
    pub coupled_weight_decay: f64,
}

impl ProxyConfig {
    /// The warm-up of every variant but the long-warm-up one, as a fraction of the steps:
    /// Wortsman et al.'s 5e3 of 1e5 steps.
    pub const WARMUP: f64 = 0.05;

    /// The variants run over the LR grid: the baseline, QK-layernorm, and the long warm-up
    /// when [`long_warmup`](Self::long_warmup) is set.
    pub fn grid_variants(&self) -> Vec<ProxyVariant> {
        let mut variants = vec![ProxyVariant::Baseline, ProxyVariant::QkLayernorm];
        if self.long_warmup > 0.0 {
            variants.push(ProxyVariant::LongWarmup);
        }
        variants
    }

    /// The largest LR of the grid (NaN for an empty grid).
    pub fn top_learning_rate(&self) -> f64 {
        self.learning_rates.iter().copied().fold(f64::NAN, f64::max)
    }

    /// Every run: (variant, LR, seed), LR grid variants first.
    pub fn runs(&self) -> Vec<(ProxyVariant, f64, u64)> {
        let grid = self.grid_variants().into_iter().flat_map(|v| {
            self.learning_rates
                .iter()
                .flat_map(move |&lr| self.seeds.iter().map(move |&s| (v, lr, s)))
        });
        let z = [ProxyVariant::NoDecay, ProxyVariant::NoDecayZLoss]
            .into_iter()
            .flat_map(|v| {
                self.seeds
                    .iter()
                    .map(move |&s| (v, self.z_loss_learning_rate, s))
            });
        let top = self.top_learning_rate();
        let capped = (self.softcap > 0.0)
            .then(|| {
                self.seeds
                    .iter()
                    .map(move |&s| (ProxyVariant::SoftCap, top, s))
            })
            .into_iter()
            .flatten();
        grid.chain(z).chain(capped).collect()
    }

    /// The training configuration of one run.
    pub fn train_config(&self, variant: ProxyVariant, lr: f64, seed: u64) -> TrainConfig {
        let qk = variant.qk_layernorm();
        let cap = (variant == ProxyVariant::SoftCap).then_some(self.softcap);
        let model = self.model.clone().with_block(
            self.model
                .block()
                .clone()
                .with_qk_norm(qk.then(|| NormKind::Layer.config()))
                .with_separate_qk_norms(qk)
                .with_attention_logit_softcap(cap),
        );
        let weight_decay = match variant {
            ProxyVariant::NoDecay | ProxyVariant::NoDecayZLoss => 0.0,
            ProxyVariant::CoupledDecay => self.coupled_weight_decay,
            _ => self.weight_decay,
        };
        let warmup = if variant == ProxyVariant::LongWarmup {
            self.long_warmup
        } else {
            Self::WARMUP
        };
        let z_loss = if variant == ProxyVariant::NoDecayZLoss {
            self.z_loss
        } else {
            0.0
        };
        TrainConfig::for_task(self.task, model)
            .with_learning_rate(lr)
            .with_warmup_steps((warmup * self.steps as f64).round() as usize)
            .with_steps(self.steps)
            .with_batch_size(self.batch_size)
            .with_beta_2(0.95)
            .with_grad_clip(Some(1.0))
            .with_weight_decay(weight_decay)
            .with_independent_weight_decay(variant != ProxyVariant::CoupledDecay)
            .with_z_loss(z_loss)
            .with_seed(seed)
            .with_eval_every((self.steps / 8).max(1))
            .with_stats_every(self.steps)
            .with_checkpoint_every(self.steps)
            .with_validation_size(64)
    }
}

/// The run directory name of one experiment-C run.
pub fn run_name(variant: ProxyVariant, lr: f64, seed: u64) -> String {
    format!("proxy-{}-lr{lr:e}-s{seed}", variant.name())
}

/// One finished experiment-C run.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ProxyRun {
    /// Its variant.
    pub variant: ProxyVariant,
    /// Its summary (placement Pre, norm Layer, its LR and seed).
    pub run: SweepRun,
}

impl ProxyRun {
    /// Layer 0's largest attention logit over the run's evaluations (NaN if none), the
    /// layer Wortsman et al. plot.
    pub fn peak_layer_0_logit(&self) -> f64 {
        self.run
            .evaluations
            .iter()
            .map(|e| e.layer_0_logit())
            .fold(f64::NAN, f64::max)
    }

    /// The mean log Z of the last evaluation (NaN if none).
    pub fn final_log_z(&self) -> f64 {
        self.run.evaluations.last().map_or(f64::NAN, |e| e.log_z)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::task::TaskKind;
    use addnorm::backend::Kind;

    fn config(long_warmup: f64) -> ProxyConfig {
        ProxyConfig {
            task: Task::new(TaskKind::Markov, 8, 16),
            model: ModelConfig::new().with_backend(Kind::Ndarray),
            learning_rates: vec![1e-3, 1e-2],
            z_loss_learning_rate: 1e-2,
            seeds: vec![0, 1],
            steps: 300,
            batch_size: 8,
            weight_decay: 1e-4,
            z_loss: 1e-4,
            long_warmup,
            softcap: 0.0,
            coupled_weight_decay: 0.1,
        }
    }

    #[test]
    fn the_softcap_variant_is_the_capped_baseline_at_the_top_lr_only() {
        let capped = ProxyConfig {
            softcap: 50.0,
            ..config(0.0)
        };
        let runs: Vec<_> = capped
            .runs()
            .into_iter()
            .filter(|r| r.0 == ProxyVariant::SoftCap)
            .collect();
        assert_eq!(
            runs,
            vec![
                (ProxyVariant::SoftCap, 1e-2, 0),
                (ProxyVariant::SoftCap, 1e-2, 1)
            ]
        );
        let block = |v| capped.train_config(v, 1e-2, 0).model.block().clone();
        let (cap, base) = (block(ProxyVariant::SoftCap), block(ProxyVariant::Baseline));
        assert_eq!(cap.attention_logit_softcap, Some(50.0));
        assert_eq!(base.attention_logit_softcap, None);
        assert!(cap.qk_norm.is_none());
        assert_eq!(config(0.0).runs(), capped.runs()[..12].to_vec());
    }

    #[test]
    fn the_long_warm_up_variant_runs_the_grid_with_its_own_warm_up_only_when_set() {
        let without = config(0.0);
        assert_eq!(without.runs().len(), 2 * 2 * 2 + 2 * 2);
        assert!(
            without
                .runs()
                .iter()
                .all(|r| r.0 != ProxyVariant::LongWarmup)
        );
        let with = config(0.25);
        let long: Vec<_> = with
            .runs()
            .into_iter()
            .filter(|r| r.0 == ProxyVariant::LongWarmup)
            .collect();
        assert_eq!(long.len(), 2 * 2);
        let train = |v, lr| with.train_config(v, lr, 0);
        assert_eq!(train(ProxyVariant::LongWarmup, 1e-2).warmup_steps, 75);
        assert_eq!(train(ProxyVariant::QkLayernorm, 1e-2).warmup_steps, 15);
        // Everything else is QK-layernorm's: decay, steps, the model.
        let (a, b) = (
            train(ProxyVariant::LongWarmup, 1e-2),
            train(ProxyVariant::QkLayernorm, 1e-2),
        );
        assert_eq!(
            (a.weight_decay, a.steps, a.model.block().separate_qk_norms),
            (b.weight_decay, b.steps, true)
        );
    }
}
