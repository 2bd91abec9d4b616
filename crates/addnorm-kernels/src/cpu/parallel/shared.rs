//! [`SharedBuffer`]: one buffer shared by the tasks of one parallel call, which read it or
//! each write their own disjoint part of it (a block's rows, a head's columns, a copy's
//! rows), where those parts are not the equal chunks that [`super::ChunksMut`] hands out
//! safely: strided views, parts of irregular size, memory not yet initialized.
//!
//! # Formula
//! Element `i` (`0 ≤ i < len`) lies at `ptr + i`; [`SharedBuffer::rows`]`(offset, s)` is
//! the row-major view whose element `(r, c)` is element `offset + r·s + c`.
//!
//! # Shapes
//! A flat buffer of `len` elements, viewed by the tasks as rows of any stride.

use crate::cpu::strided::Strided;

/// A buffer the tasks of one call share (see the [module docs](self)). It borrows nothing:
/// whoever makes one promises that the buffer outlives the call and that the tasks' writes
/// are disjoint, from each other and from every read.
#[derive(Debug)]
pub(crate) struct SharedBuffer<E> {
    ptr: *mut E,
    len: usize,
}

// SAFETY: only an address and a length; the tasks that hold it write disjoint elements of
// a buffer that outlives the call (each maker's promise, stated where it is made).
unsafe impl<E: Send> Send for SharedBuffer<E> {}
// SAFETY: as above.
unsafe impl<E: Send> Sync for SharedBuffer<E> {}

impl<E> SharedBuffer<E> {
    /// Shares a buffer the caller borrows mutably for the call.
    pub(crate) fn new(buffer: &mut [E]) -> Self {
        Self {
            ptr: buffer.as_mut_ptr(),
            len: buffer.len(),
        }
    }

    /// Shares a buffer the tasks only read (it is never written through).
    pub(crate) fn reading(buffer: &[E]) -> Self {
        Self {
            ptr: buffer.as_ptr().cast_mut(),
            len: buffer.len(),
        }
    }

    /// Shares `len` elements at `ptr`, which need not be initialized yet (an output the
    /// tasks fill).
    ///
    /// # Safety
    /// `ptr` must address `len` elements that stay allocated while the value is used.
    pub(crate) unsafe fn from_raw(ptr: *mut E, len: usize) -> Self {
        Self { ptr, len }
    }

    /// The address of element `offset`. Making it reads and writes nothing.
    ///
    /// # Panics
    /// If `offset` lies past the buffer's end (the end itself is allowed).
    pub(crate) fn at(&self, offset: usize) -> *mut E {
        assert!(offset <= self.len, "offset past the shared buffer");
        // SAFETY: at most one past the end of the buffer (checked).
        unsafe { self.ptr.add(offset) }
    }

    /// The row-major view from element `offset` on, rows `row_stride` apart. Making it
    /// reads and writes nothing.
    ///
    /// # Panics
    /// As [`SharedBuffer::at`].
    pub(crate) fn rows(&self, offset: usize, row_stride: usize) -> Strided<E> {
        Strided::rows(self.at(offset), row_stride)
    }

    /// Elements `start..start + len` as a mutable slice.
    ///
    /// # Safety
    /// The elements must be initialized, and no one else may read or write them while the
    /// slice lives.
    ///
    /// # Panics
    /// If they do not lie in the buffer.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn slice_mut(&self, start: usize, len: usize) -> &mut [E] {
        assert!(
            start.checked_add(len).is_some_and(|end| end <= self.len),
            "slice out of the shared buffer"
        );
        // SAFETY: in bounds (checked); initialization and exclusivity are the caller's.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.add(start), len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_and_slices_address_the_shared_elements() {
        let mut values: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let shared = SharedBuffer::new(&mut values);
        let view = shared.rows(4, 3).from(1, 2);
        // SAFETY: element 4 + 3 + 2 = 9 of the live buffer.
        assert_eq!(unsafe { *view.ptr() }, 9.0);
        // SAFETY: elements 2..5, initialized, no other access while the slice lives.
        let part = unsafe { shared.slice_mut(2, 3) };
        part.fill(-1.0);
        assert_eq!(values[1..6], [1.0, -1.0, -1.0, -1.0, 5.0]);
    }

    #[test]
    #[should_panic(expected = "offset past the shared buffer")]
    fn offsets_past_the_end_panic() {
        let values = [0.0f32; 4];
        let _ = SharedBuffer::reading(&values).at(5);
    }

    #[test]
    #[should_panic(expected = "slice out of the shared buffer")]
    fn slices_past_the_end_panic() {
        let mut values = [0.0f32; 4];
        let shared = SharedBuffer::new(&mut values);
        // SAFETY: never reached: the bounds check panics first.
        let _ = unsafe { shared.slice_mut(3, 2) };
    }
}
