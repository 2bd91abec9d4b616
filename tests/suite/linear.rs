//! Linear layers as one GEMM per call (`addnorm_kernels::linear`): the fused path against
//! Burn's own `linear` (under `ForceComposite`) for values and the gradients of x, W and
//! b, at ranks 2 to 4, with and without a bias, on a transposed view, and across the
//! row split over threads; f64 central differences on the fused CPU kernels; and the
//! fused-call counters.

use addnorm_kernels::composite::ForceComposite;
use addnorm_kernels::fused::fused_calls;
use addnorm_kernels::linear::linear;
use burn::tensor::Tensor;
use burn::tensor::backend::AutodiffBackend;

use crate::common::{assert_close, in_own_process, tensor, values};
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
