//! The arguments of each `addnorm` command, and the configurations they build.
//!
//! # Shapes
//! Not applicable: argument parsing.

use std::path::{Path, PathBuf};

use addnorm::backend::Kind;
use addnorm::nn::{Activation, ConfigError, Placement, TransformerStackConfig};
use clap::Args;

use super::parse::{
    parse_activation, parse_backend, parse_beta, parse_count, parse_non_negative, parse_norm,
    parse_placement, parse_positive, parse_shard, parse_task,
};
use crate::experiments::model::ModelConfig;
use crate::experiments::norm_kind::NormKind;
use crate::experiments::probe::ProbeConfig;
use crate::experiments::sweep::{SweepConfig, SweepOptions};
use crate::experiments::task::{Task, TaskKind};
use crate::experiments::train::TrainConfig;

/// Options every command takes.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// The backend: one of those compiled in (ndarray, wgpu, cuda).
    #[arg(long, default_value = addnorm::backend::PREFERRED.name(), value_parser = parse_backend)]
    pub backend: Kind,
    /// The seed of initialization and data.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The output directory.
    #[arg(long)]
    pub out: PathBuf,
}

impl CommonArgs {
    /// `n` consecutive seeds starting at `--seed`.
    fn seeds(&self, n: usize) -> Vec<u64> {
        (0..n as u64).map(|s| self.seed + s).collect()
    }
}

/// The task options.
#[derive(Args, Debug, Clone)]
pub struct TaskArgs {
    /// reverse, copy, sort or markov.
    #[arg(long, default_value = "reverse", value_parser = parse_task)]
    pub task: TaskKind,
    /// Symbols per question (n).
    #[arg(long, default_value_t = 8, value_parser = parse_count)]
    pub length: usize,
    /// Distinct symbols.
    #[arg(long, default_value_t = 10, value_parser = parse_count)]
    pub symbols: usize,
}

impl TaskArgs {
    /// What is wrong with the task's arguments, if anything.
    pub(crate) fn check(&self) -> Result<(), String> {
        Task::try_new(self.task, self.length, self.symbols).map(|_| ())
    }

    fn task(&self) -> Task {
        Task::new(self.task, self.length, self.symbols)
    }
}

/// The model's widths, shared by `train`, `probe` and `sweep`. Each command sets its
/// defaults ([`super::Command`]); without one, `--heads` is d_model / 16 and `--d-ff`
/// 4 · d_model.
#[derive(Args, Debug, Clone)]
pub struct ModelArgs {
    /// Model width.
    #[arg(long, default_value_t = 32, value_parser = parse_count)]
    pub d_model: usize,
    /// Attention heads.
    #[arg(long, value_parser = parse_count)]
    pub heads: Option<usize>,
    /// Feed-forward width.
    #[arg(long, value_parser = parse_count)]
    pub d_ff: Option<usize>,
}

/// The block options of today's open models (issue 27), on top of the placement.
#[derive(Args, Debug, Clone, Default)]
pub struct RecipeArgs {
    /// NormFormer's three additions (a norm on the attention's output, one over the FFN's
    /// hidden features, per-head gains).
    #[arg(long)]
    pub(crate) normformer: bool,
    /// LayerScale: a per-channel gain on each branch, every entry starting at this value
    /// (CaiT: 0.1 to 1e-6 by depth).
    #[arg(long, value_parser = parse_positive, allow_hyphen_values = true)]
    pub(crate) layer_scale: Option<f64>,
    /// Soft-cap the attention logits at this value, c·tanh(S/c) (Gemma 2: 50).
    #[arg(long, value_parser = parse_positive, allow_hyphen_values = true)]
    pub(crate) attention_softcap: Option<f64>,
    /// Soft-cap the output logits at this value (Gemma 2: 30).
    #[arg(long, value_parser = parse_positive, allow_hyphen_values = true)]
    pub(crate) final_softcap: Option<f64>,
    /// Residual gating: a GRU cell GRU(F(x), x) in place of each residual sum
    /// (x-transformers' gate_residual, GTrXL). Not with --placement parallel.
    #[arg(long)]
    pub(crate) residual_gate: bool,
}

impl RecipeArgs {
    /// `stack` with these options.
    pub fn apply(&self, stack: TransformerStackConfig) -> TransformerStackConfig {
        let block = stack.block.clone();
        let block = if self.normformer {
            block.normformer()
        } else {
            block
        };
        TransformerStackConfig {
            block: block
                .with_layer_scale(self.layer_scale)
                .with_attention_logit_softcap(self.attention_softcap)
                .with_residual_gate(self.residual_gate),
            ..stack
        }
        .with_final_logit_softcap(self.final_softcap)
    }
}

impl ModelArgs {
    /// The stack of these widths (its depth, placement and norm are the command's).
    pub fn stack(&self) -> TransformerStackConfig {
        let d = self.d_model;
        TransformerStackConfig::new()
            .with_d_model(d)
            .with_n_heads(self.heads.unwrap_or((d / 16).max(1)))
            .with_d_ff(self.d_ff.unwrap_or(4 * d))
    }
}

/// The message for a model that [`TransformerStackConfig::check`] refuses: the flags that
/// set the refused field, with their values, then the library's message; a field that no
/// flag sets alone is introduced as the model's.
///
/// ```text
/// --d-model 30 and --heads 4: TransformerStackConfig.block.d_model (30) must be a positive
///                             multiple of n_heads (4)
/// ```
pub(crate) fn model_refusal(error: &ConfigError, stack: &TransformerStackConfig) -> String {
    let block = &stack.block;
    let flags = match error.field() {
        "TransformerStackConfig.block.d_model" => {
            format!("--d-model {} and --heads {}", block.d_model, block.n_heads)
        }
        "TransformerBlockConfig.residual_gate" => {
            format!("--residual-gate with --placement {}", block.placement)
        }
        _ => "the model".to_string(),
    };
    format!("{flags}: {error}")
}

/// `addnorm train`.
#[derive(Args, Debug)]
pub struct TrainArgs {
    #[command(flatten)]
    pub(crate) common: CommonArgs,
    #[command(flatten)]
    pub(crate) task: TaskArgs,
    /// post, pre, peri (sandwich), deepnorm, post-branch, parallel, resi-dual, rezero or none.
    #[arg(long, default_value = "pre", value_parser = parse_placement)]
    pub(crate) placement: Placement,
    /// layer, rms, dyt or identity.
    #[arg(long, default_value = "layer", value_parser = parse_norm)]
    pub(crate) norm: NormKind,
    /// Number of layers.
    #[arg(long, default_value_t = 2, value_parser = parse_count)]
    pub(crate) depth: usize,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    #[command(flatten)]
    pub(crate) recipes: RecipeArgs,
    /// Peak learning rate.
    #[arg(long, default_value_t = 3e-3, value_parser = parse_positive, allow_hyphen_values = true)]
    pub(crate) lr: f64,
    /// Linear warm-up steps.
    #[arg(long, default_value_t = 100)]
    pub(crate) warmup: usize,
    /// Optimizer steps.
    #[arg(long, default_value_t = 1000, value_parser = parse_count)]
    pub(crate) steps: usize,
    /// Sequences per batch.
    #[arg(long, default_value_t = 32, value_parser = parse_count)]
    pub(crate) batch: usize,
    /// AdamW weight decay.
    #[arg(long, default_value_t = 0.0, value_parser = parse_non_negative, allow_hyphen_values = true)]
    pub(crate) weight_decay: f64,
    /// Clip the global gradient norm to this value.
    #[arg(long, value_parser = parse_positive, allow_hyphen_values = true)]
    pub(crate) grad_clip: Option<f64>,
    /// Decay by weight_decay · lr(s)/lr_peak, independent of the LR's size (Wortsman et
    /// al. 2023), instead of Burn's weight_decay · lr(s).
    #[arg(long)]
    pub(crate) independent_decay: bool,
    /// AdamW's β₂ (Wortsman et al. 2023 use 0.95).
    #[arg(long, default_value_t = 0.999, value_parser = parse_beta)]
    pub(crate) beta2: f64,
    /// The z-loss coefficient: adds c · mean(log² Z) to the loss (Wortsman et al. use 1e-4).
    #[arg(long, default_value_t = 0.0, value_parser = parse_non_negative, allow_hyphen_values = true)]
    pub(crate) z_loss: f64,
    /// QK-layernorm: separate LayerNorms on each head's queries and keys.
    #[arg(long)]
    pub(crate) qk_layernorm: bool,
    /// Continue from the last checkpoint in --out.
    #[arg(long)]
    pub(crate) resume: bool,
    /// Evaluate every this many steps.
    #[arg(long, default_value_t = 50, value_parser = parse_count)]
    pub(crate) eval_every: usize,
    /// Record per-layer gradient norms and residual RMS every this many steps (K).
    #[arg(long, default_value_t = 50, value_parser = parse_count)]
    pub(crate) stats_every: usize,
    /// Checkpoint every this many steps.
    #[arg(long, default_value_t = 100, value_parser = parse_count)]
    pub(crate) checkpoint_every: usize,
    /// Replace the loss of this step by NaN (tests the divergence path).
    #[arg(long, hide = true)]
    pub(crate) inject_nan_at: Option<usize>,
}

/// `addnorm probe`.
#[derive(Args, Debug)]
pub struct ProbeArgs {
    #[command(flatten)]
    pub(crate) common: CommonArgs,
    #[command(flatten)]
    pub(crate) task: TaskArgs,
    /// Placements, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "post,pre", value_parser = parse_placement)]
    pub(crate) placements: Vec<Placement>,
    /// Norms, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "layer", value_parser = parse_norm)]
    pub(crate) norms: Vec<NormKind>,
    /// Depths, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "6,12,24,48", value_parser = parse_count)]
    pub(crate) depths: Vec<usize>,
    /// Seeds per cell (seed, seed + 1, ...).
    #[arg(long, default_value_t = 3, value_parser = parse_count)]
    pub(crate) seeds: usize,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    /// Sequences in the probe batch.
    #[arg(long, default_value_t = 16, value_parser = parse_count)]
    pub(crate) batch: usize,
    /// Keep W^Q and W^K at their random initialization instead of zero.
    #[arg(long)]
    pub(crate) random_query_key: bool,
    /// The feed-forward nonlinearity: `gelu` or `relu` (Lemma 2 assumes ReLU).
    #[arg(long, default_value = "gelu", value_parser = parse_activation)]
    pub(crate) activation: Activation,
}

/// `addnorm sweep`.
#[derive(Args, Debug)]
pub struct SweepArgs {
    #[command(flatten)]
    pub(crate) common: CommonArgs,
    #[command(flatten)]
    pub(crate) task: TaskArgs,
    /// Placements, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "post,pre", value_parser = parse_placement)]
    pub(crate) placements: Vec<Placement>,
    /// Norm used by every placement that has one.
    #[arg(long, default_value = "layer", value_parser = parse_norm)]
    pub(crate) norm: NormKind,
    /// Depths, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "4", value_parser = parse_count)]
    pub(crate) depths: Vec<usize>,
    /// Warm-up lengths, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "0,100")]
    pub(crate) warmups: Vec<usize>,
    /// Learning rates, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "3e-4,1e-3,3e-3,1e-2,3e-2", value_parser = parse_positive, allow_hyphen_values = true)]
    pub(crate) lrs: Vec<f64>,
    /// Seeds per cell.
    #[arg(long, default_value_t = 2, value_parser = parse_count)]
    pub(crate) seeds: usize,
    /// Steps per run.
    #[arg(long, default_value_t = 400, value_parser = parse_count)]
    pub(crate) steps: usize,
    #[command(flatten)]
    pub(crate) model: ModelArgs,
    #[command(flatten)]
    pub(crate) parallel: ParallelArgs,
    /// Take only the runs whose grid index i has i % N == K (join shards with `merge`).
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    pub(crate) shard: Option<crate::runner::shard::Shard>,
    /// Seconds without a heartbeat after which another worker's claim on a run is taken
    /// over (a claim of a dead process on this host is taken over at once).
    #[arg(long, default_value_t = 300, value_parser = parse_count)]
    pub(crate) stale_after: usize,
}

/// `addnorm demo`.
#[derive(Args, Debug)]
pub struct DemoArgs {
    #[command(flatten)]
    pub(crate) common: CommonArgs,
    /// Seeds of experiments A to D (Fig. 3 at L = 6, both widths and ResiDual's, Lemma 2
    /// and NormFormer's Fig. 2 always take 10). Default: 4 per job (8 with two), up to 10;
    /// 10 with --full.
    #[arg(long, value_parser = parse_count)]
    pub(crate) seeds: Option<usize>,
    /// The full profile: 10 seeds everywhere, 3000-step proxies, and the papers' grids
    /// (Wortsman's model sizes, decay and z-loss; Peri-LN's divergence against LR) instead
    /// of the quick one.
    #[arg(long)]
    pub(crate) full: bool,
    #[command(flatten)]
    pub(crate) parallel: ParallelArgs,
    /// Worker processes on --out, this one included: it starts the others (each with
    /// --jobs runs at once), trains its own share, waits for them and writes the report.
    /// Default on ndarray without --jobs: one per core, each training one run at a time,
    /// since two training loops in one process wait on each other's locks (Burn's autodiff
    /// graph is process-wide); otherwise 1.
    #[arg(long, value_parser = parse_count)]
    pub(crate) processes: Option<usize>,
    /// Marks a worker started by another `addnorm demo` (`--processes`): no progress bars,
    /// no workers of its own.
    #[arg(long, hide = true)]
    pub(crate) helper: bool,
    /// Seconds without a heartbeat after which another worker's claim is taken over (a
    /// claim of a dead process on this host is taken over at once).
    #[arg(long, default_value_t = 300, value_parser = parse_count)]
    pub(crate) stale_after: usize,
}

/// How many runs go at once in this process.
#[derive(Args, Debug, Clone)]
pub struct ParallelArgs {
    /// Runs trained at once in this process. Default: the core count on ndarray (`demo`:
    /// 1 in each of its worker processes, see --processes), 1 on a GPU.
    #[arg(long, value_parser = parse_count)]
    pub jobs: Option<usize>,
    /// Rayon threads per run. Default: cores / jobs (`demo`: cores / (processes × jobs)).
    #[arg(long, value_parser = parse_count)]
    pub threads: Option<usize>,
}

impl ParallelArgs {
    /// The plan for `backend`.
    pub fn plan(&self, backend: Kind) -> crate::runner::jobs::JobPlan {
        crate::runner::jobs::JobPlan::new(self.jobs, self.threads, backend)
    }
}

/// `addnorm report`.
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// The sweep's directory.
    #[arg(long)]
    pub out: PathBuf,
}

/// `addnorm merge`.
#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The shard directories.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// The merged directory (may be one of the shards').
    #[arg(long)]
    pub out: PathBuf,
}

impl TrainArgs {
    /// The run's configuration.
    pub fn config(&self) -> TrainConfig {
        let stack = self
            .model
            .stack()
            .with_n_layers(self.depth)
            .with_placement(self.placement)
            .with_norm(self.norm.config())
            .with_qk_norm(self.qk_layernorm.then(|| NormKind::Layer.config()))
            .with_separate_qk_norms(self.qk_layernorm);
        let stack = self.recipes.apply(stack);
        let model = ModelConfig::new()
            .with_stack(stack)
            .with_backend(self.common.backend);
        TrainConfig::for_task(self.task.task(), model)
            .with_learning_rate(self.lr)
            .with_warmup_steps(self.warmup)
            .with_steps(self.steps)
            .with_batch_size(self.batch)
            .with_weight_decay(self.weight_decay)
            .with_independent_weight_decay(self.independent_decay)
            .with_beta_2(self.beta2)
            .with_z_loss(self.z_loss)
            .with_grad_clip(self.grad_clip)
            .with_seed(self.common.seed)
            .with_eval_every(self.eval_every)
            .with_stats_every(self.stats_every)
            .with_checkpoint_every(self.checkpoint_every)
    }
}

impl ProbeArgs {
    /// The probe's configuration.
    pub fn config(&self) -> ProbeConfig {
        let stack = self
            .model
            .stack()
            .with_zero_init_query_key(!self.random_query_key)
            .with_activation(self.activation);
        let model = ModelConfig::new()
            .with_stack(stack)
            .with_backend(self.common.backend);
        ProbeConfig::new(self.task.task(), model)
            .with_placements(self.placements.clone())
            .with_norms(self.norms.clone())
            .with_depths(self.depths.clone())
            .with_seeds(self.common.seeds(self.seeds))
            .with_batch_size(self.batch)
    }
}

impl SweepArgs {
    /// The sweep's configuration.
    pub fn config(&self) -> SweepConfig {
        let model = ModelConfig::new()
            .with_stack(self.model.stack())
            .with_backend(self.common.backend);
        SweepConfig::new(self.task.task(), model)
            .with_placements(self.placements.clone())
            .with_norm(self.norm)
            .with_depths(self.depths.clone())
            .with_warmups(self.warmups.clone())
            .with_learning_rates(self.lrs.clone())
            .with_seeds(self.common.seeds(self.seeds))
            .with_steps(self.steps)
            .with_batch_size(32)
    }

    /// The output directory.
    pub fn out(&self) -> &Path {
        &self.common.out
    }

    /// How this worker runs.
    pub fn options(&self) -> SweepOptions {
        SweepOptions {
            progress: true,
            plan: self.parallel.plan(self.common.backend),
            shard: self.shard.unwrap_or_default(),
            stale_after: std::time::Duration::from_secs(self.stale_after as u64),
        }
    }
}

impl DemoArgs {
    /// How this worker runs: its own `--jobs` and `--threads` (one job of `cores /
    /// processes` threads when it is one of several processes and `--jobs` is not given).
    pub fn options(&self) -> crate::study::DemoOptions {
        let plan = if self.processes() > 1 || self.helper {
            let jobs = self.parallel.jobs.unwrap_or(1);
            let share = crate::runner::jobs::cores() / (self.processes() * jobs);
            let threads = self.parallel.threads.unwrap_or(share.max(1));
            crate::runner::jobs::JobPlan { jobs, threads }
        } else {
            self.parallel.plan(self.common.backend)
        };
        crate::study::DemoOptions {
            progress: !self.helper,
            plan,
            stale_after: std::time::Duration::from_secs(self.stale_after as u64),
            writes_report: !self.helper,
        }
    }

    /// Worker processes on `--out`, this one included: `--processes`; by default one per
    /// core on ndarray when `--jobs` is not given, else 1. A helper starts none.
    pub fn processes(&self) -> usize {
        if self.helper {
            return 1;
        }
        let own_default = self.common.backend == Kind::Ndarray && self.parallel.jobs.is_none();
        self.processes.unwrap_or(if own_default {
            crate::runner::jobs::cores()
        } else {
            1
        })
    }

    /// Seeds of experiments A to D: `--seeds`, or [`crate::study::default_seeds`] for all
    /// the runs trained at once (`processes × jobs`; 10 with `--full`).
    pub fn seeds(&self) -> usize {
        self.seeds.unwrap_or_else(|| {
            if self.full {
                10
            } else {
                let plan = self.options().plan;
                let jobs = plan.jobs * self.processes();
                crate::study::default_seeds(crate::runner::jobs::JobPlan { jobs, ..plan })
            }
        })
    }

    /// The arguments of a helper process: the same configuration (seed count resolved),
    /// `--out`, this worker's `--jobs`, `--threads` and `--stale-after`, and `--helper`.
    pub fn helper_args(&self) -> Vec<std::ffi::OsString> {
        let plan = self.options().plan;
        let mut args: Vec<std::ffi::OsString> = vec![
            "demo".into(),
            "--backend".into(),
            self.backend().name().into(),
            "--seed".into(),
            self.seed().to_string().into(),
            "--out".into(),
            self.out().as_os_str().to_owned(),
            "--seeds".into(),
            self.seeds().to_string().into(),
            "--jobs".into(),
            plan.jobs.to_string().into(),
            "--threads".into(),
            plan.threads.to_string().into(),
            "--stale-after".into(),
            self.stale_after.to_string().into(),
            "--helper".into(),
        ];
        if self.full {
            args.push("--full".into());
        }
        args
    }

    /// The demo's configuration: the quick or full profile, with [`DemoArgs::seeds`].
    pub fn config(&self) -> crate::study::DemoConfig {
        let base = if self.full {
            crate::study::DemoConfig::full(self.backend(), self.seed())
        } else {
            crate::study::DemoConfig::quick(self.backend(), self.seed())
        };
        base.with_seed_count(self.seeds())
    }

    /// The output directory.
    pub fn out(&self) -> &Path {
        &self.common.out
    }

    /// The backend name.
    pub fn backend(&self) -> Kind {
        self.common.backend
    }

    /// The base seed.
    pub fn seed(&self) -> u64 {
        self.common.seed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_model_names_the_flags_behind_the_field() {
        let stack = TransformerStackConfig::tiny().with_n_heads(3);
        let error = stack.check().unwrap_err();
        assert_eq!(
            model_refusal(&error, &stack),
            "--d-model 32 and --heads 3: TransformerStackConfig.block.d_model (32) must be a \
             positive multiple of n_heads (3)"
        );
        // A field that no flag sets alone is introduced as the model's.
        let stack = TransformerStackConfig::tiny().with_max_seq_len(0);
        let error = stack.check().unwrap_err();
        assert_eq!(
            model_refusal(&error, &stack),
            "the model: TransformerStackConfig.vocab_size (16) and max_seq_len (0) must be \
             positive"
        );
    }
}
