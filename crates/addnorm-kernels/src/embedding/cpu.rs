//! The embedding lookup's CPU kernels on row-major slices: the forward copies each named
//! row of the table, the backward adds each row of `dy` to the table row its id names, in
//! row order, from zero (the order of burn-ndarray's `select_add`, so the same bits).
//!
//! # Formula
//! ```text
//! y[r, :]  = W[ids[r], :]
//! dW[v, :] = 0 + dy[r₁, :] + dy[r₂, :] + …      r₁ < r₂ < … the rows with ids[r] = v
//! ```
//!
//! # Shapes
//! `table`, `dW`: `[n, d]`; `ids`: `[rows]`, each in `0..n`; `y`, `dy`: `[rows, d]`.

use crate::cpu::real::Real;

/// Writes `y[r, :] = table[ids[r], :]` into `out` (`ids.len() × d` elements).
///
/// # Panics
/// If an id is outside the table or `out` has the wrong length.
pub fn forward<E: Copy>(table: &[E], d: usize, ids: &[i64], out: &mut [E]) {
    assert_eq!(out.len(), ids.len() * d, "the output holds one row per id");
    for (to, &id) in out.chunks_exact_mut(d.max(1)).zip(ids) {
        to.copy_from_slice(&table[id as usize * d..][..d]);
    }
}

/// `dW` (`[n, d]`): each row of `dy` added to the row its id names, in row order.
///
/// # Panics
/// If an id is outside `0..n` or `dy` is not `ids.len() × d` elements.
pub fn backward<E: Real>(n: usize, d: usize, ids: &[i64], dy: &[E]) -> Vec<E> {
    assert_eq!(dy.len(), ids.len() * d, "dy holds one row per id");
    let mut dw = vec![E::ZERO; n * d];
    for (row, &id) in dy.chunks_exact(d.max(1)).zip(ids) {
        let to = &mut dw[id as usize * d..][..d];
        for (t, &g) in to.iter_mut().zip(row) {
            *t += g;
        }
    }
    dw
}

/// Whether every id names a row of a table of `n` rows.
pub fn in_range(ids: &[i64], n: usize) -> bool {
    ids.iter().all(|&id| (0..n as i64).contains(&id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_copies_the_named_rows() {
        let table = [0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0];
        let mut out = [f32::NAN; 6];
        forward(&table, 2, &[2, 0, 2], &mut out);
        assert_eq!(out, [4.0, 5.0, 0.0, 1.0, 4.0, 5.0]);
    }

    #[test]
    fn backward_sums_repeated_ids_in_row_order_from_zero() {
        // In f32, ((0 + 1e8) + 1) - 1e8 is 0 (the 1 is lost), while (1e8 - 1e8) + 1 is 1:
        // the rows must be added one by one, in order.
        let dy = [1e8f32, 1.0, -1e8, 5.0];
        let dw = backward(3, 1, &[1, 1, 1, 2], &dy);
        assert_eq!(dw, vec![0.0, 0.0, 5.0]);
        // -0 rows keep the +0 start, as select_add's zeros do.
        let dw = backward(1, 1, &[0], &[-0.0f32]);
        assert!(dw[0].is_sign_positive());
    }

    #[test]
    fn ids_out_of_range_are_found() {
        assert!(in_range(&[0, 2], 3));
        assert!(!in_range(&[0, 3], 3));
        assert!(!in_range(&[-1], 3));
    }
}
