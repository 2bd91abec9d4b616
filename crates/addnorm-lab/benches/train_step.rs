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
//! ```
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
//! The three are timed alternately, step by step, so that a change of machine load hits all
//! alike. The table prints the median step time, steps per second and the ratios
//! composite / fused and burn::nn / fused (above 1: the fused kernels are faster).

use std::hint::black_box;
use std::time::{Duration, Instant};

use addnorm::kernels::composite::ForceComposite;
use addnorm::kernels::cpu::fused_calls;
use addnorm::nn::{NormConfig, TransformerStack, TransformerStackConfig};
use addnorm_lab::loss::masked_cross_entropy;
use addnorm_lab::seeded::init_model;
use addnorm_lab::task::{Task, TaskKind};
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

    /// One optimizer step; returns its wall time.
    fn step(&mut self) -> Duration {
        let (inputs, targets, mask) = self.batches[self.next % BATCHES].clone();
        self.next += 1;
        let start = Instant::now();
        let model = self
            .model
            .take()
            .expect("the model is put back after each step");
        let loss = masked_cross_entropy(model.forward(inputs), targets, mask);
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        let model = self.optimizer.step(1e-3, model, grads);
        // NdArray runs eagerly; reading one weight back makes sure nothing is deferred.
        black_box(model.head.weight.val().into_data());
        self.model = Some(model);
        start.elapsed()
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

/// PyTorch's median step (ms) per model name, from `crates/addnorm-lab/benches/torch_train_step.py` (empty
/// when `python3` with torch is not at hand, or with `--no-torch`).
fn torch_medians(steps: usize) -> Vec<(String, f64)> {
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
            Some((
                value["model"].as_str()?.to_string(),
                value["median_ms"].as_f64()?,
            ))
        })
        .collect()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// The same model with Burn's built-in norm of the same kind.
fn with_burn_norms(config: &TransformerStackConfig) -> TransformerStackConfig {
    let norm = match &config.norm {
        NormConfig::Rms(c) => {
            NormConfig::BurnRms(burn::nn::RmsNormConfig::new(0).with_epsilon(c.epsilon))
        }
        _ => NormConfig::BurnLayer(burn::nn::LayerNormConfig::new(0)),
    };
    config.clone().with_norm(norm)
}

/// Median step times `(fused, composite, burn::nn)` of `config` over `steps` alternating
/// rounds.
///
/// # Panics
/// If a fused step runs no fused kernel, or a composite or Burn step runs one.
fn compare(
    config: &TransformerStackConfig,
    batches: Batches,
    steps: usize,
    fused_only: bool,
) -> (Duration, Duration, Duration) {
    let mut fused = Trainer::new(config, batches);
    let mut composite = Trainer::new(config, batches);
    let mut burn_nn = Trainer::new(&with_burn_norms(config), batches);
    let fused_step = |trainer: &mut Trainer| {
        let before = fused_calls();
        let time = trainer.step();
        let after = fused_calls();
        assert!(
            after.forward > before.forward && after.backward > before.backward,
            "the fused variant did not take the fused kernels"
        );
        time
    };
    let composite_step = |trainer: &mut Trainer| {
        let _composite = ForceComposite::new();
        let before = fused_calls();
        let time = trainer.step();
        assert_eq!(
            fused_calls(),
            before,
            "the composite variant ran a fused kernel"
        );
        time
    };
    if fused_only {
        let times = (0..WARMUP_STEPS + steps.max(1))
            .map(|_| fused_step(&mut fused))
            .skip(WARMUP_STEPS)
            .collect();
        let time = median(times);
        return (time, Duration::ZERO, Duration::ZERO);
    }
    for _ in 0..WARMUP_STEPS {
        fused_step(&mut fused);
        composite_step(&mut composite);
        composite_step(&mut burn_nn);
    }
    let (mut fused_times, mut composite_times, mut burn_times) = (vec![], vec![], vec![]);
    for _ in 0..steps.max(1) {
        fused_times.push(fused_step(&mut fused));
        composite_times.push(composite_step(&mut composite));
        burn_times.push(composite_step(&mut burn_nn));
    }
    (
        median(fused_times),
        median(composite_times),
        median(burn_times),
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
        torch_medians(steps)
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
    for (name, base, batches) in models {
        if only_model.is_some_and(|m| !name.contains(m.as_str())) {
            continue;
        }
        let config = model_config(base, batches);
        let (fused, composite, burn_nn) =
            compare(&config, batches, batches.steps(steps), fused_only);
        let torch_ms = torch
            .iter()
            .find(|(model, _)| model == name)
            .map_or(f64::NAN, |&(_, ms)| ms);
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
    }
}
