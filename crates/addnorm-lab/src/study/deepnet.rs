//! DeepNet's (Wang et al. 2022) Fig. 5 at toy scale (experiment D, [`crate::experiments::model_update`]).
//!
//! ```text
//! u(N)     GM over seeds of ‖ΔF‖ after the first step, at depth N
//! slope    of ln u(N) against ln N
//! Post-LN  the update explodes with depth: its slope
//! DeepNorm its update is smaller at every depth: the smallest u_Post(N) / u_DeepNorm(N),
//!          and it stays flat: its slope
//! SGD      the same two slopes with u(N) = GM over seeds of ‖ΔF‖/η after ONE plain SGD
//!          step at the smaller step length (crate::experiments::sgd_update), the analysis's
//!          setting
//! ```
//!
//! The rules are the registry's (`claims.toml`).
//!
//! # Shapes
//! Not applicable: statistics over run summaries.

use addnorm::nn::Placement;

use super::claim::Measurement;
use super::record::DemoReport;
use crate::experiments::model_update::ModelUpdateRun;
use crate::experiments::sgd_update::SgdUpdateRun;
use crate::stats::fit::geometric_mean;
use crate::stats::fit::log_log_slope;
use crate::stats::sample::{Estimate, bootstrap};

/// The note on a DeepNet claim that does not reproduce.
const UNEXPLAINED: &str = "Unexplained: no run here measures why.";

/// One seed's (depth, ‖ΔF‖) points.
type Points = Vec<(usize, f64)>;

/// Per seed of experiment D, the (depth, value) points `point` gives for that seed's runs
/// (`None` for a run of another seed or placement).
fn by_seed<R>(
    report: &DemoReport,
    runs: &[R],
    point: impl Fn(&R, u64) -> Option<(usize, f64)>,
) -> Vec<Points> {
    report
        .config
        .model_update
        .seeds
        .iter()
        .map(|&s| runs.iter().filter_map(|r| point(r, s)).collect())
        .collect()
}

/// Per seed, the (depth, first ‖ΔF‖) points of one placement.
fn per_seed(report: &DemoReport, placement: Placement) -> Vec<Points> {
    by_seed(report, &report.model_update, |r, s| {
        (r.seed == s && r.placement == placement).then(|| (r.depth, r.first()))
    })
}

/// (depth, GM over the seeds of `sample` of the first ‖ΔF‖), by depth.
pub(super) fn depth_profile(sample: &[Points]) -> Vec<(f64, f64)> {
    let mut depths: Vec<usize> = sample.iter().flatten().map(|p| p.0).collect();
    depths.sort_unstable();
    depths.dedup();
    depths
        .iter()
        .map(|&d| {
            let v = sample.iter().flatten().filter(|p| p.0 == d).map(|p| p.1);
            (d as f64, geometric_mean(v))
        })
        .collect()
}

/// Per seed, the (depth, ‖ΔF‖/η at the smallest η) points of one placement's SGD runs.
fn per_seed_sgd(report: &DemoReport, placement: Placement) -> Vec<Points> {
    by_seed(report, &report.sgd_update, |r, s| {
        (r.seed == s && r.placement == placement).then(|| (r.depth, r.at_smallest()))
    })
}

/// The log-log slope of the update against depth over the seeds' `points`, with its
/// interval.
fn slope_of(points: &[Points]) -> Estimate {
    bootstrap(points, 41, |s| log_log_slope(&depth_profile(s)))
}

/// The log-log slope of the first Adam update against depth, with its interval.
fn slope(report: &DemoReport, placement: Placement) -> Estimate {
    slope_of(&per_seed(report, placement))
}

/// The smallest ratio over depths of Post-LN's first update to DeepNorm's, seeds paired.
fn smallest_ratio(sample: &[(Points, Points)]) -> f64 {
    let post: Vec<Points> = sample.iter().map(|p| p.0.clone()).collect();
    let deep: Vec<Points> = sample.iter().map(|p| p.1.clone()).collect();
    depth_profile(&post)
        .iter()
        .zip(depth_profile(&deep))
        .map(|(a, b)| a.1 / b.1)
        .fold(f64::INFINITY, f64::min)
}

/// DeepNet Fig. 5: Post-LN's first model update explodes with depth; DeepNorm's is much
/// smaller and stays flat.
pub(super) fn claims(report: &DemoReport) -> Vec<Measurement> {
    let c = &report.config.model_update;
    let setting = format!(
        "reverse task, {}-{}-{} (d, d_ff, heads) models, N = {:?}, Adam (β₂ 0.98) at LR {:e} \
         without warm-up, ‖ΔF‖ after the first step, {} seeds",
        c.model.block().d_model,
        c.model.block().d_ff,
        c.model.block().n_heads,
        c.depths,
        c.learning_rate,
        c.seeds.len()
    );
    let (post, deep) = (
        slope(report, Placement::Post),
        slope(report, Placement::DeepNorm),
    );
    let paired: Vec<(Points, Points)> = per_seed(report, Placement::Post)
        .into_iter()
        .zip(per_seed(report, Placement::DeepNorm))
        .collect();
    let ratio = bootstrap(&paired, 43, smallest_ratio);
    vec![
        Measurement {
            id: "deepnet-fig5-postln-update-grows".into(),
            statement: "Post-LN: the model update at the start of training explodes with depth \
                        (log-log slope of ‖ΔF‖ against N)"
                .into(),
            setting: setting.clone(),
            measured: format!("slope {}", post.show(2)),
            estimate: Some(post),
            if_not: UNEXPLAINED.into(),
            caveat: String::new(),
        },
        Measurement {
            id: "deepnet-fig5-deepnorm-update-smaller".into(),
            statement: "DeepNorm's update is smaller than Post-LN's at every depth (the \
                        smallest Post/DeepNorm ratio)"
                .into(),
            setting: setting.clone(),
            measured: format!("smallest Post/DeepNorm ratio {}", ratio.show(1)),
            estimate: Some(ratio),
            if_not: UNEXPLAINED.into(),
            caveat: String::new(),
        },
        Measurement {
            id: "deepnet-fig5-deepnorm-update-flat-adam".into(),
            statement: "DeepNorm: the update stays flat with depth (log-log slope of ‖ΔF‖ \
                        against N)"
                .into(),
            setting,
            measured: format!("slope {}", deep.show(2)),
            estimate: Some(deep),
            if_not: "Unexplained: no run here measures why. DeepNet's analysis bounds the \
                     update for SGD-like steps; this claim takes Adam steps; the one-SGD-step \
                     claims beside it are in the analysis's setting."
                .into(),
            caveat: "DeepNet's own setting (IWSLT-14 encoder-decoders, its LR schedule and \
                     step) is not stated in enough detail to rerun here."
                .into(),
        },
    ]
}

/// The smallest and largest u(largest η) / u(smallest η) over `runs` (per cell, η grows
/// with the step length): 1 where the step is small enough for the analysis (η → 0).
fn linearity_range(runs: &[SgdUpdateRun]) -> (f64, f64) {
    runs.iter()
        .map(SgdUpdateRun::linearity)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), r| {
            (lo.min(r), hi.max(r))
        })
}

/// DeepNet §4.3 in its own setting: one plain SGD step. Post-LN's update grows with depth;
/// DeepNorm's stays flat.
pub(super) fn sgd_claims(report: &DemoReport) -> Vec<Measurement> {
    let c = &report.config.model_update;
    let setting = format!(
        "reverse task, {}-{}-{} (d, d_ff, heads) models, N = {:?}, ONE plain SGD step (no \
         momentum, clipping or decay) from the same θ₀ at η = s/‖∇L(θ₀)‖ for step lengths \
         s = {:?}, ‖ΔF‖/η at the smallest, {} seeds",
        c.model.block().d_model,
        c.model.block().d_ff,
        c.model.block().n_heads,
        c.depths,
        c.sgd_step_lengths,
        c.seeds.len()
    );
    let (lo, hi) = linearity_range(&report.sgd_update);
    let check = format!("u(larger s)/u(smaller s) from {lo:.3} to {hi:.3} over the cells");
    let measure = |placement, id: &str, statement: &str| {
        let estimate = slope_of(&per_seed_sgd(report, placement));
        Measurement {
            id: id.into(),
            statement: statement.into(),
            setting: setting.clone(),
            measured: format!("slope {}; {check}", estimate.show(2)),
            estimate: Some(estimate),
            if_not: UNEXPLAINED.into(),
            caveat: "The analysis is for an encoder-decoder at η → 0; the check above says how \
                     far from linear in η the step is."
                .into(),
        }
    };
    vec![
        measure(
            Placement::Post,
            "deepnet-s43-sgd-postln-update-grows",
            "Post-LN: after one SGD step the model update per unit step, ‖ΔF‖/η, grows \
             with depth (log-log slope against N)",
        ),
        measure(
            Placement::DeepNorm,
            "deepnet-s43-sgd-deepnorm-update-bounded",
            "DeepNorm: after one SGD step ‖ΔF‖/η stays bounded with depth (log-log slope \
             against N)",
        ),
    ]
}

/// The GM update after each step, per depth, of one placement (for plots).
pub(super) fn update_curves(report: &DemoReport, placement: Placement) -> Vec<(usize, Vec<f64>)> {
    let c = &report.config.model_update;
    c.depths
        .iter()
        .map(|&d| {
            let runs: Vec<&ModelUpdateRun> = report
                .model_update
                .iter()
                .filter(|r| r.placement == placement && r.depth == d)
                .collect();
            let curve = (0..c.steps)
                .map(|t| {
                    geometric_mean(
                        runs.iter()
                            .map(|r| r.updates.get(t).copied().unwrap_or(f64::NAN)),
                    )
                })
                .collect();
            (d, curve)
        })
        .collect()
}

/// Per placement, the (depth, GM first update) profile (for plots).
pub(super) fn last_update_profile(report: &DemoReport, placement: Placement) -> Vec<(f64, f64)> {
    depth_profile(&per_seed(report, placement))
}

/// Per depth, the GM over seeds of ‖ΔF‖/η at the `k`-th step length of one placement's
/// SGD runs (for plots).
pub(super) fn sgd_profile(report: &DemoReport, placement: Placement, k: usize) -> Vec<(f64, f64)> {
    report
        .config
        .model_update
        .depths
        .iter()
        .map(|&d| {
            let at = report
                .sgd_update
                .iter()
                .filter(|r| r.placement == placement && r.depth == d)
                .map(|r| r.updates.get(k).copied().unwrap_or(f64::NAN));
            (d as f64, geometric_mean(at))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Seeds whose updates follow c·N^k exactly give the slope k, with a point interval.
    #[test]
    fn a_power_law_gives_its_exponent() {
        let seeds: Vec<Points> = [1.0, 2.0, 0.5]
            .iter()
            .map(|&c| {
                [6, 12, 24, 48]
                    .iter()
                    .map(|&n| (n, c * (n as f64).powf(0.75)))
                    .collect()
            })
            .collect();
        let estimate = slope_of(&seeds);
        assert!((estimate.value - 0.75).abs() < 1e-9, "{estimate:?}");
        assert!((estimate.high - estimate.low).abs() < 1e-9, "{estimate:?}");
    }

    #[test]
    fn the_linearity_range_spans_every_cell() {
        let run = |u: Vec<f64>| SgdUpdateRun {
            placement: Placement::Post,
            depth: 6,
            seed: 0,
            gradient_norm: 1.0,
            learning_rates: vec![1e-3, 1e-4],
            updates: u,
        };
        let (lo, hi) = linearity_range(&[run(vec![1.1, 1.0]), run(vec![0.9, 1.0])]);
        assert!((lo - 0.9).abs() < 1e-12 && (hi - 1.1).abs() < 1e-12);
    }
}
