//! The fused kernels against the composite reference: every [`RowNormSpec`] variant,
//! forward and backward; random shapes and non-contiguous views; a short training run; and
//! a check that autodiff really takes the fused path.
//!
//! On ndarray these run the CPU kernels. On wgpu they run the CubeCL kernels through
//! `Fusion<CubeBackend<WgpuRuntime>>` (Burn's default wgpu type); the `cube_backend_*`
//! tests run them on `CubeBackend` without fusion, and in f16.

use addnorm::nn::{LayerNorm, LayerNormConfig, RmsNorm, RmsNormConfig};
use addnorm::{NormAutodiffBackend, NormBackend};
use addnorm_kernels::composite::ForceComposite;
use addnorm_kernels::norm::composite;
use addnorm_kernels::{Centering, EpsilonPlacement, RowNormSpec, Variance};
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorPrimitive};

use crate::common::{assert_close, in_own_process, tensor, values};
use crate::on_every_backend;

/// Deterministic pseudo-random values in [-1, 1) (a 64-bit LCG), so every backend and
/// both paths see the same inputs.
fn random_values(len: usize, seed: u64) -> Vec<f64> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

/// How `x` is laid out in memory when it reaches the kernel.
#[derive(Clone, Copy, Debug)]
enum Layout {
    /// Row-major, contiguous.
    Contiguous,
    /// A transposed `[n, rows]` tensor.
    Transposed,
    /// Columns `1..=n` of a `[rows, n + 2]` tensor.
    Sliced,
}

/// The inputs of one comparison.
struct Case {
    rows: usize,
    n: usize,
    x: Vec<f64>,
    dy: Vec<f64>,
    gamma: Option<Vec<f64>>,
    beta: Option<Vec<f64>>,
    spec: RowNormSpec,
    layout: Layout,
}

impl Case {
    fn random(rows: usize, n: usize, spec: RowNormSpec, seed: u64) -> Self {
        Self {
            rows,
            n,
            x: random_values(rows * n, seed)
                .iter()
                .map(|v| 3.0 * v + 0.5)
                .collect(),
            dy: random_values(rows * n, seed + 1),
            gamma: Some(random_values(n, seed + 2).iter().map(|v| 1.0 + v).collect()),
            beta: Some(random_values(n, seed + 3)),
            spec,
            layout: Layout::Contiguous,
        }
    }

    fn describe(&self) -> String {
        format!(
            "{}×{} {:?} γ {:?} β {:?} {:?}",
            self.rows,
            self.n,
            self.spec,
            self.gamma.as_ref().map(Vec::len),
            self.beta.as_ref().map(Vec::len),
            self.layout
        )
    }
}

/// The forward output and every gradient of `sum(y · dy)`.
struct Outputs {
    y: Vec<f64>,
    dx: Vec<f64>,
    dgamma: Option<Vec<f64>>,
    dbeta: Option<Vec<f64>>,
}

/// Which implementation to run.
#[derive(Clone, Copy, PartialEq)]
enum Path {
    /// `NormBackend::norm_rows`: fused where the backend has a kernel.
    Backend,
    /// `composite::norm_rows`, the reference, called directly.
    Composite,
}

fn norm_pass<B: NormAutodiffBackend>(case: &Case, path: Path, device: &B::Device) -> Outputs {
    let (rows, n) = (case.rows, case.n);
    // The leaf that owns the gradient, and the [rows, n] view of it the norm sees.
    let (leaf, x): (Tensor<B, 2>, Tensor<B, 2>) = match case.layout {
        Layout::Contiguous => {
            let leaf = tensor::<B, 2>(&case.x, [rows, n], device).require_grad();
            (leaf.clone(), leaf)
        }
        Layout::Transposed => {
            let transposed: Vec<f64> = (0..n)
                .flat_map(|j| (0..rows).map(move |i| (i, j)))
                .map(|(i, j)| case.x[i * n + j])
                .collect();
            let leaf = tensor::<B, 2>(&transposed, [n, rows], device).require_grad();
            (leaf.clone(), leaf.transpose())
        }
        Layout::Sliced => {
            let padded: Vec<f64> = (0..rows)
                .flat_map(|i| {
                    let row = &case.x[i * n..(i + 1) * n];
                    std::iter::once(7.0)
                        .chain(row.iter().copied())
                        .chain([-7.0])
                })
                .collect();
            let leaf = tensor::<B, 2>(&padded, [rows, n + 2], device).require_grad();
            (leaf.clone(), leaf.slice([0..rows, 1..n + 1]))
        }
    };
    let param = |v: &Vec<f64>| tensor::<B, 1>(v, [v.len()], device).require_grad();
    let gamma = case.gamma.as_ref().map(param);
    let beta = case.beta.as_ref().map(param);
    let y = match path {
        Path::Composite => composite::norm_rows(x, gamma.clone(), beta.clone(), &case.spec),
        Path::Backend => {
            let primitive = |t: &Tensor<B, 1>| t.clone().into_primitive().tensor();
            Tensor::from_primitive(TensorPrimitive::Float(B::norm_rows(
                x.into_primitive().tensor(),
                gamma.as_ref().map(primitive),
                beta.as_ref().map(primitive),
                case.spec,
            )))
        }
    };
    let dy = tensor::<B, 2>(&case.dy, [rows, n], device);
    let grads = (y.clone() * dy).sum().backward();
    let leaf_grad = leaf.grad(&grads).expect("x requires a gradient");
    let dx = match case.layout {
        Layout::Contiguous => values(leaf_grad),
        Layout::Transposed => values(leaf_grad.transpose()),
        Layout::Sliced => {
            let full = values(leaf_grad);
            let padding = full
                .chunks(n + 2)
                .flat_map(|row| [row[0], row[n + 1]])
                .fold(0.0_f64, |m, v| m.max(v.abs()));
            assert_eq!(padding, 0.0, "the columns outside the slice got a gradient");
            full.chunks(n + 2)
                .flat_map(|row| row[1..=n].to_vec())
                .collect()
        }
    };
    let grad_of = |p: &Option<Tensor<B, 1>>| {
        p.as_ref()
            .map(|p| values(p.grad(&grads).expect("parameter gradient")))
    };
    Outputs {
        y: values(y),
        dx,
        dgamma: grad_of(&gamma),
        dbeta: grad_of(&beta),
    }
}

/// Runs both paths and asserts they agree within `tolerance` of each field's scale.
fn assert_paths_agree<B: NormAutodiffBackend>(case: &Case, tolerance: f64, device: &B::Device) {
    let fused = norm_pass::<B>(case, Path::Backend, device);
    let reference = norm_pass::<B>(case, Path::Composite, device);
    let what = case.describe();
    assert_close(&format!("{what}: y"), &fused.y, &reference.y, tolerance);
    assert_close(&format!("{what}: dx"), &fused.dx, &reference.dx, tolerance);
    for (name, a, b) in [
        ("dγ", &fused.dgamma, &reference.dgamma),
        ("dβ", &fused.dbeta, &reference.dbeta),
    ] {
        assert_eq!(a.is_some(), b.is_some(), "{what}: {name} presence");
        if let (Some(a), Some(b)) = (a, b) {
            assert_close(&format!("{what}: {name}"), a, b, tolerance);
        }
    }
}

/// Every combination of the spec's options, partial statistics and parameter shapes.
fn every_variant(n: usize) -> Vec<(RowNormSpec, Option<usize>, Option<usize>)> {
    let mut variants = Vec::new();
    for centering in [Centering::MeanRemoved, Centering::RootMeanSquare] {
        for variance in [Variance::Biased, Variance::Unbiased] {
            for epsilon_placement in [EpsilonPlacement::InsideSqrt, EpsilonPlacement::AddedToStd] {
                for statistics_features in [None, Some(3)] {
                    let spec = RowNormSpec {
                        centering,
                        epsilon: 1e-5,
                        variance,
                        epsilon_placement,
                        statistics_features,
                    };
                    for (gamma, beta) in [
                        (Some(n), Some(n)),
                        (Some(1), Some(1)),
                        (None, None),
                        (Some(n), None),
                        (None, Some(1)),
                    ] {
                        variants.push((spec, gamma, beta));
                    }
                }
            }
        }
    }
    variants
}

/// `case` with its γ/β resized to `gamma`/`beta` values (or removed).
fn with_params(mut case: Case, gamma: Option<usize>, beta: Option<usize>) -> Case {
    case.gamma = gamma.map(|len| random_values(len, 11).iter().map(|v| 1.0 + v).collect());
    case.beta = beta.map(|len| random_values(len, 12));
    case
}

/// A batch whose rows include the edge cases: a constant row (σ² = 0: the AddedToStd
/// floor) and a row with mean 1e4 and standard deviation about 1e-2.
fn edge_case_rows(n: usize, spec: RowNormSpec) -> Case {
    let mut case = Case::random(4, n, spec, 5);
    case.x[..n].fill(0.25);
    for (j, v) in case.x[2 * n..3 * n].iter_mut().enumerate() {
        *v = 1e4 + 1e-2 * (j as f64 - n as f64 / 2.0) / n as f64 * 3.0;
    }
    case
}

on_every_backend! {
    /// (a) Every RowNormSpec variant, with γ/β of length n, 1 or absent: the backend's path
    /// (fused on ndarray) matches the composite reference, forward and backward, including
    /// a constant row and a large-offset row.
    fn fused_and_composite_agree_on_every_variant<B>(device) {
        let n = 7;
        for (spec, gamma, beta) in every_variant(n) {
            let case = with_params(Case::random(5, n, spec, 1), gamma, beta);
            assert_paths_agree::<B>(&case, 1e-4, device);
            let edges = with_params(edge_case_rows(n, spec), gamma, beta);
            let fused = norm_pass::<B>(&edges, Path::Backend, device);
            assert!(
                fused.dx.iter().all(|v| v.is_finite()),
                "{}: non-finite dx on the edge-case rows",
                edges.describe()
            );
            if spec.centering == Centering::RootMeanSquare {
                continue;
            }
            // LayerNorm maps the constant row to β (0 without β) whatever the variant.
            let expected_beta = |j: usize| match &edges.beta {
                Some(b) if b.len() == 1 => b[0],
                Some(b) => b[j],
                None => 0.0,
            };
            for j in 0..n {
                let err = (fused.y[j] - expected_beta(j)).abs();
                assert!(err < 1e-5, "{}: constant row y[{j}] off by {err}", edges.describe());
            }
        }
    }

    /// (a) Rows with mean 1e4 and standard deviation 1e-2 keep their accuracy in f32: the
    /// output matches the float64 normalization of the same (f32-rounded) values.
    fn large_offset_rows_stay_accurate<B>(device) {
        let (rows, n) = (8, 1000);
        let x: Vec<f64> = random_values(rows * n, 21)
            .iter()
            .map(|v| (1e4 + 1.7e-2 * v) as f32 as f64)
            .collect();
        let mut case = Case::random(rows, n, RowNormSpec::layer_norm(1e-5), 21);
        (case.x, case.gamma, case.beta) = (x.clone(), None, None);
        let fused = norm_pass::<B>(&case, Path::Backend, device);
        let mut expected = Vec::with_capacity(rows * n);
        for row in x.chunks(n) {
            let mean = row.iter().sum::<f64>() / n as f64;
            let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
            expected.extend(row.iter().map(|v| (v - mean) / (var + 1e-5).sqrt()));
        }
        let err = crate::common::max_abs_diff(&fused.y, &expected);
        assert!(err < 1e-2, "max |y − y_f64| = {err:.3e} on mean-1e4 rows");
        let reference = norm_pass::<B>(&case, Path::Composite, device);
        assert_close("large-offset dx", &fused.dx, &reference.dx, 1e-2);
    }

    /// (b) Random shapes: width 1, odd widths, widths above a cache line and above the
    /// kernel's vector lanes, one row and many rows, LayerNorm and partial RMSNorm.
    fn random_shapes_agree<B>(device) {
        let mut seed = 100;
        for n in [1_usize, 2, 5, 16, 17, 33, 1000] {
            for rows in [1, 3, 257] {
                let specs = [
                    RowNormSpec::layer_norm(1e-5),
                    RowNormSpec {
                        statistics_features: Some(n.div_ceil(2)),
                        ..RowNormSpec::rms_norm(1e-6)
                    },
                ];
                for spec in specs {
                    seed += 4;
                    assert_paths_agree::<B>(&Case::random(rows, n, spec, seed), 2e-4, device);
                }
            }
        }
    }

    /// (b) Non-contiguous inputs: a transposed tensor and a column slice give the same
    /// result as their contiguous copy, and the gradient lands in the right elements.
    fn non_contiguous_views_agree<B>(device) {
        for layout in [Layout::Transposed, Layout::Sliced] {
            for (rows, n) in [(3, 5), (17, 33), (64, 40)] {
                for spec in [RowNormSpec::layer_norm(1e-5), RowNormSpec::rms_norm(1e-6)] {
                    let mut case = Case::random(rows, n, spec, (rows * n) as u64);
                    let contiguous = norm_pass::<B>(&case, Path::Backend, device);
                    case.layout = layout;
                    assert_paths_agree::<B>(&case, 2e-4, device);
                    let strided = norm_pass::<B>(&case, Path::Backend, device);
                    let what = case.describe();
                    assert_close(&format!("{what}: y vs contiguous"), &strided.y, &contiguous.y, 1e-6);
                    assert_close(&format!("{what}: dx vs contiguous"), &strided.dx, &contiguous.dx, 1e-6);
                }
            }
        }
    }

    /// (c) A two-layer model trained 50 Adam steps follows the same loss curve with the
    /// fused norms as with the composite ones, and it does learn.
    fn training_curves_match<B>(device) {
        let model = TwoLayer::<B>::new(device);
        let fused = train(model.clone(), device);
        let composite = {
            let _composite = ForceComposite::new();
            train(model, device)
        };
        assert!(
            fused[49] < 0.5 * fused[0],
            "the model did not learn: loss {} → {}",
            fused[0],
            fused[49]
        );
        assert_close("loss curve", &fused, &composite, 1e-3);
    }
}

/// Linear → LayerNorm → Linear → RmsNorm.
#[derive(Module, Debug)]
struct TwoLayer<B: Backend> {
    input: Linear<B>,
    layer_norm: LayerNorm<B>,
    output: Linear<B>,
    rms_norm: RmsNorm<B>,
}

impl<B: NormBackend> TwoLayer<B> {
    fn new(device: &B::Device) -> Self {
        B::seed(device, 3);
        let model = Self {
            input: LinearConfig::new(8, 32).init(device),
            layer_norm: LayerNormConfig::new(vec![32]).init(device),
            output: LinearConfig::new(32, 16).init(device),
            rms_norm: RmsNormConfig::new(vec![16]).init(device),
        };
        // Parameters are initialized lazily, on first use, and a clone of an uninitialized
        // one draws its own values: touch them all so that clones start identical.
        let _ = model.forward(Tensor::zeros([1, 8], device));
        model
    }

    fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        let x = self.layer_norm.forward(self.input.forward(x));
        self.rms_norm.forward(self.output.forward(x))
    }
}

/// Fits a fixed random regression for 50 Adam steps; returns the loss at each step.
fn train<B: NormAutodiffBackend>(mut model: TwoLayer<B>, device: &B::Device) -> Vec<f64> {
    let x = tensor::<B, 2>(&random_values(64 * 8, 31), [64, 8], device);
    let target = tensor::<B, 2>(&random_values(64 * 16, 32), [64, 16], device);
    let mut optimizer = AdamConfig::new().init();
    let mut losses = Vec::new();
    for _ in 0..50 {
        let loss = (model.forward(x.clone()) - target.clone()).square().mean();
        losses.push(values(loss.clone())[0]);
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optimizer.step(1e-2, model, grads);
    }
    losses
}

/// (d) Under autodiff, a LayerNorm's forward and backward each run the fused kernel
/// exactly once; with a `ForceComposite` guard neither runs, and the results agree.
fn assert_takes_the_fused_path<Ad: NormAutodiffBackend>(device: &Ad::Device) {
    use addnorm_kernels::fused::fused_calls;

    let norm = LayerNormConfig::new(vec![6]).init::<Ad>(device);
    let x_values = random_values(4 * 6, 41);
    let forward_backward = || {
        let x = tensor::<Ad, 2>(&x_values, [4, 6], device).require_grad();
        let y = norm.forward(x.clone());
        let dy = tensor::<Ad, 2>(&random_values(4 * 6, 42), [4, 6], device);
        let grads = (y.clone() * dy).sum().backward();
        (values(y), values(x.grad(&grads).unwrap()))
    };

    let before = fused_calls();
    let (y, dx) = forward_backward();
    let after = fused_calls();
    assert_eq!(after.forward - before.forward, 1, "fused forward calls");
    assert_eq!(after.backward - before.backward, 1, "fused backward calls");

    let (y_ref, dx_ref) = {
        let _composite = ForceComposite::new();
        forward_backward()
    };
    assert_eq!(
        fused_calls(),
        after,
        "ForceComposite still ran a fused kernel"
    );
    assert_close("y", &y, &y_ref, 1e-5);
    assert_close("dx", &dx, &dx_ref, 1e-4);
}

/// (d) on the CPU backend.
#[cfg(feature = "ndarray")]
#[test]
fn autodiff_ndarray_takes_the_fused_path() {
    use addnorm::backend::ndarray::{AutodiffBackend, device};
    assert_takes_the_fused_path::<AutodiffBackend>(&device());
}

/// (d) on Burn's default wgpu type, `Fusion<CubeBackend<WgpuRuntime>>`: the kernels are
/// queued as custom operations of the fusion stream.
#[cfg(feature = "wgpu")]
#[test]
fn autodiff_wgpu_takes_the_fused_path() {
    use addnorm::backend::wgpu::AutodiffBackend;
    let Some(device) = crate::common::wgpu_device(module_path!()) else {
        return;
    };
    assert_takes_the_fused_path::<AutodiffBackend>(&device);
}

/// `CubeBackend<WgpuRuntime>` without Burn's fusion: what `burn::backend::Wgpu` is when
/// Burn's `fusion` feature is off.
#[cfg(feature = "wgpu")]
type CubeWgpu = burn::backend::Autodiff<
    burn::backend::wgpu::CubeBackend<burn::backend::wgpu::WgpuRuntime, f32, i32, u32>,
>;

/// (a, b) The CubeCL kernels called directly (no fusion stream): every variant, views, and
/// the launch geometry's edges: more rows than one backward cube takes (1100 rows: three
/// per cube, the last cube short), a row wider than a cube (1000 features over 256 units),
/// and more rows than one grid dimension holds (70 000).
///
/// At 70 000 rows the composite reference cannot be the judge of dγ and dβ: Burn 0.21's
/// wgpu `sum_dim` stops at 65 532 rows (`ones([70000, 2]).sum_dim(0)` gives 65 532), so
/// those are checked against sums in f64 here.
#[cfg(feature = "wgpu")]
#[test]
fn cube_backend_without_fusion_agrees() {
    use addnorm_kernels::fused::fused_calls;
    let Some(device) = crate::common::wgpu_device(module_path!()) else {
        return;
    };
    let before = fused_calls();
    let n = 7;
    for (spec, gamma, beta) in every_variant(n) {
        let case = with_params(Case::random(5, n, spec, 3), gamma, beta);
        assert_paths_agree::<CubeWgpu>(&case, 1e-4, &device);
    }
    for layout in [Layout::Transposed, Layout::Sliced] {
        let mut case = Case::random(17, 33, RowNormSpec::layer_norm(1e-5), 4);
        case.layout = layout;
        assert_paths_agree::<CubeWgpu>(&case, 2e-4, &device);
    }
    for (rows, n) in [(1100, 33), (3, 1000)] {
        for spec in [RowNormSpec::layer_norm(1e-5), RowNormSpec::rms_norm(1e-6)] {
            let case = Case::random(rows, n, spec, (rows + n) as u64);
            assert_paths_agree::<CubeWgpu>(&case, 2e-4, &device);
        }
    }
    let mut tall = Case::random(70_000, 2, RowNormSpec::layer_norm(1e-5), 70_002);
    (tall.gamma, tall.beta) = (Some(vec![1.0, 1.0]), Some(vec![0.0, 0.0]));
    let fused = norm_pass::<CubeWgpu>(&tall, Path::Backend, &device);
    let reference = norm_pass::<CubeWgpu>(&tall, Path::Composite, &device);
    assert_close("70000 rows: y", &fused.y, &reference.y, 1e-4);
    assert_close("70000 rows: dx", &fused.dx, &reference.dx, 1e-4);
    let (mut dgamma, mut dbeta) = ([0.0; 2], [0.0; 2]);
    for (x, dy) in tall.x.chunks(2).zip(tall.dy.chunks(2)) {
        let mean = (x[0] + x[1]) / 2.0;
        let rstd = 1.0 / (((x[0] - mean).powi(2) + (x[1] - mean).powi(2)) / 2.0 + 1e-5).sqrt();
        for j in 0..2 {
            dgamma[j] += dy[j] * (x[j] - mean) * rstd;
            dbeta[j] += dy[j];
        }
    }
    assert_close(
        "70000 rows: dγ",
        fused.dgamma.as_ref().unwrap(),
        &dgamma,
        1e-4,
    );
    assert_close(
        "70000 rows: dβ",
        fused.dbeta.as_ref().unwrap(),
        &dbeta,
        1e-4,
    );
    let after = fused_calls();
    assert!(
        after.forward > before.forward && after.backward > before.backward,
        "CubeBackend did not take the fused path: {before:?} → {after:?}"
    );
}

/// (a) Half precision through the CubeCL kernels: f16 activations with f32 γ/β (the
/// mixed-precision layout of a module whose parameters stay f32). y and dx come back in
/// f16, dγ and dβ in f32, and all agree with the f32 computation to f16's resolution.
#[cfg(feature = "wgpu")]
#[test]
fn cube_backend_half_precision_agrees() {
    use addnorm_kernels::fused::fused_calls;
    use burn::tensor::DType;
    type Ad = addnorm::backend::wgpu::AutodiffBackend;
    let Some(device) = crate::common::wgpu_device(module_path!()) else {
        return;
    };
    if !<Ad as Backend>::supports_dtype(&device, DType::F16) {
        eprintln!("skipped: this wgpu adapter has no f16");
        return;
    }
    let (rows, n) = (24, 96);
    let norm = LayerNormConfig::new(vec![n]).init::<Ad>(&device);
    let x_values: Vec<f64> = random_values(rows * n, 51)
        .iter()
        .map(|v| 40.0 + 2.0 * v)
        .collect();
    let dy = tensor::<Ad, 2>(&random_values(rows * n, 52), [rows, n], &device);
    // Both runs see the f16-rounded inputs; only the arithmetic's precision differs.
    let x16 = tensor::<Ad, 2>(&x_values, [rows, n], &device).cast(DType::F16);
    let run = |dtype: DType| {
        let x = x16.clone().cast(dtype).require_grad();
        let y = norm.forward(x.clone());
        assert_eq!(y.dtype(), dtype);
        let grads = (y.clone().cast(DType::F32) * dy.clone()).sum().backward();
        let dx = x.grad(&grads).expect("dx");
        assert_eq!(dx.dtype(), dtype, "dx dtype");
        let dgamma = norm.gamma.as_ref().unwrap().grad(&grads).expect("dγ");
        let dbeta = norm.beta.as_ref().unwrap().grad(&grads).expect("dβ");
        assert_eq!(dgamma.dtype(), DType::F32, "dγ dtype");
        [values(y), values(dx), values(dgamma), values(dbeta)]
    };
    let before = fused_calls();
    let half = run(DType::F16);
    assert_eq!(
        fused_calls().forward,
        before.forward + 1,
        "f16 forward not fused"
    );
    let full = run(DType::F32);
    for (name, h, f) in ["y", "dx", "dγ", "dβ"]
        .iter()
        .zip(&half)
        .zip(&full)
        .map(|((n, h), f)| (n, h, f))
    {
        assert_close(&format!("f16 {name}"), h, f, 5e-3);
    }
}

/// (a) In f64 the fused and composite paths agree on every variant, edge-case rows
/// included. The tolerance is the composite path's own: on these inputs its dx is good to
/// about 1e-8 relative (checked against central differences, which side with the fused
/// kernel to 1e-10).
#[cfg(feature = "ndarray")]
#[test]
fn fused_matches_composite_in_f64() {
    in_own_process("fused_kernels::fused_matches_composite_in_f64", || {
        type F64 = burn::backend::Autodiff<burn::backend::NdArray<f64>>;
        let device = Default::default();
        let probe = tensor::<F64, 1>(&[1.0], [1], &device);
        assert_eq!(
            probe.dtype(),
            burn::tensor::DType::F64,
            "not running in f64"
        );
        let before = addnorm_kernels::cpu::fused_calls();
        let n = 9;
        for (spec, gamma, beta) in every_variant(n) {
            let case = with_params(Case::random(6, n, spec, 2), gamma, beta);
            assert_paths_agree::<F64>(&case, 1e-7, &device);
            let edges = with_params(edge_case_rows(n, spec), gamma, beta);
            assert_paths_agree::<F64>(&edges, 1e-6, &device);
        }
        let after = addnorm_kernels::cpu::fused_calls();
        assert!(
            after.backward > before.backward,
            "the f64 runs did not take the fused path"
        );
    });
}

on_every_backend! {
    /// `NormBackend::reshape_rows` (how the norms flatten to `[rows, n]`): values in
    /// row-major order, and under autodiff a gradient of the input's shape, also from a
    /// transposed view.
    fn reshape_rows_round_trips_values_and_gradients<B>(device) {
        let data: Vec<f64> = (0..24).map(f64::from).collect();
        let weights: Vec<f64> = (0..24).map(|v| f64::from(v) * 0.5 - 3.0).collect();
        for transposed in [false, true] {
            let leaf = tensor::<B, 3>(&data, [2, 3, 4], device).require_grad();
            let x = if transposed { leaf.clone().swap_dims(1, 2) } else { leaf.clone() };
            let dims = x.dims();
            let flat = B::reshape_rows(x.clone().into_primitive().tensor(), burn::tensor::Shape::new([6, 4]));
            let flat: Tensor<B, 2> = Tensor::from_primitive(TensorPrimitive::Float(flat));
            assert_eq!(values(flat.clone()), values(x.clone().reshape([6, 4])), "transposed {transposed}");
            let w = tensor::<B, 2>(&weights, [6, 4], device);
            let grads = (flat * w.clone()).sum().backward();
            let dx = leaf.grad(&grads).expect("x gradient");
            let expected = w.reshape(dims);
            let expected = if transposed { expected.swap_dims(1, 2) } else { expected };
            assert_eq!(dx.dims(), [2, 3, 4]);
            assert_close("reshape_rows gradient", &values(dx), &values(expected), 0.0);
        }
    }
}

/// y, dx, dα, dγ, dβ of `sum(DyT(x) · dy)` on `[rows, n]`, through the backend's
/// `dynamic_tanh` (fused where the backend has a kernel) or the composite reference.
fn dynamic_tanh_pass<B: NormAutodiffBackend>(
    (rows, n): (usize, usize),
    (gamma_len, beta_len): (Option<usize>, Option<usize>),
    path: Path,
    device: &B::Device,
) -> Vec<Vec<f64>> {
    let seed = (rows * 31 + n) as u64;
    let x_values: Vec<f64> = random_values(rows * n, seed)
        .iter()
        .map(|v| 4.0 * v)
        .collect();
    let x = tensor::<B, 2>(&x_values, [rows, n], device).require_grad();
    let param = |values: Vec<f64>| tensor::<B, 1>(&values, [values.len()], device).require_grad();
    let alpha = param(vec![0.7]);
    let gamma = gamma_len.map(|len| {
        param(
            random_values(len, seed + 1)
                .iter()
                .map(|v| 1.0 + v)
                .collect(),
        )
    });
    let beta = beta_len.map(|len| param(random_values(len, seed + 2)));
    let y = match path {
        Path::Composite => {
            composite::dynamic_tanh(x.clone(), alpha.clone(), gamma.clone(), beta.clone())
        }
        Path::Backend => {
            let primitive = |t: &Tensor<B, 1>| t.clone().into_primitive().tensor();
            Tensor::from_primitive(TensorPrimitive::Float(B::dynamic_tanh(
                x.clone().into_primitive().tensor(),
                primitive(&alpha),
                gamma.as_ref().map(primitive),
                beta.as_ref().map(primitive),
            )))
        }
    };
    let dy = tensor::<B, 2>(&random_values(rows * n, seed + 3), [rows, n], device);
    let grads = (y.clone() * dy).sum().backward();
    let grad = |t: &Tensor<B, 1>| values(t.grad(&grads).expect("parameter gradient"));
    let mut out = vec![values(y), values(x.grad(&grads).expect("dx")), grad(&alpha)];
    out.extend(gamma.as_ref().map(grad));
    out.extend(beta.as_ref().map(grad));
    out
}

on_every_backend! {
    /// (6) DyT through the backend (fused on ndarray; on wgpu Burn's fusion fuses the
    /// composite) matches the composite reference: y, dx, dα, dγ, dβ, for γ/β of length n,
    /// 1 or absent, and widths 1 to 1000.
    fn dynamic_tanh_fused_and_composite_agree<B>(device) {
        let params = [(Some(7), Some(7)), (Some(1), Some(1)), (None, None), (Some(7), None), (None, Some(1))];
        for (gamma, beta) in params {
            let fused = dynamic_tanh_pass::<B>((5, 7), (gamma, beta), Path::Backend, device);
            let reference = dynamic_tanh_pass::<B>((5, 7), (gamma, beta), Path::Composite, device);
            for (i, (a, b)) in fused.iter().zip(&reference).enumerate() {
                assert_close(&format!("DyT γ {gamma:?} β {beta:?}: output {i}"), a, b, 1e-5);
            }
        }
        for (rows, n) in [(1, 1), (257, 33), (3, 1000)] {
            let fused = dynamic_tanh_pass::<B>((rows, n), (Some(n), Some(n)), Path::Backend, device);
            let reference = dynamic_tanh_pass::<B>((rows, n), (Some(n), Some(n)), Path::Composite, device);
            for (i, (a, b)) in fused.iter().zip(&reference).enumerate() {
                assert_close(&format!("DyT {rows}×{n}: output {i}"), a, b, 1e-4);
            }
        }
    }
}

/// (6) On the CPU backend under autodiff, a `DynamicTanh` module's forward and backward
/// each run the fused DyT kernel once.
#[cfg(feature = "ndarray")]
#[test]
fn autodiff_ndarray_takes_the_fused_dynamic_tanh_path() {
    use addnorm::backend::ndarray::{AutodiffBackend as Ad, device};
    use addnorm::nn::DynamicTanhConfig;
    use addnorm_kernels::fused::fused_calls;
    let dyt = DynamicTanhConfig::new(vec![6]).init::<Ad>(&device());
    let x = tensor::<Ad, 3>(&random_values(2 * 4 * 6, 61), [2, 4, 6], &device()).require_grad();
    let before = fused_calls();
    let grads = dyt.forward(x.clone()).sum().backward();
    let after = fused_calls();
    assert_eq!(
        (
            after.forward - before.forward,
            after.backward - before.backward
        ),
        (1, 1)
    );
    assert!(dyt.alpha.grad(&grads).is_some() && x.grad(&grads).is_some());
}
