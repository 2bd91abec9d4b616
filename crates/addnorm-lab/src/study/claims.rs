//! Every claim the demo checks, by source: `xiong` (Xiong et al. 2020), `resi_dual` (Xie et
//! al. 2023), `normformer` (Shleifer et al. 2021), `cait` (Touvron et al. 2021, an extension), `peri_ln` (Kim et al. 2025), `wortsman` (Wortsman et al. 2023), `gemma2` (Gemma Team
//! 2024, a control) and `deepnet` (Wang et al. 2022). Each
//! paper's file measures its claims ([`Measurement`]); here each is decided by its entry in
//! the registry ([`Registry`], `claims.toml`), the only place that holds rules.
//!
//! ```text
//! interval   exact (Clopper–Pearson) for success rates; otherwise the seed bootstrap's 95%
//!            percentile interval (crate::stats::sample), 2000 resamples
//! verdict    the registered rule read against the whole interval (super::verdict)
//! ```
//!
//! Registered claims the demo does not measure yet are listed in [`NOT_RUN`], those only
//! `--full` measures in [`FULL_ONLY`], each with what it needs ([`not_run`]); the report
//! names them, and a test keeps the lists and the registry in step.
//!
//! # Shapes
//! Not applicable: statistics over run summaries.

use super::claim::{Claim, Measurement};
use super::config::DemoConfig;
use super::record::DemoReport;
use super::registry::Registry;

/// Registered claims the demo does not measure yet, with the run each needs.
pub const NOT_RUN: &[(&str, &str)] = &[];

/// Registered claims only the `--full` profile measures (its grids), with the grid each
/// reads.
pub const FULL_ONLY: &[(&str, &str)] = &[
    (
        "periln-divergence-vs-lr",
        "Pre-LN and Peri-LN without warm-up at three LRs above B's",
    ),
    (
        "wortsman-fig1-sensitivity-grows-with-size-baseline",
        "Fig. 1: C's LR grid at three model sizes",
    ),
    (
        "wortsman-fig1-sensitivity-grows-with-size-qkln",
        "Fig. 1: C's LR grid at three model sizes",
    ),
    (
        "wortsman-s311-divergence-lr-falls-with-size",
        "Fig. 1: C's LR grid at three model sizes",
    ),
    (
        "wortsman-fig5-warmup-effect-larger-for-larger-models",
        "Fig. 5: the long warm-up at three model sizes",
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
        "cait-abstract-layerscale-trains-deeper",
        "CaiT: Pre-LN with and without LayerScale over depths 6 to 48 at B's LR",
    ),
];

/// The registered claims `config` does not measure, with what each needs: [`NOT_RUN`], and
/// [`FULL_ONLY`] unless it runs the grids.
pub fn not_run(config: &DemoConfig) -> Vec<(&'static str, &'static str)> {
    let grids = config.proxy_grid.is_run()
        && !config.divergence_learning_rates.is_empty()
        && config.depth_grid.is_run();
    NOT_RUN
        .iter()
        .chain(if grids { &[][..] } else { FULL_ONLY })
        .copied()
        .collect()
}

/// Every measurement the demo makes, in report order: Xiong et al. (Theorem 1, Fig. 3,
/// Lemma 2, §3.2, then Fig. 2 and App. H), convergence speed (Xiong's §4, ReZero), Peri-LN, Wortsman et al.,
/// DeepNet.
pub fn measurements(report: &DemoReport) -> Vec<Measurement> {
    let mut all = super::xiong::claims(report);
    all.extend(super::resi_dual::claims(report));
    all.extend(super::normformer::claims(report));
    all.extend(super::warmup_grid::claims(report));
    all.extend(super::convergence::claims(report));
    all.extend(super::peri_ln::claims(report));
    all.extend(super::peri_ln_divergence::claims(report));
    all.extend(super::cait::claims(report));
    all.extend(super::wortsman::claims(report));
    all.extend(super::gemma2::claims(report));
    all.extend(super::wortsman_grid::claims(report));
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
