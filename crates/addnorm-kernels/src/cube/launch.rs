//! What every op's CubeCL launch shares: which dtypes the kernels take ([`supports`]) and
//! the allocation of their outputs (`empty_like`).
//!
//! # Formula
//! None: the kernels read every supported dtype widened to f32 and write it back narrowed.
//!
//! # Shapes
//! Any: an output is allocated contiguous, of the shape its launch asks for.

use burn::tensor::{DType, Shape};
use burn_cubecl::{CubeRuntime, ops::numeric::empty_device_contiguous_dtype, tensor::CubeTensor};

/// Whether the CubeCL kernels (norm and attention) take tensors of this dtype: the float
/// types they can widen to f32 without loss. f64 stays on the composite path, so it keeps its precision.
pub fn supports(dtype: DType) -> bool {
    matches!(dtype, DType::F32 | DType::F16 | DType::BF16 | DType::Flex32)
}

/// A contiguous tensor of `shape` and `dtype` on `like`'s device; its content is undefined.
pub(crate) fn empty_like<R: CubeRuntime>(
    like: &CubeTensor<R>,
    shape: Shape,
    dtype: DType,
) -> CubeTensor<R> {
    empty_device_contiguous_dtype::<R>(like.client.clone(), like.device.clone(), shape, dtype)
}
