//! Wortsman et al. 2023's grids around the small-scale proxies ([`super::proxies`]): the
//! LR sweeps at several model sizes (Fig. 1, Fig. 5), coupled against independent weight
//! decay (Fig. 6) and z-loss over the LR grid without weight decay (Fig. 3).
//!
//! ```text
//! sizes       (d, L, heads) scaled jointly at a fixed head size, d_ff = 4d;
//!             N = 12·d²·L non-embedding weights (attention 4d², FFN 8d² per layer;
//!             biases and norms left out)
//! per size    baseline, qk-layernorm, qk-layernorm+long-warm-up over C's LR grid
//! at C's size qk-layernorm+coupled-decay over [coupled_extra_lr] ++ C's grid (λ_c = 0.1
//!             coupled, against qk-layernorm's independent 1e-4; Fig. 6)
//!             no-decay and no-decay+z-loss over C's grid (Fig. 3)
//! training    C's (task, optimizer, batch, warm-up fractions, seeds), `steps` steps
//! runs        proxy-d<d>-l<L>-h<heads>-<variant>-lr<lr>-s<seed>
//! ```
//!
//! Every size trains the same number of steps, so the grid carries its own runs at C's
//! size too: C's `--full` runs are ten times longer and so are not comparable.
//!
//! # Shapes
//! Batches are C's: `[batch_size, 2n + 1]` tokens of the Markov language.

use burn::config::Config;
use serde::{Deserialize, Serialize};

use crate::experiments::model::ModelConfig;
use crate::experiments::proxies::{ProxyConfig, ProxyVariant};
use crate::experiments::sweep::SweepRun;
use crate::experiments::train::TrainConfig;

/// One model size of the grid: width, depth and heads; the FFN is 4× the width.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProxySize {
    /// d, the model width.
    pub d_model: usize,
    /// L, the number of blocks.
    pub n_layers: usize,
    /// Attention heads.
    pub n_heads: usize,
}

impl ProxySize {
    /// The size (d, L, heads).
    pub const fn new(d_model: usize, n_layers: usize, n_heads: usize) -> Self {
        Self {
            d_model,
            n_layers,
            n_heads,
        }
    }

    /// N = 12·d²·L: the attention and FFN weights (biases, norms and embeddings left out).
    pub fn parameters(self) -> f64 {
        12.0 * (self.d_model * self.d_model * self.n_layers) as f64
    }

    /// `d<d>-l<L>-h<heads>`, as run names and plots spell it.
    pub fn name(self) -> String {
        format!("d{}-l{}-h{}", self.d_model, self.n_layers, self.n_heads)
    }

    /// `base` at this size (its norm, activation and backend kept).
    pub fn model(self, base: &ModelConfig) -> ModelConfig {
        let stack = base
            .stack
            .clone()
            .with_d_model(self.d_model)
            .with_n_layers(self.n_layers)
            .with_n_heads(self.n_heads)
            .with_d_ff(4 * self.d_model);
        base.clone().with_stack(stack)
    }

    /// The size of `model`.
    pub fn of(model: &ModelConfig) -> Self {
        let b = model.block();
        Self::new(b.d_model, b.n_layers, b.n_heads)
    }
}

/// The grid, a Burn [`Config`]; part of the demo's `config.json`. No sizes: not run.
#[derive(Config, Debug)]
pub struct ProxyGridConfig {
    /// The model sizes, smallest first. Default: none (the quick profile runs no grid)
    #[config(default = "Vec::new()")]
    pub sizes: Vec<ProxySize>,
    /// Steps of every grid run. Default: 300 (C's quick profile)
    #[config(default = 300)]
    pub steps: usize,
    /// The coupled-decay variant's extra LR below C's grid (the paper reports S_coupled
    /// over the better of two shifted windows). Default: 1e-4
    #[config(default = 1e-4)]
    pub coupled_extra_learning_rate: f64,
}

/// One finished grid run.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ProxyGridRun {
    /// Its model size.
    pub size: ProxySize,
    /// Its variant.
    pub variant: ProxyVariant,
    /// Its summary.
    pub run: SweepRun,
}

impl ProxyGridConfig {
    /// Whether the grid runs at all.
    pub fn is_run(&self) -> bool {
        !self.sizes.is_empty()
    }

    /// C at `size`, trained for the grid's steps.
    pub fn proxies_at(&self, c: &ProxyConfig, size: ProxySize) -> ProxyConfig {
        ProxyConfig {
            model: size.model(&c.model),
            steps: self.steps,
            ..c.clone()
        }
    }

    /// The coupled-decay variant's LR grid: the extra LR, then C's.
    pub fn coupled_learning_rates(&self, c: &ProxyConfig) -> Vec<f64> {
        std::iter::once(self.coupled_extra_learning_rate)
            .chain(c.learning_rates.iter().copied())
            .collect()
    }

    /// The variants run at `size` with their LR grids: C's grid variants at every size;
    /// at C's own size also coupled decay and the two no-decay variants.
    pub fn variants(&self, c: &ProxyConfig, size: ProxySize) -> Vec<(ProxyVariant, Vec<f64>)> {
        let mut variants: Vec<(ProxyVariant, Vec<f64>)> = c
            .grid_variants()
            .into_iter()
            .map(|v| (v, c.learning_rates.clone()))
            .collect();
        if size == ProxySize::of(&c.model) {
            variants.push((ProxyVariant::CoupledDecay, self.coupled_learning_rates(c)));
            for v in [ProxyVariant::NoDecay, ProxyVariant::NoDecayZLoss] {
                variants.push((v, c.learning_rates.clone()));
            }
        }
        variants
    }

    /// Every run: (size, variant, LR, seed), by size, variant, LR, then seed.
    pub fn runs(&self, c: &ProxyConfig) -> Vec<(ProxySize, ProxyVariant, f64, u64)> {
        let mut runs = vec![];
        for &size in &self.sizes {
            for (variant, lrs) in self.variants(c, size) {
                for lr in lrs {
                    runs.extend(c.seeds.iter().map(|&s| (size, variant, lr, s)));
                }
            }
        }
        runs
    }

    /// The training configuration of one run.
    pub fn train_config(
        &self,
        c: &ProxyConfig,
        (size, variant, lr, seed): (ProxySize, ProxyVariant, f64, u64),
    ) -> TrainConfig {
        self.proxies_at(c, size).train_config(variant, lr, seed)
    }
}

/// The run directory name of one grid run.
pub fn run_name(size: ProxySize, variant: ProxyVariant, lr: f64, seed: u64) -> String {
    format!("proxy-{}-{}-lr{lr:e}-s{seed}", size.name(), variant.name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::task::{Task, TaskKind};
    use addnorm::backend::Kind;

    fn c() -> ProxyConfig {
        ProxyConfig::new(
            Task::new(TaskKind::Markov, 8, 16),
            ModelConfig::new().with_backend(Kind::Ndarray),
        )
        .with_learning_rates(vec![1e-3, 1e-2])
        .with_seeds(vec![0, 1])
        .with_steps(3000)
    }

    #[test]
    fn every_size_runs_the_lr_grid_and_only_c_s_size_runs_decay_and_z_loss() {
        let c = c();
        let own = ProxySize::of(&c.model);
        assert_eq!(own, ProxySize::new(32, 2, 2));
        let grid = ProxyGridConfig::new().with_sizes(vec![ProxySize::new(16, 1, 1), own]);
        let runs = grid.runs(&c);
        // 3 grid variants × 2 LRs × 2 seeds per size; at C's size also coupled decay over
        // 3 LRs and the two no-decay variants over 2.
        assert_eq!(runs.len(), 2 * 12 + (3 + 2 + 2) * 2);
        assert!(
            runs.iter()
                .filter(|r| r.0.d_model == 16)
                .all(|r| c.grid_variants().contains(&r.1))
        );
        let coupled: Vec<f64> = runs
            .iter()
            .filter(|r| r.1 == ProxyVariant::CoupledDecay && r.3 == 0)
            .map(|r| r.2)
            .collect();
        assert_eq!(coupled, vec![1e-4, 1e-3, 1e-2]);
        assert!(ProxyGridConfig::new().runs(&c).is_empty());
    }

    #[test]
    fn a_grid_run_is_c_s_run_at_its_size_and_the_grid_s_steps() {
        let c = c();
        let grid = ProxyGridConfig::new().with_sizes(vec![ProxySize::new(64, 3, 4)]);
        let size = ProxySize::new(64, 3, 4);
        let t = grid.train_config(&c, (size, ProxyVariant::QkLayernorm, 1e-2, 1));
        let b = t.model.block();
        assert_eq!((b.d_model, b.n_layers, b.n_heads, b.d_ff), (64, 3, 4, 256));
        assert_eq!(t.steps, 300);
        assert_eq!(t.warmup_steps, 15);
        assert_eq!(t.seed, 1);
        let coupled = grid.train_config(&c, (size, ProxyVariant::CoupledDecay, 1e-2, 1));
        assert!(!coupled.independent_weight_decay);
        assert_eq!(coupled.burn_weight_decay(), 0.1);
        assert!(t.independent_weight_decay);
        assert!((t.burn_weight_decay() - 1e-4 / 1e-2).abs() < 1e-15);
        assert_eq!(size.parameters(), 12.0 * 64.0 * 64.0 * 3.0);
        assert_eq!(
            run_name(size, ProxyVariant::Baseline, 3e-4, 2),
            "proxy-d64-l3-h4-baseline-lr3e-4-s2"
        );
    }
}
