//! The output pool: the fused CPU kernels' large outputs, handed to Burn as `NdArray`
//! tensors and reused for a later output once Burn has dropped them, so a training step
//! writes into memory the last step already mapped, whatever the allocator's settings.
//!
//! # Why
//! A training step allocates the same activation-sized outputs at every step, and frees
//! them as the backward pass consumes them. glibc's `malloc`, left at its defaults (what a
//! library user has), gives such memory back to the OS: it trims the top of its heap once
//! more than twice its largest freed mapping is free there (8 MiB for 4 MiB outputs), and
//! it unmaps buffers above its mmap threshold. The next step's outputs then come back as
//! fresh pages, one page fault and one page cleared per 4 KiB at the first write. On the
//! d128/T128 training step that was 26 000 faults and about a third of the step
//! (`PERFORMANCE.md`, §25, §26). Settings that stop it (`super::allocator`) are
//! process-wide, so the library cannot rest on them.
//!
//! An output handed to Burn is freed by Burn, through the global allocator, and nothing
//! tells the library when. So the pool keeps a second handle to each output it hands out
//! (a clone of the `ArcArray`, which shares its buffer). When the pool's handle is the only
//! one left (`ArcArray::is_unique`), Burn has dropped the tensor, and the buffer is free to
//! be taken for the next output of the same length, with its pages already mapped.
//!
//! A kernel that writes over an input it holds alone (a backward writing dx over dy, AdamW
//! over θ) asks `release` first: it drops the pool's handle to that buffer, so the
//! kernel's handle becomes the only one, as it would be without the pool.
//!
//! # Formula
//! - An output of `len` elements of at least [`MIN_BYTES`] is taken from a free pooled
//!   buffer of exactly `len` elements of its type when there is one (the first found), else
//!   allocated.
//! - Every such output is registered when it becomes a tensor, while the pool holds fewer
//!   than [`MAX_BUFFERS`]. Only buffers the pool lent are registered: taken from it,
//!   allocated for an output, or released for a write in place. A buffer Burn allocated
//!   (a gradient a backward kernel wrote dx over) goes back to the allocator as it came, so
//!   the pool holds no more buffers of a length than the outputs of that length alive at
//!   once. (Holding those too grew the quick demo's worker to 3.5 GB, against 0.9 GB
//!   without the pool, with buffers that no output took again.)
//! - The pool counts outputs taken or allocated; a free buffer not taken again within
//!   [`IDLE_OUTPUTS`] of them is freed, as is every free buffer at
//!   [`release_cached_outputs`].
//! - The free buffers hold at most [`FREE_MARGIN`] bytes more than the most bytes in use at
//!   once (`peak`): `free ≤ peak + FREE_MARGIN`, the oldest freed first past it.
//!
//! Reuse never changes a result: a reused buffer is overwritten whole or zeroed first, as
//! a fresh one is.
//!
//! # Shapes
//! A buffer of `len` elements, handed out as a tensor of any shape holding `len`.

use std::any::{Any, TypeId};
use std::collections::VecDeque;
use std::sync::Mutex;

use burn::backend::ndarray::SharedArray;

use super::aligned::Aligned;
use super::real::Real;

/// Outputs smaller than this are left to the allocator: its free lists reuse them cheaply.
/// At 64 KiB the small models' activations (`[544, 32]` f32 is 68 KiB) are pooled too: with
/// 256 KiB, glibc's trimming cost the `small` model's step in your loop 1.2× (PERFORMANCE.md
/// §27).
pub const MIN_BYTES: usize = 64 << 10;

/// The most buffers the pool holds, free or in use.
pub const MAX_BUFFERS: usize = 4096;

/// The free buffers may hold this many bytes more than the most bytes its buffers in use
/// ever held at once; past that, the ones registered longest ago are freed. A loop whose
/// shapes stay the same never reaches it (its free buffers are the ones its next step uses);
/// one whose shapes change at every step (sequences of many lengths) keeps about one step's
/// outputs of earlier shapes, not one per shape.
pub const FREE_MARGIN: usize = 64 << 20;

/// A free buffer is freed when this many outputs have been taken or allocated since it was
/// handed out, and none of them was it: long enough for the biggest training step to come
/// back round to it, short enough that a shape no longer used does not stay for good.
pub const IDLE_OUTPUTS: u64 = 1 << 14;

/// One pooled buffer: a second handle to a tensor's array, with what a scan needs without
/// knowing its element type.
struct Held {
    /// The element type (`f32` or `f64`).
    ty: TypeId,
    /// Its length in elements, and in bytes.
    len: usize,
    bytes: usize,
    /// The address of its first element, which names it for [`release`].
    address: usize,
    /// The output count when it was registered.
    registered: u64,
    /// The `SharedArray<E>`.
    array: Box<dyn Any + Send>,
    /// Whether the pool's handle is the only one (`SharedArray::<E>::is_unique`).
    is_free: fn(&(dyn Any + Send)) -> bool,
}

/// The pool: its buffers in the order they were registered (oldest first), the buffers it
/// has lent out and not yet had back as tensors, the most bytes its buffers in use have
/// held at once, and the number of outputs taken or allocated so far.
struct Pool {
    held: Vec<Held>,
    peak_in_use: usize,
    /// Addresses of buffers taken, allocated for an output, or released for a write in
    /// place; only these are registered (see [`register`]). The oldest are forgotten past
    /// [`MAX_LENT`]: a buffer a kernel kept to itself never comes back.
    lent: VecDeque<usize>,
    outputs: u64,
}

/// The most lent buffers the pool remembers.
const MAX_LENT: usize = 1024;

static POOL: Mutex<Pool> = Mutex::new(Pool::new());

fn pool() -> std::sync::MutexGuard<'static, Pool> {
    POOL.lock().unwrap_or_else(|e| e.into_inner())
}

fn is_free<E: Real>(array: &(dyn Any + Send)) -> bool {
    array
        .downcast_ref::<SharedArray<E>>()
        .is_some_and(|a| a.is_unique())
}

fn pooled<E: Real>(len: usize) -> bool {
    len * size_of::<E>() >= MIN_BYTES
}

impl Pool {
    const fn new() -> Self {
        Self {
            held: Vec::new(),
            peak_in_use: 0,
            lent: VecDeque::new(),
            outputs: 0,
        }
    }

    /// Removes and returns a free buffer of `len` elements of type `E`, lent; counts one
    /// output.
    fn take<E: Real>(&mut self, len: usize) -> Option<SharedArray<E>> {
        self.outputs += 1;
        let ty = TypeId::of::<E>();
        let i = self
            .held
            .iter()
            .position(|h| h.ty == ty && h.len == len && (h.is_free)(&*h.array))?;
        let held = self.held.remove(i);
        self.lend(held.address);
        Some(
            *held
                .array
                .downcast::<SharedArray<E>>()
                .expect("the type was matched"),
        )
    }

    /// Remembers the buffer at `address` as lent.
    fn lend(&mut self, address: usize) {
        if self.lent.len() == MAX_LENT {
            self.lent.pop_front();
        }
        self.lent.push_back(address);
    }

    /// Frees the idle buffers, then holds a handle to `array` if its buffer was lent.
    fn register<E: Real>(&mut self, array: &SharedArray<E>) {
        let address = array.as_ptr() as usize;
        let Some(i) = self.lent.iter().rposition(|&a| a == address) else {
            return;
        };
        self.lent.remove(i);
        let now = self.outputs;
        self.held
            .retain(|h| now - h.registered < IDLE_OUTPUTS || !(h.is_free)(&*h.array));
        if self.held.len() < MAX_BUFFERS {
            self.held.push(Held {
                ty: TypeId::of::<E>(),
                len: array.len(),
                bytes: array.len() * size_of::<E>(),
                address,
                registered: now,
                array: Box::new(array.clone()),
                is_free: is_free::<E>,
            });
        }
        self.trim();
    }

    /// Frees the free buffers registered longest ago while they hold more than
    /// [`FREE_MARGIN`] bytes above the most bytes ever in use at once.
    fn trim(&mut self) {
        let (free, in_use) = self.bytes();
        self.peak_in_use = self.peak_in_use.max(in_use);
        let limit = self.peak_in_use + FREE_MARGIN;
        if free <= limit {
            return;
        }
        // `held` is in registration order, so this frees the oldest free ones first.
        let mut excess = free - limit;
        self.held.retain(|h| {
            if excess == 0 || !(h.is_free)(&*h.array) {
                return true;
            }
            excess = excess.saturating_sub(h.bytes);
            false
        });
    }

    /// Removes the handle to the buffer at `address`, if held, and lends the buffer.
    fn release(&mut self, address: usize) -> Option<Held> {
        let i = self.held.iter().position(|h| h.address == address)?;
        self.lend(address);
        Some(self.held.remove(i))
    }

    /// Removes the free buffers; returns their bytes.
    fn release_free(&mut self) -> usize {
        let mut freed = 0;
        self.held.retain(|h| {
            let free = (h.is_free)(&*h.array);
            if free {
                freed += h.bytes;
            }
            !free
        });
        freed
    }

    /// `(free, in use)` bytes.
    fn bytes(&self) -> (usize, usize) {
        self.held.iter().fold((0, 0), |(free, used), h| {
            if (h.is_free)(&*h.array) {
                (free + h.bytes, used)
            } else {
                (free, used + h.bytes)
            }
        })
    }
}

/// A free pooled buffer of exactly `len` elements, its contents left from its last use, or
/// `None`: then the caller allocates one and calls [`lend_new`]. Counts one output either
/// way, when `len` is large enough to be pooled.
pub(crate) fn take<E: Real>(len: usize) -> Option<Aligned<E>> {
    if !pooled::<E>(len) {
        return None;
    }
    let array = pool().take::<E>(len)?;
    // The pool's handle was the only one, so this moves the buffer out without a copy.
    let (buffer, offset) = array.into_owned().into_raw_vec_and_offset();
    Some(Aligned::from_parts(buffer, offset.unwrap_or(0), len))
}

/// Remembers `buffer`, just allocated for an output because [`take`] had none, so that
/// [`register`] holds it once it is a tensor.
pub(crate) fn lend_new<E: Real>(buffer: &[E]) {
    if pooled::<E>(buffer.len()) {
        pool().lend(buffer.as_ptr() as usize);
    }
}

/// Registers `array`, a kernel's new output, so that its buffer can be taken again once
/// every other handle is dropped. Only a buffer the pool lent (taken, allocated for an
/// output, or released for a write in place) is held: a buffer Burn allocated, which a
/// kernel wrote over in place, goes back to the allocator as it came. Registering frees the
/// buffers idle for [`IDLE_OUTPUTS`] outputs.
pub(crate) fn register<E: Real>(array: &SharedArray<E>) {
    if pooled::<E>(array.len()) && array.is_standard_layout() {
        pool().register(array);
    }
}

/// Drops the pool's handle to the buffer that starts at `address`, if it holds one, so
/// that a kernel holding the only other handle may write over it (the buffer stays lent,
/// to be registered again as the kernel's output). Returns whether it held one.
pub(crate) fn release(address: usize) -> bool {
    let held = pool().release(address);
    // Dropped after the lock: it may free the buffer.
    held.is_some()
}

/// Frees every pooled buffer that no tensor uses any more, and returns how many bytes that
/// gave back to the allocator. Buffers still in use stay registered.
///
/// A training loop on `NdArray` keeps its step's outputs in the pool between steps; call
/// this after training to give that memory back.
pub fn release_cached_outputs() -> usize {
    pool().release_free()
}

/// The bytes the pool holds, as `(free, in use)`: free buffers wait to be taken again,
/// buffers in use are tensors somebody still holds.
pub fn cached_output_bytes() -> (usize, usize) {
    pool().bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::aligned::ALIGN;
    use crate::cpu::memory::{written_output, zeroed_output};
    use crate::cpu::ndarray::shared_array;

    const LEN: usize = MIN_BYTES / size_of::<f32>() + 7919;

    fn array(len: usize, value: f32) -> SharedArray<f32> {
        SharedArray::<f32>::from_shape_vec(vec![len], vec![value; len]).unwrap()
    }

    /// `array(len, value)`, lent by `pool` and registered, as a kernel's output is.
    fn output(pool: &mut Pool, len: usize, value: f32) -> SharedArray<f32> {
        let a = array(len, value);
        pool.lend(a.as_ptr() as usize);
        pool.register(&a);
        a
    }

    /// An output is reused once its tensor is dropped, not while it is held; a release
    /// frees it.
    #[test]
    fn a_dropped_output_is_reused_and_a_held_one_is_not() {
        let mut pool = Pool::new();
        let held = output(&mut pool, LEN, 1.0);
        assert_eq!(pool.bytes(), (0, LEN * 4));
        assert!(pool.take::<f32>(LEN).is_none(), "a held buffer was taken");
        let address = held.as_ptr() as usize;
        drop(held);
        assert_eq!(pool.bytes(), (LEN * 4, 0));
        assert!(
            pool.take::<f32>(LEN - 1).is_none(),
            "another length was taken"
        );
        assert!(
            pool.take::<f64>(LEN / 2).is_none(),
            "another type was taken"
        );
        let again = pool.take::<f32>(LEN).expect("a free buffer");
        assert_eq!(again.as_ptr() as usize, address);
        assert!(again.is_unique());

        pool.register(&again);
        drop(again);
        assert_eq!(pool.release_free(), LEN * 4);
        assert!(
            pool.take::<f32>(LEN).is_none(),
            "a released buffer was taken"
        );
    }

    /// Only lent buffers are held: a buffer Burn allocated, which a kernel wrote over, goes
    /// back to the allocator (else the pool would grow by every such buffer). A buffer
    /// registered twice is held once (else it could never be free).
    #[test]
    fn only_lent_buffers_are_held_and_only_once() {
        let mut pool = Pool::new();
        let foreign = array(LEN, 2.0);
        pool.register(&foreign);
        assert!(
            pool.held.is_empty(),
            "a buffer the pool did not lend was held"
        );
        let a = output(&mut pool, LEN, 3.0);
        pool.register(&a);
        assert_eq!(pool.held.len(), 1);
        assert!(pool.lent.is_empty());
        for i in 0..MAX_LENT + 10 {
            pool.lend(i);
        }
        assert_eq!(
            pool.lent.len(),
            MAX_LENT,
            "lent buffers never registered piled up"
        );
    }

    /// `release` drops the pool's handle, so a kernel holding the only other one may write
    /// over the buffer, which `NdArrayReal::take_unique` relies on; the buffer stays lent,
    /// so the kernel's output is held again.
    #[test]
    fn a_released_buffer_is_unique_and_comes_back() {
        let mut pool = Pool::new();
        let a = output(&mut pool, LEN, 4.0);
        assert!(!a.is_unique());
        assert!(pool.release(a.as_ptr() as usize).is_some());
        assert!(a.is_unique());
        assert!(
            pool.release(a.as_ptr() as usize).is_none(),
            "released twice"
        );
        pool.register(&a);
        assert_eq!(pool.bytes(), (0, LEN * 4));
    }

    /// A free buffer that no output has taken within [`IDLE_OUTPUTS`] outputs is freed at
    /// the next registration; one in use stays.
    #[test]
    fn an_idle_buffer_is_freed_and_one_in_use_stays() {
        let mut pool = Pool::new();
        let in_use = output(&mut pool, LEN, 5.0);
        drop(output(&mut pool, LEN, 6.0));
        pool.outputs += IDLE_OUTPUTS - 1;
        drop(output(&mut pool, LEN + 1, 7.0));
        assert_eq!(pool.held.len(), 3, "freed too early");
        pool.outputs += 1;
        let last = output(&mut pool, LEN + 2, 8.0);
        // The idle one went; the one freed since, and the two in use, stay.
        assert_eq!(pool.bytes(), ((LEN + 1) * 4, (2 * LEN + 2) * 4));
        drop((in_use, last));
    }

    /// Free buffers of shapes no longer used stay within [`FREE_MARGIN`] of the most bytes
    /// in use at once, the oldest freed first; a loop of one shape keeps all of its own.
    #[test]
    fn free_buffers_stay_within_the_margin_above_the_peak_in_use() {
        let mut pool = Pool::new();
        let step: Vec<_> = (0..4).map(|i| output(&mut pool, LEN, i as f32)).collect();
        assert_eq!(pool.peak_in_use, 4 * LEN * 4);
        drop(step);
        // Many shapes, one output at a time (a new sequence length at every step): 1 MiB
        // each, 200 MiB in all, well past the margin.
        let per_shape = (1 << 20) / 4;
        for k in 0..200 {
            drop(output(&mut pool, per_shape + k, 0.0));
        }
        let (free, in_use) = pool.bytes();
        assert_eq!(in_use, 0);
        // (Trimmed at each registration, before the last output was dropped.)
        let last = (per_shape + 199) * 4;
        assert!(
            free <= 4 * LEN * 4 + FREE_MARGIN + last,
            "{free} bytes free"
        );
        assert!(
            free + per_shape * 4 * 2 > 4 * LEN * 4 + FREE_MARGIN,
            "freed too much: {free}"
        );
        // The newest shapes stayed, the oldest went.
        assert!(pool.held.iter().any(|h| h.len == per_shape + 199));
        assert!(!pool.held.iter().any(|h| h.len == per_shape));
    }

    /// Through the global pool, as the kernels use it: `written_output` and `zeroed_output`
    /// reuse a dropped output's buffer, overwritten or zeroed; small outputs are not pooled.
    #[test]
    fn kernel_outputs_reuse_the_global_pool() {
        // A length no other test uses, so no test takes this buffer in between.
        let len = LEN + 4 * 7919;
        let tensor = |buffer: Aligned<f32>| {
            let array = shared_array(buffer, vec![len]);
            register(&array);
            array
        };
        let first = tensor(zeroed_output(len));
        let address = first.as_ptr() as usize;
        assert!(
            address.is_multiple_of(ALIGN),
            "an output starts off a cache line"
        );
        drop(first);
        // SAFETY: the closure writes all `len` elements.
        let written =
            unsafe { written_output::<f32>(len, |p| (0..len).for_each(|i| p.add(i).write(8.0))) };
        assert_eq!(written.as_ptr() as usize, address);
        assert!(written.iter().all(|&v| v == 8.0));
        drop(tensor(written));
        let zeroed = zeroed_output::<f32>(len);
        assert_eq!(zeroed.as_ptr() as usize, address);
        assert!(zeroed.iter().all(|&v| v == 0.0));

        let small = zeroed_output::<f32>(1000);
        let small = shared_array(small, vec![1000]);
        register(&small);
        drop(small);
        assert!(take::<f32>(1000).is_none());
    }
}
