//! Toy sequence tasks, generated on the fly: reverse, copy and sort, each posed as a
//! decoder-only causal language-modelling problem, and a synthetic Markov language.
//!
//! ```text
//! sequence   [BOS, x₁ … xₙ, SEP, y₁ … yₙ]       xᵢ uniform over the symbols
//! reverse    yᵢ = x_{n+1−i}
//! copy       yᵢ = xᵢ
//! sort       y = sorted(x)
//! input      sequence[0 .. 2n+1]                 targets  sequence[1 .. 2n+2]
//! loss mask  1 where the target is some yᵢ (input positions n+1 … 2n), else 0
//!
//! markov     [BOS, s₁ … s_{2n+1}]   s₁, s₂ uniform; s_t ~ P(· | s_{t−2}, s_{t−1})
//!            P: a fixed second-order chain (one per symbol count), each context having
//!            4 successors with probabilities 8/15, 4/15, 2/15, 1/15
//!            loss mask 1 at every position (a loss at every position)
//! ```
//!
//! The Markov language has a loss at every position and its next token depends on the
//! previous one, so attention must look back one position. Its best achievable loss is
//! [`Task::entropy_floor`]. On reverse, copy and sort, one-hot attention *is* the
//! solution, so growing attention logits there are no sign of instability; on the Markov
//! language they are (Wortsman et al. 2023 use language modelling).
//!
//! Token ids: `PAD = 0`, `BOS = 1`, `SEP = 2`, symbols `3 … 3 + symbols − 1`.
//!
//! One concept per file: [`kind`] (what the answer is), [`spec`] (a [`Task`]: its sizes,
//! sequences, loss floors and seeded batches), [`tokens`] (the special ids), [`batch`] (a
//! batch and its tensors) and [`markov`] (the Markov language).
//!
//! # Shapes
//! A [`Batch`] of `b` sequences holds `inputs`, `targets` and `mask`, each `[b, 2n + 1]`.

pub mod batch;
pub mod kind;
pub mod markov;
pub mod spec;
pub mod tokens;

pub use batch::Batch;
pub use kind::TaskKind;
pub use markov::MarkovLanguage;
pub use spec::Task;
