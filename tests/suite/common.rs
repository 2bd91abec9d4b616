//! Shared helpers: the per-backend test macro, comparisons and fixture loading.

use burn::tensor::{Tensor, TensorData, backend::Backend};

/// Writes each `fn name<B>(device) { body }` once, generic over an autodiff backend
/// `B: NormAutodiffBackend`, and emits one `#[test]` per enabled backend: `name::ndarray`,
/// `name::wgpu` and `name::cuda`.
///
/// A GPU case whose backend has no device on this machine is skipped, loudly (see
/// [`gpu_available`]), unless `ADDNORM_REQUIRE_GPU` names that backend: CI sets
/// `ADDNORM_REQUIRE_GPU=wgpu`, so a CI machine that cannot run wgpu fails.
#[macro_export]
macro_rules! on_every_backend {
    ($(
        $(#[$meta:meta])*
        fn $name:ident<$B:ident>($device:ident) $body:block
    )*) => {$(
        $(#[$meta])*
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            fn run<$B: addnorm::NormAutodiffBackend>($device: &burn::tensor::Device<$B>)
            $body

            #[cfg(feature = "ndarray")]
            #[test]
            fn ndarray() {
                run::<addnorm::backend::ndarray::AutodiffBackend>(
                    &addnorm::backend::ndarray::device(),
                );
            }

            #[cfg(feature = "wgpu")]
            #[test]
            fn wgpu() {
                if $crate::common::gpu_available(addnorm::backend::Kind::Wgpu, module_path!()) {
                    run::<addnorm::backend::wgpu::AutodiffBackend>(&addnorm::backend::wgpu::device());
                }
            }

            #[cfg(feature = "cuda")]
            #[test]
            fn cuda() {
                if $crate::common::gpu_available(addnorm::backend::Kind::Cuda, module_path!()) {
                    run::<addnorm::backend::cuda::AutodiffBackend>(&addnorm::backend::cuda::device());
                }
            }
        }
    )*};
}

/// Whether the GPU backend `kind` can run here. When it cannot, this writes a `SKIPPED`
/// line for `test` straight to stderr (past libtest's capture, so it shows in a passing
/// run) and returns false, or panics if `ADDNORM_REQUIRE_GPU` (comma-separated backend
/// names) lists `kind`.
pub fn gpu_available(kind: addnorm::backend::Kind, test: &str) -> bool {
    use std::io::Write;
    static CHECKED: std::sync::OnceLock<Vec<(addnorm::backend::Kind, Result<(), String>)>> =
        std::sync::OnceLock::new();
    let checked = CHECKED.get_or_init(|| {
        addnorm::backend::ENABLED
            .iter()
            .map(|&k| (k, k.check_available()))
            .collect()
    });
    let status = checked.iter().find(|(k, _)| *k == kind).map(|(_, s)| s);
    let Some(Err(message)) = status else {
        return true;
    };
    let required = std::env::var("ADDNORM_REQUIRE_GPU").unwrap_or_default();
    if required.split(',').any(|name| name.trim() == kind.name()) {
        panic!("ADDNORM_REQUIRE_GPU={required}, but {message}");
    }
    // One write of the whole line: `writeln!` on stderr writes each piece of the format
    // separately, and the test harness's own output landed between them, so that `.ci/run`
    // counted 78 of 79 such lines in one run.
    let line = format!("SKIPPED {test}::{kind}: {message}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    false
}

/// The wgpu device for `test`, or `None` (after [`gpu_available`]'s `SKIPPED` line, or its
/// panic under `ADDNORM_REQUIRE_GPU=wgpu`) when this machine cannot run wgpu. Every test
/// that needs a wgpu device takes it from here or from [`on_every_backend!`]: constructing
/// one directly panics inside cubecl-wgpu on a machine without a Vulkan loader
/// (`guard::no_test_builds_a_gpu_device_by_itself` checks the sources for that).
#[cfg(feature = "wgpu")]
pub fn wgpu_device(test: &str) -> Option<burn::backend::wgpu::WgpuDevice> {
    gpu_available(addnorm::backend::Kind::Wgpu, test).then(addnorm::backend::wgpu::device)
}

/// The committed PyTorch checkpoint `name` (`tests/fixtures/pytorch/`, written by
/// `tests/fixtures/make_pytorch_weights.py` and `make_group_norm_fixtures.py`).
pub fn pytorch_checkpoint(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("fixtures/pytorch/{name}"))
}

/// The values of a tensor as f64, whatever its element type.
pub fn values<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f64> {
    t.into_data()
        .convert::<f64>()
        .to_vec::<f64>()
        .expect("float data")
}

/// An f32 tensor's data as its values' bit patterns, to compare results bit for bit.
///
/// # Panics
/// If the data is not f32.
pub fn f32_bits(data: &burn::tensor::TensorData) -> Vec<u32> {
    let values = data.to_vec::<f32>().expect("f32 data");
    values.iter().map(|v| v.to_bits()).collect()
}

/// A tensor of the given shape from f64 values.
pub fn tensor<B: Backend, const D: usize>(
    values: &[f64],
    shape: [usize; D],
    device: &B::Device,
) -> Tensor<B, D> {
    Tensor::from_data(TensorData::new(values.to_vec(), shape), device)
}

/// The largest absolute difference between two equally long slices.
pub fn max_abs_diff(actual: &[f64], expected: &[f64]) -> f64 {
    assert_eq!(actual.len(), expected.len(), "length mismatch");
    actual
        .iter()
        .zip(expected)
        .map(|(a, e)| (a - e).abs())
        .fold(0.0, f64::max)
}

/// Asserts `actual ≈ expected` within `relative` of the field's scale: its largest absolute
/// value, floored at 1e-2. The floor matters only for fields that are zero up to
/// cancellation (dx of a width-1 RMSNorm is `γ·ε/(x² + ε)^{3/2}`, about 1e-5): f32 can only
/// resolve those to the size of the cancelled terms, so they are compared absolutely.
pub fn assert_close(what: &str, actual: &[f64], expected: &[f64], relative: f64) {
    assert!(
        actual.iter().all(|v| v.is_finite()),
        "{what}: non-finite values in {actual:?}"
    );
    let scale = expected.iter().fold(1e-2_f64, |m, v| m.max(v.abs()));
    let err = max_abs_diff(actual, expected);
    assert!(
        err <= relative * scale,
        "{what}: max |actual − expected| = {err:.3e} exceeds {relative:e} × scale {scale:.3e}\n\
         actual:   {:?}\nexpected: {:?}",
        &actual[..actual.len().min(8)],
        &expected[..expected.len().min(8)],
    );
}

/// TF32's tolerance, relative to a field's scale: 10 mantissa bits give each rounded input
/// a relative error up to 2⁻¹¹ ≈ 4.9e-4, and a block's outputs were seen within 6.2e-4 of
/// their scale on an H100 (2026-11-26).
pub const TF32_RELATIVE: f64 = 5e-3;

/// The tolerance of a comparison whose values pass through matrix products on backend `B`:
/// `relative` itself, or at least [`TF32_RELATIVE`] on CUDA. There Burn's f32 matmul
/// autotunes to tensor-core kernels that round their inputs to TF32 (cubek-matmul's
/// `adjust_dtypes`), as PyTorch's does only under `allow_tf32`; addnorm's own kernels keep
/// f32.
pub fn matmul_tolerance<B: Backend>(relative: f64) -> f64 {
    if std::any::type_name::<B>().contains("Cuda") {
        relative.max(TF32_RELATIVE)
    } else {
        relative
    }
}

/// Unbiased (n − 1) variance of a slice, for checking the seeds' printed statistics.
pub fn sample_variance(v: &[f64]) -> f64 {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
}

/// The mean of a slice.
pub fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Runs `body` in a fresh process of this test binary, and fails if it fails there.
///
/// Burn 0.21 keys a device's default float dtype by the device, not the backend:
/// `NdArray<f32>` and `NdArray<f64>` share `NdArrayDevice::Cpu`, and whichever touches it
/// first decides for the whole process. Tests that need `NdArray<f64>` therefore run
/// alone in a child process, where f64 is the first dtype the device sees.
pub fn in_own_process(test_path: &str, body: impl FnOnce()) {
    const CHILD: &str = "ADDNORM_TEST_CHILD";
    if std::env::var(CHILD).as_deref() == Ok(test_path) {
        body();
        return;
    }
    let output = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([test_path, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, test_path)
        .output()
        .expect("spawn the test binary");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{test_path} failed in its own process:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A closure expected to panic, and the fragments its message must contain.
pub type PanicCase<'a> = (Box<dyn FnOnce() + 'a>, &'a [&'a str]);

/// Runs `f`, expects a panic, and returns its message (`String` or `&str` payload).
pub fn panic_message(f: impl FnOnce()) -> String {
    let err =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).expect_err("expected a panic");
    err.downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

/// Asserts that each case panics with a message containing all of its fragments.
pub fn assert_panic_messages(cases: Vec<PanicCase<'_>>) {
    for (f, needles) in cases {
        let message = panic_message(f);
        for needle in needles {
            assert!(
                message.contains(needle),
                "{needle:?} not in panic message {message:?}"
            );
        }
    }
}
