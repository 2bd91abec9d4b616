//! [`Scratch`]: a kernel's work buffer, taken from a small process-wide pool and given back
//! when dropped, so the next call reuses memory whose pages are already mapped.
//!
//! # Why
//! Some kernels need buffers that live only during the call: the linear layer's dW is a
//! sum of per-block partial products (`linear::cpu`, a fixed number of row blocks so the
//! sum does not depend on the thread count), one `[d_in, d_out]` buffer per block. Fresh
//! from `malloc` each call, such buffers are fresh pages too, whenever glibc has returned
//! the last call's to the OS, which it does by default on the main thread (it trims the
//! top of its heap): one page fault per 4 KiB at first touch. On the d128/T128 training
//! step that was 64 buffers of 256 KiB per step, 16 MiB of faults. Pooled, they fault once
//! per process.
//!
//! A work buffer comes back when the call ends. An output handed to Burn comes back only
//! when Burn drops it, which the output pool (`super::output_pool`) finds out by holding a
//! second handle to it.
//!
//! # Formula
//! `Scratch::take(len)` returns a buffer of `len` elements whose contents are unspecified
//! (left over from an earlier call, or zero): a caller overwrites what it reads. The pool
//! keeps at most [`POOL_BUFFERS`] buffers and [`POOL_BYTES`] bytes; a returned buffer that
//! would exceed either is freed.
//!
//! # Shapes
//! A flat buffer of `len` elements.

use std::any::Any;
use std::ops::{Deref, DerefMut};
use std::sync::Mutex;

use super::aligned::Aligned;
use super::real::Real;

/// The most buffers the pool keeps.
pub const POOL_BUFFERS: usize = 64;

/// The most bytes the pool keeps, over all its buffers.
pub const POOL_BYTES: usize = 64 << 20;

/// A pooled buffer of any element type, boxed as `Aligned<E>`, with its capacity in bytes.
struct Pooled {
    bytes: usize,
    buffer: Box<dyn Any + Send>,
}

/// The pool's buffers.
static POOL: Mutex<Vec<Pooled>> = Mutex::new(Vec::new());

/// A work buffer from the pool, given back when dropped (see the [module docs](self)). Its
/// first element is 64-byte aligned ([`Aligned`]).
pub struct Scratch<E: Real> {
    buffer: Aligned<E>,
}

impl<E: Real> Scratch<E> {
    /// A buffer of `len` elements: the pooled one of this type with the smallest capacity
    /// that holds `len`, or a new zeroed one.
    pub fn take(len: usize) -> Self {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let best = pool
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let buffer = p.buffer.downcast_ref::<Aligned<E>>()?;
                buffer.holds(len).then_some((i, buffer.capacity()))
            })
            .min_by_key(|&(_, capacity)| capacity)
            .map(|(i, _)| i);
        let mut buffer = match best {
            Some(i) => *pool
                .swap_remove(i)
                .buffer
                .downcast::<Aligned<E>>()
                .expect("the index was found by type"),
            None => Aligned::default(),
        };
        drop(pool);
        buffer.resize(len);
        Self { buffer }
    }
}

impl<E: Real> Deref for Scratch<E> {
    type Target = [E];
    fn deref(&self) -> &[E] {
        &self.buffer
    }
}

impl<E: Real> DerefMut for Scratch<E> {
    fn deref_mut(&mut self) -> &mut [E] {
        &mut self.buffer
    }
}

impl<E: Real> Drop for Scratch<E> {
    fn drop(&mut self) {
        let buffer = std::mem::take(&mut self.buffer);
        let bytes = buffer.capacity() * size_of::<E>();
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let held: usize = pool.iter().map(|p| p.bytes).sum();
        if pool.len() < POOL_BUFFERS && held + bytes <= POOL_BYTES {
            pool.push(Pooled {
                bytes,
                buffer: Box::new(buffer),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_returned_buffer_is_reused_and_resized() {
        let address = {
            let mut first = Scratch::<f32>::take(1000);
            first[999] = 7.0;
            first.as_ptr() as usize
        };
        // Other tests share the pool; a buffer at the same address proves reuse only when
        // no other test took it in between, so retry a few times.
        let reused = (0..20).any(|_| {
            let again = Scratch::<f32>::take(900);
            assert_eq!(again.len(), 900);
            again.as_ptr() as usize == address
        });
        assert!(reused, "the pool never returned the buffer");
        let bigger = Scratch::<f64>::take(5000);
        assert_eq!(bigger.len(), 5000);
    }
}
