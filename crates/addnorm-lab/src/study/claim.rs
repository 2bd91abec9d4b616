//! A published claim as the demo checks it ([`Claim`]), and the claims as a Markdown table.
//!
//! # Shapes
//! Not applicable: a serialized record.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::stats::sample::Estimate;

/// One published claim and what we measured.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Claim {
    /// Where the claim comes from: paper, and figure, theorem or section.
    pub source: String,
    /// The claim, with the verdict's rule.
    pub statement: String,
    /// The setting it was measured in (model, data, seeds).
    pub setting: String,
    /// What was measured, with its 95% interval.
    pub measured: String,
    /// The statistic the verdict reads, with its seed-bootstrap 95% interval.
    pub estimate: Option<Estimate>,
    /// Whether the measurement reproduces it.
    pub reproduced: bool,
    /// Why it does not reproduce, or a caveat (empty if none).
    pub note: String,
}

/// The claims as a Markdown table, then the notes of those that carry one.
pub fn claims_table(claims: &[Claim]) -> String {
    let mut s = String::from(
        "| # | claim | source | setting | measured | reproduced |\n|---|---|---|---|---|---|\n",
    );
    for (i, c) in claims.iter().enumerate() {
        let mark = if c.reproduced { "yes" } else { "**no**" };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {mark} |",
            i + 1,
            c.statement,
            c.source,
            c.setting,
            c.measured
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
    s
}
