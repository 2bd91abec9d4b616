//! Experiment A: gradients at initialization, with no training (Xiong et al. 2020, §3).
//!
//! For every placement × norm × depth × seed: build the model (W^Q = W^K = 0 by default, the
//! theory's setting), take one batch, and record
//!
//! ```text
//! ‖∂L/∂W‖_F          for W ∈ {W^Q, W^K, W^V, W^O, W₁, W₂} of every layer
//! last_ffn_grad_norm = ‖∂L/∂W₂^{(L)}‖_F       (the last layer's second FFN weight)
//! residual RMS       √(E x_l²) of the residual stream, l = 0..L
//! slope              least squares of ln(last_ffn_grad_norm) against ln(L)
//! ```
//!
//! Theorem 1 predicts a slope ≈ 0 for Post-LN and ≈ −½ for Pre-LN; Lemma 2 bounds Pre-LN's
//! residual growth by 1 + l/2 ≤ E‖x_l‖²/d ≤ 1 + 3l/2.
//!
//! One concept per file: [`config`] (the grid and model), [`record`] (what `probe.json`
//! holds), [`run`] (measuring the cells and fitting the slopes) and [`table`] (the slopes
//! as Markdown).
//!
//! # Shapes
//! Each run uses one `[batch, 2n + 1]` batch; per-layer arrays have L entries (L + 1 for the
//! residual RMS).

pub mod config;
pub mod record;
pub mod run;
pub mod table;

pub use config::ProbeConfig;
pub use record::{LayerGradients, ProbeReport, ProbeResult, SlopeFit};
pub use run::{fit_slopes, probe, probe_one, probe_pairs};
