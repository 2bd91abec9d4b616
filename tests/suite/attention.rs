//! Fused attention (`addnorm_kernels::attention`) against PyTorch's
//! `scaled_dot_product_attention` (`tests/fixtures/make_attention_fixtures.py`: forward,
//! dQ, dK, dV over T ∈ {1, 2, 17, 128, 1000}, d_head ∈ {8, 16, 64}, causal and not, and
//! logits scaled by 30), against the composite path, and against finite differences in
//! f64; plus the fused-call counters, `ForceComposite`, and the module's dropout fallback.
//!
//! On ndarray the fused CPU kernels run; on wgpu the CubeCL kernels, through
//! `Fusion<CubeBackend>` (Burn's default wgpu type) and, in
//! [`cube_backend_without_fusion_agrees`], on the bare `CubeBackend`; the composite path
//! is checked on both under `ForceComposite`.

use addnorm::NormBackend;
use addnorm_kernels::attention::{AttentionSpec, attention, attention_with_max_logit};
use addnorm_kernels::composite::ForceComposite;
use addnorm_kernels::fused::fused_calls;
use burn::tensor::Tensor;
use burn::tensor::backend::AutodiffBackend;
use serde::Deserialize;

use crate::common::{assert_close, assert_panic_messages, in_own_process, tensor, values};
use crate::on_every_backend;

#[derive(Deserialize)]
struct Fixtures {
    cases: Vec<Fixture>,
}

/// One PyTorch case; outputs for the rows in `rows` only, `[batch, rows, d_model]`.
#[derive(Deserialize)]
struct Fixture {
    batch: usize,
    seq: usize,
    heads: usize,
    d_head: usize,
    causal: bool,
    scale: f64,
    qk_amplitude: f64,
    rows: Vec<usize>,
    output: Vec<f64>,
    dq: Vec<f64>,
    dk: Vec<f64>,
    dv: Vec<f64>,
}

fn fixtures() -> Vec<Fixture> {
    let fixtures: Fixtures =
        serde_json::from_str(include_str!("../fixtures/attention.json")).unwrap();
    assert_eq!(fixtures.cases.len(), 33);
    fixtures.cases
}

/// The fixtures' input formula (see the script), rounded to f32 as PyTorch's were.
fn formula(len: usize, seed: usize, amplitude: f64) -> Vec<f64> {
    (0..len)
        .map(|i| {
            let v = ((i * 7919 + seed * 104_729) % 1013) as f64 / 506.5 - 1.0;
            (v * amplitude) as f32 as f64
        })
        .collect()
}

/// The inputs and the spec of one attention call.
struct Inputs {
    shape: [usize; 3],
    spec: AttentionSpec,
    /// q, k, v and the output gradient dO, row-major `[batch, T, d_model]`.
    qkv_dout: [Vec<f64>; 4],
}

impl Inputs {
    fn of_fixture(f: &Fixture) -> Self {
        let shape = [f.batch, f.seq, f.heads * f.d_head];
        let len = shape.iter().product();
        let mut spec = AttentionSpec::causal(f.heads, f.d_head).with_scale(f.scale);
        spec.causal = f.causal;
        Self {
            shape,
            spec,
            qkv_dout: [
                formula(len, 1, f.qk_amplitude),
                formula(len, 2, f.qk_amplitude),
                formula(len, 3, 1.0),
                formula(len, 4, 1.0),
            ],
        }
    }

    fn random(shape: [usize; 3], heads: usize, causal: bool, seed: usize) -> Self {
        let len = shape.iter().product();
        let mut spec = AttentionSpec::causal(heads, shape[2] / heads);
        spec.causal = causal;
        Self {
            shape,
            spec,
            qkv_dout: [0, 1, 2, 3].map(|s| formula(len, seed * 7 + s, 1.5)),
        }
    }

    fn describe(&self) -> String {
        format!("{:?} {:?}", self.shape, self.spec)
    }
}

/// The output, dQ, dK, dV (full tensors) and the max logit of `loss = Σ O·dO`.
struct Pass {
    output: Vec<f64>,
    grads: [Vec<f64>; 3],
    max_logit: f64,
}

fn pass<B: AutodiffBackend + NormBackend>(inputs: &Inputs, device: &B::Device) -> Pass {
    let [q, k, v, dout] = &inputs.qkv_dout;
    let [q, k, v] = [q, k, v].map(|x| tensor::<B, 3>(x, inputs.shape, device).require_grad());
    let dout = tensor::<B, 3>(dout, inputs.shape, device);
    let (output, max_logit) =
        attention_with_max_logit(q.clone(), k.clone(), v.clone(), inputs.spec);
    let grads = (output.clone() * dout).sum().backward();
    let grad = |x: &Tensor<B, 3>| values(x.grad(&grads).expect("a gradient"));
    Pass {
        output: values(output),
        grads: [grad(&q), grad(&k), grad(&v)],
        max_logit: values(max_logit)[0],
    }
}

/// The fixture's rows of a full `[batch, T, d_model]` tensor.
fn rows_of(full: &[f64], f: &Fixture) -> Vec<f64> {
    let d_model = f.heads * f.d_head;
    let mut picked = Vec::new();
    for b in 0..f.batch {
        for &i in &f.rows {
            let start = (b * f.seq + i) * d_model;
            picked.extend_from_slice(&full[start..start + d_model]);
        }
    }
    picked
}

/// Checks every fixture with `seq` in `seqs` on backend `B`.
fn check_fixtures<B: AutodiffBackend + NormBackend>(seqs: &[usize], device: &B::Device) {
    let mut checked = 0;
    for f in fixtures().iter().filter(|f| seqs.contains(&f.seq)) {
        let inputs = Inputs::of_fixture(f);
        let got = pass::<B>(&inputs, device);
        // Logits scaled by 30 multiply f32's rounding of `dP − Δ` by 30. With |q|, |k| up
        // to 2 as well (logits in the thousands), PyTorch's own f32 SDPA is 9.1e-3 off its
        // f64 dQ on these rows (measured with the fixture script's inputs).
        let tolerance = match (f.scale > 1.0, f.qk_amplitude > 1.0) {
            (true, true) => 1.5e-2,
            (true, false) => 2e-3,
            _ => 1e-4,
        };
        let what = inputs.describe();
        assert_close(
            &format!("{what}: O"),
            &rows_of(&got.output, f),
            &f.output,
            tolerance,
        );
        for (name, (grad, expected)) in ["dQ", "dK", "dV"]
            .iter()
            .zip(got.grads.iter().zip([&f.dq, &f.dk, &f.dv]))
        {
            assert_close(
                &format!("{what}: {name}"),
                &rows_of(grad, f),
                expected,
                tolerance,
            );
        }
        checked += 1;
    }
    assert!(checked > 0, "no fixture with T in {seqs:?}");
}

on_every_backend! {
    /// PyTorch's SDPA: forward, dQ, dK, dV, T ≤ 128 (T = 1000 below), every
    /// d_head, causal and not, and the scale-30 cases.
    fn matches_torch_sdpa<B>(device) {
        check_fixtures::<B>(&[1, 2, 17, 128], device);
    }

    /// The backend's path (fused where it has a kernel) against the composite path under
    /// `ForceComposite`: output, gradients and max logit, across the query block (64
    /// rows), every head width, causal and not, with and without Gemma 2's logit soft cap
    /// (fused on the CPU and on CubeCL), whose max logit stays under
    /// the cap.
    fn fused_matches_composite<B>(device) {
        for (i, (shape, heads)) in [([2, 17, 32], 2), ([1, 70, 64], 8), ([2, 65, 128], 2), ([3, 5, 12], 3)]
            .into_iter()
            .enumerate()
        {
            for (causal, cap) in [(true, None), (false, None), (true, Some(1.0)), (false, Some(1.0))] {
                let mut inputs = Inputs::random(shape, heads, causal, i);
                inputs.spec.softcap = cap;
                let before = fused_calls();
                let fused = pass::<B>(&inputs, device);
                let after = fused_calls();
                assert_eq!(
                    (after.forward - before.forward, after.backward - before.backward),
                    (1, 1),
                    "{}: the fused path ran",
                    inputs.describe()
                );
                if let Some(cap) = cap {
                    assert!(fused.max_logit < cap, "{}: capped max logit {}", inputs.describe(), fused.max_logit);
                }
                let composite = {
                    let _composite = ForceComposite::new();
                    pass::<B>(&inputs, device)
                };
                let what = inputs.describe();
                // The composite path's products are Burn's matmul: TF32 on CUDA.
                let tol = |t| crate::common::matmul_tolerance::<B>(t);
                assert_close(&format!("{what}: O"), &fused.output, &composite.output, tol(2e-5));
                for (name, (a, e)) in ["dQ", "dK", "dV"].iter().zip(fused.grads.iter().zip(&composite.grads)) {
                    assert_close(&format!("{what}: {name}"), a, e, tol(5e-5));
                }
                assert_close(&format!("{what}: max logit"), &[fused.max_logit], &[composite.max_logit], tol(1e-5));
            }
        }
    }

    /// Q, K, V that are column slices of one wider tensor (as a fused QKV projection would
    /// give) agree with contiguous copies, and their gradients land in the right columns.
    fn column_slices_agree_with_contiguous_copies<B>(device) {
        let inputs = Inputs::random([2, 17, 16], 2, true, 8);
        let contiguous = pass::<B>(&inputs, device);
        let [batch, seq, d_model] = inputs.shape;
        let mut packed = vec![0.0; batch * seq * 3 * d_model];
        for row in 0..batch * seq {
            for (part, values) in inputs.qkv_dout[..3].iter().enumerate() {
                let to = row * 3 * d_model + part * d_model;
                packed[to..to + d_model].copy_from_slice(&values[row * d_model..(row + 1) * d_model]);
            }
        }
        let leaf = tensor::<B, 3>(&packed, [batch, seq, 3 * d_model], device).require_grad();
        let [q, k, v] = [0, 1, 2].map(|part| leaf.clone().narrow(2, part * d_model, d_model));
        let dout = tensor::<B, 3>(&inputs.qkv_dout[3], inputs.shape, device);
        let output = attention(q, k, v, inputs.spec);
        let grads = (output.clone() * dout).sum().backward();
        assert_close("O from slices", &values(output), &contiguous.output, 1e-6);
        let grad = values(leaf.grad(&grads).expect("a gradient"));
        for (part, expected) in contiguous.grads.iter().enumerate() {
            let got: Vec<f64> = (0..batch * seq)
                .flat_map(|row| {
                    let from = row * 3 * d_model + part * d_model;
                    grad[from..from + d_model].to_vec()
                })
                .collect();
            assert_close(&format!("gradient of slice {part}"), &got, expected, 1e-6);
        }
    }

    /// A query that sees a single key (causal row 0; T = 1) copies that key's value and
    /// sends no gradient to its query or key (the softmax of one logit is constant).
    fn a_single_visible_key_copies_its_value<B>(device) {
        for (shape, causal) in [([2, 9, 16], true), ([3, 1, 16], false)] {
            let inputs = Inputs::random(shape, 2, causal, 5);
            let got = pass::<B>(&inputs, device);
            let d_model = shape[2];
            for b in 0..shape[0] {
                let row0 = b * shape[1] * d_model..(b * shape[1] + 1) * d_model;
                let v = &inputs.qkv_dout[2][row0.clone()];
                assert_close("row 0 = v₀", &got.output[row0.clone()], v, 1e-6);
                assert_close("dQ of row 0", &got.grads[0][row0], &vec![0.0; d_model], 1e-4);
            }
            if shape[1] == 1 {
                assert_close("dK at T = 1", &got.grads[1], &vec![0.0; got.grads[1].len()], 1e-4);
                assert_close("dV at T = 1", &got.grads[2], &inputs.qkv_dout[3], 1e-6);
            }
        }
    }

    /// Logits of ±10⁴ (scale 10⁴): no overflow, and each row attends to its largest logit.
    fn huge_logits_stay_finite<B>(device) {
        let mut inputs = Inputs::random([1, 6, 4], 1, true, 3);
        inputs.spec = inputs.spec.non_causal().with_scale(1e4);
        let got = pass::<B>(&inputs, device);
        for field in [&got.output, &got.grads[0], &got.grads[1], &got.grads[2]] {
            assert!(field.iter().all(|v| v.is_finite()), "non-finite: {field:?}");
        }
        let [q, k, v, _] = &inputs.qkv_dout;
        for i in 0..6 {
            let logit = |j: usize| (0..4).map(|d| q[i * 4 + d] * k[j * 4 + d]).sum::<f64>();
            let best = (0..6).max_by(|&a, &b| logit(a).total_cmp(&logit(b))).unwrap();
            assert_close("one-hot row", &got.output[i * 4..i * 4 + 4], &v[best * 4..best * 4 + 4], 1e-5);
        }
        assert!(got.max_logit > 1e3, "max logit {}", got.max_logit);
    }

    /// Mismatched shapes and a head count that does not divide d_model panic with the
    /// shapes named, on every path.
    fn bad_shapes_panic_with_both_shapes<B>(device) {
        let t = |shape: [usize; 3]| Tensor::<B, 3>::zeros(shape, device);
        assert_panic_messages(vec![
            (
                Box::new(|| {
                    attention(t([1, 4, 8]), t([1, 5, 8]), t([1, 4, 8]), AttentionSpec::causal(2, 4));
                }),
                &["q [1, 4, 8]", "k [1, 5, 8]"],
            ),
            (
                Box::new(|| {
                    attention(t([1, 4, 8]), t([1, 4, 8]), t([1, 4, 8]), AttentionSpec::causal(3, 4));
                }),
                &["d_model = 8", "heads = 3"],
            ),
        ]);
    }
}

on_every_backend! {
    /// T = 1000 against PyTorch, on the fused kernels (asserted: one fused forward per
    /// case), which never build the `[1, 2, 1000, 1000]` scores.
    fn matches_torch_sdpa_at_t1000<B>(device) {
        let before = fused_calls();
        check_fixtures::<B>(&[1000], device);
        assert_eq!(fused_calls().forward - before.forward, 6, "one fused forward per case");
    }

    /// Under `Autodiff<B>` one attention call is one fused forward and one fused backward;
    /// a `ForceComposite` guard turns both off; the inner backend alone counts its forward
    /// too.
    fn the_fused_path_is_counted_and_force_composite_turns_it_off<B>(device) {
        let inputs = Inputs::random([2, 9, 8], 2, true, 1);
        let before = fused_calls();
        pass::<B>(&inputs, device);
        let after = fused_calls();
        assert_eq!(
            (after.forward - before.forward, after.backward - before.backward),
            (1, 1)
        );
        {
            let _composite = ForceComposite::new();
            pass::<B>(&inputs, device);
        }
        assert_eq!(fused_calls(), after, "ForceComposite ran a fused kernel");
        type Inner<B> = <B as AutodiffBackend>::InnerBackend;
        let q = tensor::<Inner<B>, 3>(&inputs.qkv_dout[0], [2, 9, 8], device);
        attention(q.clone(), q.clone(), q, inputs.spec);
        assert_eq!(fused_calls().forward, after.forward + 1);
    }
}

/// The CubeCL kernels on the bare `CubeBackend<WgpuRuntime>` (no fusion stream: what
/// `burn::backend::Wgpu` is when Burn's `fusion` feature is off) against the composite
/// path, causal and not, across 64-unit cubes (T = 70, 8 heads) and with a single row.
#[cfg(feature = "wgpu")]
#[test]
fn cube_backend_without_fusion_agrees() {
    type Cube = burn::backend::Autodiff<
        burn::backend::wgpu::CubeBackend<burn::backend::wgpu::WgpuRuntime, f32, i32, u32>,
    >;
    let Some(device) = crate::common::wgpu_device(module_path!()) else {
        return;
    };
    for (i, (shape, heads)) in [([2, 17, 32], 2), ([1, 70, 64], 8), ([3, 1, 12], 3)]
        .into_iter()
        .enumerate()
    {
        for causal in [true, false] {
            let inputs = Inputs::random(shape, heads, causal, i);
            let before = fused_calls();
            let fused = pass::<Cube>(&inputs, &device);
            let after = fused_calls();
            assert_eq!(
                (
                    after.forward - before.forward,
                    after.backward - before.backward
                ),
                (1, 1),
                "CubeBackend did not take the fused path"
            );
            let composite = {
                let _composite = ForceComposite::new();
                pass::<Cube>(&inputs, &device)
            };
            let what = inputs.describe();
            assert_close(
                &format!("{what}: O"),
                &fused.output,
                &composite.output,
                2e-5,
            );
            for (name, (a, e)) in ["dQ", "dK", "dV"]
                .iter()
                .zip(fused.grads.iter().zip(&composite.grads))
            {
                assert_close(&format!("{what}: {name}"), a, e, 5e-5);
            }
            assert_close(
                "max logit",
                &[fused.max_logit],
                &[composite.max_logit],
                1e-5,
            );
        }
    }
}

/// The CubeCL kernels in half precision: f16 Q, K, V give an f16 output and f16
/// gradients that agree with the f32 computation on the same (f16-rounded) inputs to f16's
/// resolution. Heads wider than the kernels' local arrays (`d_head` > 256) and f64 take
/// the composite path (not counted) and still agree.
#[cfg(all(feature = "wgpu", feature = "ndarray"))]
#[test]
fn cube_kernels_take_f16_and_fall_back_past_their_limits() {
    use burn::tensor::{DType, backend::Backend};
    type Ad = addnorm::backend::wgpu::AutodiffBackend;
    let Some(device) = crate::common::wgpu_device(module_path!()) else {
        return;
    };
    let run = |inputs: &Inputs, dtype: DType| {
        let [q, k, v, dout] = &inputs.qkv_dout;
        let leaf = |x: &Vec<f64>| {
            tensor::<Ad, 3>(x, inputs.shape, &device)
                .cast(DType::F16)
                .cast(dtype)
                .require_grad()
        };
        let [q, k, v] = [q, k, v].map(leaf);
        let output = attention(q.clone(), k.clone(), v.clone(), inputs.spec);
        assert_eq!(output.dtype(), dtype);
        let dout = tensor::<Ad, 3>(dout, inputs.shape, &device).cast(dtype);
        let grads = (output.clone() * dout).cast(DType::F32).sum().backward();
        let grad = |x: &Tensor<Ad, 3>| x.grad(&grads).expect("a gradient");
        assert_eq!(grad(&q).dtype(), dtype, "dQ dtype");
        [
            values(output),
            values(grad(&q)),
            values(grad(&k)),
            values(grad(&v)),
        ]
    };
    if <Ad as Backend>::supports_dtype(&device, DType::F16) {
        let inputs = Inputs::random([2, 17, 32], 2, true, 4);
        let before = fused_calls();
        let half = run(&inputs, DType::F16);
        assert_eq!(fused_calls().forward, before.forward + 1, "f16 not fused");
        let full = run(&inputs, DType::F32);
        for (name, (h, f)) in ["O", "dQ", "dK", "dV"].iter().zip(half.iter().zip(&full)) {
            assert_close(&format!("f16 {name}"), h, f, 1e-2);
        }
    } else {
        eprintln!("f16 part skipped: this wgpu adapter has no f16");
    }
    let wide = Inputs::random([1, 5, 260], 1, true, 6);
    let before = fused_calls();
    let fallback = pass::<Ad>(&wide, &device);
    assert_eq!(fused_calls(), before, "d_head = 260 ran a fused kernel");
    let reference = pass::<addnorm::backend::ndarray::AutodiffBackend>(
        &wide,
        &addnorm::backend::ndarray::device(),
    );
    assert_close("d_head = 260: O", &fallback.output, &reference.output, 2e-5);
    assert_close(
        "d_head = 260: dQ",
        &fallback.grads[0],
        &reference.grads[0],
        5e-5,
    );
}

/// `MultiHeadSelfAttention` takes the fused path without dropout, the composite one with
/// attention dropout above 0, and QK-norm and the four projections keep their fused
/// kernels either way.
#[cfg(feature = "ndarray")]
#[test]
fn the_module_falls_back_to_the_composite_path_with_dropout() {
    use addnorm::nn::{MultiHeadSelfAttentionConfig, NormConfig};
    type B = addnorm::backend::ndarray::AutodiffBackend;
    let device = addnorm::backend::ndarray::device();
    let x = Tensor::<B, 3>::ones([2, 5, 8], &device);
    let config = MultiHeadSelfAttentionConfig::new(8, 2).with_qk_norm(Some(NormConfig::layer(0)));
    for (dropout, attention_kernels) in [(0.0, 1), (0.1, 0)] {
        let module = config.clone().with_dropout(dropout).init::<B>(&device);
        let before = fused_calls();
        module.forward(x.clone()).sum().backward();
        let after = fused_calls();
        // Two QK-norm calls (q and k), four projections (Q, K, V, output), plus the
        // attention kernel, if fused.
        assert_eq!(
            after.forward - before.forward,
            2 + 4 + attention_kernels,
            "dropout {dropout}"
        );
        assert_eq!(
            after.backward - before.backward,
            2 + 4 + attention_kernels,
            "dropout {dropout}"
        );
    }
}

/// dQ, dK, dV of `loss = Σ O·dO` against central differences, in f64 on the fused CPU
/// kernels (asserted), causal and not, with a row that sees a single key.
#[cfg(feature = "ndarray")]
#[test]
fn gradients_match_finite_differences_in_f64() {
    in_own_process(
        "attention::gradients_match_finite_differences_in_f64",
        || {
            type F64 = burn::backend::Autodiff<burn::backend::NdArray<f64>>;
            let device = Default::default();
            for causal in [true, false] {
                let inputs = Inputs::random([2, 5, 6], 2, causal, 11);
                let before = fused_calls();
                let analytic = pass::<F64>(&inputs, &device);
                assert_eq!(
                    fused_calls().backward,
                    before.backward + 1,
                    "not the fused path"
                );
                assert!(
                    tensor::<F64, 1>(&[1.0], [1], &device).dtype() == burn::tensor::DType::F64,
                    "not running in f64"
                );
                let loss = |qkv: &[Vec<f64>]| {
                    let [q, k, v] =
                        [0, 1, 2].map(|i| tensor::<F64, 3>(&qkv[i], inputs.shape, &device));
                    let dout = tensor::<F64, 3>(&inputs.qkv_dout[3], inputs.shape, &device);
                    values((attention(q, k, v, inputs.spec) * dout).sum())[0]
                };
                let h = 1e-6;
                for (which, grad) in analytic.grads.iter().enumerate() {
                    let numeric: Vec<f64> = (0..grad.len())
                        .map(|i| {
                            let at = |d: f64| {
                                let mut qkv = inputs.qkv_dout[..3].to_vec();
                                qkv[which][i] += d;
                                loss(&qkv)
                            };
                            (at(h) - at(-h)) / (2.0 * h)
                        })
                        .collect();
                    assert_close(
                        &format!("causal {causal}: gradient #{which}"),
                        grad,
                        &numeric,
                        1e-7,
                    );
                }
            }
        },
    );
}

/// `separate_qk_norms` gives the keys their own norm (Wortsman et al. 2023's
/// QK-layernorm): 2·d_head more parameters, the same function as one shared norm at
/// initialization (γ = 1, β = 0), and gradients of its own once the two differ.
#[cfg(feature = "ndarray")]
#[test]
fn separate_qk_norms_give_the_keys_their_own_parameters() {
    use addnorm::nn::{MultiHeadSelfAttentionConfig, Norm, NormConfig};
    use burn::module::Module;
    use burn::tensor::Distribution;
    type B = addnorm::backend::ndarray::AutodiffBackend;
    let device = addnorm::backend::ndarray::device();
    let x = Tensor::<B, 3>::random([2, 5, 8], Distribution::Normal(0.0, 1.0), &device);
    let config = MultiHeadSelfAttentionConfig::new(8, 2).with_qk_norm(Some(NormConfig::layer(0)));
    let shared = config.init::<B>(&device);
    let mut separate = config.with_separate_qk_norms(true).init::<B>(&device);
    assert!(shared.key_norm.is_none());
    assert_eq!(separate.num_params(), shared.num_params() + 2 * 4);
    separate.query = shared.query.clone();
    separate.key = shared.key.clone();
    separate.value = shared.value.clone();
    separate.output = shared.output.clone();
    let (a, b) = (separate.forward(x.clone()), shared.forward(x.clone()));
    assert_close("separate vs shared", &values(a), &values(b), 1e-6);
    // Scale the keys' γ by 3: the logits, and so the output, change; the queries' γ and
    // the keys' γ now receive different gradients.
    let Some(Norm::Layer(mut key_norm)) = separate.key_norm.take() else {
        panic!("a LayerNorm key norm")
    };
    let gamma = key_norm.gamma.take().expect("γ");
    key_norm.gamma = Some(gamma.map(|g| g.mul_scalar(3.0).detach().require_grad()));
    separate.key_norm = Some(Norm::Layer(key_norm));
    let out = separate.forward(x.clone());
    let moved = values(out.clone() - shared.forward(x));
    assert!(
        moved.iter().any(|d| d.abs() > 1e-3),
        "the key norm is not used"
    );
    let grads = out.square().sum().backward();
    let grad = |n: &Option<Norm<B>>| match n {
        Some(Norm::Layer(l)) => values(
            l.gamma
                .as_ref()
                .expect("γ")
                .grad(&grads)
                .expect("a γ gradient"),
        ),
        _ => unreachable!(),
    };
    let (gq, gk) = (grad(&separate.qk_norm), grad(&separate.key_norm));
    assert!(gk.iter().any(|g| g.abs() > 1e-6));
    assert!(gq.iter().zip(&gk).any(|(a, b)| (a - b).abs() > 1e-6));
}
