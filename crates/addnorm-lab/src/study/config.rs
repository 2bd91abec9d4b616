//! What the demo runs: experiment A's probe grid, B's training runs, the Fig. 3 and
//! Lemma 2 measurements in the paper's own settings, C's small-scale proxies and D's
//! model updates, and the names of all of them.
//!
//! ```text
//! runs of B   pairs × warm-ups × seeds, named  <placement>-<norm>-w<warm-up>-s<seed>
//!             (Pre-placed pairs only without warm-up: no claim reads their warm-up runs)
//! runs of C   crate::experiments::proxies::ProxyConfig::runs, named proxy-<variant>-lr<lr>-s<seed>
//! ```
//!
//! # Shapes
//! Not applicable: configuration.

use addnorm::backend::Kind;
use addnorm::nn::{Activation, Placement};
use serde::{Deserialize, Serialize};

use crate::experiments::expected_gradient::ExpectedGradientConfig;
use crate::experiments::model::stack_config;
use crate::experiments::model_update::ModelUpdateConfig;
use crate::experiments::norm_kind::NormKind;
use crate::experiments::probe::ProbeConfig;
use crate::experiments::proxies::ProxyConfig;
use crate::experiments::task::{Task, TaskKind};
use crate::experiments::train::TrainConfig;
use crate::runner::jobs::JobPlan;

/// How much the demo runs: `Quick` fits in 5 minutes on 2 cores; `Full` runs more seeds
/// and longer proxies (about 12 minutes on 2 cores).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// The README's main command.
    #[default]
    Quick,
    /// `addnorm demo --full`.
    Full,
}

/// What the demo runs. Saved as `config.json`.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct DemoConfig {
    /// The profile it was built from.
    pub profile: Profile,
    /// Experiment A's model and depths (its placements/norms list every pair probed).
    pub probe: ProbeConfig,
    /// The (placement, norm) pairs of experiments A and B.
    pub pairs: Vec<(Placement, NormKind)>,
    /// Pairs trained in B only: Peri-LN (its claims are about training), and ReZero (its
    /// residual gate starts at 0, so at initialization its blocks get no gradient for
    /// experiment A to measure).
    pub train_only_pairs: Vec<(Placement, NormKind)>,
    /// Experiment B's training runs, one per pair × warm-up × seed.
    pub train_depth: usize,
    /// Experiment B's model width.
    pub train_d_model: usize,
    /// The one high learning rate of experiment B.
    pub learning_rate: f64,
    /// Warm-up lengths compared.
    pub warmups: Vec<usize>,
    /// Steps per training run.
    pub steps: usize,
    /// Seeds of experiments A and B.
    pub seeds: Vec<u64>,
    /// Xiong et al.'s Fig. 3 as published: L = 6, 10 seeds, K batches, Xavier W^Q/W^K.
    pub figure_3: ExpectedGradientConfig,
    /// The same measurement at L = 12, 24, 48: an extension beyond the paper.
    pub figure_3_extension: ExpectedGradientConfig,
    /// Lemma 2 in its own setting: Pre-LN, ReLU, d_ff = d, one head, W^Q = W^K = 0.
    pub lemma_2: ProbeConfig,
    /// Experiment C: Wortsman et al. 2023's small-scale proxies.
    pub proxies: ProxyConfig,
    /// Experiment D: DeepNet's model update against depth.
    pub model_update: ModelUpdateConfig,
    /// The backend.
    pub backend: Kind,
}

impl DemoConfig {
    /// The quick default: under 5 minutes on 2 CPU cores with ndarray.
    pub fn quick(backend: Kind, seed: u64) -> Self {
        let task = Task::new(TaskKind::Reverse, 8, 10);
        let pairs = vec![
            (Placement::Post, NormKind::Layer),
            (Placement::Pre, NormKind::Layer),
            (Placement::Pre, NormKind::Rms),
            (Placement::Pre, NormKind::Dyt),
            (Placement::None, NormKind::Identity),
        ];
        let seeds: Vec<u64> = (seed..seed + 3).collect();
        let ten: Vec<u64> = (seed..seed + 10).collect();
        let probe = ProbeConfig {
            task,
            placements: vec![Placement::Post, Placement::Pre, Placement::None],
            norms: NormKind::ALL.to_vec(),
            depths: vec![6, 12, 24, 48],
            seeds: seeds.clone(),
            d_model: 64,
            n_heads: 4,
            d_ff: 256,
            batch_size: 16,
            zero_init_query_key: true,
            activation: Activation::Gelu,
            backend,
        };
        let figure_3 = ExpectedGradientConfig {
            task,
            placements: vec![Placement::Post, Placement::Pre],
            norm: NormKind::Layer,
            depths: vec![6],
            seeds: ten.clone(),
            batches: 32,
            batch_size: 16,
            d_model: 64,
            n_heads: 4,
            d_ff: 256,
            backend,
        };
        let lemma_2 = ProbeConfig {
            placements: vec![Placement::Pre],
            norms: vec![NormKind::Layer],
            depths: vec![48],
            seeds: ten,
            n_heads: 1,
            d_ff: 64,
            activation: Activation::Relu,
            ..probe.clone()
        };
        Self {
            profile: Profile::Quick,
            // K = 8 keeps the quick profile in budget; `--full` takes Fig. 3's 32.
            figure_3_extension: ExpectedGradientConfig {
                depths: vec![12, 24, 48],
                seeds: seeds.clone(),
                batches: 8,
                ..figure_3.clone()
            },
            figure_3,
            lemma_2,
            probe,
            pairs,
            train_only_pairs: vec![
                (Placement::Peri, NormKind::Layer),
                (Placement::ReZero, NormKind::Identity),
            ],
            train_depth: 6,
            train_d_model: 32,
            learning_rate: 1e-2,
            warmups: vec![0, 100],
            steps: 250,
            proxies: ProxyConfig {
                task: Task::new(TaskKind::Markov, 8, 16),
                d_model: 32,
                n_heads: 2,
                depth: 2,
                learning_rates: vec![3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1],
                z_loss_learning_rate: 1e-1,
                seeds: seeds.clone(),
                steps: 300,
                batch_size: 16,
                weight_decay: 1e-4,
                z_loss: 1e-4,
                // §3.2.1's warm-up comparison: 5% (the others) against 25% of the steps.
                long_warmup: 0.25,
                backend,
            },
            model_update: ModelUpdateConfig {
                task,
                placements: vec![Placement::Post, Placement::DeepNorm],
                depths: vec![6, 12, 24, 48, 96],
                seeds: seeds.clone(),
                d_model: 64,
                d_ff: 128,
                n_heads: 2,
                // At 1e-3 Post-LN's first update already saturates at every depth (‖ΔF‖ ≈
                // √(2d), two unrelated normalized outputs), which hides any trend.
                learning_rate: 1e-4,
                steps: 5,
                batch_size: 8,
                backend,
            },
            seeds,
            backend,
        }
    }

    /// `--full`: 10 seeds everywhere, 3000-step proxies, and K = 32 in Fig. 3's extension.
    pub fn full(backend: Kind, seed: u64) -> Self {
        let mut config = Self::quick(backend, seed).with_seeds(10);
        config.profile = Profile::Full;
        config.proxies.steps = 3000;
        config.figure_3_extension.batches = 32;
        config
    }

    /// The same demo with `n` seeds (from the first seed on) in both experiments.
    /// Fig. 3 and Lemma 2 keep their 10 seeds (the paper's count) whatever `n` is.
    pub fn with_seeds(mut self, n: usize) -> Self {
        let first = self.seeds.first().copied().unwrap_or(0);
        self.seeds = (first..first + n as u64).collect();
        self.probe.seeds = self.seeds.clone();
        self.figure_3_extension.seeds = self.seeds.clone();
        self.proxies.seeds = self.seeds.clone();
        self.model_update.seeds = self.seeds.clone();
        self
    }

    /// Experiment B's pairs: A's, then the train-only ones.
    pub fn training_pairs(&self) -> Vec<(Placement, NormKind)> {
        self.pairs
            .iter()
            .chain(&self.train_only_pairs)
            .copied()
            .collect()
    }

    /// The training configuration of one experiment-B run.
    pub fn train_config(
        &self,
        placement: Placement,
        norm: NormKind,
        warmup: usize,
        seed: u64,
    ) -> TrainConfig {
        let model = stack_config(
            self.train_d_model,
            2,
            4 * self.train_d_model,
            self.train_depth,
            placement,
            norm,
        );
        TrainConfig::for_task(self.probe.task, model)
            .with_learning_rate(self.learning_rate)
            .with_warmup_steps(warmup)
            .with_steps(self.steps)
            .with_seed(seed)
            .with_eval_every(25)
            .with_stats_every(self.steps)
            .with_checkpoint_every(self.steps)
            .with_validation_size(128)
            .with_backend(self.backend)
    }
}

/// The demo's default seed count for `plan` (experiments A to D; Fig. 3 and Lemma 2 always
/// take 10): `4·jobs`, from 4 up to 10 (8 at two jobs, 10 from three on).
///
/// Every part runs `plan.jobs` at once, and the time saved goes to more seeds, with a
/// margin: 10 seeds took 187 s with two jobs on the 2-core development VM, so 8 keeps
/// room for a machine 1.6× slower inside the 5 minutes (`cargo bench --bench demo_time`;
/// PERFORMANCE.md of the lab).
pub fn default_seeds(plan: JobPlan) -> usize {
    (4 * plan.jobs).clamp(4, 10)
}

/// `<placement>-<norm>`, as plots, tables and run names spell a pair.
pub(super) fn label(p: Placement, n: NormKind) -> String {
    format!("{p}-{}", n.name())
}

/// Experiment B's runs: (placement, norm, warm-up, seed), in report order. Pre-placed,
/// Peri-LN and ReZero pairs run without warm-up only (no claim reads their warm-up runs).
pub(super) fn training_runs(config: &DemoConfig) -> Vec<(Placement, NormKind, usize, u64)> {
    let first = config.warmups.first().copied().unwrap_or(0);
    config
        .training_pairs()
        .into_iter()
        .flat_map(|(p, n)| {
            config
                .warmups
                .iter()
                .filter(move |&&w| {
                    w == first || !matches!(p, Placement::Pre | Placement::Peri | Placement::ReZero)
                })
                .flat_map(move |&w| config.seeds.iter().map(move |&s| (p, n, w, s)))
        })
        .collect()
}

/// Every training run of the demo, B's then C's: (run name, its configuration).
pub(super) fn all_training_runs(config: &DemoConfig) -> Vec<(String, TrainConfig)> {
    let b = training_runs(config)
        .into_iter()
        .map(|(p, n, w, s)| (run_name(p, n, w, s), config.train_config(p, n, w, s)));
    let c = config.proxies.runs().into_iter().map(|(v, lr, s)| {
        (
            crate::experiments::proxies::run_name(v, lr, s),
            config.proxies.train_config(v, lr, s),
        )
    });
    b.chain(c).collect()
}

/// The run directory name of one experiment-B run.
pub(super) fn run_name(p: Placement, n: NormKind, w: usize, s: u64) -> String {
    format!("{}-w{w}-s{s}", label(p, n))
}
