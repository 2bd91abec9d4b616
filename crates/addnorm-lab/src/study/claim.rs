//! A registered claim as the demo decides it: what a paper's file measured
//! ([`Measurement`]), joined with its registry entry into a [`Claim`] whose verdict the
//! registered rule gives on the measured interval; and the claims as Markdown.
//!
//! ```text
//! Measurement { id, statement, setting, measured, estimate, if_not, caveat }
//!   + registry[id] { kind, source, quote, statistic, rule }
//!   → Claim { …, verdict = rule.verdict(estimate's 95% interval) }
//! ```
//!
//! The paper files hold no thresholds: they compute the registered statistic and say in
//! words what was measured; the rule and so the verdict come from `claims.toml` alone.
//!
//! # Shapes
//! Not applicable: serialized records.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::registry::{ClaimKind, Registry};
use super::verdict::{Rule, Verdict};
use crate::stats::sample::Estimate;

/// What a paper's file measured for one registered claim.
#[derive(Clone, Debug, PartialEq)]
pub struct Measurement {
    /// The registry id of the claim.
    pub id: String,
    /// The claim in words.
    pub statement: String,
    /// The setting it was measured in (model, data, seeds).
    pub setting: String,
    /// What was measured, in words, with intervals.
    pub measured: String,
    /// The registered statistic with its 95% interval (`None`: not measurable, inconclusive).
    pub estimate: Option<Estimate>,
    /// The note shown when the verdict is not `reproduced`: a pointer to a measurement that
    /// explains it, or "Unexplained".
    pub if_not: String,
    /// A note shown whatever the verdict (empty if none).
    pub caveat: String,
}

/// One registered claim, measured and decided.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Claim {
    /// The registry id.
    pub id: String,
    /// Published, extension or control.
    pub kind: ClaimKind,
    /// Paper, and figure, section or theorem.
    pub source: String,
    /// The paper's sentence the claim tests.
    pub quote: String,
    /// The claim in words.
    pub statement: String,
    /// The setting it was measured in.
    pub setting: String,
    /// The registered statistic.
    pub statistic: String,
    /// The registered rule.
    pub rule: Rule,
    /// What was measured, in words.
    pub measured: String,
    /// The statistic with its 95% interval.
    pub estimate: Option<Estimate>,
    /// The rule read against the interval.
    pub verdict: Verdict,
    /// Why it does not reproduce, or a caveat (empty if none).
    pub note: String,
}

impl Claim {
    /// Decides `m` by its registered rule.
    ///
    /// # Panics
    /// If `m.id` is not in `registry` (a test keeps every emitted id registered).
    pub fn decide(m: Measurement, registry: &Registry) -> Self {
        let entry = registry
            .get(&m.id)
            .unwrap_or_else(|| panic!("claim {:?} is not in claims.toml", m.id));
        let verdict = m
            .estimate
            .map_or(Verdict::Inconclusive, |e| entry.rule.verdict(&e));
        let note = match (verdict, m.caveat.is_empty()) {
            (Verdict::Reproduced, _) => m.caveat,
            (_, true) => m.if_not,
            (_, false) => format!("{} {}", m.if_not, m.caveat).trim().to_string(),
        };
        Self {
            id: m.id,
            kind: entry.kind,
            source: entry.source.clone(),
            quote: entry.quote.clone(),
            statement: m.statement,
            setting: m.setting,
            statistic: entry.statistic.clone(),
            rule: entry.rule,
            measured: m.measured,
            estimate: m.estimate,
            verdict,
            note,
        }
    }
}

/// How many claims of `kind` got each verdict: (reproduced, not reproduced, inconclusive).
pub fn verdict_counts(claims: &[Claim], kind: ClaimKind) -> (usize, usize, usize) {
    let of = |v: Verdict| {
        claims
            .iter()
            .filter(|c| c.kind == kind && c.verdict == v)
            .count()
    };
    (
        of(Verdict::Reproduced),
        of(Verdict::NotReproduced),
        of(Verdict::Inconclusive),
    )
}

/// The headline: verdicts counted by kind, e.g. "published 14 reproduced, 6 not
/// reproduced, 3 inconclusive of 23; extension …; control …".
pub fn headline(claims: &[Claim]) -> String {
    [
        (ClaimKind::Published, "published"),
        (ClaimKind::Extension, "extension"),
        (ClaimKind::Control, "control"),
    ]
    .iter()
    .filter_map(|&(kind, name)| {
        let (yes, no, open) = verdict_counts(claims, kind);
        let total = yes + no + open;
        (total > 0).then(|| {
            format!("{name} {yes} reproduced, {no} not reproduced, {open} inconclusive of {total}")
        })
    })
    .collect::<Vec<_>>()
    .join("; ")
}

/// The verdict as the table shows it (the misses in bold).
fn mark(verdict: Verdict) -> String {
    match verdict {
        Verdict::Reproduced => verdict.to_string(),
        _ => format!("**{verdict}**"),
    }
}

/// The claims in one short table (the README's): number, claim, kind, source, measured,
/// rule, verdict.
pub fn summary_table(claims: &[Claim]) -> String {
    let mut s = String::from(
        "| # | claim | kind | source | measured (95% interval) | rule | verdict |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for (i, c) in claims.iter().enumerate() {
        let _ = writeln!(
            s,
            "| {} | {} | {:?} | {} | {} | `{}` | {} |",
            i + 1,
            c.statement,
            c.kind,
            c.source,
            c.measured,
            c.rule,
            mark(c.verdict)
        );
    }
    s
}

/// The claims as a Markdown table, then the notes of those that carry one, then each
/// claim's registry entry (id, quote, statistic).
pub fn claims_table(claims: &[Claim]) -> String {
    let mut s = String::from(
        "| # | claim | kind | source | setting | measured (95% interval) | rule | verdict |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for (i, c) in claims.iter().enumerate() {
        let _ = writeln!(
            s,
            "| {} | {} | {:?} | {} | {} | {} | `{}` | {} |",
            i + 1,
            c.statement,
            c.kind,
            c.source,
            c.setting,
            c.measured,
            c.rule,
            mark(c.verdict)
        );
    }
    let notes: Vec<String> = claims
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.note.is_empty())
        .map(|(i, c)| format!("- **{}.** {}", i + 1, c.note))
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(s, "\nNotes:\n\n{}", notes.join("\n"));
    }
    let _ = writeln!(s, "\nThe registry's entries (`claims.toml`):\n");
    for (i, c) in claims.iter().enumerate() {
        let _ = writeln!(
            s,
            "- **{}. `{}`.** Statistic: {}. Quote: “{}”",
            i + 1,
            c.id,
            c.statistic.trim_end_matches('.'),
            c.quote
        );
    }
    s
}
