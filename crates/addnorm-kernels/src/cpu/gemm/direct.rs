//! A GEMM without packing, for the small and thin products of small models: attention's
//! per-head products (`[17, 16]·[16, 17]` in the demo's model) and projections whose inner
//! or outer width is 16–128. It computes the same bits as `matrixmultiply`'s `sgemm`, which
//! [`super::Gemm`] calls for every other product, so which of the two ran never shows in a
//! result.
//!
//! `matrixmultiply` copies ("packs") A and B into tiles before its micro-kernel runs. At
//! these widths each packed element feeds only 16–128 multiply-adds, so the packing and the
//! per-call set-up cost about as much as the arithmetic (PERFORMANCE.md §11 and §18). Here
//! the micro-kernel reads A where it lies (one broadcast per element and row) and B's rows
//! where they lie when they are contiguous; only a B with strided rows (`Wᵀ`, `Kᵀ`) is
//! copied first, `k × n` elements against the `m × k × n` multiply-adds it feeds.
//!
//! A weight gradient's larger `Xᵀ·dY` (B up to [`LARGEST_B_WITH_COPIED_A`]
//! elements, twice the bound above) is taken too, with each row tile's A copied into a
//! buffer ([`tile`]'s `APanel`) and B read where it lies. On a 2-core Ice Lake Xeon the
//! d128 model's feed-forward `dW` blocks ran 1.3–1.5× faster than in `matrixmultiply` with
//! their operands in cache, 1.1× with them in L3 (PERFORMANCE.md §29); B was then copied
//! into panels of its columns too. Since the loops prefetch B's rows (below), that copy
//! made the feed-forward-in `dW` 4–7% slower on a Zen 4 (§45), so it went on AVX-512; on
//! AVX2 a B of 256 columns or more is still copied, which made that `dW` 0.89–0.92× as
//! long ([`own_arrangement`], §50).
//!
//! A B over 32 KiB does not stay in L1 between row tiles, so each tile's loop prefetches
//! its rows [`PREFETCH_ROWS`] ahead of the row it multiplies: the d128 model's weight
//! gradients took 0.90–0.96× their time, its forward and dX 0.92–0.97× (PERFORMANCE.md
//! §36).
//!
//! It runs on the instruction set whose kernel `matrixmultiply` itself picks, and joins each
//! sum to C as that kernel does: AVX-512F ([`avx512`], 16 × 16 tiles of C) or, on CPUs
//! without it, AVX2 with FMA ([`avx2`], 8 × 8 tiles). Their loops are one generic
//! [`tile`]; the two files hold only the vector operations and the epilogue.
//!
//! # Formula
//! `C ← α·A·B + β·C`, each element the way `matrixmultiply`'s kernel forms it: the products
//! are summed in `k` order by fused multiply-adds from zero, in chains of at most [`KC`]
//! terms (its `kc` block). The first chain `p₁` gives `C ← β·C + α·p₁` (C not read when
//! `β = 0`), each later chain `C ← C + α·pᵢ`. How `α·p` and `β·C` are rounded and added
//! depends on the set and on whether the element lies in a whole tile of C (see each set's
//! module); with `α = 1` and `β ∈ {0, 1}` away from signed zeros every variant agrees.
//!
//! `sgemm_onto` reads the first chain's `β·C` from another matrix `C_in` (a linear layer's
//! bias, its rows 0 apart): `C ← α·A·B + 1·C_in`, the bits of copying `C_in` into C first.
//!
//! # Shapes
//! `A: [m, k]` (any strides), `B: [k, n]`, `C: [m, n]` with unit column stride;
//! micro-tiles of up to 12 rows × 32 columns (AVX-512) or 6 rows × 16 columns (AVX2).

use super::{Strided, copy_rows_one_by_one};
use crate::cpu::aligned::{ALIGN, Aligned};
use crate::cpu::dispatch::{InstructionSet, detected};
#[cfg(target_arch = "x86_64")]
use crate::cpu::parallel::SharedBuffer;
use crate::cpu::scratch::Scratch;

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
mod tile;

/// `matrixmultiply`'s `kc` for `f32` (`S_KC`): the length of one summation chain.
pub(crate) const KC: usize = 256;

/// Runs `C ← α·A·B + β·C` here and returns `Some(())`, or returns `None` without touching
/// anything when this kernel does not take the call: no [`kernel`] to run, an empty
/// dimension, a C with strided columns, or a B too large for its loop order ([`takes`]).
///
/// # Safety
/// As [`super::Gemm::gemm`].
pub(crate) unsafe fn sgemm(
    dims: [usize; 3],
    alpha: f32,
    a: Strided<f32>,
    b: Strided<f32>,
    beta: f32,
    c: Strided<f32>,
) -> Option<()> {
    // SAFETY: forwarded from the caller; C is its own input.
    unsafe { run(kernel(), dims, alpha, [a, b], (beta, c), c) }
}

/// Runs `C ← α·A·B + 1·C_in` here, as [`sgemm`] with `β = 1` on a C that held `C_in`
/// (the same bits), reading `C_in` in place: a linear layer's bias as a `C_in` whose rows
/// are 0 apart. `None` as [`sgemm`]'s, and also when `C_in` has strided columns.
///
/// # Safety
/// As [`super::Gemm::gemm`]; `c_in` addresses `m × n` live elements (rows may repeat) that
/// the call does not write.
pub(crate) unsafe fn sgemm_onto(
    dims: [usize; 3],
    alpha: f32,
    a: Strided<f32>,
    b: Strided<f32>,
    c_in: Strided<f32>,
    c: Strided<f32>,
) -> Option<()> {
    if c_in.col_stride != 1 {
        return None;
    }
    // SAFETY: forwarded from the caller.
    unsafe { run(kernel(), dims, alpha, [a, b], (1.0, c_in), c) }
}

/// `C ← α·A·B + β·C_in` on `kernel` (none: `None`, untouched) for [`sgemm`] and
/// [`sgemm_onto`], which pass [`kernel()`]; the tests pass the CPU's own, unaffected by
/// other tests that cap [`detected`] meanwhile.
///
/// # Safety
/// As theirs.
unsafe fn run(
    kernel: Option<Kernel>,
    [m, k, n]: [usize; 3],
    alpha: f32,
    [a, b]: [Strided<f32>; 2],
    (beta, c_in): (f32, Strided<f32>),
    c: Strided<f32>,
) -> Option<()> {
    let kernel = kernel.filter(|_| takes([m, k, n], [a, b], c))?;
    #[cfg(target_arch = "x86_64")]
    {
        // B in place when its rows are contiguous (every B over the rows bound is, by
        // `takes`), its rows prefetched when it is large (`multiply`); in panels for an
        // AVX2 weight gradient (`own_arrangement`), in a pooled buffer of that size.
        // SAFETY (both): the caller guarantees b addresses k × n live elements; `takes`
        // that their offsets fit. Then as the caller's; the copy lives until the product
        // is done.
        unsafe {
            match own_arrangement(kernel, a, [k, n]) {
                Arrangement::Panels => {
                    let (_copy, layout) =
                        arrange::<Scratch<f32>>(kernel, b, [k, n], Arrangement::Panels, Split::No);
                    multiply(kernel, [m, k, n], alpha, a, layout, (beta, c_in), c);
                }
                arrangement => {
                    let (_copy, layout) =
                        arrange::<Aligned<f32>>(kernel, b, [k, n], arrangement, Split::No);
                    multiply(kernel, [m, k, n], alpha, a, layout, (beta, c_in), c);
                }
            }
        }
        Some(())
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (kernel, a, c_in, alpha, beta);
        None
    }
}

/// `C ← α·A·B + β·C_in` on `kernel`, B as `b` lays it out.
///
/// # Safety
/// As [`run`], after `takes`; `b` addresses B's `k × n` elements as it says.
#[cfg(target_arch = "x86_64")]
unsafe fn multiply(
    kernel: Kernel,
    [m, k, n]: [usize; 3],
    alpha: f32,
    a: Strided<f32>,
    b: BLayout,
    (beta, c_in): (f32, Strided<f32>),
    c: Strided<f32>,
) {
    let operands = Operands {
        m,
        a,
        b: b.ptr,
        b_row: b.row,
        b_panel: b.panel,
        b_ahead: if k * n > PREFETCH_B_ABOVE {
            PREFETCH_ROWS * b.row
        } else {
            0
        },
        c: c.ptr,
        c_row: c.row_stride,
        c_in: c_in.ptr,
        c_in_row: c_in.row_stride,
    };
    // SAFETY (both): `kernel` saw the set's features; the pointers are the caller's.
    match kernel {
        Kernel::Avx512 => unsafe { avx512::gemm(operands, [m, k, n], alpha, beta) },
        Kernel::Avx2Fma => unsafe { avx2::gemm(operands, [m, k, n], alpha, beta) },
    }
}

/// How a product read by [`run`] lays its B out: in column panels for a weight gradient on
/// AVX2 ([`Kernel::Avx2Fma`]: an A with unit row stride, whose row tiles the loops copy)
/// whose B is over [`PREFETCH_B_ABOVE`] elements with at least [`PANELS_FROM_N`] columns;
/// else in place ([`Arrangement::Rows`]).
///
/// Read in place, such a B's 16-column strip is one 64-byte line a row, rows 1 KiB or more
/// apart, so a tile's walk down it falls into two of L1's sets, prefetched lines with it.
/// Copied once per product, each panel row is a line of its own after the last: the d128
/// model's feed-forward-in `dW` (`[128, 256]·[256, 512]` blocks) took 0.89–0.92× its time
/// warm and 0.90× with its operands out of cache, on a Zen 4 run as an AVX2 machine
/// (PERFORMANCE.md §50). On AVX-512, whose strip is two lines a row, the same copy made it
/// 1.04–1.10× slower (§45, again in §50), so there B stays in place.
#[cfg(target_arch = "x86_64")]
fn own_arrangement(kernel: Kernel, a: Strided<f32>, [k, n]: [usize; 2]) -> Arrangement {
    let strip_of_one_line = kernel == Kernel::Avx2Fma;
    if strip_of_one_line && a.row_stride == 1 && k * n > PREFETCH_B_ABOVE && n >= PANELS_FROM_N {
        Arrangement::Panels
    } else {
        Arrangement::Rows
    }
}

/// How many rows of B ahead of the one it multiplies a tile's loop prefetches (into L1),
/// for a B over [`PREFETCH_B_ABOVE`] elements. Such a B does not stay in L1 between row
/// tiles, so every tile reads its rows from L2 or further, and the hardware's prefetchers
/// did not hide that: 8 rows ahead made the d128 model's products 3–9% faster on the Ice
/// Lake Xeon, and 4 or 16 rows no faster than 8 (PERFORMANCE.md §36).
#[cfg(target_arch = "x86_64")]
const PREFETCH_ROWS: isize = 8;

/// The largest B (elements) whose rows the loops do not prefetch: 32 KiB of f32, which
/// stays in a 48 KiB L1 beside a tile's A. Attention's per-head products and the small
/// models' projections are below it.
#[cfg(target_arch = "x86_64")]
const PREFETCH_B_ABOVE: usize = 1 << 13;

/// Where the loops read B: element `(r, c)` at `ptr + (c / w)·panel + r·row + c mod w`,
/// `w = 2·LANES` (one panel's columns).
#[derive(Clone, Copy)]
struct BLayout {
    ptr: *const f32,
    row: isize,
    panel: isize,
}

/// A buffer that a copy of B is written into, its first element 64-byte aligned: an
/// [`Aligned`] for one product's own copy, a pooled [`Scratch`] for a [`Prepared`] one,
/// which outlives the product.
trait CopyOfB {
    /// A buffer of `len` elements, all written by `fill` (which gets its first element)
    /// before anything reads them.
    fn filled(len: usize, fill: impl FnOnce(*mut f32)) -> Self;
    /// The first element.
    fn first(&self) -> *const f32;
}

impl CopyOfB for Aligned<f32> {
    fn filled(len: usize, fill: impl FnOnce(*mut f32)) -> Self {
        // SAFETY: `fill` writes all `len` elements (the trait's contract).
        unsafe { Aligned::written(len, fill) }
    }
    fn first(&self) -> *const f32 {
        self.as_ptr()
    }
}

impl CopyOfB for Scratch<f32> {
    fn filled(len: usize, fill: impl FnOnce(*mut f32)) -> Self {
        let mut values = Scratch::take(len);
        fill(values.as_mut_ptr());
        values
    }
    fn first(&self) -> *const f32 {
        self.as_ptr()
    }
}

/// Whether [`arrange`] may split its copies over the threads ([`crate::cpu::parallel`]).
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, PartialEq, Eq)]
enum Split {
    /// One pass on the calling thread: a product's own copy of B, made inside whatever
    /// task runs the product.
    No,
    /// Row blocks of at least [`PREPARE_TASK`] elements in parallel: a [`Prepared`] B,
    /// made before the call's row tasks, which all wait for it. On the calling thread
    /// alone, the d128 step's weight copies took 1.0–1.7 ms of it while the helper waited;
    /// split, 0.7–0.8 ms (PERFORMANCE.md §49).
    Tasks,
}

/// The fewest elements of B a task of a split copy takes (32 KiB of f32): the d128 feed-
/// forward weights (`2¹⁶` elements) in 8 tasks, a 128 × 128 projection in 2.
#[cfg(target_arch = "x86_64")]
const PREPARE_TASK: usize = 1 << 13;

#[cfg(target_arch = "x86_64")]
impl Split {
    /// `copy(r0, r1)` over row blocks covering B's `k` rows: in blocks of a multiple of 16
    /// rows (whole transposes on either set) in parallel when `self` is `Tasks` and B has
    /// two blocks or more, else once over all rows. A copy's values do not depend on how
    /// its rows are split.
    fn by_rows(self, [k, n]: [usize; 2], copy: impl Fn(usize, usize) + Sync) {
        let rows = PREPARE_TASK.div_ceil(n.max(1)).next_multiple_of(16);
        if self == Split::No || k <= rows {
            return copy(0, k);
        }
        crate::cpu::parallel::for_each(k.div_ceil(rows), |t| {
            copy(t * rows, ((t + 1) * rows).min(k));
        });
    }
}

/// How [`arrange`] lays B out.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, PartialEq, Eq)]
enum Arrangement {
    /// In place when its rows are contiguous, else copied into contiguous rows.
    Rows,
    /// Copied into contiguous rows whatever its strides: for a B copied once for many
    /// products whose rows are strided or start off 64-byte lines ([`misaligned_rows`]).
    CopiedRows,
    /// Into column panels ([`column_panels`]).
    Panels,
}

/// Whether B's rows are contiguous, a whole number of 64-byte lines long, and do not start
/// on a line: a copy into contiguous rows then puts every row on a line, and each of the
/// loops' vector loads of B reads one line instead of two (PERFORMANCE.md §39).
fn misaligned_rows(b: Strided<f32>, n: usize) -> bool {
    let line = ALIGN / size_of::<f32>();
    b.col_stride == 1
        && n.is_multiple_of(line)
        && !((b.ptr as usize).is_multiple_of(ALIGN)
            && b.row_stride.unsigned_abs().is_multiple_of(line))
}

/// B laid out for the loops as `arrangement` says. Returns the copy (if any) with the
/// layout, which points into it.
///
/// # Safety
/// `b` must address `k × n` live elements whose offsets fit 32 bits ([`takes`]), and the
/// CPU must have `kernel`'s set.
#[cfg(target_arch = "x86_64")]
unsafe fn arrange<C: CopyOfB>(
    kernel: Kernel,
    b: Strided<f32>,
    [k, n]: [usize; 2],
    arrangement: Arrangement,
    split: Split,
) -> (Option<C>, BLayout) {
    let width = 2 * kernel.lanes();
    let panels = arrangement == Arrangement::Panels;
    let copied = b.col_stride != 1 || arrangement == Arrangement::CopiedRows;
    let contiguous = copied.then(|| {
        C::filled(k * n, |to| {
            // SAFETY: `filled` hands over k × n elements.
            let to = unsafe { SharedBuffer::from_raw(to, k * n) };
            split.by_rows([k, n], |r0, r1| {
                // SAFETY: rows r0..r1 of B, k × n live elements (caller), into the same
                // rows of `to`, this task's alone; the CPU has `kernel`'s set.
                unsafe { copy_rows_on(Some(kernel), b.from(r0, 0), [r1 - r0, n], to.at(r0 * n)) }
            });
        })
    });
    let (ptr, row) = match &contiguous {
        Some(rows) => (rows.first(), n as isize),
        None => (b.ptr as *const f32, b.row_stride),
    };
    if panels {
        let len = n.div_ceil(width) * k * width;
        let rows = Strided {
            ptr: ptr.cast_mut(),
            row_stride: row,
            col_stride: 1,
        };
        let panels = C::filled(len, |to| {
            // SAFETY: `filled` hands over len elements.
            let to = unsafe { SharedBuffer::from_raw(to, len) };
            split.by_rows([k, n], |r0, r1| {
                let (from, to) = (rows.from(r0, 0).ptr(), to.at(r0 * width));
                // SAFETY: rows r0..r1 of the k rows of n elements at ptr, row apart, into
                // the same rows of every panel of `to` (this task's alone), which has room
                // for len.
                unsafe { column_panels(from, row, [r1 - r0, n], [width, k * width], to) }
            });
        });
        let layout = BLayout {
            ptr: panels.first(),
            row: width as isize,
            panel: (k * width) as isize,
        };
        return (Some(panels), layout);
    }
    let layout = BLayout {
        ptr,
        row,
        panel: width as isize,
    };
    (contiguous, layout)
}

/// The fewest columns for which [`prepare`] copies B into column panels: a row-major B of
/// 256 or more columns has rows 1 KiB or more apart, so a panel's rows fall into a few L1
/// sets; the d128 feed-forward's forward took 0.84× its time with its `[128, 512]` weight
/// in panels on AVX-512 (PERFORMANCE.md §32), and 0.90–0.93× on AVX2 (§48).
const PANELS_FROM_N: usize = 256;

/// A B laid out once for several products by [`prepare`]: in column panels, or in
/// contiguous rows.
pub(crate) struct Prepared {
    kernel: Kernel,
    /// The copy the layout points into.
    _values: Scratch<f32>,
    layout: BLayout,
    /// Who multiplies by it: this kernel, or `sgemm` (a strided B over
    /// [`LARGEST_B`], copied into rows for it).
    reader: Reader,
}

/// Which GEMM reads a [`Prepared`] B.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reader {
    /// The direct kernel ([`sgemm_prepared`]).
    Direct,
    /// `matrixmultiply`'s `sgemm`, given the copy's contiguous rows ([`Prepared::rows`]).
    Packed,
}

impl Prepared {
    /// The copy as a row-major `k × n` matrix, for `sgemm`, when it is one made for it
    /// ([`Reader::Packed`]); `None` when the direct kernel reads it.
    pub(crate) fn rows(&self) -> Option<Strided<f32>> {
        (self.reader == Reader::Packed)
            .then(|| Strided::rows(self.layout.ptr.cast_mut(), self.layout.row as usize))
    }
}

// SAFETY: `layout` points into `_values`, which the struct owns and nobody writes.
unsafe impl Send for Prepared {}
// SAFETY: as above: shared, it is only read.
unsafe impl Sync for Prepared {}

/// `b` (`k × n`) laid out once for the products that will read it, where the direct
/// kernel runs and it is worth a copy: into column panels when `n` is at least
/// [`PANELS_FROM_N`], else into contiguous rows when its rows are strided or start off
/// 64-byte lines ([`misaligned_rows`]). A strided B too large for the direct kernel
/// (the d = 512 model's `Wᵀ`) is copied into rows for `sgemm` ([`Reader::Packed`]):
/// `sgemm` packs a strided B one element at a time, and did so in every row block of a
/// call; from rows it packs by whole runs (PERFORMANCE.md §41). `None` when B is best read
/// in place. The copies run in row blocks over the threads ([`Split::Tasks`]): a linear
/// layer prepares its weight before its row tasks start, while the helpers would
/// otherwise wait.
///
/// # Safety
/// `b` must address `k × n` live elements.
pub(crate) unsafe fn prepare(b: Strided<f32>, dims: [usize; 2]) -> Option<Prepared> {
    // SAFETY: forwarded from the caller.
    unsafe { prepare_on(kernel(), b, dims) }
}

/// [`prepare`] on `kernel` (the tests pass the CPU's own, as [`run`]'s do).
///
/// # Safety
/// As [`prepare`].
unsafe fn prepare_on(
    kernel: Option<Kernel>,
    b: Strided<f32>,
    [k, n]: [usize; 2],
) -> Option<Prepared> {
    let kernel = kernel?;
    if k == 0 || n == 0 || !offsets_fit(b, n) {
        return None;
    }
    let reader = if k * n <= LARGEST_B {
        Reader::Direct
    } else {
        Reader::Packed
    };
    if reader == Reader::Packed && b.col_stride == 1 {
        return None;
    }
    let panels = reader == Reader::Direct && n >= PANELS_FROM_N;
    if !panels && b.col_stride == 1 && !misaligned_rows(b, n) {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        let arrangement = if panels {
            Arrangement::Panels
        } else {
            Arrangement::CopiedRows
        };
        // SAFETY: per the caller; the offsets fit (above).
        let (values, layout) =
            unsafe { arrange::<Scratch<f32>>(kernel, b, [k, n], arrangement, Split::Tasks) };
        let values = values.expect("a layout that is not in place is a copy");
        Some(Prepared {
            kernel,
            _values: values,
            layout,
            reader,
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    None
}

/// `C ← α·A·B + β·C_in` with B as [`prepare`] laid it out: the bits of [`sgemm`] or
/// [`sgemm_onto`] on the B it was made from. `None`, with nothing touched, when this
/// kernel does not take the call (a B laid out for `sgemm` among them).
///
/// # Safety
/// As [`sgemm_onto`], for A, C and `c_in` (C itself when `β·C` is meant); `dims`' `k` and
/// `n` must be those `b` was prepared with (`super::PreparedB` checks them).
pub(crate) unsafe fn sgemm_prepared(
    [m, k, n]: [usize; 3],
    alpha: f32,
    a: Strided<f32>,
    b: &Prepared,
    (beta, c_in): (f32, Strided<f32>),
    c: Strided<f32>,
) -> Option<()> {
    if m == 0 || c.col_stride != 1 || c_in.col_stride != 1 || b.reader != Reader::Direct {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: forwarded from the caller; `b` lays out k × n elements it owns.
    unsafe {
        multiply(b.kernel, [m, k, n], alpha, a, b.layout, (beta, c_in), c)
    };
    Some(())
}

/// The instruction sets the direct kernel is compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kernel {
    /// [`avx512`]: where `matrixmultiply` runs its AVX-512 kernel.
    Avx512,
    /// [`avx2`]: where it runs its FMA kernel, on CPUs with AVX2 and FMA but not AVX-512F.
    Avx2Fma,
}

/// The set this kernel runs on, the one whose `matrixmultiply` kernel it reproduces, or
/// `None` when it may not run: no such set enabled ([`detected`], which
/// `ADDNORM_CPU_DISPATCH` caps; an AVX-512 CPU capped to AVX2 runs neither, because
/// `matrixmultiply` still runs its AVX-512 kernel there), or the environment variable
/// `ADDNORM_GEMM` set to `packed` before the first call, which sends every product to
/// `matrixmultiply` (to compare the two, or rule this one out when debugging; the bits are
/// the same either way).
fn kernel() -> Option<Kernel> {
    static PACKED_ONLY: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let packed_only =
        *PACKED_ONLY.get_or_init(|| std::env::var("ADDNORM_GEMM").as_deref() == Ok("packed"));
    Kernel::for_set(detected(), has_avx512f(), packed_only)
}

/// The instruction set the direct kernel runs on in this process ([`kernel`]'s choice, the
/// set of `matrixmultiply`'s own kernel), or `None` when every product goes to
/// `matrixmultiply` (no such set, an AVX-512 CPU capped to AVX2, `ADDNORM_GEMM=packed`).
pub(crate) fn instruction_set() -> Option<InstructionSet> {
    kernel().map(|kernel| match kernel {
        Kernel::Avx512 => InstructionSet::Avx512,
        Kernel::Avx2Fma => InstructionSet::Avx2Fma,
    })
}

/// The most elements of B the direct kernel takes: 2¹⁶ (256 KiB of f32, a quarter of a
/// Zen 4's per-core L2, under a fifth of an Ice Lake Xeon's), on both sets. Its row
/// tiles run outer and each reads all of B, so B must stay in L2; each B element
/// loaded is used by 12 rows (AVX-512) or 6 (AVX2).
///
/// AVX2 took at most 2¹³ (32 KiB, Zen 3's L1d) until PERFORMANCE.md §48: on the Zen 3
/// VM `matrixmultiply`'s packed kernel had been as fast or faster past L1 (§18, and
/// 1.05× in the step in §40, before the loops prefetched the next tile's A and ran one
/// loop per case, §45–§46). On a Zen 4 run as an AVX2 machine ([`has_avx512f`]), with
/// today's loops, this bound made the d128 model's linear layers 1.1–1.4× faster and
/// its training step 1.13× (§48).
const LARGEST_B: usize = 1 << 16;

/// The most elements of a B with contiguous rows the direct kernel takes beside an A with unit
/// row stride (a weight gradient's `Xᵀ`, whose row tiles it copies): 2¹⁷ on both sets,
/// the d128 model's `[256, 512]` feed-forward `dY` blocks, which `matrixmultiply` ran
/// at 43–75 GFLOP/s on the Ice Lake Xeon (§29), and 1.05–1.13× slower than this kernel on
/// the Zen 4 run as an AVX2 machine (§48).
const LARGEST_B_WITH_COPIED_A: usize = 1 << 17;

impl Kernel {
    /// [`kernel`]'s choice under the instruction set `set` that [`detected`] gives, where
    /// `matrixmultiply` runs its AVX-512 kernel or not ([`has_avx512f`], which alone decides
    /// that kernel), with or without `ADDNORM_GEMM=packed`: the set of `matrixmultiply`'s
    /// kernel, when `set` has it. (`set` is AVX-512 while `matrixmultiply` runs AVX2 only in
    /// a build that took AVX-512F away from it: an AVX2 machine emulated.)
    fn for_set(set: InstructionSet, sgemm_avx512: bool, packed_only: bool) -> Option<Self> {
        match set {
            _ if packed_only => None,
            InstructionSet::Avx512 if sgemm_avx512 => Some(Kernel::Avx512),
            InstructionSet::Avx512 | InstructionSet::Avx2Fma if !sgemm_avx512 => {
                Some(Kernel::Avx2Fma)
            }
            _ => None,
        }
    }

    /// f32 lanes per vector (its set's `Isa::LANES`): half the width of a panel of B.
    #[cfg(target_arch = "x86_64")]
    fn lanes(self) -> usize {
        match self {
            Kernel::Avx512 => avx512::LANES,
            Kernel::Avx2Fma => avx2::LANES,
        }
    }
}

/// Whether `matrixmultiply` runs its AVX-512 kernel, whatever `ADDNORM_CPU_DISPATCH` says:
/// the CPU has AVX-512F, and the build did not take it away from `matrixmultiply`.
///
/// `matrixmultiply` reads `MMTEST_FEATURE` when it is compiled: a non-empty list there
/// (comma-separated) is every feature it may detect. A build with
/// `MMTEST_FEATURE=fma,avx2` therefore runs its AVX2 kernel on an AVX-512 CPU, and this
/// reads the same variable, so the direct kernel then runs its AVX2 copy beside it
/// ([`Kernel::for_set`]); with `ADDNORM_CPU_DISPATCH=avx2` at run time the element-wise
/// kernels do too: an AVX2 machine on an AVX-512 one, for tests and timings
/// (PERFORMANCE.md §48).
fn has_avx512f() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let allowed = match option_env!("MMTEST_FEATURE") {
            None | Some("") => true,
            Some(list) => list.split(',').any(|feature| feature == "avx512f"),
        };
        allowed && std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// B's `k × n` elements copied into rows of `n` at `to` ([`super::Gemm::contiguous_b`]),
/// as [`copy_rows_on`] the CPU's kernel copies them.
///
/// # Safety
/// `b` must address `k × n` live elements; `to` has room for as many.
pub(crate) unsafe fn copy_rows(b: Strided<f32>, dims: [usize; 2], to: *mut f32) {
    // SAFETY: forwarded from the caller; `kernel()` is the CPU's.
    unsafe { copy_rows_on(kernel(), b, dims, to) }
}

/// B's `k × n` elements copied into rows of `n` at `to`: one `memcpy` a row when its rows
/// are contiguous, by the AVX-512 kernel's 16 × 16 transposes (or gathers) on `kernel`
/// AVX-512, by 8 × 8 transposes on AVX2 when B is read transposed (unit row stride), else
/// one element at a time.
///
/// # Safety
/// `b` must address `k × n` live elements; `to` must have room for as many and not overlap
/// them; the CPU must have `kernel`'s set.
unsafe fn copy_rows_on(kernel: Option<Kernel>, b: Strided<f32>, [k, n]: [usize; 2], to: *mut f32) {
    if b.col_stride == 1 {
        for r in 0..k {
            // SAFETY: row r of the caller's view, n contiguous elements; row r of `to`.
            unsafe { std::ptr::copy_nonoverlapping(b.from(r, 0).ptr, to.add(r * n), n) };
        }
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if kernel == Some(Kernel::Avx512) && offsets_fit(b, n) {
        // SAFETY: the CPU has avx512f (caller); the offsets fit; the rest is the caller's.
        return unsafe { avx512::contiguous_rows(b, k, n, to) };
    }
    #[cfg(target_arch = "x86_64")]
    if kernel == Some(Kernel::Avx2Fma) && b.row_stride == 1 && b.col_stride > 0 {
        // SAFETY: the CPU has avx2 and fma (caller); B is read transposed, as the copy
        // asks; the rest is the caller's.
        return unsafe { avx2::transposed_rows(b, k, n, to) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = kernel;
    // SAFETY: forwarded from the caller.
    unsafe { copy_rows_one_by_one(b, [k, n], to) }
}

/// Whether [`sgemm`] takes a call of these sizes and strides (on either set).
///
/// It takes products whose B has at most [`LARGEST_B`] elements: the row tiles
/// run outer, so every tile of rows reads all of B, which must stay in cache for that to be
/// cheap. Above it (the d = 512 model's projections) `matrixmultiply`'s cache blocking is
/// faster (PERFORMANCE.md §11 and §18). Up to [`LARGEST_B_WITH_COPIED_A`] it also
/// takes a B with contiguous rows times an A with unit row stride, copying A's row tiles.
fn takes([m, k, n]: [usize; 3], [a, b]: [Strided<f32>; 2], c: Strided<f32>) -> bool {
    let copied_a = a.row_stride == 1 && b.col_stride == 1 && k * n <= LARGEST_B_WITH_COPIED_A;
    let sizes = m > 0 && k > 0 && n > 0 && (k * n <= LARGEST_B || copied_a);
    sizes && c.col_stride == 1 && offsets_fit(b, n)
}

/// Whether a strided B's `n` columns can be copied by a gather, whose offsets are 32-bit.
fn offsets_fit(b: Strided<f32>, n: usize) -> bool {
    n as isize * b.col_stride.abs() < i32::MAX as isize / 4
}

/// B's `k × n` elements (rows `b_row` apart) copied to `to` in panels of `width` columns,
/// `panel` elements apart (`k·width` for all of B's rows; more when these are some rows of
/// a taller B, written into each of its panels): element `(r, c)` at
/// `(c / width)·panel + r·width + c mod width`, the last panel's missing columns 0.
///
/// A whole panel's row is one copy of a constant size ([`copy_runs`]), inlined, instead of
/// a `memcpy` and a `memset` call per row: 8192 calls for each `[256, 512]` block of the
/// d128 feed-forward dY. That weight gradient took 0.96× its time (PERFORMANCE.md §36).
///
/// # Safety
/// `b` must address `k` rows of `n` live elements, `b_row` apart; `to` has room for
/// `(n.div_ceil(width) − 1)·panel + k·width` elements; `panel ≥ k·width`.
#[cfg(target_arch = "x86_64")]
unsafe fn column_panels(
    b: *const f32,
    b_row: isize,
    [k, n]: [usize; 2],
    [width, panel]: [usize; 2],
    to: *mut f32,
) {
    let whole = n / width * width;
    for (p, j0) in (0..whole).step_by(width).enumerate() {
        // SAFETY: columns j0..j0 + width of B's k rows; panel p of `to`.
        unsafe {
            let (from, at) = (b.add(j0), to.add(p * panel));
            match width {
                32 => copy_runs::<32>(from, b_row, k, at),
                16 => copy_runs::<16>(from, b_row, k, at),
                _ => unreachable!("a panel is two vectors of 16 or 8 lanes"),
            }
        }
    }
    let cols = n - whole;
    if cols > 0 {
        let mut at = to.wrapping_add(whole / width * panel);
        for r in 0..k {
            // SAFETY: the last `cols` columns of row r, per the caller; `at` stays inside
            // the last panel of `to`.
            unsafe {
                std::ptr::copy_nonoverlapping(b.offset(r as isize * b_row).add(whole), at, cols);
                std::ptr::write_bytes(at.add(cols), 0, width - cols);
                at = at.add(width);
            }
        }
    }
}

/// `k` runs of `W` adjacent elements, `stride` apart from `from`, copied into `[k][W]` at
/// `to`, each run one copy of a constant size: a whole panel of B ([`column_panels`]) or a
/// row tile's chain of A (`tile`'s `APanel`).
///
/// # Safety
/// `from` must address `k` runs of `W` live elements, `stride` apart; `to` has room for
/// `k·W` elements.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn copy_runs<const W: usize>(from: *const f32, stride: isize, k: usize, to: *mut f32) {
    for r in 0..k {
        // SAFETY: run r's W elements, and row r of `to`, per the caller.
        unsafe {
            std::ptr::copy_nonoverlapping(from.offset(r as isize * stride), to.add(r * W), W);
        }
    }
}

/// The pointers and strides of one call: A's as given, B's rows contiguous (`b_row` apart,
/// its panels of `2·LANES` columns `b_panel` apart: `2·LANES` in B itself, `k·2·LANES` in
/// [`column_panels`]),
/// C's `m` rows `c_row` apart with unit column stride, and the C that the first summation
/// chain joins (`c_in`, rows `c_in_row` apart: C itself, or a bias repeated with stride 0).
#[derive(Clone, Copy)]
struct Operands {
    m: usize,
    a: Strided<f32>,
    b: *const f32,
    b_row: isize,
    b_panel: isize,
    /// How far ahead of the row it reads a tile's loop prefetches B: [`PREFETCH_ROWS`]
    /// rows (`PREFETCH_ROWS · b_row` elements), or 0 for none.
    b_ahead: isize,
    c: *mut f32,
    c_row: isize,
    c_in: *const f32,
    c_in_row: isize,
}

#[cfg(all(test, target_arch = "x86_64"))]
mod model;
#[cfg(test)]
mod tests;
