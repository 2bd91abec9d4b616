//! PyTorch parity of one transformer layer: our Post and Pre blocks against
//! `nn.TransformerEncoderLayer(norm_first=False / True)` with the same weights, under a causal
//! mask, and the recipes written from their papers on the same modules (OLMo 2's post-branch
//! norm, LayerScale, the parallel block, NormFormer, Gemma 2's attention-logit soft cap,
//! ResiDual): forward output, input gradient and the new parameters' gradients
//! (`tests/fixtures/make_block_fixtures.py`).

use std::collections::HashMap;

use addnorm::nn::{
    Activation, Affine, LayerNormConfig, Norm, NormConfig, Placement, QkNormScope, RmsNormConfig,
    TransformerBlock, TransformerBlockConfig,
};
use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::Tensor;
use serde::Deserialize;

use crate::common::{assert_close, tensor, values};
use crate::on_every_backend;

/// One case of `blocks.json` (`tests/fixtures/make_block_fixtures.py`).
#[derive(Deserialize)]
pub(crate) struct Case {
    pub(crate) name: String,
    norm_first: bool,
    /// The recipe (`"post_branch"`, `"parallel"`, `"normformer"`, `"resi_dual"`, …; absent
    /// for the plain encoder layers).
    #[serde(default)]
    placement: Option<String>,
    activation: String,
    d_model: usize,
    n_heads: usize,
    d_ff: usize,
    pub(crate) shape: [usize; 3],
    weights: HashMap<String, Vec<f64>>,
    pub(crate) x: Vec<f64>,
    dy: Vec<f64>,
    pub(crate) y: Vec<f64>,
    dx: Vec<f64>,
    /// Gradients of the recipe's own parameters, by PyTorch name.
    #[serde(default)]
    grads: HashMap<String, Vec<f64>>,
    /// The attention-logit soft cap (`pre_softcap`).
    #[serde(default)]
    softcap: Option<f64>,
    /// ResiDual's dual stream: its input, output gradient, output and input gradient.
    #[serde(default)]
    dual: Vec<f64>,
    #[serde(default)]
    ddual: Vec<f64>,
    #[serde(default)]
    dual_out: Vec<f64>,
    #[serde(default)]
    dx_dual: Vec<f64>,
    /// adaLN-Zero's conditioning width, vector `[batch, d_cond]` and its gradient.
    #[serde(default)]
    pub(crate) d_cond: usize,
    #[serde(default)]
    pub(crate) cond: Vec<f64>,
    #[serde(default)]
    dx_cond: Vec<f64>,
}

#[derive(Deserialize)]
struct Fixtures {
    cases: Vec<Case>,
}

/// Every case of `blocks.json`, in the file's order.
pub(crate) fn cases() -> Vec<Case> {
    let fixtures: Fixtures = serde_json::from_str(include_str!("../fixtures/blocks.json")).unwrap();
    fixtures.cases
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

/// The block configuration of a case.
fn config(case: &Case) -> TransformerBlockConfig {
    let d = case.d_model;
    let activation = match case.activation.as_str() {
        "relu" => Activation::Relu,
        _ => Activation::Gelu,
    };
    let recipe = case.placement.as_deref();
    let placement = match (recipe, case.norm_first) {
        (Some("post_branch" | "olmo2"), _) => Placement::PostBranch,
        (Some("parallel"), _) => Placement::Parallel,
        (Some("resi_dual"), _) => Placement::ResiDual,
        (_, true) => Placement::Pre,
        (_, false) => Placement::Post,
    };
    let config = TransformerBlockConfig::new(d, case.n_heads, case.d_ff)
        .with_placement(placement)
        .with_norm(NormConfig::Layer(LayerNormConfig::new(vec![d])))
        .with_activation(activation)
        .with_layer_scale((recipe == Some("pre_layer_scale")).then_some(1.0))
        .with_residual_gate(recipe == Some("gru_gate"))
        .with_attention_logit_softcap(case.softcap);
    match recipe {
        Some("normformer") => config.normformer(),
        // OLMo 2: separate RMSNorm QK-norms over the full width (ε = 1e-6).
        Some("olmo2") => config
            .with_qk_norm(Some(RmsNormConfig::new(vec![d]).into()))
            .with_separate_qk_norms(true)
            .with_qk_norm_scope(QkNormScope::FullWidth),
        // DiT: norms without affine parameters, ε = 1e-6.
        Some("ada_ln_zero") => config.with_conditioning(Some(case.d_cond)).with_norm(
            LayerNormConfig::new(vec![d])
                .with_affine(Affine::Off)
                .with_epsilon(1e-6)
                .into(),
        ),
        _ => config,
    }
}

/// NormFormer's parameters: `attn_ln`, `ffn_layernorm` (fairseq's names) and the head gains.
fn load_normformer<B: addnorm::NormBackend>(
    block: &mut TransformerBlock<B>,
    case: &Case,
    device: &B::Device,
) {
    let w = |k: &str| &case.weights[k][..];
    set_norm(
        &mut block.attention_residual.output_norm,
        w("attn_ln.weight"),
        w("attn_ln.bias"),
        device,
    );
    set_norm(
        &mut block.feed_forward.hidden_norm,
        w("ffn_layernorm.weight"),
        w("ffn_layernorm.bias"),
        device,
    );
    let gains = w("self_attn.head_scale");
    block.attention.head_scale = Some(Param::from_tensor(tensor(gains, [gains.len()], device)));
}

/// The four attention projections and the two feed-forward ones, from PyTorch's names.
fn set_projections<B: addnorm::NormBackend>(
    block: &mut TransformerBlock<B>,
    case: &Case,
    device: &B::Device,
) {
    let (d, ff) = (case.d_model, case.d_ff);
    let w = |k: &str| &case.weights[k][..];
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
}

fn load<B: addnorm::NormBackend>(case: &Case, device: &B::Device) -> TransformerBlock<B> {
    let d = case.d_model;
    let config = config(case);
    let placement = config.placement;
    let mut block = config.init::<B>(device);
    set_projections(&mut block, case, device);
    let w = |k: &str| &case.weights[k][..];
    match case.placement.as_deref() {
        Some("normformer") => load_normformer(&mut block, case, device),
        Some("olmo2") => {
            let attention = &mut block.attention;
            for (norm, key) in [
                (&mut attention.qk_norm, "self_attn.q_norm.weight"),
                (&mut attention.key_norm, "self_attn.k_norm.weight"),
            ] {
                let Some(Norm::Rms(rms)) = norm else {
                    panic!("OLMo 2's QK-norm is an RMSNorm")
                };
                rms.gamma = Some(Param::from_tensor(tensor(w(key), [d], device)));
            }
        }
        Some("pre_layer_scale") => {
            for (residual, key) in [
                (&mut block.attention_residual, "ls1.gamma"),
                (&mut block.feed_forward_residual, "ls2.gamma"),
            ] {
                residual.layer_scale = Some(Param::from_tensor(tensor(w(key), [d], device)));
            }
        }
        Some("gru_gate") => {
            // nn.GRUCell's weight_ih / weight_hh are [3d, d], as a Linear's [out, in].
            for (residual, gate) in [
                (&mut block.attention_residual, "gate1"),
                (&mut block.feed_forward_residual, "gate2"),
            ] {
                let cell = residual.residual_gate.as_mut().expect("a gated block");
                for (linear, part) in [(&mut cell.input, "ih"), (&mut cell.hidden, "hh")] {
                    let (weight, bias) = (
                        w(&format!("{gate}.weight_{part}")),
                        w(&format!("{gate}.bias_{part}")),
                    );
                    set_linear(linear, weight, bias, d, device);
                }
            }
        }
        Some("ada_ln_zero") => {
            // Its norms have no parameters.
            let ada_ln = block.ada_ln.as_mut().expect("conditioned");
            let (weight, bias) = (w("adaLN_modulation.1.weight"), w("adaLN_modulation.1.bias"));
            set_linear(&mut ada_ln.modulation, weight, bias, case.d_cond, device);
            return block;
        }
        _ => {}
    }
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

/// The gradient of a `[n]` parameter, by its PyTorch name in a NormFormer case.
fn parameter_grad<B: addnorm::NormAutodiffBackend>(
    block: &TransformerBlock<B>,
    name: &str,
    grads: &B::Gradients,
) -> Vec<f64> {
    let norm = |norm: &Option<Norm<B>>| match norm {
        Some(Norm::Layer(ln)) => ln.clone(),
        _ => panic!("{name}: expected a LayerNorm"),
    };
    if let Some(part) = name.strip_prefix("adaLN_modulation.1.") {
        // Burn's weight is PyTorch's transposed.
        let linear = &block.ada_ln.as_ref().unwrap().modulation;
        return match part {
            "weight" => values(linear.weight.val().grad(grads).unwrap().transpose()),
            _ => values(linear.bias.as_ref().unwrap().val().grad(grads).unwrap()),
        };
    }
    if let Some((gate, part)) = name.split_once('.').filter(|(g, _)| g.starts_with("gate")) {
        let residual = match gate {
            "gate1" => &block.attention_residual,
            _ => &block.feed_forward_residual,
        };
        let cell = residual.residual_gate.as_ref().expect("a gated block");
        let linear = if part.ends_with("ih") {
            &cell.input
        } else {
            &cell.hidden
        };
        // Burn's weight is PyTorch's transposed.
        return if part.starts_with("weight") {
            values(linear.weight.val().grad(grads).unwrap().transpose())
        } else {
            values(linear.bias.as_ref().unwrap().val().grad(grads).unwrap())
        };
    }
    let rms_gain = |norm: &Option<Norm<B>>| match norm {
        Some(Norm::Rms(rms)) => rms.gamma.clone().unwrap(),
        _ => panic!("{name}: expected an RMSNorm"),
    };
    let param = match name {
        "self_attn.q_norm.weight" => rms_gain(&block.attention.qk_norm),
        "self_attn.k_norm.weight" => rms_gain(&block.attention.key_norm),
        "self_attn.head_scale" => block.attention.head_scale.clone().unwrap(),
        "attn_ln.weight" => norm(&block.attention_residual.output_norm).gamma.unwrap(),
        "attn_ln.bias" => norm(&block.attention_residual.output_norm).beta.unwrap(),
        "ffn_layernorm.weight" => norm(&block.feed_forward.hidden_norm).gamma.unwrap(),
        "ffn_layernorm.bias" => norm(&block.feed_forward.hidden_norm).beta.unwrap(),
        other => panic!("no parameter named {other}"),
    };
    values(param.val().grad(grads).unwrap())
}

on_every_backend! {
    /// Post-LN (ReLU) and Pre-LN (GELU) layers, the OLMo 2 post-branch placement (GELU, the
    /// encoder layer's modules with its norms on the sublayers' outputs), a Pre-LN layer
    /// with CaiT's LayerScale, GPT-J / PaLM's parallel block, a NormFormer layer, a Pre-LN
    /// layer with Gemma 2's attention-logit soft cap (fused on the CPU and on CubeCL),
    /// a ResiDual layer (both streams), DiT's adaLN-Zero block (with the conditioning's
    /// gradient), OLMo 2's order with its full-width QK-norm, and Pre-LN and Post-LN layers
    /// with x-transformers' GRU residual gating (every gate parameter's gradient): outputs, input gradients
    /// and the recipes' own parameter gradients within 1e-4 of their scale.
    fn post_and_pre_blocks_match_torch_encoder_layer<B>(device) {
        let cases = cases();
        assert_eq!(cases.len(), 12);
        // Burn's own matmul (the composite attention's) is TF32 on CUDA.
        let tol = crate::common::matmul_tolerance::<B>(1e-4);
        for case in &cases {
            let block = load::<B>(case, device);
            let x = tensor::<B, 3>(&case.x, case.shape, device).require_grad();
            let dy: Tensor<B, 3> = tensor(&case.dy, case.shape, device);
            let name = |what: &str| format!("{}: {what}", case.name);
            let cond = (!case.cond.is_empty())
                .then(|| tensor::<B, 2>(&case.cond, [case.shape[0], case.d_cond], device).require_grad());
            let (y, loss, dual) = if let Some(c) = &cond {
                let y = block.forward_conditioned(x.clone(), c.clone());
                (y.clone(), (y * dy).sum(), None)
            } else if case.dual.is_empty() {
                let y = block.forward(x.clone());
                (y.clone(), (y * dy).sum(), None)
            } else {
                let dual = tensor::<B, 3>(&case.dual, case.shape, device).require_grad();
                let (y, dual_out) = block.forward_dual(x.clone(), dual.clone());
                assert_close(&name("dual stream"), &values(dual_out.clone()), &case.dual_out, tol);
                let ddual: Tensor<B, 3> = tensor(&case.ddual, case.shape, device);
                (y.clone(), (y * dy).sum() + (dual_out * ddual).sum(), Some(dual))
            };
            assert_close(&name("y"), &values(y), &case.y, tol);
            let grads = loss.backward();
            assert_close(&name("dx"), &values(x.grad(&grads).unwrap()), &case.dx, tol);
            if let Some(c) = cond {
                assert_close(&name("dx_cond"), &values(c.grad(&grads).unwrap()), &case.dx_cond, tol);
            }
            if let Some(dual) = dual {
                assert_close(&name("dx_dual"), &values(dual.grad(&grads).unwrap()), &case.dx_dual, tol);
            }
            for (param, expected) in &case.grads {
                let actual = parameter_grad(&block, param, &grads);
                assert_close(&name(param), &actual, expected, tol);
            }
        }
    }
}
