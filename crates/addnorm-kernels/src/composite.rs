//! The composite path every op shares: the [`ForceComposite`] guard that sends every call
//! of a thread down it. Each op's own composite reference lives in its folder
//! (`crate::norm::composite`, `crate::attention::composite`, `crate::gelu::composite`;
//! the linear op's is Burn's `linear`).
//!
//! An op takes a backend's fused kernel when it has one ([`crate::fused`]). A
//! [`ForceComposite`] guard sends every call made on its thread down the composite path
//! instead, for as long as it lives: to compare the two, or to rule the kernels out while
//! debugging.
//!
//! ```
//! use addnorm_kernels::composite::{ForceComposite, is_forced};
//!
//! assert!(!is_forced());
//! {
//!     let _composite = ForceComposite::new();
//!     assert!(is_forced());
//! }
//! assert!(!is_forced());
//! ```
//!
//! # Formula
//! `op(x) = composite(x)` while a guard lives on the calling thread.
//!
//! # Shapes
//! None: a thread-local switch.

use std::cell::Cell;
use std::marker::PhantomData;

thread_local! {
    /// How many [`ForceComposite`] guards are alive on this thread.
    static FORCED: Cell<usize> = const { Cell::new(0) };
}

/// While a `ForceComposite` lives, the ops' calls (`norm_rows`, `multi_head_attention`,
/// `linear_rows`, `gelu_values`, ...) made on the thread that created it take the composite
/// path even where a fused kernel exists. Guards nest.
///
/// It is thread-local (and so neither `Send` nor `Sync`) so that concurrent tests or
/// workers are not affected. Only the forward decides: a graph recorded on the composite
/// path is differentiated op by op, one recorded on the fused path by the fused backward,
/// whenever `backward()` runs.
#[derive(Debug)]
pub struct ForceComposite {
    /// Keeps the guard on the thread whose counter it raised.
    _not_send: PhantomData<*const ()>,
}

impl ForceComposite {
    /// Starts forcing the composite path on this thread, until the guard is dropped.
    pub fn new() -> Self {
        FORCED.with(|forced| forced.set(forced.get() + 1));
        Self {
            _not_send: PhantomData,
        }
    }
}

impl Default for ForceComposite {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for ForceComposite {
    fn drop(&mut self) {
        FORCED.with(|forced| forced.set(forced.get() - 1));
    }
}

/// Whether a [`ForceComposite`] guard is alive on this thread.
pub fn is_forced() -> bool {
    FORCED.with(|forced| forced.get() > 0)
}
