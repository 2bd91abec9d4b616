//! What the demo runs: experiment A's probe grid, B's training runs, the Fig. 3 and
//! Lemma 2 measurements in the paper's own settings, C's small-scale proxies and D's
//! model updates, and the names of all of them.
//!
//! ```text
//! runs of B   pairs × warm-ups × seeds, named  <placement>-<norm>-w<warm-up>-s<seed>
//!             (Pre-placed pairs only without warm-up: no claim reads their warm-up runs)
//! runs of C   crate::experiments::proxies::ProxyConfig::runs, named proxy-<variant>-lr<lr>-s<seed>
//! Fig. 2 grid Post-LN cells × seeds (crate::experiments::warmup_grid), named
//!             post-layer-w<warm-up>-lr<lr>[-fixed]-s<seed>, or B's name where B runs the cell
//! C's grids   crate::experiments::proxy_grid::ProxyGridConfig::runs, named
//!             proxy-d<d>-l<L>-h<heads>-<variant>-lr<lr>-s<seed> (`--full` only)
//! divergence  Pre-LN and Peri-LN at B's setting without warm-up, at each LR of
//!             `divergence_learning_rates` × seeds, named <pair>-w0-lr<lr>-s<seed> (`--full`
//!             only; B's own LR comes from B)
//! depth grid  CaiT's: B's Pre-LN run without warm-up at each depth, with and without
//!             LayerScale (crate::experiments::depth_grid), named
//!             cait-pre-layer-l<L>[-layerscale]-s<seed>, or B's name at B's depth without it
//!             (`--full` only)
//! ```
//!
//! # Shapes
//! Not applicable: configuration.

use addnorm::backend::Kind;
use addnorm::nn::{Activation, Placement, TransformerStackConfig};
use burn::config::Config;
use serde::{Deserialize, Serialize};

use crate::experiments::depth_grid::{self, DepthCell, DepthGridConfig};
use crate::experiments::early_gradients::EarlyGradientConfig;
use crate::experiments::expected_gradient::ExpectedGradientConfig;
use crate::experiments::model::ModelConfig;
use crate::experiments::model_update::ModelUpdateConfig;
use crate::experiments::norm_kind::NormKind;
use crate::experiments::probe::ProbeConfig;
use crate::experiments::proxies::ProxyConfig;
use crate::experiments::proxy_grid::{ProxyGridConfig, ProxySize};
use crate::experiments::task::{Task, TaskKind};
use crate::experiments::train::TrainConfig;
use crate::experiments::warmup_grid::{GridCell, WarmupGridConfig};
use crate::runner::jobs::JobPlan;

/// How much the demo runs: `Quick` targets 5 minutes on 2 cores (330–369 s on the 2-core
/// Intel VM of 2026-11-26 with two worker processes; 446 s earlier that day); `Full` runs
/// more seeds, longer proxies and the papers' grids (41 minutes there, CaiT's depth grid
/// included, against a 30-minute target).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// The README's main command.
    #[default]
    Quick,
    /// `addnorm demo --full`.
    Full,
}

/// What the demo runs, a Burn [`Config`]. Saved as `config.json`. Build it with
/// [`DemoConfig::quick`] or [`DemoConfig::full`].
#[derive(Config, Debug)]
pub struct DemoConfig {
    /// Experiment A's grid and model (its placements/norms list every pair probed).
    pub probe: ProbeConfig,
    /// Experiment B's model and backend; each run sets its placement and norm.
    pub train_model: ModelConfig,
    /// Xiong et al.'s Fig. 3 as published: L = 6, 10 seeds, K batches, Xavier W^Q/W^K.
    pub figure_3: ExpectedGradientConfig,
    /// The same measurement at the paper's widths (App. A.1: d = 512, d_ff = 1024, 4
    /// heads), L = 6: the second setting of Fig. 3's claims.
    pub figure_3_paper_width: ExpectedGradientConfig,
    /// The same measurement at L = 12, 24, 48: an extension beyond the paper.
    pub figure_3_extension: ExpectedGradientConfig,
    /// The same measurement for ResiDual against Post-LN at L = 48, 10 seeds (ResiDual's
    /// gradient lower bound, Xie et al. 2023).
    pub figure_3_resi_dual: ExpectedGradientConfig,
    /// Lemma 2 in its own setting: Pre-LN, ReLU, d_ff = d, one head, W^Q = W^K = 0.
    pub lemma_2: ProbeConfig,
    /// NormFormer's Fig. 2: B's Pre-LN run and its NormFormer variant over their first
    /// steps, 10 seeds.
    pub early_gradients: EarlyGradientConfig,
    /// Xiong et al.'s Fig. 2 grid (Post-LN, warm-up × peak LR) and App. H's fixed LR, on
    /// B's model, steps and seeds.
    pub warmup_grid: WarmupGridConfig,
    /// Experiment C: Wortsman et al. 2023's small-scale proxies.
    pub proxies: ProxyConfig,
    /// Experiment D: DeepNet's model update against depth.
    pub model_update: ModelUpdateConfig,
    /// C's grids over model size, weight decay and z-loss (Wortsman Figs. 1, 3, 5, 6).
    /// Default: no sizes, not run
    #[config(default = "ProxyGridConfig::new()")]
    pub proxy_grid: ProxyGridConfig,
    /// LRs above B's at which Pre-LN and Peri-LN train without warm-up, for the divergence
    /// count against LR (Peri-LN). Default: none, not run
    #[config(default = "Vec::new()")]
    pub divergence_learning_rates: Vec<f64>,
    /// CaiT's depth grid: Pre-LN with and without LayerScale over depths at B's LR.
    /// Default: no depths, not run
    #[config(default = "DepthGridConfig::new()")]
    pub depth_grid: DepthGridConfig,
    /// The profile it was built from. Default: `Profile::Quick`
    #[config(default = "Profile::Quick")]
    pub profile: Profile,
    /// The (placement, norm) pairs of experiments A and B. Default: Post-LN, Pre-LN,
    /// Pre-RMSNorm, Pre-DyT and no norm
    #[config(default = "DemoConfig::PAIRS.to_vec()")]
    pub pairs: Vec<(Placement, NormKind)>,
    /// Pairs trained in B only: Peri-LN (its claims are about training), and ReZero (its
    /// residual gate starts at 0, so at initialization its blocks get no gradient for
    /// experiment A to measure). Default: Peri-LN and ReZero
    #[config(default = "DemoConfig::TRAIN_ONLY_PAIRS.to_vec()")]
    pub train_only_pairs: Vec<(Placement, NormKind)>,
    /// The one high learning rate of experiment B. Default: 1e-2
    #[config(default = 1e-2)]
    pub learning_rate: f64,
    /// Warm-up lengths compared. Default: 0, 100
    #[config(default = "vec![0, 100]")]
    pub warmups: Vec<usize>,
    /// Steps per training run. Default: 250
    #[config(default = 250)]
    pub steps: usize,
    /// Seeds of experiments A to D. Default: 0, 1, 2
    #[config(default = "vec![0, 1, 2]")]
    pub seeds: Vec<u64>,
}

impl DemoConfig {
    /// The pairs of experiments A and B.
    pub const PAIRS: [(Placement, NormKind); 5] = [
        (Placement::Post, NormKind::Layer),
        (Placement::Pre, NormKind::Layer),
        (Placement::Pre, NormKind::Rms),
        (Placement::Pre, NormKind::Dyt),
        (Placement::None, NormKind::Identity),
    ];

    /// The pairs trained in B only.
    pub const TRAIN_ONLY_PAIRS: [(Placement, NormKind); 2] = [
        (Placement::Peri, NormKind::Layer),
        (Placement::ReZero, NormKind::Identity),
    ];

    /// The quick default: under 5 minutes on 2 CPU cores with ndarray.
    pub fn quick(backend: Kind, seed: u64) -> Self {
        let task = Task::new(TaskKind::Reverse, 8, 10);
        let seeds: Vec<u64> = (seed..seed + 3).collect();
        let ten: Vec<u64> = (seed..seed + 10).collect();
        // d_model 64, 4 heads, d_ff 256; each cell sets its depth.
        let small = ModelConfig::new()
            .with_stack(TransformerStackConfig::small())
            .with_backend(backend);
        let probe_stack = small.stack.clone().with_zero_init_query_key(true);
        let probe = ProbeConfig::new(task, small.clone().with_stack(probe_stack))
            .with_placements(vec![Placement::Post, Placement::Pre, Placement::None])
            .with_norms(NormKind::ALL.to_vec())
            .with_depths(vec![6, 12, 24, 48])
            .with_seeds(seeds.clone())
            .with_batch_size(16);
        let figure_3 = ExpectedGradientConfig::new(task, small.clone())
            .with_placements(vec![Placement::Post, Placement::Pre])
            .with_norm(NormKind::Layer)
            .with_depths(vec![6])
            .with_seeds(ten.clone())
            .with_batches(32)
            .with_batch_size(16);
        // App. A.1's widths; gradients at initialization only, so it stays cheap.
        let paper_width = small.stack.clone().with_d_model(512).with_d_ff(1024);
        let figure_3_paper_width = ExpectedGradientConfig {
            model: small.clone().with_stack(paper_width.with_n_heads(4)),
            ..figure_3.clone()
        };
        let lemma_2_stack = probe
            .model
            .stack
            .clone()
            .with_n_heads(1)
            .with_d_ff(64)
            .with_activation(Activation::Relu);
        let lemma_2 = ProbeConfig {
            model: probe.model.clone().with_stack(lemma_2_stack),
            ..probe.clone()
        }
        .with_placements(vec![Placement::Pre])
        .with_norms(vec![NormKind::Layer])
        .with_depths(vec![48])
        .with_seeds(ten.clone());
        // d_model 32, 2 heads, d_ff 128, Pre-LN with LayerNorm.
        let tiny = ModelConfig::new().with_backend(backend);
        // DeepNet's tiny model: d_model 64, 2 heads, d_ff 128.
        let deepnet_stack = tiny.stack.clone().with_d_model(64).with_d_ff(128);
        let deepnet = tiny.clone().with_stack(deepnet_stack);
        // ResiDual's claim reads Post-LN and ResiDual at L = 48 with the extension's K.
        let figure_3_resi_dual = figure_3
            .clone()
            .with_placements(vec![Placement::Post, Placement::ResiDual])
            .with_depths(vec![48])
            .with_batches(8);
        Self {
            profile: Profile::Quick,
            figure_3_resi_dual,
            early_gradients: EarlyGradientConfig::new().with_seeds(ten.clone()),
            // K = 8 keeps the quick profile in budget; `--full` takes Fig. 3's 32.
            figure_3_extension: figure_3
                .clone()
                .with_depths(vec![12, 24, 48])
                .with_seeds(seeds.clone())
                .with_batches(8),
            figure_3,
            figure_3_paper_width,
            lemma_2,
            probe,
            pairs: Self::PAIRS.to_vec(),
            train_only_pairs: Self::TRAIN_ONLY_PAIRS.to_vec(),
            train_model: tiny.clone().with_stack(tiny.stack.clone().with_n_layers(6)),
            learning_rate: 1e-2,
            warmups: vec![0, 100],
            // Fig. 2: warm-up {0, W/8, W} × peak {η/2, η}; App. H: fixed η/10 (W = 100, η = 1e-2).
            warmup_grid: WarmupGridConfig::new()
                .with_warmups(vec![0, 12, 100])
                .with_learning_rates(vec![5e-3, 1e-2])
                .with_fixed_learning_rate(1e-3),
            steps: 250,
            proxies: ProxyConfig::new(Task::new(TaskKind::Markov, 8, 16), tiny)
                .with_learning_rates(vec![3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1])
                .with_z_loss_learning_rate(1e-1)
                .with_seeds(seeds.clone())
                .with_steps(300)
                .with_batch_size(16)
                .with_weight_decay(1e-4)
                .with_z_loss(1e-4)
                // §3.2.1's warm-up comparison: 5% (the others) against 25% of the steps.
                .with_long_warmup(0.25),
            model_update: ModelUpdateConfig::new(task, deepnet)
                .with_placements(vec![Placement::Post, Placement::DeepNorm])
                .with_depths(vec![6, 12, 24, 48, 96])
                .with_seeds(seeds.clone())
                // At 1e-3 Post-LN's first update already saturates at every depth (‖ΔF‖ ≈
                // √(2d), two unrelated normalized outputs), which hides any trend.
                .with_learning_rate(1e-4)
                .with_steps(5)
                .with_batch_size(8),
            proxy_grid: ProxyGridConfig::new(),
            divergence_learning_rates: vec![],
            depth_grid: DepthGridConfig::new(),
            seeds,
        }
    }

    /// The backend every part runs on.
    pub fn backend(&self) -> Kind {
        self.train_model.backend
    }

    /// `--full`: 10 seeds everywhere, 3000-step proxies, K = 32 in Fig. 3's extension and
    /// ResiDual's part,
    /// and the papers' grids: C at three sizes with the head size fixed at 16 (Fig. 1, 5;
    /// 300 steps each, the quick profile's length), coupled decay and z-loss over the LR
    /// grid (Fig. 6, 3), Pre-LN against Peri-LN at three LRs above B's, and CaiT's depth
    /// grid at L = 6, 12, 24 and 48.
    pub fn full(backend: Kind, seed: u64) -> Self {
        let mut config = Self::quick(backend, seed).with_seed_count(10);
        config.profile = Profile::Full;
        config.proxies.steps = 3000;
        config.figure_3_extension.batches = 32;
        config.figure_3_resi_dual.batches = 32;
        config.proxy_grid = config.proxy_grid.with_sizes(Self::GRID_SIZES.to_vec());
        config.divergence_learning_rates = vec![3e-2, 1e-1, 3e-1];
        config.depth_grid.depths = vec![6, 12, 24, 48];
        config
    }

    /// The model sizes of C's grid in `--full`: (d, L, heads) = (16, 1, 1), (32, 2, 2),
    /// i.e. C's own, and (64, 3, 4); N = 3 072, 24 576 and 147 456 weights.
    pub const GRID_SIZES: [ProxySize; 3] = [
        ProxySize::new(16, 1, 1),
        ProxySize::new(32, 2, 2),
        ProxySize::new(64, 3, 4),
    ];

    /// The same demo with `n` seeds (from the first seed on) in both experiments.
    /// Fig. 3 (at both widths and for ResiDual), Lemma 2 and NormFormer's Fig. 2 keep their
    /// 10 seeds (the papers' count) whatever `n` is.
    pub fn with_seed_count(mut self, n: usize) -> Self {
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
        let depth = self.train_model.block().n_layers;
        let model = self.train_model.cell(placement, norm, depth);
        TrainConfig::for_task(self.probe.task, model)
            .with_learning_rate(self.learning_rate)
            .with_warmup_steps(warmup)
            .with_steps(self.steps)
            .with_seed(seed)
            .with_eval_every(25)
            .with_stats_every(self.steps)
            .with_checkpoint_every(self.steps)
            .with_validation_size(128)
    }
}

/// The demo's default seed count for `plan` (experiments A to D; Fig. 3, at both widths
/// and for ResiDual, Lemma 2 and NormFormer's Fig. 2 always take 10): `4·jobs`, from 4 up to 10 (8 at two jobs, 10 from three on).
///
/// Every part runs `plan.jobs` at once, and the time saved goes to more seeds. The count
/// was set when 10 seeds took 187 s with two jobs on the 2-core development VM; the study
/// has grown since, and on the 2-core Intel VM of 2026-11-26 8 seeds took 446 s and 10
/// took 555 s, both over the 5 minutes (PERFORMANCE.md of the lab). The count is not
/// chosen by the verdicts it gives (docs/demo/seed-counts.md).
pub fn default_seeds(plan: JobPlan) -> usize {
    (4 * plan.jobs).clamp(4, 10)
}

impl DemoConfig {
    /// The training configuration of one Fig. 2 grid run: B's Post-LN run at the cell's
    /// warm-up and LR; a fixed cell keeps its LR to the end (no decay).
    pub fn grid_train_config(&self, cell: GridCell, seed: u64) -> TrainConfig {
        let config = self
            .train_config(Placement::Post, NormKind::Layer, cell.warmup, seed)
            .with_learning_rate(cell.learning_rate);
        if cell.fixed {
            config.with_final_lr_fraction(1.0)
        } else {
            config
        }
    }

    /// Whether B trains this cell's runs itself (Post-LN at B's LR and one of B's
    /// warm-ups): its configuration is then B's, and so is its run.
    pub fn grid_cell_in_b(&self, cell: GridCell) -> bool {
        !cell.fixed
            && cell.learning_rate == self.learning_rate
            && self.warmups.contains(&cell.warmup)
    }

    /// The run directory name of one Fig. 2 grid run: B's name when B runs the same
    /// configuration, else `post-layer-w<warm-up>-lr<lr>[-fixed]-s<seed>`.
    pub fn grid_run_name(&self, cell: GridCell, seed: u64) -> String {
        let (p, n) = (Placement::Post, NormKind::Layer);
        if self.grid_cell_in_b(cell) {
            return run_name(p, n, cell.warmup, seed);
        }
        let fixed = if cell.fixed { "-fixed" } else { "" };
        format!(
            "{}-w{}-lr{:e}{fixed}-s{seed}",
            label(p, n),
            cell.warmup,
            cell.learning_rate
        )
    }

    /// The Fig. 2 grid's runs: (cell, seed), by cell then seed.
    pub fn grid_runs(&self) -> Vec<(GridCell, u64)> {
        self.per_seed(self.warmup_grid.cells())
    }

    /// Each of a grid's `cells` with each seed: (cell, seed), by cell then seed.
    fn per_seed<C: Copy>(&self, cells: Vec<C>) -> Vec<(C, u64)> {
        cells
            .into_iter()
            .flat_map(|c| self.seeds.iter().map(move |&s| (c, s)))
            .collect()
    }
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

/// Every training run of the demo, B's, C's, then the Fig. 2 grid's that B does not run:
/// (run name, its configuration).
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
    let grid = config
        .grid_runs()
        .into_iter()
        .filter(|&(cell, _)| !config.grid_cell_in_b(cell))
        .map(|(cell, s)| {
            (
                config.grid_run_name(cell, s),
                config.grid_train_config(cell, s),
            )
        });
    let sizes = config
        .proxy_grid
        .runs(&config.proxies)
        .into_iter()
        .map(|run| {
            let (size, v, lr, s) = run;
            (
                crate::experiments::proxy_grid::run_name(size, v, lr, s),
                config.proxy_grid.train_config(&config.proxies, run),
            )
        });
    let divergence = config.divergence_runs().into_iter().map(|(p, lr, s)| {
        (
            divergence_run_name(p, lr, s),
            config.divergence_config(p, lr, s),
        )
    });
    let depths = config
        .depth_grid_runs()
        .into_iter()
        .filter(|&(cell, _)| !config.depth_cell_in_b(cell))
        .map(|(cell, s)| {
            (
                config.depth_grid_run_name(cell, s),
                config.depth_grid_train_config(cell, s),
            )
        });
    b.chain(c)
        .chain(grid)
        .chain(sizes)
        .chain(divergence)
        .chain(depths)
        .collect()
}

/// The run directory name of one divergence-grid run.
pub(super) fn divergence_run_name(p: Placement, lr: f64, s: u64) -> String {
    format!("{}-w0-lr{lr:e}-s{s}", label(p, NormKind::Layer))
}

impl DemoConfig {
    /// The pairs of the divergence count: Pre-LN and Peri-LN, both with LayerNorm.
    pub const DIVERGENCE_PLACEMENTS: [Placement; 2] = [Placement::Pre, Placement::Peri];

    /// The divergence grid's own runs (B's LR is B's): (placement, LR, seed).
    pub fn divergence_runs(&self) -> Vec<(Placement, f64, u64)> {
        Self::DIVERGENCE_PLACEMENTS
            .into_iter()
            .flat_map(|p| {
                self.divergence_learning_rates
                    .iter()
                    .flat_map(move |&lr| self.seeds.iter().map(move |&s| (p, lr, s)))
            })
            .collect()
    }

    /// One divergence-grid run: B's run of the pair without warm-up, at `lr`.
    pub fn divergence_config(&self, p: Placement, lr: f64, seed: u64) -> TrainConfig {
        self.train_config(p, NormKind::Layer, 0, seed)
            .with_learning_rate(lr)
    }
}

/// The run directory name of one experiment-B run.
pub(super) fn run_name(p: Placement, n: NormKind, w: usize, s: u64) -> String {
    format!("{}-w{w}-s{s}", label(p, n))
}

impl DemoConfig {
    /// The depth grid's runs: (cell, seed), by cell then seed.
    pub fn depth_grid_runs(&self) -> Vec<(DepthCell, u64)> {
        self.per_seed(self.depth_grid.cells())
    }

    /// Whether B trains this cell's runs itself: B's depth, without LayerScale.
    pub fn depth_cell_in_b(&self, cell: DepthCell) -> bool {
        !cell.layer_scale && cell.depth == self.train_model.block().n_layers
    }

    /// One depth-grid run: B's Pre-LN run without warm-up at the cell's depth.
    pub fn depth_grid_train_config(&self, cell: DepthCell, seed: u64) -> TrainConfig {
        let pre_ln = self.train_config(Placement::Pre, NormKind::Layer, 0, seed);
        self.depth_grid.train_config(pre_ln, cell)
    }

    /// The run directory name of one depth-grid run: B's when B runs it.
    pub fn depth_grid_run_name(&self, cell: DepthCell, seed: u64) -> String {
        if self.depth_cell_in_b(cell) {
            run_name(Placement::Pre, NormKind::Layer, 0, seed)
        } else {
            depth_grid::run_name(cell, seed)
        }
    }
}
