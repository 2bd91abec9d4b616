//! [`NormBackend`]: the backend extension through which addnorm's norms compute.
//!
//! It follows Burn's backend-extension pattern: a trait over `Backend` whose methods take
//! and return float primitives. Its default methods are the [composite](crate::composite)
//! reference, so a backend opts in with an empty impl and gets correct forward and
//! backward passes from Burn's own ops. A backend with a fused kernel overrides the method.
//!
//! # Formulas
//! - [`NormBackend::norm_rows`]: `y = (x − μ) / √(σ² + ε) · γ + β` and the other variants
//!   of [`RowNormSpec`].
//! - [`NormBackend::dynamic_tanh`]: `y = γ · tanh(α·x) + β`.
//!
//! # Shapes
//! - `x`: `[rows, n]`; `gamma`, `beta`: `[n]` or `[1]`; `alpha`: `[1]`; output `[rows, n]`.
//!
//! # Using it in your own model
//! A model that holds addnorm norms bounds its backend by `NormBackend` instead of
//! `Backend`:
//!
//! ```
//! use addnorm_kernels::NormBackend;
//! use burn::prelude::*;
//!
//! fn double_then_normalize<B: NormBackend>(x: Tensor<B, 2>) -> Tensor<B, 2> {
//!     let [rows, n] = x.dims();
//!     let spec = addnorm_kernels::RowNormSpec::layer_norm(1e-5);
//!     let y = B::norm_rows((x * 2.0).into_primitive().tensor(), None, None, spec);
//!     Tensor::from_primitive(burn::tensor::TensorPrimitive::Float(y)).reshape([rows, n])
//! }
//! # #[cfg(feature = "ndarray")]
//! # {
//! let device = Default::default();
//! let x = Tensor::<burn::backend::NdArray, 2>::from_floats([[1.0, 2.0, 3.0]], &device);
//! let y = double_then_normalize(x);
//! y.into_data().assert_approx_eq::<f32>(
//!     &burn::tensor::TensorData::from([[-1.2247, 0.0, 1.2247]]),
//!     burn::tensor::Tolerance::absolute(1e-4),
//! );
//! # }
//! ```
//!
//! addnorm implements it for `NdArray`, `Wgpu` (Burn's default wgpu type, with fusion) and
//! `Autodiff<B>` for any `B: NormBackend`. For a backend of your own, add
//! `impl addnorm_kernels::NormBackend for MyBackend {}`.

use burn::tensor::{Tensor, TensorPrimitive, backend::Backend, ops::FloatTensor};

use crate::{composite, spec::RowNormSpec};

/// Wraps a float primitive into a tensor of rank `D`.
fn tensor<B: Backend, const D: usize>(primitive: FloatTensor<B>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(primitive))
}

/// The backend operations addnorm's norms are made of. See the [module docs](self).
pub trait NormBackend: Backend {
    /// Normalizes each row of `x: [rows, n]` as `spec` describes, then applies `y·γ + β`
    /// with `gamma`, `beta` of shape `[n]` or `[1]`.
    fn norm_rows(
        x: FloatTensor<Self>,
        gamma: Option<FloatTensor<Self>>,
        beta: Option<FloatTensor<Self>>,
        spec: RowNormSpec,
    ) -> FloatTensor<Self> {
        composite::norm_rows::<Self>(tensor(x), gamma.map(tensor), beta.map(tensor), &spec)
            .into_primitive()
            .tensor()
    }

    /// Dynamic Tanh on `x: [rows, n]`: `γ·tanh(α·x) + β` with `alpha: [1]`.
    fn dynamic_tanh(
        x: FloatTensor<Self>,
        alpha: FloatTensor<Self>,
        gamma: Option<FloatTensor<Self>>,
        beta: Option<FloatTensor<Self>>,
    ) -> FloatTensor<Self> {
        composite::dynamic_tanh::<Self>(
            tensor(x),
            tensor(alpha),
            gamma.map(tensor),
            beta.map(tensor),
        )
        .into_primitive()
        .tensor()
    }
}

impl<B: NormBackend, C: burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy>
    NormBackend for burn::backend::Autodiff<B, C>
{
}

#[cfg(feature = "ndarray")]
impl<E, I, Q> NormBackend for burn::backend::NdArray<E, I, Q>
where
    E: burn::backend::ndarray::FloatNdArrayElement,
    I: burn::backend::ndarray::IntNdArrayElement,
    Q: burn::backend::ndarray::QuantElement,
    burn::backend::ndarray::NdArrayTensor: From<burn::backend::ndarray::SharedArray<E>>,
    burn::backend::ndarray::NdArrayTensor: From<burn::backend::ndarray::SharedArray<I>>,
{
}

#[cfg(feature = "wgpu")]
impl<F, I, BT> NormBackend for burn::backend::Wgpu<F, I, BT>
where
    F: burn::backend::wgpu::FloatElement,
    I: burn::backend::wgpu::IntElement,
    BT: burn::backend::wgpu::BoolElement,
{
}
