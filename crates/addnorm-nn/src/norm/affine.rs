//! The learnable affine map after a norm, `y·γ + β`, and how its parameters are shaped.
//!
//! # Shapes
//! - [`Affine::Elementwise`]: `γ, β: [n]`, with `n` the product of the normalized shape
//!   (flattened, as PyTorch's `weight.flatten()`).
//! - [`Affine::Scalar`]: `γ, β: [1]`, one learnable value each (the seeds' `alpha` / `bias`).
//! - [`Affine::UnitOffset`]: `γ, β: [n]` as Elementwise, the gain applied as `1 + γ` with
//!   γ = 0 at init (Gemma's RMSNorm), so the norm starts as the plain normalization and
//!   weight decay pulls the gain toward 1, not toward 0.
//! - [`Affine::Off`]: no γ and no β.
//!
//! ```text
//! Elementwise, Scalar   y = norm(x)·γ + β
//! UnitOffset            y = norm(x)·(1 + γ) + β
//! Off                   y = norm(x)
//! ```

use burn::module::{Initializer, Param};
use burn::tensor::ops::FloatTensor;
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
    /// One γ and one β per normalized element, the gain applied as `1 + γ` with γ = 0 at
    /// initialization (Gemma's RMSNorm, whose checkpoints store this γ as `weight`).
    UnitOffset,
}

impl Affine {
    /// The length of γ and β for `n` normalized elements, or `None` when there are none.
    pub fn parameter_len(self, n: usize) -> Option<usize> {
        match self {
            Affine::Elementwise | Affine::UnitOffset => Some(n),
            Affine::Scalar => Some(1),
            Affine::Off => None,
        }
    }

    /// The gain the norm multiplies by: γ itself, or `1 + γ` for [`Affine::UnitOffset`]
    /// (one element-wise op on the `[n]` parameter; its gradient passes straight to γ).
    pub(crate) fn gain<B: Backend>(
        self,
        gamma: &Option<Param<Tensor<B, 1>>>,
    ) -> Option<FloatTensor<B>> {
        gamma.as_ref().map(|g| {
            let g = g.val();
            match self {
                Affine::UnitOffset => g.add_scalar(1.0),
                _ => g,
            }
            .into_primitive()
            .tensor()
        })
    }
}

/// A norm's γ or β: `None` when the norm has no such parameter.
pub(crate) type OptionalParam<B> = Option<Param<Tensor<B, 1>>>;

/// The learnable γ (ones) and β (zeros) a norm starts with. β exists only when `bias` is
/// set and the affine mode has parameters at all.
pub(crate) type AffineParams<B> = (OptionalParam<B>, OptionalParam<B>);

/// Initializes γ to ones (zeros for [`Affine::UnitOffset`], whose gain is `1 + γ`) and β
/// to zeros, shaped as `affine` says for `n` elements.
pub(crate) fn init_affine<B: Backend>(
    affine: Affine,
    bias: bool,
    n: usize,
    device: &B::Device,
) -> AffineParams<B> {
    let Some(len) = affine.parameter_len(n) else {
        return (None, None);
    };
    let gamma = match affine {
        Affine::UnitOffset => Initializer::Zeros.init([len], device),
        _ => Initializer::Ones.init([len], device),
    };
    let beta = bias.then(|| Initializer::Zeros.init([len], device));
    (Some(gamma), beta)
}
