//! One model on every backend: the same Transformer, weights and batch, one training step
//! (forward, backward, AdamW) on each backend this build enables, and the numbers compared.
//!
//! ```text
//! cargo run --example backend_swap                    # ndarray
//! cargo run --example backend_swap --features wgpu    # wgpu and ndarray, side by side
//! ```
//!
//! The code is written once, generic over `B: NormAutodiffBackend`; the cargo
//! features decide which backends exist ([`addnorm::backend::ENABLED`]) and which one is
//! preferred ([`addnorm::backend::AutodiffBackend`], [`addnorm::backend::PREFERRED`]).
//! A GPU backend without a device on this machine is skipped, with the reason.
//!
//! The weights are drawn once, on the preferred backend, and moved to the others as bytes
//! through Burn's recorder: each backend's random generator draws different numbers from
//! the same seed, so seeding alone would give each backend a different model.
//!
//! Output, per backend: the loss before and after the step, and ‖θ‖², the squared norm of
//! all parameters after it. With several backends, the largest relative difference from the
//! first follows; f32 on different hardware agrees to about 1e-6.

use addnorm::NormAutodiffBackend;
use addnorm::backend::{AutodiffBackend, ENABLED, Kind, PREFERRED, device};
use addnorm::nn::{TransformerStack, TransformerStackConfig};
use addnorm_lab::experiments::train::loss::masked_cross_entropy;
use addnorm_lab::{Task, TaskKind};
use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::{AdamWConfig, GradientsParams, Optimizer};
use burn::record::{FullPrecisionSettings, NamedMpkBytesRecorder, Recorder};
use burn::tensor::backend::Backend;
use burn::tensor::{ElementConversion, Tensor};

/// Weights travel between backends as named MessagePack bytes, in f32.
type WeightBytes = NamedMpkBytesRecorder<FullPrecisionSettings>;

/// The peak learning rate of the one step: large enough to move the loss visibly.
const LEARNING_RATE: f64 = 1e-2;

/// What one backend computed.
struct Outcome {
    loss_before: f64,
    loss_after: f64,
    squared_norm: f64,
}

/// Sums θ² over every float parameter.
struct SquaredNorm(f64);

impl<B: Backend> ModuleVisitor<B> for SquaredNorm {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let s: f64 = param.val().square().sum().into_scalar().elem();
        self.0 += s;
    }
}

/// Loads `weights` into a fresh model on `B`, takes one AdamW step on the task's first
/// batch, and measures the result.
fn one_step<B>(
    weights: &[u8],
    config: &TransformerStackConfig,
    task: &Task,
    device: &B::Device,
) -> Outcome
where
    B: NormAutodiffBackend,
{
    let record = Recorder::<B>::load(&WeightBytes::default(), weights.to_vec(), device)
        .expect("the weights were recorded from the same model config");
    let model: TransformerStack<B> = config.init(device).load_record(record);

    let batch = task.training_batch(0, 0, 16);
    let loss_of = |model: &TransformerStack<B>| {
        let (inputs, targets, mask) = batch.to_tensors::<B>(device);
        masked_cross_entropy(model.forward(inputs), targets, mask)
    };

    let loss = loss_of(&model);
    let loss_before: f64 = loss.clone().into_scalar().elem();
    let grads = GradientsParams::from_grads(loss.backward(), &model);
    let mut optimizer = AdamWConfig::new().init::<B, TransformerStack<B>>();
    let model = optimizer.step(LEARNING_RATE, model, grads);

    let loss_after: f64 = loss_of(&model).into_scalar().elem();
    let mut norm = SquaredNorm(0.0);
    model.visit(&mut norm);
    Outcome {
        loss_before,
        loss_after,
        squared_norm: norm.0,
    }
}

/// Runs [`one_step`] on the backend `kind`.
fn on_backend(kind: Kind, weights: &[u8], config: &TransformerStackConfig, task: &Task) -> Outcome {
    match kind {
        #[cfg(feature = "ndarray")]
        Kind::Ndarray => one_step::<addnorm::backend::ndarray::AutodiffBackend>(
            weights,
            config,
            task,
            &addnorm::backend::ndarray::device(),
        ),
        #[cfg(feature = "wgpu")]
        Kind::Wgpu => one_step::<addnorm::backend::wgpu::AutodiffBackend>(
            weights,
            config,
            task,
            &addnorm::backend::wgpu::device(),
        ),
        #[cfg(feature = "cuda")]
        Kind::Cuda => one_step::<addnorm::backend::cuda::AutodiffBackend>(
            weights,
            config,
            task,
            &addnorm::backend::cuda::device(),
        ),
        other => unreachable!("backend {other} is enabled but this example has no arm for it"),
    }
}

fn relative_difference(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs().max(1e-12)
}

fn main() {
    let task = Task::new(TaskKind::Reverse, 8, 10);
    let config = TransformerStackConfig::tiny()
        .with_vocab_size(task.vocab_size())
        .with_max_seq_len(task.seq_len());

    let model = addnorm_lab::experiments::train::seeded::init_model::<AutodiffBackend>(
        &config,
        0,
        &device(),
    );
    let weights =
        Recorder::<AutodiffBackend>::record(&WeightBytes::default(), model.into_record(), ())
            .expect("a model records to bytes");
    println!(
        "TransformerStack tiny ({} layers, d_model {}, {} placement), weights drawn on {PREFERRED} \
         with seed 0 ({} bytes); one AdamW step at lr {LEARNING_RATE} on a [16, {}] batch of {}",
        config.block.n_layers,
        config.block.d_model,
        config.block.placement,
        weights.len(),
        task.seq_len(),
        task.kind.name(),
    );
    println!(
        "{:<8} {:>12} {:>12} {:>14}",
        "backend", "loss before", "loss after", "‖θ‖² after"
    );

    let outcomes: Vec<(Kind, Outcome)> = ENABLED
        .iter()
        .filter(|kind| match kind.check_available() {
            Ok(()) => true,
            Err(reason) => {
                println!("skipped: {reason}");
                false
            }
        })
        .map(|&kind| (kind, on_backend(kind, &weights, &config, &task)))
        .collect();
    for (name, o) in &outcomes {
        println!(
            "{name:<8} {:>12.6} {:>12.6} {:>14.6}",
            o.loss_before, o.loss_after, o.squared_norm
        );
        assert!(
            o.loss_after < o.loss_before,
            "{name}: the step should lower the loss on its own batch, got {} → {}",
            o.loss_before,
            o.loss_after
        );
    }

    let (first, reference) = &outcomes[0];
    for (name, o) in &outcomes[1..] {
        let worst = [
            relative_difference(o.loss_before, reference.loss_before),
            relative_difference(o.loss_after, reference.loss_after),
            relative_difference(o.squared_norm, reference.squared_norm),
        ]
        .into_iter()
        .fold(0.0, f64::max);
        println!("{name} vs {first}: largest relative difference {worst:.2e}");
        assert!(
            worst < 1e-4,
            "{name} and {first} disagree: relative difference {worst:.2e}, expected < 1e-4"
        );
    }
    if outcomes.len() > 1 {
        println!("the backends agree");
    } else {
        println!("only {first} is compiled in; add `--features wgpu` to compare with wgpu");
    }
}
