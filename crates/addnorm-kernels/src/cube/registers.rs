//! `#[cube]` helpers for a unit's local arrays (registers where the compiler can keep
//! them), shared by the ops' kernels.
//!
//! # Formula
//! `zeros(len)[s] = 0` for `s < len`.
//!
//! # Shapes
//! A local array of a compile-time length `len`.

// `#[cube]` generates an expand module per function, which carries no doc comment of its
// own; the function's doc is on the function.
#![allow(missing_docs)]

use cubecl::prelude::*;

/// A fresh local array of `len` zeros.
#[cube]
pub fn zeros(#[comptime] len: usize) -> Array<f32> {
    let mut values = Array::<f32>::new(len);
    #[unroll]
    for s in 0..len {
        values[s] = 0.0;
    }
    values
}
