//! What a probe measured: one [`ProbeResult`] per run, the fitted slopes, and the whole
//! [`ProbeReport`] that `probe.json` holds.
//!
//! # Shapes
//! Per-layer arrays have L entries (L + 1 for the residual RMS).

use addnorm::nn::Placement;
use serde::{Deserialize, Serialize};

use super::config::ProbeConfig;
use crate::experiments::norm_kind::NormKind;

/// Per-layer gradient norms of one run, one array per weight (index l − 1 is layer l).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct LayerGradients {
    /// ‖∂L/∂W^Q‖_F per layer.
    pub w_q: Vec<f64>,
    /// ‖∂L/∂W^K‖_F per layer.
    pub w_k: Vec<f64>,
    /// ‖∂L/∂W^V‖_F per layer.
    pub w_v: Vec<f64>,
    /// ‖∂L/∂W^O‖_F per layer.
    pub w_o: Vec<f64>,
    /// ‖∂L/∂W₁‖_F per layer.
    pub w_1: Vec<f64>,
    /// ‖∂L/∂W₂‖_F per layer.
    pub w_2: Vec<f64>,
}

/// One probe run.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ProbeResult {
    /// `post`, `pre`, `peri`, `deepnorm`, `rezero` or `none`.
    pub placement: Placement,
    /// `layer`, `rms`, `dyt` or `identity`.
    pub norm: NormKind,
    /// L.
    pub depth: usize,
    /// The seed.
    pub seed: u64,
    /// The loss of the batch at initialization.
    pub loss: f64,
    /// ‖∂L/∂W₂^{(L)}‖_F.
    pub last_ffn_grad_norm: f64,
    /// Per-layer gradient norms.
    pub grad_norms: LayerGradients,
    /// √(E x_l²) for l = 0..L.
    pub residual_rms: Vec<f64>,
    /// E‖x_l‖²/d = residual_rms², for comparison with Lemma 2.
    pub residual_mean_square: Vec<f64>,
}

/// The fitted log-log slope of one (placement, norm) pair.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct SlopeFit {
    /// The placement name.
    pub placement: Placement,
    /// The norm name.
    pub norm: NormKind,
    /// The slope of ln(last_ffn_grad_norm) against ln(depth), over the seeds' geometric means.
    pub slope: f64,
    /// (depth, geometric mean over seeds of last_ffn_grad_norm).
    pub points: Vec<(usize, f64)>,
}

/// The whole probe: what `probe.json` holds.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct ProbeReport {
    /// The grid.
    pub config: ProbeConfig,
    /// One element per run.
    pub results: Vec<ProbeResult>,
    /// One slope per (placement, norm).
    pub slopes: Vec<SlopeFit>,
}

impl ProbeReport {
    /// The slope fitted for `placement` and `norm`, if it was probed.
    pub fn slope(&self, placement: Placement, norm: NormKind) -> Option<f64> {
        self.slopes
            .iter()
            .find(|s| s.placement == placement && s.norm == norm)
            .map(|s| s.slope)
    }
}
