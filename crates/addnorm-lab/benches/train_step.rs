//! One training step of addnorm's `TransformerStack` on `Autodiff<NdArray<f32>>` as a
//! library user runs it, against the same model in PyTorch; then in the `addnorm`
//! binary's tuned loop; and, as the second baseline, the same model on the composite path
//! (Burn tensor ops, differentiated op by op) and with Burn's built-in norms
//! (`burn::nn::LayerNorm` / `RmsNorm`, through `NormConfig::BurnLayer` / `BurnRms`).
//!
//! ```text
//! cargo bench --bench train_step
//! cargo bench --bench train_step -- --steps 60     # repetitions per model (default 40)
//! cargo bench --bench train_step -- --no-torch     # without the PyTorch column
//! cargo bench --bench train_step -- --no-tuned     # without the tuned loop
//! cargo bench --bench train_step -- --model T128 --fused-only --no-torch   # to profile
//! cargo bench --bench train_step -- --fused-adamw  # FusedAdamW in your loop too
//! cargo bench --bench train_step -- --model d128 --pairs 6   # torch / yours in 6 pairs
//! cargo bench --bench train_step -- --model d128 --fused-only --no-torch --no-tuned \
//!     --pairs 10 --against /tmp/train_step-old   # this build against another, 10 pairs
//! ```
//!
//! Any other argument prints this usage and exits with code 2 (`--help` included), before
//! anything runs.
//!
//! **Your loop** (the headline column) is what a user who adds `addnorm` to their model
//! gets: the step called from the main thread, which is no rayon worker, with the default
//! allocator, and the loss in Burn's ops (`log_softmax` + `gather`). Each model's step is
//! timed in a child process of its own (`--alone NAME`), where nothing else has run: in
//! one shared process the earlier models and variants change what glibc hands back
//! (kernels' PERFORMANCE.md §13). **Tuned** is the same
//! step after the `addnorm` binary's process-wide settings
//! (`addnorm::kernels::cpu::allocator::keep_freed_memory`, steps on a worker of a rayon
//! pool) and with the binary's loss and optimizer (addnorm's fused cross-entropy and
//! `FusedAdamW`, which computes Burn's AdamW bits in one pass per parameter); the settings
//! cannot be undone within a process, so the tuned loop runs after the user's. Your loop
//! keeps Burn's `AdamW` unless `--fused-adamw` gives it `FusedAdamW` too.
//!
//! The torch column is the same model written in PyTorch
//! (`crates/addnorm-lab/benches/torch_train_step.py`: Pre-LN, SDPA attention, exact GELU,
//! AdamW, masked cross-entropy), run as a child process with the same thread count before
//! the Rust variants; torch / x above 1 means addnorm is faster. GFLOP/s counts the step's
//! matrix products ([`step_flops`]); % peak divides it by the f32 FMA peak of the bench's
//! threads, measured before the runs (`addnorm::kernels::cpu::peak`), the arithmetic behind
//! issue 25's target of half the peak on d128.
//!
//! **Pairs** (`--pairs N`, [`pairs`]): the main table runs PyTorch on every model before
//! your loop on any, so on a shared host its ratio carries the host's drift between the
//! two. With `--pairs N` the bench ends with each model's torch / yours over `N` rounds of
//! two child processes back to back, the first alternating: the median of the rounds'
//! ratios, their range, and how many rounds addnorm won. Issue 25's targets are read there,
//! and printed under them ([`targets`]): each model no slower than PyTorch, the d128 step
//! in at most 0.7× its time and at half the peak or more, each with the pairs' median, their
//! range, and "met" or "not met" by the median.
//! With `--against PATH` (another build of this bench, copied out of `target/` before
//! rebuilding), the pairs run that build's `--alone NAME` instead of PyTorch: the median
//! of old / new, what a change bought on a host too noisy for single runs. Given a copy of
//! this very build, the pairs measure the host's noise floor: 16 pairs of d128 gave 0.99×
//! and 1.00× on the 2-core Ice Lake VM, single pairs 0.68–1.21× (kernels' PERFORMANCE.md
//! §37), so a change under about 3% a step needs several such runs.
//!
//! A step is what `addnorm train` does per batch: forward, masked cross-entropy, backward,
//! `GradientsParams`, AdamW step. Every variant starts from the same seeded weights and
//! sees the same batches (the reverse task: length 8, 10 symbols, batch 32, `[32, 17]`
//! tokens). The composite variant runs its forward under a `ForceComposite` guard, which
//! sends every kernel down the composite path; the fused variant is checked to take the
//! fused kernels. Within a loop the variants are timed in alternating blocks of
//! consecutive steps (see `ROUNDS`), so that a change of machine load hits all alike.
//!
//! **Heap allocations.** The bench's global allocator is the system allocator (glibc's
//! malloc, the default) counting its calls and bytes (one relaxed atomic add each, see
//! [`counting`]). In each model's child process, after the timed steps, a fresh model runs
//! a few more fused user-loop steps with the counts read at the phase boundaries; the last
//! table gives each phase's median allocations and bytes per step.

use std::hint::black_box;
use std::time::{Duration, Instant};

use addnorm::kernels::adamw::{FusedAdamW, FusedAdamWConfig};
use addnorm::kernels::composite::ForceComposite;
use addnorm::kernels::cpu::allocator::keep_freed_memory;
use addnorm::kernels::cpu::dispatch::detected;
use addnorm::kernels::cpu::fused_calls;
use addnorm::kernels::cpu::gemm::{direct_kernel, matrixmultiply_forks};
use addnorm::kernels::cpu::peak::fma_peak_gflops;
use addnorm::nn::{NormConfig, TransformerStack, TransformerStackConfig};
use addnorm_lab::experiments::task::{Task, TaskKind};
use addnorm_lab::experiments::train::loss::{masked_cross_entropy, objective};
use addnorm_lab::experiments::train::seeded::init_model;
use burn::backend::{Autodiff, NdArray};
use burn::optim::adaptor::OptimizerAdaptor;
use burn::optim::{AdamW, AdamWConfig, GradientsParams, Optimizer};
use burn::tensor::{Int, Tensor, TensorData};

type Ad = Autodiff<NdArray<f32>>;

#[path = "train_step/pairs.rs"]
mod pairs;
#[path = "train_step/targets.rs"]
mod targets;

/// The system allocator, counting what it hands out: the bench's global allocator.
mod counting {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

    /// Allocation calls (`alloc`, `alloc_zeroed`, `realloc`) so far, in every thread.
    static CALLS: AtomicU64 = AtomicU64::new(0);
    /// Bytes those calls asked for (a `realloc` counts its new size).
    static BYTES: AtomicU64 = AtomicU64::new(0);

    /// [`System`] with two counters.
    pub struct Counting;

    fn count(bytes: usize) {
        CALLS.fetch_add(1, Relaxed);
        BYTES.fetch_add(bytes as u64, Relaxed);
    }

    // SAFETY: every call is forwarded unchanged to `System`, which upholds the contract.
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            count(layout.size());
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { System.alloc(layout) }
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            count(layout.size());
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { System.alloc_zeroed(layout) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { System.dealloc(ptr, layout) }
        }

        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            count(new_size);
            // SAFETY: forwarded with the caller's guarantees.
            unsafe { System.realloc(ptr, layout, new_size) }
        }
    }

    /// `(calls, bytes)` so far.
    pub fn snapshot() -> [u64; 2] {
        [CALLS.load(Relaxed), BYTES.load(Relaxed)]
    }
}

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

/// `(inputs, targets, mask)` of one batch, as `Batch::to_tensors` returns them.
type Tensors = (Tensor<Ad, 2, Int>, Tensor<Ad, 2, Int>, Tensor<Ad, 2>);

const TASK: Task = Task {
    kind: TaskKind::Reverse,
    length: 8,
    symbols: 10,
};
const BATCH_SIZE: usize = 32;
/// Distinct batches the steps cycle through.
const BATCHES: usize = 8;
const WARMUP_STEPS: usize = 5;

/// A model, its optimizer and the batches it trains on.
struct Trainer {
    model: Option<TransformerStack<Ad>>,
    optimizer: Adam,
    batches: Vec<Tensors>,
    next: usize,
    /// Which loss the step takes: Burn's ops (the user's loop) or the fused kernel.
    mode: Loop,
    /// The last step's heap allocations per phase: `(calls, bytes)` for forward, backward
    /// and AdamW.
    allocations: [[u64; 2]; 3],
}

impl Trainer {
    fn new(config: &TransformerStackConfig, batches: Batches, mode: Loop) -> Self {
        let device = Default::default();
        Self {
            model: Some(init_model::<Ad>(config, 0, &device)),
            optimizer: Adam::for_loop(mode),
            batches: (0..BATCHES)
                .map(|step| batches.make(step, &device))
                .collect(),
            next: 0,
            mode,
            allocations: [[0; 2]; 3],
        }
    }

    /// One optimizer step; returns its wall time, split into its phases.
    fn step(&mut self) -> Phases {
        let (inputs, targets, mask) = self.batches[self.next % BATCHES].clone();
        self.next += 1;
        let counted = counting::snapshot();
        let start = Instant::now();
        let model = self
            .model
            .take()
            .expect("the model is put back after each step");
        let logits = model.forward(inputs);
        let loss = match self.mode {
            Loop::User { .. } => masked_cross_entropy(logits, targets, mask),
            // The lab's objective: addnorm's fused cross-entropy kernel.
            Loop::Tuned => objective(logits, targets, mask, 0.0),
        };
        // NdArray runs eagerly: the phases end where their last op returns.
        let forward = start.elapsed();
        let after_forward = counting::snapshot();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        let backward = start.elapsed();
        let after_backward = counting::snapshot();
        let model = match &mut self.optimizer {
            Adam::Burn(optimizer) => optimizer.step(1e-3, model, grads),
            Adam::Fused(optimizer) => optimizer.step(1e-3, model, grads),
        };
        // Reading one weight back makes sure nothing is deferred.
        black_box(model.head.weight.val().into_data());
        self.model = Some(model);
        let total = start.elapsed();
        let marks = [counted, after_forward, after_backward, counting::snapshot()];
        self.allocations =
            std::array::from_fn(|p| std::array::from_fn(|i| marks[p + 1][i] - marks[p][i]));
        Phases([forward, backward - forward, total - backward, total])
    }
}

/// A loop's AdamW, with Burn's defaults: Burn's own in the user's loop (what a user's
/// code has today), addnorm's [`FusedAdamW`] (the same bits, one pass per parameter) in
/// the tuned loop, as the `addnorm` binary runs it, and in the user's loop with
/// `--fused-adamw`.
enum Adam {
    Burn(OptimizerAdaptor<AdamW, TransformerStack<Ad>, Ad>),
    Fused(OptimizerAdaptor<FusedAdamW, TransformerStack<Ad>, Ad>),
}

impl Adam {
    fn for_loop(mode: Loop) -> Self {
        match mode {
            Loop::User { fused_adamw: false } => Self::Burn(AdamWConfig::new().init()),
            Loop::User { fused_adamw: true } | Loop::Tuned => {
                Self::Fused(FusedAdamWConfig::new().init())
            }
        }
    }
}

/// One step's `[forward + loss, backward + GradientsParams, AdamW, total]` wall times.
#[derive(Clone, Copy, Debug)]
struct Phases([Duration; 4]);

impl Phases {
    fn total(&self) -> Duration {
        self.0[3]
    }

    /// The per-phase medians of `steps` (each phase's own median).
    fn medians(steps: &[Phases]) -> Phases {
        Phases(std::array::from_fn(|i| {
            median(steps.iter().map(|p| p.0[i]).collect())
        }))
    }

    /// `forward / backward / optimizer` in ms.
    fn show(&self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        format!(
            "{:.2} / {:.2} / {:.2}",
            ms(self.0[0]),
            ms(self.0[1]),
            ms(self.0[2])
        )
    }
}

/// Where a model's batches come from.
#[derive(Clone, Copy, Debug)]
enum Batches {
    /// The reverse task, [`BATCH_SIZE`] sequences of its length.
    Reverse,
    /// `[batch, seq]` random symbols, the second half of the positions counted in the loss
    /// (sequences longer than the toy tasks make, for the issue's T = 128 model).
    Random { batch: usize, seq: usize },
}

impl Batches {
    fn make(self, step: usize, device: &burn::tensor::Device<Ad>) -> Tensors {
        match self {
            Batches::Reverse => TASK
                .training_batch(0, step, BATCH_SIZE)
                .to_tensors::<Ad>(device),
            Batches::Random { batch, seq } => {
                let shape = [batch, seq];
                let symbols = |salt: usize| -> Vec<i64> {
                    (0..batch * seq)
                        .map(|i| {
                            3 + ((i * 7919 + (step * 2 + salt) * 104_729) % TASK.symbols) as i64
                        })
                        .collect()
                };
                let mask: Vec<f32> = (0..batch * seq)
                    .map(|i| f32::from(u8::from(i % seq > seq / 2)))
                    .collect();
                (
                    Tensor::from_data(TensorData::new(symbols(0), shape), device),
                    Tensor::from_data(TensorData::new(symbols(1), shape), device),
                    Tensor::from_data(TensorData::new(mask, shape), device),
                )
            }
        }
    }

    fn steps(self, steps: usize) -> usize {
        match self {
            Batches::Reverse => steps,
            Batches::Random { .. } => (steps / 4).max(5),
        }
    }
}

/// PyTorch's timings of one model, from `crates/addnorm-lab/benches/torch_train_step.py`.
#[derive(Clone, Debug)]
struct TorchTiming {
    model: String,
    /// Median step, ms.
    median_ms: f64,
    /// Per-phase medians `forward / backward / optimizer`, ms.
    phases: String,
}

/// PyTorch's timings per model (empty when `python3` with torch is not at hand, or with
/// `--no-torch`).
fn torch_timings(steps: usize, model: Option<&str>) -> Vec<TorchTiming> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/torch_train_step.py");
    let threads = rayon::current_num_threads().to_string();
    let Ok(output) = std::process::Command::new("python3")
        .args([script, "--threads", &threads, "--steps", &steps.to_string()])
        .args(model.map(|name| ["--model", name]).into_iter().flatten())
        .output()
    else {
        return vec![];
    };
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).ok()?;
            let phases: Vec<String> = value["phases_ms"]
                .as_array()?
                .iter()
                .map(|v| format!("{:.2}", v.as_f64().unwrap_or(f64::NAN)))
                .collect();
            Some(TorchTiming {
                model: value["model"].as_str()?.to_string(),
                median_ms: value["median_ms"].as_f64()?,
                phases: phases.join(" / "),
            })
        })
        .collect()
}

/// The middle value of `values` (the upper one of an even count).
fn median<T: Ord + Copy>(mut values: Vec<T>) -> T {
    values.sort_unstable();
    values[values.len() / 2]
}

/// The same model with Burn's built-in norm of the same kind.
fn with_burn_norms(config: &TransformerStackConfig) -> TransformerStackConfig {
    let norm = match &config.block.norm {
        NormConfig::Rms(c) => {
            NormConfig::BurnRms(burn::nn::RmsNormConfig::new(0).with_epsilon(c.epsilon))
        }
        _ => NormConfig::BurnLayer(burn::nn::LayerNormConfig::new(0)),
    };
    config.clone().with_norm(norm)
}

/// Rounds of blocks: each variant runs its steps in [`ROUNDS`] blocks of consecutive
/// steps, the variants' blocks alternating, so a change of machine load hits all alike
/// while each block runs as training does (one model step after step; interleaving single
/// steps of different models measured each variant in the others' cache and allocator
/// state, up to 1.6× slower for the fused one).
const ROUNDS: usize = 3;

/// Median step times of `config` over `steps` steps per variant: the fused step's
/// phases, then the composite and burn::nn steps' totals (zero with `fused_only`).
///
/// # Panics
/// If a fused step runs no fused kernel, or a composite or Burn step runs one.
fn compare(
    config: &TransformerStackConfig,
    batches: Batches,
    steps: usize,
    (fused_only, mode): (bool, Loop),
) -> (Phases, Duration, Duration) {
    let mut fused = Trainer::new(config, batches, mode);
    let mut composite = Trainer::new(config, batches, mode);
    let mut burn_nn = Trainer::new(&with_burn_norms(config), batches, mode);
    let fused_step = |trainer: &mut Trainer| {
        let before = fused_calls();
        let phases = trainer.step();
        let after = fused_calls();
        assert!(
            after.forward > before.forward && after.backward > before.backward,
            "the fused variant did not take the fused kernels"
        );
        phases
    };
    let composite_step = |trainer: &mut Trainer| {
        let _composite = ForceComposite::new();
        let before = fused_calls();
        let phases = trainer.step();
        assert_eq!(
            fused_calls(),
            before,
            "the composite variant ran a fused kernel"
        );
        phases
    };
    // One block: warm-up steps, then `len` timed ones.
    let block = |trainer: &mut Trainer, step: &dyn Fn(&mut Trainer) -> Phases, len: usize| {
        (0..WARMUP_STEPS + len)
            .map(|_| step(trainer))
            .skip(WARMUP_STEPS)
            .collect::<Vec<_>>()
    };
    let per_block = steps.max(1).div_ceil(ROUNDS);
    let (mut fused_times, mut composite_times, mut burn_times) = (vec![], vec![], vec![]);
    for _ in 0..ROUNDS {
        fused_times.extend(block(&mut fused, &fused_step, per_block));
        if !fused_only {
            composite_times.extend(block(&mut composite, &composite_step, per_block));
            burn_times.extend(block(&mut burn_nn, &composite_step, per_block));
        }
    }
    let total = |times: &[Phases]| {
        if times.is_empty() {
            Duration::ZERO
        } else {
            Phases::medians(times).total()
        }
    };
    (
        Phases::medians(&fused_times),
        total(&composite_times),
        total(&burn_times),
    )
}

fn model_config(base: TransformerStackConfig, batches: Batches) -> TransformerStackConfig {
    let seq = match batches {
        Batches::Reverse => TASK.seq_len(),
        Batches::Random { seq, .. } => seq,
    };
    base.with_vocab_size(TASK.vocab_size())
        .with_max_seq_len(seq)
}

fn main() {
    let options = Options::parse(std::env::args().skip(1)).unwrap_or_else(|refusal| {
        eprintln!("train_step: {refusal}\n\n{USAGE}");
        std::process::exit(2)
    });
    if let Some(model) = &options.alone {
        return print_alone(&options, model);
    }
    // The headline: a library user's own loop, on this (main) thread, with the default
    // allocator. Then, unless `--no-tuned`, the `addnorm` binary's settings, applied after
    // the user's loop has run since they cannot be undone: `keep_freed_memory` and the
    // steps on a worker of a rayon pool.
    // The machine's measured f32 FMA peak on the bench's threads, before anything else runs.
    let peak = fma_peak_gflops(rayon::current_num_threads(), 7);
    let torch = if options.torch {
        torch_timings(options.steps, None)
    } else {
        vec![]
    };
    let mut user = run(&options, options.user_loop());
    let this = std::env::current_exe().expect("the bench's path");
    // The headline column: each model's fused step alone in a fresh process, as a user's
    // program runs it, not after the other models and variants have shaped this process's
    // heap (glibc's mmap threshold rises as large buffers are freed, so later runs get
    // already-mapped memory). The in-process times stay for the ratios' baselines.
    for measured in &mut user {
        (measured.fused, measured.allocations) = alone(&this, &options, measured.name);
    }
    let tuned = if options.tuned {
        keep_freed_memory();
        rayon::ThreadPoolBuilder::new()
            .build()
            .expect("a rayon pool can be built")
            .install(|| run(&options, Loop::Tuned))
    } else {
        vec![]
    };
    report(&torch, &user, &tuned, peak);
    if options.pairs > 0 {
        report_pairs(&options, &user, &this, peak);
    }
}

/// `--pairs N`: each measured model's torch / yours, or with `--against PATH` the other
/// build's / yours, over `N` alternated rounds of child processes ([`pairs`]); `this` is
/// this bench's own executable, which times "yours".
fn report_pairs(options: &Options, user: &[Measured], this: &std::path::Path, peak: Option<f64>) {
    let theirs_label = if options.against.is_some() {
        "other"
    } else {
        "torch"
    };
    println!(
        "\n{theirs_label} / yours in {} alternated pairs of child processes (your loop, {} \
         threads; the first of each pair alternates; above 1: this build is faster)",
        options.pairs,
        rayon::current_num_threads()
    );
    println!("{}", pairs::header(theirs_label));
    let ms = |phases: Phases| phases.total().as_secs_f64() * 1e3;
    let mut all = Vec::with_capacity(user.len());
    for m in user {
        let theirs = || match &options.against {
            Some(other) => Some(ms(alone(other, options, m.name).0)),
            None => torch_timings(options.steps, Some(m.name))
                .first()
                .map(|t| t.median_ms),
        };
        let yours = || ms(alone(this, options, m.name).0);
        let measured = pairs::measure(options.pairs, theirs, yours);
        println!("{}", pairs::row(m.name, theirs_label, &measured));
        all.push(measured);
    }
    if options.against.is_none() {
        let models: Vec<targets::Measured<'_>> = user
            .iter()
            .zip(&all)
            .map(|(m, pairs)| targets::Measured {
                name: m.name,
                pairs,
                flops: m.flops,
            })
            .collect();
        let lines = targets::lines(&models, peak);
        if !lines.is_empty() {
            println!("\nIssue 25's targets on this machine, from these pairs");
            lines.iter().for_each(|line| println!("{line}"));
        }
    }
}

/// The bench's usage, printed on an unknown argument.
const USAGE: &str = "usage: cargo bench --bench train_step -- [--steps N] [--no-torch] \
[--no-tuned] [--model TEXT] [--fused-only] [--fused-adamw] [--pairs N] [--against PATH]";

/// The bench's command line, parsed once (see the module docs).
#[derive(Clone, Debug, PartialEq)]
struct Options {
    /// `--steps N`: steps per model and variant (default 40).
    steps: usize,
    /// Unless `--no-torch`: the PyTorch column.
    torch: bool,
    /// Unless `--no-tuned`: the tuned loop's column.
    tuned: bool,
    /// `--model TEXT`: only the models whose name contains it.
    model: Option<String>,
    /// `--fused-only`: the fused step only, without the Burn baselines.
    fused_only: bool,
    /// `--fused-adamw`: [`FusedAdamW`] in the user's loop too.
    fused_adamw: bool,
    /// `--alone NAME` (the bench's own child processes): one model's user-loop step.
    alone: Option<String>,
    /// `--pairs N`: torch / yours in `N` alternated pairs per model (0: none).
    pairs: usize,
    /// `--against PATH`: the pairs run this other build of the bench instead of PyTorch.
    against: Option<std::path::PathBuf>,
}

/// `path` when it names a file, which `--against` runs as another build of this bench, or
/// the refusal that says it does not.
fn executable(path: &str) -> Result<std::path::PathBuf, String> {
    let path = std::path::PathBuf::from(path);
    if path.is_file() {
        Ok(path)
    } else {
        Err(format!(
            "--against takes a build of this bench, and {path:?} is no file"
        ))
    }
}

/// `value` of the option `name` as a positive integer, or the refusal that says so.
fn positive(name: &str, value: &str) -> Result<usize, String> {
    value
        .parse()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{name} takes a positive integer, got {value:?}"))
}

impl Options {
    /// Parses the arguments after the program name; `Err` says what is wrong with the first
    /// argument that is not known, lacks its value or whose value does not parse. `--bench`,
    /// which `cargo bench` passes, is ignored.
    fn parse(args: impl IntoIterator<Item = String>) -> Result<Self, String> {
        let mut options = Options {
            steps: 40,
            torch: true,
            tuned: true,
            model: None,
            fused_only: false,
            fused_adamw: false,
            alone: None,
            pairs: 0,
            against: None,
        };
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let mut value = || args.next().ok_or_else(|| format!("{arg} takes a value"));
            match arg.as_str() {
                "--steps" => options.steps = positive(&arg, &value()?)?,
                "--pairs" => options.pairs = positive(&arg, &value()?)?,
                "--against" => options.against = Some(executable(&value()?)?),
                "--model" => options.model = Some(value()?),
                "--alone" => options.alone = Some(value()?),
                "--no-torch" => options.torch = false,
                "--no-tuned" => options.tuned = false,
                "--fused-only" => options.fused_only = true,
                "--fused-adamw" => options.fused_adamw = true,
                "--bench" => {}
                _ => return Err(format!("unknown argument {arg:?}")),
            }
        }
        if options.against.is_some() && options.pairs == 0 {
            return Err("--against names what the pairs compare with; it needs --pairs N".into());
        }
        if options.pairs > 0 && !options.torch && options.against.is_none() {
            return Err("--pairs compares with PyTorch; it cannot go with --no-torch".into());
        }
        Ok(options)
    }

    /// The user's loop these options ask for.
    fn user_loop(&self) -> Loop {
        Loop::User {
            fused_adamw: self.fused_adamw,
        }
    }
}

/// The fused user-loop step of the model named `name`, timed in a child process of the
/// bench build `bench` (this one, or `--against`'s) with `--alone NAME`, in which nothing
/// else runs.
///
/// # Panics
/// If the child fails or prints no phases.
fn alone(bench: &std::path::Path, options: &Options, name: &str) -> (Phases, [[u64; 2]; 3]) {
    let steps = options.steps.to_string();
    let out = std::process::Command::new(bench)
        .args(["--alone", name, "--steps", &steps])
        .args(options.fused_adamw.then_some("--fused-adamw"))
        .output()
        .expect("the child bench starts");
    let text = String::from_utf8_lossy(&out.stdout);
    let nanos: [u64; 4] = child_numbers(&text, name, "phases-ns");
    let counts: [u64; 6] = child_numbers(&text, name, "allocations");
    (
        Phases(nanos.map(Duration::from_nanos)),
        std::array::from_fn(|p| [counts[2 * p], counts[2 * p + 1]]),
    )
}

/// The `N` numbers on the child's line `LABEL n₁ n₂ …` in `text`.
///
/// # Panics
/// If the child printed no such line, or not `N` integers on it.
fn child_numbers<const N: usize>(text: &str, name: &str, label: &str) -> [u64; N] {
    let numbers: Vec<u64> = text
        .lines()
        .find_map(|l| l.strip_prefix(label)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{name}: the child printed no {label} line: {text}"))
        .split_whitespace()
        .map(|v| v.parse().expect("an integer"))
        .collect();
    numbers
        .try_into()
        .unwrap_or_else(|v: Vec<u64>| panic!("{name}: {N} numbers after {label}, got {v:?}"))
}

/// `--alone NAME`: the model's fused user-loop step alone in this process; prints its
/// phase medians in nanoseconds for [`alone`].
fn print_alone(options: &Options, name: &str) {
    let (_, base, batches) = models()
        .into_iter()
        .find(|(n, ..)| *n == name)
        .unwrap_or_else(|| panic!("no model named {name}"));
    let config = model_config(base, batches);
    let mode = options.user_loop();
    let (fused, ..) = compare(&config, batches, batches.steps(options.steps), (true, mode));
    let nanos = fused.0.map(|d| d.as_nanos().to_string());
    println!("phases-ns {}", nanos.join(" "));
    let counts =
        allocations(&config, batches, mode).map(|[calls, bytes]| format!("{calls} {bytes}"));
    println!("allocations {}", counts.join(" "));
}

/// Steps counted for [`allocations`], after [`WARMUP_STEPS`].
const COUNTED_STEPS: usize = 5;

/// The median heap allocations `(calls, bytes)` of each phase of a fused user-loop step
/// (forward with the loss, backward with `GradientsParams`, AdamW), over
/// [`COUNTED_STEPS`] steps of a fresh model in the user's loop `mode`, after its warm-up.
fn allocations(config: &TransformerStackConfig, batches: Batches, mode: Loop) -> [[u64; 2]; 3] {
    let mut trainer = Trainer::new(config, batches, mode);
    let steps: Vec<[[u64; 2]; 3]> = (0..WARMUP_STEPS + COUNTED_STEPS)
        .map(|_| {
            trainer.step();
            trainer.allocations
        })
        .skip(WARMUP_STEPS)
        .collect();
    std::array::from_fn(|phase| {
        std::array::from_fn(|i| median(steps.iter().map(|s| s[phase][i]).collect()))
    })
}

/// Which loop a measurement ran in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loop {
    /// A library user's own loop: the calling (main) thread, the default allocator, and
    /// Burn's `AdamW` unless `fused_adamw` (`--fused-adamw`) gives it [`FusedAdamW`].
    User { fused_adamw: bool },
    /// The `addnorm` binary's: `keep_freed_memory`, the steps on a rayon pool worker.
    Tuned,
}

/// One model's medians in one loop.
struct Measured {
    name: &'static str,
    fused: Phases,
    /// Zero when not measured (`--fused-only`, and in the tuned loop).
    composite: Duration,
    burn_nn: Duration,
    /// Multiply-adds ×2 of one step (see [`step_flops`]).
    flops: f64,
    /// The fused step's heap allocations per phase, `(calls, bytes)` (the user's loop
    /// only, from its child process; zero elsewhere).
    allocations: [[u64; 2]; 3],
}

/// The bench's models: name, config and batches.
fn models() -> Vec<(&'static str, TransformerStackConfig, Batches)> {
    let demo = TransformerStackConfig::new()
        .with_d_model(32)
        .with_n_heads(2)
        .with_d_ff(128)
        .with_n_layers(6);
    let long = TransformerStackConfig::new()
        .with_d_model(128)
        .with_n_heads(4)
        .with_d_ff(512)
        .with_n_layers(4);
    let reverse = Batches::Reverse;
    vec![
        ("tiny (LayerNorm)", TransformerStackConfig::tiny(), reverse),
        (
            "small (LayerNorm)",
            TransformerStackConfig::small(),
            reverse,
        ),
        (
            "small (RMSNorm)",
            TransformerStackConfig::small().with_norm(NormConfig::rms(0)),
            reverse,
        ),
        ("demo (LayerNorm)", demo, reverse),
        (
            "d128 T128 (LayerNorm)",
            long,
            Batches::Random {
                batch: 16,
                seq: 128,
            },
        ),
    ]
}

/// The floating-point operations of one training step's matrix products
/// ([`addnorm_lab::runner::resources::step_matmul_flops`]).
fn step_flops(config: &TransformerStackConfig, batches: Batches) -> f64 {
    let (b, t) = match batches {
        Batches::Reverse => (BATCH_SIZE, TASK.seq_len()),
        Batches::Random { batch, seq } => (batch, seq),
    };
    addnorm_lab::runner::resources::step_matmul_flops(config, b, t)
}

/// Every model's medians in `mode` (the Burn baselines in the user's loop only).
fn run(options: &Options, mode: Loop) -> Vec<Measured> {
    let steps = options.steps;
    // For profiling one model's fused step: `-- --model T128 --fused-only --no-torch`.
    let only_model = options.model.as_deref();
    let fused_only = mode == Loop::Tuned || options.fused_only;
    models()
        .into_iter()
        .filter(|(name, ..)| only_model.is_none_or(|m| name.contains(m)))
        .map(|(name, base, batches)| {
            let config = model_config(base, batches);
            let (fused, composite, burn_nn) =
                compare(&config, batches, batches.steps(steps), (fused_only, mode));
            Measured {
                name,
                fused,
                composite,
                burn_nn,
                flops: step_flops(&config, batches),
                allocations: [[0; 2]; 3],
            }
        })
        .collect()
}

/// `v` to two decimals, right-aligned in `width` columns, then `unit`; or `-` in their
/// place where `v` was not measured (NaN: `--no-torch`, `--no-tuned`).
fn cell(v: f64, width: usize, unit: &str) -> String {
    if v.is_nan() {
        format!("{:>w$}", "-", w = width + unit.chars().count())
    } else {
        format!("{v:>width$.2}{unit}")
    }
}

/// Prints the tables: the user's loop against torch, the tuned loop, the Burn baselines
/// and the phases.
fn report(torch: &[TorchTiming], user: &[Measured], tuned: &[Measured], peak: Option<f64>) {
    println!(
        "One training step (forward, masked cross-entropy in Burn ops, backward, AdamW) of \
         TransformerStack (Pre-LN) on Autodiff<NdArray<f32>>; median of the steps; {} \
         threads. tiny: d_model 32, 2 heads, d_ff 128, 2 layers. small: 64, 4, 256, 4. \
         demo (the `addnorm demo` model): 32, 2, 128, 6; these on the reverse task \
         ([{BATCH_SIZE}, {}] tokens). d128 T128: 128, 4, 512, 4 on [16, 128] random tokens \
         (a quarter of the steps).",
        rayon::current_num_threads(),
        TASK.seq_len()
    );
    println!(
        "your loop: the step called from main, default allocator (what a library user \
         gets). tuned: the `addnorm` binary's settings (keep_freed_memory, steps on a rayon \
         worker). torch: the same model in PyTorch \
         (crates/addnorm-lab/benches/torch_train_step.py, same threads, run first). \
         torch/x above 1: addnorm is faster. % peak: your loop's GFLOP/s over the f32 FMA \
         peak of the bench's threads, measured before the runs (addnorm::kernels::cpu::peak): \
         {}. Element-wise kernels: {:?}; f32 products: {}. matrixmultiply forks products \
         onto its own pool (its `threading` feature, which Burn's default features turn \
         on): {}.\n",
        peak.map_or("not measured on this CPU".to_string(), |p| format!(
            "{p:.1} GFLOP/s"
        )),
        detected(),
        direct_kernel().map_or("matrixmultiply's sgemm alone".to_string(), |set| format!(
            "the direct {set:?} kernel, sgemm's {set:?} kernel past its bounds"
        )),
        if matrixmultiply_forks() {
            "yes, so addnorm hands it blocks too small to fork"
        } else {
            "no"
        }
    );
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{:<22} {:>12} {:>9} {:>7} {:>11} {:>12} {:>11} {:>12} {:>11}",
        "model",
        "your loop",
        "GFLOP/s",
        "% peak",
        "torch",
        "torch/yours",
        "tuned",
        "torch/tuned",
        "tuned/yours"
    );
    for m in user {
        let torch_ms = torch
            .iter()
            .find(|t| t.model == m.name)
            .map_or(f64::NAN, |t| t.median_ms);
        let yours = ms(m.fused.total());
        let tuned_ms = tuned
            .iter()
            .find(|t| t.name == m.name)
            .map_or(f64::NAN, |t| ms(t.fused.total()));
        let gflops = m.flops / yours * 1e-6;
        println!(
            "{:<22} {:>9.2} ms {:>9.1} {} {} {} {} {} {}",
            m.name,
            yours,
            gflops,
            cell(peak.map_or(f64::NAN, |p| 100.0 * gflops / p), 6, "%"),
            cell(torch_ms, 8, " ms"),
            cell(torch_ms / yours, 11, "×"),
            cell(tuned_ms, 8, " ms"),
            cell(torch_ms / tuned_ms, 11, "×"),
            cell(yours / tuned_ms, 10, "×"),
        );
    }
    if user.iter().any(|m| !m.composite.is_zero()) {
        println!("\nBurn baselines in your loop (above 1: the fused kernels are faster)");
        println!(
            "{:<22} {:>12} {:>14} {:>14} {:>16} {:>15}",
            "model", "fused", "composite", "burn::nn", "composite/fused", "burn::nn/fused"
        );
        for m in user {
            let fused = m.fused.total().as_secs_f64();
            println!(
                "{:<22} {:>9.2} ms {:>11.2} ms {:>11.2} ms {:>15.2}× {:>14.2}×",
                m.name,
                fused * 1e3,
                ms(m.composite),
                ms(m.burn_nn),
                m.composite.as_secs_f64() / fused,
                m.burn_nn.as_secs_f64() / fused,
            );
        }
    }
    println!(
        "\nPhases, medians in ms: forward with the loss / backward with GradientsParams / \
         AdamW step"
    );
    println!(
        "{:<22} {:>22} {:>22} {:>22}",
        "model", "your loop", "tuned", "torch"
    );
    for m in user {
        let tuned = tuned
            .iter()
            .find(|t| t.name == m.name)
            .map_or_else(|| "-".into(), |t| t.fused.show());
        let torch = torch
            .iter()
            .find(|t| t.model == m.name)
            .map_or_else(|| "-".into(), |t| t.phases.clone());
        println!(
            "{:<22} {:>22} {:>22} {:>22}",
            m.name,
            m.fused.show(),
            tuned,
            torch
        );
    }
    report_allocations(user);
}

/// The table of heap allocations per step in the user's loop.
fn report_allocations(user: &[Measured]) {
    println!(
        "\nHeap allocations per fused step in your loop, medians of {COUNTED_STEPS} steps \
         (calls / MiB): forward with the loss, backward with GradientsParams, AdamW"
    );
    println!(
        "{:<22} {:>18} {:>18} {:>18} {:>18}",
        "model", "forward", "backward", "AdamW", "step"
    );
    let cell = |[calls, bytes]: [u64; 2]| format!("{calls} / {:.2}", bytes as f64 / 1048576.0);
    for m in user {
        let [f, b, o] = m.allocations;
        let step = std::array::from_fn(|i| f[i] + b[i] + o[i]);
        println!(
            "{:<22} {:>18} {:>18} {:>18} {:>18}",
            m.name,
            cell(f),
            cell(b),
            cell(o),
            cell(step)
        );
    }
}
