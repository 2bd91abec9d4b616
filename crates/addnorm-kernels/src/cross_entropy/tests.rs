//! The op on tensors: the fused path against the composite (under `ForceComposite`) and an
//! f64 reference, values and gradients, z-loss off and on, masks with zeros and fractional
//! weights; f64 central differences on the fused path; the fused-call counters; the
//! fallbacks (a tracked mask, `ForceComposite`) and the panics.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::Element;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Int, Tensor, TensorData};

use super::{CrossEntropyBackend, masked_cross_entropy};
use crate::composite::ForceComposite;
use crate::fused::{FusedCalls, fused_calls};

type F32 = Autodiff<NdArray>;
type F64 = Autodiff<NdArray<f64>>;

/// One call's inputs, `[batch, seq, vocab]` logits over about ±4, targets in range, a
/// mask with zeros (every third position) and one weight of 0.5.
struct Call {
    shape: [usize; 3],
    logits: Vec<f64>,
    targets: Vec<i64>,
    mask: Vec<f64>,
}

impl Call {
    fn new(shape: [usize; 3]) -> Self {
        let [batch, seq, vocab] = shape;
        let rows = batch * seq;
        let logits = (0..rows * vocab)
            .map(|i| ((i * 7919) % 1013) as f64 / 126.0 - 4.0)
            .collect();
        let targets = (0..rows).map(|r| ((r * 104_729) % vocab) as i64).collect();
        let mut mask: Vec<f64> = (0..rows)
            .map(|r| if r % 3 == 1 { 0.0 } else { 1.0 })
            .collect();
        mask[0] = 0.5;
        Self {
            shape,
            logits,
            targets,
            mask,
        }
    }

    fn rows(&self) -> [usize; 2] {
        [self.shape[0], self.shape[1]]
    }

    /// The loss and the logits' gradient of `0.7·loss` (so the upstream gradient is not 1).
    fn pass<B: AutodiffBackend + CrossEntropyBackend>(&self, z_loss: f64) -> (f64, Vec<f64>) {
        let device = Default::default();
        let logits = floats::<B, 3>(&self.logits, self.shape).require_grad();
        let loss = masked_cross_entropy(
            logits.clone(),
            Tensor::<B, 2, Int>::from_data(
                TensorData::new(self.targets.clone(), self.rows()),
                &device,
            ),
            floats::<B, 2>(&self.mask, self.rows()),
            z_loss,
        );
        let grads = (loss.clone() * 0.7).backward();
        (values(loss)[0], values(logits.grad(&grads).expect("dz")))
    }

    /// The loss and `∂(0.7·loss)/∂z` in plain f64 loops, from the formula.
    fn reference(&self, z_loss: f64) -> (f64, Vec<f64>) {
        let vocab = self.shape[2];
        let total: f64 = self.mask.iter().sum();
        let mut loss = 0.0;
        let mut dz = vec![0.0; self.logits.len()];
        for (r, row) in self.logits.chunks(vocab).enumerate() {
            let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let lse = max + row.iter().map(|v| (v - max).exp()).sum::<f64>().ln();
            let (y, m) = (self.targets[r] as usize, self.mask[r]);
            loss += m * (lse - row[y] + z_loss * lse * lse);
            for (v, &z) in row.iter().enumerate() {
                let p = (z - lse).exp();
                let one_hot = if v == y { 1.0 } else { 0.0 };
                dz[r * vocab + v] = 0.7 * m / total * (p - one_hot + 2.0 * z_loss * lse * p);
            }
        }
        (loss / total, dz)
    }
}

/// `values` as a float tensor of `B`'s own float dtype: Burn 0.21 keys the default dtype
/// by the device, which `NdArray<f32>` and `NdArray<f64>` share, so f64 must be asked for.
fn floats<B: Backend, const D: usize>(values: &[f64], shape: [usize; D]) -> Tensor<B, D> {
    let dtype = <B::FloatElem as Element>::dtype();
    Tensor::from_data(
        TensorData::new(values.to_vec(), shape),
        (&Default::default(), dtype),
    )
}

fn values<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f64> {
    t.into_data().convert::<f64>().to_vec().expect("f64 values")
}

fn assert_close(what: &str, actual: &[f64], expected: &[f64], tolerance: f64) {
    assert_eq!(actual.len(), expected.len(), "{what}: lengths");
    for (i, (a, e)) in actual.iter().zip(expected).enumerate() {
        assert!(
            (a - e).abs() <= tolerance * (1.0 + e.abs()),
            "{what}[{i}]: {a:e} against {e:e}"
        );
    }
}

/// The fused calls `f` makes on this thread.
fn counted<R>(f: impl FnOnce() -> R) -> (R, FusedCalls) {
    let before = fused_calls();
    let result = f();
    let after = fused_calls();
    (
        result,
        FusedCalls {
            forward: after.forward - before.forward,
            backward: after.backward - before.backward,
        },
    )
}

const ONE_EACH: FusedCalls = FusedCalls {
    forward: 1,
    backward: 1,
};

/// f32: one fused forward and one fused backward per call, none under `ForceComposite`, and
/// the two paths agree on the loss and the gradient, with the z-loss off and on, for a call
/// in one chunk of rows and one in several.
#[test]
fn fused_matches_the_composite_and_the_counters_say_which_ran() {
    for shape in [[2, 3, 5], [4, 40, 300]] {
        let call = Call::new(shape);
        for z_loss in [0.0, 1e-2] {
            let ((loss, dz), calls) = counted(|| call.pass::<F32>(z_loss));
            assert_eq!(calls, ONE_EACH, "{shape:?}: the fused path ran");
            let ((loss_ref, dz_ref), calls) = counted(|| {
                let _composite = ForceComposite::new();
                call.pass::<F32>(z_loss)
            });
            assert_eq!(calls, FusedCalls::default(), "ForceComposite ran a kernel");
            let what = format!("{shape:?} z {z_loss}");
            assert_close(&format!("{what} loss"), &[loss], &[loss_ref], 1e-6);
            assert_close(&format!("{what} dz"), &dz, &dz_ref, 1e-6);
        }
    }
}

/// f64: the fused path and the composite against the formula's plain loops.
#[test]
fn both_paths_match_the_f64_reference() {
    let call = Call::new([3, 7, 33]);
    for z_loss in [0.0, 0.1] {
        let (loss_ref, dz_ref) = call.reference(z_loss);
        let ((loss, dz), calls) = counted(|| call.pass::<F64>(z_loss));
        assert_eq!(calls, ONE_EACH);
        assert_close("fused loss", &[loss], &[loss_ref], 1e-13);
        assert_close("fused dz", &dz, &dz_ref, 1e-13);
        let _composite = ForceComposite::new();
        let (loss, dz) = call.pass::<F64>(z_loss);
        assert_close("composite loss", &[loss], &[loss_ref], 1e-13);
        assert_close("composite dz", &dz, &dz_ref, 1e-13);
    }
    // A masked-out position has no gradient at all.
    let vocab = call.shape[2];
    let (_, dz) = call.pass::<F64>(0.1);
    assert!(dz[vocab..2 * vocab].iter().all(|&v| v == 0.0));
}

/// The fused gradient against central differences of the fused loss, in f64, z-loss off
/// and on.
#[test]
fn gradient_matches_finite_differences_in_f64() {
    let call = Call::new([2, 3, 4]);
    let loss_at = |logits: &[f64], z_loss: f64| {
        let device = Default::default();
        let rows = call.rows();
        let loss = masked_cross_entropy(
            floats::<NdArray<f64>, 3>(logits, call.shape),
            Tensor::<NdArray<f64>, 2, Int>::from_data(
                TensorData::new(call.targets.clone(), rows),
                &device,
            ),
            floats::<NdArray<f64>, 2>(&call.mask, rows),
            z_loss,
        );
        0.7 * values(loss)[0]
    };
    for z_loss in [0.0, 0.05] {
        let ((_, analytic), calls) = counted(|| call.pass::<F64>(z_loss));
        assert_eq!(calls, ONE_EACH, "not the fused path");
        let h = 1e-6;
        let numeric: Vec<f64> = (0..call.logits.len())
            .map(|i| {
                let at = |d: f64| {
                    let mut p = call.logits.clone();
                    p[i] += d;
                    loss_at(&p, z_loss)
                };
                (at(h) - at(-h)) / (2.0 * h)
            })
            .collect();
        assert_close(&format!("dz, z {z_loss}"), &analytic, &numeric, 1e-8);
    }
}

/// Without autodiff the inner backend's fused forward runs alone, with the same value.
#[test]
fn the_inner_backend_runs_the_fused_forward() {
    let call = Call::new([2, 2, 3]);
    let device = Default::default();
    let run = || {
        let loss = masked_cross_entropy(
            Tensor::<NdArray, 3>::from_data(
                TensorData::new(call.logits.clone(), call.shape),
                &device,
            ),
            Tensor::<NdArray, 2, Int>::from_data(
                TensorData::new(call.targets.clone(), call.rows()),
                &device,
            ),
            Tensor::<NdArray, 2>::from_data(
                TensorData::new(call.mask.clone(), call.rows()),
                &device,
            ),
            1e-2,
        );
        values(loss)[0]
    };
    let (loss, calls) = counted(run);
    assert_eq!(
        calls,
        FusedCalls {
            forward: 1,
            backward: 0
        }
    );
    assert_close("loss", &[loss], &[call.reference(1e-2).0], 1e-6);
}

/// int32 targets (`NdArray<f32, i32>`) take the fused path and give the same result.
#[test]
fn narrower_int_targets_are_widened() {
    let call = Call::new([2, 3, 5]);
    let ((loss, dz), calls) = counted(|| call.pass::<Autodiff<NdArray<f32, i32>>>(1e-2));
    assert_eq!(calls, ONE_EACH);
    let (loss_ref, dz_ref) = call.pass::<F32>(1e-2);
    assert_eq!((loss, dz), (loss_ref, dz_ref));
}

/// A mask that tracks gradients goes down the composite path, which differentiates it:
/// `∂loss/∂m_r = (ce_r + λ·lse_r² − loss) / M`.
#[test]
fn a_tracked_mask_takes_the_composite_and_gets_its_gradient() {
    let device = Default::default();
    let logits = floats::<F64, 3>(&[0.0, 0.0, 2.0, 0.0], [1, 2, 2]);
    let targets = Tensor::<F64, 2, Int>::from_ints([[1, 1]], &device);
    let mask = floats::<F64, 2>(&[1.0, 1.0], [1, 2]).require_grad();
    let (grads, calls) =
        counted(|| masked_cross_entropy(logits, targets, mask.clone(), 0.0).backward());
    assert_eq!(calls, FusedCalls::default());
    let ce = [2f64.ln(), (1.0 + 2f64.exp()).ln()];
    let loss = (ce[0] + ce[1]) / 2.0;
    let expected = [(ce[0] - loss) / 2.0, (ce[1] - loss) / 2.0];
    assert_close(
        "dm",
        &values(mask.grad(&grads).expect("dm")),
        &expected,
        1e-12,
    );
}

/// NaN and `+∞` logits, even in a masked-out position, make the loss NaN on both paths; a
/// `−∞` target logit makes it `+∞`.
#[test]
fn non_finite_logits_reach_the_loss() {
    let device = Default::default();
    let loss = |row: [f32; 2], z_loss: f64| {
        let logits = Tensor::<NdArray, 3>::from_floats([[[0.0, 1.0], row]], &device);
        let targets = Tensor::<NdArray, 2, Int>::from_ints([[1, 1]], &device);
        let mask = Tensor::<NdArray, 2>::from_floats([[1.0, 0.0]], &device);
        values(masked_cross_entropy(logits, targets, mask, z_loss))[0]
    };
    for forced in [false, true] {
        let _composite = forced.then(ForceComposite::new);
        assert!(loss([f32::NAN, 0.0], 0.0).is_nan(), "NaN, forced {forced}");
        assert!(
            loss([f32::INFINITY, 0.0], 1e-2).is_nan(),
            "+∞, forced {forced}"
        );
    }
    let logits = Tensor::<NdArray, 3>::from_floats([[[0.0, f32::NEG_INFINITY]]], &device);
    let targets = Tensor::<NdArray, 2, Int>::from_ints([[1]], &device);
    let mask = Tensor::<NdArray, 2>::from_floats([[1.0]], &device);
    let ((), calls) = counted(|| {
        let loss = masked_cross_entropy(logits, targets, mask, 0.0);
        assert_eq!(values(loss)[0], f64::INFINITY);
    });
    assert_eq!(calls.forward, 1);
}

#[test]
#[should_panic(expected = "cross-entropy: target 7 at row 3 is outside the vocabulary [0, 5)")]
fn a_target_outside_the_vocabulary_panics() {
    let mut call = Call::new([2, 2, 5]);
    call.targets[3] = 7;
    call.pass::<F32>(0.0);
}

#[test]
#[should_panic(expected = "targets [2, 3] and mask [2, 2] must both be [2, 2]")]
fn a_mask_of_another_shape_panics() {
    let device = Default::default();
    masked_cross_entropy(
        Tensor::<NdArray, 3>::zeros([2, 2, 4], &device),
        Tensor::<NdArray, 2, Int>::zeros([2, 3], &device),
        Tensor::<NdArray, 2>::ones([2, 2], &device),
        0.0,
    );
}

#[test]
#[should_panic(expected = "z_loss must be finite and ≥ 0, got NaN")]
fn a_nan_z_loss_panics() {
    Call::new([1, 2, 3]).pass::<F32>(f64::NAN);
}

/// On wgpu (Burn's fusion over CubeCL) the op takes the composite, for now, and agrees
/// with the fused CPU path. Skipped where wgpu finds no adapter.
#[cfg(feature = "wgpu")]
#[test]
fn wgpu_takes_the_composite_and_matches_the_fused_cpu_path() {
    if crate::cube::devices::wgpu_adapters() == 0 {
        eprintln!("no wgpu adapter: skipped");
        return;
    }
    let call = Call::new([2, 5, 37]);
    for z_loss in [0.0, 1e-2] {
        let ((loss, dz), calls) = counted(|| call.pass::<Autodiff<burn::backend::Wgpu>>(z_loss));
        assert_eq!(calls, FusedCalls::default(), "wgpu has no fused kernel yet");
        let (loss_ref, dz_ref) = call.pass::<F32>(z_loss);
        assert_close("loss", &[loss], &[loss_ref], 1e-5);
        assert_close("dz", &dz, &dz_ref, 1e-5);
    }
}
