//! The fused GroupNorm against an f64 reference, finite differences, the composite path,
//! and thread counts.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::{Tensor, TensorData};

use super::cpu::{backward, forward};
use super::group_norm;
use super::spec::{GroupDims, GroupNormSpec};
use crate::composite::ForceComposite;
use crate::cpu::test_values::on_threads;
use crate::fused::fused_calls;

/// Deterministic values in about [−2, 2], with an offset.
fn values(len: usize, seed: usize, offset: f64) -> Vec<f64> {
    (0..len)
        .map(|i| ((i * 7919 + seed * 104_729) % 1009) as f64 / 250.0 - 2.0 + offset)
        .collect()
}

/// The textbook GroupNorm in f64: `(y, dx, dγ, dβ)` for `L = Σ y·dy`.
fn reference(
    dims: GroupDims,
    x: &[f64],
    gamma: &[f64],
    beta: &[f64],
    dy: &[f64],
    eps: f64,
) -> [Vec<f64>; 4] {
    let (len, cg, s) = (dims.row_len(), dims.group_channels(), dims.spatial);
    let (mut y, mut dx) = (vec![0.0; x.len()], vec![0.0; x.len()]);
    let (mut dg, mut db) = (vec![0.0; dims.channels], vec![0.0; dims.channels]);
    for row in 0..dims.rows() {
        let xs = &x[row * len..(row + 1) * len];
        let mean = xs.iter().sum::<f64>() / len as f64;
        let var = xs.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / len as f64;
        let r = 1.0 / (var + eps).sqrt();
        let c0 = (row % dims.groups) * cg;
        let (mut sum_g, mut sum_gx) = (0.0, 0.0);
        for j in 0..len {
            let (ch, xh) = (c0 + j / s, (xs[j] - mean) * r);
            y[row * len + j] = xh * gamma[ch] + beta[ch];
            let g = dy[row * len + j] * gamma[ch];
            sum_g += g;
            sum_gx += g * xh;
            dg[ch] += dy[row * len + j] * xh;
            db[ch] += dy[row * len + j];
        }
        for j in 0..len {
            let (ch, xh) = (c0 + j / s, (xs[j] - mean) * r);
            let g = dy[row * len + j] * gamma[ch];
            dx[row * len + j] = r * (g - sum_g / len as f64 - xh * sum_gx / len as f64);
        }
    }
    [y, dx, dg, db]
}

fn worst(a: &[f64], b: &[f64]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max)
}

#[test]
fn kernels_match_the_reference_in_f64_and_f32() {
    for (shape, groups, offset) in [
        ([3, 6, 5], 3, 0.0),
        ([2, 4, 1], 4, 0.0),
        ([2, 8, 9], 1, 1e3),
    ] {
        let spec = GroupNormSpec {
            groups,
            epsilon: 1e-5,
        };
        let dims = GroupDims::new(&shape, &spec);
        let n = shape.iter().product();
        let (x, dy) = (values(n, 1, offset), values(n, 2, 0.0));
        let gamma: Vec<f64> = values(shape[1], 3, 1.0);
        let beta = values(shape[1], 4, 0.0);
        let truth = reference(dims, &x, &gamma, &beta, &dy, 1e-5);
        let (y, stats) = forward(dims, &x, &gamma, &beta, 1e-5);
        let (dx, dg, db) = backward(dims, &x, &gamma, (&stats.0, &stats.1), &dy);
        let dx = dx.into_vec();
        for (got, want) in [
            (&y, &truth[0]),
            (&dx, &truth[1]),
            (&dg, &truth[2]),
            (&db, &truth[3]),
        ] {
            assert!(
                worst(got, want) < 1e-9,
                "{shape:?} f64: {}",
                worst(got, want)
            );
        }
        let f = |v: &[f64]| v.iter().map(|&v| v as f32).collect::<Vec<f32>>();
        let (y, stats) = forward(dims, &f(&x), &f(&gamma), &f(&beta), 1e-5);
        let (dx, dg, db) = backward(dims, &f(&x), &f(&gamma), (&stats.0, &stats.1), &f(&dy));
        let up = |v: &[f32]| v.iter().map(|&v| v as f64).collect::<Vec<f64>>();
        // A large offset costs f32 its low digits in x itself (1e3 ± 2 holds about 4).
        let tolerance = if offset > 0.0 { 2e-2 } else { 2e-4 };
        for (got, want) in [(up(&y), &truth[0]), (up(&dx), &truth[1])] {
            assert!(
                worst(&got, want) < tolerance,
                "{shape:?} f32: {}",
                worst(&got, want)
            );
        }
        for (got, want) in [(up(&dg), &truth[2]), (up(&db), &truth[3])] {
            assert!(
                worst(&got, want) < 50.0 * tolerance,
                "{shape:?} f32 dγ/dβ: {}",
                worst(&got, want)
            );
        }
    }
}

/// The gradients of `L = Σ y·dy` against central differences of the f64 forward.
#[test]
fn backward_matches_central_differences() {
    let shape = [2, 6, 4];
    let spec = GroupNormSpec {
        groups: 2,
        epsilon: 1e-5,
    };
    let dims = GroupDims::new(&shape, &spec);
    let n = 48;
    let (x, dy) = (values(n, 5, 0.3), values(n, 6, 0.0));
    let (gamma, beta) = (values(6, 7, 1.0), values(6, 8, 0.0));
    let loss = |x: &[f64], g: &[f64], b: &[f64]| -> f64 {
        let (y, _) = forward(dims, x, g, b, 1e-5);
        y.iter().zip(&dy).map(|(y, d)| y * d).sum()
    };
    let (_, stats) = forward(dims, &x, &gamma, &beta, 1e-5);
    let (dx, dg, db) = backward(dims, &x, &gamma, (&stats.0, &stats.1), &dy);
    let h = 1e-6;
    let numeric = |which: usize, i: usize| {
        let mut p = [x.clone(), gamma.clone(), beta.clone()];
        let mut m = p.clone();
        p[which][i] += h;
        m[which][i] -= h;
        (loss(&p[0], &p[1], &p[2]) - loss(&m[0], &m[1], &m[2])) / (2.0 * h)
    };
    for (i, &d) in dx.iter().enumerate().take(n) {
        assert!((d - numeric(0, i)).abs() < 1e-6, "dx[{i}]");
    }
    for c in 0..6 {
        assert!((dg[c] - numeric(1, c)).abs() < 1e-6, "dγ[{c}]");
        assert!((db[c] - numeric(2, c)).abs() < 1e-6, "dβ[{c}]");
    }
}

/// Large calls split into tasks give the same bits on 1, 2 and 3 threads.
#[test]
fn results_do_not_depend_on_the_thread_count() {
    // 64 samples × 4 groups of 2 channels × 4096 positions: 256 rows of 8 Ki values,
    // several tasks.
    let shape = [64, 8, 4096];
    let spec = GroupNormSpec {
        groups: 4,
        epsilon: 1e-5,
    };
    let dims = GroupDims::new(&shape, &spec);
    let n: usize = shape.iter().product();
    let x: Vec<f32> = values(n, 9, 0.5).iter().map(|&v| v as f32).collect();
    let dy: Vec<f32> = values(n, 10, 0.0).iter().map(|&v| v as f32).collect();
    let gamma: Vec<f32> = (0..8).map(|c| 1.0 + c as f32 / 8.0).collect();
    let beta = vec![0.25_f32; 8];
    let run = || {
        let (y, stats) = forward(dims, &x, &gamma, &beta, 1e-5);
        let (dx, dg, db) = backward(dims, &x, &gamma, (&stats.0, &stats.1), &dy);
        (y, dx, dg, db)
    };
    let one = on_threads(1, run);
    assert_eq!(one, on_threads(2, run));
    assert_eq!(one, on_threads(3, run));
}

/// The op on `Autodiff<NdArray>`: the fused path runs (its backward counted), and it
/// matches the composite path in value and in every gradient, with and without the affine
/// map, on ranks 2, 3 and 4.
#[test]
fn fused_and_composite_paths_agree_through_autodiff() {
    type B = Autodiff<NdArray>;
    let device = Default::default();
    let check = |shape: Vec<usize>, groups: usize, affine: bool| {
        let n: usize = shape.iter().product();
        let c = shape[1];
        let spec = GroupNormSpec {
            groups,
            epsilon: 1e-5,
        };
        let run = |composite: bool| {
            let _guard = composite.then(ForceComposite::new);
            let x = Tensor::<B, 1>::from_data(
                TensorData::new(values(n, 11, 0.2).iter().map(|&v| v as f32).collect(), [n]),
                &device,
            )
            .require_grad();
            let g = Tensor::<B, 1>::from_data(
                TensorData::new(values(c, 12, 1.0).iter().map(|&v| v as f32).collect(), [c]),
                &device,
            )
            .require_grad();
            let b = Tensor::<B, 1>::from_data(
                TensorData::new(values(c, 13, 0.0).iter().map(|&v| v as f32).collect(), [c]),
                &device,
            )
            .require_grad();
            let w = Tensor::<B, 1>::from_data(
                TensorData::new(values(n, 14, 0.0).iter().map(|&v| v as f32).collect(), [n]),
                &device,
            );
            // The op on x viewed at the case's rank, flattened back.
            let affine = affine.then(|| (g.clone(), b.clone()));
            let y = match shape.len() {
                2 => group_norm(x.clone().reshape([shape[0], shape[1]]), affine, spec).reshape([n]),
                3 => group_norm(
                    x.clone().reshape([shape[0], shape[1], shape[2]]),
                    affine,
                    spec,
                )
                .reshape([n]),
                _ => group_norm(
                    x.clone().reshape([shape[0], shape[1], shape[2], shape[3]]),
                    affine,
                    spec,
                )
                .reshape([n]),
            };
            let grads = (y.clone() * w).sum().backward();
            let y: Vec<f32> = y.into_data().to_vec().expect("f32");
            let read = |t: Option<Tensor<NdArray, 1>>| -> Vec<f32> {
                t.map_or(vec![], |t| t.into_data().to_vec().expect("f32"))
            };
            (
                y,
                read(x.grad(&grads)),
                read(g.grad(&grads)),
                read(b.grad(&grads)),
            )
        };
        let before = fused_calls().backward;
        let fused = run(false);
        assert_eq!(
            fused_calls().backward,
            before + 1,
            "{shape:?}: one fused backward"
        );
        let composite = run(true);
        let close = |a: &[f32], b: &[f32]| {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| (a - b).abs() < 1e-4)
        };
        assert!(close(&fused.0, &composite.0), "{shape:?} y");
        assert!(close(&fused.1, &composite.1), "{shape:?} dx");
        assert!(close(&fused.2, &composite.2), "{shape:?} dγ");
        assert!(close(&fused.3, &composite.3), "{shape:?} dβ");
        assert_eq!(
            fused.2.is_empty(),
            !affine,
            "{shape:?}: dγ exactly when affine"
        );
    };
    check(vec![4, 6], 3, true);
    check(vec![2, 6, 5], 2, true);
    check(vec![2, 4, 3, 3], 4, false);
    check(vec![2, 4, 3, 3], 1, true);
}

#[test]
#[should_panic(expected = "do not split into 4 equal groups")]
fn channels_that_do_not_split_panic() {
    let x = Tensor::<NdArray, 3>::zeros([1, 6, 2], &Default::default());
    let _ = group_norm(
        x,
        None,
        GroupNormSpec {
            groups: 4,
            epsilon: 1e-5,
        },
    );
}
