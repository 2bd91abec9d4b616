//! Where the normalization sits relative to the residual connection: [`Placement`], whose
//! docs hold the formula of every placement (the one table of them in the workspace; other
//! docs link to it).
//!
//! # Shapes
//! Every placement maps the residual stream `[batch, seq, d_model]` to the same shape.

use serde::{Deserialize, Serialize};

/// The residual placement of the norms. New placements may be added, so matches need a
/// wildcard arm.
///
/// For a sublayer F (attention or feed-forward) and the residual stream x:
///
/// ```text
/// Post      x ← Norm(x + F(x))                 Vaswani et al. 2017; the seeds' "Add & Norm"
/// Pre       x ← x + F(Norm(x))                 plus a final Norm after the stack
/// Peri      x ← x + Norm(F(Norm(x)))           "Sandwich"; plus a final Norm
/// PostBranch x ← x + Norm(F(x))                OLMo 2's "reordered norm"; plus a final Norm
/// Parallel  x ← x + F_att(Norm(x)) + F_ffn(Norm(x))   one norm, both sublayers side by
///                                              side (GPT-J, PaLM); plus a final Norm
/// ResiDual  x ← Norm(x + F(x)), x_d ← x_d + F(x)   Xie et al. 2023: a Post-LN stream x
///                                              and a dual stream x_d, both starting at the
///                                              embeddings; the stack's output is
///                                              x + Norm(x_d), the final Norm on x_d
/// DeepNorm  x ← Norm(α·x + F(x))               α = (2N)^¼; W^V, W^O, W₁, W₂ scaled by β = (8N)^−¼
/// ReZero    x ← x + a·F(x)                     a learnable, starts at 0; no norm
/// None      x ← x + F(x)                       no norm at all
/// ```
///
/// [`AddNorm::forward`](super::AddNorm::forward) is this table in code.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Placement {
    /// `x ← Norm(x + F(x))`: the original Transformer (Post-LN).
    Post,
    /// `x ← x + F(Norm(x))`, with a final Norm after the stack (Pre-LN).
    #[default]
    Pre,
    /// `x ← x + Norm(F(Norm(x)))`, with a final Norm (Peri-LN, "Sandwich").
    Peri,
    /// `x ← Norm(α·x + F(x))`, Wang et al. 2022, with its β-scaled initialization.
    DeepNorm,
    /// `x ← x + Norm(F(x))`, with a final Norm: the norm on the sublayer's output only, the
    /// residual stream never normalized inside the stack (OLMo 2, Team OLMo 2024, with
    /// RMSNorm and QK-norm there).
    PostBranch,
    /// `x ← x + Attn(Norm(x)) + FFN(Norm(x))`, with a final Norm: the block's two sublayers
    /// read the same normalized input and are added side by side (GPT-J, Wang & Komatsuzaki
    /// 2021; PaLM, Chowdhery et al. 2022, §2). The attention connection holds the one norm;
    /// the feed-forward connection has none of its own.
    Parallel,
    /// `x ← Norm(x + F(x))` with a second, unnormalized stream `x_d ← x_d + F(x)`: ResiDual
    /// (Xie et al. 2023, §3, "Transformer with Dual Residual Connections"). Both streams start
    /// at the embeddings, and the stack's output is `x + Norm(x_d)` with its final Norm, so the
    /// gradient reaches every layer through `x_d` as in Pre-LN while the Post-LN stream keeps
    /// its representation. [`TransformerBlock::forward_dual`](super::TransformerBlock)
    /// carries the two streams; a block's plain `forward` returns the Post-LN stream.
    ResiDual,
    /// `x ← x + a·F(x)` with a learnable scalar `a` initialized to 0 (Bachlechner et al.
    /// 2020). No norm.
    ReZero,
    /// `x ← x + F(x)`: no normalization.
    None,
}

impl Placement {
    /// Every placement, in the order of the module docs.
    pub const ALL: [Placement; 9] = [
        Placement::Post,
        Placement::Pre,
        Placement::Peri,
        Placement::DeepNorm,
        Placement::PostBranch,
        Placement::Parallel,
        Placement::ResiDual,
        Placement::ReZero,
        Placement::None,
    ];

    /// The lower-case name used on the command line and in reports: `post`, `pre`, `peri`,
    /// `deepnorm`, `post-branch`, `parallel`, `resi-dual`, `rezero`, `none`.
    pub fn name(self) -> &'static str {
        match self {
            Placement::Post => "post",
            Placement::Pre => "pre",
            Placement::Peri => "peri",
            Placement::DeepNorm => "deepnorm",
            Placement::PostBranch => "post-branch",
            Placement::Parallel => "parallel",
            Placement::ResiDual => "resi-dual",
            Placement::ReZero => "rezero",
            Placement::None => "none",
        }
    }

    /// Parses [`Placement::name`] (case-insensitive; `sandwich` is `peri`).
    pub fn from_name(name: &str) -> Option<Self> {
        let lower = name.to_ascii_lowercase();
        if lower == "sandwich" {
            return Some(Placement::Peri);
        }
        Self::ALL.into_iter().find(|p| p.name() == lower)
    }

    /// Whether the stack ends with a final norm before the output head (Pre, Peri,
    /// PostBranch and Parallel, whose residual stream is otherwise never normalized; ResiDual,
    /// on its dual stream).
    pub fn has_final_norm(self) -> bool {
        matches!(
            self,
            Placement::Pre
                | Placement::Peri
                | Placement::PostBranch
                | Placement::Parallel
                | Placement::ResiDual
        )
    }

    /// DeepNorm's residual scale α = (2N)^¼ for N decoder layers; 1 for the others.
    pub fn residual_scale(self, n_layers: usize) -> f64 {
        match self {
            Placement::DeepNorm => (2.0 * n_layers as f64).powf(0.25),
            _ => 1.0,
        }
    }

    /// DeepNorm's initialization scale β = (8N)^−¼ on W^V, W^O, W₁, W₂; 1 for the others.
    pub fn init_scale(self, n_layers: usize) -> f64 {
        match self {
            Placement::DeepNorm => (8.0 * n_layers as f64).powf(-0.25),
            _ => 1.0,
        }
    }
}

impl core::fmt::Display for Placement {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}
