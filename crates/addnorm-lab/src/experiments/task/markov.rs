//! The Markov language: a fixed second-order chain over the symbols.
//!
//! ```text
//! s₁, s₂ uniform; s_t ~ P(· | s_{t−2}, s_{t−1})
//! P: each context has 4 successors with probabilities 8/15, 4/15, 2/15, 1/15, drawn once
//!    from a generator seeded by the symbol count
//! entropy per symbol  −Σ pᵢ ln pᵢ ≈ 1.1369 nats
//! ```
//!
//! # Shapes
//! A sequence is `[BOS, s₁ … s_len]`, `len + 1` ids.

use super::tokens::{BOS, FIRST_SYMBOL};
use crate::stats::rng::{SplitMix64, stream_seed};

/// A fixed second-order Markov chain over the symbols: every context (a, b) has four
/// distinct successors, drawn once from a generator seeded by the symbol count, with
/// probabilities 8/15, 4/15, 2/15 and 1/15.
#[derive(Clone, Debug, PartialEq)]
pub struct MarkovLanguage {
    symbols: usize,
    /// `successors[a * symbols + b]`: the successors of context (a, b), most likely first.
    successors: Vec<[usize; 4]>,
}

/// The successor probabilities × 15, most likely first.
const SUCCESSOR_WEIGHTS: [u64; 4] = [8, 4, 2, 1];

impl MarkovLanguage {
    /// The language over `symbols` symbols (at least 4, so that successors are distinct).
    ///
    /// # Panics
    /// If `symbols < 4`.
    pub fn new(symbols: usize) -> Self {
        assert!(
            symbols >= 4,
            "the Markov language needs at least 4 symbols, got {symbols}"
        );
        let mut rng = SplitMix64::new(stream_seed(0x4D41_524B_4F56, symbols as u64));
        let successors = (0..symbols * symbols)
            .map(|_| {
                let mut next = [usize::MAX; 4];
                for i in 0..4 {
                    next[i] = loop {
                        let s = rng.below(symbols as u64) as usize;
                        if !next[..i].contains(&s) {
                            break s;
                        }
                    };
                }
                next
            })
            .collect();
        Self {
            symbols,
            successors,
        }
    }

    /// The entropy of the next symbol given its context, in nats (the same for every
    /// context): −Σ pᵢ ln pᵢ over 8/15, 4/15, 2/15, 1/15 ≈ 1.1369.
    pub fn entropy(&self) -> f64 {
        SUCCESSOR_WEIGHTS
            .iter()
            .map(|&w| {
                let p = w as f64 / 15.0;
                -p * p.ln()
            })
            .sum()
    }

    /// The distribution of each of the first `len` symbols, marginalized over everything
    /// before it (s₁ and s₂ uniform, then the chain): `len` rows of `symbols` values.
    pub fn position_marginals(&self, len: usize) -> Vec<Vec<f64>> {
        let n = self.symbols;
        let mut pairs = vec![1.0 / (n * n) as f64; n * n];
        let mut marginals = vec![vec![1.0 / n as f64; n]; len.min(2)];
        for _ in 2..len {
            let mut next = vec![0.0; n * n];
            for (ab, &p) in pairs.iter().enumerate() {
                let b = ab % n;
                for (&c, w) in self.successors[ab].iter().zip(SUCCESSOR_WEIGHTS) {
                    next[b * n + c] += p * w as f64 / 15.0;
                }
            }
            let mut marginal = vec![0.0; n];
            for (bc, &p) in next.iter().enumerate() {
                marginal[bc % n] += p;
            }
            marginals.push(marginal);
            pairs = next;
        }
        marginals
    }

    /// P(c | a, b) for symbol indices (0-based, not token ids).
    pub fn probability(&self, a: usize, b: usize, c: usize) -> f64 {
        self.successors[a * self.symbols + b]
            .iter()
            .zip(SUCCESSOR_WEIGHTS)
            .find(|(s, _)| **s == c)
            .map_or(0.0, |(_, w)| w as f64 / 15.0)
    }

    /// `[BOS, s₁ … s_{len}]` as token ids.
    pub fn sequence(&self, len: usize, rng: &mut SplitMix64) -> Vec<i64> {
        let mut s: Vec<usize> = Vec::with_capacity(len);
        for t in 0..len {
            let next = if t < 2 {
                rng.below(self.symbols as u64) as usize
            } else {
                let draw = rng.below(15);
                let mut cumulative = 0;
                let options = self.successors[s[t - 2] * self.symbols + s[t - 1]];
                let i = SUCCESSOR_WEIGHTS
                    .iter()
                    .position(|&w| {
                        cumulative += w;
                        draw < cumulative
                    })
                    .unwrap_or(3);
                options[i]
            };
            s.push(next);
        }
        std::iter::once(BOS)
            .chain(s.into_iter().map(|x| FIRST_SYMBOL + x as i64))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::task::{Task, TaskKind};
    #[test]
    fn the_markov_language_is_fixed_and_follows_its_chain() {
        let task = Task::new(TaskKind::Markov, 8, 10);
        let language = task.language().expect("markov");
        assert_eq!(language, MarkovLanguage::new(10));
        for a in 0..10 {
            for b in 0..10 {
                let total: f64 = (0..10).map(|c| language.probability(a, b, c)).sum();
                assert!((total - 1.0).abs() < 1e-12);
            }
        }
        let batch = task.training_batch(4, 0, 200);
        assert_eq!(batch.seq_len, 17);
        assert!(batch.mask.iter().all(|&m| m == 1.0));
        // Every transition after the first two symbols has a positive probability, and
        // the empirical log-likelihood matches the entropy floor.
        let mut nll = 0.0;
        let mut count = 0;
        for row in 0..200 {
            let seq: Vec<usize> = batch.targets[row * 17..(row + 1) * 17]
                .iter()
                .map(|&t| (t - FIRST_SYMBOL) as usize)
                .collect();
            for t in 2..17 {
                let p = language.probability(seq[t - 2], seq[t - 1], seq[t]);
                assert!(p > 0.0, "impossible transition at {t}");
                nll -= p.ln();
                count += 1;
            }
        }
        let empirical = nll / count as f64;
        assert!((empirical - language.entropy()).abs() < 0.05, "{empirical}");
        assert!((language.entropy() - 1.136_917).abs() < 1e-6);
        let floor = task.entropy_floor();
        assert!(
            floor > language.entropy() && floor < (10f64).ln(),
            "{floor}"
        );
        // Without context a model can do no better than each position's marginal: above
        // the floor, at most ln(symbols); the empirical symbol frequencies agree.
        let context_free = task.context_free_loss().expect("markov");
        assert!(context_free > floor + 0.5 && context_free <= (10f64).ln() + 1e-12);
        let marginals = language.position_marginals(17);
        assert!(
            marginals
                .iter()
                .all(|m| (m.iter().sum::<f64>() - 1.0).abs() < 1e-12)
        );
        let last: Vec<f64> = (0..10)
            .map(|c| {
                (0..200)
                    .filter(|r| batch.targets[r * 17 + 16] == FIRST_SYMBOL + c)
                    .count() as f64
                    / 200.0
            })
            .collect();
        for (p, q) in marginals[16].iter().zip(&last) {
            assert!((p - q).abs() < 0.09, "{p} vs {q}");
        }
    }
}
