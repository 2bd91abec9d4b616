//! [`KernelBackend`]: a backend with all of addnorm's kernels, the bound model code uses.
//!
//! Each op has its own backend extension, in its folder and built the same way (a composite
//! default, a `fused_*` override per backend returning `Option`, one `Autodiff` node):
//! [`RowNormBackend`] (LayerNorm, RMSNorm, DyT), [`AttentionBackend`], [`LinearBackend`],
//! [`GeluBackend`], [`CrossEntropyBackend`], [`GroupNormBackend`] and
//! [`EmbeddingBackend`]. `KernelBackend` unites these seven op traits: a blanket impl gives
//! it to every backend that has the seven, so `NdArray`, every CubeCL backend (`Wgpu`,
//! `Cuda`, with or without Burn's fusion) and `Autodiff<B>` of any of them have it with no
//! code of yours.
//!
//! # Why this name
//! It says what the trait is: the set of addnorm's kernels a backend offers, each fused
//! where the backend has a kernel for it and composite otherwise (so not `FusedBackend`:
//! every backend has it, fused or not), and it names no single op. Its old name,
//! `NormBackend` (`addnorm_kernels::NormBackend`, `addnorm::NormBackend`), is kept as a
//! re-export of this same trait, so `B: NormBackend` bounds compile unchanged. Stable Rust
//! has no trait aliases; a renamed re-export is one trait under two names, so the two
//! bounds are interchangeable everywhere.
//!
//! The methods stay on the op traits: call them as `B::norm_rows(..)` on a
//! `B: KernelBackend`, or through the op trait, `<B as RowNormBackend>::norm_rows(..)`.
//!
//! # A backend of your own
//! Implement the seven op traits (all seven empty for the composite paths):
//!
//! ```ignore
//! impl addnorm_kernels::RowNormBackend for MyBackend {}
//! impl addnorm_kernels::AttentionBackend for MyBackend {}
//! impl addnorm_kernels::LinearBackend for MyBackend {}
//! impl addnorm_kernels::GeluBackend for MyBackend {}
//! impl addnorm_kernels::CrossEntropyBackend for MyBackend {}
//! impl addnorm_kernels::GroupNormBackend for MyBackend {}
//! impl addnorm_kernels::EmbeddingBackend for MyBackend {}
//! // MyBackend: KernelBackend now, through the blanket impl.
//! // For training (KernelAutodiffBackend, on Autodiff<MyBackend>), the optimizer step too:
//! impl addnorm_kernels::AdamWBackend for MyBackend {}
//! ```
//!
//! # Example
//! ```
//! use addnorm_kernels::KernelBackend;
//! use addnorm_kernels::gelu::gelu;
//! use burn::prelude::*;
//!
//! /// GELU then LayerNorm: one bound for both ops.
//! fn gelu_then_normalize<B: KernelBackend>(x: Tensor<B, 2>) -> Tensor<B, 2> {
//!     let spec = addnorm_kernels::RowNormSpec::layer_norm(1e-5);
//!     let y = B::norm_rows(gelu(x).into_primitive().tensor(), None, None, spec);
//!     Tensor::from_primitive(burn::tensor::TensorPrimitive::Float(y))
//! }
//! # #[cfg(feature = "ndarray")]
//! # {
//! let x = Tensor::<burn::backend::NdArray, 2>::from_floats([[0.0, 5.0]], &Default::default());
//! let y = gelu_then_normalize(x);
//! y.into_data().assert_approx_eq::<f32>(
//!     &burn::tensor::TensorData::from([[-1.0, 1.0]]),
//!     burn::tensor::Tolerance::absolute(1e-3),
//! );
//! # }
//! ```
//!
//! # Shapes
//! None: this is a trait bound; each op's module states its shapes.

use crate::attention::AttentionBackend;
use crate::cross_entropy::CrossEntropyBackend;
use crate::embedding::EmbeddingBackend;
use crate::gelu::GeluBackend;
use crate::group_norm::GroupNormBackend;
use crate::linear::LinearBackend;
use crate::norm::RowNormBackend;

/// A backend with all of addnorm's kernels: norms, attention, linear layers, GELU, the
/// masked cross-entropy and GroupNorm (see the [module docs](self)). Implemented for every
/// backend that has the seven op traits; also reachable under its old name, `NormBackend`.
pub trait KernelBackend:
    RowNormBackend
    + AttentionBackend
    + LinearBackend
    + GeluBackend
    + CrossEntropyBackend
    + GroupNormBackend
    + EmbeddingBackend
{
}

impl<B> KernelBackend for B where
    B: RowNormBackend
        + AttentionBackend
        + LinearBackend
        + GeluBackend
        + CrossEntropyBackend
        + GroupNormBackend
        + EmbeddingBackend
{
}
