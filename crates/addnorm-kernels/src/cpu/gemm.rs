//! Strided GEMMs on raw slices: [`Gemm`] and the strided matrix view it takes
//! ([`Strided`]). The fused attention and linear kernels call it on views into their
//! inputs, so no operand is copied out first.
//!
//! - `f32`: a direct kernel without packing (`direct`) for products whose B fits in L2
//!   (attention's per-head products, the projections of models up to d = 128), on the
//!   instruction set of `sgemm`'s own kernel (AVX-512, or AVX2 with FMA:
//!   [`direct_kernel`]); `matrixmultiply`'s `sgemm` otherwise. The two give the same bits:
//!   the direct kernel forms every element as `sgemm`'s kernel on that set does (tested bit
//!   for bit), so which one ran never shows in a result. `ADDNORM_GEMM=packed` sends every
//!   product to `sgemm`.
//! - `f64`: `matrixmultiply`'s `dgemm`.
//!
//! Both run on the calling thread. Where `matrixmultiply` forks products onto its own pool
//! ([`matrixmultiply_forks`]: its `threading` feature, which Burn's default features turn
//! on), each product is handed to it in blocks too small to fork (`serial`), with the bits
//! of one call; its pool would otherwise run inside the kernels' own parallel row tasks.
//!
//! A B read by several products (a linear layer's weight, read by each row block of one
//! call) can be made ready once ([`Gemm::prepare_b`], [`PreparedB`]): on f32 it is then
//! copied once into the layout the direct kernel reads best (or, strided and too large
//! for it, into rows for `sgemm`), instead of being read strided or copied by every
//! product.
//!
//! `matrixmultiply` is already in the tree through burn-ndarray; it picks AVX2/AVX-512
//! kernels at run time.
//!
//! # Formula
//! `C ← α·A·B + β·C`
//!
//! # Shapes
//! `A: [m, k]`, `B: [k, n]`, `C: [m, n]`, each with its own row and column strides.

use super::aligned::Aligned;
use super::real::Real;

mod direct;
mod pool;
mod serial;

pub use super::strided::Strided;

pub use pool::matrixmultiply_forks;

/// The instruction set of the direct f32 kernel in this process: `Some(Avx512)` or
/// `Some(Avx2Fma)`, the set of `matrixmultiply`'s own kernel on this CPU (and build), or
/// `None` when `sgemm` runs every product (a CPU without AVX2 and FMA, an AVX-512 CPU
/// capped to AVX2 by `ADDNORM_CPU_DISPATCH`, `ADDNORM_GEMM=packed`). For the benches'
/// headers; the bits are the same either way.
pub fn direct_kernel() -> Option<crate::cpu::dispatch::InstructionSet> {
    direct::instruction_set()
}

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

    /// B made ready once for several products that read it (a linear layer's weight,
    /// read by every row block of the call): see [`PreparedB`]. Here, B read in place.
    ///
    /// # Safety
    /// `b` must address `k × n` elements that stay live, and unwritten, as long as the
    /// result is used.
    unsafe fn prepare_b(b: Strided<Self>, [k, n]: [usize; 2]) -> PreparedB<Self> {
        PreparedB {
            view: b,
            k,
            n,
            laid_out: None,
        }
    }

    /// `C ← α·A·B` (no `bias`) or `C ← α·A·B + 1·biasᵀ` ([`Gemm::gemm_plus_rows`]), with B
    /// as [`Gemm::prepare_b`] made it ready; `dims`' `k` and `n` must be B's. C is written,
    /// not read. The bits are those of [`Gemm::gemm`] (β = 0) or [`Gemm::gemm_plus_rows`]
    /// on B itself.
    ///
    /// # Safety
    /// As [`Gemm::gemm_plus_rows`], for A, C and `bias`.
    unsafe fn gemm_prepared(
        dims: [usize; 3],
        alpha: Self,
        a: Strided<Self>,
        b: &PreparedB<Self>,
        bias: Option<*const Self>,
        c: Strided<Self>,
    ) {
        b.check(dims);
        // SAFETY: forwarded from the caller; b.view is live (`Gemm::prepare_b`).
        unsafe { with_b(dims, alpha, a, b.view, bias, c) }
    }

    /// B (`k × n`) with unit column stride, for several products that each read its
    /// first rows and columns (attention's `Kᵀ`, read by every row part of a query block up
    /// to the keys that part sees): `b` itself when its columns are adjacent, else a copy
    /// in rows of `n` written into `copy` (resized to `k × n`, starting on a 64-byte line),
    /// made once instead of by each product. A copy changes no value, so no bit.
    ///
    /// # Safety
    /// `b` must address `k × n` live elements. The view returned points into `copy` or
    /// `b`, so it is valid while neither is changed or dropped.
    unsafe fn contiguous_b(
        b: Strided<Self>,
        [k, n]: [usize; 2],
        copy: &mut Aligned<Self>,
    ) -> Strided<Self> {
        if b.col_stride == 1 {
            return b;
        }
        copy.resize(k * n);
        // SAFETY: b addresses k × n live elements (caller); `copy` holds as many, all
        // written by the call.
        unsafe { Self::copy_rows(b, [k, n], copy.as_mut_ptr()) };
        Strided::rows(copy.as_mut_ptr(), n)
    }

    /// B's `k × n` elements written into rows of `n` at `to`, for [`Gemm::contiguous_b`]:
    /// one element at a time here.
    ///
    /// # Safety
    /// `b` must address `k × n` live elements; `to` must have room for as many.
    unsafe fn copy_rows(b: Strided<Self>, dims: [usize; 2], to: *mut Self) {
        // SAFETY: forwarded from the caller.
        unsafe { copy_rows_one_by_one(b, dims, to) }
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
        // SAFETY: forwarded from the caller.
        unsafe { pool::on_this_thread([m, k, n], alpha, [a, b], beta, c, matrixmultiply::sgemm) }
    }

    unsafe fn copy_rows(b: Strided<f32>, dims: [usize; 2], to: *mut f32) {
        // SAFETY: forwarded from the caller.
        unsafe { direct::copy_rows(b, dims, to) }
    }

    unsafe fn prepare_b(b: Strided<f32>, [k, n]: [usize; 2]) -> PreparedB<f32> {
        PreparedB {
            view: b,
            k,
            n,
            // SAFETY: forwarded from the caller.
            laid_out: unsafe { direct::prepare(b, [k, n]) },
        }
    }

    unsafe fn gemm_prepared(
        dims: [usize; 3],
        alpha: f32,
        a: Strided<f32>,
        b: &PreparedB<f32>,
        bias: Option<*const f32>,
        c: Strided<f32>,
    ) {
        b.check(dims);
        if let Some(laid_out) = &b.laid_out {
            let c_in = match bias {
                Some(bias) => (1.0, bias_rows(bias)),
                None => (0.0, c),
            };
            // SAFETY: forwarded from the caller; `laid_out` is B's own copy, of the shape
            // `dims` says (checked above).
            if unsafe { direct::sgemm_prepared(dims, alpha, a, laid_out, c_in, c) }.is_some() {
                return;
            }
            if let Some(rows) = laid_out.rows() {
                // SAFETY: forwarded from the caller; `rows` is B's own k × n copy.
                return unsafe { with_b(dims, alpha, a, rows, bias, c) };
            }
        }
        // SAFETY: forwarded from the caller; b.view is live (`Gemm::prepare_b`).
        unsafe { with_b(dims, alpha, a, b.view, bias, c) }
    }

    unsafe fn gemm_plus_rows(
        dims: [usize; 3],
        alpha: f32,
        a: Strided<f32>,
        b: Strided<f32>,
        bias: *const f32,
        c: Strided<f32>,
    ) {
        // SAFETY (both): forwarded from the caller; the bias rows are read only.
        if unsafe { direct::sgemm_onto(dims, alpha, a, b, bias_rows(bias), c) }.is_some() {
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
        unsafe { pool::on_this_thread([m, k, n], alpha, [a, b], beta, c, matrixmultiply::dgemm) }
    }
}

/// [`Gemm::gemm_prepared`] by the plain calls on `b`, the B a [`PreparedB`] was made from
/// or its copy in rows: [`Gemm::gemm`] (β = 0) or [`Gemm::gemm_plus_rows`].
///
/// # Safety
/// As [`Gemm::gemm_prepared`]; `b` addresses B's `k × n` live elements.
unsafe fn with_b<E: Gemm>(
    dims: [usize; 3],
    alpha: E,
    a: Strided<E>,
    b: Strided<E>,
    bias: Option<*const E>,
    c: Strided<E>,
) {
    // SAFETY (both): forwarded from the caller.
    unsafe {
        match bias {
            Some(bias) => E::gemm_plus_rows(dims, alpha, a, b, bias, c),
            None => E::gemm(dims, alpha, a, b, E::ZERO, c),
        }
    }
}

/// B's `k × n` elements copied into rows of `n` at `to`, one element at a time: what
/// [`Gemm::copy_rows`] does where no faster copy is known.
///
/// # Safety
/// `b` must address `k × n` live elements; `to` must have room for as many.
unsafe fn copy_rows_one_by_one<E: Copy>(b: Strided<E>, [k, n]: [usize; 2], to: *mut E) {
    for r in 0..k {
        for c in 0..n {
            // SAFETY: element (r, c) of the caller's view, and of `to`.
            unsafe { *to.add(r * n + c) = *b.from(r, c).ptr };
        }
    }
}

/// A bias of `n` elements as a matrix whose every row is the bias (rows 0 apart).
fn bias_rows(bias: *const f32) -> Strided<f32> {
    Strided {
        ptr: bias.cast_mut(),
        row_stride: 0,
        col_stride: 1,
    }
}

/// A B made ready once ([`Gemm::prepare_b`]) for the several products that read it, such
/// as a linear layer's `W` (forward) or `Wᵀ` (dX) read by each row block of one call.
///
/// On f32, where the direct kernel runs, B is copied once into the layout its loops
/// read best: into column panels when it has at least 256 columns (rows 1 KiB or more apart
/// share a few L1 sets), else into contiguous rows when its rows are strided (`Wᵀ`) or
/// start off 64-byte lines (a `W` that Burn allocated, 16 bytes into one). The copies
/// start on a line. A strided B too large for the direct kernel (on AVX2, `Wᵀ` of a
/// 128-wide layer) is copied into rows for `sgemm`, which otherwise packs a strided B
/// element by element in every product. Without it, each product would read B in place or
/// copy it itself. A copy changes no value, so no bit.
pub struct PreparedB<E> {
    view: Strided<E>,
    k: usize,
    n: usize,
    laid_out: Option<direct::Prepared>,
}

impl<E> PreparedB<E> {
    /// Panics unless `dims`' `k` and `n` are this B's.
    fn check(&self, dims: [usize; 3]) {
        assert!(
            dims[1] == self.k && dims[2] == self.n,
            "a prepared B of another shape"
        );
    }
}

// SAFETY: a PreparedB is only read: its view's elements stay unwritten while it is used
// (`Gemm::prepare_b`), and its copy is its own.
unsafe impl<E: Sync> Send for PreparedB<E> {}
// SAFETY: as above.
unsafe impl<E: Sync> Sync for PreparedB<E> {}

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

#[cfg(test)]
mod tests;
