//! The composite reference path: each norm written with Burn tensor ops, so it runs (and
//! differentiates, under `Autodiff<B>`) on every backend.
//!
//! # Formulas
//! See [`super::spec`]. The centred statistics are computed in two passes around a per-row
//! pivot (the row's first element):
//!
//! ```text
//! s_j = x_j − x_0          (exact for nearby floats: no cancellation of the large offset)
//! μ_s = Σ s_j / k          c_j = s_j − μ_s          σ² = Σ c_j² / d
//! ```
//!
//! so a row with mean 1e4 and standard deviation 1e-2 keeps its accuracy in f32, where the
//! one-pass `E[x²] − E[x]²` of one seed loses every digit. DyT is `γ·tanh(α·x) + β`.
//!
//! # Shapes
//! - `x`: `[rows, n]`
//! - `gamma`, `beta`: `[n]` or `[1]`
//! - `alpha` (DyT): `[1]`
//! - output: `[rows, n]`
//!
//! Half-precision inputs (f16, bf16) are widened to f32 for the whole computation and
//! narrowed back at the end; f32 and f64 stay as they are.
//!
//! # Forcing this path
//! [`RowNormBackend::norm_rows`](super::RowNormBackend::norm_rows) takes a backend's fused
//! kernel when it has one; a [`ForceComposite`](crate::composite::ForceComposite) guard
//! sends its calls here instead.

use burn::tensor::{DType, Tensor, backend::Backend};

use super::spec::{Centering, EpsilonPlacement, RowNormSpec};

/// Added under the square root of `σ` when ε is added to the standard deviation, so that a
/// constant row (σ² = 0) has a finite derivative `∂σ/∂σ² = 1 / (2√(σ² + δ))` instead of
/// `0 · ∞ = NaN`. At 1e-30 it is below the resolution of any variance that matters.
pub const STD_FLOOR: f64 = 1e-30;

/// Whether the statistics of a tensor of this dtype are computed in f32.
pub fn widens_to_f32(dtype: DType) -> bool {
    matches!(dtype, DType::F16 | DType::BF16)
}

/// Runs `f` on `tensors` widened to f32 when `dtype` is a half type, and narrows the result
/// back to `dtype`.
fn in_statistics_precision<B: Backend>(
    dtype: DType,
    x: Tensor<B, 2>,
    params: [Option<Tensor<B, 1>>; 3],
    f: impl FnOnce(Tensor<B, 2>, [Option<Tensor<B, 1>>; 3]) -> Tensor<B, 2>,
) -> Tensor<B, 2> {
    if widens_to_f32(dtype) {
        let params = params.map(|p| p.map(|p| p.cast(DType::F32)));
        f(x.cast(DType::F32), params).cast(dtype)
    } else {
        f(x, params)
    }
}

/// Applies `y·γ + β` with γ, β of shape `[n]` or `[1]` broadcast over `[rows, n]`.
fn affine<B: Backend>(
    y: Tensor<B, 2>,
    gamma: Option<Tensor<B, 1>>,
    beta: Option<Tensor<B, 1>>,
) -> Tensor<B, 2> {
    let y = match gamma {
        Some(gamma) => y * gamma.unsqueeze::<2>(),
        None => y,
    };
    match beta {
        Some(beta) => y + beta.unsqueeze::<2>(),
        None => y,
    }
}

/// Normalizes each row of `x: [rows, n]` as `spec` says, then applies `y·γ + β`.
///
/// This is the reference every fused kernel is tested against, and the path every backend
/// without a fused kernel takes.
pub fn norm_rows<B: Backend>(
    x: Tensor<B, 2>,
    gamma: Option<Tensor<B, 1>>,
    beta: Option<Tensor<B, 1>>,
    spec: &RowNormSpec,
) -> Tensor<B, 2> {
    let [rows, n] = x.dims();
    if rows == 0 || n == 0 {
        return x;
    }
    let k = spec.statistics_width(n);
    let divisor = spec.variance_divisor(k) as f64;
    in_statistics_precision(x.dtype(), x, [gamma, beta, None], |x, [gamma, beta, _]| {
        let statistics = |t: Tensor<B, 2>| if k < n { t.narrow(1, 0, k) } else { t };
        let (numerator, second_moment) = match spec.centering {
            Centering::MeanRemoved => {
                // The pivot is constant as far as the result is concerned (y does not depend
                // on it), so it carries no gradient.
                let pivot = x.clone().narrow(1, 0, 1).detach();
                let shifted = x - pivot;
                let mean = statistics(shifted.clone()).mean_dim(1);
                let centered = shifted - mean;
                let sum_sq = statistics(centered.clone()).square().sum_dim(1);
                (centered, sum_sq / divisor)
            }
            Centering::RootMeanSquare => {
                let mean_sq = statistics(x.clone()).square().mean_dim(1);
                (x, mean_sq)
            }
        };
        let denominator = match spec.epsilon_placement {
            EpsilonPlacement::InsideSqrt => (second_moment + spec.epsilon).sqrt(),
            EpsilonPlacement::AddedToStd => (second_moment + STD_FLOOR).sqrt() + spec.epsilon,
        };
        affine(numerator / denominator, gamma, beta)
    })
}

/// Dynamic Tanh on `x: [rows, n]`: `γ·tanh(α·x) + β`, with `alpha: [1]`.
pub fn dynamic_tanh<B: Backend>(
    x: Tensor<B, 2>,
    alpha: Tensor<B, 1>,
    gamma: Option<Tensor<B, 1>>,
    beta: Option<Tensor<B, 1>>,
) -> Tensor<B, 2> {
    let [rows, n] = x.dims();
    if rows == 0 || n == 0 {
        return x;
    }
    in_statistics_precision(
        x.dtype(),
        x,
        [gamma, beta, Some(alpha)],
        |x, [gamma, beta, alpha]| {
            let alpha = alpha.expect("alpha is always passed");
            affine((x * alpha.unsqueeze::<2>()).tanh(), gamma, beta)
        },
    )
}
