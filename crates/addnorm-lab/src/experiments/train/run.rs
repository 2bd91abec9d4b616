//! The training loop: start or resume, then for every step optimize, evaluate, record and
//! checkpoint; stop cleanly on a non-finite loss or gradient (see the [module
//! docs](super) for the formulas and files).
//!
//! # Shapes
//! Batches are `[batch_size, 2n + 1]` token ids; the model returns `[batch, 2n + 1, vocab]`.

use std::path::{Path, PathBuf};
use std::time::Instant;

use addnorm::NormAutodiffBackend;
use addnorm::kernels::adamw::FusedAdamWConfig;
use addnorm::nn::{StackStats, TransformerStack};
use burn::module::AutodiffModule;
use burn::optim::{GradientsParams, Optimizer};
use burn::tensor::ElementConversion;
use indicatif::{ProgressBar, ProgressStyle};

use super::checkpoint::{self, CheckpointIndex};
use super::config::{TrainConfig, TrainOptions};
use super::gradients::{clip_global_norm, global_gradient_norm, layer_gradient_norms};
use super::loss::{accuracy, masked_cross_entropy, mean_log_partition, objective};
use super::metrics::{MetricsFile, StepRow, header, rows_before};
use super::summary::{Divergence, Evaluation, TrainSummary};
use crate::error::{LabError, write_json};
use crate::experiments::task::Batch;

/// Where a run stands: what it resumed from, and the history since.
struct History {
    /// The validation metrics of the initial model.
    initial: Evaluation,
    start: usize,
    losses: Vec<f64>,
    grad_norms: Vec<f64>,
    evaluations: Vec<Evaluation>,
    last_checkpoint: Option<usize>,
}

/// What one optimizer step measured.
pub(crate) struct Measured {
    loss: f64,
    grad_norm: f64,
    /// Per-layer gradient norms and the forward's statistics, on statistics steps.
    stats: Option<(Vec<[f64; 6]>, StackStats)>,
}

/// Evaluates `model` on the validation batch without autodiff.
fn evaluate<B: NormAutodiffBackend>(
    model: &TransformerStack<B>,
    validation: &Batch,
    step: usize,
) -> Evaluation {
    let valid = model.valid();
    let device = valid.head.weight.device();
    let (inputs, targets, mask) = validation.to_tensors::<B::InnerBackend>(&device);
    let (logits, stats) = valid.forward_with_stats(inputs);
    let loss: f64 = masked_cross_entropy(logits.clone(), targets.clone(), mask.clone())
        .into_scalar()
        .elem();
    Evaluation {
        step,
        loss,
        log_z: mean_log_partition(logits.clone(), mask.clone()),
        max_attention_logit: stats
            .max_attention_logit
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max),
        attention_logits: stats.max_attention_logit.clone(),
        qk_gain: super::qk_gain::qk_gains(&valid),
        residual_rms: stats.residual_rms,
        accuracy: accuracy(logits, targets, mask),
    }
}

/// One step's gradients, before the update: what [`gradients`] hands to [`update`].
pub(crate) struct StepGradients<B: NormAutodiffBackend> {
    loss: f64,
    grad_norm: f64,
    /// The loss's gradients (before clipping).
    pub(crate) grads: <B as burn::tensor::backend::AutodiffBackend>::Gradients,
    /// The forward's statistics, on statistics steps.
    stats: Option<StackStats>,
}

/// The first half of step `step`: forward, the objective (masked cross-entropy and the
/// z-loss) and backward; an error names a non-finite loss or gradient norm.
pub(crate) fn gradients<B: NormAutodiffBackend>(
    model: &TransformerStack<B>,
    config: &TrainConfig,
    options: &TrainOptions,
    step: usize,
    device: &B::Device,
) -> Result<StepGradients<B>, String> {
    if config.model.block().dropout > 0.0 {
        // Dropout draws from the backend's generator: seed it per step, so that a resumed
        // run drops the same units.
        super::seeded::reseed::<B>(
            device,
            crate::stats::rng::stream_seed(config.seed, step as u64),
        );
    }
    let batch = config
        .task
        .training_batch(config.seed, step, config.batch_size);
    let (inputs, targets, mask) = batch.to_tensors::<B>(device);
    let record_stats = config.stats_every > 0 && (step + 1).is_multiple_of(config.stats_every);
    let (logits, stats) = if record_stats {
        let (logits, stats) = model.forward_with_stats(inputs);
        (logits, Some(stats))
    } else {
        (model.forward(inputs), None)
    };
    let loss_tensor = objective(logits, targets, mask, config.z_loss);
    let mut loss: f64 = loss_tensor.clone().into_scalar().elem();
    if options.inject_nan_at == Some(step) {
        loss = f64::NAN;
    }
    if !loss.is_finite() {
        return Err(format!("the training loss is {loss}"));
    }
    let grads = loss_tensor.backward();
    let grad_norm = global_gradient_norm(model, &grads);
    if !grad_norm.is_finite() {
        return Err(format!("the gradient norm is {grad_norm}"));
    }
    Ok(StepGradients {
        loss,
        grad_norm,
        grads,
        stats,
    })
}

/// The second half of a step: clipping and the optimizer's update at learning rate `lr`.
pub(crate) fn update<B, O>(
    model: TransformerStack<B>,
    optimizer: &mut O,
    config: &TrainConfig,
    lr: f64,
    step: StepGradients<B>,
) -> (TransformerStack<B>, Measured)
where
    B: NormAutodiffBackend,
    O: Optimizer<TransformerStack<B>, B>,
{
    let StepGradients {
        loss,
        grad_norm,
        grads,
        stats,
    } = step;
    let stats = stats.map(|s| (layer_gradient_norms(&model, &grads), s));
    let mut grads = GradientsParams::from_grads(grads, &model);
    if let Some(max_norm) = config.grad_clip {
        grads = clip_global_norm(&model, grads, grad_norm, max_norm);
    }
    let model = optimizer.step(lr, model, grads);
    let measured = Measured {
        loss,
        grad_norm,
        stats,
    };
    (model, measured)
}

/// Step `step` at learning rate `lr`: [`gradients`], then [`update`]. Returns the updated
/// model, or the model unchanged with the divergence.
pub(crate) fn optimize<B, O>(
    model: TransformerStack<B>,
    optimizer: &mut O,
    config: &TrainConfig,
    options: &TrainOptions,
    (step, lr): (usize, f64),
    device: &B::Device,
) -> (TransformerStack<B>, Result<Measured, String>)
where
    B: NormAutodiffBackend,
    O: Optimizer<TransformerStack<B>, B>,
{
    match gradients(&model, config, options, step, device) {
        Ok(g) => {
            let (model, measured) = update(model, optimizer, config, lr, g);
            (model, Ok(measured))
        }
        Err(reason) => (model, Err(reason)),
    }
}

/// The progress bar of a run (hidden unless `visible`), at step `start`.
fn progress_bar(config: &TrainConfig, start: usize, visible: bool) -> ProgressBar {
    if !visible {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(config.steps as u64);
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix} [{elapsed_precise}] {bar:28.cyan/blue} {pos}/{len} {msg}",
        )
        .expect("valid template"),
    );
    let m = config.model.block();
    bar.set_prefix(format!(
        "{} {}-{} L={}",
        config.task.kind.name(),
        m.placement,
        m.norm.kind_name(),
        m.n_layers
    ));
    bar.set_position(start as u64);
    bar
}

/// What a run starts from.
struct Start<B: NormAutodiffBackend, O> {
    model: TransformerStack<B>,
    optimizer: O,
    history: History,
    /// The metrics.csv rows to keep (the header, and the rows before a resumed step).
    rows: Vec<String>,
}

/// The AdamW optimizer of `config`: ε = 1e-8, β₂ and the decay as
/// [`TrainConfig::burn_weight_decay`] says. Burn's `AdamW` with each step fused
/// ([`FusedAdamWConfig`]): the same bits, and checkpoints in Burn's `AdamW` format.
pub(crate) fn adamw<B: NormAutodiffBackend>(
    config: &TrainConfig,
) -> impl Optimizer<TransformerStack<B>, B> + use<B> {
    FusedAdamWConfig::new()
        .with_weight_decay(config.burn_weight_decay() as f32)
        .with_beta_2(config.beta_2 as f32)
        .with_epsilon(1e-8)
        .init::<B, TransformerStack<B>>()
}

/// A fresh model and optimizer for `config`, or the checkpoint in `out` when resuming.
fn start_or_resume<B: NormAutodiffBackend>(
    config: &TrainConfig,
    (out, resume): (&Path, bool),
    validation: &Batch,
    device: &B::Device,
) -> Result<Start<B, impl Optimizer<TransformerStack<B>, B> + use<B>>, LabError> {
    let model: TransformerStack<B> =
        super::seeded::init_model(&config.model.stack, config.seed, device);
    // The initial model depends on the seed alone, so ℓ₀ is recomputed on a resume.
    let initial = evaluate(&model, validation, 0);
    let fresh = History {
        initial: initial.clone(),
        start: 0,
        losses: vec![],
        grad_norms: vec![],
        evaluations: vec![],
        last_checkpoint: None,
    };
    let rows = vec![header(config.model.block().n_layers)];
    let loaded = if resume {
        checkpoint::load(out, model.clone(), adamw::<B>(config), device)?
    } else {
        None
    };
    match loaded {
        None => Ok(Start {
            model,
            optimizer: adamw::<B>(config),
            history: fresh,
            rows,
        }),
        Some((model, optimizer, index)) => {
            let metrics_path = out.join("metrics.csv");
            let rows = if metrics_path.exists() {
                rows_before(&metrics_path, index.step)?
            } else {
                rows
            };
            let history = History {
                initial,
                start: index.step,
                losses: index.losses,
                grad_norms: index.grad_norms,
                evaluations: index.evaluations,
                last_checkpoint: Some(index.step),
            };
            Ok(Start {
                model,
                optimizer,
                history,
                rows,
            })
        }
    }
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
    std::fs::create_dir_all(out).map_err(|e| LabError::io(out, e))?;
    write_json(&out.join("config.json"), config)?;
    let validation = config
        .task
        .validation_set(config.seed, config.validation_size);
    let Start {
        mut model,
        mut optimizer,
        mut history,
        rows,
    } = start_or_resume::<B>(config, (out, options.resume), &validation, device)?;
    let mut metrics = MetricsFile::create(out.join("metrics.csv"), &rows)?;
    let bar = progress_bar(config, history.start, options.progress);
    let schedule = config.schedule();
    let started = Instant::now();
    let mut diverged = None;
    for step in history.start..config.steps {
        let lr = schedule.at(step);
        let (updated, measured) =
            optimize(model, &mut optimizer, config, options, (step, lr), device);
        model = updated;
        let measured = match measured {
            Ok(m) => m,
            Err(reason) => {
                let last_checkpoint = history.last_checkpoint;
                diverged = Some(Divergence {
                    step,
                    reason,
                    last_checkpoint,
                });
                break;
            }
        };
        let done = step + 1;
        history.losses.push(measured.loss);
        history.grad_norms.push(measured.grad_norm);
        let evaluation = (done % config.eval_every.max(1) == 0 || done == config.steps)
            .then(|| evaluate(&model, &validation, done));
        let row = StepRow {
            step,
            lr,
            loss: measured.loss,
            grad_norm: measured.grad_norm,
            evaluation: evaluation.as_ref(),
            stats: measured.stats.as_ref().map(|(n, s)| (n.as_slice(), s)),
        };
        metrics.push(&row.to_csv(config.model.block().n_layers))?;
        history.evaluations.extend(evaluation);
        show_progress(&bar, &history, &measured, done, started);
        if done % config.checkpoint_every.max(1) == 0 || done == config.steps {
            metrics.flush()?;
            let index = CheckpointIndex {
                step: done,
                dir: checkpoint::dir_name(done),
                losses: history.losses.clone(),
                grad_norms: history.grad_norms.clone(),
                evaluations: history.evaluations.clone(),
            };
            checkpoint::save(out, &model, &optimizer, index)?;
            history.last_checkpoint = Some(done);
        }
    }
    bar.finish_and_clear();
    metrics.flush()?;
    let summary = summarize(history, diverged, started.elapsed().as_secs_f64());
    write_json(&out.join("summary.json"), &summary)?;
    Ok(summary)
}

/// Moves the bar to `done` and shows the loss, the last exact accuracy, ‖g‖ and the speed.
fn show_progress(
    bar: &ProgressBar,
    history: &History,
    measured: &Measured,
    done: usize,
    started: Instant,
) {
    let exact = history.evaluations.last().map_or(0.0, |e| e.accuracy.exact);
    let rate = (done - history.start) as f64 / started.elapsed().as_secs_f64().max(1e-9);
    bar.set_position(done as u64);
    bar.set_message(format!(
        "loss {:.4} exact {:.1}% |g| {:.3} {rate:.1} it/s",
        measured.loss,
        100.0 * exact,
        measured.grad_norm
    ));
}

/// The summary of a run whose steps since `history.start` took `wall_seconds`.
fn summarize(history: History, diverged: Option<Divergence>, wall_seconds: f64) -> TrainSummary {
    let steps_completed = history.losses.len();
    let steps_to_99_exact = history
        .evaluations
        .iter()
        .find(|e| e.accuracy.exact >= 0.99)
        .map(|e| e.step);
    TrainSummary {
        steps_completed,
        steps_to_99_exact,
        diverged,
        initial_evaluation: Some(history.initial),
        evaluations: history.evaluations,
        losses: history.losses,
        grad_norms: history.grad_norms,
        wall_seconds,
        steps_per_second: (steps_completed - history.start.min(steps_completed)) as f64
            / wall_seconds.max(1e-9),
    }
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
