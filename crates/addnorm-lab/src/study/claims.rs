//! A published claim as the demo checks it ([`Claim`]), the helpers its statistics share,
//! and the list of every claim, by source: `xiong` (Xiong et al. 2020), `peri_ln` (Kim et
//! al. 2025), `wortsman` (Wortsman et al. 2023) and `deepnet` (Wang et al. 2022).
//!
//! ```text
//! geometric mean   GM(v) = exp(mean(ln vᵢ)) over the positive vᵢ
//! interval         seed-bootstrap 95% percentile interval (crate::stats), 2000 resamples
//! ```
//!
//! # Shapes
//! Not applicable: statistics over run summaries.

use std::fmt::Write as _;

use addnorm::nn::Placement;
use serde::{Deserialize, Serialize};

use super::report::DemoReport;
use crate::grid::NormKind;
use crate::probe::ProbeResult;
use crate::stats::Estimate;
use crate::sweep::SweepRun;

/// One published claim and what we measured.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Claim {
    /// Where the claim comes from: paper, and figure, theorem or section.
    pub source: String,
    /// The claim, with the verdict's rule.
    pub statement: String,
    /// The setting it was measured in (model, data, seeds).
    pub setting: String,
    /// What was measured, with its 95% interval.
    pub measured: String,
    /// The statistic the verdict reads, with its seed-bootstrap 95% interval.
    pub estimate: Option<Estimate>,
    /// Whether the measurement reproduces it.
    pub reproduced: bool,
    /// Why it does not reproduce, or a caveat (empty if none).
    pub note: String,
}

/// The geometric mean of the positive values of `v` (1 if there are none).
pub(super) fn geometric_mean(v: impl IntoIterator<Item = f64>) -> f64 {
    let logs: Vec<f64> = v.into_iter().filter(|x| *x > 0.0).map(f64::ln).collect();
    (logs.iter().sum::<f64>() / logs.len().max(1) as f64).exp()
}

/// The second feed-forward weight's gradient norms of a run.
pub(super) fn w2(r: &ProbeResult) -> &Vec<f64> {
    &r.grad_norms.w_2
}

/// Per-layer profile of one weight's gradient norm at `depth`, geometric mean over seeds.
pub(super) fn profile(
    results: &[ProbeResult],
    p: Placement,
    n: NormKind,
    depth: usize,
    pick: fn(&ProbeResult) -> &Vec<f64>,
) -> Vec<f64> {
    let runs: Vec<&ProbeResult> = results
        .iter()
        .filter(|r| r.placement == p && r.norm == n && r.depth == depth)
        .collect();
    per_layer_gm(&runs, pick)
}

/// Per layer, the geometric mean over `runs` of `pick(run)[l]` (empty without runs).
pub(super) fn per_layer_gm<R>(runs: &[&R], pick: fn(&R) -> &Vec<f64>) -> Vec<f64> {
    let len = runs.first().map_or(0, |r| pick(r).len());
    (0..len)
        .map(|l| geometric_mean(runs.iter().map(|r| pick(r)[l])))
        .collect()
}

/// Whether each run of a (pair, warm-up) succeeded: no divergence and ≥ 99% exact
/// accuracy at the end.
pub(super) fn successes(runs: &[SweepRun], p: Placement, n: NormKind, warmup: usize) -> Vec<bool> {
    runs.iter()
        .filter(|r| r.placement == p && r.norm == n && r.warmup == warmup)
        .map(|r| !r.diverged && r.final_exact_accuracy >= 0.99)
        .collect()
}

/// (successes, runs) of a (pair, warm-up); see [`successes`].
pub(super) fn success_rate(
    runs: &[SweepRun],
    p: Placement,
    n: NormKind,
    warmup: usize,
) -> (usize, usize) {
    let group = successes(runs, p, n, warmup);
    (group.iter().filter(|&&ok| ok).count(), group.len())
}

/// Every claim the demo checks, in report order: Xiong et al. (Theorem 1, Fig. 3,
/// Lemma 2, §3.2), Peri-LN, Wortsman et al., DeepNet.
pub fn evaluate_claims(report: &DemoReport) -> Vec<Claim> {
    let mut claims = super::xiong::claims(report);
    claims.extend(super::peri_ln::claims(report));
    claims.extend(super::wortsman::claims(report));
    claims.extend(super::deepnet::claims(report));
    claims
}

/// The claims as a Markdown table, then the notes of those that carry one.
pub fn claims_table(claims: &[Claim]) -> String {
    let mut s = String::from(
        "| # | claim | source | setting | measured | reproduced |\n|---|---|---|---|---|---|\n",
    );
    for (i, c) in claims.iter().enumerate() {
        let mark = if c.reproduced { "yes" } else { "**no**" };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {mark} |",
            i + 1,
            c.statement,
            c.source,
            c.setting,
            c.measured
        );
    }
    let notes: Vec<String> = claims
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.note.is_empty())
        .map(|(i, c)| format!("- **{}.** {}", i + 1, c.note))
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(s, "\nNotes:\n\n{}", notes.join("\n"));
    }
    s
}
