//! The direct kernel against `matrixmultiply`'s `sgemm`, bit for bit, over the shapes,
//! layouts and scalars the fused kernels call it with, and the edges of its tiles and
//! chains.

use super::*;
use crate::cpu::test_values::{gradients, inputs};

/// `len` irregular values of mixed signs for operand `which` (0: A, 1: B, 2: C), on
/// scales far apart, so that roundings differ between summation orders.
pub(super) fn values(len: usize, which: u64) -> Vec<f32> {
    match which {
        0 => inputs(len, 0.0137, -6.9),
        1 => gradients(len, 0.021, -10.4),
        _ => inputs(len, 0.37, -187.0),
    }
}

/// One layout of a `[rows, cols]` operand stored in a buffer: row-major with `pad` extra
/// columns, or transposed (column-major) with `pad` extra rows.
#[derive(Clone, Copy, Debug)]
pub(super) struct Layout {
    pub(super) transposed: bool,
    pub(super) pad: usize,
}

impl Layout {
    pub(super) fn len(self, rows: usize, cols: usize) -> usize {
        if self.transposed {
            cols * (rows + self.pad)
        } else {
            rows * (cols + self.pad)
        }
    }

    pub(super) fn view(self, ptr: *mut f32, rows: usize, cols: usize) -> Strided<f32> {
        if self.transposed {
            Strided::rows(ptr, rows + self.pad).t()
        } else {
            Strided::rows(ptr, cols + self.pad)
        }
    }
}

/// `C ← α·A·B + β·C` by the direct kernel and by `matrixmultiply`, from the same C; returns
/// whether the direct kernel took the call, after asserting the two C buffers are equal bit
/// for bit (padding included) when it did.
fn compare(dims: [usize; 3], layouts: [Layout; 3], alpha: f32, beta: f32) -> bool {
    let [m, k, n] = dims;
    let [la, lb, lc] = layouts;
    let mut a = values(la.len(m, k), 0);
    let mut b = values(lb.len(k, n), 1);
    let mut c_direct = values(lc.len(m, n), 2);
    let mut c_reference = c_direct.clone();
    let a_view = la.view(a.as_mut_ptr(), m, k);
    let b_view = lb.view(b.as_mut_ptr(), k, n);
    // SAFETY: every view addresses its own live buffer; each C is written by one call.
    let took = unsafe {
        let c = lc.view(c_direct.as_mut_ptr(), m, n);
        let took = run(cpu_kernel(), dims, alpha, [a_view, b_view], (beta, c), c);
        let c = lc.view(c_reference.as_mut_ptr(), m, n);
        reference_sgemm(dims, alpha, [a_view, b_view], beta, c);
        took.is_some()
    };
    if took {
        let differ: Vec<usize> = (0..c_direct.len())
            .filter(|&i| c_direct[i].to_bits() != c_reference[i].to_bits())
            .collect();
        assert!(
            differ.is_empty(),
            "{dims:?} {layouts:?} α {alpha} β {beta}: {} elements differ, the first at {}",
            differ.len(),
            differ[0]
        );
    } else {
        // Untaken calls must not have touched C.
        assert_eq!(c_direct, values(lc.len(m, n), 2));
    }
    took
}

/// `C ← α·A·B + β·C` by `matrixmultiply`'s `sgemm`, on the views' strides: the reference.
///
/// # Safety
/// The views address `m × k`, `k × n` and `m × n` live elements; C overlaps neither.
pub(super) unsafe fn reference_sgemm(
    [m, k, n]: [usize; 3],
    alpha: f32,
    [a, b]: [Strided<f32>; 2],
    beta: f32,
    c: Strided<f32>,
) {
    // SAFETY: forwarded from the caller.
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
        )
    }
}

/// The direct kernel this CPU runs, uncapped: [`kernel`]'s choice under the CPU's own set
/// ([`crate::cpu::dispatch::detect`]), not under [`detected`], which other tests cap for a
/// moment while these run.
pub(super) fn cpu_kernel() -> Option<Kernel> {
    Kernel::for_set(crate::cpu::dispatch::detect(), has_avx512f(), false)
}

/// Whether the direct kernel runs on this CPU (AVX-512F, or AVX2 with FMA).
fn direct() -> bool {
    cpu_kernel().is_some()
}

const ROW_MAJOR: Layout = Layout {
    transposed: false,
    pad: 0,
};

#[test]
fn equals_matrixmultiply_bit_for_bit_over_shapes_and_layouts() {
    let (mut taken, mut small) = (0, 0);
    let bound = if direct() { LARGEST_B } else { 0 };
    let with_copied_a = if direct() { LARGEST_B_WITH_COPIED_A } else { 0 };
    for m in [1, 2, 3, 5, 11, 12, 13, 17, 25, 64] {
        for k in [1, 7, 16, 17, 32, 255, 256, 257, 600] {
            for n in [1, 5, 16, 17, 31, 32, 33, 96, 128] {
                for transposed in [[false, false], [true, false], [false, true], [true, true]] {
                    let layouts = [
                        Layout {
                            transposed: transposed[0],
                            pad: 3,
                        },
                        Layout {
                            transposed: transposed[1],
                            pad: 1,
                        },
                        Layout {
                            transposed: false,
                            pad: 2,
                        },
                    ];
                    taken += usize::from(compare([m, k, n], layouts, 1.0, 0.0));
                    // An A with unit row stride (transposed) and a row-major B go up to the
                    // bound for a copied A.
                    let unit_a = transposed[0] && !transposed[1];
                    small += usize::from(k * n <= bound || (unit_a && k * n <= with_copied_a));
                }
            }
        }
    }
    // The kernel takes every call up to its size limit where it runs, on either set: all but
    // the k = 600, n = 128 calls whose A is not transposed or whose B is (a copied A takes
    // the rest).
    let expected = if direct() { 10 * 9 * 9 * 4 - 10 * 3 } else { 0 };
    assert_eq!(small, expected);
    assert_eq!(taken, small);
}

#[test]
fn equals_matrixmultiply_for_every_scaling() {
    // (α, β) pairs the fused kernels pass (attention's scale, dK's α = scale with β = 1),
    // and β values that round C first; shapes with whole and partial 16 × 16 (AVX-512) or
    // 8 × 8 (AVX2) tiles, one or several chains.
    for (alpha, beta) in [
        (1.0, 0.0),
        (0.25, 0.0),
        (0.3, 0.0),
        (1.0, 1.0),
        (1.0, 0.7),
        (1.0, -2.5),
        (0.25, 1.0),
        (0.3, 0.7),
    ] {
        for dims in [
            [17, 16, 17],
            [17, 17, 16],
            [32, 17, 48],
            [13, 300, 40],
            [40, 600, 33],
            // Several chains within AVX2's bound too.
            [13, 300, 27],
            [40, 600, 13],
        ] {
            for c_pad in [0, 5] {
                let layouts = [
                    ROW_MAJOR,
                    ROW_MAJOR,
                    Layout {
                        transposed: false,
                        pad: c_pad,
                    },
                ];
                let took = compare(dims, layouts, alpha, beta);
                let within = dims[1] * dims[2] <= if direct() { LARGEST_B } else { 0 };
                assert_eq!(took, within, "{dims:?} α {alpha} β {beta}");
            }
        }
    }
}

/// A weight gradient's `Xᵀ·dY` over the rows bound, B read where it lies and each
/// row tile's A into a buffer: the same bits as `matrixmultiply` for every scaling, several
/// chains, and a last panel of 8 columns. With A row-major the call stays with
/// `matrixmultiply`.
#[test]
fn takes_weight_gradients_with_a_copied_per_tile() {
    let unit_a = Layout {
        transposed: true,
        pad: 3,
    };
    let c = Layout {
        transposed: false,
        pad: 5,
    };
    for (alpha, beta) in [(1.0, 0.0), (0.3, 0.0), (1.0, 1.0), (0.3, 0.7)] {
        for dims in [[25, 600, 200], [12, 256, 512], [128, 256, 512]] {
            assert!(dims[1] * dims[2] > 1 << 16, "over the rows bound");
            let took = compare(dims, [unit_a, ROW_MAJOR, c], alpha, beta);
            assert_eq!(took, direct(), "{dims:?} α {alpha} β {beta}");
            assert!(!compare(dims, [ROW_MAJOR, ROW_MAJOR, c], alpha, beta));
        }
    }
}

#[test]
fn leaves_strided_outputs_and_large_operands_to_matrixmultiply() {
    // Strided C columns, empty dimensions and a large B: C untouched here.
    let column_major = Layout {
        transposed: true,
        pad: 0,
    };
    assert!(!compare(
        [8, 8, 8],
        [ROW_MAJOR, ROW_MAJOR, column_major],
        1.0,
        0.0
    ));
    assert!(!compare([0, 8, 8], [ROW_MAJOR; 3], 1.0, 0.0));
    assert!(!compare([8, 0, 8], [ROW_MAJOR; 3], 1.0, 0.0));
    assert!(!compare([272, 512, 1536], [ROW_MAJOR; 3], 1.0, 0.0));
    // A B of 64 Ki elements, the bound, is taken; one row more is not.
    assert_eq!(compare([64, 256, 256], [ROW_MAJOR; 3], 1.0, 0.0), direct());
    assert!(!compare([64, 257, 256], [ROW_MAJOR; 3], 1.0, 0.0));
}

#[test]
fn does_not_read_c_when_beta_is_zero() {
    if !direct() {
        return;
    }
    let (mut a, mut b) = (values(6 * 5, 0), values(5 * 7, 1));
    let mut c = vec![f32::NAN; 6 * 7];
    // SAFETY: each view addresses its own live buffer.
    let took = unsafe {
        let [a, b] = [(a.as_mut_ptr(), 5), (b.as_mut_ptr(), 7)].map(|(p, w)| Strided::rows(p, w));
        let c = Strided::rows(c.as_mut_ptr(), 7);
        run(cpu_kernel(), [6, 5, 7], 1.0, [a, b], (0.0, c), c)
    };
    assert!(took.is_some());
    assert!(c.iter().all(|v| v.is_finite()));
}

/// `X·W + b` with the bias joined in place (`Gemm::gemm_plus_rows`) equals the bias copied
/// into every row and a GEMM with β = 1, bit for bit: on the direct kernel (B within its
/// bound, one summation chain or several, A transposed or not) and on the fallback
/// (a B over its bound), and C's prior contents are not read.
#[test]
fn the_bias_joined_in_place_equals_the_bias_copied_first() {
    use crate::cpu::gemm::Gemm;
    for [m, k, n] in [
        [544, 32, 96],
        [13, 257, 33],
        [5, 600, 17],
        [40, 128, 512],
        [24, 512, 1024],
    ] {
        for transposed in [false, true] {
            let layout = Layout { transposed, pad: 1 };
            let (mut a, mut b) = (values(layout.len(m, k), 0), values(k * n, 1));
            let bias = values(n, 2);
            let a_view = layout.view(a.as_mut_ptr(), m, k);
            let b_view = Strided::rows(b.as_mut_ptr(), n);
            let mut joined = vec![f32::NAN; m * n];
            let mut copied: Vec<f32> = (0..m * n).map(|i| bias[i % n]).collect();
            // SAFETY: each view addresses its own live buffer; each C is written by one call.
            unsafe {
                f32::gemm_plus_rows(
                    [m, k, n],
                    1.0,
                    a_view,
                    b_view,
                    bias.as_ptr(),
                    Strided::rows(joined.as_mut_ptr(), n),
                );
                f32::gemm(
                    [m, k, n],
                    1.0,
                    a_view,
                    b_view,
                    1.0,
                    Strided::rows(copied.as_mut_ptr(), n),
                );
            }
            let differ = (0..m * n)
                .filter(|&i| joined[i].to_bits() != copied[i].to_bits())
                .count();
            assert_eq!(differ, 0, "[{m}, {k}, {n}] transposed A {transposed}");
        }
    }
}

/// The direct kernel runs on the set whose kernel `matrixmultiply` picks, and only there:
/// AVX-512 where `sgemm` runs its AVX-512 kernel and `detected` is not capped; AVX2 where
/// `sgemm` runs its AVX2 kernel (a CPU without AVX-512F, or a build that took it from
/// `sgemm`: [`has_avx512f`]), under either set; neither on an AVX-512 CPU capped to AVX2,
/// since `sgemm` keeps its AVX-512 kernel there; nothing on the baseline or with
/// `ADDNORM_GEMM=packed`.
#[test]
fn runs_only_where_matrixmultiply_runs_the_same_instruction_set() {
    use InstructionSet::{Avx2Fma, Avx512, Baseline};
    for (set, avx512f, expected) in [
        (Avx512, true, Some(Kernel::Avx512)),
        (Avx512, false, Some(Kernel::Avx2Fma)),
        (Avx2Fma, true, None),
        (Avx2Fma, false, Some(Kernel::Avx2Fma)),
        (Baseline, true, None),
        (Baseline, false, None),
    ] {
        assert_eq!(Kernel::for_set(set, avx512f, false), expected, "{set:?}");
        assert_eq!(Kernel::for_set(set, avx512f, true), None, "{set:?}, packed");
    }
}

/// The vectorized copies of a strided B into contiguous rows equal the element-by-element
/// copy, at sizes around their blocks, on each kernel this CPU has: AVX-512's 16 × 16
/// transposes (B read transposed, unit row stride) and gathers (any other strides), and
/// AVX2's 8 × 8 transposes (B read transposed; other strides element by element), as
/// [`copy_rows_on`] dispatches them.
#[cfg(target_arch = "x86_64")]
#[test]
fn vectorized_row_copies_equal_the_plain_copy() {
    let kernels = [
        (Kernel::Avx512, has_avx512f()),
        (
            Kernel::Avx2Fma,
            is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
        ),
    ];
    let sizes = [
        (1, 1),
        (5, 3),
        (8, 8),
        (9, 17),
        (16, 16),
        (17, 33),
        (32, 128),
        (128, 40),
        (3, 130),
    ];
    for (kernel, _) in kernels.into_iter().filter(|&(_, on_cpu)| on_cpu) {
        for ((k, n), transposed) in sizes.into_iter().flat_map(|s| [(s, true), (s, false)]) {
            let layout = Layout { transposed, pad: 3 };
            let mut stored = values(layout.len(k, n), 1);
            let b = layout.view(stored.as_mut_ptr(), k, n);
            // SAFETY: b addresses k × n elements of `stored`; each copy has room for them;
            // the CPU has `kernel`'s set.
            let (fast, plain): (Aligned<f32>, Aligned<f32>) = unsafe {
                (
                    CopyOfB::filled(k * n, |to| copy_rows_on(Some(kernel), b, [k, n], to)),
                    CopyOfB::filled(k * n, |to| copy_rows_one_by_one(b, [k, n], to)),
                )
            };
            assert_eq!(
                fast, plain,
                "{kernel:?}: k {k}, n {n}, transposed {transposed}"
            );
        }
    }
}

/// On AVX2 a weight gradient's wide B is copied into column panels ([`own_arrangement`]),
/// with the bits of the same kernel reading it in place: several chains, and a last panel
/// of 8 columns. Narrower or smaller Bs, an A without unit row stride and AVX-512 leave B
/// in place. Runs the AVX2 kernel on any CPU with AVX2 and FMA, AVX-512 ones too.
#[cfg(target_arch = "x86_64")]
#[test]
fn avx2_weight_gradients_read_wide_b_from_panels_with_the_same_bits() {
    let unit_a = Layout {
        transposed: true,
        pad: 3,
    };
    let view = |layout: Layout, rows, cols| layout.view(std::ptr::null_mut(), rows, cols);
    let avx2 = Kernel::Avx2Fma;
    for (kernel, a, [k, n], panels) in [
        (avx2, view(unit_a, 128, 256), [256, 512], true),
        (avx2, view(unit_a, 25, 300), [300, 264], true),
        (avx2, view(unit_a, 25, 600), [600, 200], false),
        (avx2, view(unit_a, 25, 16), [16, 256], false),
        (avx2, view(ROW_MAJOR, 128, 256), [256, 512], false),
        (Kernel::Avx512, view(unit_a, 128, 256), [256, 512], false),
    ] {
        let want = if panels {
            Arrangement::Panels
        } else {
            Arrangement::Rows
        };
        let got = own_arrangement(kernel, a, [k, n]);
        assert!(
            got == want,
            "{kernel:?} {k}x{n} row stride {}",
            a.row_stride
        );
    }
    if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")) {
        eprintln!("SKIPPED: the CPU has no AVX2 with FMA");
        return;
    }
    let c_layout = Layout {
        transposed: false,
        pad: 5,
    };
    for dims @ [m, k, n] in [[25, 300, 264], [128, 256, 512], [12, 500, 256]] {
        for (alpha, beta) in [(1.0, 0.0), (0.3, 0.7)] {
            let mut a = values(unit_a.len(m, k), 0);
            let mut b = values(ROW_MAJOR.len(k, n), 1);
            let mut from_panels = values(c_layout.len(m, n), 2);
            let mut in_place = from_panels.clone();
            let (a, b) = (
                unit_a.view(a.as_mut_ptr(), m, k),
                ROW_MAJOR.view(b.as_mut_ptr(), k, n),
            );
            // SAFETY: every view addresses its own live buffer, each C written by one call;
            // the CPU has AVX2 and FMA; the copy lives until the product is done.
            unsafe {
                let c = c_layout.view(from_panels.as_mut_ptr(), m, n);
                assert!(run(Some(avx2), dims, alpha, [a, b], (beta, c), c).is_some());
                let c = c_layout.view(in_place.as_mut_ptr(), m, n);
                let (_copy, layout) =
                    arrange::<Aligned<f32>>(avx2, b, [k, n], Arrangement::Rows, Split::No);
                assert!(layout.ptr == b.ptr.cast_const(), "read in place");
                multiply(avx2, dims, alpha, a, layout, (beta, c), c);
            }
            let differ = (from_panels.iter().zip(&in_place))
                .filter(|(x, y)| x.to_bits() != y.to_bits())
                .count();
            assert_eq!(differ, 0, "{dims:?} α {alpha} β {beta}");
        }
    }
}

/// A strided B over the direct kernel's bound is copied into contiguous rows for `sgemm`
/// (and the direct kernel declines it); a contiguous one that large is left in place.
#[test]
fn prepare_copies_a_large_strided_b_into_rows_for_sgemm() {
    let Some(kernel) = cpu_kernel() else {
        eprintln!("SKIPPED: the CPU runs no direct kernel");
        return;
    };
    let (k, n) = (LARGEST_B / 64 + 3, 64);
    let layout = Layout {
        transposed: true,
        pad: 3,
    };
    let mut stored = values(layout.len(k, n), 3);
    let b = layout.view(stored.as_mut_ptr(), k, n);
    // SAFETY: b addresses k × n elements of `stored`.
    let ready = unsafe { prepare_on(Some(kernel), b, [k, n]) }.expect("copied");
    let rows = ready.rows().expect("rows for sgemm");
    for (r, c) in (0..k).flat_map(|r| (0..n).map(move |c| (r, c))) {
        // SAFETY: element (r, c) of the copy and of the view.
        let (got, want) = unsafe { (*rows.from(r, c).ptr, *b.from(r, c).ptr) };
        assert_eq!(got.to_bits(), want.to_bits(), "({r}, {c})");
    }
    let mut c_out = vec![0.0f32; n];
    let a = vec![1.0f32; k];
    // SAFETY: A is 1 × k, C 1 × n, both live; the direct kernel must decline.
    let taken = unsafe {
        sgemm_prepared(
            [1, k, n],
            1.0,
            Strided::rows(a.as_ptr().cast_mut(), k),
            &ready,
            (0.0, Strided::rows(c_out.as_mut_ptr(), n)),
            Strided::rows(c_out.as_mut_ptr(), n),
        )
    };
    assert!(taken.is_none());
    let mut stored = values(k * n, 4);
    let contiguous = Strided::rows(stored.as_mut_ptr(), n);
    // SAFETY: the view addresses k × n elements of `stored`.
    assert!(unsafe { prepare_on(Some(kernel), contiguous, [k, n]) }.is_none());
}

/// [`prepare`]'s layouts, element by element: a wide B in column panels (the last one
/// padded with zeros) and a narrow strided one in contiguous rows on AVX-512, and a narrow
/// contiguous one left in place.
#[test]
fn prepare_lays_out_b_in_panels_or_rows() {
    if cpu_kernel() != Some(Kernel::Avx512) {
        eprintln!("SKIPPED: the CPU runs no AVX-512 direct kernel");
        return;
    }
    let width = 2 * avx512::LANES;
    for ([k, n], transposed) in [([64, 300], false), ([64, 300], true), ([32, 40], true)] {
        let layout = Layout { transposed, pad: 3 };
        let mut stored = values(layout.len(k, n), 1);
        let b = layout.view(stored.as_mut_ptr(), k, n);
        // SAFETY: b addresses k × n elements of `stored`.
        let ready = unsafe { prepare_on(cpu_kernel(), b, [k, n]) }.expect("laid out");
        for r in 0..k {
            for c in 0..n.next_multiple_of(width) {
                let at = (c / width) as isize * ready.layout.panel
                    + r as isize * ready.layout.row
                    + (c % width) as isize;
                // Only panels are padded past column n.
                if c >= n && n < PANELS_FROM_N {
                    continue;
                }
                // SAFETY: inside the copy (panels are padded to whole widths; rows hold n).
                let got = unsafe { *ready.layout.ptr.offset(at) };
                let want = if c < n {
                    // SAFETY: element (r, c) of the view.
                    unsafe {
                        *b.ptr
                            .offset(r as isize * b.row_stride + c as isize * b.col_stride)
                    }
                } else {
                    0.0
                };
                assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "{k}x{n} t {transposed} ({r}, {c})"
                );
            }
        }
    }
    let mut stored = values(32 * 40, 1);
    let contiguous = Strided::rows(stored.as_mut_ptr(), 40);
    // SAFETY: the view addresses 32 × 40 elements of `stored`.
    assert!(unsafe { prepare_on(cpu_kernel(), contiguous, [32, 40]) }.is_none());

    // Rows that are whole lines are read in place when they start on lines, and copied so
    // that they do when they start 16 bytes into one.
    let mut stored = Aligned::<f32>::zeroed(32 * 64 + 4);
    stored
        .iter_mut()
        .enumerate()
        .for_each(|(i, v)| *v = i as f32);
    let on_lines = Strided::rows(stored.as_mut_ptr(), 64);
    // SAFETY: the view addresses 32 × 64 elements of `stored`.
    assert!(unsafe { prepare_on(cpu_kernel(), on_lines, [32, 64]) }.is_none());
    // SAFETY: as above, 4 elements further on.
    let off_lines = Strided::rows(unsafe { stored.as_mut_ptr().add(4) }, 64);
    // SAFETY: as above.
    let ready = unsafe { prepare_on(cpu_kernel(), off_lines, [32, 64]) }.expect("realigned");
    assert!((ready.layout.ptr as usize).is_multiple_of(ALIGN));
    assert_eq!(ready.layout.row, 64);
    for (r, c) in (0..32).flat_map(|r| (0..64).map(move |c| (r, c))) {
        // SAFETY: inside the copy of 32 rows of 64.
        let got = unsafe { *ready.layout.ptr.add(r * 64 + c) };
        assert_eq!(got, (4 + r * 64 + c) as f32, "({r}, {c})");
    }
}

/// The public answer ([`super::super::direct_kernel`]) names a set the CPU has, or none.
#[test]
fn the_reported_set_is_one_the_cpu_has() {
    if let Some(set) = instruction_set() {
        assert!(set > InstructionSet::Baseline && set <= crate::cpu::dispatch::detect());
    }
}
