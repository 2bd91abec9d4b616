//! The projections of the block: `y = x·W + b` with W drawn from a configurable initializer
//! (Xavier-normal by default) and b = 0, applied with [`forward`]
//! (`addnorm_kernels::linear`: one GEMM per call over all rows, fused where the backend
//! has a kernel), or with [`forward_with_residual`] onto a residual (`r + x·W + b` in the
//! same pass).
//!
//! # Shapes
//! - `W: [d_input, d_output]`, `b: [d_output]`; input `[..., d_input]` → `[..., d_output]`

use burn::module::{Initializer, Param};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::Tensor;
use burn::tensor::backend::Backend;

pub(crate) use addnorm_kernels::linear::forward;

/// `layer` applied to `x`, and added to `residual` in the same pass when there is one
/// (`addnorm_kernels::linear::forward_onto`): a sublayer's output projection.
pub(crate) fn forward_with_residual<B: addnorm_kernels::LinearBackend>(
    layer: &Linear<B>,
    x: Tensor<B, 3>,
    residual: Option<Tensor<B, 3>>,
) -> Tensor<B, 3> {
    match residual {
        Some(r) => addnorm_kernels::linear::forward_onto(layer, x, r),
        None => forward(layer, x),
    }
}

/// The default weight initializer of every projection: Xavier-normal with gain 1,
/// `W ~ N(0, 2 / (d_in + d_out))`, the setting of Xiong et al.'s analysis.
pub fn xavier_normal(gain: f64) -> Initializer {
    Initializer::XavierNormal { gain }
}

/// A `Linear` whose weight comes from `initializer` and whose bias, if `bias`, starts at
/// zero.
pub(crate) fn projection<B: Backend>(
    [d_input, d_output]: [usize; 2],
    initializer: &Initializer,
    bias: bool,
    device: &B::Device,
) -> Linear<B> {
    let mut linear = LinearConfig::new(d_input, d_output)
        .with_initializer(initializer.clone())
        .init(device);
    linear.bias = bias.then(|| Initializer::Zeros.init([d_output], device));
    linear
}

/// Replaces a projection's weight by zeros (Xiong et al.'s W^Q = W^K = 0 setting).
pub(crate) fn zero_weight<B: Backend>(linear: &mut Linear<B>, device: &B::Device) {
    let dims = linear.weight.dims();
    linear.weight = Param::from_tensor(burn::tensor::Tensor::zeros(dims, device));
}
