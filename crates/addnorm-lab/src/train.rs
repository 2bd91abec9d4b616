//! Training one configuration: AdamW with warm-up and cosine decay, optional global-norm
//! clipping, per-step metrics, atomic checkpoints, exact resume, and a clean stop on
//! divergence.
//!
//! ```text
//! for s in start..S:
//!     batch_s  = task.training_batch(seed, s)            (a resumed run sees the same data)
//!     loss_s   = masked_cross_entropy(model(batch_s))
//!     g        = ∇loss_s;  stop if loss_s or ‖g‖ is not finite (diverged)
//!     g        ← g · min(1, c/‖g‖)                        (with --grad-clip c)
//!     θ        ← AdamW(θ, g, lr(s))
//! ```
//!
//! Files in the run directory:
//! - `config.json`: the [`TrainConfig`], everything needed to rerun;
//! - `metrics.csv`: one row per step (step, lr, loss, grad_norm, validation metrics every
//!   `eval_every` steps, per-layer gradient norms, residual RMS and attention maxima every
//!   `stats_every` steps);
//! - `checkpoints/step-NNNNNN/` and `checkpoint.json` (the index, replaced atomically);
//! - `summary.json`: the [`TrainSummary`].
//!
//! # Shapes
//! Batches are `[batch_size, 2n + 1]` token ids; the model returns `[batch, 2n + 1, vocab]`.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use addnorm::NormAutodiffBackend;
use addnorm::nn::{TransformerStack, TransformerStackConfig};
use burn::module::{AutodiffModule, Module};
use burn::optim::{AdamWConfig, GradientsParams, Optimizer};
use burn::record::{FullPrecisionSettings, NamedMpkFileRecorder, Recorder};
use burn::tensor::ElementConversion;
use indicatif::{ProgressBar, ProgressStyle};
use serde::{Deserialize, Serialize};

use crate::error::{LabError, read_json, write_json};
use crate::gradients::{
    LAYER_WEIGHTS, clip_global_norm, global_gradient_norm, layer_gradient_norms,
};
use crate::loss::{Accuracy, accuracy, masked_cross_entropy};
use crate::schedule::WarmupCosine;
use crate::task::Task;

/// Everything that defines a training run. Saved as `config.json`.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct TrainConfig {
    /// The toy task.
    pub task: Task,
    /// The model (placement, norm, depth, width...). Its vocabulary and maximum length are
    /// set from the task by [`TrainConfig::new`].
    pub model: TransformerStackConfig,
    /// Peak learning rate.
    pub learning_rate: f64,
    /// Linear warm-up steps.
    pub warmup_steps: usize,
    /// Total optimizer steps.
    pub steps: usize,
    /// Sequences per batch.
    pub batch_size: usize,
    /// AdamW's decoupled weight decay (0 gives Adam).
    pub weight_decay: f64,
    /// Clip the global gradient norm to this value, if set.
    pub grad_clip: Option<f64>,
    /// The seed of the initialization, the data and dropout.
    pub seed: u64,
    /// Evaluate on the validation set every this many steps (and at the end).
    pub eval_every: usize,
    /// Record per-layer gradient norms and residual RMS every this many steps.
    pub stats_every: usize,
    /// Write a checkpoint every this many steps (and at the end).
    pub checkpoint_every: usize,
    /// Validation sequences.
    pub validation_size: usize,
    /// The final learning rate, as a fraction of the peak.
    pub final_lr_fraction: f64,
    /// The backend it ran on (informative).
    pub backend: String,
}

impl TrainConfig {
    /// A run of `task` with `model`, fitting the model's vocabulary and length to the task,
    /// with the lab's defaults for everything else (LR 1e-3, 100 warm-up steps, 500 steps,
    /// batch 32, no weight decay, no clipping, seed 0).
    pub fn new(task: Task, model: TransformerStackConfig) -> Self {
        let model = model
            .with_vocab_size(task.vocab_size())
            .with_max_seq_len(task.seq_len());
        Self {
            task,
            model,
            learning_rate: 1e-3,
            warmup_steps: 100,
            steps: 500,
            batch_size: 32,
            weight_decay: 0.0,
            grad_clip: None,
            seed: 0,
            eval_every: 50,
            stats_every: 50,
            checkpoint_every: 100,
            validation_size: 256,
            final_lr_fraction: 0.1,
            backend: String::new(),
        }
    }

    /// The learning-rate schedule.
    pub fn schedule(&self) -> WarmupCosine {
        WarmupCosine {
            peak: self.learning_rate,
            warmup: self.warmup_steps,
            total: self.steps,
            final_fraction: self.final_lr_fraction,
        }
    }
}

/// How to run (not what to train): resume, show progress, inject a fault.
#[derive(Clone, Debug, Default)]
pub struct TrainOptions {
    /// Continue from the run directory's last checkpoint, if there is one.
    pub resume: bool,
    /// Show a progress bar on standard error.
    pub progress: bool,
    /// Replace the loss of this step by NaN: exercises the divergence path.
    pub inject_nan_at: Option<usize>,
}

/// Validation metrics.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct Evaluation {
    /// The step after which it was measured (number of optimizer steps taken).
    pub step: usize,
    /// Validation loss.
    pub loss: f64,
    /// Validation accuracy.
    pub accuracy: Accuracy,
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
    /// Every validation evaluation, in order.
    pub evaluations: Vec<Evaluation>,
    /// The first evaluated step with ≥ 99% exact-sequence accuracy.
    pub steps_to_99_exact: Option<usize>,
    /// The training loss of every completed step.
    pub losses: Vec<f64>,
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

/// What `checkpoint.json` records: where the last good state is, and the history up to it.
#[derive(Serialize, Deserialize, Clone, Debug)]
struct CheckpointIndex {
    step: usize,
    dir: String,
    losses: Vec<f64>,
    evaluations: Vec<Evaluation>,
}

type Recorder_ = NamedMpkFileRecorder<FullPrecisionSettings>;

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> LabError + '_ {
    move |e| LabError::io(path, e)
}

/// The metrics.csv header for a model of `layers` blocks.
fn metrics_header(layers: usize) -> String {
    let mut cols: Vec<String> = [
        "step",
        "lr",
        "loss",
        "grad_norm",
        "val_loss",
        "val_token_acc",
        "val_exact_acc",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for l in 1..=layers {
        cols.extend(LAYER_WEIGHTS.iter().map(|w| format!("l{l}_grad_{w}")));
    }
    cols.extend((0..=layers).map(|l| format!("rms_{l}")));
    cols.extend((1..=layers).map(|l| format!("max_logit_{l}")));
    cols.join(",")
}

/// Evaluates `model` on the validation batch without autodiff.
fn evaluate<B>(
    model: &TransformerStack<B>,
    validation: &crate::task::Batch,
    step: usize,
) -> Evaluation
where
    B: NormAutodiffBackend,
{
    let valid = model.valid();
    let device = valid.head.weight.device();
    let (inputs, targets, mask) = validation.to_tensors::<B::InnerBackend>(&device);
    let logits = valid.forward(inputs);
    let loss: f64 = masked_cross_entropy(logits.clone(), targets.clone(), mask.clone())
        .into_scalar()
        .elem();
    Evaluation {
        step,
        loss,
        accuracy: accuracy(logits, targets, mask),
    }
}

/// Keeps the rows of an existing metrics.csv whose step is below `step`.
fn truncate_metrics(path: &Path, step: usize) -> Result<Vec<String>, LabError> {
    let file = File::open(path).map_err(io(path))?;
    let mut kept = vec![];
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(io(path))?;
        let row_step = line.split(',').next().and_then(|s| s.parse::<usize>().ok());
        if i == 0 || row_step.is_some_and(|s| s < step) {
            kept.push(line);
        }
    }
    Ok(kept)
}

/// Trains `config` into the run directory `out`. A divergence is not an error: it is
/// reported in the summary, with the last good checkpoint left in place.
///
/// # Errors
/// If the run directory cannot be written, or a checkpoint cannot be saved or loaded.
pub fn train<B>(
    config: &TrainConfig,
    out: &Path,
    options: &TrainOptions,
    device: &B::Device,
) -> Result<TrainSummary, LabError>
where
    B: NormAutodiffBackend,
{
    std::fs::create_dir_all(out).map_err(io(out))?;
    write_json(&out.join("config.json"), config)?;
    let recorder = Recorder_::new();
    let index_path = out.join("checkpoint.json");
    let metrics_path = out.join("metrics.csv");
    let layers = config.model.n_layers;

    let mut model: TransformerStack<B> =
        crate::seeded::init_model(&config.model, config.seed, device);
    let adam = AdamWConfig::new()
        .with_weight_decay(config.weight_decay as f32)
        .with_epsilon(1e-8);
    let mut optimizer = adam.init::<B, TransformerStack<B>>();
    let mut start = 0;
    let mut losses = vec![];
    let mut evaluations = vec![];
    let mut last_checkpoint = None;
    let mut metrics_rows = vec![metrics_header(layers)];

    if options.resume && index_path.exists() {
        let index: CheckpointIndex = read_json(&index_path)?;
        let dir = out.join(&index.dir);
        model = model
            .load_file(dir.join("model"), &recorder, device)
            .map_err(|e| LabError::Record(format!("{}: {e}", dir.display())))?;
        let record = recorder
            .load(dir.join("optimizer"), device)
            .map_err(|e| LabError::Record(format!("{}: {e}", dir.display())))?;
        optimizer = optimizer.load_record(record);
        start = index.step;
        losses = index.losses;
        evaluations = index.evaluations;
        last_checkpoint = Some(index.step);
        if metrics_path.exists() {
            metrics_rows = truncate_metrics(&metrics_path, start)?;
        }
    }
    let mut metrics = File::create(&metrics_path).map_err(io(&metrics_path))?;
    for row in &metrics_rows {
        writeln!(metrics, "{row}").map_err(io(&metrics_path))?;
    }

    let validation = config
        .task
        .validation_set(config.seed, config.validation_size);
    let schedule = config.schedule();
    let bar = if options.progress {
        let bar = ProgressBar::new(config.steps as u64);
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix} [{elapsed_precise}] {bar:28.cyan/blue} {pos}/{len} {msg}",
            )
            .expect("valid template"),
        );
        bar.set_prefix(format!(
            "{} {}-{} L={}",
            config.task.kind.name(),
            config.model.placement,
            config.model.norm.kind_name(),
            layers
        ));
        bar.set_position(start as u64);
        bar
    } else {
        ProgressBar::hidden()
    };

    let save_checkpoint = |model: &TransformerStack<B>,
                           optimizer: &_,
                           step: usize,
                           losses: &[f64],
                           evaluations: &[Evaluation]|
     -> Result<(), LabError> {
        let rel = format!("checkpoints/step-{step:06}");
        let dir = out.join(&rel);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        model
            .clone()
            .save_file(dir.join("model"), &recorder)
            .map_err(|e| LabError::Record(e.to_string()))?;
        recorder
            .record(Optimizer::to_record(optimizer), dir.join("optimizer"))
            .map_err(|e| LabError::Record(e.to_string()))?;
        let previous: Option<CheckpointIndex> = read_json(&index_path).ok();
        write_json(
            &index_path,
            &CheckpointIndex {
                step,
                dir: rel.clone(),
                losses: losses.to_vec(),
                evaluations: evaluations.to_vec(),
            },
        )?;
        if let Some(prev) = previous.filter(|p| p.dir != rel) {
            std::fs::remove_dir_all(out.join(prev.dir)).ok();
        }
        Ok(())
    };

    let started = Instant::now();
    let mut diverged = None;
    let mut last_exact = evaluations
        .last()
        .map_or(0.0, |e: &Evaluation| e.accuracy.exact);
    for step in start..config.steps {
        let lr = schedule.at(step);
        if config.model.dropout > 0.0 {
            // Dropout draws from the backend's generator: seed it per step, so that a
            // resumed run drops the same units.
            crate::seeded::reseed::<B>(device, crate::task::stream_seed(config.seed, step as u64));
        }
        let batch = config
            .task
            .training_batch(config.seed, step, config.batch_size);
        let (inputs, targets, mask) = batch.to_tensors::<B>(device);
        let record_stats = config.stats_every > 0 && (step + 1) % config.stats_every == 0;
        let (logits, stats) = if record_stats {
            let (logits, stats) = model.forward_with_stats(inputs);
            (logits, Some(stats))
        } else {
            (model.forward(inputs), None)
        };
        let loss_tensor = masked_cross_entropy(logits, targets, mask);
        let mut loss: f64 = loss_tensor.clone().into_scalar().elem();
        if options.inject_nan_at == Some(step) {
            loss = f64::NAN;
        }
        if !loss.is_finite() {
            diverged = Some(Divergence {
                step,
                reason: format!("the training loss is {loss}"),
                last_checkpoint,
            });
            break;
        }
        let grads = loss_tensor.backward();
        let grad_norm = global_gradient_norm(&model, &grads);
        if !grad_norm.is_finite() {
            diverged = Some(Divergence {
                step,
                reason: format!("the gradient norm is {grad_norm}"),
                last_checkpoint,
            });
            break;
        }
        let layer_norms = record_stats.then(|| layer_gradient_norms(&model, &grads));
        let mut grads = GradientsParams::from_grads(grads, &model);
        if let Some(max_norm) = config.grad_clip {
            grads = clip_global_norm(&model, grads, grad_norm, max_norm);
        }
        model = optimizer.step(lr, model, grads);
        losses.push(loss);

        let done = step + 1;
        let evaluation = (done % config.eval_every.max(1) == 0 || done == config.steps)
            .then(|| evaluate(&model, &validation, done));
        if let Some(e) = evaluation {
            last_exact = e.accuracy.exact;
            evaluations.push(e);
        }
        let mut row = format!("{step},{lr:.6e},{loss:.6},{grad_norm:.6}");
        match evaluation {
            Some(e) => {
                row += &format!(
                    ",{:.6},{:.4},{:.4}",
                    e.loss, e.accuracy.token, e.accuracy.exact
                )
            }
            None => row += ",,,",
        }
        match (&layer_norms, &stats) {
            (Some(norms), Some(stats)) => {
                for n in norms.iter().flatten() {
                    row += &format!(",{n:.6e}");
                }
                for r in &stats.residual_rms {
                    row += &format!(",{r:.6}");
                }
                for m in &stats.max_attention_logit {
                    row += &format!(",{m:.6}");
                }
            }
            _ => row += &",".repeat(6 * layers + 2 * layers + 1),
        }
        writeln!(metrics, "{row}").map_err(io(&metrics_path))?;
        let elapsed = started.elapsed().as_secs_f64().max(1e-9);
        bar.set_position(done as u64);
        bar.set_message(format!(
            "loss {loss:.4} exact {:.1}% |g| {grad_norm:.3} {:.1} it/s",
            100.0 * last_exact,
            (done - start) as f64 / elapsed
        ));
        if done % config.checkpoint_every.max(1) == 0 || done == config.steps {
            save_checkpoint(&model, &optimizer, done, &losses, &evaluations)?;
            last_checkpoint = Some(done);
        }
    }
    bar.finish_and_clear();
    metrics.flush().map_err(io(&metrics_path))?;

    let wall_seconds = started.elapsed().as_secs_f64();
    let steps_completed = losses.len();
    let summary = TrainSummary {
        steps_completed,
        steps_to_99_exact: evaluations
            .iter()
            .find(|e| e.accuracy.exact >= 0.99)
            .map(|e| e.step),
        diverged,
        evaluations,
        losses,
        wall_seconds,
        steps_per_second: (steps_completed - start.min(steps_completed)) as f64
            / wall_seconds.max(1e-9),
    };
    write_json(&out.join("summary.json"), &summary)?;
    Ok(summary)
}

/// The run directory's files, for callers that want to read them back.
pub fn run_files(out: &Path) -> [PathBuf; 4] {
    [
        out.join("config.json"),
        out.join("metrics.csv"),
        out.join("checkpoint.json"),
        out.join("summary.json"),
    ]
}
