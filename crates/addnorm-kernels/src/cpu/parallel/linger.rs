//! Helpers that stay a moment after their call: a helper whose call has closed keeps
//! watching for the next call for up to [`linger_time`], and joins it at once, instead of
//! going back to rayon's pool, where its worker soon sleeps and must be woken for the next.
//!
//! # Why
//! A training step is a chain of parallel calls with serial work between them (Burn's
//! bookkeeping, the optimizer). A helper spawned into rayon's pool for each call reaches it
//! only after its worker wakes: on the 2-core Ice Lake VM, 36–71 µs after the call opened
//! for the d128/T128 step, 6–11 µs for the demo's model (PERFORMANCE.md §30), while the
//! calls themselves last 10 µs to a few ms. A lingering helper joins a call within about
//! a microsecond. PyTorch's OpenMP threads do the same by spinning between parallel regions.
//!
//! # Formula
//! - A caller publishes its region ([`Published::new`]) before it starts claiming tasks,
//!   and withdraws it when it closes; lingering helpers poll [`OPENED`] and help whatever
//!   region is published when it changes. A caller alone in a parallel call spawns helpers
//!   only for the threads that lingering helpers do not cover
//!   ([`Published::covered`]); with several callers at once (sweep jobs sharing a
//!   process), each spawns all of its own, as only the newest region is published.
//! - A helper lingers only while fewer than `cores − 1` others do (so the lingering helpers
//!   and a caller never outnumber the cores), and stops after [`linger_time`] without a
//!   new region. `ADDNORM_LINGER_US` sets that time in microseconds; `0` turns lingering
//!   off (every call then spawns its helpers into the pool, as before).
//! - Which thread runs a task never changes what it computes, so lingering changes no bit.
//!
//! # Shapes
//! One published region at a time (the newest caller's); regions of concurrent callers
//! that are not published are helped by the helpers they spawned.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::Region;

/// How long a helper lingers without a new region, unless `ADDNORM_LINGER_US` says
/// otherwise.
const DEFAULT_LINGER: Duration = Duration::from_micros(500);

/// The region lingering helpers help: the newest caller's, until it closes.
static OPEN: Mutex<Option<Arc<Region>>> = Mutex::new(None);

/// Bumped each time a region is published, so that lingering helpers poll one atomic.
static OPENED: AtomicUsize = AtomicUsize::new(0);

/// Helpers lingering now, also while one helps a region it found: counting them then
/// too keeps a caller from spawning a second helper that would linger beside the first.
static LINGERING: AtomicUsize = AtomicUsize::new(0);

/// Regions published and not yet withdrawn: callers inside a parallel call.
static CALLERS: AtomicUsize = AtomicUsize::new(0);

/// How long a helper lingers: `ADDNORM_LINGER_US` microseconds when set to a number, else
/// [`DEFAULT_LINGER`]; read once.
fn linger_time() -> Duration {
    static TIME: OnceLock<Duration> = OnceLock::new();
    *TIME.get_or_init(|| {
        std::env::var("ADDNORM_LINGER_US")
            .ok()
            .and_then(|us| us.trim().parse().ok())
            .map_or(DEFAULT_LINGER, Duration::from_micros)
    })
}

/// Whether callers publish their regions: lingering is on.
pub(super) fn publishing() -> bool {
    !linger_time().is_zero()
}

/// The most helpers that linger at once: one fewer than the cores.
fn most_lingering() -> usize {
    static MOST: OnceLock<usize> = OnceLock::new();
    *MOST.get_or_init(|| {
        std::thread::available_parallelism().map_or(1, |cores| cores.get().saturating_sub(1))
    })
}

/// A region published to lingering helpers, withdrawn when dropped.
pub(super) struct Published {
    region: Arc<Region>,
    /// Whether no other caller's region was open when this one was published.
    alone: bool,
}

impl Published {
    /// Publishes `region`.
    pub(super) fn new(region: &Arc<Region>) -> Self {
        *OPEN.lock().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(region));
        let alone = CALLERS.fetch_add(1, SeqCst) == 0;
        OPENED.fetch_add(1, SeqCst);
        Self {
            region: Arc::clone(region),
            alone,
        }
    }

    /// The helpers this region can count on without spawning them: those lingering when it
    /// was published, if it is the only open region. With several callers at once
    /// the newest region alone is published, so each caller spawns its own helpers.
    pub(super) fn covered(&self) -> usize {
        if self.alone {
            LINGERING.load(SeqCst)
        } else {
            0
        }
    }
}

impl Drop for Published {
    fn drop(&mut self) {
        let mut open = OPEN.lock().unwrap_or_else(|e| e.into_inner());
        if open.as_ref().is_some_and(|r| Arc::ptr_eq(r, &self.region)) {
            *open = None;
        }
        CALLERS.fetch_sub(1, SeqCst);
    }
}

/// After its own region: helps each newly published region until [`linger_time`] passes
/// without one, unless lingering is off or enough helpers already linger.
pub(super) fn linger() {
    let time = linger_time();
    if time.is_zero() || !enter() {
        return;
    }
    let mut seen = OPENED.load(SeqCst);
    let mut deadline = Instant::now() + time;
    let mut spins = 0u32;
    loop {
        let opened = OPENED.load(SeqCst);
        if opened != seen {
            seen = opened;
            help_published();
            deadline = Instant::now() + time;
            continue;
        }
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(64) && Instant::now() >= deadline {
            if leave(seen) {
                return;
            }
            deadline = Instant::now() + time;
        }
        std::hint::spin_loop();
    }
}

/// Helps the region published now, if any.
fn help_published() {
    let region = OPEN.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(region) = region {
        region.help();
    }
}

/// Stops lingering, unless a region was published since `seen`: a caller that counted
/// this helper as lingering published its region first, so it is seen here and helped
/// after all. Returns whether the helper left.
fn leave(seen: usize) -> bool {
    LINGERING.fetch_sub(1, SeqCst);
    OPENED.load(SeqCst) == seen || !enter()
}

/// Counts this helper as lingering if fewer than [`most_lingering`] do.
fn enter() -> bool {
    LINGERING
        .fetch_update(SeqCst, SeqCst, |n| (n < most_lingering()).then_some(n + 1))
        .is_ok()
}
