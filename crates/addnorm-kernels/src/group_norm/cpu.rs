//! The fused CPU GroupNorm kernels on slices: the forward in one visit of each (sample,
//! group) block with the per-channel affine map folded in, the backward in one visit that
//! also yields each block's per-channel dγ and dβ partial sums.
//!
//! # Formula
//! For the row `r = (n, g)` of `L = c_g·S` values (see [`super::spec`]), with pivot `p = x₀`
//! (its first value) and `c = (x − p) − shift`:
//!
//! ```text
//! shift = Σ (x − p) / L      σ² = Σ c² / L      r = 1 / √(σ² + ε)      x̂ = c·r
//! forward:   y = c·r·γ_ch + β_ch
//! backward:  a_ch = Σ_s dy·x̂      b_ch = Σ_s dy            per channel ch of the group
//!            A = Σ_ch γ_ch·b_ch / L      B = Σ_ch γ_ch·a_ch / L
//!            dx = r·(dy·γ_ch − A − x̂·B)
//!            dγ_ch = Σ_n a_ch      dβ_ch = Σ_n b_ch          (summed over n in order)
//! ```
//!
//! As in the LayerNorm kernel, the statistics are two passes over a row while it sits in
//! L1/L2, around the pivot, so a block with a large offset keeps its digits in f32. The
//! per-row partials of dγ and dβ are written to an `[N, C]` buffer and summed over `N` in
//! sample order, so the result does not depend on how rows are split over threads.
//!
//! # Shapes
//! - `x`, `y`, `dy`, `dx`: `[N, C, S]`, row-major, contiguous (`[N, C, …]` read flat)
//! - `gamma`, `beta`, `dgamma`, `dbeta`: `[C]`
//! - `shift`, `rstd` (saved for the backward): `[N·G]`

use crate::cpu::aligned::Aligned;
use crate::cpu::dispatch::vectorized;
use crate::cpu::memory::zeroed_output;
use crate::cpu::parallel::{self, ChunksMut};
use crate::cpu::real::{Real, sum_map, sum_map2};
use crate::norm::RowNormSpec;
use crate::norm::cpu::plan::{RowPlan, rows_per_task};

use super::spec::GroupDims;

/// The per-row statistics the forward saves: `(shift, rstd)`, each `[N·G]`.
pub type Statistics<E> = (Vec<E>, Vec<E>);

/// The backward's results: `(dx, dγ, dβ)`.
pub type Gradients<E> = (Aligned<E>, Vec<E>, Vec<E>);

/// Runs `task(first_row, rows…)` over the `[N·G, L]` rows of `dims` in tasks of a size
/// fixed by the sizes alone ([`rows_per_task`]), in parallel when there are several. Each
/// task gets its rows' chunk of every buffer in `outputs` (`widths[i]` values per row).
fn for_row_tasks<E: Real, const K: usize>(
    dims: GroupDims,
    outputs: [&mut [E]; K],
    widths: [usize; K],
    task: impl Fn(usize, [&mut [E]; K]) + Sync + Send,
) {
    let rows = dims.rows();
    let per_task = rows_per_task(rows, dims.row_len());
    if per_task >= rows {
        return task(0, outputs);
    }
    let mut widths = widths.into_iter();
    let chunks = outputs.map(|buffer| {
        let width = widths.next().expect("one width per buffer");
        ChunksMut::new(buffer, per_task * width)
    });
    parallel::for_each(rows.div_ceil(per_task), |t| {
        task(t * per_task, chunks.each_ref().map(|c| c.take(t)));
    });
}

/// `y` and the saved `(shift, rstd)`.
///
/// # Panics
/// If the lengths disagree with `dims` (`gamma`, `beta`: `C`).
pub fn forward<E: Real>(
    dims: GroupDims,
    x: &[E],
    gamma: &[E],
    beta: &[E],
    epsilon: f64,
) -> (Vec<E>, Statistics<E>) {
    let (rows, len) = (dims.rows(), dims.row_len());
    assert!(
        x.len() == rows * len && gamma.len() == dims.channels && beta.len() == dims.channels,
        "group norm forward: x has {} values, γ {}, β {}, for {dims:?}",
        x.len(),
        gamma.len(),
        beta.len()
    );
    let (mut y, mut shift, mut rstd) = (
        vec![E::ZERO; x.len()],
        vec![E::ZERO; rows],
        vec![E::ZERO; rows],
    );
    // A block's statistics are LayerNorm's over its L values.
    let plan = RowPlan::<E>::new(&RowNormSpec::layer_norm(epsilon), len);
    let (cg, spatial, groups) = (dims.group_channels(), dims.spatial, dims.groups);
    for_row_tasks(
        dims,
        [&mut y, &mut shift, &mut rstd],
        [len, 1, 1],
        |first, [y, shift, rstd]| {
            vectorized(
                #[inline(always)]
                || {
                    for (i, y) in y.chunks_exact_mut(len).enumerate() {
                        let row = first + i;
                        let x = &x[row * len..(row + 1) * len];
                        let (pivot, s, variance) = plan.statistics(x);
                        let r = plan.rstd(variance);
                        let c0 = (row % groups) * cg;
                        let segments = y.chunks_exact_mut(spatial).zip(x.chunks_exact(spatial));
                        for (ch, (y, x)) in segments.enumerate() {
                            let (g, b) = (gamma[c0 + ch], beta[c0 + ch]);
                            for (y, &v) in y.iter_mut().zip(x) {
                                *y = ((v - pivot) - s) * r * g + b;
                            }
                        }
                        (shift[i], rstd[i]) = (s, r);
                    }
                },
            )
        },
    );
    (y, (shift, rstd))
}

/// `(dx, dγ, dβ)` from `x`, γ, the saved statistics and `dy`, into a fresh dx (see
/// [`backward_in_place`]).
///
/// # Panics
/// If the lengths disagree with `dims`.
pub fn backward<E: Real>(
    dims: GroupDims,
    x: &[E],
    gamma: &[E],
    statistics: (&[E], &[E]),
    dy: &[E],
) -> Gradients<E> {
    let mut dx = zeroed_output(dy.len());
    dx.copy_from_slice(dy);
    let (dgamma, dbeta) = backward_in_place(dims, x, gamma, statistics, &mut dx);
    (dx, dgamma, dbeta)
}

/// `(dγ, dβ)`, with dx written over dy: `grad` holds dy on entry and dx on return (each
/// block's sums are taken before any of its values is overwritten, and each dx value reads
/// only its own dy).
///
/// # Panics
/// If the lengths disagree with `dims`.
pub fn backward_in_place<E: Real>(
    dims: GroupDims,
    x: &[E],
    gamma: &[E],
    (shift, rstd): (&[E], &[E]),
    grad: &mut [E],
) -> (Vec<E>, Vec<E>) {
    let (rows, len, channels) = (dims.rows(), dims.row_len(), dims.channels);
    assert!(
        x.len() == rows * len && grad.len() == x.len() && gamma.len() == channels,
        "group norm backward: x has {} values, dy {}, γ {}, for {dims:?}",
        x.len(),
        grad.len(),
        gamma.len()
    );
    assert!(
        shift.len() == rows && rstd.len() == rows,
        "group norm backward: statistics"
    );
    let (cg, spatial, groups) = (dims.group_channels(), dims.spatial, dims.groups);
    let inv_len = E::from_f64(1.0 / len as f64);
    // Row r's partials are entries r·c_g.. of an [N·G, c_g] = [N, C] buffer.
    let (mut part_gamma, mut part_beta) = (vec![E::ZERO; rows * cg], vec![E::ZERO; rows * cg]);
    for_row_tasks(
        dims,
        [grad, &mut part_gamma, &mut part_beta],
        [len, cg, cg],
        |first, [grad, part_gamma, part_beta]| {
            vectorized(
                #[inline(always)]
                || {
                    for (i, grad) in grad.chunks_exact_mut(len).enumerate() {
                        let row = first + i;
                        let x = &x[row * len..(row + 1) * len];
                        let (pivot, s, r) = (x[0], shift[row], rstd[row]);
                        let gammas = &gamma[(row % groups) * cg..][..cg];
                        let a = &mut part_gamma[i * cg..][..cg];
                        let b = &mut part_beta[i * cg..][..cg];
                        let segments = x.chunks_exact(spatial).zip(grad.chunks_exact(spatial));
                        for (ch, (x, dy)) in segments.enumerate() {
                            a[ch] = sum_map2(x, dy, |v, d| d * (((v - pivot) - s) * r));
                            b[ch] = sum_map(dy, |d| d);
                        }
                        let (mut total_a, mut total_b) = (E::ZERO, E::ZERO);
                        for ch in 0..cg {
                            total_a += gammas[ch] * a[ch];
                            total_b += gammas[ch] * b[ch];
                        }
                        let (mean_g, mean_gx) = (total_b * inv_len, total_a * inv_len);
                        let segments = grad.chunks_exact_mut(spatial).zip(x.chunks_exact(spatial));
                        for (ch, (grad, x)) in segments.enumerate() {
                            let g = gammas[ch];
                            for (d, &v) in grad.iter_mut().zip(x) {
                                let normalized = ((v - pivot) - s) * r;
                                *d = r * ((*d * g - mean_g) - normalized * mean_gx);
                            }
                        }
                    }
                },
            )
        },
    );
    (
        sum_over_samples(&part_gamma, dims),
        sum_over_samples(&part_beta, dims),
    )
}

/// `Σ_n part[n, c]` of an `[N, C]` buffer, in sample order.
fn sum_over_samples<E: Real>(part: &[E], dims: GroupDims) -> Vec<E> {
    let mut total = vec![E::ZERO; dims.channels];
    for row in part.chunks_exact(dims.channels) {
        for (t, &v) in total.iter_mut().zip(row) {
            *t += v;
        }
    }
    total
}
