//! Every claim the demo checks, by source: `xiong` (Xiong et al. 2020), `peri_ln` (Kim et
//! al. 2025), `wortsman` (Wortsman et al. 2023) and `deepnet` (Wang et al. 2022). Each
//! paper's file measures its claims ([`Measurement`]); here each is decided by its entry in
//! the registry ([`Registry`], `claims.toml`), the only place that holds rules.
//!
//! ```text
//! interval   exact (Clopper–Pearson) for success rates; otherwise the seed bootstrap's 95%
//!            percentile interval (crate::stats::sample), 2000 resamples
//! verdict    the registered rule read against the whole interval (super::verdict)
//! ```
//!
//! Registered claims the demo does not measure yet are listed in [`NOT_RUN`], each with
//! what it needs; the report names them, and a test keeps the two lists and the registry
//! in step.
//!
//! # Shapes
//! Not applicable: statistics over run summaries.

use super::claim::{Claim, Measurement};
use super::record::DemoReport;
use super::registry::Registry;

/// Registered claims the demo does not measure yet, with the run each needs.
pub const NOT_RUN: &[(&str, &str)] = &[
    (
        "periln-divergence-vs-lr",
        "Peri-LN and Pre-LN over an LR grid, counting divergences",
    ),
    (
        "wortsman-fig1-sensitivity-grows-with-size-baseline",
        "Fig. 1: LR sensitivity at three or more model sizes",
    ),
    (
        "wortsman-fig1-sensitivity-grows-with-size-qkln",
        "Fig. 1: LR sensitivity at three or more model sizes",
    ),
    (
        "wortsman-s311-divergence-lr-falls-with-size",
        "Fig. 1: LR sensitivity at three or more model sizes",
    ),
    (
        "wortsman-fig5-warmup-effect-larger-for-larger-models",
        "Fig. 5: warm-up lengths at several sizes",
    ),
    (
        "wortsman-fig6-independent-decay-lowers-sensitivity",
        "Fig. 6: coupled against independent weight decay over the LR grid",
    ),
    (
        "wortsman-fig3-zloss-lowers-sensitivity",
        "Fig. 3: no weight decay, with and without z-loss, over the LR grid",
    ),
    (
        "normformer-abstract-preln-gradient-mismatch",
        "NormFormer Fig. 2: per-layer gradients over the first training steps, Pre-LN",
    ),
    (
        "normformer-abstract-fix-balances-gradients",
        "NormFormer Fig. 2: the same profile for Pre-LN and NormFormer",
    ),
    (
        "cait-abstract-layerscale-trains-deeper",
        "CaiT: Pre-LN with and without LayerScale over depths at one LR",
    ),
    (
        "gemma2-s2-softcap-bounds-logits-at-high-lr",
        "Gemma 2: the Wortsman LR grid with attention-logit soft-capping",
    ),
    (
        "residual-abstract-gradient-lower-bound",
        "ResiDual: Xiong's Fig. 3 probe for ResiDual at L = 48",
    ),
];

/// Every measurement the demo makes, in report order: Xiong et al. (Theorem 1, Fig. 3,
/// Lemma 2, §3.2, then Fig. 2 and App. H), convergence speed (Xiong's §4, ReZero), Peri-LN, Wortsman et al.,
/// DeepNet.
pub fn measurements(report: &DemoReport) -> Vec<Measurement> {
    let mut all = super::xiong::claims(report);
    all.extend(super::warmup_grid::claims(report));
    all.extend(super::convergence::claims(report));
    all.extend(super::peri_ln::claims(report));
    all.extend(super::wortsman::claims(report));
    all.extend(super::deepnet::claims(report));
    all.extend(super::deepnet::sgd_claims(report));
    all
}

/// Every claim the demo checks, decided by the built-in registry. A measurement whose id
/// the registry lacks (an extension depth no profile runs by default) is left out, with a
/// line on standard error.
pub fn evaluate_claims(report: &DemoReport) -> Vec<Claim> {
    let registry = Registry::embedded();
    measurements(report)
        .into_iter()
        .filter(|m| {
            let known = registry.get(&m.id).is_some();
            if !known {
                eprintln!("note: claim {:?} is not in claims.toml; left out", m.id);
            }
            known
        })
        .map(|m| Claim::decide(m, &registry))
        .collect()
}
