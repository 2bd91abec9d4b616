//! The learning-rate schedule: linear warm-up, then cosine decay.
//!
//! ```text
//! lr(s) = peak · (s + 1) / W                                   s < W
//! lr(s) = floor + (peak − floor) · ½(1 + cos(π · (s − W)/(S − W)))   W ≤ s < S
//! ```
//! with `W` warm-up steps, `S` total steps and `floor = peak · final_fraction`.

use serde::{Deserialize, Serialize};

/// Warm-up then cosine decay (see the [module docs](self)).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct WarmupCosine {
    /// The peak learning rate.
    pub peak: f64,
    /// Warm-up steps W (0 starts at the peak).
    pub warmup: usize,
    /// Total steps S.
    pub total: usize,
    /// The final learning rate as a fraction of the peak.
    pub final_fraction: f64,
}

impl WarmupCosine {
    /// The learning rate at step `step` (0-based).
    pub fn at(&self, step: usize) -> f64 {
        if step < self.warmup {
            return self.peak * (step + 1) as f64 / self.warmup as f64;
        }
        let span = self.total.saturating_sub(self.warmup).max(1) as f64;
        let progress = ((step - self.warmup) as f64 / span).min(1.0);
        let floor = self.peak * self.final_fraction;
        floor + (self.peak - floor) * 0.5 * (1.0 + (core::f64::consts::PI * progress).cos())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warms_up_linearly_then_decays_to_the_floor() {
        let s = WarmupCosine {
            peak: 1e-2,
            warmup: 10,
            total: 110,
            final_fraction: 0.1,
        };
        assert!((s.at(0) - 1e-3).abs() < 1e-12);
        assert!((s.at(9) - 1e-2).abs() < 1e-12);
        assert!((s.at(10) - 1e-2).abs() < 1e-12);
        assert!((s.at(60) - 5.5e-3).abs() < 1e-12);
        assert!((s.at(110) - 1e-3).abs() < 1e-12);
        let no_warmup = WarmupCosine { warmup: 0, ..s };
        assert!((no_warmup.at(0) - 1e-2).abs() < 1e-12);
    }
}
