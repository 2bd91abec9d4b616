//! [`AddNorm`]: one residual connection around one sublayer, with its norms placed as the
//! [`Placement`] says. This is the "Add & Norm" of the Transformer, generalized; see
//! [`Placement`] for the formulas, which [`AddNorm::forward`] follows line by line. (What is
//! added to the residual passes through dropout first.)
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
            Placement::Pre => (make(), None, None),
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
            dropout: DropoutConfig::new(dropout).init(),
            placement,
            residual_scale: placement.residual_scale(n_layers),
        }
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
        let drop = |t| self.dropout.forward(t);
        match self.placement {
            Placement::Post => maybe(&self.sum_norm, residual + drop(sublayer(x))),
            Placement::Pre => residual + drop(sublayer(maybe(&self.input_norm, x))),
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
