//! The slice kernels against a plain f64 reference that materializes `P`, at shapes that
//! cross the query block and the SIMD lane widths, causal and not.

use super::backward::{Saved, backward, backward_with};
use super::forward::{forward, forward_with};
use super::{Cut, Parts};
use crate::attention::spec::{AttentionSpec, HeadLayout};
use crate::cpu::test_values::{gradients, inputs};

/// `(O, lse, max_logit, [dQ, dK, dV])` of the reference.
type Reference = (Vec<f64>, Vec<f64>, f64, [Vec<f64>; 3]);

/// The textbook attention and its backward, with the whole `[T, T]` matrices.
fn reference(
    l: HeadLayout,
    spec: &AttentionSpec,
    [q, k, v]: [&[f64]; 3],
    dout: &[f64],
) -> Reference {
    let (t, dm, dh) = (l.seq, l.d_model(), l.d_head);
    let mut out = vec![0.0; l.len()];
    let mut lse = vec![0.0; l.batch * l.heads * t];
    let mut grads = [(); 3].map(|()| vec![0.0; l.len()]);
    let mut max_logit = f64::NEG_INFINITY;
    let at = |b: usize, h: usize, i: usize, d: usize| l.offset(b, h) + i * dm + d;
    for b in 0..l.batch {
        for h in 0..l.heads {
            let mut p = vec![vec![0.0; t]; t];
            // The soft cap's slope 1 − tanh²(S/c) at each logit (1 without a cap).
            let mut slope = vec![vec![1.0; t]; t];
            for i in 0..t {
                let n = l.visible_keys(i, spec.causal);
                let s: Vec<f64> = (0..n)
                    .map(|j| {
                        let raw = spec.scale
                            * (0..dh)
                                .map(|d| q[at(b, h, i, d)] * k[at(b, h, j, d)])
                                .sum::<f64>();
                        match spec.softcap {
                            Some(c) => {
                                slope[i][j] = 1.0 - (raw / c).tanh().powi(2);
                                c * (raw / c).tanh()
                            }
                            None => raw,
                        }
                    })
                    .collect();
                let m = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                max_logit = max_logit.max(m);
                let sum: f64 = s.iter().map(|x| (x - m).exp()).sum();
                lse[(b * l.heads + h) * t + i] = m + sum.ln();
                for j in 0..n {
                    p[i][j] = (s[j] - m).exp() / sum;
                }
                for d in 0..dh {
                    out[at(b, h, i, d)] = (0..n).map(|j| p[i][j] * v[at(b, h, j, d)]).sum();
                }
            }
            for i in 0..t {
                let dp: Vec<f64> = (0..t)
                    .map(|j| {
                        (0..dh)
                            .map(|d| dout[at(b, h, i, d)] * v[at(b, h, j, d)])
                            .sum()
                    })
                    .collect();
                let delta: f64 = (0..t).map(|j| p[i][j] * dp[j]).sum();
                for j in 0..t {
                    let ds = p[i][j] * (dp[j] - delta) * slope[i][j] * spec.scale;
                    for d in 0..dh {
                        grads[0][at(b, h, i, d)] += ds * k[at(b, h, j, d)];
                        grads[1][at(b, h, j, d)] += ds * q[at(b, h, i, d)];
                        grads[2][at(b, h, j, d)] += p[i][j] * dout[at(b, h, i, d)];
                    }
                }
            }
        }
    }
    (out, lse, max_logit, grads)
}

fn assert_near(what: &str, actual: &[f64], expected: &[f64], tolerance: f64) {
    let worst = actual
        .iter()
        .zip(expected)
        .map(|(a, e)| (a - e).abs())
        .fold(0.0, f64::max);
    assert!(
        worst <= tolerance,
        "{what}: max |error| {worst:.3e} > {tolerance:e}"
    );
}

/// Runs the kernels in `E` and compares with the reference within `tolerance`.
fn check<E: super::Gemm>(l: HeadLayout, spec: AttentionSpec, tolerance: f64) {
    let q: Vec<f64> = inputs(l.len(), 2e-3, -1.0);
    let k: Vec<f64> = gradients(l.len(), 2.2e-3, -1.1);
    let v: Vec<f64> = inputs::<f64>(l.len(), 1.5e-3, -0.7)
        .into_iter()
        .rev()
        .collect();
    let dout: Vec<f64> = gradients::<f64>(l.len(), 1e-3, -0.5)
        .into_iter()
        .rev()
        .collect();
    let (out, lse, max_logit, grads) = reference(l, &spec, [&q, &k, &v], &dout);
    let cast = |x: &[f64]| x.iter().map(|&v| E::from_f64(v)).collect::<Vec<E>>();
    let back = |x: &[E]| {
        x.iter()
            .map(|&v| format!("{v:?}").parse::<f64>().unwrap())
            .collect::<Vec<f64>>()
    };
    let [qe, ke, ve, de] = [&q, &k, &v, &dout].map(|x| cast(x));
    let mut out_e = vec![E::ZERO; l.len()];
    let mut lse_e = vec![E::ZERO; l.batch * l.heads * l.seq];
    let max_e = forward(l, &spec, [&qe, &ke, &ve], &mut out_e, &mut lse_e);
    let what = format!("{l:?} causal {} cap {:?}", spec.causal, spec.softcap);
    assert_near(&format!("output {what}"), &back(&out_e), &out, tolerance);
    assert_near(
        &format!("lse {what}"),
        &back(&lse_e),
        &lse,
        tolerance * 10.0,
    );
    assert_near(
        &format!("max logit {what}"),
        &back(&[max_e]),
        &[max_logit],
        tolerance * 10.0,
    );
    let mut g = [(); 3].map(|()| vec![E::ZERO; l.len()]);
    let [dq, dk, dv] = &mut g;
    let saved = Saved {
        q: &qe,
        k: &ke,
        v: &ve,
        output: &out_e,
        lse: &lse_e,
    };
    backward(l, &spec, saved, &de, [dq, dk, dv]);
    for (name, (actual, expected)) in ["dq", "dk", "dv"].iter().zip(g.iter().zip(&grads)) {
        assert_near(
            &format!("{name} {what}"),
            &back(actual),
            expected,
            tolerance * 10.0,
        );
    }
}

fn layouts() -> Vec<HeadLayout> {
    [(2, 1, 1, 8), (1, 17, 2, 16), (2, 70, 3, 8), (1, 130, 1, 33)]
        .into_iter()
        .map(|(batch, seq, heads, d_head)| HeadLayout {
            batch,
            seq,
            heads,
            d_head,
        })
        .collect()
}

/// Each of [`layouts`] with its default spec (`1/√d_head`, no cap), causal and not.
fn layouts_and_specs() -> Vec<(HeadLayout, AttentionSpec)> {
    layouts()
        .into_iter()
        .flat_map(|l| {
            [true, false].map(|causal| {
                let mut spec = AttentionSpec::causal(l.heads, l.d_head);
                spec.causal = causal;
                (l, spec)
            })
        })
        .collect()
}

#[test]
fn kernels_match_the_reference_in_f64() {
    for (l, spec) in layouts_and_specs() {
        check::<f64>(l, spec.with_scale(0.8), 1e-12);
    }
}

#[test]
fn kernels_match_the_reference_in_f32() {
    for (l, spec) in layouts_and_specs() {
        check::<f32>(l, spec.with_scale(0.8), 2e-5);
    }
}

/// Gemma 2's soft cap `S ← c·tanh(S/c)` in both kernels, at a cap (1.5) the logits of these
/// inputs reach, so that the tanh bends them and its slope scales the gradients.
#[test]
fn soft_capped_kernels_match_the_reference() {
    for (l, spec) in layouts_and_specs() {
        let spec = spec.with_scale(0.8).with_softcap(1.5);
        check::<f64>(l, spec, 1e-12);
        check::<f32>(l, spec, 2e-5);
    }
}

/// The forward's and backward's outputs, bit patterns, with the work cut as `cut` says,
/// the gradient buffers holding `stale` before the backward.
fn bits_with(
    l: HeadLayout,
    spec: &AttentionSpec,
    [q, k, v, dout]: [&[f32]; 4],
    cut: Cut,
    stale: f32,
) -> Vec<Vec<u32>> {
    let mut out = vec![0.0; l.len()];
    let mut lse = vec![0.0; l.batch * l.heads * l.seq];
    let max = forward_with(l, spec, [q, k, v], &mut out, &mut lse, cut);
    let mut g = [(); 3].map(|()| vec![stale; l.len()]);
    let [dq, dk, dv] = &mut g;
    let saved = Saved {
        q,
        k,
        v,
        output: &out,
        lse: &lse,
    };
    backward_with(l, spec, saved, dout, [dq, dk, dv], cut);
    [vec![max], out, lse]
        .into_iter()
        .chain(g)
        .map(|x| x.iter().map(|v| v.to_bits()).collect())
        .collect()
}

/// Cutting causal query blocks into row and key parts, each product running only up to
/// the keys its rows see, changes no bit of any output against whole blocks: one and two
/// blocks and a short last one, heads of 8 to 33 features, with and without the soft cap,
/// and at logits large enough that masked keys' exponentials would saturate.
#[test]
fn causal_parts_change_no_bit() {
    let shapes = [
        (2, 17, 2, 16),
        (1, 40, 2, 16),
        (1, 64, 1, 8),
        (1, 128, 2, 32),
        (1, 130, 1, 33),
        (2, 70, 3, 8),
    ];
    let whole = Cut {
        parts: Parts::WHOLE,
        ..Cut::KERNELS
    };
    assert_same_bits_as_the_kernels(&shapes, &[true], whole);
}

/// Asserts that the kernels' cut and `other` give every output the same bits, for each
/// `(batch, seq, heads, d_head)` of `shapes` and each of `causal`, with and without the
/// soft cap, and at a scale large enough that masked keys' exponentials would saturate.
fn assert_same_bits_as_the_kernels(
    shapes: &[(usize, usize, usize, usize)],
    causal: &[bool],
    other: Cut,
) {
    for &(batch, seq, heads, d_head) in shapes {
        let l = HeadLayout {
            batch,
            seq,
            heads,
            d_head,
        };
        for (scale, cap) in [(0.8, None), (0.8, Some(1.5)), (40.0, None)] {
            for &causal in causal {
                let mut spec = AttentionSpec::causal(heads, d_head).with_scale(scale);
                spec.causal = causal;
                if let Some(c) = cap {
                    spec = spec.with_softcap(c);
                }
                let q: Vec<f32> = inputs(l.len(), 2e-3, -1.0);
                let k: Vec<f32> = gradients(l.len(), 2.2e-3, -1.1);
                let v: Vec<f32> = inputs(l.len(), 1.5e-3, -0.7).into_iter().rev().collect();
                let dout: Vec<f32> = gradients(l.len(), 1e-3, -0.5);
                let operands = [&q[..], &k, &v, &dout];
                assert_eq!(
                    bits_with(l, &spec, operands, Cut::KERNELS, 0.0),
                    bits_with(l, &spec, operands, other, 0.0),
                    "{l:?} scale {scale} cap {cap:?} causal {causal}"
                );
            }
        }
    }
}

/// The causal parts of a block: row parts of [`PART_ROWS`](super::PART_ROWS) whose keys
/// end at their last row's, rounded up to [`KEY_PART`](super::KEY_PART), those reading as
/// many keys joined; the keys every
/// row sees as one key part, then key parts of [`KEY_PART`](super::KEY_PART) that skip the
/// rows before their first key; below
/// [`CUT_FROM_KEYS`](super::CUT_FROM_KEYS) keys or without the mask, one part.
#[test]
fn causal_parts_cover_each_block() {
    let rows: Vec<_> = Parts::CAUSAL.rows(true, (64, 128), 128).collect();
    assert_eq!(
        rows,
        [(0, 12, 80), (12, 24, 96), (24, 48, 112), (48, 64, 128)]
    );
    let first: Vec<_> = Parts::CAUSAL.rows(true, (0, 64), 64).collect();
    assert_eq!(
        first,
        [(0, 12, 16), (12, 24, 32), (24, 48, 48), (48, 64, 64)]
    );
    let keys: Vec<_> = Parts::CAUSAL.keys(true, 64, 128).collect();
    assert_eq!(
        keys,
        [
            (0, 64, 0),
            (64, 80, 0),
            (80, 96, 16),
            (96, 112, 32),
            (112, 128, 48)
        ]
    );
    let first: Vec<_> = Parts::CAUSAL.keys(true, 0, 64).collect();
    assert_eq!(
        first,
        [(0, 16, 0), (16, 32, 16), (32, 48, 32), (48, 64, 48)]
    );
    assert_eq!(
        Parts::CAUSAL.rows(true, (0, 32), 32).last(),
        Some((12, 32, 32))
    );
    let short: Vec<_> = Parts::CAUSAL.rows(true, (0, 31), 31).collect();
    assert_eq!(short, [(0, 31, 31)]);
    let short: Vec<_> = Parts::CAUSAL.keys(true, 0, 31).collect();
    assert_eq!(short, [(0, 31, 0)]);
    assert_eq!(
        Parts::CAUSAL.rows(false, (0, 64), 128).collect::<Vec<_>>(),
        [(0, 64, 128)]
    );
    assert_eq!(
        Parts::CAUSAL.keys(false, 64, 128).collect::<Vec<_>>(),
        [(0, 128, 0)]
    );
    assert_eq!(
        Parts::WHOLE.rows(true, (64, 128), 128).collect::<Vec<_>>(),
        [(0, 64, 128)]
    );
    assert_eq!(
        Parts::WHOLE.keys(true, 64, 128).collect::<Vec<_>>(),
        [(0, 128, 0)]
    );
}

/// Padding the scratch rows (so that the softmax runs whole vectors) changes no bit of
/// any output, against rows exactly `n_k` long: causal and not, with and without the soft
/// cap, at logits large enough that the masked keys' exponentials saturate, and at widths
/// on both sides of the padding's multiple of 16.
#[test]
fn padded_scratch_rows_change_no_bit() {
    let unpadded = Cut {
        row_stride: |keys| keys,
        ..Cut::KERNELS
    };
    let shapes = [(2, 17, 2, 16), (1, 16, 1, 8), (1, 33, 2, 8), (2, 70, 3, 8)];
    assert_same_bits_as_the_kernels(&shapes, &[true, false], unpadded);
}

/// Q, K, V and dO of `len` elements for the tests over stale gradient buffers.
fn stale_buffer_operands(len: usize) -> [Vec<f32>; 4] {
    [
        inputs(len, 2e-3, -1.0),
        gradients(len, 2.2e-3, -1.1),
        inputs(len, 1.5e-3, -0.7),
        gradients(len, 1e-3, -0.5),
    ]
}

/// The backward writes dQ, dK and dV whole over whatever the buffers held (the output pool
/// hands them out as their last output left them): into buffers of NaNs it gives the bits
/// it gives into zeroed ones, causal and not, across query blocks and several heads.
#[test]
fn the_backward_writes_its_gradients_whole_over_stale_buffers() {
    for (l, spec) in layouts_and_specs() {
        let [q, k, v, dout] = stale_buffer_operands(l.len());
        let operands = [&q[..], &k, &v, &dout];
        assert_eq!(
            bits_with(l, &spec, operands, Cut::KERNELS, f32::NAN),
            bits_with(l, &spec, operands, Cut::KERNELS, 0.0),
            "{l:?} causal {}",
            spec.causal
        );
    }
}

/// Each task's scratch comes from a pool of earlier calls' (`cpu::reused`): scratch left
/// full of NaNs, at larger sizes than these calls use, changes no bit of any output,
/// causal and not, with and without the soft cap.
#[test]
fn stale_pooled_scratch_changes_no_bit() {
    for (l, spec) in layouts_and_specs() {
        let [q, k, v, dout] = stale_buffer_operands(l.len());
        let operands = [&q[..], &k, &v, &dout];
        let fresh = bits_with(l, &spec, operands, Cut::KERNELS, 0.0);
        // More values than the call's tasks take at once; taken last in, first out.
        super::forward::pool_stale_scratch(8, 4 * l.len());
        super::backward::pool_stale_scratch(8, 4 * l.len());
        assert_eq!(
            bits_with(l, &spec, operands, Cut::KERNELS, 0.0),
            fresh,
            "{l:?} causal {} cap {:?}",
            spec.causal,
            spec.softcap
        );
    }
}

#[test]
fn the_visible_maximum_has_the_bits_of_max_of() {
    // Rows with ties of +0 and −0, NaNs and infinities among the visible keys, and junk
    // (NaN, +∞, large values) past them, which must never be chosen.
    let specials = [
        0.0_f32,
        -0.0,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        3.0,
        -3.0,
    ];
    let junk = [f32::NAN, f32::INFINITY, 1e30];
    for len in [16, 32, 48, 128] {
        for seen in 1..=len {
            for case in 0..12 {
                let row: Vec<f32> = (0..len)
                    .map(|j| {
                        if j >= seen {
                            junk[(j + case) % junk.len()]
                        } else if (j * 7 + case) % 5 == 0 {
                            specials[(j + case) % specials.len()]
                        } else {
                            ((j * 31 + case * 17) % 23) as f32 - 11.0
                        }
                    })
                    .collect();
                let visible = super::max_of_visible(&row, seen);
                let expected = super::max_of(&row[..seen]);
                assert_eq!(
                    visible.to_bits(),
                    expected.to_bits(),
                    "len {len}, seen {seen}, case {case}: {visible} against {expected}"
                );
            }
        }
    }
}

/// A row's exponentials and sum in one pass (`exp_sum`) against the loop they replaced:
/// `exp(s − m)` over the visible keys rounded up to whole vectors, the rest of the row set
/// to 0, then `sum_map` over the whole row. Same bits, with junk (NaN, ±∞) past the
/// visible keys, on padded rows and on rows that are not whole vectors (the tests' `Cut`).
#[test]
fn exponentials_and_sums_in_one_pass_have_the_bits_of_two() {
    let junk = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1e30];
    for len in [16, 17, 40, 128] {
        for seen in 1..=len {
            let row: Vec<f32> = (0..len)
                .map(|j| match j >= seen {
                    true => junk[j % junk.len()],
                    false => ((j * 37 + seen * 11) % 29) as f32 * 0.37 - 5.0,
                })
                .collect();
            let m = super::max_of(&row[..seen]);
            let mut expected = row.clone();
            let whole = super::vector_extent(seen, len);
            for s in expected[..whole].iter_mut() {
                *s = crate::cpu::exp::exp_f32(*s - m);
            }
            expected[seen..].fill(0.0);
            let expected_sum = crate::cpu::real::sum_map(&expected, |p| p);
            let mut got = row.clone();
            let sum = super::forward::exp_sum(&mut got, seen, m);
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                bits(&got),
                bits(&expected),
                "len {len}, seen {seen}: the row"
            );
            assert_eq!(
                sum.to_bits(),
                expected_sum.to_bits(),
                "len {len}, seen {seen}"
            );
        }
    }
}

/// With the logit scale 0, `dK = 0·dSᵀ·Q` is a sum of zeros that starts from `+0`, so
/// every element of it is `+0`, also where `dSᵀ·Q` is negative (`0·p = −0` would be
/// its bits if the first block wrote `α·p` alone; see `key_beta`). Over NaN-filled
/// buffers, causal or not, one to three query blocks.
#[test]
fn a_zero_scale_gives_key_gradients_of_positive_zeros() {
    for (l, spec) in layouts_and_specs() {
        let spec = spec.with_scale(0.0);
        let [q, k, v, dout] = stale_buffer_operands(l.len());
        let bits = bits_with(l, &spec, [&q, &k, &v, &dout], Cut::KERNELS, f32::NAN);
        let dk = &bits[4];
        assert!(dk.iter().all(|&b| b == 0), "{l:?} causal {}", spec.causal);
    }
}
