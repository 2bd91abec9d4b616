//! A scalar model of `matrixmultiply`'s f32 kernels, element by element, and the direct
//! kernel's copies for both instruction sets checked against it on any CPU that runs them.
//!
//! The other tests compare the direct kernel with `matrixmultiply` itself, which runs one
//! set per CPU: an AVX-512 host never checks the AVX2 copy there (PERFORMANCE.md §48). The
//! model is checked against `matrixmultiply` on the host's own set, and each copy the CPU
//! can run against the model with that copy's tiles, so both copies are checked wherever
//! AVX-512 runs.
//!
//! # Formula
//! For element `(i, j)` and chains `k0..k0 + KC` in order, `p = fma(a_ik, b_kj, …
//! fma(a_ik0, b_k0j, 0))`, then with `L` the set's tile side (16 or 8) and `interior` that
//! `(⌊i/L⌋ + 1)·L ≤ m` and `(⌊j/L⌋ + 1)·L ≤ n`:
//!
//! ```text
//! αp = α·p (AVX-512)   or   fma(α, p, 0) (AVX2)
//! first chain, β = 0:   C = αp
//! interior:             C = fma(α, p, β·C_in)          (later chains: β = 1, C_in = C)
//! elsewhere:            C = β·C_in + αp
//! ```
//!
//! # Shapes
//! `A: [m, k]`, `B: [k, n]`, `C: [m, n]`, any strides (views of [`Layout`]s).

use super::tests::{Layout, cpu_kernel, reference_sgemm, values};
use super::*;

/// `C ← α·A·B + β·C` as `matrixmultiply`'s kernel on `kernel`'s set forms each element
/// (the module's formula), into `c`.
fn model(
    kernel: Kernel,
    [m, k, n]: [usize; 3],
    alpha: f32,
    [a, b]: [Strided<f32>; 2],
    beta: f32,
    c: Strided<f32>,
) {
    let lanes = match kernel {
        Kernel::Avx512 => 16,
        Kernel::Avx2Fma => 8,
    };
    let scaled = |p: f32| match kernel {
        Kernel::Avx512 => alpha * p,
        Kernel::Avx2Fma => alpha.mul_add(p, 0.0),
    };
    let at = |view: Strided<f32>, r: usize, col: usize| view.from(r, col).ptr;
    for (i, j) in (0..m).flat_map(|i| (0..n).map(move |j| (i, j))) {
        let interior = (i / lanes + 1) * lanes <= m && (j / lanes + 1) * lanes <= n;
        for k0 in (0..k).step_by(KC) {
            // SAFETY: (i, t) of A, (t, j) of B and (i, j) of C lie in the caller's views.
            unsafe {
                let p = (k0..(k0 + KC).min(k))
                    .fold(0.0f32, |p, t| (*at(a, i, t)).mul_add(*at(b, t, j), p));
                let (beta, c_ij) = (if k0 == 0 { beta } else { 1.0 }, at(c, i, j));
                *c_ij = if beta == 0.0 {
                    scaled(p)
                } else if interior {
                    alpha.mul_add(p, beta * *c_ij)
                } else {
                    beta * *c_ij + scaled(p)
                };
            }
        }
    }
}

/// C from the same operands by `kernel`'s direct copy (`Some`, if it took the call) or by
/// `matrixmultiply` (`None`), and by the model; whether the two are equal bit for bit.
fn against_model(
    kernel: Option<Kernel>,
    model_kernel: Kernel,
    dims: [usize; 3],
    layouts: [Layout; 3],
    (alpha, beta): (f32, f32),
) -> bool {
    let [m, k, n] = dims;
    let [la, lb, lc] = layouts;
    let (mut a, mut b) = (values(la.len(m, k), 0), values(lb.len(k, n), 1));
    let mut c_kernel = values(lc.len(m, n), 2);
    let mut c_model = c_kernel.clone();
    let ab = [la.view(a.as_mut_ptr(), m, k), lb.view(b.as_mut_ptr(), k, n)];
    // SAFETY: every view addresses its own live buffer; each C is written by one call.
    unsafe {
        let c = lc.view(c_kernel.as_mut_ptr(), m, n);
        match kernel {
            Some(kernel) => {
                let took = run(Some(kernel), dims, alpha, ab, (beta, c), c);
                assert!(took.is_some(), "{kernel:?} takes {dims:?}");
            }
            None => reference_sgemm(dims, alpha, ab, beta, c),
        }
        model(
            model_kernel,
            dims,
            alpha,
            ab,
            beta,
            lc.view(c_model.as_mut_ptr(), m, n),
        );
    }
    c_kernel
        .iter()
        .zip(&c_model)
        .all(|(x, y)| x.to_bits() == y.to_bits())
}

/// The shapes: whole and partial tiles of either set, one chain or several, the d128
/// model's products at the bounds (a `[128, 512]` weight; a weight gradient's `[256, 512]`
/// block of dY beside a copied A); and the layouts the kernels call with.
fn cases() -> Vec<([usize; 3], [Layout; 3])> {
    let (rows, cols) = (
        Layout {
            transposed: false,
            pad: 3,
        },
        Layout {
            transposed: true,
            pad: 1,
        },
    );
    let c = Layout {
        transposed: false,
        pad: 2,
    };
    let mut cases = Vec::new();
    for dims in [[13, 300, 40], [40, 600, 33], [17, 17, 16], [64, 128, 512]] {
        for [la, lb] in [[rows, rows], [cols, rows], [rows, cols]] {
            cases.push((dims, [la, lb, c]));
        }
    }
    // A weight gradient: Xᵀ (unit row stride) times a block of dY, over the rows bound.
    cases.push(([128, 256, 512], [cols, rows, c]));
    cases
}

const SCALINGS: [(f32, f32); 4] = [(1.0, 0.0), (0.3, 0.0), (1.0, 1.0), (0.3, 0.7)];

/// The model is `matrixmultiply` on this CPU's own set, bit for bit.
#[test]
fn the_model_is_matrixmultiplys_kernel() {
    let Some(own) = cpu_kernel() else {
        eprintln!("SKIPPED: the CPU runs no direct kernel");
        return;
    };
    for (dims, layouts) in cases() {
        for scaling in SCALINGS {
            assert!(
                against_model(None, own, dims, layouts, scaling),
                "sgemm against the {own:?} model: {dims:?} {layouts:?} {scaling:?}"
            );
        }
    }
}

/// Each copy of the direct kernel this CPU can run, AVX2 on an AVX-512 CPU included, gives
/// the model's bits for its set.
#[test]
fn every_copy_the_cpu_runs_gives_the_models_bits() {
    let copies = [
        (Kernel::Avx512, is_x86_feature_detected!("avx512f")),
        (
            Kernel::Avx2Fma,
            is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
        ),
    ];
    for (kernel, _) in copies.into_iter().filter(|&(_, runs)| runs) {
        for (dims, layouts) in cases() {
            for scaling in SCALINGS {
                assert!(
                    against_model(Some(kernel), kernel, dims, layouts, scaling),
                    "{kernel:?}: {dims:?} {layouts:?} {scaling:?}"
                );
            }
        }
    }
}
