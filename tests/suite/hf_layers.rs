//! Hugging Face decoder layers: `TransformerBlockConfig::{llama, gemma2, olmo2}` loaded with
//! [`HfDecoderLayer`] from checkpoints of `transformers`' own `LlamaDecoderLayer`,
//! `Gemma2DecoderLayer` and `Olmo2DecoderLayer` (random weights, grouped-query attention,
//! RoPE, gated feed-forward networks; Gemma 2 with heads wider than `d_model / n_heads`, its
//! logit scale and soft cap) match their float64 outputs, input gradients and every
//! parameter's gradient (`tests/fixtures/make_hf_layer_fixtures.py`); the same weights read
//! from safetensors files, in float32 and bfloat16, are the checkpoint's.

use std::collections::HashMap;

use addnorm::nn::pytorch::{HfDecoderLayer, PytorchLoadError, StateDict};
use addnorm::nn::{
    Affine, Norm, Placement, RmsNormConfig, RotaryConfig, TransformerBlock, TransformerBlockConfig,
};
use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::Tensor;
use serde::Deserialize;

use crate::common::{assert_close, pytorch_checkpoint, tensor, values};
use crate::on_every_backend;

/// One case of `hf_layers.json`.
#[derive(Deserialize)]
struct Case {
    name: String,
    prefix: String,
    d_model: usize,
    n_heads: usize,
    n_kv_heads: usize,
    d_head: usize,
    d_ff: usize,
    rms_norm_eps: f64,
    rope_theta: f64,
    query_pre_attn_scalar: Option<f64>,
    attn_logit_softcap: Option<f64>,
    shape: [usize; 3],
    x: Vec<f64>,
    dy: Vec<f64>,
    y: Vec<f64>,
    dx: Vec<f64>,
    /// Every parameter's gradient, by its name under the prefix.
    grads: HashMap<String, Vec<f64>>,
}

#[derive(Deserialize)]
struct Fixtures {
    cases: Vec<Case>,
}

fn cases() -> Vec<Case> {
    let fixtures: Fixtures =
        serde_json::from_str(include_str!("../fixtures/hf_layers.json")).unwrap();
    fixtures.cases
}

fn layout(case: &Case) -> HfDecoderLayer {
    match case.name.as_str() {
        "llama" => HfDecoderLayer::Llama,
        "gemma2" => HfDecoderLayer::Gemma2,
        "olmo2" => HfDecoderLayer::Olmo2,
        other => panic!("no layout for {other}"),
    }
}

/// The preset of a case, with the fixture's ε, RoPE base, logit scale and cap.
fn config(case: &Case) -> TransformerBlockConfig {
    let (d, h, g, ff) = (case.d_model, case.n_heads, case.n_kv_heads, case.d_ff);
    let rms = RmsNormConfig::new(vec![d]).with_epsilon(case.rms_norm_eps);
    let config = match layout(case) {
        HfDecoderLayer::Llama => TransformerBlockConfig::llama(d, h, g, ff).with_norm(rms.into()),
        HfDecoderLayer::Gemma2 => TransformerBlockConfig::gemma2(d, h, g, case.d_head, ff)
            .with_norm(rms.with_affine(Affine::UnitOffset).into())
            .with_attention_logit_softcap(case.attn_logit_softcap)
            .with_attention_scale(case.query_pre_attn_scalar.map(|s| 1.0 / s.sqrt())),
        _ => TransformerBlockConfig::olmo2(d, h, g, ff)
            .with_norm(rms.clone().into())
            .with_qk_norm(Some(rms.into())),
    };
    config.with_rotary(Some(RotaryConfig::new().with_theta(case.rope_theta)))
}

fn state(case: &Case) -> StateDict {
    StateDict::from_file(pytorch_checkpoint(&format!("{}_layer.pt", case.name))).unwrap()
}

/// The gain γ of an RMSNorm slot.
fn gain<B: addnorm::NormBackend>(norm: &Option<Norm<B>>, name: &str) -> Param<Tensor<B, 1>> {
    match norm {
        Some(Norm::Rms(rms)) => rms.gamma.clone().unwrap(),
        _ => panic!("{name}: expected an RMSNorm"),
    }
}

/// The norm gain PyTorch calls `name` in a layer of `layout`.
fn parameter<B: addnorm::NormBackend>(
    block: &TransformerBlock<B>,
    layout: HfDecoderLayer,
    name: &str,
) -> Param<Tensor<B, 1>> {
    let (attention, ffn) = (&block.attention_residual, &block.feed_forward_residual);
    let name = name.strip_suffix(".weight").expect("only weights");
    match (layout, name) {
        (_, "self_attn.q_norm") => gain(&block.attention.qk_norm, name),
        (_, "self_attn.k_norm") => gain(&block.attention.key_norm, name),
        (HfDecoderLayer::Olmo2, "post_attention_layernorm") => gain(&attention.output_norm, name),
        (HfDecoderLayer::Olmo2, "post_feedforward_layernorm") => gain(&ffn.output_norm, name),
        (HfDecoderLayer::Llama, "post_attention_layernorm") => gain(&ffn.input_norm, name),
        (_, "input_layernorm") => gain(&attention.input_norm, name),
        (_, "post_attention_layernorm") => gain(&attention.output_norm, name),
        (_, "pre_feedforward_layernorm") => gain(&ffn.input_norm, name),
        (_, "post_feedforward_layernorm") => gain(&ffn.output_norm, name),
        (_, other) => panic!("no norm named {other}"),
    }
}

/// The projection PyTorch calls `name` (`self_attn.q_proj.weight`, `mlp.up_proj.weight`, …).
fn projection<'a, B: addnorm::NormBackend>(
    block: &'a TransformerBlock<B>,
    name: &str,
) -> Option<&'a Linear<B>> {
    let (attention, ffn) = (&block.attention, &block.feed_forward);
    Some(match name.strip_suffix(".weight")? {
        "self_attn.q_proj" => &attention.query,
        "self_attn.k_proj" => &attention.key,
        "self_attn.v_proj" => &attention.value,
        "self_attn.o_proj" => &attention.output,
        "mlp.gate_proj" => ffn.gate.as_ref().unwrap(),
        "mlp.up_proj" => &ffn.inner,
        "mlp.down_proj" => &ffn.outer,
        _ => return None,
    })
}

on_every_backend! {
    /// Each layer's output, input gradient and all its parameters' gradients within 1e-4 of
    /// their scale (TF32's tolerance where Burn's matmul runs on CUDA).
    fn hugging_face_decoder_layers_match_transformers<B>(device) {
        let cases = cases();
        assert_eq!(cases.len(), 3);
        let tol = crate::common::matmul_tolerance::<B>(1e-4);
        for case in &cases {
            let layout = layout(case);
            let block = layout
                .load(config(case).init::<B>(device), &state(case), &case.prefix)
                .unwrap();
            let x = tensor::<B, 3>(&case.x, case.shape, device).require_grad();
            let dy: Tensor<B, 3> = tensor(&case.dy, case.shape, device);
            let name = |what: &str| format!("{}: {what}", case.name);
            let y = block.forward(x.clone());
            assert_close(&name("y"), &values(y.clone()), &case.y, tol);
            let grads = (y * dy).sum().backward();
            assert_close(&name("dx"), &values(x.grad(&grads).unwrap()), &case.dx, tol);
            for (param, expected) in &case.grads {
                let actual = match projection(&block, param) {
                    Some(linear) => values(linear.weight.val().grad(&grads).unwrap().transpose()),
                    None => values(parameter(&block, layout, param).val().grad(&grads).unwrap()),
                };
                assert_close(&name(param), &actual, expected, tol);
            }
            let expected_params = 7 + match layout {
                HfDecoderLayer::Gemma2 => 4,
                HfDecoderLayer::Olmo2 => 4,
                _ => 2,
            };
            assert_eq!(case.grads.len(), expected_params, "{}: every parameter checked", case.name);
        }
    }
}

fn message(result: Result<TransformerBlock<burn::backend::NdArray>, PytorchLoadError>) -> String {
    result.expect_err("an error").to_string()
}

#[test]
fn a_block_of_another_structure_is_refused_by_name() {
    let cases = cases();
    let gemma2 = cases.iter().find(|c| c.name == "gemma2").unwrap();
    let device = Default::default();
    let state = state(gemma2);
    let build = |config: TransformerBlockConfig| config.init::<burn::backend::NdArray>(&device);
    let load = |config| HfDecoderLayer::Gemma2.load(build(config), &state, &gemma2.prefix);
    let wrong_placement = message(load(config(gemma2).with_placement(Placement::Pre)));
    assert!(
        wrong_placement.contains("Gemma2 decoder layer is a peri block; this one is pre"),
        "{wrong_placement}"
    );
    let ungated = message(load(config(gemma2).with_gated_feed_forward(false)));
    assert!(ungated.contains("gated_feed_forward"), "{ungated}");
    let scaled = message(load(config(gemma2).with_layer_scale(Some(0.1))));
    assert!(scaled.contains("LayerScale"), "{scaled}");
    // Keys of the right model but a wider layer: the shape error names the key.
    let wide = gemma2.d_model * 2;
    let mut wrong_width = config(gemma2).with_norm(RmsNormConfig::new(vec![wide]).into());
    wrong_width.d_model = wide;
    let shape = message(load(wrong_width));
    assert!(
        shape.contains("model.layers.0.input_layernorm.weight"),
        "{shape}"
    );
    // Another prefix: the missing key is named.
    let missing = message(HfDecoderLayer::Gemma2.load(build(config(gemma2)), &state, "layers.0."));
    assert!(
        missing.contains("layers.0.input_layernorm.weight"),
        "{missing}"
    );
}

#[test]
fn presets_build_the_models_structures() {
    type B = burn::backend::NdArray;
    let device = Default::default();
    let gemma2 = TransformerBlockConfig::gemma2(64, 4, 2, 32, 96).init::<B>(&device);
    assert_eq!(
        gemma2.attention.query.weight.dims(),
        [64, 128],
        "heads wider than d/h"
    );
    assert_eq!(
        gemma2.attention.key.weight.dims(),
        [64, 64],
        "two key/value heads"
    );
    assert_eq!(gemma2.attention.output.weight.dims(), [128, 64]);
    assert!(gemma2.attention.query.bias.is_none() && gemma2.feed_forward.outer.bias.is_none());
    assert!(gemma2.attention_residual.input_norm.is_some());
    assert!(gemma2.feed_forward_residual.output_norm.is_some());
    let olmo2 = TransformerBlockConfig::olmo2(64, 8, 2, 96).init::<B>(&device);
    let k_norm = gain(&olmo2.attention.key_norm, "k_norm");
    assert_eq!(k_norm.dims(), [16], "the keys' full width: two heads of 8");
    assert_eq!(gain(&olmo2.attention.qk_norm, "q_norm").dims(), [64]);
    let llama = TransformerBlockConfig::llama(64, 8, 8, 96);
    assert_eq!(llama.rotary, Some(RotaryConfig::new()));
    let llama = llama.init::<B>(&device);
    assert_eq!(
        llama.feed_forward.gate.as_ref().unwrap().weight.dims(),
        [64, 96]
    );
    // An OLMo 2 layer's one QK-norm cannot serve queries and keys of different widths.
    let shared = crate::common::panic_message(|| {
        TransformerBlockConfig::olmo2(64, 8, 2, 96)
            .with_separate_qk_norms(false)
            .init::<B>(&device);
    });
    assert!(shared.contains("set separate_qk_norms"), "{shared}");
    let uneven = crate::common::panic_message(|| {
        TransformerBlockConfig::llama(64, 8, 3, 96).init::<B>(&device);
    });
    assert!(
        uneven.contains("n_kv_heads (3) must divide n_heads (8)"),
        "{uneven}"
    );
}

/// `v` rounded to the nearest bfloat16 (ties to even), as `torch.Tensor.to(torch.bfloat16)`.
fn to_bf16(v: f32) -> f32 {
    let bits = v.to_bits();
    f32::from_bits((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF_0000)
}

/// Every parameter of a loaded layer, by PyTorch name, in PyTorch's layout.
fn parameters(
    block: &TransformerBlock<burn::backend::NdArray>,
    layout: HfDecoderLayer,
    names: &[&String],
) -> Vec<Vec<f64>> {
    let value = |name: &str| match projection(block, name) {
        Some(linear) => values(linear.weight.val().transpose()),
        None => values(parameter(block, layout, name).val()),
    };
    names.iter().map(|name| value(name)).collect()
}

#[test]
fn safetensors_files_load_as_the_checkpoint_does() {
    let cases = cases();
    let gemma2 = cases.iter().find(|c| c.name == "gemma2").unwrap();
    let device = Default::default();
    let names: Vec<&String> = gemma2.grads.keys().collect();
    let read = |state: StateDict| {
        let block = config(gemma2).init::<burn::backend::NdArray>(&device);
        let block = HfDecoderLayer::Gemma2
            .load(block, &state, &gemma2.prefix)
            .unwrap();
        parameters(&block, HfDecoderLayer::Gemma2, &names)
    };
    let safetensors = |file: &str| StateDict::from_safetensors(pytorch_checkpoint(file)).unwrap();
    let checkpoint = read(state(gemma2));
    assert_eq!(read(safetensors("gemma2_layer.safetensors")), checkpoint);
    // bfloat16, the models' own dtype: each weight is the checkpoint's rounded to bf16.
    let rounded: Vec<Vec<f64>> = checkpoint
        .iter()
        .map(|p| p.iter().map(|&v| f64::from(to_bf16(v as f32))).collect())
        .collect();
    assert_ne!(rounded, checkpoint, "bf16 rounds these weights");
    assert_eq!(read(safetensors("gemma2_layer.bf16.safetensors")), rounded);
    let missing = StateDict::from_safetensors(pytorch_checkpoint("absent.safetensors"));
    let message = missing.expect_err("no such file").to_string();
    assert!(
        message.contains("absent.safetensors: not a readable safetensors file"),
        "{message}"
    );
}
