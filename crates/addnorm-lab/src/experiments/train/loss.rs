//! The training objective and the accuracy metrics of the toy tasks.
//!
//! ```text
//! loss           = −Σ_{b,t} m_{b,t} · log softmax(logits_{b,t})[target_{b,t}] / Σ m
//! token accuracy = Σ m · [argmax = target] / Σ m
//! exact accuracy = mean over sequences of Π_{t: m=1} [argmax = target]
//! log Z          = log Σ_v exp(logits_{b,t,v})                  (the log-partition)
//! z-loss         = Σ_{b,t} m_{b,t} · (log Z_{b,t})² / Σ m         (Wortsman et al. 2023)
//! ```
//!
//! # Shapes
//! - logits: `[batch, seq, vocab]`; targets: `[batch, seq]` (Int); mask `m`: `[batch, seq]`
//! - loss, z-loss: `[1]`; log Z: `[batch, seq]`

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

/// log Z = log Σ_v exp(logits_v) at every position, computed stably around the row
/// maximum.
///
/// # Shapes
/// - logits: `[batch, seq, vocab]` → `[batch, seq]`
pub fn log_partition<B: Backend>(logits: Tensor<B, 3>) -> Tensor<B, 2> {
    let max = logits.clone().max_dim(2).detach();
    let sum = (logits - max.clone()).exp().sum_dim(2);
    (sum.log() + max).squeeze_dim::<2>(2)
}

/// The z-loss: the mean of (log Z)² over the masked positions.
pub fn z_loss<B: Backend>(logits: Tensor<B, 3>, mask: Tensor<B, 2>) -> Tensor<B, 1> {
    (log_partition(logits).square() * mask.clone()).sum() / mask.sum()
}

/// The mean of log Z over the masked positions, as a number.
pub fn mean_log_partition<B: Backend>(logits: Tensor<B, 3>, mask: Tensor<B, 2>) -> f64 {
    ((log_partition(logits) * mask.clone()).sum() / mask.sum())
        .into_scalar()
        .elem()
}

/// The training objective: masked cross-entropy, plus `z` times the z-loss when `z > 0`.
pub fn objective<B: Backend>(
    logits: Tensor<B, 3>,
    targets: Tensor<B, 2, Int>,
    mask: Tensor<B, 2>,
    z: f64,
) -> Tensor<B, 1> {
    let ce = masked_cross_entropy(logits.clone(), targets, mask.clone());
    if z > 0.0 {
        ce + z_loss(logits, mask) * z
    } else {
        ce
    }
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
