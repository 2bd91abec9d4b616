//! PyTorch parity of one transformer layer: our Post and Pre blocks against
//! `nn.TransformerEncoderLayer(norm_first=False / True)` with the same weights, under a causal
//! mask: forward output and input gradient (`tests/fixtures/make_block_fixtures.py`).

use std::collections::HashMap;

use addnorm::nn::{
    Activation, LayerNormConfig, Norm, NormConfig, Placement, TransformerBlock,
    TransformerBlockConfig,
};
use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::Tensor;
use serde::Deserialize;

use crate::common::{assert_close, tensor, values};
use crate::on_every_backend;

#[derive(Deserialize)]
struct Case {
    name: String,
    norm_first: bool,
    /// `"post_branch"` for the OLMo 2 placement (absent for the encoder layers).
    #[serde(default)]
    placement: Option<String>,
    activation: String,
    d_model: usize,
    n_heads: usize,
    d_ff: usize,
    shape: [usize; 3],
    weights: HashMap<String, Vec<f64>>,
    x: Vec<f64>,
    dy: Vec<f64>,
    y: Vec<f64>,
    dx: Vec<f64>,
}

#[derive(Deserialize)]
struct Fixtures {
    cases: Vec<Case>,
}

/// A Burn `[in, out]` weight from a PyTorch `[out, in]` one (rows `rows` of a stacked matrix).
fn set_linear<B: burn::tensor::backend::Backend>(
    linear: &mut Linear<B>,
    weight: &[f64],
    bias: &[f64],
    d_in: usize,
    device: &B::Device,
) {
    let d_out = bias.len();
    let w = tensor::<B, 2>(weight, [d_out, d_in], device).transpose();
    linear.weight = Param::from_tensor(w);
    linear.bias = Some(Param::from_tensor(tensor::<B, 1>(bias, [d_out], device)));
}

fn set_norm<B: burn::tensor::backend::Backend>(
    norm: &mut Option<Norm<B>>,
    gamma: &[f64],
    beta: &[f64],
    device: &B::Device,
) {
    let Some(Norm::Layer(ln)) = norm else {
        panic!("expected a LayerNorm")
    };
    ln.gamma = Some(Param::from_tensor(tensor(gamma, [gamma.len()], device)));
    ln.beta = Some(Param::from_tensor(tensor(beta, [beta.len()], device)));
}

fn load<B: addnorm::NormBackend>(case: &Case, device: &B::Device) -> TransformerBlock<B> {
    let (d, ff) = (case.d_model, case.d_ff);
    let activation = match case.activation.as_str() {
        "relu" => Activation::Relu,
        _ => Activation::Gelu,
    };
    let layer_scale = case.placement.as_deref() == Some("pre_layer_scale");
    let placement = match (case.placement.as_deref(), case.norm_first) {
        (Some("post_branch"), _) => Placement::PostBranch,
        (Some("parallel"), _) => Placement::Parallel,
        (_, true) => Placement::Pre,
        (_, false) => Placement::Post,
    };
    let mut block = TransformerBlockConfig::new(d, case.n_heads, ff)
        .with_placement(placement)
        .with_norm(NormConfig::Layer(LayerNormConfig::new(vec![d])))
        .with_activation(activation)
        .with_layer_scale(layer_scale.then_some(1.0))
        .init::<B>(device);
    let w = |k: &str| &case.weights[k][..];
    if layer_scale {
        for (residual, key) in [
            (&mut block.attention_residual, "ls1.gamma"),
            (&mut block.feed_forward_residual, "ls2.gamma"),
        ] {
            residual.layer_scale = Some(Param::from_tensor(tensor(w(key), [d], device)));
        }
    }
    let (in_w, in_b) = (w("self_attn.in_proj_weight"), w("self_attn.in_proj_bias"));
    let attention = &mut block.attention;
    for (i, linear) in [
        &mut attention.query,
        &mut attention.key,
        &mut attention.value,
    ]
    .into_iter()
    .enumerate()
    {
        let rows = i * d..(i + 1) * d;
        set_linear(
            linear,
            &in_w[rows.start * d..rows.end * d],
            &in_b[rows],
            d,
            device,
        );
    }
    set_linear(
        &mut attention.output,
        w("self_attn.out_proj.weight"),
        w("self_attn.out_proj.bias"),
        d,
        device,
    );
    let ffn = &mut block.feed_forward;
    set_linear(
        &mut ffn.inner,
        w("linear1.weight"),
        w("linear1.bias"),
        d,
        device,
    );
    set_linear(
        &mut ffn.outer,
        w("linear2.weight"),
        w("linear2.bias"),
        ff,
        device,
    );
    // norm1 wraps attention, norm2 the feed-forward network, in every placement.
    let (first, second) = match placement {
        Placement::Pre | Placement::Parallel => (
            &mut block.attention_residual.input_norm,
            &mut block.feed_forward_residual.input_norm,
        ),
        Placement::PostBranch => (
            &mut block.attention_residual.output_norm,
            &mut block.feed_forward_residual.output_norm,
        ),
        _ => (
            &mut block.attention_residual.sum_norm,
            &mut block.feed_forward_residual.sum_norm,
        ),
    };
    set_norm(first, w("norm1.weight"), w("norm1.bias"), device);
    if placement != Placement::Parallel {
        // A Parallel block has one norm for both sublayers: norm1.
        set_norm(second, w("norm2.weight"), w("norm2.bias"), device);
    }
    block
}

on_every_backend! {
    /// Post-LN (ReLU) and Pre-LN (GELU) layers, the OLMo 2 post-branch placement (GELU, the
    /// encoder layer's modules with its norms on the sublayers' outputs) and a Pre-LN layer
    /// with CaiT's LayerScale, and GPT-J / PaLM's parallel block: output and dx within 1e-4
    /// of their scale.
    fn post_and_pre_blocks_match_torch_encoder_layer<B>(device) {
        let fixtures: Fixtures =
            serde_json::from_str(include_str!("../fixtures/blocks.json")).unwrap();
        assert_eq!(fixtures.cases.len(), 5);
        for case in &fixtures.cases {
            let block = load::<B>(case, device);
            let x = tensor::<B, 3>(&case.x, case.shape, device).require_grad();
            let y = block.forward(x.clone());
            assert_close(&format!("{}: y", case.name), &values(y.clone()), &case.y, 1e-4);
            let dy: Tensor<B, 3> = tensor(&case.dy, case.shape, device);
            let grads = (y * dy).sum().backward();
            assert_close(
                &format!("{}: dx", case.name),
                &values(x.grad(&grads).unwrap()),
                &case.dx,
                1e-4,
            );
        }
    }
}
