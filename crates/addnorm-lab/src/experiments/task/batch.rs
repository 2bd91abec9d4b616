//! A batch of a task's sequences ([`Batch`]), as [`Task::batch`](super::Task::batch) draws
//! it, and as tensors.
//!
//! ```text
//! input      sequence[0 .. 2n+1]                 targets  sequence[1 .. 2n+2]
//! loss mask  1 where the target is some yᵢ (input positions n+1 … 2n), else 0
//!            (1 at every position for the Markov language)
//! ```
//!
//! # Shapes
//! A [`Batch`] of `b` sequences holds `inputs`, `targets` and `mask`, each `[b, 2n + 1]`.

use burn::tensor::{Int, Tensor, TensorData, backend::Backend};

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
    /// The batches one after another as one batch of their summed size.
    ///
    /// # Panics
    /// If `parts` is empty or their sequence lengths differ.
    pub fn concat(parts: &[Batch]) -> Batch {
        let seq_len = parts.first().expect("Batch::concat: no batches").seq_len;
        assert!(
            parts.iter().all(|b| b.seq_len == seq_len),
            "Batch::concat: sequence lengths differ"
        );
        Batch {
            inputs: parts
                .iter()
                .flat_map(|b| b.inputs.iter().copied())
                .collect(),
            targets: parts
                .iter()
                .flat_map(|b| b.targets.iter().copied())
                .collect(),
            mask: parts.iter().flat_map(|b| b.mask.iter().copied()).collect(),
            batch_size: parts.iter().map(|b| b.batch_size).sum(),
            seq_len,
        }
    }

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

#[cfg(test)]
mod tests {
    use crate::experiments::task::{Task, TaskKind};
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
