//! NormFormer's claims (Shleifer et al. 2021) at toy scale, from the early-gradient part
//! ([`crate::experiments::early_gradients`]): B's Pre-LN model and the same with
//! NormFormer's three additions, over their first steps.
//!
//! ```text
//! G_l(v)      GM over seeds of G^(l), the average L1 gradient of W₂^(l) over the first T
//!             steps, for variant v
//! mismatch    Spearman ρ(l, ln G_l(Pre-LN))                 (< 0: early layers larger)
//! fix         spread(Pre-LN) / spread(NormFormer), spread = max_l G_l / min_l G_l
//! ```
//!
//! Seeds are resampled in pairs (the two variants of a seed share its batches). The rules
//! are the registry's (`claims.toml`).
//!
//! # Shapes
//! Not applicable: statistics over per-layer profiles.

use super::claim::Measurement;
use super::measures::{per_layer_gm, runs_of_seeds, spread, trend};
use super::record::DemoReport;
use crate::experiments::early_gradients::{EarlyGradientRun, EarlyVariant};
use crate::stats::sample::bootstrap;

/// G_l of `variant` over the seeds `sample` (repeats allowed).
fn profile(runs: &[EarlyGradientRun], variant: EarlyVariant, sample: &[u64]) -> Vec<f64> {
    let mine = runs_of_seeds(runs, sample, |r, s| r.seed == s && r.variant == variant);
    per_layer_gm(&mine, |r| &r.w_2)
}

/// The profile in words: "1.2e-3 … 4.5e-4".
fn show(profile: &[f64]) -> String {
    profile
        .iter()
        .map(|g| format!("{g:.2e}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// NormFormer's two claims, when the part ran.
pub(super) fn claims(report: &DemoReport) -> Vec<Measurement> {
    let runs = &report.early_gradients;
    if runs.is_empty() {
        return vec![];
    }
    let c = &report.config;
    let seeds = c.early_gradients.seeds.clone();
    let (pre, nf) = (EarlyVariant::Baseline, EarlyVariant::NormFormer);
    let rho = bootstrap(&seeds, 79, |s| trend(&profile(runs, pre, s)));
    let ratio = bootstrap(&seeds, 83, |s| {
        spread(&profile(runs, pre, s)) / spread(&profile(runs, nf, s))
    });
    let (p_pre, p_nf) = (profile(runs, pre, &seeds), profile(runs, nf, &seeds));
    let setting = format!(
        "B's Pre-LN run (reverse task, depth {}, d = {}, LR {:e}, no warm-up) over its first \
         {} of {} steps, {} seeds; the paper: causal LMs of 125M–2.7B parameters early in \
         pretraining",
        c.train_model.block().n_layers,
        c.train_model.block().d_model,
        c.learning_rate,
        c.early_gradients.steps,
        c.steps,
        seeds.len()
    );
    vec![
        Measurement {
            id: "normformer-abstract-preln-gradient-mismatch".into(),
            statement: "Pre-LN's early layers get larger gradients than its later layers \
                        (Spearman ρ of layer and the log average |∇W₂|)"
                .into(),
            setting: setting.clone(),
            measured: format!("G_l by layer: {}; ρ {}", show(&p_pre), rho.show(2)),
            estimate: Some(rho),
            if_not: "Unexplained: no run here measures why.".into(),
            caveat: "Xiong et al.'s Fig. 3 (claims on Pre-LN's flat profile) measures the \
                     same weights at initialization, not over training."
                .into(),
        },
        Measurement {
            id: "normformer-abstract-fix-balances-gradients".into(),
            statement: "NormFormer's additions even out the per-layer gradients (max/min of \
                        G_l, Pre-LN over NormFormer)"
                .into(),
            setting: format!("{setting}; NormFormer: TransformerBlockConfig::normformer()"),
            measured: format!(
                "spread ×{:.2} Pre-LN, ×{:.2} NormFormer (G_l: {}); ratio {}",
                spread(&p_pre),
                spread(&p_nf),
                show(&p_nf),
                ratio.show(2)
            ),
            estimate: Some(ratio),
            if_not: "Unexplained: no run here measures why.".into(),
            caveat: String::new(),
        },
    ]
}
