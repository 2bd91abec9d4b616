//! One training step of addnorm's `TransformerStack` on `Autodiff<NdArray<f32>>`, with the
//! fused CPU norms, against the same model on the composite path (Burn tensor ops,
//! differentiated op by op), and against the same model with Burn's built-in norms
//! (`burn::nn::LayerNorm` / `RmsNorm`, through `NormConfig::BurnLayer` / `BurnRms`).
//!
//! ```text
//! cargo bench --bench train_step
//! cargo bench --bench train_step -- --steps 60     # repetitions per model (default 40)
//! cargo bench --bench train_step -- --no-torch     # without the PyTorch column
//! cargo bench --bench train_step -- --model T128 --fused-only --no-torch   # to profile
//! cargo bench --bench train_step -- --default-malloc   # without keep_freed_memory
//! cargo bench --bench train_step -- --outside-pool     # steps on the main thread
//! ```
//!
//! As `addnorm train` does, the bench applies
//! `addnorm::kernels::cpu::allocator::keep_freed_memory` and runs the steps on a worker of
//! a rayon pool; the two flags above measure each without it.
//!
//! The torch column is the same model written in PyTorch (`crates/addnorm-lab/benches/torch_train_step.py`:
//! Pre-LN, SDPA attention, exact GELU, AdamW, masked cross-entropy), run as a child process
//! with the same thread count before the Rust variants; torch / fused above 1 means addnorm
//! is faster.
//!
//! A step is what `addnorm train` does per batch: forward, masked cross-entropy, backward,
//! `GradientsParams`, AdamW step. Both variants start from the same seeded weights and
//! see the same reverse-task batches (length 8, 10 symbols, batch 32: `[32, 17]` tokens).
//! The composite variant runs its forward under a `ForceComposite` guard, which sends every
//! norm down the composite path; the fused variant is checked to take the fused kernels.
//! The three are timed in alternating blocks of consecutive steps (see `ROUNDS`), so that a
//! change of machine load hits all alike. The table prints the median step time, steps per
//! second and the ratios composite / fused, burn::nn / fused and torch / fused (above 1:
//! the fused kernels are faster), then the fused and torch steps split into their phases.

use std::hint::black_box;
use std::time::{Duration, Instant};

use addnorm::kernels::composite::ForceComposite;
use addnorm::kernels::cpu::allocator::keep_freed_memory;
use addnorm::kernels::cpu::fused_calls;
use addnorm::nn::{NormConfig, TransformerStack, TransformerStackConfig};
use addnorm_lab::experiments::task::{Task, TaskKind};
use addnorm_lab::experiments::train::loss::masked_cross_entropy;
use addnorm_lab::experiments::train::seeded::init_model;
use burn::backend::{Autodiff, NdArray};
use burn::optim::adaptor::OptimizerAdaptor;
use burn::optim::{AdamW, AdamWConfig, GradientsParams, Optimizer};
use burn::tensor::{Int, Tensor, TensorData};

type Ad = Autodiff<NdArray<f32>>;

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
    optimizer: OptimizerAdaptor<AdamW, TransformerStack<Ad>, Ad>,
    batches: Vec<Tensors>,
    next: usize,
}

impl Trainer {
    fn new(config: &TransformerStackConfig, batches: Batches) -> Self {
        let device = Default::default();
        Self {
            model: Some(init_model::<Ad>(config, 0, &device)),
            optimizer: AdamWConfig::new().init(),
            batches: (0..BATCHES)
                .map(|step| batches.make(step, &device))
                .collect(),
            next: 0,
        }
    }

    /// One optimizer step; returns its wall time, split into its phases.
    fn step(&mut self) -> Phases {
        let (inputs, targets, mask) = self.batches[self.next % BATCHES].clone();
        self.next += 1;
        let start = Instant::now();
        let model = self
            .model
            .take()
            .expect("the model is put back after each step");
        let loss = masked_cross_entropy(model.forward(inputs), targets, mask);
        // NdArray runs eagerly: the phases end where their last op returns.
        let forward = start.elapsed();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        let backward = start.elapsed();
        let model = self.optimizer.step(1e-3, model, grads);
        // Reading one weight back makes sure nothing is deferred.
        black_box(model.head.weight.val().into_data());
        self.model = Some(model);
        let total = start.elapsed();
        Phases([forward, backward - forward, total - backward, total])
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
fn torch_timings(steps: usize) -> Vec<TorchTiming> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/torch_train_step.py");
    let threads = rayon::current_num_threads().to_string();
    let Ok(output) = std::process::Command::new("python3")
        .args([script, "--threads", &threads, "--steps", &steps.to_string()])
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

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
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
    fused_only: bool,
) -> (Phases, Duration, Duration) {
    let mut fused = Trainer::new(config, batches);
    let mut composite = Trainer::new(config, batches);
    let mut burn_nn = Trainer::new(&with_burn_norms(config), batches);
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
    let args: Vec<String> = std::env::args().collect();
    // As `addnorm` does (`--default-malloc` to measure without it).
    if !args.iter().any(|a| a == "--default-malloc") {
        keep_freed_memory();
    }
    if args.iter().any(|a| a == "--outside-pool") {
        return run(&args);
    }
    // The steps run on a worker of a rayon pool, as `addnorm train` runs them: a kernel
    // that splits its work then runs one part on the calling thread instead of blocking
    // it while both pool threads are woken.
    rayon::ThreadPoolBuilder::new()
        .build()
        .expect("a rayon pool can be built")
        .install(|| run(&args));
}

fn run(args: &[String]) {
    let steps = args
        .iter()
        .position(|a| a == "--steps")
        .and_then(|i| args.get(i + 1))
        .map_or(40, |v| v.parse().expect("--steps takes a positive integer"));

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
    let models = [
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
    ];
    // For profiling one model's fused step: `-- --model T128 --fused-only --no-torch`.
    let only_model = args
        .iter()
        .position(|a| a == "--model")
        .and_then(|i| args.get(i + 1));
    let fused_only = args.iter().any(|a| a == "--fused-only");
    let torch = if args.iter().any(|a| a == "--no-torch") {
        vec![]
    } else {
        torch_timings(steps)
    };

    println!(
        "One training step (forward, masked cross-entropy, backward, AdamW) of \
         TransformerStack (Pre-LN) on Autodiff<NdArray<f32>>; reverse task, length {}, {} \
         symbols, batch {BATCH_SIZE} ([{BATCH_SIZE}, {}] tokens); median of {steps} steps; \
         {} rayon threads.",
        TASK.length,
        TASK.symbols,
        TASK.seq_len(),
        rayon::current_num_threads()
    );
    println!(
        "tiny: d_model 32, 2 heads, d_ff 128, 2 layers. small: 64, 4, 256, 4. demo (the \
         `addnorm demo` model): 32, 2, 128, 6. d128 T128: 128, 4, 512, 4 on [16, 128] random \
         tokens (a quarter of the steps). torch: the same model in PyTorch \
         (crates/addnorm-lab/benches/torch_train_step.py, same threads, run before the Rust variants).\n"
    );
    println!(
        "{:<22} {:>11} {:>9} {:>14} {:>14} {:>11} {:>16} {:>15} {:>12}",
        "model",
        "fused",
        "steps/s",
        "composite",
        "burn::nn",
        "torch",
        "composite/fused",
        "burn::nn/fused",
        "torch/fused"
    );
    let mut phase_rows = vec![];
    for (name, base, batches) in models {
        if only_model.is_some_and(|m| !name.contains(m.as_str())) {
            continue;
        }
        let config = model_config(base, batches);
        let (phases, composite, burn_nn) =
            compare(&config, batches, batches.steps(steps), fused_only);
        let fused = phases.total();
        let torch = torch.iter().find(|t| t.model == name);
        let torch_ms = torch.map_or(f64::NAN, |t| t.median_ms);
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let per_s = |d: Duration| 1.0 / d.as_secs_f64();
        println!(
            "{:<22} {:>8.2} ms {:>9.1} {:>11.2} ms {:>11.2} ms {:>8.2} ms {:>15.2}× {:>14.2}× {:>11.2}×",
            name,
            ms(fused),
            per_s(fused),
            ms(composite),
            ms(burn_nn),
            torch_ms,
            composite.as_secs_f64() / fused.as_secs_f64(),
            burn_nn.as_secs_f64() / fused.as_secs_f64(),
            torch_ms / ms(fused),
        );
        phase_rows.push((name, phases.show(), torch.map(|t| t.phases.clone())));
    }
    println!(
        "\nPhases, medians in ms: forward with the loss / backward with GradientsParams / \
         AdamW step"
    );
    println!("{:<22} {:>28} {:>28}", "model", "fused", "torch");
    for (name, fused, torch) in phase_rows {
        let torch = torch.unwrap_or_else(|| "-".into());
        println!("{name:<22} {fused:>28} {torch:>28}");
    }
}
