//! Gemma 2's attention-logit soft cap as a control (Gemma Team 2024, §2), from C's softcap
//! runs: the baseline at the top LR with `c·tanh(S/c)` on every attention logit.
//!
//! ```text
//! m(s)        the largest attention logit of any layer at the run's last evaluation
//! statistic   max over seeds of m(s) / c, seed bootstrap of the max
//! ```
//!
//! The cap holds by construction in exact arithmetic (`|c·tanh(S/c)| < c`); the control
//! checks that the trained model keeps it in f32. The rule is the registry's.
//!
//! # Shapes
//! Not applicable: statistics over run summaries.

use super::claim::Measurement;
use super::record::DemoReport;
use crate::experiments::proxies::ProxyVariant;
use crate::stats::sample::bootstrap;

/// The control, when C ran the softcap variant.
pub(super) fn claims(report: &DemoReport) -> Vec<Measurement> {
    let c = &report.config.proxies;
    let finals: Vec<f64> = report
        .proxies
        .iter()
        .filter(|r| r.variant == ProxyVariant::SoftCap)
        .map(|r| {
            r.run.evaluations.last().map_or(f64::NAN, |e| {
                e.attention_logits.iter().copied().fold(f64::NAN, f64::max)
            })
        })
        .collect();
    if finals.is_empty() {
        return vec![];
    }
    let largest = |s: &[f64]| s.iter().copied().fold(f64::NAN, f64::max) / c.softcap;
    let estimate = bootstrap(&finals, 89, largest);
    let top = c.top_learning_rate();
    vec![Measurement {
        id: "gemma2-s2-softcap-bounds-logits-at-high-lr".into(),
        statement: format!(
            "With the attention logits soft-capped at c = {}, the trained model's logits stay \
             below c at the top LR (largest logit of any layer over c)",
            c.softcap
        ),
        setting: format!(
            "Markov language, Pre-LN d = {}, {} layers, no QK-norm, AdamW β₂ 0.95, clip 1, \
             independent decay {:e}, {} steps, LR {top:e}, {} seeds",
            c.model.block().d_model,
            c.model.block().n_layers,
            c.weight_decay,
            c.steps,
            c.seeds.len()
        ),
        measured: format!("largest logit / c {}", estimate.show(4)),
        estimate: Some(estimate),
        if_not: "In f32, tanh(S/c) rounds to exactly 1 once S/c passes about 9, so a \
                 saturated logit equals c and the strict bound fails by rounding, not by a \
                 defect of the cap."
            .into(),
        caveat: "A control: the cap holds by construction; Gemma 2 claims no stability effect \
                 for it."
            .into(),
    }]
}
