//! What one row-wise normalization computes: [`RowNormSpec`] and its options.
//!
//! Every LayerNorm and RMSNorm variant addnorm supports is one `RowNormSpec` applied to a
//! matrix `x: [rows, n]` (the module flattens the leading dimensions into `rows` and the
//! normalized dimensions into `n`). With `k` the number of features the statistics read
//! (`k = n`, or `⌈p·n⌉` for partial RMS) and `x_j` the `j`-th feature of a row:
//!
//! ```text
//! centered (LayerNorm):   μ = Σ_{j<k} x_j / k            c_j = x_j − μ
//!                         σ² = Σ_{j<k} (x_j − μ)² / d    d = k (Biased) or k − 1 (Unbiased)
//! uncentered (RMSNorm):   μ = 0                          c_j = x_j
//!                         σ² = Σ_{j<k} x_j² / k          (the mean square)
//! InsideSqrt:             y_j = c_j / √(σ² + ε)
//! AddedToStd:             y_j = c_j / (√σ² + ε)
//! ```
//!
//! followed by the affine map `y·γ + β`, where γ and β hold either one value per feature
//! (`[n]`) or a single value (`[1]`).

use serde::{Deserialize, Serialize};

/// The divisor of the variance: ÷n (population, PyTorch's `LayerNorm`) or ÷(n−1) (sample,
/// `torch.var`'s default and two of the seed notebooks).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Variance {
    /// σ² = Σ(x−μ)² / n. What `torch.nn.LayerNorm` and `burn::nn::LayerNorm` use.
    #[default]
    Biased,
    /// σ² = Σ(x−μ)² / (n−1), Bessel's correction, as `x.std()` in PyTorch. A row of one
    /// element has no sample variance: it is defined here as 0, so the row maps to β.
    Unbiased,
}

/// Where ε enters the denominator.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum EpsilonPlacement {
    /// `(x − μ) / √(σ² + ε)`: PyTorch's and Burn's LayerNorm.
    #[default]
    InsideSqrt,
    /// `(x − μ) / (σ + ε)`: the "annotated transformer" formula several seeds use.
    AddedToStd,
}

/// Whether the row mean is removed before scaling: LayerNorm centres, RMSNorm does not.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Centering {
    /// Subtract the row mean, then divide by the standard deviation (LayerNorm).
    MeanRemoved,
    /// Divide by the root mean square (RMSNorm).
    RootMeanSquare,
}

/// The complete description of one row-wise normalization; see the [module docs](self) for
/// the formula.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowNormSpec {
    /// LayerNorm (mean removed) or RMSNorm (root mean square).
    pub centering: Centering,
    /// ε, the stabilizer in the denominator. Must be positive and finite.
    pub epsilon: f64,
    /// The variance divisor. RMSNorm always divides by `k`; this only matters when centring.
    pub variance: Variance,
    /// Where ε is added.
    pub epsilon_placement: EpsilonPlacement,
    /// How many leading features of each row the statistics read (`k` in the formula). `None`
    /// means all of them; `Some(k)` with `k < n` is partial RMSNorm (Zhang & Sennrich 2019).
    pub statistics_features: Option<usize>,
}

impl RowNormSpec {
    /// PyTorch's `nn.LayerNorm`: centred, biased variance, ε inside the square root.
    pub fn layer_norm(epsilon: f64) -> Self {
        Self {
            centering: Centering::MeanRemoved,
            epsilon,
            variance: Variance::Biased,
            epsilon_placement: EpsilonPlacement::InsideSqrt,
            statistics_features: None,
        }
    }

    /// PyTorch's `nn.RMSNorm`: `x / √(mean(x²) + ε)`.
    pub fn rms_norm(epsilon: f64) -> Self {
        Self {
            centering: Centering::RootMeanSquare,
            ..Self::layer_norm(epsilon)
        }
    }

    /// The number of features the statistics read for a row of `n` features (`k`).
    pub fn statistics_width(&self, n: usize) -> usize {
        self.statistics_features.map_or(n, |k| k.clamp(1, n.max(1)))
    }

    /// The divisor `d` of the second moment for rows of `k` statistics features. Never 0: a
    /// one-element row under Bessel's correction has σ² defined as 0.
    pub fn variance_divisor(&self, k: usize) -> usize {
        match (self.centering, self.variance) {
            (Centering::MeanRemoved, Variance::Unbiased) if k > 1 => k - 1,
            _ => k.max(1),
        }
    }
}
