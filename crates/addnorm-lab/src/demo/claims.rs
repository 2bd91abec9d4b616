//! The published claims the demo checks, and the statistics behind each verdict.
//!
//! ```text
//! Theorem 1 (Xiong et al. 2020)   log-log slope of ‖∂L/∂W₂^{(L)}‖_F against depth:
//!                                  Post ≈ 0, Pre ≈ −0.5
//! Fig. 3                          per-layer gradient profile: Post grows with the layer,
//!                                  Pre stays flat
//! Lemma 2                         Pre-LN residual growth: 1 + l/2 ≤ E‖x_l‖²/d ≤ 1 + 3l/2
//! §3.2                            Post-LN needs warm-up at a high LR; Pre-LN does not
//! geometric mean                  GM(v) = exp(mean(ln vᵢ)) over the positive vᵢ
//! ```
//!
//! # Shapes
//! Not applicable: statistics over run summaries.

use std::fmt::Write as _;

use addnorm::nn::Placement;
use serde::{Deserialize, Serialize};

use super::config::DemoConfig;
use crate::grid::NormKind;
use crate::probe::{ProbeReport, ProbeResult};
use crate::sweep::SweepRun;

/// One published claim and what we measured.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Claim {
    /// Where the claim comes from.
    pub source: String,
    /// The claim.
    pub statement: String,
    /// What was measured.
    pub measured: String,
    /// Whether the measurement reproduces it.
    pub reproduced: bool,
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
    if runs.is_empty() {
        return vec![];
    }
    let len = pick(runs[0]).len();
    (0..len)
        .map(|l| geometric_mean(runs.iter().map(|r| pick(r)[l])))
        .collect()
}

/// Fraction of runs of a (pair, warm-up) that reach ≥ 99% exact accuracy.
pub(super) fn success_rate(
    runs: &[SweepRun],
    p: Placement,
    n: NormKind,
    warmup: usize,
) -> (usize, usize) {
    let group: Vec<&SweepRun> = runs
        .iter()
        .filter(|r| r.placement == p && r.norm == n && r.warmup == warmup)
        .collect();
    let ok = group
        .iter()
        .filter(|r| !r.diverged && r.final_exact_accuracy >= 0.99)
        .count();
    (ok, group.len())
}

/// Theorem 1: the last layer's gradient against depth, as a log-log slope.
fn theorem_1(config: &DemoConfig, probe: &ProbeReport) -> [Claim; 2] {
    let slope = |p| probe.slope(p, NormKind::Layer).unwrap_or(f64::NAN);
    let (post, pre) = (slope(Placement::Post), slope(Placement::Pre));
    [
        Claim {
            source: "Xiong et al. 2020, Theorem 1".into(),
            statement:
                "Post-LN: the last layer's ‖∂L/∂W₂‖ does not shrink with depth (log-log slope ≈ 0)"
                    .into(),
            measured: format!("slope {post:.2} over L = {:?}", config.probe.depths),
            reproduced: post.abs() <= 0.25,
        },
        Claim {
            source: "Xiong et al. 2020, Theorem 1".into(),
            statement: "Pre-LN: the last layer's ‖∂L/∂W₂‖ scales as 1/√L (slope ≈ −0.5)".into(),
            measured: format!("slope {pre:.2}"),
            reproduced: (-0.75..=-0.3).contains(&pre),
        },
    ]
}

/// The trend from the input to the output: the mean of the last third of the layers over
/// the mean of the first third (single layers are noisy).
fn thirds_ratio(v: &[f64]) -> f64 {
    let third = (v.len() / 3).max(1);
    let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len().max(1) as f64;
    mean(&v[v.len() - third..]) / mean(&v[..third])
}

/// max / min over the layers.
fn spread(v: &[f64]) -> f64 {
    v.iter().copied().fold(0.0_f64, f64::max) / v.iter().copied().fold(f64::INFINITY, f64::min)
}

/// Fig. 3: the per-layer profiles of ‖∂L/∂W₂^(l)‖, at every probed depth.
fn figure_3(config: &DemoConfig, probe: &ProbeReport) -> [Claim; 2] {
    let profiles = |p| -> Vec<(usize, Vec<f64>)> {
        config
            .probe
            .depths
            .iter()
            .map(|&d| (d, profile(&probe.results, p, NormKind::Layer, d, w2)))
            .collect()
    };
    let post_profiles = profiles(Placement::Post);
    let pre_profiles = profiles(Placement::Pre);
    let listed = |v: &[(usize, Vec<f64>)], f: fn(&[f64]) -> f64| -> String {
        let parts: Vec<String> = v
            .iter()
            .map(|(d, p)| format!("{:.2} (L={d})", f(p)))
            .collect();
        parts.join(", ")
    };
    [
        Claim {
            source: "Xiong et al. 2020, Fig. 3".into(),
            statement: "Post-LN: ‖∂L/∂W₂^(l)‖ grows toward the output layer".into(),
            measured: format!(
                "last third / first third of layers: {}",
                listed(&post_profiles, thirds_ratio)
            ),
            reproduced: post_profiles.iter().all(|(_, p)| thirds_ratio(p) > 1.0),
        },
        Claim {
            source: "Xiong et al. 2020, Fig. 3".into(),
            statement: "Pre-LN: ‖∂L/∂W₂^(l)‖ is about the same at every layer (max/min ≤ 2)".into(),
            measured: format!("max/min over layers: {}", listed(&pre_profiles, spread)),
            reproduced: pre_profiles.iter().all(|(_, p)| spread(p) <= 2.0),
        },
    ]
}

/// Lemma 2: Pre-LN's residual growth at the deepest probed depth.
fn lemma_2(config: &DemoConfig, probe: &ProbeReport) -> Claim {
    let deepest = *config.probe.depths.last().unwrap_or(&1);
    let ms = profile(
        &probe.results,
        Placement::Pre,
        NormKind::Layer,
        deepest,
        |r| &r.residual_mean_square,
    );
    let inside = ms
        .iter()
        .enumerate()
        .skip(1)
        .filter(|&(l, &m)| (1.0 + l as f64 / 2.0..=1.0 + 1.5 * l as f64).contains(&m))
        .count();
    let layers = ms.len().saturating_sub(1).max(1);
    Claim {
        source: "Xiong et al. 2020, Lemma 2".into(),
        statement: "Pre-LN: 1 + l/2 ≤ E‖x_l‖²/d ≤ 1 + 3l/2".into(),
        measured: format!(
            "{inside}/{layers} layers inside the band at L = {deepest}; E‖x_L‖²/d = {:.1}",
            ms.last().copied().unwrap_or(f64::NAN)
        ),
        reproduced: inside as f64 >= 0.9 * layers as f64,
    }
}

/// §3.2 and its follow-ups: which models train at the high LR, with and without warm-up.
fn warm_up(config: &DemoConfig, runs: &[SweepRun]) -> Vec<Claim> {
    let lr = config.learning_rate;
    let (no_w, with_w) = (config.warmups[0], *config.warmups.last().unwrap_or(&0));
    let rate = |p, n, w| success_rate(runs, p, n, w);
    let (a, n1) = rate(Placement::Post, NormKind::Layer, no_w);
    let (b, n2) = rate(Placement::Post, NormKind::Layer, with_w);
    let mut claims = vec![Claim {
        source: "Xiong et al. 2020, §3.2 and Fig. 1".into(),
        statement: format!("Post-LN at LR {lr:e} fails without warm-up and trains with it"),
        measured: format!("≥99% exact: {a}/{n1} without warm-up, {b}/{n2} with {with_w} steps"),
        reproduced: 3 * a <= n1 && 3 * b >= 2 * n2,
    }];
    for (p, n, source, statement) in [
        (
            Placement::Pre,
            NormKind::Layer,
            "Xiong et al. 2020, §4",
            "Pre-LN trains at the same LR without warm-up",
        ),
        (
            Placement::Pre,
            NormKind::Rms,
            "Zhang & Sennrich 2019",
            "Pre-RMSNorm trains like Pre-LN, without warm-up",
        ),
        (
            Placement::Pre,
            NormKind::Dyt,
            "Zhu et al. 2025",
            "Pre-DyT trains like Pre-LN, without warm-up",
        ),
    ] {
        let (k, total) = rate(p, n, no_w);
        claims.push(Claim {
            source: source.into(),
            statement: format!("{statement} (LR {lr:e})"),
            measured: format!("≥99% exact without warm-up: {k}/{total}"),
            reproduced: 3 * k >= 2 * total,
        });
    }
    let (k, total) = rate(Placement::None, NormKind::Identity, no_w);
    let (kw, tw) = rate(Placement::None, NormKind::Identity, with_w);
    claims.push(Claim {
        source: "motivation of every norm".into(),
        statement: format!(
            "Without normalization, a {}-layer model does not train at LR {lr:e}",
            config.train_depth
        ),
        measured: format!("≥99% exact: {k}/{total} without warm-up, {kw}/{tw} with"),
        reproduced: 3 * (k + kw) <= total + tw,
    });
    claims
}

/// Every claim the demo checks, in report order: Theorem 1, Fig. 3, Lemma 2, warm-up.
pub fn evaluate_claims(config: &DemoConfig, probe: &ProbeReport, runs: &[SweepRun]) -> Vec<Claim> {
    let mut claims = vec![];
    claims.extend(theorem_1(config, probe));
    claims.extend(figure_3(config, probe));
    claims.push(lemma_2(config, probe));
    claims.extend(warm_up(config, runs));
    claims
}

/// The claims as a Markdown table.
pub fn claims_table(claims: &[Claim]) -> String {
    let mut s = String::from("| claim | source | measured | reproduced |\n|---|---|---|---|\n");
    for c in claims {
        let mark = if c.reproduced { "yes" } else { "**no**" };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {mark} |",
            c.statement, c.source, c.measured
        );
    }
    s
}
