//! addnorm's modules inside standard Burn training: a [`TransformerStack`] with addnorm's
//! fused LayerNorm learns the reverse task under burn-train's `Learner`.
//!
//! ```text
//! cargo run --release --example train_reverse --features learner
//! cargo run --release --example train_reverse --features learner,wgpu   # on wgpu
//! cargo run --release --example train_reverse --features learner -- --devices 2
//! cargo run --release --example train_reverse --features learner -- --burn-adamw
//! ```
//!
//! `--devices N` trains with burn-train's multi-device strategy
//! (`ExecutionStrategy::MultiDevice`, optimizer on the main device): each batch is split
//! across N workers of the same backend device (`NdArrayDevice::Cpu` N times on the CPU;
//! on wgpu the default device N times, or pass distinct `WgpuDevice`s on a multi-GPU
//! machine), their gradients summed on the first. Our fused LayerNorm and attention
//! kernels run on every worker; the final numbers should match a single-device run's
//! within a few tenths of a percent (PERFORMANCE.md, "Several devices").
//!
//! The optimizer is addnorm's `FusedAdamW` (`addnorm::kernels::adamw`), which takes the
//! place of Burn's `AdamW` in the `Learner` unchanged: the same settings, the same bits (the
//! final loss is the same to the last digit printed), one pass per parameter.
//! `--burn-adamw` trains with Burn's `AdamW` instead, to compare.
//!
//! The `learner` feature (`burn/train` + `burn/tui`) is off by default because burn-train
//! and its dependencies take several minutes to compile, so plain `cargo test` skips this
//! example.
//!
//! The pieces a Burn user would write for their own data, each backed by addnorm:
//! - [`ReverseDataset`] (a Burn `Dataset`): sequence `i` of [`Task`] `reverse`, drawn from
//!   its own seed stream, so an epoch is a fixed set of sequences;
//! - [`ReverseBatcher`] (a Burn `Batcher`): stacks sequences into a [`Batch`] and makes
//!   tensors with [`Batch::to_tensors`];
//! - [`ReverseModel`]: the stack, with `TrainStep` (forward, [`masked_cross_entropy`],
//!   backward, global gradient norm) and `InferenceStep`;
//! - metrics: burn-train's loss, accuracy (answer positions only) and learning rate, and
//!   [`GradientNormMetric`], which reads the global gradient norm `‖g‖ = √(Σ g²)` that the
//!   train step measured (burn-train has no gradient-norm metric).
//!
//! In a terminal, burn-train shows its dashboard (press `q` to stop early); otherwise
//! [`PlainRenderer`] prints a line every 25 iterations and one per finished epoch. Logs
//! and the summary go to `$TMPDIR/addnorm-train-reverse/`.
//!
//! At the end it prints the median wall time per train iteration under the Learner
//! (data, forward, backward, metrics and the optimizer step) and the forward + backward
//! part of it, to set beside the same model's step in the lab's own loop
//! (`cargo bench --bench train_step -- --model tiny`); the README reports the two.
//!
//! ```text
//! sequence  [BOS, x₁ … x₈, SEP, x₈ … x₁]     xᵢ among 10 symbols
//! loss      masked next-token cross-entropy on the answer positions
//! model     TransformerStackConfig::tiny(): Pre-LN, d_model 32, 2 heads, d_ff 128, 2 layers
//! ```

use std::collections::{BTreeMap, HashMap};
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

use addnorm::backend::{AutodiffBackend as Ad, Backend as Inner, device};
use addnorm::kernels::adamw::FusedAdamWConfig;
use addnorm::nn::{TransformerStack, TransformerStackConfig};
use addnorm::{NormAutodiffBackend, NormBackend};
use addnorm_lab::experiments::task::{Batch, Task, TaskKind};
use addnorm_lab::experiments::train::gradients::global_gradient_norm;
use addnorm_lab::experiments::train::loss::{accuracy, masked_cross_entropy};
use addnorm_lab::experiments::train::seeded::init_model;
use burn::data::dataloader::DataLoaderBuilder;
use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::Dataset;
use burn::lr_scheduler::cosine::CosineAnnealingLrSchedulerConfig;
use burn::module::Module;
use burn::optim::{AdamWConfig, Optimizer};
use burn::prelude::*;
use burn::train::metric::state::{FormatOptions, NumericMetricState};
use burn::train::metric::{
    AccuracyInput, AccuracyMetric, Adaptor, ItemLazy, LearningRateMetric, LossInput, LossMetric,
    Metric, MetricAttributes, MetricDefinition, MetricId, MetricMetadata, MetricName, Numeric,
    NumericAttributes, NumericEntry, SerializedEntry,
};
use burn::train::renderer::{
    EvaluationName, EvaluationProgress, MetricState, MetricsRenderer, MetricsRendererEvaluation,
    MetricsRendererTraining, ProgressType, TrainingProgress,
};
use burn::train::{
    ExecutionStrategy, InferenceStep, Learner, MultiDeviceOptim, SupervisedTraining, TrainOutput,
    TrainStep, TrainingStrategy,
};

/// Fused backward calls (norms and attention) made inside train steps, and on how many
/// threads: with `--devices N`, burn-train runs the steps on its worker threads, and the
/// kernels' counters are per thread.
struct FusedOnWorkers {
    calls: std::sync::atomic::AtomicUsize,
    threads: std::sync::Mutex<Vec<std::thread::ThreadId>>,
}

impl FusedOnWorkers {
    fn record(&self, calls: usize) {
        self.calls
            .fetch_add(calls, std::sync::atomic::Ordering::Relaxed);
        let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        let id = std::thread::current().id();
        if calls > 0 && !threads.contains(&id) {
            threads.push(id);
        }
    }
}

static FUSED_ON_WORKERS: FusedOnWorkers = FusedOnWorkers {
    calls: std::sync::atomic::AtomicUsize::new(0),
    threads: std::sync::Mutex::new(Vec::new()),
};

/// When each train step started and how long its forward + backward took, to set the
/// Learner's time per iteration (the interval between starts: data, forward, backward,
/// metrics and the optimizer step) beside the lab's own loop (`benches/train_step.rs`).
static STEP_TIMES: std::sync::Mutex<Vec<(Instant, Duration)>> = std::sync::Mutex::new(Vec::new());

/// `(median interval between train steps, median forward + backward)`, over the
/// iterations of one epoch (intervals that span an epoch's validation are left out by
/// the median).
fn step_timing() -> Option<(Duration, Duration)> {
    let times = STEP_TIMES.lock().unwrap_or_else(|e| e.into_inner());
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v.get(v.len() / 2).copied()
    };
    let intervals = times.windows(2).map(|w| w[1].0 - w[0].0).collect();
    Some((
        median(intervals)?,
        median(times.iter().map(|t| t.1).collect())?,
    ))
}

/// The padding id: never a target, so the accuracy metric skips the positions set to it.
const PAD: usize = 0;

/// What the run trains, and for how long.
const TASK: Task = Task {
    kind: TaskKind::Reverse,
    length: 8,
    symbols: 10,
};
const SEED: u64 = 0;
const BATCH_SIZE: usize = 32;
const TRAIN_SEQUENCES: usize = 100 * BATCH_SIZE;
const VALID_SEQUENCES: usize = 512;
const EPOCHS: usize = 3;
const LEARNING_RATE: f64 = 3e-3;

/// Sequence `index` of `task`, from the seed stream `(seed, index)`: a fixed, reproducible
/// set of `len` sequences (a different `seed` gives a disjoint stream).
#[derive(Clone, Debug)]
pub struct ReverseDataset {
    task: Task,
    seed: u64,
    len: usize,
}

/// The training sequences: seed stream [`SEED`].
const TRAIN_SET: ReverseDataset = ReverseDataset {
    task: TASK,
    seed: SEED,
    len: TRAIN_SEQUENCES,
};

/// The validation sequences, disjoint from the training ones: seed stream `SEED + 1`.
const VALID_SET: ReverseDataset = ReverseDataset {
    task: TASK,
    seed: SEED + 1,
    len: VALID_SEQUENCES,
};

impl Dataset<Batch> for ReverseDataset {
    fn get(&self, index: usize) -> Option<Batch> {
        (index < self.len).then(|| self.task.training_batch(self.seed, index, 1))
    }

    fn len(&self) -> usize {
        self.len
    }
}

/// A batch of reverse-task sequences as tensors, each `[batch, 2n + 1]`.
#[derive(Clone, Debug)]
pub struct ReverseBatch<B: Backend> {
    /// Input token ids.
    pub inputs: Tensor<B, 2, Int>,
    /// Next-token targets.
    pub targets: Tensor<B, 2, Int>,
    /// 1 on the answer positions, 0 elsewhere.
    pub mask: Tensor<B, 2>,
}

/// Stacks one-sequence [`Batch`]es into a [`ReverseBatch`].
#[derive(Clone, Copy, Debug, Default)]
pub struct ReverseBatcher;

impl<B: Backend> Batcher<B, Batch, ReverseBatch<B>> for ReverseBatcher {
    fn batch(&self, items: Vec<Batch>, device: &B::Device) -> ReverseBatch<B> {
        let seq_len = items.first().map_or(0, |b| b.seq_len);
        let mut batch = Batch {
            inputs: vec![],
            targets: vec![],
            mask: vec![],
            batch_size: 0,
            seq_len,
        };
        for item in items {
            assert_eq!(item.seq_len, seq_len, "every sequence has length 2n + 1");
            batch.inputs.extend(item.inputs);
            batch.targets.extend(item.targets);
            batch.mask.extend(item.mask);
            batch.batch_size += item.batch_size;
        }
        let (inputs, targets, mask) = batch.to_tensors::<B>(device);
        ReverseBatch {
            inputs,
            targets,
            mask,
        }
    }
}

/// The model burn-train trains: addnorm's stack (a local type, so that it can implement
/// burn-train's step traits).
#[derive(Module, Debug)]
pub struct ReverseModel<B: Backend> {
    /// The decoder-only LM.
    pub stack: TransformerStack<B>,
}

/// What one step hands to the metrics, on the inference backend.
#[derive(Debug)]
pub struct ReverseOutput<B: Backend> {
    /// The masked cross-entropy, `[1]`.
    pub loss: Tensor<B, 1>,
    /// `[batch, seq, vocab]`.
    pub logits: Tensor<B, 3>,
    /// `[batch, seq]`.
    pub targets: Tensor<B, 2, Int>,
    /// `[batch, seq]`, 1 on the answer positions.
    pub mask: Tensor<B, 2>,
    /// The global gradient norm of a training step; `None` in validation.
    pub grad_norm: Option<f64>,
}

impl<B: NormBackend> ReverseModel<B> {
    /// Logits and loss of a batch.
    fn forward_loss(&self, batch: &ReverseBatch<B>) -> (Tensor<B, 3>, Tensor<B, 1>) {
        let logits = self.stack.forward(batch.inputs.clone());
        let loss = masked_cross_entropy(logits.clone(), batch.targets.clone(), batch.mask.clone());
        (logits, loss)
    }
}

impl<B> TrainStep for ReverseModel<B>
where
    B: NormAutodiffBackend,
{
    type Input = ReverseBatch<B>;
    // On the inner backend, so that training and validation feed the same metrics.
    type Output = ReverseOutput<B::InnerBackend>;

    fn step(&self, batch: ReverseBatch<B>) -> TrainOutput<Self::Output> {
        let started = Instant::now();
        let before = addnorm::kernels::fused::fused_calls().backward;
        let (logits, loss) = self.forward_loss(&batch);
        let grads = loss.backward();
        FUSED_ON_WORKERS.record(addnorm::kernels::fused::fused_calls().backward - before);
        let grad_norm = global_gradient_norm(self, &grads);
        STEP_TIMES
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((started, started.elapsed()));
        let output = ReverseOutput {
            loss: loss.inner(),
            logits: logits.inner(),
            targets: batch.targets.inner(),
            mask: batch.mask.inner(),
            grad_norm: Some(grad_norm),
        };
        TrainOutput::new(self, grads, output)
    }
}

impl<B: NormBackend> InferenceStep for ReverseModel<B> {
    type Input = ReverseBatch<B>;
    type Output = ReverseOutput<B>;

    fn step(&self, batch: ReverseBatch<B>) -> ReverseOutput<B> {
        let (logits, loss) = self.forward_loss(&batch);
        ReverseOutput {
            loss,
            logits,
            targets: batch.targets,
            mask: batch.mask,
            grad_norm: None,
        }
    }
}

impl<B: Backend> ItemLazy for ReverseOutput<B> {
    // Already on the inference backend: nothing to synchronize.
    type ItemSync = Self;

    fn sync(self) -> Self {
        self
    }
}

impl<B: Backend> Adaptor<LossInput<B>> for ReverseOutput<B> {
    fn adapt(&self) -> LossInput<B> {
        LossInput::new(self.loss.clone())
    }
}

impl<B: Backend> Adaptor<AccuracyInput<B>> for ReverseOutput<B> {
    /// Every position as a row, with the targets outside the answer set to [`PAD`], which
    /// the metric skips: the accuracy of the answer tokens.
    fn adapt(&self) -> AccuracyInput<B> {
        let [batch, seq, vocab] = self.logits.dims();
        let outside_answer = self.mask.clone().equal_elem(0.0);
        let targets = self
            .targets
            .clone()
            .mask_fill(outside_answer, PAD as i64)
            .reshape([batch * seq]);
        AccuracyInput::new(self.logits.clone().reshape([batch * seq, vocab]), targets)
    }
}

/// The global gradient norm of one training step, as measured by the step.
pub struct GradientNormInput(f64);

impl<B: Backend> Adaptor<GradientNormInput> for ReverseOutput<B> {
    fn adapt(&self) -> GradientNormInput {
        GradientNormInput(
            self.grad_norm
                .expect("the gradient norm is a training metric: register it with metric_train"),
        )
    }
}

/// `‖g‖ = √(Σ_params Σ g²)` of each training step, averaged over the epoch.
#[derive(Clone)]
pub struct GradientNormMetric {
    name: MetricName,
    state: NumericMetricState,
}

impl Default for GradientNormMetric {
    fn default() -> Self {
        Self {
            name: Arc::new("Gradient norm".to_string()),
            state: NumericMetricState::new(),
        }
    }
}

impl Metric for GradientNormMetric {
    type Input = GradientNormInput;

    fn name(&self) -> MetricName {
        self.name.clone()
    }

    fn attributes(&self) -> MetricAttributes {
        NumericAttributes {
            unit: None,
            higher_is_better: false,
        }
        .into()
    }

    fn update(&mut self, input: &GradientNormInput, _: &MetricMetadata) -> SerializedEntry {
        let format = FormatOptions::new(self.name()).precision(3);
        self.state.update(input.0, 1, format)
    }

    fn clear(&mut self) {
        self.state.reset()
    }
}

impl Numeric for GradientNormMetric {
    fn value(&self) -> NumericEntry {
        self.state.current_value()
    }

    fn running_value(&self) -> NumericEntry {
        self.state.running_value()
    }
}

/// Epoch means of the numeric metrics of one split, in registration-name order.
#[derive(Default)]
struct EpochMeans(BTreeMap<String, (f64, usize)>);

impl EpochMeans {
    fn add(&mut self, name: &str, entry: &NumericEntry) {
        let (value, count) = match *entry {
            NumericEntry::Value(v) => (v, 1),
            NumericEntry::Aggregated {
                aggregated_value,
                count,
            } => (aggregated_value, count),
        };
        let slot = self.0.entry(name.to_string()).or_default();
        slot.0 += value * count as f64;
        slot.1 += count;
    }

    fn line(&self) -> String {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(name, (sum, count))| format!("{name} {:.4}", sum / (*count).max(1) as f64))
            .collect();
        parts.join(", ")
    }
}

/// The renderer used when standard output is not a terminal: one line every
/// `every` training iterations (epoch means so far) and one per finished split.
pub struct PlainRenderer {
    names: HashMap<MetricId, String>,
    train: EpochMeans,
    valid: EpochMeans,
    every: usize,
}

impl PlainRenderer {
    /// A renderer that prints every `every` training iterations.
    pub fn new(every: usize) -> Self {
        Self {
            names: HashMap::new(),
            train: EpochMeans::default(),
            valid: EpochMeans::default(),
            every: every.max(1),
        }
    }

    fn record(names: &HashMap<MetricId, String>, means: &mut EpochMeans, state: MetricState) {
        if let MetricState::Numeric(entry, value) = state
            && let Some(name) = names.get(&entry.metric_id)
        {
            means.add(name, &value);
        }
    }
}

/// `epoch e/E, iteration i`, and whether the split's epoch is complete.
fn position(item: &TrainingProgress) -> (String, bool) {
    let epoch = &item.global_progress;
    let done = item
        .progress
        .as_ref()
        .is_some_and(|p| p.items_processed >= p.items_total);
    let iteration = item.iteration.unwrap_or(0);
    (
        format!(
            "epoch {}/{} iter {iteration:>4}",
            epoch.items_processed, epoch.items_total
        ),
        done,
    )
}

impl MetricsRendererTraining for PlainRenderer {
    fn update_train(&mut self, state: MetricState) {
        Self::record(&self.names, &mut self.train, state);
    }

    fn update_valid(&mut self, state: MetricState) {
        Self::record(&self.names, &mut self.valid, state);
    }

    fn render_train(&mut self, item: TrainingProgress, _: Vec<ProgressType>) {
        let (at, done) = position(&item);
        if done || item.iteration.unwrap_or(0).is_multiple_of(self.every) {
            println!("{at}  train  {}", self.train.line());
        }
        if done {
            self.train = EpochMeans::default();
        }
    }

    fn render_valid(&mut self, item: TrainingProgress, _: Vec<ProgressType>) {
        let (at, done) = position(&item);
        if done {
            println!("{at}  valid  {}", self.valid.line());
            self.valid = EpochMeans::default();
        }
    }
}

impl MetricsRendererEvaluation for PlainRenderer {
    fn update_test(&mut self, _: EvaluationName, _: MetricState) {}

    fn render_test(&mut self, _: EvaluationProgress, _: Vec<ProgressType>) {}
}

impl MetricsRenderer for PlainRenderer {
    fn manual_close(&mut self) {}

    fn register_metric(&mut self, definition: MetricDefinition) {
        self.names.insert(definition.metric_id, definition.name);
    }
}

/// The command line: `--devices N` (default 1) and `--burn-adamw`.
struct Args {
    /// Workers of the multi-device strategy (1: the default single-device training).
    devices: usize,
    /// Burn's `AdamW` instead of addnorm's `FusedAdamW` (the same step, bit for bit; for
    /// timing the two side by side).
    burn_adamw: bool,
}

/// The parsed [`Args`]; a usage message and exit code 2 on anything else.
fn args() -> Args {
    let mut args = Args {
        devices: 1,
        burn_adamw: false,
    };
    let words: Vec<String> = std::env::args().skip(1).collect();
    let mut words = words.iter();
    while let Some(flag) = words.next() {
        match flag.as_str() {
            "--burn-adamw" => args.burn_adamw = true,
            "--devices" => match words.next().map(|n| n.parse::<usize>()) {
                Some(Ok(n)) if n >= 1 => args.devices = n,
                _ => {
                    eprintln!("error: --devices takes a positive integer");
                    std::process::exit(2);
                }
            },
            _ => {
                eprintln!("usage: train_reverse [--devices N] [--burn-adamw]");
                std::process::exit(2);
            }
        }
    }
    args
}

fn main() {
    let args = args();
    let device = device();
    let artifacts = std::env::temp_dir().join("addnorm-train-reverse");
    // The metric logs of an earlier run would be read back into this run's summary.
    let _ = std::fs::remove_dir_all(&artifacts);

    let config = TransformerStackConfig::tiny()
        .with_vocab_size(TASK.vocab_size())
        .with_max_seq_len(TASK.seq_len());
    let model = ReverseModel {
        stack: init_model::<Ad>(&config, SEED, &device),
    };
    println!(
        "TransformerStack (tiny, Pre-LN, addnorm LayerNorm): {} parameters; reverse task, \
         length {}, {} symbols",
        model.num_params(),
        TASK.length,
        TASK.symbols
    );

    // addnorm's AdamW takes Burn's AdamW's place: the same settings and bits, one pass per
    // parameter (addnorm::kernels::adamw); --burn-adamw keeps Burn's for comparison.
    let trained = if args.burn_adamw {
        println!("optimizer: Burn's AdamW");
        train(
            model,
            AdamWConfig::new().init(),
            args.devices,
            &device,
            &artifacts,
        )
    } else {
        println!("optimizer: addnorm's FusedAdamW");
        let adamw = FusedAdamWConfig::new().init();
        train(model, adamw, args.devices, &device, &artifacts)
    };

    println!(
        "fused backward calls in train steps: {} on {} thread(s)",
        FUSED_ON_WORKERS
            .calls
            .load(std::sync::atomic::Ordering::Relaxed),
        FUSED_ON_WORKERS.threads.lock().map_or(0, |t| t.len())
    );
    if let Some((iteration, step)) = step_timing() {
        println!(
            "Learner: {:.2} ms per train iteration (median; forward + backward {:.2} ms of it); \
             the same model's step in the lab's loop: `cargo bench --bench train_step -- \
             --model tiny`",
            iteration.as_secs_f64() * 1e3,
            step.as_secs_f64() * 1e3
        );
    }
    let valid = VALID_SET;
    let batch = ReverseBatcher.batch(
        (0..valid.len()).filter_map(|i| valid.get(i)).collect(),
        &device,
    );
    let (logits, loss) = trained.forward_loss(&batch);
    let acc = accuracy(logits, batch.targets, batch.mask);
    println!(
        "final validation ({} sequences): loss {:.9}, token accuracy {:.2}%, exact-sequence \
         accuracy {:.2}%",
        valid.len(),
        loss.into_scalar().elem::<f64>(),
        100.0 * acc.token,
        100.0 * acc.exact
    );
}

/// Trains `model` under burn-train's `Learner` with `optim` on `devices` workers, a cosine
/// schedule and the metrics above, and returns the trained model.
fn train<O>(
    model: ReverseModel<Ad>,
    optim: O,
    devices: usize,
    device: &burn::tensor::Device<Ad>,
    artifacts: &std::path::Path,
) -> ReverseModel<Inner>
where
    O: Optimizer<ReverseModel<Ad>, Ad> + 'static,
{
    let loader_train = DataLoaderBuilder::<Ad, _, _>::new(ReverseBatcher)
        .batch_size(BATCH_SIZE)
        .shuffle(SEED)
        .build(TRAIN_SET);
    let loader_valid = DataLoaderBuilder::<Inner, _, _>::new(ReverseBatcher)
        .batch_size(BATCH_SIZE)
        .build(VALID_SET);

    let iterations = EPOCHS * TRAIN_SEQUENCES.div_ceil(BATCH_SIZE);
    let schedule = CosineAnnealingLrSchedulerConfig::new(LEARNING_RATE, iterations)
        .with_min_lr(LEARNING_RATE / 10.0)
        .init()
        .expect("a valid cosine schedule");
    let learner = Learner::new(model, optim, schedule);

    let mut training = SupervisedTraining::new(artifacts, loader_train, loader_valid)
        .metrics((LossMetric::new(), AccuracyMetric::new().with_pad_token(PAD)))
        .metric_train_numeric(GradientNormMetric::default())
        .metric_train_numeric(LearningRateMetric::new())
        .num_epochs(EPOCHS)
        .summary();
    if devices > 1 {
        println!("multi-device training: {devices} workers on {device:?}");
        training =
            training.with_training_strategy(TrainingStrategy::Default(ExecutionStrategy::multi(
                vec![device.clone(); devices],
                MultiDeviceOptim::OptimMainDevice,
            )));
    }
    if !std::io::stdout().is_terminal() {
        training = training.renderer(PlainRenderer::new(25));
    }
    let result = training.launch(learner);
    // Closes the dashboard (and prints the summary) before the final numbers.
    drop(result.renderer);
    result.model
}
