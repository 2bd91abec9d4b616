//! Gradient measurements of the study, and global-norm clipping.
//!
//! ```text
//! global norm     ‖g‖ = √(Σ_params Σ g²)
//! per-layer norm  ‖∇W‖_F for W ∈ {W^Q, W^K, W^V, W^O, W₁, W₂} of each block
//! clipping        g ← g · min(1, c / ‖g‖)
//! ```
//!
//! # Shapes
//! Per-layer norms come back as `N` rows of 6 values, in [`LAYER_WEIGHTS`] order.

use addnorm::nn::TransformerStack;
use burn::module::{AutodiffModule, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{ElementConversion, Tensor};

/// The names of the six weights followed in each block, in column order.
pub const LAYER_WEIGHTS: [&str; 6] = ["w_q", "w_k", "w_v", "w_o", "w_1", "w_2"];

/// Sums the squared gradient of every float parameter, on the device.
struct SquaredNorm<'a, B: AutodiffBackend> {
    grads: &'a B::Gradients,
    total: Option<Tensor<B::InnerBackend, 1>>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for SquaredNorm<'_, B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if let Some(g) = param.grad(self.grads) {
            let sq = g.square().sum();
            self.total = Some(match self.total.take() {
                Some(t) => t + sq,
                None => sq,
            });
        }
    }
}

/// The global gradient norm `√(Σ g²)` over every parameter of `model` (one device sync).
pub fn global_gradient_norm<B: AutodiffBackend, M: AutodiffModule<B>>(
    model: &M,
    grads: &B::Gradients,
) -> f64 {
    let mut visitor = SquaredNorm::<B> { grads, total: None };
    model.visit(&mut visitor);
    visitor
        .total
        .map_or(0.0, |t| t.into_scalar().elem::<f64>().sqrt())
}

/// Frobenius norms of ∇W^Q, ∇W^K, ∇W^V, ∇W^O, ∇W₁, ∇W₂ for each block (one device sync).
/// A weight that received no gradient counts as 0.
pub fn layer_gradient_norms<B: AutodiffBackend>(
    model: &TransformerStack<B>,
    grads: &B::Gradients,
) -> Vec<[f64; 6]> {
    let norm = |p: &Param<Tensor<B, 2>>| -> Tensor<B::InnerBackend, 1> {
        match p.grad(grads) {
            Some(g) => g.square().sum().sqrt(),
            None => Tensor::zeros([1], &p.val().device()),
        }
    };
    let columns: Vec<Tensor<B::InnerBackend, 1>> = model
        .blocks
        .iter()
        .flat_map(|b| {
            [
                norm(&b.attention.query.weight),
                norm(&b.attention.key.weight),
                norm(&b.attention.value.weight),
                norm(&b.attention.output.weight),
                norm(&b.feed_forward.inner.weight),
                norm(&b.feed_forward.outer.weight),
            ]
        })
        .collect();
    if columns.is_empty() {
        return vec![];
    }
    let device = columns[0].device();
    let flat: Vec<f64> = Tensor::cat(
        columns.into_iter().map(|c| c.to_device(&device)).collect(),
        0,
    )
    .into_data()
    .convert::<f64>()
    .to_vec()
    .expect("float data");
    flat.chunks(6)
        .map(|c| [c[0], c[1], c[2], c[3], c[4], c[5]])
        .collect()
}

/// Multiplies every gradient in `grads` by `scale`.
struct Scale<'a, B: AutodiffBackend> {
    grads: &'a mut GradientsParams,
    scale: f64,
    _backend: core::marker::PhantomData<B>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Scale<'_, B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if let Some(g) = self.grads.remove::<B::InnerBackend, D>(param.id) {
            self.grads.register(param.id, g * self.scale);
        }
    }
}

/// Clips the gradients to global norm `max_norm`: `g ← g · min(1, max_norm / norm)`.
/// (Burn's own `GradientClipping::Norm` clips each tensor separately.)
pub fn clip_global_norm<B: AutodiffBackend, M: AutodiffModule<B>>(
    model: &M,
    mut grads: GradientsParams,
    norm: f64,
    max_norm: f64,
) -> GradientsParams {
    if norm > max_norm && norm.is_finite() {
        let mut visitor = Scale::<B> {
            grads: &mut grads,
            scale: max_norm / norm,
            _backend: core::marker::PhantomData,
        };
        model.visit(&mut visitor);
    }
    grads
}
