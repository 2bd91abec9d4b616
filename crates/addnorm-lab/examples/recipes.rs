//! The norm and residual recipes of today's open models, as addnorm configurations, each
//! trained for a few steps in a plain Burn loop (Burn's Adam and cross-entropy, your own
//! code's shape): Pre-LN (GPT-2), the decoder layers of Llama, Gemma 2 and OLMo 2 (their
//! presets: grouped-query attention, RoPE, gated feed-forward networks), NormFormer, CaiT's
//! LayerScale, x-transformers' GRU residual gating, ResiDual and GPT-J's parallel block;
//! then one DiT block with adaLN-Zero.
//!
//! The toy task is next-token prediction on sequences that repeat their first half, so
//! the second half can be predicted exactly by attending back. The table shows each
//! recipe's loss on that half before and after training and its largest attention logit;
//! it is a smoke run of the API, not a benchmark or a study (the study is `addnorm demo`).
//!
//! ```text
//! cargo run --release --example recipes             # ndarray
//! cargo run --release --example recipes --features wgpu
//! ```

use addnorm::backend::{AutodiffBackend, PREFERRED, device};
use addnorm::nn::{
    Affine, LayerNormConfig, Placement, TransformerBlockConfig, TransformerStack,
    TransformerStackConfig,
};
use burn::nn::loss::CrossEntropyLossConfig;
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::{Distribution, Int, Tensor};

// The lab's library is linked only for build time: it has already compiled Burn's code for
// every enabled backend, and at the dev profile's opt-level 1 rustc reuses those generic
// instances instead of compiling them again (`cargo test` builds examples: this one took
// about 7 CPU-minutes on its own, and takes seconds beside the lab). Nothing of the lab is
// used: this is a plain library user's program.
use addnorm_lab as _;

type B = AutodiffBackend;

/// Symbols per sequence half, vocabulary, batch, training steps.
const HALF: usize = 8;
const VOCAB: usize = 16;
const BATCH: usize = 32;
const STEPS: usize = 60;

/// Each recipe as a stack configuration (widths of `tiny()`, four layers).
fn recipes() -> Vec<(&'static str, TransformerStackConfig)> {
    let base = TransformerStackConfig::tiny()
        .with_n_layers(4)
        .with_vocab_size(VOCAB);
    // The Hugging Face presets at tiny()'s widths: d 32, 2 heads (1 key/value head), d_ff 128.
    let layer = |block: TransformerBlockConfig| TransformerStackConfig {
        block: block.with_n_layers(base.block.n_layers),
        ..base.clone()
    };
    vec![
        ("Pre-LN (GPT-2)", base.clone()),
        (
            "Llama: Pre RMSNorm, SwiGLU, GQA, RoPE",
            layer(TransformerBlockConfig::llama(32, 2, 1, 128)),
        ),
        (
            "Gemma 2: sandwich (1+γ), GeGLU, caps 50/30",
            layer(TransformerBlockConfig::gemma2(32, 2, 1, 16, 128))
                .with_final_logit_softcap(Some(30.0)),
        ),
        (
            "OLMo 2: post-branch RMSNorm, QK-norm, SwiGLU",
            layer(TransformerBlockConfig::olmo2(32, 2, 1, 128)),
        ),
        (
            "NormFormer",
            base.clone()
                .with_attention_output_norm(true)
                .with_feed_forward_norm(true)
                .with_head_scale(true),
        ),
        (
            "CaiT LayerScale (ε = 0.1)",
            base.clone().with_layer_scale(Some(0.1)),
        ),
        (
            "GRU residual gate (x-transformers)",
            base.clone().with_residual_gate(true),
        ),
        ("ResiDual", base.clone().with_placement(Placement::ResiDual)),
        (
            "GPT-J parallel block",
            base.with_placement(Placement::Parallel),
        ),
    ]
}

/// A batch of sequences `[a, a]` with `a` random: tokens `[batch, 2·HALF]`.
fn batch(device: &burn::tensor::Device<B>) -> Tensor<B, 2, Int> {
    let half = Tensor::<B, 2>::random(
        [BATCH, HALF],
        Distribution::Uniform(0.0, VOCAB as f64),
        device,
    )
    .int()
    .clamp(0, VOCAB as i64 - 1);
    Tensor::cat(vec![half.clone(), half], 1)
}

/// The cross-entropy of predicting the second half (positions HALF−1 … 2·HALF−2 predict
/// HALF … 2·HALF−1).
fn loss(model: &TransformerStack<B>, tokens: Tensor<B, 2, Int>) -> Tensor<B, 1> {
    let logits = model.forward(tokens.clone());
    let predicted = logits
        .slice([0..BATCH, HALF - 1..2 * HALF - 1, 0..VOCAB])
        .reshape([BATCH * HALF, VOCAB]);
    let targets = tokens
        .slice([0..BATCH, HALF..2 * HALF])
        .reshape([BATCH * HALF]);
    CrossEntropyLossConfig::new()
        .init(&predicted.device())
        .forward(predicted, targets)
}

/// Trains one recipe; returns (loss before, loss after, largest attention logit after).
fn train(config: &TransformerStackConfig) -> (f32, f32, f64) {
    let device = device();
    let mut model: TransformerStack<B> = config.init(&device);
    let mut optimizer = AdamConfig::new().init();
    let held_out = batch(&device);
    let before: f32 = loss(&model, held_out.clone()).into_scalar();
    for _ in 0..STEPS {
        let grads = loss(&model, batch(&device)).backward();
        let grads = GradientsParams::from_grads(grads, &model);
        model = optimizer.step(3e-3, model, grads);
    }
    let after: f32 = loss(&model, held_out.clone()).into_scalar();
    let (_, stats) = model.forward_with_stats(held_out);
    let max_logit = stats
        .max_attention_logit
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    (before, after, max_logit)
}

/// One DiT block (adaLN-Zero): the identity at init for any conditioning, and its
/// modulation learns from the first step.
fn dit_block() {
    let device = device();
    let d = 32;
    let block = TransformerBlockConfig::new(d, 2, 4 * d)
        .with_norm(
            LayerNormConfig::new(vec![d])
                .with_affine(Affine::Off)
                .with_epsilon(1e-6)
                .into(),
        )
        .with_causal(false)
        .with_conditioning(Some(8))
        .init::<B>(&device);
    let x = Tensor::<B, 3>::random([4, 10, d], Distribution::Normal(0.0, 1.0), &device);
    let c = Tensor::<B, 2>::random([4, 8], Distribution::Normal(0.0, 1.0), &device);
    let y = block.forward_conditioned(x.clone(), c);
    let moved: f32 = (y.clone() - x).abs().max().into_scalar();
    let grads = (y.clone() * y).sum().backward();
    let modulation = &block.ada_ln.as_ref().expect("conditioned").modulation;
    let gradient: f32 = modulation
        .weight
        .val()
        .grad(&grads)
        .expect("a gradient")
        .abs()
        .max()
        .into_scalar();
    println!(
        "\nDiT block (adaLN-Zero): at init it moves its input by {moved:.1e} (the identity); \
         the modulation's largest gradient is {gradient:.3}, so its gates open as it trains."
    );
}

fn main() {
    println!(
        "Recipes on the {PREFERRED} backend: 4 layers, d = 32, {STEPS} Adam steps at 3e-3, \
         batch {BATCH}; loss on the repeated half (ln {VOCAB} = {:.2} at chance).\n",
        (VOCAB as f32).ln()
    );
    println!(
        "{:<46} {:>12} {:>12} {:>16}",
        "recipe", "loss before", "loss after", "max attn logit"
    );
    for (name, config) in recipes() {
        let (before, after, max_logit) = train(&config);
        println!("{name:<46} {before:>12.3} {after:>12.3} {max_logit:>16.2}");
    }
    dit_block();
}
