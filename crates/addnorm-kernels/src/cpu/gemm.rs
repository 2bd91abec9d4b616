//! Strided GEMMs on raw slices: [`Gemm`] and the strided matrix view it takes
//! ([`Strided`]). The fused attention and linear kernels call it on views into their
//! inputs, so no operand is copied out first.
//!
//! - `f32`: a direct AVX-512 kernel without packing (`direct`) for products whose B fits in
//!   L2 (attention's per-head products, the projections of models up to d = 128), where
//!   the CPU has AVX-512; `matrixmultiply`'s `sgemm` otherwise. The two give the same bits:
//!   the direct kernel forms every element as `sgemm`'s AVX-512 kernel does (tested bit for
//!   bit), so which one ran never shows in a result. `ADDNORM_GEMM=packed` sends every
//!   product to `sgemm`.
//! - `f64`: `matrixmultiply`'s `dgemm`.
//!
//! `matrixmultiply` is already in the tree through burn-ndarray; it picks AVX2/AVX-512
//! kernels at run time.
//!
//! # Formula
//! `C ← α·A·B + β·C`
//!
//! # Shapes
//! `A: [m, k]`, `B: [k, n]`, `C: [m, n]`, each with its own row and column strides.

use super::real::Real;

mod direct;

/// The element types with a strided GEMM: `f32` (the direct kernel or `sgemm`) and `f64`
/// (`dgemm`).
pub trait Gemm: Real {
    /// `C ← α·A·B + β·C` for `A: [m, k]`, `B: [k, n]`, `C: [m, n]` (see [`Strided`]).
    ///
    /// # Safety
    /// Every element the views address must lie in live allocations, `c`'s must be
    /// writable, distinct, and not read or written by anyone else during the call. With
    /// `β = 0`, `C` is not read.
    unsafe fn gemm(
        dims: [usize; 3],
        alpha: Self,
        a: Strided<Self>,
        b: Strided<Self>,
        beta: Self,
        c: Strided<Self>,
    );

    /// The transpose of the row-major `[rows, cols]` matrix `w`, written to `to` as a
    /// row-major `[cols, rows]` one: `to[c·rows + r] = w[r·cols + c]`. A product that reads
    /// `wᵀ` as B in several calls (a linear layer's dX, one call per row block) copies it
    /// once this way, so that no call copies B itself. A copy changes no value, so no bit.
    ///
    /// # Panics
    /// If `w` or `to` does not hold `rows·cols` elements.
    fn transpose_into(w: &[Self], [rows, cols]: [usize; 2], to: &mut [Self]) {
        assert!(
            w.len() == rows * cols && to.len() == rows * cols,
            "transpose: lengths"
        );
        transpose_by_blocks(w, [rows, cols], to);
    }

    /// `C ← α·A·B + 1·bᵀ`: [`Gemm::gemm`] with `β = 1` on a C whose every row held the
    /// `n` elements at `bias` (a linear layer's `X·W + b`), with the same bits, but without
    /// writing `b` into C's rows first where the kernel can read it in place (the direct
    /// f32 kernel joins each row's sum to `b` instead of to C).
    ///
    /// # Safety
    /// As [`Gemm::gemm`], and `bias` must address `n` live elements. C is written, not read.
    unsafe fn gemm_plus_rows(
        dims: [usize; 3],
        alpha: Self,
        a: Strided<Self>,
        b: Strided<Self>,
        bias: *const Self,
        c: Strided<Self>,
    ) {
        // SAFETY (both): forwarded from the caller.
        unsafe {
            copy_into_rows(bias, c, dims);
            Self::gemm(dims, alpha, a, b, Self::ONE, c);
        }
    }
}

impl Gemm for f32 {
    unsafe fn gemm(
        [m, k, n]: [usize; 3],
        alpha: f32,
        a: Strided<f32>,
        b: Strided<f32>,
        beta: f32,
        c: Strided<f32>,
    ) {
        // SAFETY (both): forwarded from the caller.
        if unsafe { direct::sgemm([m, k, n], alpha, a, b, beta, c) }.is_some() {
            return;
        }
        unsafe {
            matrixmultiply::sgemm(
                m,
                k,
                n,
                alpha,
                a.ptr,
                a.row_stride,
                a.col_stride,
                b.ptr,
                b.row_stride,
                b.col_stride,
                beta,
                c.ptr,
                c.row_stride,
                c.col_stride,
            );
        }
    }

    fn transpose_into(w: &[f32], [rows, cols]: [usize; 2], to: &mut [f32]) {
        assert!(
            w.len() == rows * cols && to.len() == rows * cols,
            "transpose: lengths"
        );
        if !direct::transpose_into(w, [rows, cols], to) {
            transpose_by_blocks(w, [rows, cols], to);
        }
    }

    unsafe fn gemm_plus_rows(
        dims: [usize; 3],
        alpha: f32,
        a: Strided<f32>,
        b: Strided<f32>,
        bias: *const f32,
        c: Strided<f32>,
    ) {
        let rows = Strided {
            ptr: bias.cast_mut(),
            row_stride: 0,
            col_stride: 1,
        };
        // SAFETY (both): forwarded from the caller; `rows` is read only.
        if unsafe { direct::sgemm_onto(dims, alpha, a, b, rows, c) }.is_some() {
            return;
        }
        // SAFETY (both): forwarded from the caller.
        unsafe {
            copy_into_rows(bias, c, dims);
            Self::gemm(dims, alpha, a, b, 1.0, c);
        }
    }
}

impl Gemm for f64 {
    unsafe fn gemm(
        [m, k, n]: [usize; 3],
        alpha: f64,
        a: Strided<f64>,
        b: Strided<f64>,
        beta: f64,
        c: Strided<f64>,
    ) {
        // SAFETY: forwarded from the caller.
        unsafe {
            matrixmultiply::dgemm(
                m,
                k,
                n,
                alpha,
                a.ptr,
                a.row_stride,
                a.col_stride,
                b.ptr,
                b.row_stride,
                b.col_stride,
                beta,
                c.ptr,
                c.row_stride,
                c.col_stride,
            );
        }
    }
}

/// [`Gemm::transpose_into`] in plain loops, 16 × 16 blocks at a time so that both sides
/// stay in cache.
fn transpose_by_blocks<E: Copy>(w: &[E], [rows, cols]: [usize; 2], to: &mut [E]) {
    const BLOCK: usize = 16;
    for r0 in (0..rows).step_by(BLOCK) {
        for c0 in (0..cols).step_by(BLOCK) {
            for c in c0..cols.min(c0 + BLOCK) {
                for r in r0..rows.min(r0 + BLOCK) {
                    to[c * rows + r] = w[r * cols + c];
                }
            }
        }
    }
}

/// Writes the `n` elements at `bias` into each of C's `m` rows.
///
/// # Safety
/// As [`Gemm::gemm_plus_rows`]: C's rows hold `n` elements each with unit column stride,
/// and `bias` addresses `n` elements outside C.
unsafe fn copy_into_rows<E>(bias: *const E, c: Strided<E>, [m, _, n]: [usize; 3]) {
    for r in 0..m {
        // SAFETY: row r of C, and bias, per the caller.
        unsafe { std::ptr::copy_nonoverlapping(bias, c.ptr.offset(r as isize * c.row_stride), n) };
    }
}

/// A strided matrix: element `(r, c)` at `ptr + r·row_stride + c·col_stride`.
#[derive(Debug)]
pub struct Strided<E> {
    ptr: *mut E,
    row_stride: isize,
    col_stride: isize,
}

// Written out: a derive would ask `E: Clone`.
impl<E> Clone for Strided<E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E> Copy for Strided<E> {}

impl<E> Strided<E> {
    /// The row-major matrix starting at `ptr` with rows `row_stride` apart.
    pub fn rows(ptr: *mut E, row_stride: usize) -> Self {
        Self {
            ptr,
            row_stride: row_stride as isize,
            col_stride: 1,
        }
    }

    /// The first element's address.
    pub fn ptr(self) -> *mut E {
        self.ptr
    }

    /// `(row_stride, col_stride)`, in elements.
    pub fn strides(self) -> (isize, isize) {
        (self.row_stride, self.col_stride)
    }

    /// The transpose (the same elements).
    pub fn t(self) -> Self {
        Self {
            ptr: self.ptr,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Gemm;

    /// `transpose_into` against its definition, on shapes that are and are not multiples of
    /// the 16 × 16 blocks, for f32 (the AVX-512 transposes where the CPU has them) and f64.
    #[test]
    fn transpose_into_matches_its_definition() {
        fn check<E: Gemm + std::fmt::Debug>(from: impl Fn(usize) -> E) {
            for [rows, cols] in [[1, 5], [16, 16], [37, 53], [128, 512], [512, 128]] {
                let w: Vec<E> = (0..rows * cols).map(&from).collect();
                let mut to = vec![E::ZERO; rows * cols];
                E::transpose_into(&w, [rows, cols], &mut to);
                for r in 0..rows {
                    for c in 0..cols {
                        assert_eq!(
                            to[c * rows + r],
                            w[r * cols + c],
                            "{rows}x{cols} ({r}, {c})"
                        );
                    }
                }
            }
        }
        check(|i| i as f32 * 0.5 - 7.0);
        check(|i| i as f64 * 0.25 + 1.0);
    }
}
