//! The `addnorm` command line: `train`, `probe`, `sweep` and `demo`.
//!
//! Every command takes `--backend` (where several are compiled in), `--seed` and `--out`,
//! and writes a `config.json` of everything needed to rerun it. Bad arguments exit with
//! code 2 and a message naming the argument; a diverged `train` exits with code 1.
//!
//! # Shapes
//! Not applicable: this module parses arguments and dispatches to the lab's commands.

use std::path::{Path, PathBuf};

use addnorm::backend::Kind;
use addnorm::nn::Placement;
use clap::{Args, Parser, Subcommand};

use crate::error::{LabError, write_json};
use crate::grid::{
    NormKind, parse_count, parse_non_negative, parse_norm, parse_placement, parse_positive,
    stack_config,
};
use crate::probe::ProbeConfig;
use crate::task::{Task, TaskKind};
use crate::train::{TrainConfig, TrainOptions};

/// Normalization layers and their training behaviour, on Burn.
#[derive(Parser, Debug)]
#[command(name = "addnorm", version, about)]
pub struct Cli {
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The lab's commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Train one configuration on a toy task.
    Train(TrainArgs),
    /// Experiment A: gradients at initialization across placements, norms and depths.
    Probe(ProbeArgs),
    /// Experiment B: warm-up and learning rate, divergence and speed.
    Sweep(SweepArgs),
    /// Quick versions of A and B, with a report and plots (the main job).
    Demo(DemoArgs),
    /// A sweep's report from the finished runs in --out alone (exit 2 naming missing runs).
    Report(ReportArgs),
    /// Join the directories of a sweep's shards into --out.
    Merge(MergeArgs),
}

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
    /// reverse, copy or sort.
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
    fn task(&self) -> Task {
        Task::new(self.task, self.length, self.symbols)
    }
}

/// `addnorm train`.
#[derive(Args, Debug)]
pub struct TrainArgs {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    task: TaskArgs,
    /// post, pre, peri (sandwich), deepnorm, rezero or none.
    #[arg(long, default_value = "pre", value_parser = parse_placement)]
    placement: Placement,
    /// layer, rms, dyt or identity.
    #[arg(long, default_value = "layer", value_parser = parse_norm)]
    norm: NormKind,
    /// Number of layers.
    #[arg(long, default_value_t = 2, value_parser = parse_count)]
    depth: usize,
    /// Model width.
    #[arg(long, default_value_t = 32, value_parser = parse_count)]
    d_model: usize,
    /// Attention heads.
    #[arg(long, default_value_t = 2, value_parser = parse_count)]
    heads: usize,
    /// Feed-forward width.
    #[arg(long, default_value_t = 128, value_parser = parse_count)]
    d_ff: usize,
    /// Peak learning rate.
    #[arg(long, default_value_t = 3e-3, value_parser = parse_positive, allow_hyphen_values = true)]
    lr: f64,
    /// Linear warm-up steps.
    #[arg(long, default_value_t = 100)]
    warmup: usize,
    /// Optimizer steps.
    #[arg(long, default_value_t = 1000, value_parser = parse_count)]
    steps: usize,
    /// Sequences per batch.
    #[arg(long, default_value_t = 32, value_parser = parse_count)]
    batch: usize,
    /// AdamW weight decay.
    #[arg(long, default_value_t = 0.0, value_parser = parse_non_negative, allow_hyphen_values = true)]
    weight_decay: f64,
    /// Clip the global gradient norm to this value.
    #[arg(long, value_parser = parse_positive, allow_hyphen_values = true)]
    grad_clip: Option<f64>,
    /// Continue from the last checkpoint in --out.
    #[arg(long)]
    resume: bool,
    /// Evaluate every this many steps.
    #[arg(long, default_value_t = 50, value_parser = parse_count)]
    eval_every: usize,
    /// Record per-layer gradient norms and residual RMS every this many steps (K).
    #[arg(long, default_value_t = 50, value_parser = parse_count)]
    stats_every: usize,
    /// Checkpoint every this many steps.
    #[arg(long, default_value_t = 100, value_parser = parse_count)]
    checkpoint_every: usize,
    /// Replace the loss of this step by NaN (tests the divergence path).
    #[arg(long, hide = true)]
    inject_nan_at: Option<usize>,
}

/// `addnorm probe`.
#[derive(Args, Debug)]
pub struct ProbeArgs {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    task: TaskArgs,
    /// Placements, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "post,pre", value_parser = parse_placement)]
    placements: Vec<Placement>,
    /// Norms, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "layer", value_parser = parse_norm)]
    norms: Vec<NormKind>,
    /// Depths, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "6,12,24,48", value_parser = parse_count)]
    depths: Vec<usize>,
    /// Seeds per cell (seed, seed + 1, ...).
    #[arg(long, default_value_t = 3, value_parser = parse_count)]
    seeds: usize,
    /// Model width.
    #[arg(long, default_value_t = 64, value_parser = parse_count)]
    d_model: usize,
    /// Attention heads.
    #[arg(long, default_value_t = 4, value_parser = parse_count)]
    heads: usize,
    /// Feed-forward width.
    #[arg(long, default_value_t = 256, value_parser = parse_count)]
    d_ff: usize,
    /// Sequences in the probe batch.
    #[arg(long, default_value_t = 16, value_parser = parse_count)]
    batch: usize,
    /// Keep W^Q and W^K at their random initialization instead of zero.
    #[arg(long)]
    random_query_key: bool,
}

/// `addnorm sweep`.
#[derive(Args, Debug)]
pub struct SweepArgs {
    #[command(flatten)]
    common: CommonArgs,
    #[command(flatten)]
    task: TaskArgs,
    /// Placements, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "post,pre", value_parser = parse_placement)]
    placements: Vec<Placement>,
    /// Norm used by every placement that has one.
    #[arg(long, default_value = "layer", value_parser = parse_norm)]
    norm: NormKind,
    /// Depths, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "4", value_parser = parse_count)]
    depths: Vec<usize>,
    /// Warm-up lengths, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "0,100")]
    warmups: Vec<usize>,
    /// Learning rates, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "3e-4,1e-3,3e-3,1e-2,3e-2", value_parser = parse_positive, allow_hyphen_values = true)]
    lrs: Vec<f64>,
    /// Seeds per cell.
    #[arg(long, default_value_t = 2, value_parser = parse_count)]
    seeds: usize,
    /// Steps per run.
    #[arg(long, default_value_t = 400, value_parser = parse_count)]
    steps: usize,
    /// Model width.
    #[arg(long, default_value_t = 32, value_parser = parse_count)]
    d_model: usize,
    #[command(flatten)]
    parallel: ParallelArgs,
    /// Take only the runs whose grid index i has i % N == K (join shards with `merge`).
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    shard: Option<crate::shard::Shard>,
    /// Seconds without a heartbeat after which another worker's claim on a run is taken
    /// over (a claim of a dead process on this host is taken over at once).
    #[arg(long, default_value_t = 300, value_parser = parse_count)]
    stale_after: usize,
}

/// `addnorm demo`.
#[derive(Args, Debug)]
pub struct DemoArgs {
    #[command(flatten)]
    common: CommonArgs,
    /// Seeds of both experiments. Default: 3 at one job, 4 at two, up to 10 (the time
    /// saved by running runs at once goes to more seeds).
    #[arg(long, value_parser = parse_count)]
    seeds: Option<usize>,
    #[command(flatten)]
    parallel: ParallelArgs,
    /// Seconds without a heartbeat after which another worker's claim is taken over (a
    /// claim of a dead process on this host is taken over at once).
    #[arg(long, default_value_t = 300, value_parser = parse_count)]
    stale_after: usize,
}

/// How many runs go at once in this process.
#[derive(Args, Debug, Clone)]
pub struct ParallelArgs {
    /// Runs trained at once in this process. Default: the core count on ndarray, 1 on a GPU.
    #[arg(long, value_parser = parse_count)]
    pub jobs: Option<usize>,
    /// Rayon threads per run. Default: cores / jobs.
    #[arg(long, value_parser = parse_count)]
    pub threads: Option<usize>,
}

impl ParallelArgs {
    /// The plan for `backend`.
    pub fn plan(&self, backend: &str) -> crate::jobs::JobPlan {
        crate::jobs::JobPlan::new(self.jobs, self.threads, backend)
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

fn parse_shard(s: &str) -> Result<crate::shard::Shard, String> {
    s.parse()
}

fn parse_backend(s: &str) -> Result<Kind, String> {
    s.parse()
}

fn parse_task(s: &str) -> Result<TaskKind, String> {
    TaskKind::from_name(s)
        .ok_or_else(|| format!("unknown task {s:?}; expected reverse, copy or sort"))
}

/// Checks that `--out` can be created and written, before any work starts.
fn check_writable(out: &Path) -> Result<(), String> {
    // Unique to the process: workers sharing --out start together.
    let probe = out.join(format!(".addnorm-write-test-{}", std::process::id()));
    std::fs::create_dir_all(out)
        .and_then(|_| std::fs::write(&probe, b""))
        .and_then(|_| std::fs::remove_file(&probe))
        .map_err(|e| format!("--out {}: cannot write there: {e}", out.display()))
}

/// Runs `$body` with `$B` bound to the autodiff backend named by `$name` and `$device` to
/// its device.
macro_rules! with_backend {
    ($name:expr, |$B:ident, $device:ident| $body:expr) => {{
        match $name.parse::<addnorm::backend::Kind>() {
            #[cfg(feature = "ndarray")]
            Ok(addnorm::backend::Kind::Ndarray) => {
                type $B = addnorm::backend::ndarray::AutodiffBackend;
                let $device = addnorm::backend::ndarray::device();
                $body
            }
            #[cfg(feature = "wgpu")]
            Ok(addnorm::backend::Kind::Wgpu) => {
                type $B = addnorm::backend::wgpu::AutodiffBackend;
                let $device = addnorm::backend::wgpu::device();
                $body
            }
            #[cfg(feature = "cuda")]
            Ok(addnorm::backend::Kind::Cuda) => {
                type $B = addnorm::backend::cuda::AutodiffBackend;
                let $device = addnorm::backend::cuda::device();
                $body
            }
            Ok(other) => Err(LabError::Invalid(format!(
                "backend {other} is not compiled in"
            ))),
            Err(message) => Err(LabError::Invalid(message)),
        }
    }};
}
pub(crate) use with_backend;

impl TrainArgs {
    /// The run's configuration.
    pub fn config(&self) -> TrainConfig {
        let model = stack_config(
            self.d_model,
            self.heads,
            self.d_ff,
            self.depth,
            self.placement,
            self.norm,
        );
        let mut config = TrainConfig::new(self.task.task(), model);
        config.learning_rate = self.lr;
        config.warmup_steps = self.warmup;
        config.steps = self.steps;
        config.batch_size = self.batch;
        config.weight_decay = self.weight_decay;
        config.grad_clip = self.grad_clip;
        config.seed = self.common.seed;
        config.eval_every = self.eval_every;
        config.stats_every = self.stats_every;
        config.checkpoint_every = self.checkpoint_every;
        config.backend = self.common.backend.name().to_string();
        config
    }
}

fn run_train(args: &TrainArgs) -> Result<i32, LabError> {
    let config = args.config();
    let options = TrainOptions {
        resume: args.resume,
        progress: true,
        inject_nan_at: args.inject_nan_at,
    };
    let out = &args.common.out;
    let summary = with_backend!(args.common.backend.name(), |B, device| {
        crate::train::train::<B>(&config, out, &options, &device)
    })?;
    if let Some(d) = &summary.diverged {
        let kept =
            d.last_checkpoint
                .map_or("no checkpoint was written before it".to_string(), |s| {
                    format!(
                        "the last good checkpoint (step {s}) is kept in {}",
                        out.display()
                    )
                });
        eprintln!("error: diverged at step {}: {}; {kept}", d.step, d.reason);
        return Ok(1);
    }
    let e = summary.final_evaluation();
    println!(
        "trained {} steps in {:.1}s ({:.1} steps/s); validation loss {:.4}, token accuracy {:.1}%, exact {:.1}%{}",
        summary.steps_completed,
        summary.wall_seconds,
        summary.steps_per_second,
        e.map_or(f64::NAN, |e| e.loss),
        100.0 * e.map_or(0.0, |e| e.accuracy.token),
        100.0 * e.map_or(0.0, |e| e.accuracy.exact),
        summary
            .steps_to_99_exact
            .map_or(String::new(), |s| format!("; 99% exact at step {s}")),
    );
    println!("files: {}", out.display());
    Ok(0)
}

impl ProbeArgs {
    /// The probe's configuration.
    pub fn config(&self) -> ProbeConfig {
        ProbeConfig {
            task: self.task.task(),
            placements: self.placements.clone(),
            norms: self.norms.clone(),
            depths: self.depths.clone(),
            seeds: self.common.seeds(self.seeds),
            d_model: self.d_model,
            n_heads: self.heads,
            d_ff: self.d_ff,
            batch_size: self.batch,
            zero_init_query_key: !self.random_query_key,
            backend: self.common.backend.name().to_string(),
        }
    }
}

fn run_probe(args: &ProbeArgs) -> Result<i32, LabError> {
    let config = args.config();
    let out = &args.common.out;
    write_json(&out.join("config.json"), &config)?;
    let report = with_backend!(args.common.backend.name(), |B, device| {
        crate::probe::probe::<B>(&config, Some(out), true, &device)
    })?;
    print!("{}", crate::report::probe_table(&report));
    println!("expected (Xiong et al. 2020, Theorem 1): post ≈ 0, pre ≈ −0.5");
    println!("files: {}", out.join("probe.json").display());
    Ok(0)
}

/// Parses the process arguments and runs the command; returns the exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = e.exit_code();
            e.print().ok();
            return code;
        }
    };
    let (backend, out) = match &cli.command {
        Command::Train(a) => (Some(a.common.backend), &a.common.out),
        Command::Probe(a) => (Some(a.common.backend), &a.common.out),
        Command::Sweep(a) => (Some(a.common.backend), &a.common.out),
        Command::Demo(a) => (Some(a.common.backend), &a.common.out),
        Command::Report(a) => (None, &a.out),
        Command::Merge(a) => (None, &a.out),
    };
    // Both checks come before any work: a missing driver would otherwise panic inside
    // Burn's device thread, and an unwritable --out would lose a finished run.
    if let Err(message) = backend
        .map_or(Ok(()), |b| b.check_available())
        .and_then(|()| check_writable(out))
    {
        eprintln!("error: {message}");
        return 2;
    }
    let result = match &cli.command {
        Command::Train(a) => run_train(a),
        Command::Probe(a) => run_probe(a),
        Command::Sweep(a) => crate::sweep::run(a),
        Command::Demo(a) => crate::demo::run(a),
        Command::Report(a) => crate::collect::run(&a.out),
        Command::Merge(a) => crate::merge::run(&a.dirs, &a.out),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

impl SweepArgs {
    /// The sweep's configuration.
    pub fn config(&self) -> crate::sweep::SweepConfig {
        crate::sweep::SweepConfig {
            task: self.task.task(),
            placements: self.placements.clone(),
            norm: self.norm,
            depths: self.depths.clone(),
            warmups: self.warmups.clone(),
            learning_rates: self.lrs.clone(),
            seeds: self.common.seeds(self.seeds),
            steps: self.steps,
            d_model: self.d_model,
            batch_size: 32,
            backend: self.common.backend.name().to_string(),
        }
    }

    /// The output directory.
    pub fn out(&self) -> &Path {
        &self.common.out
    }

    /// How this worker runs.
    pub fn options(&self) -> crate::sweep::SweepOptions {
        crate::sweep::SweepOptions {
            progress: true,
            plan: self.parallel.plan(self.common.backend.name()),
            shard: self.shard.unwrap_or_default(),
            stale_after: std::time::Duration::from_secs(self.stale_after as u64),
        }
    }
}

impl DemoArgs {
    /// How this worker runs.
    pub fn options(&self) -> crate::demo::DemoOptions {
        crate::demo::DemoOptions {
            progress: true,
            plan: self.parallel.plan(self.common.backend.name()),
            stale_after: std::time::Duration::from_secs(self.stale_after as u64),
        }
    }

    /// Seeds of both experiments: `--seeds`, or [`crate::demo::default_seeds`] for the plan.
    pub fn seeds(&self) -> usize {
        self.seeds
            .unwrap_or_else(|| crate::demo::default_seeds(self.options().plan))
    }

    /// The output directory.
    pub fn out(&self) -> &Path {
        &self.common.out
    }

    /// The backend name.
    pub fn backend(&self) -> &str {
        self.common.backend.name()
    }

    /// The base seed.
    pub fn seed(&self) -> u64 {
        self.common.seed
    }
}
