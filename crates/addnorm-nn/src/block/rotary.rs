//! Rotary position embeddings (RoPE; Su et al. 2021, RoFormer), in the half-split layout of
//! GPT-NeoX and of Hugging Face's Llama, Gemma and OLMo models: [`RotaryConfig`], and
//! `Rotation`, its angle tables, which the attention applies to its queries and keys.
//!
//! For the token at position t and one head's features split into halves
//! `x = (x₁, x₂)`, each `d_head / 2` wide:
//!
//! ```text
//! ω_i = θ^(−2i / d_head)                   i = 0 … d_head/2 − 1   (θ: the base, 10 000)
//! RoPE(x)_t = (x₁ ⊙ cos(t·ω) − x₂ ⊙ sin(t·ω),  x₂ ⊙ cos(t·ω) + x₁ ⊙ sin(t·ω))
//! ```
//!
//! so that a query at position t and a key at position s meet through `t − s` alone. The
//! original paper rotates interleaved pairs `(x_{2i}, x_{2i+1})` instead; Hugging Face's
//! checkpoints of these models store W^Q and W^K for the halves, which is what this layout
//! reads. The angles are computed in f64 on the host and rounded once to the backend's float
//! type. Positions count from 0 along the sequence.
//!
//! # Shapes
//! - `x`: `[batch, seq, heads · d_head]`, heads in place (head h in columns
//!   `h·d_head..(h+1)·d_head`); output: the same
//! - the angle tables: `[seq, d_head / 2]`

use burn::config::Config;
use burn::tensor::{Tensor, TensorData, backend::Backend};

use crate::config_error::{ConfigError, ensure};

/// Configuration of the rotary position embedding (see the [module docs](self)).
#[derive(Config, Debug, PartialEq)]
pub struct RotaryConfig {
    /// The base θ of the frequencies `ω_i = θ^(−2i/d_head)`. Llama 2, Gemma and Gemma 2 use
    /// 10 000; Llama 3 and OLMo 2 use 500 000. Must be above 1. Default: 10000.0
    #[config(default = 10000.0)]
    pub theta: f64,
}

impl RotaryConfig {
    /// Refuses a base that is not above 1 and finite, and an odd `d_head` (the halves).
    pub(crate) fn validate(&self, d_head: usize) -> Result<(), ConfigError> {
        let theta = self.theta;
        ensure(theta.is_finite() && theta > 1.0, || {
            ConfigError::of_field(
                "RotaryConfig.theta",
                format_args!("must be finite and above 1, got {theta}"),
            )
        })?;
        ensure(d_head.is_multiple_of(2), || {
            ConfigError::new(
                "RotaryConfig",
                format!(
                    "rotary position embeddings rotate the two halves of each head: d_head \
                     must be even, got {d_head}"
                ),
            )
        })
    }

    /// The angle tables for sequences of `seq` tokens and heads of `d_head` features, on
    /// `device`: built once per attention call and applied to both the queries and the keys.
    pub(crate) fn rotation<B: Backend>(
        &self,
        seq: usize,
        d_head: usize,
        device: &B::Device,
    ) -> Rotation<B> {
        let half = d_head / 2;
        let omegas: Vec<f64> = (0..half)
            .map(|i| self.theta.powf(-2.0 * i as f64 / d_head as f64))
            .collect();
        let table = |f: fn(f64) -> f64| {
            let values: Vec<f64> = (0..seq)
                .flat_map(|t| omegas.iter().map(move |&omega| f(t as f64 * omega)))
                .collect();
            let data = TensorData::new(values, [1, seq, 1, half]).convert::<B::FloatElem>();
            Tensor::from_data(data, device)
        };
        Rotation {
            cos: table(f64::cos),
            sin: table(f64::sin),
        }
    }
}

/// `cos(t·ω_i)` and `sin(t·ω_i)` for one sequence length and head width, each
/// `[1, seq, 1, d_head / 2]` (see the [module docs](self)).
pub(crate) struct Rotation<B: Backend> {
    cos: Tensor<B, 4>,
    sin: Tensor<B, 4>,
}

impl<B: Backend> Rotation<B> {
    /// `x` with each of its `heads` heads' features rotated by their position.
    pub(crate) fn apply(&self, x: Tensor<B, 3>, heads: usize) -> Tensor<B, 3> {
        let [batch, seq, width] = x.dims();
        let d_head = width / heads;
        let half = d_head / 2;
        let x = x.reshape([batch, seq, heads, d_head]);
        let x1 = x.clone().slice([0..batch, 0..seq, 0..heads, 0..half]);
        let x2 = x.slice([0..batch, 0..seq, 0..heads, half..d_head]);
        let (cos, sin) = (self.cos.clone(), self.sin.clone());
        let first = x1.clone() * cos.clone() - x2.clone() * sin.clone();
        let second = x2 * cos + x1 * sin;
        Tensor::cat(vec![first, second], 3).reshape([batch, seq, width])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::NdArray;

    type B = NdArray<f32>;

    #[test]
    fn position_zero_is_the_identity_and_norms_are_kept() {
        let device = Default::default();
        let x = Tensor::<B, 3>::from_floats(
            [[
                [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
                [0.5, -1.0, 2.0, 0.0, 1.5, 3.0, -2.0, 1.0],
            ]],
            &device,
        );
        let y = RotaryConfig::new()
            .rotation::<B>(2, 4, &device)
            .apply(x.clone(), 2);
        let (x, y) = (
            x.into_data().to_vec::<f32>().unwrap(),
            y.into_data().to_vec::<f32>().unwrap(),
        );
        assert_eq!(&x[..8], &y[..8], "t = 0 rotates by no angle");
        // At t = 1, head 0's pair (x₀, x₂) turns by ω₀ = 1 rad, (x₁, x₃) by ω₁ = 10⁻² rad.
        let (c, s) = (1f32.cos(), 1f32.sin());
        assert!((y[8] - (0.5 * c - 2.0 * s)).abs() < 1e-6);
        assert!((y[10] - (2.0 * c + 0.5 * s)).abs() < 1e-6);
        for head in [8..12, 12..16] {
            let norm = |v: &[f32]| v.iter().map(|a| a * a).sum::<f32>();
            assert!((norm(&x[head.clone()]) - norm(&y[head])).abs() < 1e-5);
        }
    }

    #[test]
    fn odd_heads_and_a_base_of_one_are_refused() {
        let odd = RotaryConfig::new().validate(5).unwrap_err();
        assert_eq!(
            odd.message(),
            "rotary position embeddings rotate the two halves of each head: d_head must be \
             even, got 5"
        );
        let flat = RotaryConfig::new().with_theta(1.0).validate(4).unwrap_err();
        assert_eq!(
            flat.to_string(),
            "RotaryConfig.theta must be finite and above 1, got 1"
        );
        assert_eq!(flat.field(), "RotaryConfig.theta");
        assert_eq!(RotaryConfig::new().validate(4), Ok(()));
    }
}
