//! Finite-difference gradient checks in f64: the autodiff gradients of every norm family
//! and variant against central differences of `loss = Σ y·dy`.
//!
//! Each runs in its own process (see [`in_own_process`]) so that `NdArray<f64>` really
//! computes in f64; the first check asserts it.

use addnorm::nn::{
    Affine, DynamicTanhConfig, EpsilonPlacement, LayerNormConfig, Norm, NormConfig, RmsNormConfig,
    Variance,
};
use burn::backend::{Autodiff, NdArray};
use burn::module::Param;
use burn::tensor::{Distribution, Tensor, backend::Backend};

use crate::common::{in_own_process, tensor, values};

type F64 = Autodiff<NdArray<f64>>;

/// The learnable tensors of a norm, flattened, in the order α, γ, β (those present).
fn parameters(norm: &Norm<F64>) -> Vec<&Param<Tensor<F64, 1>>> {
    let (alpha, gamma, beta) = match norm {
        Norm::Layer(m) => (None, &m.gamma, &m.beta),
        Norm::Rms(m) => (None, &m.gamma, &m.beta),
        Norm::DynamicTanh(m) => (Some(&m.alpha), &m.gamma, &m.beta),
        _ => return vec![],
    };
    alpha.into_iter().chain(gamma).chain(beta).collect()
}

/// Replaces the learnable tensors (same order as [`parameters`]) with `values`.
fn set_parameters(norm: &mut Norm<F64>, new: &[Vec<f64>]) {
    let device = Default::default();
    let p = |v: &Vec<f64>| Param::from_tensor(tensor::<F64, 1>(v, [v.len()], &device));
    let mut it = new.iter();
    let (alpha, gamma, beta) = match norm {
        Norm::Layer(m) => (None, &mut m.gamma, &mut m.beta),
        Norm::Rms(m) => (None, &mut m.gamma, &mut m.beta),
        Norm::DynamicTanh(m) => (Some(&mut m.alpha), &mut m.gamma, &mut m.beta),
        _ => return,
    };
    if let Some(alpha) = alpha {
        *alpha = p(it.next().unwrap());
    }
    for slot in [gamma, beta] {
        if slot.is_some() {
            *slot = Some(p(it.next().unwrap()));
        }
    }
}

/// Checks dx and every parameter gradient of `config` on an input of `shape`.
fn gradcheck(config: NormConfig, shape: [usize; 3]) {
    let device = Default::default();
    let mut norm = config.init::<F64>(&device);
    // Move γ, β, α away from 1, 0, 0.5 so that their gradients are exercised in general.
    let perturbed: Vec<Vec<f64>> = parameters(&norm)
        .iter()
        .map(|p| {
            let n = p.dims()[0];
            (0..n).map(|i| 0.7 + 0.13 * i as f64).collect()
        })
        .collect();
    set_parameters(&mut norm, &perturbed);

    let x = Tensor::<F64, 3>::random(shape, Distribution::Normal(0.5, 1.5), &device);
    assert_eq!(
        x.dtype(),
        burn::tensor::DType::F64,
        "the gradient check must run in f64"
    );
    let dy = Tensor::<F64, 3>::random(shape, Distribution::Normal(0.0, 1.0), &device);
    let loss_of = |norm: &Norm<F64>, x: Tensor<F64, 3>| -> f64 {
        values((norm.forward(x) * dy.clone()).sum())[0]
    };

    // Analytic.
    let xg = x.clone().require_grad();
    let grads = (norm.forward(xg.clone()) * dy.clone()).sum().backward();
    let mut analytic = vec![values(xg.grad(&grads).unwrap())];
    analytic.extend(
        parameters(&norm)
            .iter()
            .map(|p| values(p.grad(&grads).unwrap())),
    );

    // Numerical, by central differences.
    let h = 1e-6;
    let x0 = values(x.clone());
    let mut numeric = vec![Vec::new()];
    for i in 0..x0.len() {
        let at = |d: f64| {
            let mut v = x0.clone();
            v[i] += d;
            loss_of(&norm, tensor::<F64, 3>(&v, shape, &device))
        };
        numeric[0].push((at(h) - at(-h)) / (2.0 * h));
    }
    for k in 0..perturbed.len() {
        let mut g = Vec::new();
        for i in 0..perturbed[k].len() {
            let at = |d: f64| {
                let mut p = perturbed.clone();
                p[k][i] += d;
                let mut m = norm.clone();
                set_parameters(&mut m, &p);
                loss_of(&m, x.clone())
            };
            g.push((at(h) - at(-h)) / (2.0 * h));
        }
        numeric.push(g);
    }

    for (k, (a, n)) in analytic.iter().zip(&numeric).enumerate() {
        let scale = n.iter().fold(1.0_f64, |m, v| m.max(v.abs()));
        let err = crate::common::max_abs_diff(a, n);
        assert!(
            err < 1e-6 * scale,
            "{config:?}: gradient #{k} (0 = dx) differs from finite differences by {err:.3e}\n{a:?}\n{n:?}"
        );
    }
}

#[test]
fn layer_norm_variants() {
    in_own_process("norm_gradcheck::layer_norm_variants", || {
        <F64 as Backend>::seed(&Default::default(), 7);
        for variance in [Variance::Biased, Variance::Unbiased] {
            for placement in [EpsilonPlacement::InsideSqrt, EpsilonPlacement::AddedToStd] {
                for affine in [Affine::Elementwise, Affine::Scalar, Affine::Off] {
                    let config = LayerNormConfig::new(vec![5])
                        .with_variance(variance)
                        .with_epsilon_placement(placement)
                        .with_affine(affine);
                    gradcheck(NormConfig::Layer(config), [2, 3, 5]);
                }
            }
        }
    });
}

#[test]
fn layer_norm_over_two_dimensions() {
    in_own_process("norm_gradcheck::layer_norm_over_two_dimensions", || {
        <F64 as Backend>::seed(&Default::default(), 8);
        let config = LayerNormConfig::new(vec![3, 4]).with_variance(Variance::Unbiased);
        gradcheck(NormConfig::Layer(config), [2, 3, 4]);
    });
}

#[test]
fn rms_norm_variants() {
    in_own_process("norm_gradcheck::rms_norm_variants", || {
        <F64 as Backend>::seed(&Default::default(), 9);
        for partial in [None, Some(0.5), Some(0.2)] {
            for (affine, bias) in [(Affine::Elementwise, true), (Affine::Scalar, false)] {
                let config = RmsNormConfig::new(vec![6])
                    .with_partial(partial)
                    .with_affine(affine)
                    .with_bias(bias);
                gradcheck(NormConfig::Rms(config), [2, 2, 6]);
            }
        }
        gradcheck(
            NormConfig::rms(0).with_normalized_shape(vec![2, 3]),
            [3, 2, 3],
        );
    });
}

#[test]
fn dynamic_tanh_variants() {
    in_own_process("norm_gradcheck::dynamic_tanh_variants", || {
        <F64 as Backend>::seed(&Default::default(), 10);
        for affine in [Affine::Elementwise, Affine::Scalar, Affine::Off] {
            let config = DynamicTanhConfig::new(vec![4]).with_affine(affine);
            gradcheck(NormConfig::DynamicTanh(config), [2, 3, 4]);
        }
    });
}
