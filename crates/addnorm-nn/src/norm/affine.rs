//! The learnable affine map after a norm, `y·γ + β`, and how its parameters are shaped.
//!
//! # Shapes
//! - [`Affine::Elementwise`]: `γ, β: [n]`, with `n` the product of the normalized shape
//!   (flattened, as PyTorch's `weight.flatten()`).
//! - [`Affine::Scalar`]: `γ, β: [1]`, one learnable value each (the seeds' `alpha` / `bias`).
//! - [`Affine::Off`]: no γ and no β.

use burn::module::{Initializer, Param};
use burn::tensor::{Tensor, backend::Backend};
use serde::{Deserialize, Serialize};

/// How many learnable scale (γ) and shift (β) values a norm has.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Affine {
    /// One γ and one β per normalized element (PyTorch's `elementwise_affine=True`).
    #[default]
    Elementwise,
    /// A single learnable γ and a single β shared by every element.
    Scalar,
    /// No learnable parameters: `y = norm(x)` (PyTorch's `elementwise_affine=False`).
    Off,
}

impl Affine {
    /// The length of γ and β for `n` normalized elements, or `None` when there are none.
    pub fn parameter_len(self, n: usize) -> Option<usize> {
        match self {
            Affine::Elementwise => Some(n),
            Affine::Scalar => Some(1),
            Affine::Off => None,
        }
    }
}

/// The learnable γ (ones) and β (zeros) a norm starts with. β exists only when `bias` is
/// set and the affine mode has parameters at all.
pub(crate) type AffineParams<B> = (Option<Param<Tensor<B, 1>>>, Option<Param<Tensor<B, 1>>>);

/// Initializes γ to ones and β to zeros, shaped as `affine` says for `n` elements.
pub(crate) fn init_affine<B: Backend>(
    affine: Affine,
    bias: bool,
    n: usize,
    device: &B::Device,
) -> AffineParams<B> {
    let Some(len) = affine.parameter_len(n) else {
        return (None, None);
    };
    let gamma = Initializer::Ones.init([len], device);
    let beta = bias.then(|| Initializer::Zeros.init([len], device));
    (Some(gamma), beta)
}
