//! [`KernelAutodiffBackend`]: the one bound training code needs (old name
//! `NormAutodiffBackend`, kept as a re-export of the same trait).
//!
//! Training code differentiates through the norms on an autodiff backend (`Autodiff<B>`)
//! and evaluates or updates the model on its inner backend (`valid()`, optimizers). Both
//! must have addnorm's kernels, and the inner backend also the optimizer's step
//! ([`AdamWBackend`], for [`FusedAdamW`](crate::adamw::FusedAdamW)), which spelled out reads
//! `B: AutodiffBackend + KernelBackend, B::InnerBackend: KernelBackend + AdamWBackend`. This
//! trait names that set once; a blanket impl gives it to every backend that satisfies it, so
//! `Autodiff<NdArray>`, `Autodiff<Wgpu>` and `Autodiff<Cuda>` have it with no code of yours.
//! A backend of your own adds `impl AdamWBackend for MyBackend {}` (the composite step) to
//! the seven op traits of [`KernelBackend`].
//!
//! ```
//! use addnorm_kernels::KernelAutodiffBackend;
//! use burn::tensor::{Tensor, backend::AutodiffBackend};
//!
//! /// ∂/∂x Σ x²: a generic function that needs gradients on any addnorm backend.
//! fn grad_of_sum_of_squares<B: KernelAutodiffBackend>(x: Tensor<B, 1>) -> Tensor<B::InnerBackend, 1> {
//!     let x = x.require_grad();
//!     let grads = (x.clone() * x.clone()).sum().backward();
//!     x.grad(&grads).expect("x is tracked")
//! }
//! # #[cfg(feature = "ndarray")]
//! # {
//! type B = burn::backend::Autodiff<burn::backend::NdArray>;
//! let x = Tensor::<B, 1>::from_floats([1.0, -2.0], &Default::default());
//! let g = grad_of_sum_of_squares(x);
//! assert_eq!(g.into_data().to_vec::<f32>().unwrap(), vec![2.0, -4.0]);
//! # }
//! ```
//!
//! # Shapes
//! None: this is a trait bound.

use burn::tensor::backend::AutodiffBackend;

use crate::adamw::AdamWBackend;
use crate::kernel_backend::KernelBackend;

/// An autodiff backend whose inner backend also has addnorm's kernels: the bound of
/// generic training code (see the [module docs](self)). Implemented for every backend that
/// satisfies it; also reachable under its old name, `NormAutodiffBackend`.
pub trait KernelAutodiffBackend:
    AutodiffBackend<InnerBackend: KernelBackend + AdamWBackend> + KernelBackend
{
}

impl<B> KernelAutodiffBackend for B where
    B: AutodiffBackend<InnerBackend: KernelBackend + AdamWBackend> + KernelBackend
{
}
