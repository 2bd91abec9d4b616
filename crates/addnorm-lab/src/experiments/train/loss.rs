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

use addnorm::KernelBackend;
use addnorm::kernels::cross_entropy::masked_cross_entropy as fused_cross_entropy;
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

/// The training objective: masked cross-entropy, plus `z` times the z-loss when `z > 0`
/// (a `z` of 0 or less, or NaN, adds nothing).
///
/// It is [`masked_cross_entropy`]` + z·`[`z_loss`] computed by addnorm's fused kernel
/// ([`addnorm::kernels::cross_entropy`]): one pass over the logits forward, one backward,
/// where the backend has a kernel (`NdArray`), and the same formula in Burn's ops elsewhere.
/// The functions above stay in Burn's ops: they evaluate, and the benchmark times them as
/// the loss a user would write.
///
/// # Panics
/// If `z` is infinite, or a target is outside the vocabulary.
pub fn objective<B: KernelBackend>(
    logits: Tensor<B, 3>,
    targets: Tensor<B, 2, Int>,
    mask: Tensor<B, 2>,
    z: f64,
) -> Tensor<B, 1> {
    let z_loss_weight = if z > 0.0 { z } else { 0.0 };
    fused_cross_entropy(logits, targets, mask, z_loss_weight)
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

#[cfg(test)]
mod tests {
    use addnorm::backend::ndarray::{AutodiffBackend as B, device};
    use addnorm::kernels::fused::fused_calls;
    use burn::tensor::{ElementConversion, Int, Tensor, TensorData};

    use super::*;

    /// `objective` (the fused kernel) against the Burn-ops loss it replaces, in value and
    /// in the logits' gradient, z-loss off and on, with masked-out positions.
    #[test]
    fn objective_matches_the_burn_ops_loss_and_its_gradient() {
        let d = device();
        let [batch, seq, vocab] = [3, 4, 7];
        let logits: Vec<f32> = (0..batch * seq * vocab)
            .map(|i| ((i * 7919) % 101) as f32 / 12.0 - 4.0)
            .collect();
        let targets: Vec<i64> = (0..batch * seq).map(|i| (i * 5 % vocab) as i64).collect();
        let mask: Vec<f32> = (0..batch * seq)
            .map(|i| if i % seq < 2 { 0.0 } else { 1.0 })
            .collect();
        let run = |fused: bool, z: f64| {
            let x =
                Tensor::<B, 3>::from_data(TensorData::new(logits.clone(), [batch, seq, vocab]), &d)
                    .require_grad();
            let t =
                Tensor::<B, 2, Int>::from_data(TensorData::new(targets.clone(), [batch, seq]), &d);
            let m = Tensor::<B, 2>::from_data(TensorData::new(mask.clone(), [batch, seq]), &d);
            let loss = if fused {
                objective(x.clone(), t, m, z)
            } else if z > 0.0 {
                masked_cross_entropy(x.clone(), t, m.clone()) + z_loss(x.clone(), m) * z
            } else {
                masked_cross_entropy(x.clone(), t, m)
            };
            let grads = loss.backward();
            let value: f64 = loss.into_scalar().elem();
            let grad: Vec<f32> = x.grad(&grads).expect("dz").into_data().to_vec().unwrap();
            (value, grad)
        };
        for z in [0.0, 1e-2, -1.0] {
            let before = fused_calls();
            let (value, grad) = run(true, z);
            assert_eq!(
                fused_calls().backward,
                before.backward + 1,
                "the fused path ran"
            );
            let (expected, expected_grad) = run(false, z);
            assert!(
                (value - expected).abs() < 1e-5,
                "z {z}: {value} vs {expected}"
            );
            let worst = grad
                .iter()
                .zip(&expected_grad)
                .map(|(a, e)| (a - e).abs())
                .fold(0.0, f32::max);
            assert!(worst < 1e-6, "z {z}: gradient off by {worst:e}");
        }
    }
}
