//! What one attention call computes: [`AttentionSpec`] (heads, scale, mask) and the
//! in-place head layout it reads ([`HeadLayout`]).
//!
//! # Formula
//! For each batch element `b` and head `h`, with `Q_h`, `K_h`, `V_h` the `[T, d_head]`
//! column blocks `h·d_head .. (h+1)·d_head` of the `[T, d_model]` inputs:
//!
//! ```text
//! S_h = scale · Q_h · K_hᵀ            S_h[i, j] = −∞ for j > i when causal
//! S_h ← c · tanh(S_h / c)             with a soft cap c (before the mask)
//! O_h = softmax_rows(S_h) · V_h       written into the same columns of the output
//! ```
//!
//! The soft cap is Gemma 2's attention-logit soft-capping (Gemma Team 2024, §2: c = 50):
//! every logit stays inside (−c, c), and its gradient is multiplied by `1 − tanh²(S/c)`.
//!
//! # Shapes
//! - `q`, `k`, `v`, output: `[batch, T, d_model]`, `d_model = heads · d_head`
//! - the saved log-sum-exp: `[batch, heads, T]`

/// The complete description of one multi-head attention call; see the
/// [module docs](self) for the formula.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttentionSpec {
    /// The number of heads `h`; the inputs' last dimension must be a multiple of it.
    pub heads: usize,
    /// The factor on the logits, usually `1/√d_head`.
    pub scale: f64,
    /// Whether query `i` sees only keys `j ≤ i`.
    pub causal: bool,
    /// Whether the caller also wants the largest logit (over the positions attended to).
    /// The fused kernels have it for free; the composite path then takes one more
    /// reduction over the scores.
    pub max_logit: bool,
    /// The logit soft cap c: `S ← c·tanh(S/c)` after the scale, before the mask (see the
    /// [module docs](self)); `None` leaves the logits as they are. The max logit is then the
    /// capped one, the logit the softmax sees.
    pub softcap: Option<f64>,
}

impl AttentionSpec {
    /// Causal attention over `heads` heads of `d_head` features, scaled by `1/√d_head`
    /// (what a decoder's self-attention uses), without the max logit.
    pub fn causal(heads: usize, d_head: usize) -> Self {
        Self {
            heads,
            scale: 1.0 / (d_head as f64).sqrt(),
            causal: true,
            max_logit: false,
            softcap: None,
        }
    }

    /// The same attention with its logits soft-capped at `cap`: `S ← cap·tanh(S/cap)`.
    ///
    /// # Panics
    /// If `cap` is not positive and finite.
    pub fn with_softcap(self, cap: f64) -> Self {
        assert!(
            cap.is_finite() && cap > 0.0,
            "attention: the logit soft cap must be positive and finite, got {cap}"
        );
        Self {
            softcap: Some(cap),
            ..self
        }
    }

    /// The same attention with every key visible to every query.
    pub fn non_causal(self) -> Self {
        Self {
            causal: false,
            ..self
        }
    }

    /// The same attention with another logit scale.
    pub fn with_scale(self, scale: f64) -> Self {
        Self { scale, ..self }
    }

    /// The same attention, also returning the largest logit.
    pub fn with_max_logit(self) -> Self {
        Self {
            max_logit: true,
            ..self
        }
    }

    /// The layout of inputs of shape `dims` (`[batch, T, d_model]`).
    ///
    /// # Panics
    /// If `heads` is 0 or does not divide `d_model`; the message names both.
    pub fn layout(&self, [batch, seq, d_model]: [usize; 3]) -> HeadLayout {
        assert!(
            self.heads > 0 && d_model % self.heads == 0,
            "attention: d_model = {d_model} must be a positive multiple of heads = {}",
            self.heads
        );
        HeadLayout {
            batch,
            seq,
            heads: self.heads,
            d_head: d_model / self.heads,
        }
    }
}

/// Where head `h` of batch element `b` lives in a row-major `[batch, T, d_model]` buffer:
/// rows of stride `d_model`, starting at `b·T·d_model + h·d_head`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadLayout {
    /// The batch size.
    pub batch: usize,
    /// The sequence length `T`.
    pub seq: usize,
    /// The number of heads.
    pub heads: usize,
    /// The features per head.
    pub d_head: usize,
}

impl HeadLayout {
    /// `heads · d_head`, the row stride.
    pub fn d_model(&self) -> usize {
        self.heads * self.d_head
    }

    /// The offset of row 0 of head `h` of batch element `b`.
    pub fn offset(&self, b: usize, h: usize) -> usize {
        b * self.seq * self.d_model() + h * self.d_head
    }

    /// The number of elements of one `[batch, T, d_model]` tensor.
    pub fn len(&self) -> usize {
        self.batch * self.seq * self.d_model()
    }

    /// Whether the tensors are empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many keys query `i` sees: `i + 1` when causal, else all `T`.
    pub fn visible_keys(&self, i: usize, causal: bool) -> usize {
        if causal { i + 1 } else { self.seq }
    }
}
