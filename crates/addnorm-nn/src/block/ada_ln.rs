//! adaLN-Zero (Peebles & Xie 2023, DiT, §3.2): the shift β, the scale γ and a residual gate α
//! of each sublayer's norm are regressed from a conditioning vector `c` (a timestep and a
//! class embedding, in DiT), by a linear map that starts at zero, so every block starts as
//! the identity.
//!
//! ```text
//! (β₁, γ₁, α₁, β₂, γ₂, α₂) = W·SiLU(c) + b          W, b zero at init
//! x ← x + α₁ ⊙ Attn(Norm(x) ⊙ (1 + γ₁) + β₁)
//! x ← x + α₂ ⊙ FFN(Norm(x) ⊙ (1 + γ₂) + β₂)
//! ```
//!
//! DiT's norms have no affine parameters of their own (`Affine::Off`, ε = 1e-6); the block
//! applies whichever norm it is configured with. The six vectors come out of one
//! `[d_cond, 6·d_model]` projection in the order above, as DiT's `adaLN_modulation` chunks
//! them.
//!
//! # Shapes
//! - conditioning `c`: `[batch, d_cond]`
//! - each of β, γ, α: `[batch, 1, d_model]`, broadcast over the sequence

use burn::config::Config;
use burn::module::{Initializer, Module};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::silu;
use burn::tensor::{Tensor, backend::Backend};

use crate::config_error::{ConfigError, ensure, or_panic};

/// Configuration of an [`AdaLnZero`] modulation.
#[derive(Config, Debug)]
pub struct AdaLnZeroConfig {
    /// The width of the conditioning vector `c`.
    pub d_cond: usize,
    /// The block's width.
    pub d_model: usize,
}

impl AdaLnZeroConfig {
    /// Checks the widths without building anything: the error `init` would panic with, or
    /// `Ok`.
    ///
    /// # Errors
    /// If a width is zero.
    pub fn check(&self) -> Result<(), ConfigError> {
        let (d_cond, d_model) = (self.d_cond, self.d_model);
        ensure(d_cond > 0 && d_model > 0, || {
            ConfigError::new(
                "AdaLnZeroConfig",
                format!(
                    "AdaLnZeroConfig widths must be positive, got d_cond {d_cond} and d_model \
                     {d_model}"
                ),
            )
        })
    }

    /// Builds the modulation with its projection at zero (the "Zero" of adaLN-Zero).
    ///
    /// # Panics
    /// If [`check`](Self::check) refuses the config, with its error's message.
    pub fn init<B: Backend>(&self, device: &B::Device) -> AdaLnZero<B> {
        or_panic(self.check());
        AdaLnZero {
            modulation: LinearConfig::new(self.d_cond, 6 * self.d_model)
                .with_initializer(Initializer::Zeros)
                .init(device),
        }
    }
}

/// The conditioning map of an adaLN-Zero block (see the [module docs](self)).
#[derive(Module, Debug)]
pub struct AdaLnZero<B: Backend> {
    /// `W: [d_cond, 6·d_model]` and `b: [6·d_model]`, zero at init (DiT's
    /// `adaLN_modulation.1`).
    pub modulation: Linear<B>,
}

/// One sublayer's modulation: `x ← x + gate ⊙ F(Norm(x) ⊙ (1 + scale) + shift)`.
#[derive(Clone, Debug)]
pub struct Modulation<B: Backend> {
    /// β, `[batch, 1, d_model]`.
    pub shift: Tensor<B, 3>,
    /// γ, `[batch, 1, d_model]` (the gain is `1 + γ`).
    pub scale: Tensor<B, 3>,
    /// α, `[batch, 1, d_model]`.
    pub gate: Tensor<B, 3>,
}

impl<B: Backend> Modulation<B> {
    /// `h ⊙ (1 + scale) + shift`.
    ///
    /// # Shapes
    /// - `h`: `[batch, seq, d_model]`; output: the same
    pub fn modulate(&self, h: Tensor<B, 3>) -> Tensor<B, 3> {
        h.clone() * self.scale.clone() + h + self.shift.clone()
    }
}

impl<B: Backend> AdaLnZero<B> {
    /// The attention's and the feed-forward network's modulations for `c`.
    ///
    /// # Shapes
    /// - input `c`: `[batch, d_cond]`
    /// - output: two [`Modulation`]s of `[batch, 1, d_model]` tensors
    pub fn forward(&self, c: Tensor<B, 2>) -> [Modulation<B>; 2] {
        let [batch, _] = c.dims();
        let six = self.modulation.forward(silu(c));
        let d_model = six.dims()[1] / 6;
        let chunk = |i: usize| {
            six.clone()
                .slice([0..batch, i * d_model..(i + 1) * d_model])
                .unsqueeze_dim::<3>(1)
        };
        [0, 3].map(|first| Modulation {
            shift: chunk(first),
            scale: chunk(first + 1),
            gate: chunk(first + 2),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_refuses_a_zero_width() {
        let error = AdaLnZeroConfig::new(0, 8).check().unwrap_err();
        assert_eq!(
            error.to_string(),
            "AdaLnZeroConfig widths must be positive, got d_cond 0 and d_model 8"
        );
        assert_eq!(error.field(), "AdaLnZeroConfig");
        assert_eq!(AdaLnZeroConfig::new(3, 8).check(), Ok(()));
    }
}
