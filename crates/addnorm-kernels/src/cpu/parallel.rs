//! [`for_each`] and [`map`]: a kernel's tasks in parallel, with the calling thread taking
//! part; [`ChunksMut`] and [`chunk`]: the disjoint pieces of a buffer the tasks work on;
//! `SharedBuffer` (`parallel/shared.rs`): a buffer the tasks share when their pieces are
//! strided or irregular.
//!
//! # Why
//! A library user calls a training step from their own thread (usually `main`), which is
//! not a worker of rayon's pool. A plain `par_iter` from there hands the whole call to the
//! pool and blocks the caller until a worker has woken, run it and signalled back: two
//! thread wake-ups per call, and one core idle while the work runs on the other. A step of
//! issue 10's d128/T128 model makes about 130 such calls; on the main thread it ran 18%
//! slower than the same step on a pool worker (`PERFORMANCE.md`, §8).
//!
//! Here the caller claims tasks from a shared counter and runs them itself at once, while
//! up to `threads − 1` helper jobs, spawned into the current rayon pool (the global one
//! when the caller is no worker), claim the rest as their workers wake. When the caller
//! runs out of tasks it waits only for helpers that are running one; a helper whose worker
//! wakes after that finds the call closed and returns without touching it. So a wake-up
//! is never on the caller's path: a call too short for a worker to join runs on the caller
//! alone, as a serial call would. The same holds inside a pool (the `addnorm` binary runs
//! its steps on pool workers), where it measured faster than rayon's `par_iter`, whose
//! fork-join waits for the stolen half: on the tuned loop, tiny 3.5–3.7 against 4.0–4.1 ms,
//! small 15.1–15.4 against 17.9–19.0, demo 10.4–10.5 against 11.5–11.9, d128/T128 about
//! even (§8).
//!
//! The caller never waits for a wake-up, but its helpers did arrive late: a worker idle
//! between two calls is soon asleep, and on the 2-core Ice Lake VM a spawned helper joined
//! the d128/T128 step's calls 36–71 µs after they opened, the demo model's 6–11 µs, while
//! one core waited. So a helper whose call has closed lingers (`parallel/linger.rs`): for
//! up to 500 µs it watches for the next call and joins it within about a microsecond, and
//! a caller spawns helpers only for the threads that no lingering helper covers. The step
//! in your loop became 0.90× its time on d128 and 0.92× on the small model; the demo and
//! tiny models' steps, whose calls come too close together for a worker to fall asleep,
//! did not change beyond the host's spread (PERFORMANCE.md §30). `ADDNORM_LINGER_US` sets
//! the time (`0`: no lingering).
//!
//! Which thread runs a task never changes what it computes: callers split their work into
//! tasks from the sizes alone, each task writes its own outputs, and [`map`] returns the
//! task results in task order, so sums over them are taken in a fixed order.
//!
//! # Formula
//! `for_each(n, f)` runs `f(0), …, f(n − 1)`, each exactly once, in any order and on any
//! threads, and returns when all have returned. `map(n, f) = [f(0), …, f(n − 1)]`.
//!
//! # Shapes
//! [`ChunksMut::new`]`(s, c)` and [`chunk`]`(s, c, i)` cut a slice of `len` elements into
//! `⌈len / c⌉` chunks of `c` elements (the last one shorter).

use std::any::Any;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::real::{Real, add_into};

mod linger;
mod shared;

pub(crate) use shared::SharedBuffer;

/// Runs `task(i)` for every `i < tasks` (see the [module docs](self)): on the calling
/// thread alone when there is one task or one thread, else in parallel with the caller
/// taking part and helpers from the current rayon pool (the global one outside any pool).
pub fn for_each(tasks: usize, task: impl Fn(usize) + Sync) {
    let threads = rayon::current_num_threads();
    if tasks <= 1 || threads == 1 {
        (0..tasks).for_each(task);
    } else {
        with_caller(tasks, threads, &task);
    }
}

/// `[task(0), …, task(tasks − 1)]`, the tasks run as [`for_each`] runs them.
pub fn map<R: Send>(tasks: usize, task: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let slots: Vec<Mutex<Option<R>>> = (0..tasks).map(|_| Mutex::new(None)).collect();
    for_each(tasks, |i| {
        let result = task(i);
        *slots[i].lock().unwrap_or_else(|e| e.into_inner()) = Some(result);
    });
    slots
        .into_iter()
        .map(|slot| {
            slot.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .expect("for_each runs every task")
        })
        .collect()
}

/// The caller and up to `threads − 1` helpers claim tasks from one counter (see
/// [`Region`]): the helpers lingering after earlier calls ([`linger`]), and helper jobs
/// spawned into the current rayon pool for the rest, which linger in turn.
fn with_caller(tasks: usize, threads: usize, task: &(dyn Fn(usize) + Sync)) {
    // SAFETY (of the lifetime erasure): helpers call `task` only while counted inside the
    // region, and `Close` below does not let this function return or unwind before the
    // region is closed with no helper inside; after that no helper can enter.
    let task: &'static (dyn Fn(usize) + Sync) = unsafe { std::mem::transmute(task) };
    let region = Arc::new(Region {
        state: AtomicUsize::new(0),
        next: AtomicUsize::new(0),
        tasks,
        task,
        panic: Mutex::new(None),
    });
    let published = linger::publishing().then(|| linger::Published::new(&region));
    // Helpers lingering after an earlier call join this one without being spawned.
    let covered = published.as_ref().map_or(0, linger::Published::covered);
    for _ in 0..(threads.min(tasks) - 1).saturating_sub(covered) {
        let region = Arc::clone(&region);
        rayon::spawn(move || {
            region.help();
            drop(region);
            linger::linger();
        });
    }
    let close = Close(&region);
    region.claim();
    drop(close);
    let panic = region
        .panic
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    if let Some(payload) = panic {
        std::panic::resume_unwind(payload);
    }
}

/// The bit of [`Region::state`] set once the caller has run out of tasks.
const CLOSED: usize = 1 << (usize::BITS - 1);

/// One parallel call outside the pool. The caller runs tasks at once; each helper job,
/// whenever its worker wakes, enters (unless the region is closed), claims tasks until none
/// is left, and leaves. The caller, out of tasks, closes the region and waits only for the
/// helpers inside, each finishing the task it holds; a helper that wakes later finds the
/// region closed and returns without touching it. So a worker's wake-up is never on the
/// caller's path: at worst the caller runs every task itself.
struct Region {
    /// The number of helpers inside, plus [`CLOSED`].
    state: AtomicUsize,
    /// The next task to claim.
    next: AtomicUsize,
    tasks: usize,
    /// The caller's task, its lifetime erased (see `with_caller`).
    task: &'static (dyn Fn(usize) + Sync),
    /// The first panic of a helper's task, resumed on the caller.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
}

impl Region {
    /// Runs tasks until none is left.
    fn claim(&self) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.tasks {
                break;
            }
            (self.task)(i);
        }
    }

    /// A helper: enter unless closed, claim tasks, leave.
    fn help(&self) {
        let mut state = self.state.load(Ordering::Relaxed);
        loop {
            if state & CLOSED != 0 {
                return;
            }
            match self.state.compare_exchange_weak(
                state,
                state + 1,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(now) => state = now,
            }
        }
        if let Err(payload) = std::panic::catch_unwind(AssertUnwindSafe(|| self.claim())) {
            // Later tasks are not started: the call fails as a whole.
            self.next.store(self.tasks, Ordering::Relaxed);
            let mut slot = self.panic.lock().unwrap_or_else(|e| e.into_inner());
            slot.get_or_insert(payload);
        }
        self.state.fetch_sub(1, Ordering::Release);
    }
}

/// Closes its region when dropped, also while the caller unwinds from a panic of its own
/// task, and waits until no helper is inside.
struct Close<'a>(&'a Region);

impl Drop for Close<'_> {
    fn drop(&mut self) {
        let region = self.0;
        region.next.store(region.tasks, Ordering::Relaxed);
        region.state.fetch_or(CLOSED, Ordering::AcqRel);
        let mut spins = 0u32;
        while region.state.load(Ordering::Acquire) != CLOSED {
            if spins < 64 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// Chunks of element-wise calls are multiples of this many elements, so that no SIMD loop
/// has a ragged tail in the middle of a call.
pub const CHUNK_ALIGN: usize = 64;

/// The most tasks per thread an element-wise call is cut into. With one task a thread, a
/// caller whose helper came late (woken from sleep, or busy elsewhere on a loaded host)
/// finished its own half and then waited for the helper's; with several, it takes the
/// tasks the helper has not reached (PERFORMANCE.md §35).
pub const ELEMENTWISE_TASKS_PER_THREAD: usize = 4;

/// The chunk length that splits an element-wise call over `len` elements across rayon's
/// threads, with at least `min_task` elements a task and at most
/// [`ELEMENTWISE_TASKS_PER_THREAD`] tasks a thread: the whole call (at least 1) when one
/// task on the calling thread is best (a small call, or one thread). For kernels that
/// compute each element alone, so that how a call is cut never changes a bit.
pub fn elementwise_chunk(len: usize, min_task: usize) -> usize {
    let threads = rayon::current_num_threads();
    if threads == 1 {
        return len.max(1);
    }
    let tasks = (len / min_task.max(1)).min(threads * ELEMENTWISE_TASKS_PER_THREAD);
    if tasks > 1 {
        len.div_ceil(tasks).next_multiple_of(CHUNK_ALIGN)
    } else {
        len.max(1)
    }
}

/// Runs `task(i, size)` for each chunk `i` of `chunks` (`size` elements each): on the
/// calling thread when there is one, else in parallel ([`for_each`]).
pub fn in_chunks<T>(chunks: &ChunksMut<'_, T>, task: impl Fn(usize, usize) + Sync) {
    let size = chunks.size();
    match chunks.count() {
        0 => {}
        1 => task(0, size),
        count => for_each(count, |i| task(i, size)),
    }
}

/// `acc += part` for each of `parts`, in order, element chunk by element chunk over the
/// threads, at least `min_task` elements a task ([`elementwise_chunk`]). Each element still
/// adds the parts in their order, one addition each, so how the call is cut changes no bit.
pub fn add_in_chunks<E: Real>(acc: &mut [E], parts: &[&[E]], min_task: usize) {
    if parts.is_empty() {
        return;
    }
    let size = elementwise_chunk(acc.len(), min_task);
    let chunks = ChunksMut::new(acc, size);
    in_chunks(&chunks, |i, size| {
        let acc = chunks.take(i);
        for part in parts {
            add_into(acc, chunk(part, size, i));
        }
    });
}

/// Chunk `i` of `values` cut into chunks of `size` elements (the last one shorter).
///
/// # Panics
/// If chunk `i` starts past the end of `values`, or `size` is 0.
pub fn chunk<T>(values: &[T], size: usize, i: usize) -> &[T] {
    assert!(size > 0, "chunk size 0");
    let start = i * size;
    &values[start..(start + size).min(values.len())]
}

/// A mutable slice cut into chunks of one size, which tasks take by index, each at most
/// once (checked: taking a chunk twice panics).
pub struct ChunksMut<'a, T> {
    ptr: *mut T,
    len: usize,
    size: usize,
    taken: Vec<AtomicBool>,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: a ChunksMut hands each chunk out at most once (`taken`), so tasks on different
// threads get disjoint `&mut` pieces of a slice it borrows mutably for 'a; that is what
// sending `&mut [T]` pieces to other threads requires, T: Send.
unsafe impl<T: Send> Send for ChunksMut<'_, T> {}
// SAFETY: as above; `take` goes through the atomic flags only.
unsafe impl<T: Send> Sync for ChunksMut<'_, T> {}

impl<'a, T> ChunksMut<'a, T> {
    /// `values` in chunks of `size` elements.
    ///
    /// # Panics
    /// If `size` is 0.
    pub fn new(values: &'a mut [T], size: usize) -> Self {
        assert!(size > 0, "chunk size 0");
        Self {
            ptr: values.as_mut_ptr(),
            len: values.len(),
            size,
            taken: (0..values.len().div_ceil(size))
                .map(|_| AtomicBool::new(false))
                .collect(),
            _borrow: PhantomData,
        }
    }

    /// The number of chunks, `⌈len / size⌉`.
    pub fn count(&self) -> usize {
        self.taken.len()
    }

    /// The length of every chunk but (possibly) the last.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Chunk `i`, for the one task that works on it.
    ///
    /// # Panics
    /// If `i` is out of range, or chunk `i` was taken before.
    #[allow(clippy::mut_from_ref)]
    pub fn take(&self, i: usize) -> &'a mut [T] {
        assert!(
            !self.taken[i].swap(true, Ordering::AcqRel),
            "chunk {i} taken twice"
        );
        let start = i * self.size;
        let end = (start + self.size).min(self.len);
        // SAFETY: [start, end) lies inside the borrowed slice (i < count), and the flag
        // above gives this range to one caller only for the rest of 'a.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(start), end - start) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::test_values::on_threads;

    #[test]
    fn every_task_runs_once_inside_and_outside_a_pool() {
        for tasks in [0, 1, 2, 7, 64] {
            let check = || {
                let counts: Vec<AtomicUsize> = (0..tasks).map(|_| AtomicUsize::new(0)).collect();
                for_each(tasks, |i| {
                    counts[i].fetch_add(1, Ordering::Relaxed);
                });
                assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == 1));
                assert_eq!(
                    map(tasks, |i| i * i),
                    (0..tasks).map(|i| i * i).collect::<Vec<_>>()
                );
            };
            // The test harness's threads are outside every pool: the caller takes part.
            check();
            for threads in [1, 2, 3] {
                on_threads(threads, check);
            }
        }
    }

    /// Many short calls in a row from outside the pool: helpers that wake after their call
    /// closed must leave it alone, and every task of every call runs once.
    #[test]
    fn short_calls_in_a_row_run_every_task_once() {
        for round in 0..2000 {
            let tasks = 2 + round % 3;
            let counts: Vec<AtomicUsize> = (0..tasks).map(|_| AtomicUsize::new(0)).collect();
            for_each(tasks, |i| {
                counts[i].fetch_add(1, Ordering::Relaxed);
            });
            assert!(
                counts.iter().all(|c| c.load(Ordering::Relaxed) == 1),
                "round {round}"
            );
        }
    }

    /// Several callers at once, each call published in turn to the lingering helpers,
    /// which help whichever is published: every task of every call runs once, and each
    /// call's results come back in task order.
    #[test]
    fn concurrent_callers_share_lingering_helpers() {
        std::thread::scope(|scope| {
            for caller in 0..4 {
                scope.spawn(move || {
                    for round in 0..300 {
                        let tasks = 2 + (round + caller) % 5;
                        let counts: Vec<AtomicUsize> =
                            (0..tasks).map(|_| AtomicUsize::new(0)).collect();
                        let squares = map(tasks, |i| {
                            counts[i].fetch_add(1, Ordering::Relaxed);
                            i * i + caller
                        });
                        assert!(counts.iter().all(|c| c.load(Ordering::Relaxed) == 1));
                        assert_eq!(
                            squares,
                            (0..tasks).map(|i| i * i + caller).collect::<Vec<_>>()
                        );
                    }
                });
            }
        });
    }

    #[test]
    fn elementwise_chunks_are_aligned_and_cover_the_call() {
        let min = 1 << 15;
        assert_eq!(elementwise_chunk(1000, min), 1000);
        assert_eq!(elementwise_chunk(0, min), 1);
        let threads = rayon::current_num_threads();
        if threads > 1 {
            let len = 10 * min + 3;
            let chunk = elementwise_chunk(len, min);
            let tasks = len.div_ceil(chunk);
            assert!(chunk >= min, "at least min_task a task");
            assert_eq!(chunk % CHUNK_ALIGN, 0);
            assert!(tasks > 1 && tasks <= threads * ELEMENTWISE_TASKS_PER_THREAD);
            assert_eq!(tasks, 10.min(threads * ELEMENTWISE_TASKS_PER_THREAD));
        }
    }

    #[test]
    fn chunks_cover_the_slice_once() {
        let mut values: Vec<usize> = vec![0; 10];
        let chunks = ChunksMut::new(&mut values, 4);
        assert_eq!(chunks.count(), 3);
        for_each(chunks.count(), |i| {
            chunks.take(i).iter_mut().for_each(|v| *v += i + 1);
        });
        assert_eq!(values, [1, 1, 1, 1, 2, 2, 2, 2, 3, 3]);
        assert_eq!(chunk(&values, 4, 2), &[3, 3]);
    }

    #[test]
    #[should_panic(expected = "taken twice")]
    fn a_chunk_taken_twice_panics() {
        let mut values = [0.0f32; 8];
        let chunks = ChunksMut::new(&mut values, 4);
        let _first = chunks.take(1);
        let _again = chunks.take(1);
    }

    #[test]
    fn a_panicking_task_reaches_the_caller() {
        let caught = std::panic::catch_unwind(|| {
            for_each(8, |i| assert!(i != 5, "task 5 fails"));
        });
        assert!(caught.is_err());
    }
}
