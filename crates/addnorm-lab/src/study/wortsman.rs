//! Wortsman et al. 2023's claims at toy scale (experiment C, [`crate::experiments::proxies`]).
//!
//! ```text
//! logit growth     r = peak max-attention-logit / its initial value, GM over seeds, at the
//!                  top LR: baseline r ≥ 100 (95% low), QK-layernorm r < 100 (95% high)
//! stable LR        η trains if no seed diverged and ℓ(η) ≤ ℓ_cf − 0.1·(ℓ_cf − ℓ_floor),
//!                  ℓ_cf the best context-free loss, ℓ_floor the language's entropy floor;
//!                  QK-layernorm's largest such η ≥ one grid step above the baseline's
//! sensitivity      S_baseline − S_qk > 0 (95% low), each S against its own
//!                  ℓ* (§2.2, crate::stats::sensitivity), seeds resampled in pairs
//! warm-up          S_qk − S_long-warm-up > 0 (95% low), both with QK-layernorm, warm-up
//!                  5% against `long_warmup` of the same total steps
//! z-loss           drift = |log Z_T − log Z_0| per seed (validation, no weight decay):
//!                  drift without − drift with z-loss > 0 (95% low)
//! ```
//!
//! # Shapes
//! Not applicable: statistics over run summaries.

use super::claim::Claim;
use super::record::DemoReport;
use crate::experiments::proxies::{ProxyRun, ProxyVariant};
use crate::experiments::sweep::loss_table;
use crate::stats::fit::geometric_mean;
use crate::stats::sample::{Estimate, bootstrap, mean};
use crate::stats::sensitivity::{LossTable, sensitivities};

const SOURCE: &str = "Wortsman et al. 2023";

/// The note on an LR-sensitivity claim that does not reproduce: nothing here measures why.
const ONE_SIZE: &str = "Unexplained: no measurement here accounts for it. The paper's \
                        Fig. 1 shows the gap growing with model size; this demo runs one toy \
                        size, and the size grid is not run yet.";

/// The runs of `variant` at `lr`, in seed order.
fn runs_of(report: &DemoReport, variant: ProxyVariant, lr: f64) -> Vec<&ProxyRun> {
    report
        .proxies
        .iter()
        .filter(|r| r.variant == variant && r.run.learning_rate == lr)
        .collect()
}

/// peak / initial max attention logit of one run.
fn growth(run: &ProxyRun) -> f64 {
    let initial = run
        .run
        .evaluations
        .first()
        .map_or(f64::NAN, |e| e.max_attention_logit);
    run.peak_attention_logit() / initial
}

/// The setting string of the LR-grid variants.
fn setting(report: &DemoReport) -> String {
    let c = &report.config.proxies;
    format!(
        "Markov language ({} symbols, {} positions), Pre-LN d = {}, {} layers, AdamW β₂ 0.95, \
         clip 1, independent decay {:e}, {} steps, {} seeds",
        c.task.symbols,
        c.task.seq_len(),
        c.model.block().d_model,
        c.model.block().n_layers,
        c.weight_decay,
        c.steps,
        c.seeds.len()
    )
}

/// Attention-logit growth without QK-layernorm, and its absence with it.
fn logit_growth(report: &DemoReport) -> Claim {
    let top = report
        .config
        .proxies
        .learning_rates
        .iter()
        .copied()
        .fold(f64::NAN, f64::max);
    let estimate = |v| {
        let g: Vec<f64> = runs_of(report, v, top).iter().map(|r| growth(r)).collect();
        bootstrap(&g, 23, |s| geometric_mean(s.iter().copied()))
    };
    let (base, qk) = (
        estimate(ProxyVariant::Baseline),
        estimate(ProxyVariant::QkLayernorm),
    );
    Claim {
        source: format!("{SOURCE}, §3.1.1, Figs. 1–2"),
        statement: "At a high LR the largest attention logit grows by orders of magnitude \
                    (≥ 100×) without QK-layernorm, and stays bounded (< 100×) with it"
            .into(),
        setting: format!("{}, LR {top:e}", setting(report)),
        measured: format!("growth ×{} without, ×{} with", base.show(0), qk.show(1)),
        estimate: Some(base),
        reproduced: base.low >= 100.0 && qk.high < 100.0,
        note: growth_note(base, qk, report.config.proxies.steps),
    }
}

/// Why QK-layernorm's logits may still grow past 100×: the norms' γ and β are learned.
fn growth_note(base: Estimate, qk: Estimate, steps: usize) -> String {
    if qk.high < 100.0 || base.low < 100.0 {
        return String::new();
    }
    format!(
        "QK-layernorm bounds each logit by its norms' learnable γ and β (|q̂·k̂| ≤ ‖q̂‖‖k̂‖ \
         with ‖q̂‖ ≤ ‖γ‖_∞·√d_head + ‖β‖), not by a constant: in {steps} steps they grew the \
         largest logit ×{:.0}, still {:.0}× below the baseline's ×{:.0}. The 100× bound is ours.",
        qk.value,
        base.value / qk.value,
        base.value
    )
}

/// The loss table of a variant.
fn table(report: &DemoReport, variant: ProxyVariant) -> LossTable {
    let c = &report.config.proxies;
    let runs: Vec<&crate::experiments::sweep::SweepRun> = report
        .proxies
        .iter()
        .filter(|r| r.variant == variant)
        .map(|r| &r.run)
        .collect();
    loss_table(&runs, &c.learning_rates, &c.seeds)
}

/// The index of the largest LR that trains, on the seed columns `seeds` (−1 if none).
fn largest_training_lr(table: &LossTable, seeds: &[usize], threshold: f64) -> f64 {
    let curve = table.curve(seeds);
    (0..curve.len())
        .filter(|&i| curve[i] <= threshold && !seeds.iter().any(|&s| table.diverged[i][s]))
        .max()
        .map_or(-1.0, |i| i as f64)
}

/// QK-layernorm moves the largest stable LR up, and lowers the LR sensitivity.
fn stability(report: &DemoReport) -> [Claim; 2] {
    let task = &report.config.proxies.task;
    let context_free = task.context_free_loss().unwrap_or(f64::NAN);
    let threshold = context_free - 0.1 * (context_free - task.entropy_floor());
    let (base, qk) = (
        table(report, ProxyVariant::Baseline),
        table(report, ProxyVariant::QkLayernorm),
    );
    let seeds = base.all_seeds();
    let lrs = &report.config.proxies.learning_rates;
    let steps = bootstrap(&seeds, 29, |s| {
        largest_training_lr(&qk, s, threshold) - largest_training_lr(&base, s, threshold)
    });
    let name = |t: &LossTable| {
        let i = largest_training_lr(t, &seeds, threshold);
        if i < 0.0 {
            "none".to_string()
        } else {
            format!("{:e}", lrs[i as usize])
        }
    };
    let difference = bootstrap(&seeds, 31, |s| {
        let scores = sensitivities(&[&base, &qk], s);
        scores[0] - scores[1]
    });
    let all = sensitivities(&[&base, &qk], &seeds);
    [
        Claim {
            source: format!("{SOURCE}, §3.1.1, Fig. 1"),
            statement: format!(
                "QK-layernorm raises the largest LR that trains by at least one grid step \
                 (trains: ℓ(η) ≤ {threshold:.3}, 10% of the way from the context-free loss \
                 {context_free:.3} to the floor {:.3})",
                task.entropy_floor()
            ),
            setting: setting(report),
            measured: format!(
                "largest: {} without, {} with; grid steps gained {}",
                name(&base),
                name(&qk),
                steps.show(1)
            ),
            estimate: Some(steps),
            reproduced: steps.value >= 1.0,
            note: String::new(),
        },
        Claim {
            source: format!("{SOURCE}, §3.1.1 and §2 (LR sensitivity)"),
            statement: "QK-layernorm lowers the LR sensitivity over 3e-4 … 3e-1 \
                        (each S against its own best LR, §2.2; S without − S with > 0, 95% \
                        interval above 0)"
                .into(),
            setting: setting(report),
            measured: format!(
                "S = {:.3} without, {:.3} with; difference {}",
                all[0],
                all[1],
                difference.show(3)
            ),
            estimate: Some(difference),
            reproduced: difference.low > 0.0,
            note: if difference.low > 0.0 {
                String::new()
            } else {
                ONE_SIZE.into()
            },
        },
    ]
}

/// A longer warm-up lowers the LR sensitivity (when the demo runs the long-warm-up
/// variant).
fn warm_up_sensitivity(report: &DemoReport) -> Option<Claim> {
    let c = &report.config.proxies;
    if c.long_warmup <= 0.0 {
        return None;
    }
    let (short, long) = (
        table(report, ProxyVariant::QkLayernorm),
        table(report, ProxyVariant::LongWarmup),
    );
    let seeds = short.all_seeds();
    let difference = bootstrap(&seeds, 43, |s| {
        let scores = sensitivities(&[&short, &long], s);
        scores[0] - scores[1]
    });
    let all = sensitivities(&[&short, &long], &seeds);
    Some(Claim {
        source: format!("{SOURCE}, §3.2.1, Fig. 5"),
        statement: "A longer warm-up lowers the LR sensitivity (both with QK-layernorm, the \
                    same total steps, each S against its own best LR, §2.2; S(short) − \
                    S(long) > 0, 95% interval above 0)"
            .into(),
        setting: format!(
            "{}, QK-layernorm, warm-up {:.0}% against {:.0}% of the steps",
            setting(report),
            100.0 * crate::experiments::proxies::ProxyConfig::WARMUP,
            100.0 * c.long_warmup
        ),
        measured: format!(
            "S = {:.3} with the short warm-up, {:.3} with the long one; difference {}",
            all[0],
            all[1],
            difference.show(3)
        ),
        estimate: Some(difference),
        reproduced: difference.low > 0.0,
        note: format!(
            "{}The paper reports the effect as clearest for its larger models (those not \
             stable at LR 3e-1 without a long warm-up); its warm-up lengths are in Fig. 5, \
             which could not be read here, so the 25% is ours.",
            if difference.low > 0.0 {
                String::new()
            } else {
                format!("{ONE_SIZE} ")
            }
        ),
    })
}

/// |log Z_T − log Z_0| of one run.
fn drift(run: &ProxyRun) -> f64 {
    let initial = run.run.evaluations.first().map_or(f64::NAN, |e| e.log_z);
    (run.final_log_z() - initial).abs()
}

/// Without weight decay log Z drifts; z-loss holds it.
fn z_loss(report: &DemoReport) -> Claim {
    let c = &report.config.proxies;
    let lr = c.z_loss_learning_rate;
    let without = runs_of(report, ProxyVariant::NoDecay, lr);
    let with = runs_of(report, ProxyVariant::NoDecayZLoss, lr);
    let pairs: Vec<(f64, f64)> = without
        .iter()
        .zip(&with)
        .map(|(a, b)| (drift(a), drift(b)))
        .collect();
    let difference = bootstrap(&pairs, 37, |s| {
        mean(&s.iter().map(|(a, b)| a - b).collect::<Vec<_>>())
    });
    let (drift_without, drift_with): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
    let reproduced = difference.low > 0.0;
    Claim {
        source: format!("{SOURCE}, §3.1.2, Fig. 4"),
        statement: format!(
            "Without weight decay the output log Z drifts; z-loss ({:e}) holds it \
             (drift without − with > 0, 95% interval above 0)",
            c.z_loss
        ),
        setting: format!(
            "{}, QK-layernorm, no weight decay, LR {lr:e}",
            setting(report)
        ),
        measured: format!(
            "drift of log Z {:.2} without, {:.2} with; difference {}",
            mean(&drift_without),
            mean(&drift_with),
            difference.show(2)
        ),
        estimate: Some(difference),
        reproduced,
        note: if reproduced {
            String::new()
        } else {
            "Wortsman et al. see the divergence over long training (10⁵ steps). In one \
             exploratory 3000-step run per variant (seed 0, the same LR; `--full` runs 3000 \
             steps on 10 seeds) log Z drifted from 3.5 to 5.9 without z-loss and to 5.4 with \
             it; a few hundred steps are too short for the drift."
                .into()
        },
    }
}

/// Every claim from Wortsman et al., in report order.
pub(super) fn claims(report: &DemoReport) -> Vec<Claim> {
    let mut claims = vec![logit_growth(report)];
    claims.extend(stability(report));
    claims.extend(warm_up_sensitivity(report));
    claims.push(z_loss(report));
    claims
}

/// The loss-vs-LR curves ℓ(η) of every LR-grid variant, for plots and tables.
pub(super) fn lr_curves(report: &DemoReport) -> Vec<(ProxyVariant, Vec<f64>)> {
    report
        .config
        .proxies
        .grid_variants()
        .into_iter()
        .map(|v| {
            let t = table(report, v);
            (v, t.curve(&t.all_seeds()))
        })
        .collect()
}
