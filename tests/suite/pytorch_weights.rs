//! Loading PyTorch checkpoints (`addnorm::nn::pytorch`): `torch.save`d state dicts of
//! `nn.LayerNorm`, `nn.RMSNorm`, a Post-LN `nn.TransformerEncoderLayer` and a two-layer
//! Pre-LN `nn.TransformerEncoder` load into our modules, whose outputs then match PyTorch's
//! (float64 truth, made by `tests/fixtures/make_pytorch_weights.py`). Wrong files, keys and
//! shapes are errors that name them.

use addnorm::nn::pytorch::{LoadPytorch, PytorchLoadError, StateDict};
use addnorm::nn::{
    Activation, LayerNormConfig, NormConfig, Placement, RmsNormConfig, TransformerBlock,
    TransformerBlockConfig,
};
use burn::tensor::Tensor;
use serde::Deserialize;

use crate::common::{assert_close, pytorch_checkpoint, tensor, values};
use crate::on_every_backend;

#[derive(Deserialize)]
struct Outputs {
    d_model: usize,
    n_heads: usize,
    d_ff: usize,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    shape: Vec<usize>,
    x: Vec<f64>,
    y: Vec<f64>,
}

fn outputs() -> Outputs {
    serde_json::from_str(include_str!("../fixtures/pytorch/outputs.json")).unwrap()
}

fn case<'a>(outputs: &'a Outputs, name: &str) -> &'a Case {
    outputs.cases.iter().find(|c| c.name == name).unwrap()
}

/// The block configuration the encoder-layer fixtures were made with.
fn block_config(
    o: &Outputs,
    placement: Placement,
    activation: Activation,
) -> TransformerBlockConfig {
    TransformerBlockConfig::new(o.d_model, o.n_heads, o.d_ff)
        .with_placement(placement)
        .with_norm(LayerNormConfig::new(vec![o.d_model]).into())
        .with_activation(activation)
}

fn block<B: addnorm::NormBackend>(
    o: &Outputs,
    placement: Placement,
    activation: Activation,
    device: &B::Device,
) -> TransformerBlock<B> {
    block_config(o, placement, activation).init(device)
}

on_every_backend! {
    /// nn.LayerNorm and nn.RMSNorm (the latter saved under "model_state_dict"): loaded γ/β
    /// reproduce PyTorch's output within 1e-5 of its scale.
    fn norms_load_torch_weights_and_match_its_output<B>(device) {
        let o = outputs();
        let c = case(&o, "layer_norm");
        let state = StateDict::from_file(pytorch_checkpoint("layer_norm.pt")).unwrap();
        assert_eq!(state.keys(), ["bias", "weight"]);
        let norm = LayerNormConfig::new(vec![6]).init::<B>(device).load_pytorch(&state, "").unwrap();
        let y = norm.forward(tensor::<B, 3>(&c.x, [2, 3, 6], device));
        assert_close("layer_norm", &values(y), &c.y, 1e-5);

        let c = case(&o, "rms_norm");
        let state = StateDict::from_file_under(pytorch_checkpoint("rms_norm.pt"), "model_state_dict").unwrap();
        let norm = RmsNormConfig::new(vec![6]).init::<B>(device).load_pytorch(&state, "").unwrap();
        let y = norm.forward(tensor::<B, 3>(&c.x, [2, 3, 6], device));
        assert_close("rms_norm", &values(y), &c.y, 1e-5);
    }

    /// A Post-LN ReLU nn.TransformerEncoderLayer, and the two Pre-LN GELU layers of an
    /// nn.TransformerEncoder loaded by prefix ("layers.0.", "layers.1.") and run in turn:
    /// outputs within 1e-4 of their scale (TF32's tolerance on CUDA), under a causal mask.
    fn transformer_blocks_load_torch_encoder_layers_and_match_their_output<B>(device) {
        let o = outputs();
        let c = case(&o, "encoder_post");
        let shape = [c.shape[0], c.shape[1], c.shape[2]];
        let state = StateDict::from_file(pytorch_checkpoint("encoder_post.pt")).unwrap();
        let post = block::<B>(&o, Placement::Post, Activation::Relu, device)
            .load_pytorch(&state, "")
            .unwrap();
        let y = post.forward(tensor::<B, 3>(&c.x, shape, device));
        let tol = crate::common::matmul_tolerance::<B>(1e-4);
        assert_close("encoder_post", &values(y), &c.y, tol);

        let c = case(&o, "encoder_pre");
        let state = StateDict::from_file(pytorch_checkpoint("encoder_pre.pt")).unwrap();
        let mut x: Tensor<B, 3> = tensor(&c.x, shape, device);
        for layer in 0..2 {
            let pre = block::<B>(&o, Placement::Pre, Activation::Gelu, device)
                .load_pytorch(&state, &format!("layers.{layer}."))
                .unwrap();
            x = pre.forward(x);
        }
        assert_close("encoder_pre", &values(x), &c.y, tol);
    }
}

/// A `PostBranch` block (OLMo 2's order) reads an `nn.TransformerEncoderLayer` state dict:
/// `norm1` and `norm2` land on its attention's and feed-forward network's output norms.
#[test]
fn a_post_branch_block_loads_the_encoder_layer_names_into_its_output_norms() {
    type B = addnorm::backend::ndarray::Backend;
    let device = addnorm::backend::ndarray::device();
    let o = outputs();
    let state = StateDict::from_file(pytorch_checkpoint("encoder_post.pt")).unwrap();
    let loaded = block::<B>(&o, Placement::PostBranch, Activation::Relu, &device)
        .load_pytorch(&state, "")
        .unwrap();
    let d = o.d_model;
    for (residual, key) in [
        (&loaded.attention_residual, "norm1.weight"),
        (&loaded.feed_forward_residual, "norm2.weight"),
    ] {
        assert!(residual.input_norm.is_none() && residual.sum_norm.is_none());
        let Some(addnorm::nn::Norm::Layer(norm)) = &residual.output_norm else {
            panic!("a PostBranch residual has a LayerNorm on its output");
        };
        let expected = values(state.tensor::<B, 1>(key, [d], &device).unwrap());
        assert_close(
            key,
            &values(norm.gamma.as_ref().unwrap().val()),
            &expected,
            0.0,
        );
    }
}

/// A `Parallel` block (GPT-J's order) reads `norm1` into its one norm, on the attention
/// connection; `norm2` has no place in it.
#[test]
fn a_parallel_block_loads_norm1_into_its_one_norm() {
    type B = addnorm::backend::ndarray::Backend;
    let device = addnorm::backend::ndarray::device();
    let o = outputs();
    let state = StateDict::from_file(pytorch_checkpoint("encoder_post.pt")).unwrap();
    let loaded = block::<B>(&o, Placement::Parallel, Activation::Relu, &device)
        .load_pytorch(&state, "")
        .unwrap();
    let Some(addnorm::nn::Norm::Layer(norm)) = &loaded.attention_residual.input_norm else {
        panic!("a Parallel block has a LayerNorm on the attention connection's input");
    };
    let expected = values(
        state
            .tensor::<B, 1>("norm1.weight", [o.d_model], &device)
            .unwrap(),
    );
    assert_close(
        "norm1",
        &values(norm.gamma.as_ref().unwrap().val()),
        &expected,
        0.0,
    );
    let f = &loaded.feed_forward_residual;
    assert!(f.input_norm.is_none() && f.output_norm.is_none() && f.sum_norm.is_none());
}

/// A block with LayerScale reads its gains under timm's `ls1.gamma` / `ls2.gamma`: from a
/// state dict without them, the load fails naming the first.
#[test]
fn layer_scale_gains_are_read_under_timms_names() {
    type B = addnorm::backend::ndarray::Backend;
    let device = addnorm::backend::ndarray::device();
    let o = outputs();
    let state = StateDict::from_file(pytorch_checkpoint("encoder_post.pt")).unwrap();
    let block = block_config(&o, Placement::Post, Activation::Relu)
        .with_layer_scale(Some(1e-5))
        .init::<B>(&device);
    let err = block.load_pytorch(&state, "").unwrap_err().to_string();
    assert!(
        err.contains("ls1.gamma") && err.contains("not in the state dict"),
        "{err}"
    );
}

/// Loading keeps each parameter's id, so optimizer state and records still line up.
#[test]
fn loading_keeps_parameter_ids() {
    type B = addnorm::backend::ndarray::Backend;
    let device = addnorm::backend::ndarray::device();
    let state = StateDict::from_file(pytorch_checkpoint("layer_norm.pt")).unwrap();
    let norm = LayerNormConfig::new(vec![6]).init::<B>(&device);
    let id = norm.gamma.as_ref().unwrap().id;
    let loaded = norm.load_pytorch(&state, "").unwrap();
    assert_eq!(loaded.gamma.as_ref().unwrap().id, id);
}

#[test]
fn missing_keys_wrong_shapes_wrong_placements_and_bad_files_are_named_errors() {
    type B = addnorm::backend::ndarray::Backend;
    let device = addnorm::backend::ndarray::device();
    let o = outputs();
    let state = StateDict::from_file(pytorch_checkpoint("encoder_post.pt")).unwrap();
    let message = |e: PytorchLoadError| e.to_string();

    let wrong_width = LayerNormConfig::new(vec![5]).init::<B>(&device);
    let err = message(wrong_width.load_pytorch(&state, "norm1.").unwrap_err());
    assert!(
        err.contains("norm1.weight") && err.contains("[5]") && err.contains("[8]"),
        "{err}"
    );

    let err = message(
        block::<B>(&o, Placement::Post, Activation::Relu, &device)
            .load_pytorch(&state, "layers.0.")
            .unwrap_err(),
    );
    assert!(
        err.contains("layers.0.norm1.weight") && err.contains("not in the state dict"),
        "{err}"
    );

    let err = message(
        block::<B>(&o, Placement::Peri, Activation::Relu, &device)
            .load_pytorch(&state, "")
            .unwrap_err(),
    );
    assert!(
        err.contains("Post-LN, Pre-LN") && err.contains("PostBranch") && err.contains("peri"),
        "{err}"
    );

    // Options nn.TransformerEncoderLayer's names cannot fill are refused, not half-loaded:
    // grouped-query attention's narrower W^K, W^V, and a gated feed-forward network's W_g.
    let refused = |config: TransformerBlockConfig| {
        message(
            config
                .init::<B>(&device)
                .load_pytorch(&state, "")
                .unwrap_err(),
        )
    };
    let post = || block_config(&o, Placement::Post, Activation::Relu);
    let err = refused(post().with_n_kv_heads(Some(1)));
    assert!(
        err.contains("self_attn.: nn.MultiheadAttention's in_proj_weight holds three [8, 8] maps")
            && err.contains("[8, 4]"),
        "{err}"
    );
    let err = refused(post().with_gated_feed_forward(true));
    assert!(
        err.contains("is not gated") && err.contains("HfDecoderLayer"),
        "{err}"
    );

    let err = message(StateDict::from_file(pytorch_checkpoint("outputs.json")).unwrap_err());
    assert!(
        err.contains("outputs.json") && err.contains("not a readable PyTorch file"),
        "{err}"
    );

    let rms: NormConfig = RmsNormConfig::new(vec![8]).into();
    assert!(matches!(rms, NormConfig::Rms(_)));
}

/// The `blocks.json` case named `name`.
fn block_case(name: &str) -> crate::block_parity::Case {
    let mut cases = crate::block_parity::cases();
    let i = cases.iter().position(|c| c.name == name).unwrap();
    cases.swap_remove(i)
}

/// A NormFormer layer's checkpoint (`make_block_fixtures.py`: an encoder layer's names plus
/// fairseq's `attn_ln`, `ffn_layernorm` and `self_attn.head_scale`) and DiT's adaLN-Zero
/// block (plus `adaLN_modulation.1`) load into `normformer()` and `conditioning` blocks whose
/// outputs match the PyTorch references of `blocks.json`.
#[test]
fn normformer_and_ada_ln_zero_blocks_load_their_checkpoints() {
    type B = addnorm::backend::ndarray::Backend;
    let device = addnorm::backend::ndarray::device();
    let (d, heads, ff) = (8, 2, 16);
    let config = TransformerBlockConfig::new(d, heads, ff)
        .with_norm(LayerNormConfig::new(vec![d]).into())
        .with_activation(Activation::Gelu);

    let state = StateDict::from_file(pytorch_checkpoint("normformer_layer.pt")).unwrap();
    let block = config
        .clone()
        .normformer()
        .init::<B>(&device)
        .load_pytorch(&state, "")
        .unwrap();
    let case = block_case("normformer_gelu");
    let out = block.forward(tensor::<B, 3>(&case.x, case.shape, &device));
    assert_close("normformer", &values(out), &case.y, 1e-4);

    let state = StateDict::from_file(pytorch_checkpoint("dit_layer.pt")).unwrap();
    let dit_norm = LayerNormConfig::new(vec![d])
        .with_affine(addnorm::nn::Affine::Off)
        .with_epsilon(1e-6);
    let block = config
        .with_norm(dit_norm.into())
        .with_conditioning(Some(6))
        .init::<B>(&device)
        .load_pytorch(&state, "")
        .unwrap();
    let case = block_case("ada_ln_zero_gelu");
    let c = tensor::<B, 2>(&case.cond, [case.shape[0], case.d_cond], &device);
    let out = block.forward_conditioned(tensor::<B, 3>(&case.x, case.shape, &device), c);
    assert_close("adaLN-Zero", &values(out), &case.y, 1e-4);
}

/// A Pre-LN block with residual gating loads its GRU cells from `nn.GRUCell`'s names under
/// `gate1.` and `gate2.` (with the encoder layer's own names) and matches the PyTorch
/// reference of `blocks.json`; a checkpoint without the gates is refused, naming the key.
#[test]
fn gru_gated_block_loads_its_checkpoint() {
    type B = addnorm::backend::ndarray::Backend;
    let device = addnorm::backend::ndarray::device();
    let config = TransformerBlockConfig::new(8, 2, 16)
        .with_norm(LayerNormConfig::new(vec![8]).into())
        .with_activation(Activation::Gelu)
        .with_residual_gate(true);
    let state = StateDict::from_file(pytorch_checkpoint("gru_gated_layer.pt")).unwrap();
    let block = config.init::<B>(&device).load_pytorch(&state, "").unwrap();
    let case = block_case("pre_gru_gate_gelu");
    let out = block.forward(tensor::<B, 3>(&case.x, case.shape, &device));
    assert_close("GRU-gated block", &values(out), &case.y, 1e-4);

    let plain = StateDict::from_file(pytorch_checkpoint("encoder_pre.pt")).unwrap();
    let err = config
        .init::<B>(&device)
        .load_pytorch(&plain, "layers.0.")
        .unwrap_err();
    assert!(err.to_string().contains("gate1.weight_ih"), "{err}");
}
