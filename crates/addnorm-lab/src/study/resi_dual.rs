//! ResiDual's claim (Xie et al. 2023): its gradient has a lower bound, so no layer's gradient
//! vanishes. Measured with Xiong's Fig. 3 probe at init ([`crate::experiments::expected_gradient`]),
//! ResiDual against Post-LN at L = 48.
//!
//! ```text
//! G_l(p)      GM over seeds of ‖E_K ∇W₁^(l)‖_F for placement p, l = 1..L
//! evenness(p) min_l G_l(p) / max_l G_l(p)        (the spread's inverse; 1 = flat)
//! statistic   evenness(ResiDual) / evenness(Post-LN), seeds resampled in pairs
//! ```
//!
//! The rule is the registry's (`claims.toml`).
//!
//! # Shapes
//! Not applicable: statistics over per-layer profiles.

use addnorm::nn::Placement;

use super::claim::Measurement;
use super::measures::{per_layer_gm, runs_of_seeds, spread};
use super::record::DemoReport;
use crate::experiments::expected_gradient::ExpectedGradientRun;
use crate::stats::sample::bootstrap;

/// min over layers of the GM profile of W₁ over the runs of `placement` in `sample`'s seeds
/// (repeats allowed), over its max.
fn evenness(runs: &[ExpectedGradientRun], placement: Placement, sample: &[u64]) -> f64 {
    let mine = runs_of_seeds(runs, sample, |r, s| r.seed == s && r.placement == placement);
    1.0 / spread(&per_layer_gm(&mine, |r| &r.w_1))
}

/// The ResiDual claim, when its part ran.
pub(super) fn claims(report: &DemoReport) -> Vec<Measurement> {
    let runs = &report.figure_3_resi_dual;
    if runs.is_empty() {
        return vec![];
    }
    let c = &report.config.figure_3_resi_dual;
    let seeds = c.seeds.clone();
    let ratio = bootstrap(&seeds, 73, |s| {
        evenness(runs, Placement::ResiDual, s) / evenness(runs, Placement::Post, s)
    });
    let block = c.model.block();
    vec![Measurement {
        id: "residual-abstract-gradient-lower-bound".into(),
        statement: "ResiDual's per-layer gradients stay more even than Post-LN's (min/max over \
                    layers of the W₁ gradient profile, ResiDual over Post-LN)"
            .into(),
        setting: format!(
            "at init, Xavier W^Q/W^K, L = {:?}, d = {}, {} heads, d_ff = {}, K = {} batches of \
             {}, {} seeds (Xiong's Fig. 3 probe)",
            c.depths,
            block.d_model,
            block.n_heads,
            block.d_ff,
            c.batches,
            c.batch_size,
            seeds.len()
        ),
        measured: format!(
            "min/max of GM ‖E ∇W₁^(l)‖: ResiDual {:.3}, Post-LN {:.2e}; ratio {}",
            evenness(runs, Placement::ResiDual, &seeds),
            evenness(runs, Placement::Post, &seeds),
            ratio.show(2)
        ),
        estimate: Some(ratio),
        if_not: "Unexplained: no run here measures why.".into(),
        caveat: "The paper proves the bound for its encoder-decoder; this probe reads the \
                 gradient profile at initialization only."
            .into(),
    }]
}
