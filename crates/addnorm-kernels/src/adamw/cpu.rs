//! The fused CPU AdamW step on slices: one pass that updates `θ`, `m` and `v` in place from
//! `g`, in parallel chunks, with the bits of Burn's `AdamW`.
//!
//! # Formula
//! Per element, every operation rounded to the element type in this order (Burn's):
//! ```text
//! m ← β₁·m + (1−β₁)·g              (first step: m = (1−β₁)·g)
//! v ← β₂·v + (1−β₂)·(g·g)          (first step: v = (1−β₂)·(g·g))
//! δ = (m / c₁) / (√(v / c₂) + ε)
//! θ ← θ·(1 − λ·lr) − δ·lr          (no decay term where λ·lr = 0)
//! ```
//! with the constants of [`AdamWUpdate`]. Each element is computed alone, so how a call is
//! cut into chunks never changes a bit. Burn makes each line (and each operation in it)
//! its own pass with its own output: about fifteen passes over the parameter's size. The
//! divisions and the square root stay as they are (no reciprocal is hoisted), since that
//! would change the bits.
//!
//! # Shapes
//! `param`, `grad`, `m`, `v`: any number of elements, flat and contiguous, all the same
//! length.
//!
//! # Example
//! ```
//! use addnorm_kernels::adamw::{AdamWUpdate, cpu::step};
//!
//! let update = AdamWUpdate {
//!     beta_1: 0.9, beta_2: 0.999, epsilon: 1e-8, weight_decay: 0.0, lr: 0.1, time: 1,
//! };
//! let (mut param, mut m, mut v) = ([1.0_f32], [0.0], [0.0]);
//! step(&mut param, &[2.0], &mut m, &mut v, &update);
//! // The first step moves θ by lr·sign(g), up to ε.
//! assert!((param[0] - 0.9).abs() < 1e-6);
//! ```

use crate::cpu::dispatch::vectorized;
use crate::cpu::parallel::{self, ChunksMut, in_chunks};
use crate::cpu::real::Real;

use super::spec::AdamWUpdate;

/// A task takes at least this many elements: below it, handing a chunk to another thread
/// costs more than the few nanoseconds each element takes.
const MIN_TASK_ELEMENTS: usize = 1 << 15;

/// The step's constants in the element type, rounded as Burn rounds its scalars.
#[derive(Clone, Copy)]
struct Constants<E> {
    beta_1: E,
    factor_1: E,
    beta_2: E,
    factor_2: E,
    correction_1: E,
    correction_2: E,
    epsilon: E,
    /// `1 − λ·lr`, rounded from f64.
    keep: E,
    lr: E,
}

impl<E: Real> Constants<E> {
    fn new(update: &AdamWUpdate) -> Self {
        let of = |v: f32| E::from_f64(v as f64);
        let (c1, c2) = update.bias_corrections();
        Self {
            beta_1: of(update.beta_1),
            factor_1: of(1.0 - update.beta_1),
            beta_2: of(update.beta_2),
            factor_2: of(1.0 - update.beta_2),
            correction_1: of(c1),
            correction_2: of(c2),
            epsilon: of(update.epsilon),
            keep: E::from_f64(1.0 - update.decay_rate()),
            lr: E::from_f64(update.lr),
        }
    }
}

/// One AdamW step (see the [module docs](self)): `param`, `m` and `v` updated in place
/// from `grad`. On the first step (`update.time` 1) `m` and `v` are only written, so their
/// contents on entry do not matter.
///
/// # Panics
/// If the four slices differ in length.
pub fn step<E: Real>(param: &mut [E], grad: &[E], m: &mut [E], v: &mut [E], update: &AdamWUpdate) {
    let len = param.len();
    assert!(
        grad.len() == len && m.len() == len && v.len() == len,
        "adamw step: param, grad and moment lengths"
    );
    let constants = Constants::<E>::new(update);
    let size = parallel::elementwise_chunk(len, MIN_TASK_ELEMENTS);
    let (params, ms, vs) = (
        ChunksMut::new(param, size),
        ChunksMut::new(m, size),
        ChunksMut::new(v, size),
    );
    let (first, decay) = (update.is_first(), update.decay_rate() != 0.0);
    in_chunks(&params, |i, size| {
        let chunk = (
            params.take(i),
            parallel::chunk(grad, size, i),
            ms.take(i),
            vs.take(i),
        );
        match (first, decay) {
            (true, true) => step_chunk::<E, true, true>(chunk, &constants),
            (true, false) => step_chunk::<E, true, false>(chunk, &constants),
            (false, true) => step_chunk::<E, false, true>(chunk, &constants),
            (false, false) => step_chunk::<E, false, false>(chunk, &constants),
        }
    });
}

/// `(θ, g, m, v)` chunks of one task.
type Chunk<'a, E> = (&'a mut [E], &'a [E], &'a mut [E], &'a mut [E]);

/// The step over one chunk, with the first-step and decay branches taken out of the loop
/// so that it vectorizes.
fn step_chunk<E: Real, const FIRST: bool, const DECAY: bool>(
    (param, grad, m, v): Chunk<'_, E>,
    c: &Constants<E>,
) {
    vectorized(
        #[inline(always)]
        || {
            let rows = param
                .iter_mut()
                .zip(grad)
                .zip(m.iter_mut().zip(v.iter_mut()));
            for ((theta, &g), (m, v)) in rows {
                let (m_new, v_new) = if FIRST {
                    (g * c.factor_1, g * g * c.factor_2)
                } else {
                    (
                        *m * c.beta_1 + g * c.factor_1,
                        *v * c.beta_2 + g * g * c.factor_2,
                    )
                };
                *m = m_new;
                *v = v_new;
                let delta = m_new / c.correction_1 / ((v_new / c.correction_2).sqrt() + c.epsilon);
                let decayed = if DECAY { *theta * c.keep } else { *theta };
                *theta = decayed - delta * c.lr;
            }
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::test_values::on_threads;

    fn update(time: usize, weight_decay: f32) -> AdamWUpdate {
        AdamWUpdate {
            beta_1: 0.9,
            beta_2: 0.95,
            epsilon: 1e-8,
            weight_decay,
            lr: 3e-3,
            time,
        }
    }

    /// The step written out one f32 operation at a time, the way Burn's passes compute it.
    fn reference(theta: f32, g: f32, m: f32, v: f32, u: &AdamWUpdate) -> [f32; 3] {
        let (c1, c2) = u.bias_corrections();
        let (m, v) = if u.is_first() {
            (g * (1.0 - u.beta_1), (g * g) * (1.0 - u.beta_2))
        } else {
            (
                m * u.beta_1 + g * (1.0 - u.beta_1),
                v * u.beta_2 + (g * g) * (1.0 - u.beta_2),
            )
        };
        let delta = (m / c1) / ((v / c2).sqrt() + u.epsilon);
        let rate = u.decay_rate();
        let decayed = if rate == 0.0 {
            theta
        } else {
            theta * (1.0 - rate) as f32
        };
        [decayed - delta * u.lr as f32, m, v]
    }

    fn values(len: usize, phase: f32) -> Vec<f32> {
        (0..len)
            .map(|i| ((i as f32) * 0.37 + phase).sin() * 0.5)
            .collect()
    }

    #[test]
    fn every_element_has_the_bits_of_the_step_written_out() {
        for (time, decay) in [(1, 0.0), (1, 0.1), (7, 0.0), (7, 0.1)] {
            let u = update(time, decay);
            let len = 3 * MIN_TASK_ELEMENTS + 5;
            let (theta0, g) = (values(len, 0.0), values(len, 1.0));
            let (m0, v0): (Vec<f32>, Vec<f32>) = (
                values(len, 2.0),
                values(len, 3.0).iter().map(|x| x * x).collect(),
            );
            for threads in [1, 2, 3] {
                let (mut theta, mut m, mut v) = (theta0.clone(), m0.clone(), v0.clone());
                on_threads(threads, || step(&mut theta, &g, &mut m, &mut v, &u));
                for i in 0..len {
                    let want = reference(theta0[i], g[i], m0[i], v0[i], &u);
                    let got = [theta[i], m[i], v[i]];
                    assert_eq!(got.map(f32::to_bits), want.map(f32::to_bits), "{i} {u:?}");
                }
            }
        }
    }

    #[test]
    fn zeros_and_specials_follow_ieee_as_burn_does() {
        let u = update(3, 0.1);
        let mut theta = [0.0_f32, -0.0, 1.0, f32::NAN, 1.0];
        let g = [0.0, -0.0, f32::INFINITY, 1.0, 1e-30];
        let (mut m, mut v) = ([0.0; 5], [0.0; 5]);
        step(&mut theta, &g, &mut m, &mut v, &u);
        assert!(theta[0] == 0.0 && theta[1] == 0.0, "0/ε = 0: {theta:?}");
        assert!(theta[2].is_nan(), "∞/∞");
        assert!(theta[3].is_nan());
        assert!(theta[4] < 1.0 && theta[4].is_finite());
    }

    #[test]
    fn f64_steps_widen_the_f32_constants() {
        let u = update(2, 0.1);
        let (mut theta, mut m, mut v) = ([0.5_f64], [0.1], [0.01]);
        step(&mut theta, &[0.2], &mut m, &mut v, &u);
        let (c1, c2) = u.bias_corrections();
        let m_want = 0.1 * (0.9f32 as f64) + 0.2 * ((1.0 - 0.9f32) as f64);
        assert_eq!(m[0], m_want);
        let v_want = 0.01 * (0.95f32 as f64) + 0.2 * 0.2 * ((1.0 - 0.95f32) as f64);
        assert_eq!(v[0], v_want);
        let delta = m_want / c1 as f64 / ((v_want / c2 as f64).sqrt() + 1e-8f32 as f64);
        assert_eq!(theta[0], 0.5 * (1.0 - u.decay_rate()) - delta * 3e-3);
    }
}
