//! The composite reference of one AdamW step: Burn's ops on primitives in the order and
//! with the constants of Burn's own `AdamW` (`burn-optim` 0.21.0), so it runs on every
//! backend and computes Burn's bits.
//!
//! # Formula
//! See [`super`]: `m`, `v`, then `m̂ = m/c₁`, `v̂ = v/c₂`, `δ = m̂/(√v̂ + ε)` and
//! `θ ← θ·(1 − λ·lr) − δ·lr` (the decay left out where `λ·lr` is 0), each operation its own
//! pass.
//!
//! # Shapes
//! `param`, `grad`, the moments and every output: any shape, all the same.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;

use super::spec::AdamWUpdate;

/// One AdamW step in Burn's ops: `[θ, m, v]` after the step (see the [module docs](self)).
/// `moments` is `None` on the first step.
pub fn adamw_update<B: Backend>(
    param: FloatTensor<B>,
    grad: FloatTensor<B>,
    moments: Option<[FloatTensor<B>; 2]>,
    update: AdamWUpdate,
) -> [FloatTensor<B>; 3] {
    let [m, v] = moments_after::<B>(grad, moments, &update);
    let (c1, c2) = update.bias_corrections();
    let m_hat = B::float_div_scalar(m.clone(), c1.into());
    let v_hat = B::float_div_scalar(v.clone(), c2.into());
    let denominator = B::float_add_scalar(B::float_sqrt(v_hat), update.epsilon.into());
    let delta = B::float_div(m_hat, denominator);
    let decay_rate = update.decay_rate();
    let decayed = if decay_rate == 0.0 {
        param
    } else {
        B::float_mul_scalar(param, (1.0 - decay_rate).into())
    };
    let param = B::float_sub(decayed, B::float_mul_scalar(delta, update.lr.into()));
    [param, m, v]
}

/// `[m, v]` after this step's gradient: `(1 − β)·g` and `(1 − β)·g²` on the first step,
/// `β·m + (1 − β)·g` and `β·v + (1 − β)·g²` after it, the ops issued in Burn's order (so
/// that a fusing backend sees Burn's stream).
fn moments_after<B: Backend>(
    grad: FloatTensor<B>,
    moments: Option<[FloatTensor<B>; 2]>,
    update: &AdamWUpdate,
) -> [FloatTensor<B>; 2] {
    let scaled = |t: FloatTensor<B>, by: f32| B::float_mul_scalar(t, by.into());
    let (factor_1, factor_2) = (1.0 - update.beta_1, 1.0 - update.beta_2);
    let square = |g: FloatTensor<B>| B::float_powi_scalar(g, 2.into());
    match moments {
        None => {
            let m = scaled(grad.clone(), factor_1);
            [m, scaled(square(grad), factor_2)]
        }
        Some([m, v]) => {
            let m = B::float_add(scaled(m, update.beta_1), scaled(grad.clone(), factor_1));
            let v = B::float_add(scaled(v, update.beta_2), scaled(square(grad), factor_2));
            [m, v]
        }
    }
}
