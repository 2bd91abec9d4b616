//! Issue 25's targets read from the pairs against PyTorch (`--pairs N`, [`super::pairs`]),
//! so that a run on a new machine says at once where it stands: each model no slower than
//! PyTorch, and the d128/T128 step in at most 0.7× PyTorch's time at half the f32 FMA peak
//! of the bench's threads or more.
//!
//! # Formula
//! For a model's pairs (ratios `r_i = t_i / y_i`, torch's median step over yours):
//!
//! ```text
//! no slower than PyTorch:   median_i r_i ≥ 1
//! d128 time:                1 / median_i r_i ≤ 0.7          (your time over torch's)
//! d128 share of the peak:   flops / median_i y_i / peak ≥ 50%
//! ```
//!
//! Each line gives the median and the pairs' range: on a shared host a median near a line
//! says less than its range does.
//!
//! # Shapes
//! A table: one line a model for the first target, then one a d128 target.

use super::pairs::{Pair, median, range};

/// The model whose step the two d128 targets are about.
pub const D128: &str = "d128 T128 (LayerNorm)";

/// The most of PyTorch's time the d128 step may take.
const D128_TIME: f64 = 0.7;

/// The least share of the peak the d128 step must reach.
const D128_PEAK: f64 = 0.5;

/// One model's pairs against PyTorch, with its step's floating-point operations.
pub struct Measured<'a> {
    /// The model's name, as the tables print it.
    pub name: &'a str,
    /// Its pairs (none when PyTorch was not at hand).
    pub pairs: &'a [Pair],
    /// Floating-point operations of one step (multiply-adds × 2).
    pub flops: f64,
}

/// "met" or "not met".
fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "not met" }
}

/// One line of the table: the target, the median, the pairs' range, the verdict.
fn line(target: &str, median: String, range: String, met: bool) -> String {
    columns(target, &median, &range, verdict(met))
}

/// The table's four columns, as wide as the header's.
fn columns(target: &str, median: &str, range: &str, verdict: &str) -> String {
    format!("{target:<58} {median:>8} {range:>13} {verdict:>8}")
}

/// The table of where the targets stand (a header, then a line a target), or nothing when
/// no model has pairs; `peak` in GFLOP/s (`None`: not measured on this CPU, and that line
/// says so). Models without pairs are left out; with no d128 pairs, its two lines are too.
pub fn lines(models: &[Measured<'_>], peak: Option<f64>) -> Vec<String> {
    let measured: Vec<&Measured<'_>> = models.iter().filter(|m| !m.pairs.is_empty()).collect();
    if measured.is_empty() {
        return vec![];
    }
    let ratios = |m: &Measured<'_>| m.pairs.iter().map(|p| p.ratio()).collect::<Vec<f64>>();
    let mut lines = vec![columns(
        "target (medians of the pairs; the verdict by the median)",
        "median",
        "range",
        "verdict",
    )];
    for m in &measured {
        let r = ratios(m);
        let ((low, high), mid) = (range(&r), median(r.iter().copied()));
        lines.push(line(
            &format!("{}: torch / yours at least 1", m.name),
            format!("{mid:.2}×"),
            format!("{low:.2}–{high:.2}×"),
            mid >= 1.0,
        ));
    }
    let Some(d128) = measured.iter().find(|m| m.name == D128) else {
        return lines;
    };
    let d128_ratios = ratios(d128);
    let times: Vec<f64> = d128_ratios.iter().map(|r| 1.0 / r).collect();
    let ((low, high), time) = (range(&times), 1.0 / median(d128_ratios));
    lines.push(line(
        &format!("{D128}: yours / torch at most {D128_TIME}"),
        format!("{time:.2}×"),
        format!("{low:.2}–{high:.2}×"),
        time <= D128_TIME,
    ));
    let yours_ms = median(d128.pairs.iter().map(|p| p.yours_ms));
    let share = |ms: f64, peak: f64| d128.flops / (ms * 1e-3) / (peak * 1e9);
    match peak {
        Some(peak) => {
            let (fast, slow) = range(&d128.pairs.iter().map(|p| p.yours_ms).collect::<Vec<_>>());
            let mid = share(yours_ms, peak);
            lines.push(line(
                &format!("{D128}: at least {:.0}% of the peak", 100.0 * D128_PEAK),
                format!("{:.1}%", 100.0 * mid),
                format!(
                    "{:.1}–{:.1}%",
                    100.0 * share(slow, peak),
                    100.0 * share(fast, peak)
                ),
                mid >= D128_PEAK,
            ));
            lines.push(format!(
                "  (the peak: {peak:.1} GFLOP/s on the bench's threads, measured; the step: \
                 {:.2} GFLOP of matrix products)",
                d128.flops * 1e-9
            ));
        }
        None => lines.push(format!(
            "{D128}: share of the peak not known (no peak measured on this CPU)"
        )),
    }
    lines
}
