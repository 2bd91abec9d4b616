//! Toy sequence tasks, generated on the fly: reverse, copy and sort, each posed as a
//! decoder-only causal language-modelling problem.
//!
//! ```text
//! sequence   [BOS, x₁ … xₙ, SEP, y₁ … yₙ]       xᵢ uniform over the symbols
//! reverse    yᵢ = x_{n+1−i}
//! copy       yᵢ = xᵢ
//! sort       y = sorted(x)
//! input      sequence[0 .. 2n+1]                 targets  sequence[1 .. 2n+2]
//! loss mask  1 where the target is some yᵢ (input positions n+1 … 2n), else 0
//! ```
//!
//! Token ids: `PAD = 0`, `BOS = 1`, `SEP = 2`, symbols `3 … 3 + symbols − 1`.
//!
//! # Shapes
//! A [`Batch`] of `b` sequences holds `inputs`, `targets` and `mask`, each `[b, 2n + 1]`.

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
}

impl TaskKind {
    /// Every task.
    pub const ALL: [TaskKind; 3] = [TaskKind::Reverse, TaskKind::Copy, TaskKind::Sort];

    /// The lower-case name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            TaskKind::Reverse => "reverse",
            TaskKind::Copy => "copy",
            TaskKind::Sort => "sort",
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
    /// A task; panics if `length` or `symbols` is zero.
    pub fn new(kind: TaskKind, length: usize, symbols: usize) -> Self {
        assert!(
            length > 0 && symbols > 0,
            "a task needs length ≥ 1 and symbols ≥ 1, got length {length} and symbols {symbols}"
        );
        Self {
            kind,
            length,
            symbols,
        }
    }

    /// The model's vocabulary size: the symbols plus PAD, BOS and SEP.
    pub fn vocab_size(&self) -> usize {
        self.symbols + FIRST_SYMBOL as usize
    }

    /// The number of input positions, 2n + 1.
    pub fn seq_len(&self) -> usize {
        2 * self.length + 1
    }

    /// The input positions whose target is an answer symbol: n + 1 … 2n.
    pub fn answer_positions(&self) -> core::ops::RangeInclusive<usize> {
        self.length + 1..=2 * self.length
    }

    /// One full sequence `[BOS, x, SEP, y]` drawn from `rng`.
    pub fn sequence(&self, rng: &mut SplitMix64) -> Vec<i64> {
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
        let mut batch = Batch {
            inputs: Vec::with_capacity(batch_size * seq_len),
            targets: Vec::with_capacity(batch_size * seq_len),
            mask: Vec::with_capacity(batch_size * seq_len),
            batch_size,
            seq_len,
        };
        for _ in 0..batch_size {
            let seq = self.sequence(rng);
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
        for kind in TaskKind::ALL {
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
