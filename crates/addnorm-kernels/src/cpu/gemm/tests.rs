//! [`Gemm::gemm_prepared`] against [`Gemm::gemm`] and [`Gemm::gemm_plus_rows`] on B
//! itself, bit for bit, for Bs below and above the direct kernel's bound on every
//! instruction set (above it a strided B is copied into rows for `sgemm`).

use super::{Gemm, Strided};
use crate::cpu::test_values::{gradients, inputs};

/// `C = A·B` (and `+ 1·biasᵀ`) by `gemm_prepared` and by the plain calls, for B stored
/// row-major or read transposed (`Wᵀ`), on widths below and above where f32 copies B into
/// panels, in row blocks that share one prepared B as a linear layer's do.
fn check<E: Gemm>() {
    for [m, k, n] in [
        [40, 32, 40],
        [100, 128, 256],
        [300, 128, 512],
        [37, 64, 300],
        [50, 300, 256],
    ] {
        let a: Vec<E> = inputs(m * k, 0.0137, -6.9);
        let b: Vec<E> = gradients(k * n, 0.021, -10.4);
        let bias: Vec<E> = inputs(n, 0.37, -1.0);
        for transposed in [false, true] {
            // B as [k, n]: row-major, or the transpose of a row-major [n, k].
            let view = if transposed {
                Strided::rows(b.as_ptr().cast_mut(), k).t()
            } else {
                Strided::rows(b.as_ptr().cast_mut(), n)
            };
            for with_bias in [false, true] {
                let bias = with_bias.then_some(bias.as_ptr());
                let mut plain = vec![E::ZERO; m * n];
                let mut prepared = vec![E::ZERO; m * n];
                // SAFETY: every view addresses its own live buffer; each C is written by
                // its own calls, in disjoint row blocks.
                unsafe {
                    let ready = E::prepare_b(view, [k, n]);
                    for r0 in (0..m).step_by(24) {
                        let rows = 24.min(m - r0);
                        let a = Strided::rows(a.as_ptr().add(r0 * k).cast_mut(), k);
                        let c = Strided::rows(plain.as_mut_ptr().add(r0 * n), n);
                        match bias {
                            Some(bias) => E::gemm_plus_rows([rows, k, n], E::ONE, a, view, bias, c),
                            None => E::gemm([rows, k, n], E::ONE, a, view, E::ZERO, c),
                        }
                        let c = Strided::rows(prepared.as_mut_ptr().add(r0 * n), n);
                        E::gemm_prepared([rows, k, n], E::ONE, a, &ready, bias, c);
                    }
                }
                // Debug prints the shortest text that reads back to the same value, and
                // tells -0 from 0: equal texts are equal bits.
                let same = plain
                    .iter()
                    .zip(&prepared)
                    .all(|(p, q)| format!("{p:?}") == format!("{q:?}"));
                assert!(same, "{m}x{k}x{n} transposed {transposed} bias {with_bias}");
            }
        }
    }
}

#[test]
fn a_prepared_b_gives_the_bits_of_b_itself() {
    check::<f32>();
    check::<f64>();
}
