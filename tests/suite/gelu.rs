//! Exact GELU (`addnorm_kernels::gelu`): values and gradients against PyTorch's
//! `torch.nn.functional.gelu` evaluated in float64 (`tests/fixtures/make_gelu_fixtures.py`),
//! the fused path against the composite (under `ForceComposite`) at ranks 1 to 4 and
//! across the chunked split over threads, f64 central differences on the fused CPU kernels,
//! and the fused-call counters.

use addnorm_kernels::composite::ForceComposite;
use addnorm_kernels::fused::fused_calls;
use addnorm_kernels::gelu::{GeluBackend, gelu};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Tensor, TensorPrimitive};
use serde::Deserialize;

use crate::common::{assert_close, in_own_process, tensor, values};
use crate::on_every_backend;

/// PyTorch's GELU and its gradient at float32-rounded points (see the script).
#[derive(Deserialize)]
struct Fixture {
    x: Vec<f64>,
    y: Vec<f64>,
    dx: Vec<f64>,
}

fn fixture() -> Fixture {
    serde_json::from_str(include_str!("../fixtures/gelu.json")).expect("gelu.json")
}

/// The fixture's upstream gradient, `dy = 1 + x/100`.
fn upstream(x: &[f64]) -> Vec<f64> {
    x.iter().map(|x| 1.0 + x / 100.0).collect()
}

/// `(y, dx)` of `loss = Σ gelu(x)·dy` for `x` of `shape`.
fn pass<B: AutodiffBackend + addnorm::NormBackend, const D: usize>(
    x: &[f64],
    dy: &[f64],
    shape: [usize; D],
    device: &B::Device,
) -> (Vec<f64>, Vec<f64>) {
    let x = tensor::<B, D>(x, shape, device).require_grad();
    let y = gelu(x.clone());
    let grads = (y.clone() * tensor::<B, D>(dy, shape, device))
        .sum()
        .backward();
    (values(y), values(x.grad(&grads).expect("dx")))
}

/// Asserts `|actual − expected| ≤ tolerance·(1 + |x|)` element by element: GELU's f32
/// error is an error in Φ, which `y = x·Φ(x)` scales by |x|.
fn assert_scaled(what: &str, x: &[f64], actual: &[f64], expected: &[f64], tolerance: f64) {
    for ((&x, &a), &e) in x.iter().zip(actual).zip(expected) {
        assert!(
            (a - e).abs() <= tolerance * (1.0 + x.abs()),
            "{what} at x = {x:e}: {a:e} against PyTorch's {e:e}"
        );
    }
}

on_every_backend! {
    /// Every fixture point, in one call: y within 2.5e-7·(1 + |x|) of PyTorch's float64
    /// values on the fused CPU kernel (Φ within 1.5e-7, plus rounding), and the gradient
    /// likewise; 1e-6 on a backend's composite path (its own `erf`).
    fn matches_pytorch<B>(device) {
        let f = fixture();
        let n = f.x.len();
        let dy = upstream(&f.x);
        let before = fused_calls();
        let (y, dx) = pass::<B, 1>(&f.x, &dy, [n], device);
        let fused = fused_calls().forward > before.forward;
        let tolerance = if fused { 2.5e-7 } else { 1e-6 };
        assert_scaled("y", &f.x, &y, &f.y, tolerance);
        assert_scaled("dx", &f.x, &dx, &f.dx, 2.0 * tolerance);
    }

    /// The fused path and the composite agree at ranks 1 to 4, and on a call large enough
    /// to be split into chunks over threads (3 × 2¹⁵ + 11 elements).
    fn fused_matches_the_composite<B>(device) {
        fn check<B: AutodiffBackend + addnorm::NormBackend, const D: usize>(
            shape: [usize; D],
            device: &B::Device,
        ) {
            let len: usize = shape.iter().product();
            let x: Vec<f64> = (0..len).map(|i| ((i as f64) * 0.37).sin() * 5.0).collect();
            let dy: Vec<f64> = (0..len).map(|i| ((i as f64) * 0.11).cos()).collect();
            let (y, dx) = pass::<B, D>(&x, &dy, shape, device);
            let (y_ref, dx_ref) = {
                let _composite = ForceComposite::new();
                pass::<B, D>(&x, &dy, shape, device)
            };
            assert_close(&format!("{shape:?} y"), &y, &y_ref, 2e-6);
            assert_close(&format!("{shape:?} dx"), &dx, &dx_ref, 2e-6);
        }
        check::<B, 1>([7], device);
        check::<B, 2>([17, 128], device);
        check::<B, 3>([4, 17, 64], device);
        check::<B, 4>([2, 3, 5, 8], device);
        check::<B, 1>([3 * (1 << 15) + 11], device);
    }
}

/// On `Autodiff<NdArray>` one call is one fused forward and one fused backward, and
/// `ForceComposite` turns both off.
#[cfg(feature = "ndarray")]
#[test]
fn the_fused_path_is_counted_and_force_composite_turns_it_off() {
    type B = addnorm::backend::ndarray::AutodiffBackend;
    let device = addnorm::backend::ndarray::device();
    let x = [-1.0, 0.5, 2.0];
    let before = fused_calls();
    pass::<B, 1>(&x, &[1.0; 3], [3], &device);
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
        pass::<B, 1>(&x, &[1.0; 3], [3], &device);
    }
    assert_eq!(fused_calls(), after, "ForceComposite ran a fused kernel");
    // Without autodiff the inner backend's fused forward runs alone.
    let y = gelu(Tensor::<addnorm::backend::ndarray::Backend, 1>::from_floats([1.0], &device));
    assert_close("y(1)", &values(y), &[0.841_344_746_068_542_9], 1e-7);
}

/// Under `Autodiff<NdArray>` the node keeps the slope its forward wrote and multiplies
/// the upstream gradient by it; its dx has the bits of the backward from `x`
/// (`GeluBackend::fused_gelu_backward` on the inner backend), which it replaced.
#[cfg(feature = "ndarray")]
#[test]
fn the_backward_from_the_slope_has_the_bits_of_the_backward_from_x() {
    type Inner = addnorm::backend::ndarray::Backend;
    type B = addnorm::backend::ndarray::AutodiffBackend;
    let device = addnorm::backend::ndarray::device();
    let x: Vec<f64> = (-600..600).map(|i| f64::from(i) * 0.0173).collect();
    let dy: Vec<f64> = x.iter().map(|x| (x * 0.37).cos()).collect();
    let n = x.len();
    let (_, dx) = pass::<B, 1>(&x, &dy, [n], &device);
    let primitive = |v: &[f64]| {
        tensor::<Inner, 1>(v, [n], &device)
            .into_primitive()
            .tensor()
    };
    let from_x = <Inner as GeluBackend>::fused_gelu_backward(&primitive(&x), primitive(&dy));
    let from_x = values(Tensor::<Inner, 1>::from_primitive(TensorPrimitive::Float(
        from_x,
    )));
    let bits = |v: &[f64]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&dx), bits(&from_x));
}

/// dx of `loss = Σ gelu(x)·dy` against central differences, in f64 on the fused CPU
/// kernels (asserted), at points on both sides of 0 and far in both tails.
#[cfg(feature = "ndarray")]
#[test]
fn gradients_match_finite_differences_in_f64() {
    in_own_process("gelu::gradients_match_finite_differences_in_f64", || {
        type F64 = burn::backend::Autodiff<burn::backend::NdArray<f64>>;
        let device = Default::default();
        let x = [-9.0, -3.5, -1.06, -0.3, 0.0, 1e-3, 0.7, 1.07, 2.5, 8.0];
        let dy = upstream(&x);
        let before = fused_calls();
        let (_, analytic) = pass::<F64, 1>(&x, &dy, [x.len()], &device);
        assert_eq!(
            fused_calls().backward,
            before.backward + 1,
            "not the fused path"
        );
        let loss = |x: &[f64]| {
            let y = gelu(tensor::<F64, 1>(x, [x.len()], &device));
            values((y * tensor::<F64, 1>(&dy, [x.len()], &device)).sum())[0]
        };
        let h = 1e-6;
        let numeric: Vec<f64> = (0..x.len())
            .map(|i| {
                let at = |d: f64| {
                    let mut p = x.to_vec();
                    p[i] += d;
                    loss(&p)
                };
                (at(h) - at(-h)) / (2.0 * h)
            })
            .collect();
        assert_close("dx", &analytic, &numeric, 1e-8);
    });
}
