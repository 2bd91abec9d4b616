//! What one GroupNorm call computes ([`GroupNormSpec`]) and the sizes of its input
//! ([`GroupDims`]).
//!
//! # Formula
//! `x: [N, C, S]` with `C = G·c_g`: group `g` of sample `n` is the block
//! `x[n, g·c_g..(g+1)·c_g, :]`, one contiguous row of `L = c_g·S` values (row `r = n·G + g`
//! of the `[N·G, L]` view):
//!
//! ```text
//! μ_r = Σ x / L      σ²_r = Σ (x − μ_r)² / L      r_r = 1 / √(σ²_r + ε)
//! y[n, c, s] = (x[n, c, s] − μ_r)·r_r·γ_c + β_c      (r = n·G + c / c_g)
//! ```
//!
//! InstanceNorm is `G = C`; LayerNorm over `[C, S]` is `G = 1` with a per-channel affine.
//!
//! # Shapes
//! `x`, `y`: `[N, C, …]`, read as `[N, C, S]` with `S` the product of the trailing
//! dimensions (row-major, so no copy); γ, β: `[C]`.

/// The constants of a GroupNorm call: how many groups, and ε.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GroupNormSpec {
    /// Groups `G`: the channels split into `G` equal, contiguous groups.
    pub groups: usize,
    /// ε, added to the variance under the square root (PyTorch's and Burn's 1e-5 by
    /// default). Positive and finite.
    pub epsilon: f64,
}

/// The sizes of a `[N, C, S]` input under a [`GroupNormSpec`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupDims {
    /// Samples `N`.
    pub samples: usize,
    /// Channels `C`.
    pub channels: usize,
    /// Spatial positions `S` (the product of the trailing dimensions; 1 for `[N, C]`).
    pub spatial: usize,
    /// Groups `G`.
    pub groups: usize,
}

impl GroupDims {
    /// The sizes of `shape = [N, C, …]` (rank ≥ 2; `S` is the product of the trailing
    /// dimensions, 1 when there are none) under `spec`.
    ///
    /// # Panics
    /// If `shape` has rank < 2, `C` is not a positive multiple of `G`, or ε is not positive
    /// and finite.
    pub fn new(shape: &[usize], spec: &GroupNormSpec) -> Self {
        let &[samples, channels, ref trailing @ ..] = shape else {
            panic!("group norm: x must be [N, C, …] of rank ≥ 2, got {shape:?}");
        };
        let spatial = trailing.iter().product();
        assert!(
            spec.groups > 0 && channels > 0 && channels.is_multiple_of(spec.groups),
            "group norm: {channels} channels do not split into {} equal groups",
            spec.groups
        );
        assert!(
            spec.epsilon > 0.0 && spec.epsilon.is_finite(),
            "group norm: ε must be positive and finite, got {}",
            spec.epsilon
        );
        Self {
            samples,
            channels,
            spatial,
            groups: spec.groups,
        }
    }

    /// Channels per group `c_g`.
    pub fn group_channels(&self) -> usize {
        self.channels / self.groups
    }

    /// Rows of the `[N·G, L]` view: one per (sample, group).
    pub fn rows(&self) -> usize {
        self.samples * self.groups
    }

    /// Values per row, `L = c_g·S`.
    pub fn row_len(&self) -> usize {
        self.group_channels() * self.spatial
    }
}
