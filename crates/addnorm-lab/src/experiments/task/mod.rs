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
//! # Shapes
//! A [`Batch`] of `b` sequences holds `inputs`, `targets` and `mask`, each `[b, 2n + 1]`.

use addnorm::nn::TransformerStackConfig;
use burn::tensor::{Int, Tensor, TensorData, backend::Backend};
use serde::{Deserialize, Serialize};

/// The beginning-of-sequence token.
pub const BOS: i64 = 1;
/// The separator between the question and the answer.
pub const SEP: i64 = 2;
/// The first symbol id; ids below it are special.
pub const FIRST_SYMBOL: i64 = 3;

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

    fn answer(self, x: &[i64]) -> Vec<i64> {
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

/// A SplitMix64 generator: small, seedable, and identical on every platform, so that a
/// seed names the same data everywhere.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Mixes a run seed with a stream id (a step number, or a tag), so that each training step
/// draws its batch independently of every other: a resumed run sees the same data.
pub fn stream_seed(seed: u64, stream: u64) -> u64 {
    SplitMix64::new(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03)).next_u64()
}

/// A batch of sequences; see the [module docs](self) for the layout.
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    /// Input token ids, row-major `[batch, seq]`.
    pub inputs: Vec<i64>,
    /// Next-token targets, `[batch, seq]`.
    pub targets: Vec<i64>,
    /// 1.0 where the target is part of the answer, `[batch, seq]`.
    pub mask: Vec<f32>,
    /// The number of sequences.
    pub batch_size: usize,
    /// The number of positions per sequence, 2n + 1.
    pub seq_len: usize,
}

impl Batch {
    /// The batch as tensors: `(inputs, targets, mask)`, each `[batch, seq]`.
    pub fn to_tensors<B: Backend>(
        &self,
        device: &B::Device,
    ) -> (Tensor<B, 2, Int>, Tensor<B, 2, Int>, Tensor<B, 2>) {
        let shape = [self.batch_size, self.seq_len];
        (
            Tensor::from_data(TensorData::new(self.inputs.clone(), shape), device),
            Tensor::from_data(TensorData::new(self.targets.clone(), shape), device),
            Tensor::from_data(TensorData::new(self.mask.clone(), shape), device),
        )
    }
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

    #[test]
    fn the_mask_covers_exactly_the_answer_targets() {
        let task = Task::new(TaskKind::Reverse, 4, 10);
        let batch = task.training_batch(1, 0, 2);
        assert_eq!(batch.seq_len, 9);
        for row in 0..2 {
            let r = row * 9..(row + 1) * 9;
            let masked: Vec<i64> = r
                .clone()
                .filter(|&i| batch.mask[i] == 1.0)
                .map(|i| batch.targets[i])
                .collect();
            let x = &batch.inputs[r.start + 1..r.start + 5];
            assert_eq!(masked, x.iter().rev().copied().collect::<Vec<_>>());
        }
    }

    #[test]
    fn batches_are_reproducible_per_step_and_validation_is_fixed() {
        let task = Task::new(TaskKind::Copy, 6, 8);
        assert_eq!(task.training_batch(9, 17, 4), task.training_batch(9, 17, 4));
        assert_ne!(task.training_batch(9, 17, 4), task.training_batch(9, 18, 4));
        assert_ne!(
            task.training_batch(9, 17, 4),
            task.training_batch(10, 17, 4)
        );
        assert_eq!(task.validation_set(9, 8), task.validation_set(9, 8));
    }
}
