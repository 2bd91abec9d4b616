//! [`AddNorm`]: one residual connection around one sublayer, with its norms placed as the
//! [`Placement`] says. This is the "Add & Norm" of the Transformer, generalized; see
//! [`Placement`] for the formulas. [`AddNorm::forward`] computes one branch term,
//! `out(F(in(x)))` with each norm where the connection has one, and joins it to the residual
//! as the placement's formula says. (What is added to the residual passes through dropout
//! first.)
//!
//! With LayerScale (Touvron et al. 2021, CaiT §2.2) the branch term of each formula, what
//! the placement adds to the residual (`F(·)`, or `Norm(F(·))` for Peri and PostBranch), is
//! multiplied by a learnable per-channel gain: `branch → λ ⊙ branch`, λ `[d_model]`, every
//! entry starting at the configured value (CaiT: 0.1 up to depth 18, 1e-5 at 24, 1e-6
//! deeper). It is ReZero's gate as a vector, on any placement.
//!
//! With residual gating (x-transformers' `gate_residual`; Parisotto et al. 2020, GTrXL) a
//! GRU cell takes the place of the residual sum wherever a placement adds the branch term
//! to the residual: `x + t → GRU(t, x)` (see [`ResidualGate`]). The sum norm of Post,
//! DeepNorm and ResiDual then normalizes the gate's output, DeepNorm's α still scales `x`
//! and ReZero's gate still scales `t`; ResiDual's dual stream stays a plain sum.
//!
//! [`AddNorm::forward_onto`] hands the residual to a sublayer that adds it inside its last
//! GEMM (`x + F(h)` in one pass, with the same bits), where the join is that plain sum.
//!
//! NormFormer's post-attention norm (Shleifer et al. 2021) is an output norm on a Pre
//! connection ([`AddNorm::with_output_norm`]). ResiDual (Xie et al. 2023) carries a second
//! stream through [`AddNorm::forward_dual`]. adaLN-Zero (Peebles & Xie 2023) modulates the
//! input norm and gates the branch through [`AddNorm::forward_modulated`].
//!
//! # Shapes
//! - input `x` and `F(x)`: `[batch, seq, d_model]`; output: the same

use burn::module::{Initializer, Module, Param};
use burn::nn::{Dropout, DropoutConfig};
use burn::tensor::{Tensor, backend::Backend};

use addnorm_kernels::NormBackend;

use super::placement::Placement;
use super::residual_gate::ResidualGate;
use crate::config_error::{ConfigError, ensure, or_panic};
use crate::norm::{Norm, NormConfig};

/// A residual connection with its norms (see the [module docs](self)).
#[derive(Module, Debug)]
pub struct AddNorm<B: Backend> {
    /// The norm on the sublayer's input (Pre, Peri).
    pub input_norm: Option<Norm<B>>,
    /// The norm on the sublayer's output, before the addition (Peri, PostBranch, NormFormer's
    /// post-attention norm).
    pub output_norm: Option<Norm<B>>,
    /// The norm after the addition (Post, DeepNorm, ResiDual).
    pub sum_norm: Option<Norm<B>>,
    /// ReZero's learnable gate `a`, `[1]`, initialized to 0.
    pub rezero_gate: Option<Param<Tensor<B, 1>>>,
    /// LayerScale's per-channel gain λ on the branch, `[d_model]`, when configured
    /// ([`AddNorm::with_layer_scale`]).
    pub layer_scale: Option<Param<Tensor<B, 1>>>,
    /// The GRU cell that replaces the residual sum, when configured
    /// ([`AddNorm::with_residual_gate`]).
    pub residual_gate: Option<ResidualGate<B>>,
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
        let make = |has: bool| has.then(|| norm.with_d_model(d_model).init(device));
        let [input, output, sum] = norm_slots(placement);
        let (input_norm, output_norm, sum_norm) = (make(input), make(output), make(sum));
        Self {
            input_norm,
            output_norm,
            sum_norm,
            rezero_gate: (placement == Placement::ReZero)
                .then(|| Initializer::Zeros.init([1], device)),
            layer_scale: None,
            residual_gate: None,
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
        or_panic(validate_layer_scale(init));
        self.layer_scale = Some(Initializer::Constant { value: init }.init([d_model], device));
        self
    }

    /// This connection with residual gating: a GRU cell over `d_model` features in place of
    /// the residual sum (see the [module docs](self) and [`ResidualGate`]).
    pub fn with_residual_gate(mut self, d_model: usize, device: &B::Device) -> Self {
        self.residual_gate = Some(ResidualGate::new(d_model, device));
        self
    }

    /// This connection with a norm on the sublayer's output, before the addition, where it
    /// has none: NormFormer's post-attention norm (Shleifer et al. 2021, §2), which makes a
    /// Pre connection `x + Norm(F(Norm(x)))` (in a Peri connection the norm is there
    /// already).
    pub fn with_output_norm(
        mut self,
        norm: &NormConfig,
        d_model: usize,
        device: &B::Device,
    ) -> Self {
        if self.output_norm.is_none() {
            self.output_norm = Some(norm.with_d_model(d_model).init(device));
        }
        self
    }

    /// The placement this connection implements.
    pub fn placement(&self) -> Placement {
        self.placement
    }
}

/// Which norms a connection of `placement` has: `[input, output, sum]`.
fn norm_slots(placement: Placement) -> [bool; 3] {
    match placement {
        Placement::Post | Placement::DeepNorm | Placement::ResiDual => [false, false, true],
        // Parallel: the attention connection's norm; the block removes the feed-forward
        // connection's (TransformerBlockConfig::init), which reads the same one.
        Placement::Pre | Placement::Parallel => [true, false, false],
        Placement::Peri => [true, true, false],
        Placement::PostBranch => [false, true, false],
        _ => [false, false, false],
    }
}

/// Whether a connection of `placement` builds any norm from its config (ReZero and the
/// plain residual build none, so their config's norm is never checked).
pub(crate) fn builds_norms(placement: Placement) -> bool {
    norm_slots(placement).contains(&true)
}

/// Refuses a LayerScale initial value that is not finite.
pub(crate) fn validate_layer_scale(init: f64) -> Result<(), ConfigError> {
    ensure(init.is_finite(), || {
        ConfigError::of_field(
            "TransformerBlockConfig.layer_scale",
            format_args!("must be finite, got {init}"),
        )
    })
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
    /// Every placement computes the branch term `out(F(in(x)))`, each norm only where the
    /// connection has it (Pre: `in`; Peri: both; PostBranch and NormFormer's post-attention
    /// norm: `out`), passes it through `branch` (LayerScale, dropout), and
    /// joins it to the residual as [`Placement`] says (`join`).
    ///
    /// # Shapes
    /// - input: `[batch, seq, d_model]`; `sublayer` maps that shape to itself
    /// - output: `[batch, seq, d_model]`
    pub fn forward(
        &self,
        x: Tensor<B, 3>,
        sublayer: impl FnOnce(Tensor<B, 3>) -> Tensor<B, 3>,
    ) -> Tensor<B, 3> {
        let term = self.branch_term(x.clone(), sublayer);
        self.join(x, term)
    }

    /// [`forward`](Self::forward) for a sublayer that can add the residual in its last
    /// operation (as [`MultiHeadSelfAttention::forward_onto`](super::MultiHeadSelfAttention::forward_onto)
    /// and [`FeedForward::forward_onto`](super::FeedForward::forward_onto) do, in their
    /// output projection's GEMM): `sublayer(h, Some(r))` must return `r + F(h)`, and
    /// `sublayer(h, None)` `F(h)`.
    ///
    /// Where the connection's join is the plain sum `x + F(in(x))` (Pre, Post, ResiDual's
    /// Post-LN stream, the plain residual; no output norm, LayerScale, residual gate or
    /// active dropout), `x` goes into the sublayer and the sum is never a tensor of its own;
    /// elsewhere this is `forward(x, |h| sublayer(h, None))`. Either way the result and
    /// every gradient have the bits of [`forward`](Self::forward).
    ///
    /// # Shapes
    /// - input: `[batch, seq, d_model]`; `sublayer` maps that shape to itself
    /// - output: `[batch, seq, d_model]`
    pub fn forward_onto(
        &self,
        x: Tensor<B, 3>,
        sublayer: impl FnOnce(Tensor<B, 3>, Option<Tensor<B, 3>>) -> Tensor<B, 3>,
    ) -> Tensor<B, 3> {
        let Some(residual) = self.plain_residual(&x) else {
            return self.forward(x, |h| sublayer(h, None));
        };
        let sum = sublayer(maybe(&self.input_norm, x), Some(residual));
        maybe(&self.sum_norm, sum)
    }

    /// `x`, when [`join`](Self::join) adds the raw `F(in(x))` to it in a plain sum (then
    /// through the sum norm, if any); `None` for any other join.
    fn plain_residual(&self, x: &Tensor<B, 3>) -> Option<Tensor<B, 3>> {
        let dropout_off = self.dropout.prob == 0.0 || !B::ad_enabled(&x.device());
        let plain = self.output_norm.is_none()
            && self.layer_scale.is_none()
            && self.residual_gate.is_none()
            && dropout_off;
        match self.placement {
            // DeepNorm's α·x would be a node made before the sublayer's instead of after,
            // which changes the order in which x's gradients are summed, and so their bits.
            Placement::ReZero | Placement::DeepNorm => None,
            _ if plain => Some(x.clone()),
            _ => None,
        }
    }

    /// [`forward`](Self::forward) with ResiDual's second stream (Xie et al. 2023, §3):
    /// a ResiDual connection returns `(Norm(x + f), dual + f)` for the branch term `f`;
    /// every other placement returns `(forward(x), dual)`.
    ///
    /// # Shapes
    /// - input `x`, `dual` and output: `[batch, seq, d_model]`
    pub fn forward_dual(
        &self,
        x: Tensor<B, 3>,
        dual: Tensor<B, 3>,
        sublayer: impl FnOnce(Tensor<B, 3>) -> Tensor<B, 3>,
    ) -> (Tensor<B, 3>, Tensor<B, 3>) {
        if self.placement != Placement::ResiDual {
            return (self.forward(x, sublayer), dual);
        }
        let term = self.branch_term(x.clone(), sublayer);
        (self.join(x, term.clone()), dual + term)
    }

    /// adaLN-Zero's connection (Peebles & Xie 2023, §3.2):
    /// `x + α ⊙ branch(F(in(x) ⊙ (1 + γ) + β))` for the modulation `m` = (β, γ, α) (see
    /// [`AdaLnZero`](super::AdaLnZero)). Only a Pre connection is conditioned.
    ///
    /// # Shapes
    /// - input `x`: `[batch, seq, d_model]`; `m`'s tensors `[batch, 1, d_model]`
    /// - output: `[batch, seq, d_model]`
    pub fn forward_modulated(
        &self,
        x: Tensor<B, 3>,
        m: &super::Modulation<B>,
        sublayer: impl FnOnce(Tensor<B, 3>) -> Tensor<B, 3>,
    ) -> Tensor<B, 3> {
        let h = m.modulate(maybe(&self.input_norm, x.clone()));
        x + self.branch(sublayer(h)) * m.gate.clone()
    }

    /// `branch(out(F(in(x))))`: what the connection adds to the residual.
    fn branch_term(
        &self,
        x: Tensor<B, 3>,
        sublayer: impl FnOnce(Tensor<B, 3>) -> Tensor<B, 3>,
    ) -> Tensor<B, 3> {
        let f = sublayer(maybe(&self.input_norm, x));
        self.branch(maybe(&self.output_norm, f))
    }

    /// Joins the branch term `term` to the residual `x` as the placement says: through the
    /// sum norm (Post, ResiDual; DeepNorm after scaling `x` by α), through ReZero's gate, or
    /// by a plain sum.
    pub(crate) fn join(&self, x: Tensor<B, 3>, term: Tensor<B, 3>) -> Tensor<B, 3> {
        match self.placement {
            Placement::Post | Placement::ResiDual => maybe(&self.sum_norm, self.sum(x, term)),
            Placement::DeepNorm => maybe(&self.sum_norm, self.sum(x * self.residual_scale, term)),
            Placement::ReZero => {
                let gate = self.rezero_gate.as_ref().expect("ReZero has a gate").val();
                self.sum(x, term * gate.unsqueeze::<3>())
            }
            _ => self.sum(x, term),
        }
    }

    /// The residual sum `x + term`, or the residual gate's `GRU(term, x)` where the
    /// connection has one.
    fn sum(&self, x: Tensor<B, 3>, term: Tensor<B, 3>) -> Tensor<B, 3> {
        match &self.residual_gate {
            Some(gate) => gate.forward(term, x),
            None => x + term,
        }
    }
}
