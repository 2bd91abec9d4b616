//! A task ([`Task`]): its kind, question length and symbol count, and what follows from
//! them: the vocabulary, the sequence layout, the scored positions, the best losses, and
//! its batches, drawn from seeded streams (step `s` of a run seeded with `seed` always
//! sees the same batch, so a resumed run sees the same data).
//!
//! ```text
//! sequence   [BOS, x₁ … xₙ, SEP, y₁ … yₙ]      (Markov: [BOS, s₁ … s_{2n+1}])
//! vocabulary symbols + 3 (PAD, BOS, SEP)      positions 2n + 1
//! stream     training step s: stream_seed(seed, s); validation: stream_seed(seed, u64::MAX)
//! ```
//!
//! # Shapes
//! A sequence has `2n + 2` ids; the model sees its first `2n + 1`.

use addnorm::nn::TransformerStackConfig;
use serde::{Deserialize, Serialize};

use super::batch::Batch;
use super::kind::TaskKind;
use super::markov::MarkovLanguage;
use super::tokens::{BOS, FIRST_SYMBOL, SEP};
use crate::stats::rng::{SplitMix64, stream_seed};

/// A task: its kind, sequence length n and number of distinct symbols.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    /// The transformation.
    pub kind: TaskKind,
    /// n, the number of symbols in the question (and in the answer).
    pub length: usize,
    /// The number of distinct symbols.
    pub symbols: usize,
}

impl Task {
    /// A task, or what is wrong with it: `length` and `symbols` must be at least 1, and
    /// the Markov language needs at least 4 symbols.
    ///
    /// # Errors
    /// The message names the bad value.
    pub fn try_new(kind: TaskKind, length: usize, symbols: usize) -> Result<Self, String> {
        if length == 0 || symbols == 0 {
            return Err(format!(
                "a task needs length ≥ 1 and symbols ≥ 1, got length {length} and symbols {symbols}"
            ));
        }
        if kind == TaskKind::Markov && symbols < 4 {
            return Err(format!(
                "the markov task needs --symbols ≥ 4 (four successors per context), got {symbols}"
            ));
        }
        Ok(Self {
            kind,
            length,
            symbols,
        })
    }

    /// A task; panics where [`Task::try_new`] returns an error.
    pub fn new(kind: TaskKind, length: usize, symbols: usize) -> Self {
        Self::try_new(kind, length, symbols).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The model's vocabulary size: the symbols plus PAD, BOS and SEP.
    pub fn vocab_size(&self) -> usize {
        self.symbols + FIRST_SYMBOL as usize
    }

    /// `model` with its vocabulary and maximum length fitted to this task.
    pub fn fit(&self, model: TransformerStackConfig) -> TransformerStackConfig {
        model
            .with_vocab_size(self.vocab_size())
            .with_max_seq_len(self.seq_len())
    }

    /// The number of input positions, 2n + 1.
    pub fn seq_len(&self) -> usize {
        2 * self.length + 1
    }

    /// The input positions whose target is scored: n + 1 … 2n (the answer), or every
    /// position 0 … 2n for the Markov language.
    pub fn answer_positions(&self) -> core::ops::RangeInclusive<usize> {
        match self.kind {
            TaskKind::Markov => 0..=2 * self.length,
            _ => self.length + 1..=2 * self.length,
        }
    }

    /// The Markov language of this symbol count (`None` for the other kinds).
    pub fn language(&self) -> Option<MarkovLanguage> {
        (self.kind == TaskKind::Markov).then(|| MarkovLanguage::new(self.symbols))
    }

    /// The lowest expected masked loss any model can reach, in nats: the Markov
    /// language's entropy per position (0 for the deterministic tasks, whose answers are
    /// fixed by the question).
    pub fn entropy_floor(&self) -> f64 {
        match self.language() {
            None => 0.0,
            Some(language) => {
                let positions = self.seq_len() as f64;
                let uniform = 2.0 * (self.symbols as f64).ln();
                (uniform + (positions - 2.0) * language.entropy()) / positions
            }
        }
    }

    /// The lowest expected masked loss of a model that ignores the context, in nats: the
    /// mean over positions of the entropy of each position's marginal (the Markov kind;
    /// `None` otherwise). A model above it has learned nothing from the context.
    pub fn context_free_loss(&self) -> Option<f64> {
        let language = self.language()?;
        let marginals = language.position_marginals(self.seq_len());
        let entropy =
            |m: &Vec<f64>| -> f64 { m.iter().filter(|&&p| p > 0.0).map(|&p| -p * p.ln()).sum() };
        Some(marginals.iter().map(entropy).sum::<f64>() / marginals.len() as f64)
    }

    /// One full sequence drawn from `rng`: `[BOS, x, SEP, y]`, or `[BOS, s₁ … s_{2n+1}]`
    /// from `language` for the Markov kind (built once per batch by the caller).
    fn sequence_with(&self, rng: &mut SplitMix64, language: Option<&MarkovLanguage>) -> Vec<i64> {
        match language {
            Some(language) => language.sequence(self.seq_len(), rng),
            None => self.question_and_answer(rng),
        }
    }

    /// One full sequence `[BOS, x, SEP, y]` drawn from `rng` (for the Markov kind,
    /// `[BOS, s₁ … s_{2n+1}]`).
    pub fn sequence(&self, rng: &mut SplitMix64) -> Vec<i64> {
        self.sequence_with(rng, self.language().as_ref())
    }

    /// `[BOS, x, SEP, y]` of a question-and-answer kind.
    fn question_and_answer(&self, rng: &mut SplitMix64) -> Vec<i64> {
        let x: Vec<i64> = (0..self.length)
            .map(|_| FIRST_SYMBOL + rng.below(self.symbols as u64) as i64)
            .collect();
        let mut seq = vec![BOS];
        seq.extend(&x);
        seq.push(SEP);
        seq.extend(self.kind.answer(&x));
        seq
    }
}

impl Task {
    /// `batch_size` sequences drawn from `rng`.
    pub fn batch(&self, batch_size: usize, rng: &mut SplitMix64) -> Batch {
        let seq_len = self.seq_len();
        let answers = self.answer_positions();
        let language = self.language();
        let mut batch = Batch {
            inputs: Vec::with_capacity(batch_size * seq_len),
            targets: Vec::with_capacity(batch_size * seq_len),
            mask: Vec::with_capacity(batch_size * seq_len),
            batch_size,
            seq_len,
        };
        for _ in 0..batch_size {
            let seq = self.sequence_with(rng, language.as_ref());
            batch.inputs.extend(&seq[..seq_len]);
            batch.targets.extend(&seq[1..]);
            batch
                .mask
                .extend((0..seq_len).map(|i| if answers.contains(&i) { 1.0 } else { 0.0 }));
        }
        batch
    }

    /// The training batch of step `step` of a run seeded with `seed`.
    pub fn training_batch(&self, seed: u64, step: usize, batch_size: usize) -> Batch {
        self.batch(
            batch_size,
            &mut SplitMix64::new(stream_seed(seed, step as u64)),
        )
    }

    /// The fixed validation set of a run seeded with `seed`: `size` sequences drawn from a
    /// stream no training step uses.
    pub fn validation_set(&self, seed: u64, size: usize) -> Batch {
        self.batch(size, &mut SplitMix64::new(stream_seed(seed, u64::MAX)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn sequences_follow_the_layout() {
        let mut rng = SplitMix64::new(3);
        for kind in [TaskKind::Reverse, TaskKind::Copy, TaskKind::Sort] {
            let task = Task::new(kind, 5, 7);
            let seq = task.sequence(&mut rng);
            assert_eq!(seq.len(), 12);
            assert_eq!((seq[0], seq[6]), (BOS, SEP));
            let (x, y) = (&seq[1..6], &seq[7..]);
            assert!(
                x.iter()
                    .all(|&s| (FIRST_SYMBOL..FIRST_SYMBOL + 7).contains(&s))
            );
            assert_eq!(y, kind.answer(x).as_slice(), "{kind:?}");
        }
        assert_eq!(TaskKind::Reverse.answer(&[3, 4, 5]), vec![5, 4, 3]);
        assert_eq!(TaskKind::Sort.answer(&[5, 3, 4]), vec![3, 4, 5]);
    }
}
