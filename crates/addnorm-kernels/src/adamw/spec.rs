//! [`AdamWUpdate`]: what one AdamW step on one parameter tensor computes, its constants
//! rounded as Burn's `AdamW` rounds them.
//!
//! # Formula
//! With `t` = [`time`](AdamWUpdate::time) (1 on the first step):
//! ```text
//! c₁ = 1 − β₁ᵗ,  c₂ = 1 − β₂ᵗ                  (in f32, as Burn computes them)
//! λ·lr and 1 − λ·lr                            (in f64, then rounded to the element type)
//! ```
//!
//! # Shapes
//! None: scalars for a step over tensors of any shape.

/// One AdamW step's constants (see the [module docs](self) and [`super`] for the update).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamWUpdate {
    /// β₁, the first moment's decay (Burn's default 0.9).
    pub beta_1: f32,
    /// β₂, the second moment's decay (Burn's default 0.999).
    pub beta_2: f32,
    /// ε, added to `√v̂` (Burn's default 1e-5).
    pub epsilon: f32,
    /// λ, the decoupled weight decay, multiplied by the learning rate (Burn's default 1e-4).
    pub weight_decay: f32,
    /// The learning rate of this step.
    pub lr: f64,
    /// The number of steps taken with this one: 1 on the first.
    pub time: usize,
}

impl AdamWUpdate {
    /// `(1 − β₁ᵗ, 1 − β₂ᵗ)`, the bias corrections, in f32 (`powi`) as Burn computes them.
    pub fn bias_corrections(&self) -> (f32, f32) {
        let t = self.time as i32;
        (1f32 - self.beta_1.powi(t), 1f32 - self.beta_2.powi(t))
    }

    /// `lr·λ`, the decay rate, in f64 as Burn computes it; 0 means no decay at all.
    pub fn decay_rate(&self) -> f64 {
        self.lr * self.weight_decay as f64
    }

    /// Whether this is the first step, where the moments start from the gradient alone.
    pub fn is_first(&self) -> bool {
        self.time <= 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constants_are_rounded_as_burn_rounds_them() {
        let update = AdamWUpdate {
            beta_1: 0.9,
            beta_2: 0.999,
            epsilon: 1e-8,
            weight_decay: 0.1,
            lr: 3e-3,
            time: 2,
        };
        let (c1, c2) = update.bias_corrections();
        assert_eq!(c1, 1f32 - 0.9f32 * 0.9f32);
        assert_eq!(c2, 1f32 - 0.999f32 * 0.999f32);
        assert_eq!(update.decay_rate(), 3e-3 * (0.1f32 as f64));
        assert_ne!(update.decay_rate(), 3e-3 * 0.1);
        assert!(!update.is_first());
        assert!(AdamWUpdate { time: 1, ..update }.is_first());
    }
}
