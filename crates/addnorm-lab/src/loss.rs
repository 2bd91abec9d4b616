//! The training objective and the accuracy metrics of the toy tasks.
//!
//! ```text
//! loss           = −Σ_{b,t} m_{b,t} · log softmax(logits_{b,t})[target_{b,t}] / Σ m
//! token accuracy = Σ m · [argmax = target] / Σ m
//! exact accuracy = mean over sequences of Π_{t: m=1} [argmax = target]
//! ```
//!
//! # Shapes
//! - logits: `[batch, seq, vocab]`; targets: `[batch, seq]` (Int); mask `m`: `[batch, seq]`
//! - loss: `[1]`

use burn::tensor::{ElementConversion, Int, Tensor, activation::log_softmax, backend::Backend};

/// Masked next-token cross-entropy, averaged over the answer positions.
pub fn masked_cross_entropy<B: Backend>(
    logits: Tensor<B, 3>,
    targets: Tensor<B, 2, Int>,
    mask: Tensor<B, 2>,
) -> Tensor<B, 1> {
    let picked = log_softmax(logits, 2)
        .gather(2, targets.unsqueeze_dim::<3>(2))
        .squeeze_dim::<2>(2);
    (picked * mask.clone()).sum().neg() / mask.sum()
}

/// Token and exact-sequence accuracy on the answer positions.
#[derive(Clone, Copy, Debug, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Accuracy {
    /// The fraction of answer tokens predicted correctly.
    pub token: f64,
    /// The fraction of sequences whose every answer token is correct.
    pub exact: f64,
}

/// Greedy (teacher-forced) accuracy of `logits` against `targets` on the masked positions.
pub fn accuracy<B: Backend>(
    logits: Tensor<B, 3>,
    targets: Tensor<B, 2, Int>,
    mask: Tensor<B, 2>,
) -> Accuracy {
    let [batch, _, _] = logits.dims();
    let correct = logits.argmax(2).squeeze_dim::<2>(2).equal(targets).float();
    let hits = correct * mask.clone();
    let answer_len = mask.clone().sum_dim(1);
    let token: f64 = (hits.clone().sum() / mask.sum()).into_scalar().elem();
    let exact_rows = hits.sum_dim(1).equal(answer_len).float().sum();
    let exact: f64 = exact_rows.into_scalar().elem();
    Accuracy {
        token,
        exact: exact / batch as f64,
    }
}
