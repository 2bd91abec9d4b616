//! Linear layers as one GEMM per call (`addnorm_kernels::linear`): the fused path against
//! Burn's own `linear` (under `ForceComposite`) for values and the gradients of x, W and
//! b, at ranks 2 to 4, with and without a bias, on a transposed view, and across the
//! row split over threads; f64 central differences on the fused CPU kernels; and the
//! fused-call counters; `linear_onto` (the residual added in the same pass) against the
//! sum it replaces, bit for bit on `NdArray`.

use addnorm_kernels::composite::ForceComposite;
use addnorm_kernels::fused::fused_calls;
use addnorm_kernels::linear::{linear, linear_onto};
use burn::tensor::Tensor;
use burn::tensor::backend::AutodiffBackend;

use crate::common::{assert_close, f32_bits, in_own_process, tensor, values};
use crate::on_every_backend;

/// Deterministic values in [−1, 1).
fn formula(len: usize, seed: usize) -> Vec<f64> {
    (0..len)
        .map(|i| ((i * 7919 + seed * 104_729) % 1013) as f64 / 506.5 - 1.0)
        .collect()
}

/// `y`, dx, dW and db (empty without a bias) of `loss = Σ y·dy`.
fn pass<B: AutodiffBackend + addnorm::NormBackend, const D: usize>(
    shape: [usize; D],
    d_out: usize,
    bias: bool,
    transposed: bool,
    device: &B::Device,
) -> [Vec<f64>; 4] {
    let d_in = shape[D - 1];
    let len: usize = shape.iter().product();
    let x = if transposed {
        // The same values, read through a swap_dims view of the first two dimensions.
        let mut swapped = shape;
        swapped.swap(0, 1);
        let stored = tensor::<B, D>(&formula(len, 1), swapped, device).swap_dims(0, 1);
        stored.require_grad()
    } else {
        tensor::<B, D>(&formula(len, 1), shape, device).require_grad()
    };
    let w = tensor::<B, 2>(&formula(d_in * d_out, 2), [d_in, d_out], device).require_grad();
    let b = bias.then(|| tensor::<B, 1>(&formula(d_out, 3), [d_out], device).require_grad());
    let y = linear(x.clone(), w.clone(), b.clone());
    let dy = Tensor::<B, D>::from_data(
        burn::tensor::TensorData::new(formula(y.shape().num_elements(), 4), y.dims()),
        device,
    );
    let grads = (y.clone() * dy).sum().backward();
    [
        values(y),
        values(x.grad(&grads).expect("dx")),
        values(w.grad(&grads).expect("dW")),
        b.map_or(vec![], |b| values(b.grad(&grads).expect("db"))),
    ]
}

/// The backend's path and Burn's `linear` agree on every output and gradient.
fn check<B: AutodiffBackend + addnorm::NormBackend, const D: usize>(
    shape: [usize; D],
    d_out: usize,
    bias: bool,
    transposed: bool,
    device: &B::Device,
) {
    let fused = pass::<B, D>(shape, d_out, bias, transposed, device);
    let composite = {
        let _composite = ForceComposite::new();
        pass::<B, D>(shape, d_out, bias, transposed, device)
    };
    for (name, (a, e)) in ["y", "dx", "dW", "db"]
        .iter()
        .zip(fused.iter().zip(&composite))
    {
        let what = format!("{shape:?}→{d_out} bias {bias} transposed {transposed}: {name}");
        assert_close(&what, a, e, 2e-6);
    }
}

on_every_backend! {
    /// Ranks 2, 3 and 4, with and without a bias, a transposed (non-contiguous) input,
    /// and a call large enough to be split into row blocks over threads (1001 rows).
    fn fused_matches_burns_linear<B>(device) {
        check::<B, 2>([5, 3], 4, true, false, device);
        check::<B, 3>([4, 17, 32], 128, true, false, device);
        check::<B, 3>([4, 17, 32], 128, false, false, device);
        check::<B, 3>([6, 5, 8], 12, true, true, device);
        check::<B, 4>([2, 3, 5, 8], 7, true, false, device);
        check::<B, 2>([1001, 64], 48, true, false, device);
    }
}

/// On `Autodiff<NdArray>` one call is one fused forward and one fused backward, and
/// `ForceComposite` turns both off; a rank-1 input is one row.
#[cfg(feature = "ndarray")]
#[test]
fn the_fused_path_is_counted_and_force_composite_turns_it_off() {
    type B = addnorm::backend::ndarray::AutodiffBackend;
    let device = addnorm::backend::ndarray::device();
    let before = fused_calls();
    pass::<B, 3>([2, 3, 4], 5, true, false, &device);
    let after = fused_calls();
    assert_eq!(
        (
            after.forward - before.forward,
            after.backward - before.backward
        ),
        (1, 1)
    );
    {
        let _composite = ForceComposite::new();
        pass::<B, 3>([2, 3, 4], 5, true, false, &device);
    }
    assert_eq!(fused_calls(), after, "ForceComposite ran a fused kernel");
    let x = tensor::<B, 1>(&[1.0, 2.0], [2], &device);
    let w = tensor::<B, 2>(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3], &device);
    assert_close(
        "rank 1",
        &values(linear(x, w, None)),
        &[9.0, 12.0, 15.0],
        1e-12,
    );
}

/// dx, dW, db of `loss = Σ y·dy` against central differences, in f64 on the fused CPU
/// kernels (asserted).
#[cfg(feature = "ndarray")]
#[test]
fn gradients_match_finite_differences_in_f64() {
    in_own_process("linear::gradients_match_finite_differences_in_f64", || {
        type F64 = burn::backend::Autodiff<burn::backend::NdArray<f64>>;
        let device = Default::default();
        let (shape, d_out) = ([2, 3, 4], 5);
        let before = fused_calls();
        let analytic = pass::<F64, 3>(shape, d_out, true, false, &device);
        assert_eq!(
            fused_calls().backward,
            before.backward + 1,
            "not the fused path"
        );
        let inputs = [formula(24, 1), formula(20, 2), formula(5, 3)];
        let loss = |p: &[Vec<f64>]| {
            let x = tensor::<F64, 3>(&p[0], shape, &device);
            let w = tensor::<F64, 2>(&p[1], [4, d_out], &device);
            let b = tensor::<F64, 1>(&p[2], [d_out], &device);
            let dy = tensor::<F64, 3>(&formula(30, 4), [2, 3, d_out], &device);
            values((linear(x, w, Some(b)) * dy).sum())[0]
        };
        let h = 1e-6;
        for (which, grad) in analytic[1..].iter().enumerate() {
            let numeric: Vec<f64> = (0..grad.len())
                .map(|i| {
                    let at = |d: f64| {
                        let mut p = inputs.to_vec();
                        p[which][i] += d;
                        loss(&p)
                    };
                    (at(h) - at(-h)) / (2.0 * h)
                })
                .collect();
            assert_close(&format!("gradient #{which}"), grad, &numeric, 1e-8);
        }
    });
}

/// `y = r + linear(x, W, b)`, through [`linear_onto`] (`onto`) or as written (`r + y`):
/// y, dx, dW, db (empty without a bias) and dr of `loss = Σ y·dy`.
fn pass_onto<B: AutodiffBackend + addnorm::NormBackend, const D: usize>(
    shape: [usize; D],
    d_out: usize,
    bias: bool,
    onto: bool,
    device: &B::Device,
) -> [Vec<f64>; 5] {
    let d_in = shape[D - 1];
    let len: usize = shape.iter().product();
    let mut out_shape = shape;
    out_shape[D - 1] = d_out;
    let out_len = len / d_in * d_out;
    let x = tensor::<B, D>(&formula(len, 1), shape, device).require_grad();
    let w = tensor::<B, 2>(&formula(d_in * d_out, 2), [d_in, d_out], device).require_grad();
    let b = bias.then(|| tensor::<B, 1>(&formula(d_out, 3), [d_out], device).require_grad());
    let r = tensor::<B, D>(&formula(out_len, 5), out_shape, device).require_grad();
    let y = if onto {
        linear_onto(x.clone(), w.clone(), b.clone(), r.clone())
    } else {
        r.clone() + linear(x.clone(), w.clone(), b.clone())
    };
    let dy = tensor::<B, D>(&formula(out_len, 4), out_shape, device);
    let grads = (y.clone() * dy).sum().backward();
    [
        values(y),
        values(x.grad(&grads).expect("dx")),
        values(w.grad(&grads).expect("dW")),
        b.map_or(vec![], |b| values(b.grad(&grads).expect("db"))),
        values(r.grad(&grads).expect("dr")),
    ]
}

on_every_backend! {
    /// `linear_onto` against `r + linear(x, W, b)` and against its composite path, with
    /// and without a bias, at ranks 2 and 3, and split over threads (1001 rows); dr is dy.
    fn linear_onto_matches_the_residual_sum<B>(device) {
        let cases: [(&[usize], usize, bool); 4] = [
            (&[5, 3], 4, true),
            (&[4, 17, 32], 128, true),
            (&[4, 17, 32], 32, false),
            (&[1001, 64], 48, true),
        ];
        for (shape, d_out, bias) in cases {
            let run = |onto: bool| match *shape {
                [a, b] => pass_onto::<B, 2>([a, b], d_out, bias, onto, device),
                [a, b, c] => pass_onto::<B, 3>([a, b, c], d_out, bias, onto, device),
                _ => unreachable!(),
            };
            let (fused, written) = (run(true), run(false));
            let composite = {
                let _composite = ForceComposite::new();
                run(true)
            };
            let dy = formula(fused[4].len(), 4);
            for (i, name) in ["y", "dx", "dW", "db", "dr"].iter().enumerate() {
                let what = format!("{shape:?}→{d_out} bias {bias}: {name}");
                assert_close(&what, &fused[i], &written[i], 2e-6);
                assert_close(&what, &fused[i], &composite[i], 2e-6);
            }
            assert_close("dr = dy", &fused[4], &dy, 1e-6);
        }
    }
}

/// On `NdArray` the fused `linear_onto` is one fused forward and one fused backward, and
/// gives the bits of the sum it replaces (`r + linear(x, W, b)`, Burn's add) in every
/// output and gradient.
#[cfg(feature = "ndarray")]
#[test]
fn linear_onto_is_one_fused_call_with_the_bits_of_the_sum() {
    type B = addnorm::backend::ndarray::AutodiffBackend;
    let device = addnorm::backend::ndarray::device();
    for (bias, rows) in [(true, 1001), (false, 7)] {
        let before = fused_calls();
        let fused = pass_onto::<B, 2>([rows, 64], 48, bias, true, &device);
        let after = fused_calls();
        assert_eq!(
            (
                after.forward - before.forward,
                after.backward - before.backward
            ),
            (1, 1),
            "linear_onto is one fused call each way"
        );
        let written = pass_onto::<B, 2>([rows, 64], 48, bias, false, &device);
        assert_eq!(fused, written, "bias {bias}, {rows} rows");
    }
    let x = tensor::<B, 1>(&[1.0, 2.0], [2], &device);
    let w = tensor::<B, 2>(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3], &device);
    let r = tensor::<B, 1>(&[0.5, -1.0, 2.0], [3], &device);
    assert_close(
        "rank 1",
        &values(linear_onto(x, w, None, r)),
        &[9.5, 11.0, 17.0],
        1e-12,
    );
}

/// An input that feeds three fused linear layers (as a normed input feeds Q, K and V):
/// the fused nodes add their dx into the gradient registered already, in place
/// (`addnorm_kernels::gradient_sum`), and the result has the bits of Burn's own sum of the
/// three, `dx₁ + (dx₂ + dx₃)` (the last layer's node runs first).
#[cfg(feature = "ndarray")]
#[test]
fn a_shared_input_sums_its_gradients_with_burns_bits() {
    type B = addnorm::backend::ndarray::AutodiffBackend;
    let device = addnorm::backend::ndarray::device();
    let (shape, d) = ([4, 17, 32], 32);
    let len = 4 * 17 * 32;
    let weights: Vec<_> = (0..3)
        .map(|i| tensor::<B, 2>(&formula(d * d, 10 + i), [d, d], &device))
        .collect();
    let cotangents: Vec<_> = (0..3)
        .map(|i| tensor::<B, 3>(&formula(len, 20 + i), shape, &device))
        .collect();
    let dx = |layers: &[usize]| {
        let x = tensor::<B, 3>(&formula(len, 1), shape, &device).require_grad();
        let loss = layers
            .iter()
            .map(|&i| (linear(x.clone(), weights[i].clone(), None) * cotangents[i].clone()).sum())
            .reduce(|a, b| a + b)
            .expect("a layer");
        let grads = loss.backward();
        x.grad(&grads).expect("dx")
    };
    let joint = dx(&[0, 1, 2]).into_data();
    let [g1, g2, g3] = [0, 1, 2].map(|i| dx(&[i]));
    let expected = (g1 + (g2 + g3)).into_data();
    assert_eq!(
        f32_bits(&joint),
        f32_bits(&expected),
        "the in-place sum differs from Burn's"
    );
}
