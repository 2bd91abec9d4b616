//! `matrixmultiply` products that run on the calling thread, whatever features
//! `matrixmultiply` was built with.
//!
//! burn-ndarray's default feature `multi-threads` turns on `matrixmultiply`'s `threading`,
//! and Cargo unifies features: a user whose own `burn` dependency keeps its defaults gets a
//! threaded `matrixmultiply` inside addnorm too. `matrixmultiply` 0.3 then splits every
//! product with `m·k + k·n ≥ 2¹⁵` ([`POOL_BOUND`]) across its own pool, which runs inside
//! addnorm's parallel row tasks and oversubscribes the cores: on a 2-core Zen 3 the d128
//! model's step took 1.40× as long (PERFORMANCE.md §41). [`in_blocks`] hands it only
//! products below that size, so it never forks. Blocks cost packing (`matrixmultiply`
//! copies each block's A and B), so [`super::pool`] uses them only where `matrixmultiply`
//! does fork, and one call elsewhere.
//!
//! # Formula
//! `C ← α·A·B + β·C` as products of blocks, for each block of rows `I` and columns `J`,
//! and the blocks `P₁, P₂, …` of `k` in order:
//!
//! ```text
//! C[I, J] ← α·A[I, P₁]·B[P₁, J] + β·C[I, J]
//! C[I, J] ← α·A[I, Pᵢ]·B[Pᵢ, J] + 1·C[I, J]      i > 1
//! ```
//!
//! The bits are those of one call. `k` is split only at multiples of [`KC`], where
//! `matrixmultiply` itself ends one summation chain and joins the next to C with `β = 1`;
//! `m` and `n` only at multiples of [`TILE`], a multiple of every x86 kernel's tile sides
//! (8 or 16), so each element lies in the same kind of tile (whole or edge), which decides
//! how its epilogue rounds.
//!
//! # Shapes
//! `A: [m, k]`, `B: [k, n]`, `C: [m, n]`; blocks `[mb, kb, nb]` with `kb ≤ 256` and
//! `mb·kb + kb·nb < 2¹⁵` ([`blocks`]).

use super::Strided;
// `matrixmultiply`'s `kc`, the same for `f64` (`D_KC`) as for `f32` (`S_KC`): the length of
// one summation chain, so the only places where `k` may be split without changing a bit.
use super::direct::KC;
use crate::cpu::real::Real;

/// `m·k + k·n` from which `matrixmultiply` 0.3 (`threading` on) may split one product
/// across its pool: its `LoopThreadConfig` allows `(m·k + k·n) / 2¹⁴` threads.
const POOL_BOUND: usize = 1 << 15;

/// The step at which `m` and `n` are split: a multiple of the tile sides of every x86
/// `sgemm` and `dgemm` kernel (8 × 8, 16 × 16, 8 × 4, 8 × 8).
const TILE: usize = 16;

/// `matrixmultiply`'s `sgemm` or `dgemm`: `C ← α·A·B + β·C` from `m, k, n, α`, A's
/// pointer and row and column strides, B's, `β`, and C's.
pub(super) type Product<E> = unsafe fn(
    usize,
    usize,
    usize,
    E,
    *const E,
    isize,
    isize,
    *const E,
    isize,
    isize,
    E,
    *mut E,
    isize,
    isize,
);

/// `product` on strided views.
///
/// # Safety
/// As [`super::Gemm::gemm`].
pub(super) unsafe fn call<E>(
    product: Product<E>,
    [m, k, n]: [usize; 3],
    alpha: E,
    [a, b]: [Strided<E>; 2],
    beta: E,
    c: Strided<E>,
) {
    let (ap, bp) = (a.ptr.cast_const(), b.ptr.cast_const());
    let [[ra, ca], [rb, cb], [rc, cc]] = [a, b, c].map(|v| [v.row_stride, v.col_stride]);
    // SAFETY: forwarded from the caller.
    unsafe { product(m, k, n, alpha, ap, ra, ca, bp, rb, cb, beta, c.ptr, rc, cc) }
}

/// `C ← α·A·B + β·C` by `product` on blocks of at most [`blocks`]' sizes, with the bits
/// of one call (module docs).
///
/// # Safety
/// As [`super::Gemm::gemm`]; `product` is safe to call on any sub-block of the views.
pub(super) unsafe fn in_blocks<E: Real>(
    dims: [usize; 3],
    alpha: E,
    [a, b]: [Strided<E>; 2],
    beta: E,
    c: Strided<E>,
    product: Product<E>,
) {
    let [m, k, n] = dims;
    if m == 0 || k == 0 || n == 0 {
        // SAFETY: forwarded from the caller; m·k + k·n = 0 is below the bound.
        return unsafe { call(product, dims, alpha, [a, b], beta, c) };
    }
    let [mb, kb, nb] = blocks(dims);
    for i0 in (0..m).step_by(mb) {
        for j0 in (0..n).step_by(nb) {
            for p0 in (0..k).step_by(kb) {
                let sizes = [mb.min(m - i0), kb.min(k - p0), nb.min(n - j0)];
                let beta = if p0 == 0 { beta } else { E::ONE };
                let (a, b, c) = (a.from(i0, p0), b.from(p0, j0), c.from(i0, j0));
                // SAFETY: a block of the caller's views, which the caller vouches for.
                unsafe { call(product, sizes, alpha, [a, b], beta, c) };
            }
        }
    }
}

/// The block sizes `[mb, kb, nb]` for `[m, k, n]` (all non-zero): `kb = min(k, 256)`;
/// then `m` and `n` whole where `mb + nb` fits under `2¹⁵ / kb`, else one of them whole
/// and the other in multiples of 16, else both about half the room.
fn blocks([m, k, n]: [usize; 3]) -> [usize; 3] {
    let kb = k.min(KC);
    let room = (POOL_BOUND - 1) / kb;
    let down = |x: usize| (x / TILE * TILE).max(TILE);
    let [mb, nb] = if m + n <= room {
        [m, n]
    } else if n + TILE <= room {
        [down(room - n), n]
    } else if m + TILE <= room {
        [m, down(room - m)]
    } else {
        let nb = down(room / 2);
        [down(room - nb), nb]
    };
    [mb, kb, nb]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::test_values::{gradients, inputs};

    /// `sgemm`, as `Gemm for f32` hands it over.
    const SGEMM: Product<f32> = matrixmultiply::sgemm;

    #[test]
    fn every_block_stays_below_the_pool_bound_and_on_the_split_steps() {
        for m in [1, 15, 16, 24, 100, 128, 256, 300, 2048] {
            for k in [1, 16, 128, 255, 256, 257, 512, 2048] {
                for n in [1, 17, 128, 512, 1000] {
                    let [mb, kb, nb] = blocks([m, k, n]);
                    assert!(
                        mb * kb + kb * nb < POOL_BOUND,
                        "{m}x{k}x{n}: {mb} {kb} {nb}"
                    );
                    assert!(kb == k || kb == KC, "{m}x{k}x{n}: kb {kb}");
                    assert!(mb == m || mb % TILE == 0, "{m}x{k}x{n}: mb {mb}");
                    assert!(nb == n || nb % TILE == 0, "{m}x{k}x{n}: nb {nb}");
                    assert!(mb <= m.max(TILE) && nb <= n.max(TILE) && mb > 0 && nb > 0);
                }
            }
        }
        // The d128 model's products: forward/dX rows, the weight gradients' 256-row chunks.
        assert_eq!(blocks([256, 128, 128]), [112, 128, 128]);
        assert_eq!(blocks([128, 256, 128]), [64, 256, 48]);
        assert_eq!(blocks([64, 128, 128]), [64, 128, 128]);
    }

    #[test]
    fn blocks_give_the_bits_of_one_call() {
        // Shapes whose blocks split k (at 256), m and n, with edge tiles in each; α and β
        // away from 0 and 1, so the epilogue's rounding is tested too.
        for [m, k, n] in [
            [130, 600, 70],
            [300, 128, 200],
            [37, 513, 129],
            [256, 256, 128],
        ] {
            let a: Vec<f32> = inputs(m * k, 0.0137, -6.9);
            let b: Vec<f32> = gradients(k * n, 0.021, -10.4);
            let start: Vec<f32> = inputs(m * n, 0.29, -3.0);
            assert!(blocks([m, k, n]) != [m, k, n], "{m}x{k}x{n} is one block");
            for (alpha, beta) in [(1.0, 0.0), (1.0, 1.0), (0.7, 0.3)] {
                let (mut one, mut split) = (start.clone(), start.clone());
                let av = Strided::rows(a.as_ptr().cast_mut(), k);
                let bv = Strided::rows(b.as_ptr().cast_mut(), k).t();
                // SAFETY: each view addresses its own live buffer of the stated shape
                // (B read transposed from a row-major [n, k]).
                unsafe {
                    let c = Strided::rows(one.as_mut_ptr(), n);
                    call(SGEMM, [m, k, n], alpha, [av, bv], beta, c);
                    let c = Strided::rows(split.as_mut_ptr(), n);
                    in_blocks([m, k, n], alpha, [av, bv], beta, c, SGEMM);
                }
                let same = one
                    .iter()
                    .zip(&split)
                    .all(|(p, q)| p.to_bits() == q.to_bits());
                assert!(same, "{m}x{k}x{n} alpha {alpha} beta {beta}");
            }
        }
    }

    /// The control for the test above: `k` split off a chain's end (at 300) does change
    /// bits, so equal bits there say the split points are right.
    #[test]
    fn a_split_inside_a_chain_changes_bits() {
        let [m, k, n] = [130, 600, 70];
        let a: Vec<f32> = inputs(m * k, 0.0137, -6.9);
        let b: Vec<f32> = gradients(k * n, 0.021, -10.4);
        let (mut one, mut split) = (vec![0.0; m * n], vec![0.0; m * n]);
        let av = Strided::rows(a.as_ptr().cast_mut(), k);
        let bv = Strided::rows(b.as_ptr().cast_mut(), n);
        // SAFETY: each view addresses its own live buffer of the stated shape.
        unsafe {
            call(
                SGEMM,
                [m, k, n],
                1.0,
                [av, bv],
                0.0,
                Strided::rows(one.as_mut_ptr(), n),
            );
            let c = Strided::rows(split.as_mut_ptr(), n);
            call(SGEMM, [m, 300, n], 1.0, [av, bv], 0.0, c);
            let rest = [av.from(0, 300), bv.from(300, 0)];
            call(SGEMM, [m, 300, n], 1.0, rest, 1.0, c);
        }
        assert!(
            one.iter()
                .zip(&split)
                .any(|(p, q)| p.to_bits() != q.to_bits())
        );
    }
}
