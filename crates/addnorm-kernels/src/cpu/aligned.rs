//! [`Aligned`]: a buffer of `len` elements whose first element sits on a cache-line
//! boundary, inside a `Vec` that the global allocator hands out as usual.
//!
//! # Why
//! A `Vec<f32>` is only as aligned as its element type asks: 4 bytes. glibc's `malloc`
//! gives 16, and a large buffer (above its mmap threshold) starts 16 bytes past a page, so
//! `ptr mod 64 = 16`. A row-major `[rows, n]` matrix in such a buffer, with `n` a multiple
//! of 16, has every row start 16 bytes into a cache line, and every 64-byte AVX-512 load
//! or store of it spans two lines: the GEMM's rows of B and C, the norms' and GELU's
//! vectors. On the 2-core Ice Lake VM the linear layers alone ran 1.15–1.3× faster on
//! 64-byte-aligned operands, and the d128/T128 training step 1.1–1.2× faster with every
//! large allocation aligned (PERFORMANCE.md §39). PyTorch's CPU allocator aligns to 64.
//!
//! A global allocator cannot be the library's fix (it is the user's), and a `Vec<f32>`
//! must be freed with the layout it was allocated with, so the buffer cannot simply be
//! allocated with a 64-byte alignment. Instead an [`Aligned`] allocates `len + PAD` elements
//! and starts `start < PAD` elements in, where the address is a multiple of 64. An
//! `NdArray` tensor holds it as an array whose data pointer is offset into its `Vec`, which
//! `ndarray` supports (a sliced owned array) and burn-ndarray reads back with its offset.
//!
//! # Formula
//! `start = (⌈p / 64⌉·64 − p) / size_of::<E>()` for the `Vec`'s pointer `p`, and the
//! elements are `vec[start..start + len]`. The `start` elements before them are zero.
//!
//! # Shapes
//! A flat buffer of `len` elements; its `Vec` holds `start + len`, with capacity
//! `len + PAD`.

use std::ops::{Deref, DerefMut};

use super::real::Real;

/// The alignment of an [`Aligned`] buffer's first element, in bytes: a cache line, and one
/// AVX-512 vector.
pub const ALIGN: usize = 64;

/// A buffer of `len` elements starting on an [`ALIGN`]-byte boundary inside its `Vec` (see
/// the [module docs](self)). It dereferences to those `len` elements.
#[derive(Debug, Clone)]
pub struct Aligned<E> {
    buffer: Vec<E>,
    start: usize,
    len: usize,
}

/// The most elements an [`Aligned`] buffer may start into its `Vec`: one fewer than an
/// [`ALIGN`]-byte line holds (15 for f32, 7 for f64).
fn pad<E>() -> usize {
    (ALIGN / size_of::<E>()).max(1) - 1
}

/// The first index of a buffer at `ptr` whose address is a multiple of [`ALIGN`].
fn aligned_start<E>(ptr: *const E) -> usize {
    let address = ptr as usize;
    (address.next_multiple_of(ALIGN) - address) / size_of::<E>()
}

impl<E: Real> Aligned<E> {
    /// `len` zeros. The `Vec` comes from `vec!`, so a large one is fresh zero pages (no
    /// `memset`).
    pub fn zeroed(len: usize) -> Self {
        let mut buffer = vec![E::ZERO; len + pad::<E>()];
        let start = aligned_start(buffer.as_ptr());
        buffer.truncate(start + len);
        Self { buffer, start, len }
    }

    /// A buffer of `len` elements that `fill` writes through the pointer it is given, with
    /// no zeroing first.
    ///
    /// # Safety
    /// `fill` must write every one of the `len` elements before it returns, and must not
    /// read one it has not written.
    pub unsafe fn written(len: usize, fill: impl FnOnce(*mut E)) -> Self {
        let mut buffer: Vec<E> = Vec::with_capacity(len + pad::<E>());
        let ptr = buffer.as_mut_ptr();
        let start = aligned_start(ptr);
        // SAFETY: `start + len ≤ len + pad` is within the capacity; the `start` elements
        // before the aligned ones are written here, the `len` after them by `fill`, per
        // the caller's contract, before the length covers them.
        unsafe {
            (0..start).for_each(|i| ptr.add(i).write(E::ZERO));
            fill(ptr.add(start));
            buffer.set_len(start + len);
        }
        Self { buffer, start, len }
    }

    /// `buffer[start..start + len]` as an [`Aligned`] (a pooled array's `Vec` and
    /// offset), aligned or not.
    ///
    /// # Panics
    /// If `buffer` holds fewer than `start + len` elements.
    pub fn from_parts(buffer: Vec<E>, start: usize, len: usize) -> Self {
        assert!(
            start + len <= buffer.len(),
            "Aligned: a range past the buffer"
        );
        Self { buffer, start, len }
    }

    /// `(buffer, start, len)`: the `Vec` and where the elements lie in it.
    pub fn into_parts(self) -> (Vec<E>, usize, usize) {
        (self.buffer, self.start, self.len)
    }

    /// The `len` elements as a `Vec` of their own (a copy of them when they do not start
    /// the buffer).
    pub fn into_vec(self) -> Vec<E> {
        let (mut buffer, start, len) = self.into_parts();
        if start > 0 {
            buffer.drain(..start);
        }
        buffer.truncate(len);
        buffer
    }

    /// Resizes to `len` elements, reusing the allocation when its capacity holds them
    /// aligned; otherwise allocates a new zeroed buffer. Within the allocation, elements
    /// the buffer has held keep their last values (also after a smaller size in
    /// between), and elements it never held are zero.
    pub fn resize(&mut self, len: usize) {
        if !self.holds(len) {
            *self = Self::zeroed(len);
            return;
        }
        let start = aligned_start(self.buffer.as_ptr());
        // The `Vec` never shrinks: elements it held keep their values, so a buffer used
        // small and then large again is not zeroed again (PERFORMANCE.md §47).
        if self.buffer.len() < start + len {
            self.buffer.resize(start + len, E::ZERO);
        }
        self.start = start;
        self.len = len;
    }

    /// The `Vec`'s capacity in elements.
    pub fn capacity(&self) -> usize {
        self.buffer.capacity()
    }

    /// Whether [`resize`](Self::resize) to `len` keeps this allocation.
    pub fn holds(&self, len: usize) -> bool {
        self.buffer.capacity() >= len + pad::<E>()
    }
}

impl<E> Default for Aligned<E> {
    fn default() -> Self {
        Self {
            buffer: Vec::new(),
            start: 0,
            len: 0,
        }
    }
}

/// A `Vec` as it is (starting its buffer, aligned or not): for small outputs that the
/// kernels build with `vec!`.
impl<E> From<Vec<E>> for Aligned<E> {
    fn from(buffer: Vec<E>) -> Self {
        let len = buffer.len();
        Self {
            buffer,
            start: 0,
            len,
        }
    }
}

impl<E> Deref for Aligned<E> {
    type Target = [E];
    fn deref(&self) -> &[E] {
        &self.buffer[self.start..self.start + self.len]
    }
}

impl<E> DerefMut for Aligned<E> {
    fn deref_mut(&mut self) -> &mut [E] {
        &mut self.buffer[self.start..self.start + self.len]
    }
}

impl<'a, E> IntoIterator for &'a Aligned<E> {
    type Item = &'a E;
    type IntoIter = std::slice::Iter<'a, E>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Equal when the elements are (wherever they start in their `Vec`).
impl<E: PartialEq> PartialEq for Aligned<E> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<E: PartialEq> PartialEq<Vec<E>> for Aligned<E> {
    fn eq(&self, other: &Vec<E>) -> bool {
        **self == **other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_aligned<E>(values: &[E]) -> bool {
        (values.as_ptr() as usize).is_multiple_of(ALIGN)
    }

    #[test]
    fn buffers_start_on_a_line_at_every_size() {
        for len in [0, 1, 15, 16, 17, 1000, 1 << 20] {
            let zeroed = Aligned::<f32>::zeroed(len);
            assert_eq!(zeroed.len(), len);
            assert!(is_aligned(&zeroed) && zeroed.iter().all(|&v| v == 0.0));
            // SAFETY: the closure writes all `len` elements.
            let written = unsafe {
                Aligned::<f64>::written(len, |p| (0..len).for_each(|i| p.add(i).write(i as f64)))
            };
            assert!(is_aligned(&written));
            assert!(written.iter().enumerate().all(|(i, &v)| v == i as f64));
            assert_eq!(
                written.into_vec(),
                (0..len).map(|i| i as f64).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn a_resized_buffer_stays_aligned_and_reuses_its_allocation() {
        let mut buffer = Aligned::<f32>::zeroed(4096);
        buffer[4095] = 3.0;
        let capacity = buffer.capacity();
        buffer.resize(100);
        assert!(is_aligned(&buffer) && buffer.len() == 100);
        assert_eq!(buffer.capacity(), capacity, "a smaller size reallocated");
        buffer.resize(4096);
        assert_eq!(
            buffer[4095], 3.0,
            "growing again within the allocation zeroed it"
        );
        assert_eq!(buffer.capacity(), capacity);
        buffer.resize(8192);
        assert!(is_aligned(&buffer) && buffer.len() == 8192);
        let vec = Aligned::from(vec![1.0f32, 2.0]);
        assert_eq!(&*vec, &[1.0, 2.0]);
    }
}
