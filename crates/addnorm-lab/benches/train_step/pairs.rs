//! `--pairs N`: the headline ratio torch / yours measured in alternated pairs, so that a
//! shared host's drift does not fall on one side; with `--against PATH`, the same pairs
//! against another build of this bench (its `--alone NAME`) instead of PyTorch, to measure
//! what a change bought.
//!
//! The main table times every model in PyTorch first and then every model in your loop, a
//! minute or more apart; on a noisy VM the host's speed moves 2× within minutes, and one
//! such run put d128 at 0.84× and the next at 1.24× with the same binaries. Here each
//! model runs `N` rounds of two child processes, PyTorch's (`torch_train_step.py --model
//! NAME`) and your loop's (`--alone NAME`), back to back, the first of the two alternating
//! by round. Each round gives one ratio `theirs_ms / yours_ms` of two neighbouring
//! measurements ("theirs": PyTorch's step, or the other build's).
//!
//! # Formula
//! For rounds `i = 1..N` with medians `t_i` (theirs) and `y_i` (yours), ms a step:
//!
//! ```text
//! ratio_i = t_i / y_i            above 1: yours (this build) is faster
//! shown:   median_i t_i, median_i y_i, median_i ratio_i, min_i and max_i ratio_i,
//!          #{i : ratio_i > 1}
//! ```
//!
//! # Shapes
//! One row per model; `N` pairs of scalars each.

/// One round's two medians, ms a step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pair {
    /// Their median step: PyTorch's, or the other build's.
    pub theirs_ms: f64,
    /// Your loop's median step.
    pub yours_ms: f64,
}

impl Pair {
    /// `theirs_ms / yours_ms`: above 1, this build is faster.
    pub fn ratio(self) -> f64 {
        self.theirs_ms / self.yours_ms
    }
}

/// Which of the two runs first in round `round` (0-based): theirs in even rounds, yours in
/// odd ones.
pub fn theirs_first(round: usize) -> bool {
    round.is_multiple_of(2)
}

/// `rounds` pairs for one model: `theirs()` and `yours()` each time one child process and
/// return its median step in ms (`theirs` `None` when it is not at hand, PyTorch missing,
/// which ends the rounds).
pub fn measure(
    rounds: usize,
    mut theirs: impl FnMut() -> Option<f64>,
    mut yours: impl FnMut() -> f64,
) -> Vec<Pair> {
    let mut pairs = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let (theirs_ms, yours_ms) = if theirs_first(round) {
            let t = theirs();
            (t, yours())
        } else {
            let y = yours();
            (theirs(), y)
        };
        let Some(theirs_ms) = theirs_ms else { break };
        pairs.push(Pair {
            theirs_ms,
            yours_ms,
        });
    }
    pairs
}

/// The median of `values` (the mean of the middle two for an even count); NaN if empty.
pub fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.into_iter().collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

/// The smallest and largest of `values` (infinities of the wrong sign if empty).
pub fn range(values: &[f64]) -> (f64, f64) {
    let low = values.iter().copied().fold(f64::INFINITY, f64::min);
    let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (low, high)
}

/// The table's header line, `theirs` naming the other column (`torch`, `other`).
pub fn header(theirs: &str) -> String {
    format!(
        "{:<22} {:>6} {:>11} {:>11} {:>12} {:>15} {:>12}",
        "model",
        "pairs",
        theirs,
        "your loop",
        format!("{theirs}/yours"),
        "min–max",
        "yours faster"
    )
}

/// One model's row of the table, or the line that says `theirs` was not at hand.
pub fn row(name: &str, theirs: &str, pairs: &[Pair]) -> String {
    if pairs.is_empty() {
        return format!("{name:<22} {:>6} ({theirs} is not at hand)", 0);
    }
    let ratios: Vec<f64> = pairs.iter().map(|p| p.ratio()).collect();
    let (low, high) = range(&ratios);
    let faster = ratios.iter().filter(|&&r| r > 1.0).count();
    format!(
        "{name:<22} {:>6} {:>8.2} ms {:>8.2} ms {:>11.2}× {:>15} {:>12}",
        pairs.len(),
        median(pairs.iter().map(|p| p.theirs_ms)),
        median(pairs.iter().map(|p| p.yours_ms)),
        median(ratios.iter().copied()),
        format!("{low:.2}–{high:.2}×"),
        format!("{faster} of {}", pairs.len()),
    )
}
