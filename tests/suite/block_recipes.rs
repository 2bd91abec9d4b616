//! The recipes of today's open models as block and stack options, checked by their
//! defining properties (their PyTorch parity is in `block_parity`): ResiDual's dual stream,
//! adaLN-Zero's identity at init, NormFormer's added parameters, Gemma 2's soft caps,
//! residual gating's limits, and the errors their configurations raise.

use addnorm::nn::{
    Affine, LayerNormConfig, Norm, Placement, QkNormScope, RmsNormConfig, TransformerBlockConfig,
    TransformerStackConfig,
};
use burn::module::Param;
use burn::tensor::{Distribution, Int, Tensor};

use crate::common::{PanicCase, assert_close, assert_panic_messages, values};
use crate::on_every_backend;

const D: usize = 8;
const HEADS: usize = 2;
const SEQ: usize = 5;

fn normal<B: burn::tensor::backend::Backend, const N: usize>(
    shape: [usize; N],
    device: &B::Device,
) -> Tensor<B, N> {
    Tensor::random(shape, Distribution::Normal(0.0, 1.0), device)
}

on_every_backend! {
    /// ResiDual (Xie et al. 2023): the dual stream gains each sublayer's output unnormalized,
    /// `x_d + Attn(x) + FFN(x₁)` with `x₁ = Norm₁(x + Attn(x))`, while the Post-LN stream is
    /// the block's plain forward.
    fn resi_dual_adds_each_branch_to_the_dual_stream<B>(device) {
        let block = TransformerBlockConfig::new(D, HEADS, 16)
            .with_placement(Placement::ResiDual)
            .init::<B>(device);
        let (x, dual) = (normal::<B, 3>([2, SEQ, D], device), normal::<B, 3>([2, SEQ, D], device));
        let (y, dual_out) = block.forward_dual(x.clone(), dual.clone());
        let attn = block.attention.forward(x.clone());
        let x1 = block.attention_residual.sum_norm.as_ref().unwrap().forward(x.clone() + attn.clone());
        let expected = dual + attn + block.feed_forward.forward(x1);
        assert_close("dual stream", &values(dual_out), &values(expected), 1e-5);
        assert_close("Post-LN stream", &values(y), &values(block.forward(x)), 0.0);
    }

    /// A ResiDual stack's features are `x_N + FinalNorm(x_N^d)`, the dual stream starting at
    /// the embeddings, and every block's parameters get a gradient.
    fn a_resi_dual_stack_adds_the_normalized_dual_stream<B>(device) {
        let config = TransformerStackConfig::tiny().with_placement(Placement::ResiDual).with_n_layers(3);
        let model = config.init::<B>(device);
        let tokens = Tensor::<B, 2, Int>::from_ints([[1, 5, 2, 7, 3]], device);
        let positions = Tensor::<B, 2, Int>::from_ints([[0, 1, 2, 3, 4]], device);
        let x0 = model.token_embedding.forward(tokens.clone()) + model.position_embedding.forward(positions);
        let (mut x, mut dual) = (x0.clone(), x0);
        for block in &model.blocks {
            (x, dual) = block.forward_dual(x, dual);
        }
        let expected = x + model.final_norm.as_ref().unwrap().forward(dual);
        let features = model.features(tokens.clone());
        assert_close("features", &values(features), &values(expected), 1e-5);
        let grads = model.forward(tokens).sum().backward();
        for (l, block) in model.blocks.iter().enumerate() {
            let g = values(block.feed_forward.outer.weight.val().grad(&grads).unwrap());
            assert!(g.iter().any(|v| *v != 0.0) && g.iter().all(|v| v.is_finite()), "block {l}");
        }
    }

    /// adaLN-Zero (DiT): the modulation starts at zero, so a conditioned block is the
    /// identity for every conditioning vector; the gates still get a gradient, so it learns.
    fn ada_ln_zero_starts_as_the_identity_and_learns<B>(device) {
        let block = TransformerBlockConfig::new(D, HEADS, 16)
            .with_norm(LayerNormConfig::new(vec![D]).with_affine(Affine::Off).into())
            .with_conditioning(Some(3))
            .init::<B>(device);
        let x = normal::<B, 3>([2, SEQ, D], device);
        let c = normal::<B, 2>([2, 3], device).require_grad();
        let y = block.forward_conditioned(x.clone(), c);
        assert_close("identity at init", &values(y.clone()), &values(x), 0.0);
        let modulation = &block.ada_ln.as_ref().unwrap().modulation;
        let grads = (y.clone() * y).sum().backward();
        let dw = values(modulation.weight.val().grad(&grads).unwrap());
        assert!(dw.iter().any(|v| *v != 0.0), "the modulation gets no gradient");
    }

    /// NormFormer's three additions: head gains `[heads]` at 1, a norm on the attention's
    /// output, and a norm over the `d_ff` hidden features; with the gains at 1 and the norms'
    /// own output as they start, a gain of 2 on one head changes the output.
    fn normformer_adds_its_three_parts<B>(device) {
        let mut block = TransformerBlockConfig::new(D, HEADS, 16).normformer().init::<B>(device);
        let gains = block.attention.head_scale.as_ref().expect("head scale");
        assert_eq!(values(gains.val()), vec![1.0; HEADS]);
        assert!(block.attention_residual.output_norm.is_some(), "post-attention norm");
        let Some(Norm::Layer(hidden)) = &block.feed_forward.hidden_norm else {
            panic!("the FFN norm is the block's LayerNorm");
        };
        assert_eq!(hidden.gamma.as_ref().unwrap().dims(), [16]);
        let x = normal::<B, 3>([1, SEQ, D], device);
        let before = values(block.forward(x.clone()));
        block.attention.head_scale = Some(Param::from_tensor(Tensor::from_floats([2.0, 1.0], device)));
        let after = values(block.forward(x));
        assert!(before.iter().zip(&after).any(|(a, b)| (a - b).abs() > 1e-4), "a head gain does nothing");
    }

    /// OLMo 2's QK-norm over the full width: its gains have `d_model` entries, and it sees
    /// the heads together: scaling head 0's columns of W^Q by 4 leaves a per-head QK-norm's
    /// output unchanged (each head is normalized alone) but changes the full-width one's. (A
    /// power of two, so that the scaled products round alike, in f32 and in CUDA's TF32.)
    fn full_width_qk_norm_normalizes_the_whole_projection<B>(device) {
        for scope in [QkNormScope::PerHead, QkNormScope::FullWidth] {
            let mut block = TransformerBlockConfig::new(D, HEADS, 16)
                .with_qk_norm(Some(RmsNormConfig::new(vec![D]).into()))
                .with_qk_norm_scope(scope)
                .init::<B>(device);
            let Some(Norm::Rms(rms)) = &block.attention.qk_norm else {
                panic!("an RMSNorm QK-norm");
            };
            let width = if scope == QkNormScope::FullWidth { D } else { D / HEADS };
            assert_eq!(rms.gamma.as_ref().unwrap().dims(), [width]);
            let x = normal::<B, 3>([2, SEQ, D], device);
            let before = values(block.forward(x.clone()));
            let head_0: Vec<f32> = (0..D).map(|c| if c < D / HEADS { 4.0 } else { 1.0 }).collect();
            let scale = Tensor::<B, 1>::from_floats(head_0.as_slice(), device).unsqueeze::<2>();
            let query = &mut block.attention.query;
            query.weight = Param::from_tensor((query.weight.val() * scale).detach());
            let after = values(block.forward(x));
            let moved = before.iter().zip(&after).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
            match scope {
                QkNormScope::PerHead => assert!(moved < 1e-4, "per head: moved by {moved}"),
                _ => assert!(moved > 1e-3, "full width: moved by only {moved}"),
            }
        }
    }

    /// Residual gating (a GRU cell in place of each residual sum): with its update gate held
    /// open (its bias at 10⁶, so z = 1 in f32 whatever the weights add) each connection passes
    /// its residual through, so a gated Pre block is the identity in value and gradient; with
    /// the gate shut (bias −10⁶, z = 0)
    /// the connection's output is the candidate n alone, a tanh: within [−1, 1] (f32's tanh
    /// rounds to ±1 far out) although the residual is of order 100.
    fn a_residual_gate_interpolates_between_the_residual_and_its_candidate<B>(device) {
        let set_update_bias = |block: &mut addnorm::nn::TransformerBlock<B>, value: f32| {
            for residual in [&mut block.attention_residual, &mut block.feed_forward_residual] {
                let gate = residual.residual_gate.as_mut().expect("gated");
                let mut bias = vec![0.0f32; 3 * D];
                bias[D..2 * D].fill(value);
                gate.input.bias = Some(Param::from_tensor(Tensor::from_floats(bias.as_slice(), device)));
            }
        };
        let mut block = TransformerBlockConfig::new(D, HEADS, 16).with_residual_gate(true).init::<B>(device);
        let x = normal::<B, 3>([2, SEQ, D], device).require_grad();
        set_update_bias(&mut block, 1e6);
        let y = block.forward(x.clone());
        assert_close("open gate: y = x", &values(y.clone()), &values(x.clone()), 1e-5);
        let dy = normal::<B, 3>([2, SEQ, D], device);
        let grads = (y * dy.clone()).sum().backward();
        assert_close("open gate: dx = dy", &values(x.grad(&grads).unwrap()), &values(dy), 1e-5);
        set_update_bias(&mut block, -1e6);
        let y = values(block.forward(x.clone() * 100.0));
        assert!(y.iter().all(|v| v.abs() <= 1.0), "a shut gate lets the residual through");
    }

    /// Gemma 2's soft caps: the attention's largest logit stays within its cap, and the
    /// stack's logits inside [−c, c] (f32's tanh rounds to ±1 far out); a cap far above
    /// the logits changes them by at most their cube over 3c² (tanh's series), up to f32
    /// rounding.
    fn soft_caps_bound_the_logits<B>(device) {
        let tokens = Tensor::<B, 2, Int>::from_ints([[1, 5, 2, 7, 3]], device);
        let config = TransformerStackConfig::tiny()
            .with_attention_logit_softcap(Some(0.25))
            .with_final_logit_softcap(Some(0.5));
        let (logits, stats) = config.init::<B>(device).forward_with_stats(tokens.clone());
        assert!(stats.max_attention_logit.iter().all(|m| *m <= 0.25), "{:?}", stats.max_attention_logit);
        assert!(values(logits).iter().all(|z| z.abs() <= 0.5));
        let plain = TransformerStackConfig::tiny().init::<B>(device);
        // Burn initializes parameters lazily, and a clone taken before the first use draws
        // its own values: run `plain` first, then copy its parameters.
        let a = values(plain.forward(tokens.clone()));
        let mut wide = TransformerStackConfig::tiny().with_final_logit_softcap(Some(1e3)).init::<B>(device);
        wide.head = plain.head.clone();
        wide.blocks = plain.blocks.clone();
        wide.token_embedding = plain.token_embedding.clone();
        wide.position_embedding = plain.position_embedding.clone();
        wide.final_norm = plain.final_norm.clone();
        let b = values(wide.forward(tokens));
        let worst = a.iter().zip(&b).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
        // tanh's series bound, plus f32 rounding (1e-4 of the largest logit: wgpu's tanh
        // loses digits near 0).
        let largest = a.iter().fold(0.0f64, |m, z| m.max(z.abs()));
        let bound = largest.powi(3) / 3e6 + 1e-4 * largest;
        assert!(worst <= bound, "cap 1000 moved a logit by {worst:e} > {bound:e}");
    }
}

/// The recipes' configuration errors name the field and the value.
#[test]
fn recipe_configuration_errors_name_the_field() {
    type B = addnorm::backend::ndarray::Backend;
    let device = addnorm::backend::ndarray::device;
    let block = || TransformerBlockConfig::new(D, HEADS, 16);
    let cases: Vec<PanicCase<'_>> = vec![
        (
            Box::new(move || {
                let post = block().with_placement(Placement::Post);
                post.with_conditioning(Some(3)).init::<B>(&device());
            }),
            &["conditioning", "post"],
        ),
        (
            Box::new(move || {
                let conditioned = block().with_conditioning(Some(3));
                let stack = TransformerStackConfig::new().with_block(conditioned);
                stack.init::<B>(&device());
            }),
            &["block.conditioning"],
        ),
        (
            Box::new(move || {
                let stack = TransformerStackConfig::tiny().with_final_logit_softcap(Some(0.0));
                stack.init::<B>(&device());
            }),
            &["final_logit_softcap", "0"],
        ),
        (
            Box::new(move || {
                let capped = block().with_attention_logit_softcap(Some(-1.0));
                capped.init::<B>(&device());
            }),
            &["logit_softcap", "-1"],
        ),
        (
            Box::new(move || {
                let conditioned = block().with_conditioning(Some(3)).init::<B>(&device());
                conditioned.forward(Tensor::zeros([1, SEQ, D], &device()));
            }),
            &["forward_conditioned"],
        ),
        (
            Box::new(move || {
                let parallel = block().with_placement(Placement::Parallel);
                parallel.with_residual_gate(true).init::<B>(&device());
            }),
            &["residual_gate", "parallel"],
        ),
    ];
    assert_panic_messages(cases);
}
