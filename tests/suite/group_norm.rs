//! GroupNorm and InstanceNorm (`addnorm::nn::{GroupNorm, InstanceNorm}`) against PyTorch:
//! `torch.nn.GroupNorm` / `nn.InstanceNorm*d` in float64 on the same float32 inputs
//! (`tests/fixtures/make_group_norm_fixtures.py`), forward and every gradient, on the fused
//! path and under `ForceComposite`, at ranks 2 to 5; and an `nn.GroupNorm` state dict
//! loaded through `LoadPytorch`.

use addnorm::kernels::composite::ForceComposite;
use addnorm::nn::pytorch::{LoadPytorch, StateDict};
use addnorm::nn::{GroupNorm, GroupNormConfig, InstanceNormConfig};
use burn::module::Param;
use burn::tensor::Tensor;
use serde::Deserialize;

use crate::common::{assert_close, pytorch_checkpoint, tensor, values};
use crate::on_every_backend;

/// One generated case; see the generator script.
#[derive(Deserialize)]
struct Case {
    name: String,
    shape: Vec<usize>,
    groups: usize,
    affine: bool,
    epsilon: f64,
    instance: bool,
    x: Vec<f64>,
    dy: Vec<f64>,
    gamma: Option<Vec<f64>>,
    beta: Option<Vec<f64>>,
    y: Vec<f64>,
    dx: Vec<f64>,
    dgamma: Option<Vec<f64>>,
    dbeta: Option<Vec<f64>>,
}

/// The loaded `nn.GroupNorm(4, 8)`'s input and output.
#[derive(Deserialize)]
struct Loaded {
    shape: Vec<usize>,
    groups: usize,
    x: Vec<f64>,
    y: Vec<f64>,
}

#[derive(Deserialize)]
struct Fixtures {
    cases: Vec<Case>,
    loaded: Loaded,
}

fn fixtures() -> Fixtures {
    serde_json::from_str(include_str!("../fixtures/group_norms.json")).expect("group_norms.json")
}

/// `(y, dx, dγ, dβ)` of the case's module at rank `D`, for `L = Σ y·dy`.
fn run_case<B: addnorm::NormAutodiffBackend, const D: usize>(
    case: &Case,
    device: &B::Device,
) -> [Vec<f64>; 4] {
    let shape: [usize; D] = case.shape.clone().try_into().expect("rank");
    let param = |v: &Option<Vec<f64>>| {
        v.as_ref()
            .map(|v| Param::from_tensor(tensor::<B, 1>(v, [v.len()], device)))
    };
    let x = tensor::<B, D>(&case.x, shape, device).require_grad();
    let dy = tensor::<B, D>(&case.dy, shape, device);
    let channels = case.shape[1];
    let (y, gamma, beta) = if case.instance {
        let mut norm = InstanceNormConfig::new(channels)
            .with_epsilon(case.epsilon)
            .with_affine(case.affine)
            .init::<B>(device);
        (norm.gamma, norm.beta) = (param(&case.gamma), param(&case.beta));
        (norm.forward(x.clone()), norm.gamma, norm.beta)
    } else {
        let mut norm: GroupNorm<B> = GroupNormConfig::new(case.groups, channels)
            .with_epsilon(case.epsilon)
            .with_affine(case.affine)
            .init(device);
        (norm.gamma, norm.beta) = (param(&case.gamma), param(&case.beta));
        (norm.forward(x.clone()), norm.gamma, norm.beta)
    };
    let grads = (y.clone() * dy).sum().backward();
    let grad = |p: Option<Param<Tensor<B, 1>>>| {
        p.map_or(vec![], |p| {
            values(p.grad(&grads).expect("parameter gradient"))
        })
    };
    [
        values(y),
        values(x.grad(&grads).expect("dx")),
        grad(gamma),
        grad(beta),
    ]
}

/// Checks every case against PyTorch: forward within 1e-4 and gradients within 2e-4 of
/// their scale (`assert_close`'s relative measure).
fn check_all<B: addnorm::NormAutodiffBackend>(label: &str, device: &B::Device) {
    for case in fixtures().cases {
        let got = match case.shape.len() {
            2 => run_case::<B, 2>(&case, device),
            3 => run_case::<B, 3>(&case, device),
            4 => run_case::<B, 4>(&case, device),
            5 => run_case::<B, 5>(&case, device),
            r => panic!("no rank {r} case"),
        };
        let name = format!("{label} {}", case.name);
        assert_close(&format!("{name}: y"), &got[0], &case.y, 1e-4);
        assert_close(&format!("{name}: dx"), &got[1], &case.dx, 2e-4);
        let expected = [
            case.dgamma.unwrap_or_default(),
            case.dbeta.unwrap_or_default(),
        ];
        assert_eq!(
            got[2].is_empty(),
            !case.affine,
            "{name}: dγ exactly when affine"
        );
        assert_close(&format!("{name}: dgamma"), &got[2], &expected[0], 2e-4);
        assert_close(&format!("{name}: dbeta"), &got[3], &expected[1], 2e-4);
    }
}

on_every_backend! {
    /// The fused path (the CPU kernels on ndarray; the fused row norm and Burn's affine ops
    /// on wgpu) against `torch.nn.GroupNorm` and `nn.InstanceNorm*d`.
    fn group_norm_matches_pytorch<B>(device) {
        check_all::<B>("fused", device);
    }

    /// The composite path against the same truth.
    fn group_norm_composite_matches_pytorch<B>(device) {
        let _composite = ForceComposite::new();
        check_all::<B>("composite", device);
    }

    /// Wu & He 2018's "GN's computation is independent of batch sizes": each sample's
    /// output, alone in a batch of one, equals its row of the batch of 6 (to 1e-6).
    fn group_norm_does_not_depend_on_the_batch<B>(device) {
        let norm: GroupNorm<B> = GroupNormConfig::new(4, 8).init(device);
        let n = 6 * 8 * 5;
        let x: Vec<f64> = (0..n).map(|i| ((i * 37) % 101) as f64 / 17.0 - 3.0).collect();
        let batch = values(norm.forward(tensor::<B, 3>(&x, [6, 8, 5], device)));
        for sample in 0..6 {
            let one = &x[sample * 40..(sample + 1) * 40];
            let alone = values(norm.forward(tensor::<B, 3>(one, [1, 8, 5], device)));
            assert_close(
                &format!("sample {sample}"),
                &alone,
                &batch[sample * 40..(sample + 1) * 40],
                1e-6,
            );
        }
    }

    /// An `nn.GroupNorm(4, 8)` state dict (`weight`, `bias`) loads, and the module then
    /// gives PyTorch's output.
    fn group_norm_loads_torch_weights_and_matches_its_output<B>(device) {
        let loaded = fixtures().loaded;
        let state = StateDict::from_file(pytorch_checkpoint("group_norm.pt")).expect("group_norm.pt");
        assert_eq!(state.keys(), ["bias", "weight"]);
        let norm = GroupNormConfig::new(loaded.groups, loaded.shape[1])
            .init::<B>(device)
            .load_pytorch(&state, "")
            .expect("loads");
        let shape: [usize; 4] = loaded.shape.try_into().expect("rank 4");
        let y = norm.forward(tensor::<B, 4>(&loaded.x, shape, device));
        assert_close("loaded group norm", &values(y), &loaded.y, 1e-5);
    }
}

/// A state dict of the wrong width is an error that names the key.
#[test]
fn a_wrong_width_is_a_named_error() {
    type B = addnorm::backend::ndarray::Backend;
    let state = StateDict::from_file(pytorch_checkpoint("group_norm.pt")).expect("group_norm.pt");
    let norm = GroupNormConfig::new(2, 6).init::<B>(&Default::default());
    let message = norm.load_pytorch(&state, "").unwrap_err().to_string();
    assert!(message.contains("weight"), "{message}");
}
