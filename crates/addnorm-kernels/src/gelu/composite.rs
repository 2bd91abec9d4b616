//! The composite reference of GELU: Burn tensor ops on primitives, so it runs, and
//! differentiates under `Autodiff<B>`, on every backend (Burn's fusion turns the chain into
//! one kernel on its GPU backends).
//!
//! # Formula
//! `y = x · ½·(1 + erf(x/√2))`, as `((x·(1/√2)).erf() + 1)·x·½`.
//!
//! # Shapes
//! `x`, output: any shape.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;

/// Exact GELU of `x` in Burn's ops (see the [module docs](self)).
pub fn gelu<B: Backend>(x: FloatTensor<B>) -> FloatTensor<B> {
    let scaled = B::float_mul_scalar(x.clone(), core::f64::consts::FRAC_1_SQRT_2.into());
    let cdf_times_two = B::float_add_scalar(B::float_erf(scaled), 1.0.into());
    B::float_mul_scalar(B::float_mul(cdf_times_two, x), 0.5.into())
}
