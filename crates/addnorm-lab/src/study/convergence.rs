//! Convergence speed: Xiong et al.'s §4 (Pre-LN without warm-up reaches the target sooner
//! than Post-LN with warm-up, at the same peak LR) and ReZero's headline (ReZero converges
//! faster than the vanilla Transformer), from experiment B's runs.
//!
//! ```text
//! n(run)        steps to the target: the first evaluated step with ≥ 99% exact accuracy
//!               (the setting names B's evaluation cadence); a run that never reaches it
//!               (or diverges) counts the step budget S, a bound (censored)
//! ratio(a, b)   GM over seeds (paired) of n(a_seed) / n(b_seed), with its seed-bootstrap
//!               95% interval
//! ```
//!
//! Censoring keeps the bound's direction: if only `b` is censored, n(a)/S is an upper
//! bound of the pair's ratio (the true ratio is smaller); if only `a` is, S/n(b) is a
//! lower bound; a pair where neither reaches the target counts 1 (it says nothing). The
//! measured text names how many runs were censored.
//!
//! Seeds are paired: two configurations' runs of one seed share the initialization seed and
//! the batches. The rules are the registry's (`claims.toml`).
//!
//! # Shapes
//! Not applicable: statistics over run summaries.

use addnorm::nn::Placement;

use super::claim::Measurement;
use super::record::DemoReport;
use crate::experiments::norm_kind::NormKind;
use crate::experiments::sweep::SweepRun;
use crate::stats::fit::geometric_mean;
use crate::stats::sample::{Estimate, bootstrap};

/// One configuration of B: placement, norm and warm-up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Arm {
    placement: Placement,
    norm: NormKind,
    warmup: usize,
}

impl Arm {
    /// The arm's runs in seed order.
    fn runs<'a>(&self, report: &'a DemoReport) -> Vec<&'a SweepRun> {
        let mut runs: Vec<&SweepRun> = report
            .runs
            .iter()
            .filter(|r| r.placement == self.placement && r.norm == self.norm)
            .filter(|r| r.warmup == self.warmup)
            .collect();
        runs.sort_by_key(|r| r.seed);
        runs
    }

    /// "Post (Layer) with 100 warm-up steps".
    fn name(&self) -> String {
        let warmup = match self.warmup {
            0 => "without warm-up".to_string(),
            w => format!("with {w} warm-up steps"),
        };
        format!("{:?} ({:?}) {warmup}", self.placement, self.norm)
    }
}

/// Steps to 99% exact accuracy, or `None` when the run never got there.
fn reached(run: &SweepRun) -> Option<usize> {
    run.steps_to_99_exact.filter(|_| !run.diverged)
}

/// `n(a) / n(b)` for one seed, a censored run counting `budget` (1 when both are).
fn pair_ratio(na: Option<usize>, nb: Option<usize>, budget: f64) -> f64 {
    match (na, nb) {
        (None, None) => 1.0,
        _ => na.map_or(budget, |n| n as f64) / nb.map_or(budget, |n| n as f64),
    }
}

/// The paired ratio of steps to the target, `a` over `b`, and how many runs were
/// censored; `None` without a seed run in both arms.
fn steps_ratio(report: &DemoReport, a: Arm, b: Arm, seed: u64) -> Option<(Estimate, usize)> {
    let budget = report.config.steps as f64;
    let mut censored = 0;
    let ratios: Vec<f64> = a
        .runs(report)
        .into_iter()
        .filter_map(|ra| {
            let rb = b.runs(report).into_iter().find(|rb| rb.seed == ra.seed)?;
            let (na, nb) = (reached(ra), reached(rb));
            censored += usize::from(na.is_none()) + usize::from(nb.is_none());
            Some(pair_ratio(na, nb, budget))
        })
        .collect();
    (!ratios.is_empty()).then(|| {
        (
            bootstrap(&ratios, seed, |s| geometric_mean(s.iter().copied())),
            censored,
        )
    })
}

/// The warm-up B runs with (its longest), if any.
fn warmup(report: &DemoReport) -> Option<usize> {
    report
        .config
        .warmups
        .iter()
        .copied()
        .filter(|&w| w > 0)
        .max()
}

/// One steps-to-target comparison as a measurement.
fn measure(
    report: &DemoReport,
    id: &str,
    statement: &str,
    arms: Option<(Arm, Arm)>,
    seed: u64,
) -> Measurement {
    let c = &report.config;
    let ratio = arms.and_then(|(a, b)| steps_ratio(report, a, b, seed));
    let measured = match (arms, ratio) {
        (Some((a, b)), Some((e, censored))) => format!(
            "steps to 99% exact, {} over {}: ratio {} ({censored} of {} runs never reached it \
             in the {steps} steps and count {steps}, a bound)",
            a.name(),
            b.name(),
            e.show(2),
            2 * a.runs(report).len(),
            steps = c.steps,
        ),
        (Some((a, b)), None) => format!("no runs of {} and {} to compare", a.name(), b.name()),
        (None, _) => "no run with warm-up to compare against".into(),
    };
    Measurement {
        id: id.into(),
        statement: statement.into(),
        setting: format!(
            "reverse task, depth {}, d = {}, peak LR {:e} for both, {} steps, evaluated every \
             {} steps, {} seeds",
            c.train_model.block().n_layers,
            c.train_model.block().d_model,
            c.learning_rate,
            c.steps,
            report.runs.first().map_or(0, eval_every),
            c.seeds.len()
        ),
        measured,
        estimate: ratio.map(|(e, _)| e),
        if_not: "Unexplained: no run here measures why.".into(),
        caveat: arms.map_or(String::new(), |(a, b)| warmup_share(c.steps, a, b)),
    }
}

/// The caveat when one arm warms up: the warm-up's share of the run, which is larger here
/// than in the papers' runs of tens of thousands of steps and so favours the arm without.
fn warmup_share(steps: usize, a: Arm, b: Arm) -> String {
    match a.warmup.max(b.warmup) {
        0 => String::new(),
        w => format!(
            "The warm-up is {w} of the {steps} steps here, a larger share of the run than in \
             the papers' long runs, which favours the arm without it."
        ),
    }
}

/// The evaluation cadence of a run (0 with fewer than two evaluations).
fn eval_every(run: &SweepRun) -> usize {
    match run.evaluations.as_slice() {
        [first, second, ..] => second.step - first.step,
        _ => 0,
    }
}

/// The convergence-speed claims, in report order: Xiong §4, ReZero against the vanilla
/// Transformer, ReZero against Pre-LN.
pub(super) fn claims(report: &DemoReport) -> Vec<Measurement> {
    let arm = |placement, norm, warmup| Arm {
        placement,
        norm,
        warmup,
    };
    let pre = arm(Placement::Pre, NormKind::Layer, 0);
    let rezero = arm(Placement::ReZero, NormKind::Identity, 0);
    let post_warm = warmup(report).map(|w| arm(Placement::Post, NormKind::Layer, w));
    vec![
        measure(
            report,
            "xiong-s4-preln-faster-than-postln",
            "Pre-LN without warm-up reaches 99% exact accuracy in fewer steps than Post-LN \
             with warm-up, at the same peak LR (steps ratio, Pre over Post)",
            post_warm.map(|post| (pre, post)),
            61,
        ),
        measure(
            report,
            "rezero-converges-faster-than-vanilla",
            "ReZero reaches 99% exact accuracy in fewer steps than the vanilla Transformer \
             (Post-LN with warm-up) (steps ratio, ReZero over Post-LN)",
            post_warm.map(|post| (rezero, post)),
            67,
        ),
        measure(
            report,
            "ext-rezero-converges-faster-than-preln",
            "ReZero reaches 99% exact accuracy in fewer steps than Pre-LN, both without \
             warm-up (steps ratio, ReZero over Pre-LN)",
            Some((rezero, pre)),
            71,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::pair_ratio;

    #[test]
    fn a_censored_run_counts_the_budget_as_a_bound() {
        assert_eq!(pair_ratio(Some(50), Some(200), 250.0), 0.25);
        // b never got there: 50/250 is an upper bound of the true ratio.
        assert_eq!(pair_ratio(Some(50), None, 250.0), 0.2);
        // a never got there: 250/125 is a lower bound.
        assert_eq!(pair_ratio(None, Some(125), 250.0), 2.0);
        assert_eq!(pair_ratio(None, None, 250.0), 1.0);
    }
}
