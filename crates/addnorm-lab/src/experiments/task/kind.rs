//! Which transformation of the question a task's answer is, or the Markov language.
//!
//! ```text
//! reverse  yᵢ = x_{n+1−i}      copy  yᵢ = xᵢ      sort  y = sorted(x)
//! markov   no question: a loss at every position (super::markov)
//! ```
//!
//! # Shapes
//! Not applicable: names and an answer of `n` symbols.

use serde::{Deserialize, Serialize};

/// Which transformation of the input the model must produce.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[serde(rename_all = "lowercase")]
pub enum TaskKind {
    /// Output the input backwards.
    #[default]
    Reverse,
    /// Output the input as is.
    Copy,
    /// Output the input sorted ascending.
    Sort,
    /// Predict every next token of a fixed second-order Markov language.
    Markov,
}

impl TaskKind {
    /// Every task.
    pub const ALL: [TaskKind; 4] = [
        TaskKind::Reverse,
        TaskKind::Copy,
        TaskKind::Sort,
        TaskKind::Markov,
    ];

    /// The lower-case name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            TaskKind::Reverse => "reverse",
            TaskKind::Copy => "copy",
            TaskKind::Sort => "sort",
            TaskKind::Markov => "markov",
        }
    }

    /// Parses [`TaskKind::name`].
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|t| t.name() == name.to_ascii_lowercase())
    }

    /// The answer to the question `x`.
    pub(super) fn answer(self, x: &[i64]) -> Vec<i64> {
        match self {
            TaskKind::Reverse => x.iter().rev().copied().collect(),
            TaskKind::Copy => x.to_vec(),
            TaskKind::Markov => unreachable!("the Markov language has no question to answer"),
            TaskKind::Sort => {
                let mut y = x.to_vec();
                y.sort_unstable();
                y
            }
        }
    }
}
