//! What the papers' claims and the plots read from the runs: per-layer gradient profiles
//! (geometric means over seeds) and success rates of training runs.
//!
//! ```text
//! profile_l   GM over seeds of pick(run)[l]        GM(v) = exp(mean(ln vᵢ)), vᵢ > 0
//! trend       Spearman ρ(l, ln profile_l)          spread  max_l profile_l / min_l profile_l
//! success     no divergence and ≥ 99% exact accuracy at the end
//! rate        k successes of n runs, with the exact (Clopper–Pearson) 95% interval
//! ```
//!
//! # Shapes
//! A profile has one value per layer.

use addnorm::nn::Placement;

use crate::experiments::norm_kind::NormKind;
use crate::experiments::probe::ProbeResult;
use crate::experiments::sweep::SweepRun;
use crate::stats::binomial::clopper_pearson;
use crate::stats::fit::geometric_mean;
use crate::stats::sample::{Estimate, spearman};

/// The second feed-forward weight's gradient norms of a run.
pub fn w2(r: &ProbeResult) -> &Vec<f64> {
    &r.grad_norms.w_2
}

/// Per-layer profile of one weight's gradient norm at `depth`, geometric mean over seeds.
pub fn profile(
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
pub fn per_layer_gm<R>(runs: &[&R], pick: fn(&R) -> &Vec<f64>) -> Vec<f64> {
    let len = runs.first().map_or(0, |r| pick(r).len());
    (0..len)
        .map(|l| geometric_mean(runs.iter().map(|r| pick(r)[l])))
        .collect()
}

/// The runs of the seeds `sample`, in its order and with its repeats (a bootstrap
/// resample), that `keep(run, seed)` accepts for that seed.
pub fn runs_of_seeds<'a, R>(
    runs: &'a [R],
    sample: &[u64],
    keep: impl Fn(&R, u64) -> bool,
) -> Vec<&'a R> {
    let keep = &keep;
    sample
        .iter()
        .flat_map(|&s| runs.iter().filter(move |r| keep(r, s)))
        .collect()
}

/// Spearman ρ between the layer index and the log profile.
pub fn trend(profile: &[f64]) -> f64 {
    let layers: Vec<f64> = (1..=profile.len()).map(|l| l as f64).collect();
    let logs: Vec<f64> = profile.iter().map(|g| g.ln()).collect();
    spearman(&layers, &logs)
}

/// max / min of the profile over every layer.
pub fn spread(profile: &[f64]) -> f64 {
    let largest = profile.iter().copied().fold(0.0, f64::max);
    largest / profile.iter().copied().fold(f64::INFINITY, f64::min)
}

/// Whether a run succeeded: no divergence and ≥ 99% exact accuracy at the end.
pub fn succeeded(run: &SweepRun) -> bool {
    !run.diverged && run.final_exact_accuracy >= 0.99
}

/// Whether each run of a (pair, warm-up) [`succeeded`].
pub fn successes(runs: &[SweepRun], p: Placement, n: NormKind, warmup: usize) -> Vec<bool> {
    runs.iter()
        .filter(|r| r.placement == p && r.norm == n && r.warmup == warmup)
        .map(succeeded)
        .collect()
}

/// (successes, runs) of a (pair, warm-up); see [`successes`].
pub fn success_rate(runs: &[SweepRun], p: Placement, n: NormKind, warmup: usize) -> (usize, usize) {
    let group = successes(runs, p, n, warmup);
    (group.iter().filter(|&&ok| ok).count(), group.len())
}

/// The exact 95% interval of a (successes, runs) count; `None` without runs.
pub fn rate((k, n): (usize, usize)) -> Option<Estimate> {
    (n > 0).then(|| clopper_pearson(k, n, 0.05))
}

/// The success rate's words: "5/8 = 0.62 [0.24, 0.91]".
pub fn show_rate((k, n): (usize, usize)) -> String {
    rate((k, n)).map_or("no runs".into(), |e| format!("{k}/{n} = {}", e.show(2)))
}
