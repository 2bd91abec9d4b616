//! The list of every claim the demo checks, by source: `xiong` (Xiong et al. 2020),
//! `peri_ln` (Kim et al. 2025), `wortsman` (Wortsman et al. 2023) and `deepnet` (Wang et
//! al. 2022). Each paper's file computes its own; a [`Claim`] is a record of [`super::claim`].
//!
//! ```text
//! interval   seed-bootstrap 95% percentile interval (crate::stats::sample), 2000 resamples
//! ```
//!
//! # Shapes
//! Not applicable: statistics over run summaries.

use super::claim::Claim;
use super::record::DemoReport;

/// Every claim the demo checks, in report order: Xiong et al. (Theorem 1, Fig. 3,
/// Lemma 2, §3.2), Peri-LN, Wortsman et al., DeepNet.
pub fn evaluate_claims(report: &DemoReport) -> Vec<Claim> {
    let mut claims = super::xiong::claims(report);
    claims.extend(super::peri_ln::claims(report));
    claims.extend(super::wortsman::claims(report));
    claims.extend(super::deepnet::claims(report));
    claims
}
