//! [`Strided`]: a matrix view by its first element's address and two strides, the operand
//! type of the GEMMs ([`super::gemm`]) and of the kernels that call them on views into
//! their inputs (a head's columns, a block's rows, a transpose).
//!
//! # Formula
//! Element `(r, c)` lies at `ptr + r·row_stride + c·col_stride` (strides in elements, of
//! either sign); [`Strided::t`] swaps the strides, [`Strided::from`] moves the origin.
//!
//! # Shapes
//! A view has no extent of its own: each call that reads or writes through it is told its
//! `[rows, cols]` and promises they lie in live memory.
//!
//! # Threads
//! A view is only an address: none of its safe methods reads or writes through it, and
//! every function that does is `unsafe`, with the memory's liveness and who else may
//! touch it in its contract. So views cross threads freely ([`Send`], [`Sync`]): the
//! tasks of one parallel call take views of the operands they read and of the disjoint
//! parts of a buffer they write.

/// A strided matrix: element `(r, c)` at `ptr + r·row_stride + c·col_stride`.
#[derive(Debug)]
pub struct Strided<E> {
    pub(crate) ptr: *mut E,
    pub(crate) row_stride: isize,
    pub(crate) col_stride: isize,
}

// Written out: a derive would ask `E: Clone`.
impl<E> Clone for Strided<E> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<E> Copy for Strided<E> {}

impl<E> Strided<E> {
    /// The row-major matrix starting at `ptr` with rows `row_stride` apart.
    pub fn rows(ptr: *mut E, row_stride: usize) -> Self {
        Self {
            ptr,
            row_stride: row_stride as isize,
            col_stride: 1,
        }
    }

    /// The first element's address.
    pub fn ptr(self) -> *mut E {
        self.ptr
    }

    /// `(row_stride, col_stride)`, in elements.
    pub fn strides(self) -> (isize, isize) {
        (self.row_stride, self.col_stride)
    }

    /// The sub-matrix whose element `(0, 0)` is this one's `(row, col)`. Computing it
    /// reads nothing; the caller keeps using only elements that lie in the matrix.
    pub fn from(self, row: usize, col: usize) -> Self {
        let offset = row as isize * self.row_stride + col as isize * self.col_stride;
        Self {
            ptr: self.ptr.wrapping_offset(offset),
            ..self
        }
    }

    /// The transpose (the same elements).
    pub fn t(self) -> Self {
        Self {
            ptr: self.ptr,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
        }
    }
}

// SAFETY: see the module docs: no safe method dereferences the pointer, and every unsafe
// function that does states which threads may touch the elements.
unsafe impl<E: Send> Send for Strided<E> {}
// SAFETY: as above.
unsafe impl<E: Send> Sync for Strided<E> {}
