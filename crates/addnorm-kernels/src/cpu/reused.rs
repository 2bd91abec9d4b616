//! [`Reused`]: a kernel task's work state (a struct of scratch buffers), kept in a small
//! process-wide pool between calls, so the next call's task finds its buffers allocated,
//! their pages mapped and their contents initialized.
//!
//! # Why
//! The attention kernels give each parallel task a state of its own: the query block's
//! scores or probabilities, `Kᵀ` and `Vᵀ` copied into rows (about 100 KiB for the d128
//! model's heads). Made fresh in every call, each buffer was a zeroed allocation, and the
//! `memset` behind it was 1.5% of the attention backward's samples in the d128/T128
//! training step (PERFORMANCE.md §47). [`super::scratch::Scratch`] pools single buffers
//! taken at a known length; a task's state grows its buffers as its blocks need, so it is
//! pooled whole.
//!
//! # Formula
//! `Reused::<T>::take()` pops a pooled `T` (the one given back last) or makes
//! `T::default()`; dropping the [`Reused`] gives the value back, unless the pool already
//! holds [`POOL_VALUES`] values (then it is dropped). A value's contents are whatever its
//! last user left: callers overwrite what they read, as with a fresh one. A pooled value
//! keeps its buffers' capacity until the process ends (at most [`POOL_VALUES`] values; a
//! call's tasks give theirs back as they finish, so a call holds about one a thread).
//!
//! # Shapes
//! Any `T: Default + Send + 'static`.

use std::any::Any;
use std::ops::{Deref, DerefMut};
use std::sync::Mutex;

/// The most values the pool keeps, of all types together.
pub const POOL_VALUES: usize = 64;

/// The pooled values, boxed.
static POOL: Mutex<Vec<Box<dyn Any + Send>>> = Mutex::new(Vec::new());

/// A value taken from the pool and given back when dropped (see the
/// [module docs](self)).
pub struct Reused<T: Default + Send + 'static> {
    /// Always `Some` until `drop` takes it. Boxed once, when made: the pool holds the same
    /// box, so taking and giving back allocate nothing.
    value: Option<Box<T>>,
}

impl<T: Default + Send + 'static> Reused<T> {
    /// The pooled `T` given back last, or `T::default()` when the pool holds none.
    pub fn take() -> Self {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let found = pool.iter().rposition(|value| value.is::<T>());
        // `remove`, not `swap_remove`: the pool stays in the order values came back, so
        // each type's last given back is the last of its type for every later take.
        let value = found.map_or_else(Box::default, |i| {
            pool.remove(i)
                .downcast::<T>()
                .expect("the index was found by type")
        });
        Self { value: Some(value) }
    }
}

impl<T: Default + Send + 'static> Deref for Reused<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.value.as_deref().expect("taken only by drop")
    }
}

impl<T: Default + Send + 'static> DerefMut for Reused<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.value.as_deref_mut().expect("taken only by drop")
    }
}

impl<T: Default + Send + 'static> Drop for Reused<T> {
    fn drop(&mut self) {
        let Some(value) = self.value.take() else {
            return;
        };
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        if pool.len() < POOL_VALUES {
            pool.push(value);
        }
    }
}

/// Takes `count` values of `T` at once, lets `spoil` change each, and gives them back: the
/// pool's state after calls that left their values as `spoil` does (the kernels' tests of
/// stale pooled scratch).
#[cfg(test)]
pub(crate) fn pool_spoiled<T: Default + Send + 'static>(count: usize, spoil: impl Fn(&mut T)) {
    let taken: Vec<Reused<T>> = (0..count).map(|_| Reused::take()).collect();
    for mut value in taken {
        spoil(&mut value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A type no other test pools, so the pool's contents for it are this test's alone.
    #[derive(Default)]
    struct Marked(Vec<u32>);

    #[test]
    fn a_value_given_back_is_taken_again_with_its_contents() {
        let (address, boxed) = {
            let mut first = Reused::<Marked>::take();
            assert!(first.0.is_empty(), "a fresh value is the default");
            first.0.extend([7, 8, 9]);
            (first.0.as_ptr() as usize, &*first as *const Marked as usize)
        };
        let again = Reused::<Marked>::take();
        assert_eq!(again.0, [7, 8, 9]);
        assert_eq!(again.0.as_ptr() as usize, address);
        assert_eq!(
            &*again as *const Marked as usize, boxed,
            "the value was boxed again"
        );
        // Taken while the first is out: a default of its own.
        let second = Reused::<Marked>::take();
        assert!(second.0.is_empty());
    }
}
