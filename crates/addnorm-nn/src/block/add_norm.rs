//! [`AddNorm`]: one residual connection around one sublayer, with its norms placed as the
//! [`Placement`] says. This is the "Add & Norm" of the Transformer, generalized; see
//! [`Placement`] for the formulas, which [`AddNorm::forward`] follows line by line. (What is
//! added to the residual passes through dropout first.)
//!
//! With LayerScale (Touvron et al. 2021, CaiT §2.2) the branch term of each formula, what
//! the placement adds to the residual (`F(·)`, or `Norm(F(·))` for Peri and PostBranch), is
//! multiplied by a learnable per-channel gain: `branch → λ ⊙ branch`, λ `[d_model]`, every
//! entry starting at the configured value (CaiT: 0.1 up to depth 18, 1e-5 at 24, 1e-6
//! deeper). It is ReZero's gate as a vector, on any placement.
//!
//! # Shapes
//! - input `x` and `F(x)`: `[batch, seq, d_model]`; output: the same

use burn::module::{Initializer, Module, Param};
use burn::nn::{Dropout, DropoutConfig};
use burn::tensor::{Tensor, backend::Backend};

use addnorm_kernels::NormBackend;

use super::placement::Placement;
use crate::norm::{Norm, NormConfig};

/// A residual connection with its norms (see the [module docs](self)).
#[derive(Module, Debug)]
pub struct AddNorm<B: Backend> {
    /// The norm on the sublayer's input (Pre, Peri).
    pub input_norm: Option<Norm<B>>,
    /// The norm on the sublayer's output, before the addition (Peri).
    pub output_norm: Option<Norm<B>>,
    /// The norm after the addition (Post, DeepNorm).
    pub sum_norm: Option<Norm<B>>,
    /// ReZero's learnable gate `a`, `[1]`, initialized to 0.
    pub rezero_gate: Option<Param<Tensor<B, 1>>>,
    /// LayerScale's per-channel gain λ on the branch, `[d_model]`, when configured
    /// ([`AddNorm::with_layer_scale`]).
    pub layer_scale: Option<Param<Tensor<B, 1>>>,
    dropout: Dropout,
    #[module(skip)]
    placement: Placement,
    #[module(skip)]
    residual_scale: f64,
}

impl<B: Backend> AddNorm<B> {
    /// Builds the connection for `placement`, with norms from `norm` fitted to `d_model` and
    /// DeepNorm's α computed for `n_layers`.
    pub fn new(
        placement: Placement,
        norm: &NormConfig,
        d_model: usize,
        n_layers: usize,
        dropout: f64,
        device: &B::Device,
    ) -> Self {
        let make = || Some(norm.with_d_model(d_model).init(device));
        let (input_norm, output_norm, sum_norm) = match placement {
            Placement::Post | Placement::DeepNorm => (None, None, make()),
            // Parallel: the attention connection's norm; the block removes the feed-forward
            // connection's (TransformerBlockConfig::init), which reads the same one.
            Placement::Pre | Placement::Parallel => (make(), None, None),
            Placement::Peri => (make(), make(), None),
            Placement::PostBranch => (None, make(), None),
            Placement::ReZero | Placement::None => (None, None, None),
        };
        Self {
            input_norm,
            output_norm,
            sum_norm,
            rezero_gate: (placement == Placement::ReZero)
                .then(|| Initializer::Zeros.init([1], device)),
            layer_scale: None,
            dropout: DropoutConfig::new(dropout).init(),
            placement,
            residual_scale: placement.residual_scale(n_layers),
        }
    }

    /// This connection with LayerScale: a learnable `[d_model]` gain λ on the branch term,
    /// every entry `init` (see the [module docs](self)).
    ///
    /// # Panics
    /// If `init` is not finite.
    pub fn with_layer_scale(mut self, d_model: usize, init: f64, device: &B::Device) -> Self {
        assert!(
            init.is_finite(),
            "TransformerBlockConfig.layer_scale must be finite, got {init}"
        );
        self.layer_scale = Some(Initializer::Constant { value: init }.init([d_model], device));
        self
    }

    /// The placement this connection implements.
    pub fn placement(&self) -> Placement {
        self.placement
    }
}

/// Applies an optional norm.
fn maybe<B: NormBackend>(norm: &Option<Norm<B>>, x: Tensor<B, 3>) -> Tensor<B, 3> {
    match norm {
        Some(norm) => norm.forward(x),
        None => x,
    }
}

impl<B: NormBackend> AddNorm<B> {
    /// The connection's input norm applied to `x` (`x` itself when it has none).
    pub(crate) fn normalized_input(&self, x: Tensor<B, 3>) -> Tensor<B, 3> {
        maybe(&self.input_norm, x)
    }

    /// What the connection adds to the residual for the branch term `t`: LayerScale's
    /// `λ ⊙ t` (when set), then dropout.
    pub(crate) fn branch(&self, t: Tensor<B, 3>) -> Tensor<B, 3> {
        let t = match &self.layer_scale {
            Some(lambda) => t * lambda.val().unsqueeze::<3>(),
            None => t,
        };
        self.dropout.forward(t)
    }

    /// Applies `sublayer` inside the residual connection.
    ///
    /// # Shapes
    /// - input: `[batch, seq, d_model]`; `sublayer` maps that shape to itself
    /// - output: `[batch, seq, d_model]`
    pub fn forward(
        &self,
        x: Tensor<B, 3>,
        sublayer: impl FnOnce(Tensor<B, 3>) -> Tensor<B, 3>,
    ) -> Tensor<B, 3> {
        let residual = x.clone();
        let drop = |t| self.branch(t);
        match self.placement {
            Placement::Post => maybe(&self.sum_norm, residual + drop(sublayer(x))),
            // Alone, a Parallel connection is a Pre one; the block adds its two sublayers
            // side by side (TransformerBlock::forward).
            Placement::Pre | Placement::Parallel => {
                residual + drop(sublayer(maybe(&self.input_norm, x)))
            }
            Placement::Peri => {
                let f = sublayer(maybe(&self.input_norm, x));
                residual + drop(maybe(&self.output_norm, f))
            }
            Placement::PostBranch => residual + drop(maybe(&self.output_norm, sublayer(x))),
            Placement::DeepNorm => maybe(
                &self.sum_norm,
                residual * self.residual_scale + drop(sublayer(x)),
            ),
            Placement::ReZero => {
                let gate = self.rezero_gate.as_ref().expect("ReZero has a gate").val();
                residual + drop(sublayer(x)) * gate.unsqueeze::<3>()
            }
            Placement::None => residual + drop(sublayer(x)),
        }
    }
}
