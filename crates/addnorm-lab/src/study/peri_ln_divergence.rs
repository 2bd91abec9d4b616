//! Peri-LN's divergence count against the LR (Kim et al. 2025, "convergence stability"),
//! from B's no-warm-up runs at B's LR and the divergence grid's runs above it; emitted only
//! when the grid ran (`--full`).
//!
//! ```text
//! grid        η ∈ {B's LR} ∪ divergence_learning_rates, no warm-up, B's model and steps
//! per seed    d_p(s) = #{η : placement p diverged at η for seed s}
//! statistic   mean over seeds of d_Pre(s) − d_Peri(s), seed bootstrap; beside it each
//!             (placement, η)'s divergence rate with its exact (Clopper–Pearson) interval
//! ```
//!
//! Diverged: the run stopped on a non-finite loss or gradient. The rule is the registry's.
//!
//! # Shapes
//! Not applicable: statistics over run summaries.

use addnorm::nn::Placement;

use super::claim::Measurement;
use super::measures::show_rate;
use super::record::DemoReport;
use crate::experiments::sweep::SweepRun;
use crate::stats::sample::{bootstrap, mean};

/// The LRs of the count: B's, then the grid's.
fn learning_rates(report: &DemoReport) -> Vec<f64> {
    std::iter::once(report.config.learning_rate)
        .chain(report.config.divergence_learning_rates.iter().copied())
        .collect()
}

/// The runs of `p` at `lr` without warm-up, in seed order: B's at B's LR, else the grid's.
fn runs_at(report: &DemoReport, p: Placement, lr: f64) -> Vec<&SweepRun> {
    if lr == report.config.learning_rate {
        return super::peri_ln::runs_of(report, p);
    }
    let mut runs: Vec<&SweepRun> = report
        .divergence_grid
        .iter()
        .filter(|r| r.placement == p && r.learning_rate == lr)
        .collect();
    runs.sort_by_key(|r| r.seed);
    runs
}

/// d_p(s) for every seed, in seed order.
fn divergences(report: &DemoReport, p: Placement) -> Vec<f64> {
    let mut counts = vec![0.0; report.config.seeds.len()];
    for lr in learning_rates(report) {
        for (count, run) in counts.iter_mut().zip(runs_at(report, p, lr)) {
            *count += f64::from(u8::from(run.diverged));
        }
    }
    counts
}

/// Each LR's divergence rates, Pre-LN then Peri-LN, in words.
fn rates(report: &DemoReport) -> String {
    learning_rates(report)
        .into_iter()
        .map(|lr| {
            let rate = |p| {
                let runs = runs_at(report, p, lr);
                show_rate((runs.iter().filter(|r| r.diverged).count(), runs.len()))
            };
            format!(
                "LR {lr:e}: Pre {}, Peri {}",
                rate(Placement::Pre),
                rate(Placement::Peri)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The divergence-count claim, if the grid ran.
pub(super) fn claims(report: &DemoReport) -> Vec<Measurement> {
    if report.divergence_grid.is_empty() {
        return vec![];
    }
    let (pre, peri) = (
        divergences(report, Placement::Pre),
        divergences(report, Placement::Peri),
    );
    let differences: Vec<f64> = pre.iter().zip(&peri).map(|(a, b)| a - b).collect();
    let estimate = bootstrap(&differences, 71, mean);
    let c = &report.config;
    vec![Measurement {
        id: "periln-divergence-vs-lr".into(),
        statement: "Peri-LN diverges at fewer LRs than Pre-LN (per seed: LRs at which Pre-LN \
                    diverged minus those at which Peri-LN did)"
            .into(),
        setting: format!(
            "reverse task, depth {}, d = {}, no warm-up, LRs {:?}, {} steps, {} seeds",
            c.train_model.block().n_layers,
            c.train_model.block().d_model,
            learning_rates(report),
            c.steps,
            c.seeds.len()
        ),
        measured: format!(
            "mean divergences per seed: Pre {:.2}, Peri {:.2}; difference {} ({})",
            mean(&pre),
            mean(&peri),
            estimate.show(2),
            rates(report)
        ),
        estimate: Some(estimate),
        if_not: "Unexplained where either placement diverged; where neither did at any LR, \
                 the grid did not reach a divergent LR."
            .into(),
        caveat: "Diverged: the run stopped on a non-finite loss or gradient.".into(),
    }]
}
