//! DeepNet's (Wang et al. 2022) Fig. 5 at toy scale (experiment D, [`crate::experiments::model_update`]).
//!
//! ```text
//! u(N)     GM over seeds of ‖ΔF‖ after the first step, at depth N
//! slope    of ln u(N) against ln N
//! Post-LN  the update explodes with depth: its slope
//! DeepNorm its update is smaller at every depth: the smallest u_Post(N) / u_DeepNorm(N),
//!          and it stays flat: its slope
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
use crate::stats::fit::geometric_mean;
use crate::stats::fit::log_log_slope;
use crate::stats::sample::{Estimate, bootstrap};

/// The note on a DeepNet claim that does not reproduce.
const UNEXPLAINED: &str = "Unexplained: no run here measures why.";

/// One seed's (depth, ‖ΔF‖) points.
type Points = Vec<(usize, f64)>;

/// Per seed, the (depth, first ‖ΔF‖) points of one placement.
fn per_seed(report: &DemoReport, placement: Placement) -> Vec<Points> {
    report
        .config
        .model_update
        .seeds
        .iter()
        .map(|&s| {
            report
                .model_update
                .iter()
                .filter(|r| r.seed == s && r.placement == placement)
                .map(|r| (r.depth, r.first()))
                .collect()
        })
        .collect()
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

/// The log-log slope of the update against depth, with its interval.
fn slope(report: &DemoReport, placement: Placement) -> Estimate {
    bootstrap(&per_seed(report, placement), 41, |s| {
        log_log_slope(&depth_profile(s))
    })
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
                     update for SGD-like steps; the demo takes Adam steps, and the one-SGD-step \
                     run of its analysis is not done yet."
                .into(),
            caveat: "DeepNet's own setting (IWSLT-14 encoder-decoders, its LR schedule and \
                     step) is not stated in enough detail to rerun here."
                .into(),
        },
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
