//! Whether `matrixmultiply` forks its products onto its own thread pool
//! ([`matrixmultiply_forks`]), and products that keep it from doing so where it would
//! ([`on_this_thread`]).
//!
//! It forks when it was built with its `threading` feature and `MATMUL_NUM_THREADS` (else
//! the count of physical cores) is above 1. burn-ndarray's default feature `multi-threads`
//! turns `threading` on, and Cargo unifies features, so whether addnorm's products fork
//! depends on how the *user's* `Cargo.toml` names `burn`. Nothing in `matrixmultiply`'s API
//! says which, so the answer is observed. `sgemm` runs one product large enough to fork
//! ([`PROBE`]), in one call and in [`super::serial`]'s blocks, which never fork, and
//! every thread's CPU clock is read before, between and after. A pool worker spends a
//! good share of the caller's time during the one call and none during the blocks; any
//! other busy thread of the process (a parallel task beside the caller, a data loader)
//! spends about the same share during both. Each thread's own clock counts a running
//! thread's time up to the moment it is read; the process clock does not, and comparing
//! it with the caller's misread a busy neighbour as a fork.
//!
//! The answer is found once per process, from seven such rounds (about 15 ms in all): a
//! pool worker gains in every round, where bursts of other work (another test's threads,
//! a software GPU driver's) land in some. A median over five rounds still misread such
//! bursts as a fork once in CI, beside Mesa's software Vulkan driver. On a 2-core Zen 3
//! the score was 0.77–0.91 with `threading` and 0.000 without it, in the kernels' tests
//! beside the wgpu tests. Either answer gives the same bits; a wrong one costs only speed.
//! Where the threads' clocks cannot be read (outside Linux), the answer is no.
//!
//! # Formula
//! With `s_t = Δt_t / Δt_caller` the share of thread `t` over a run, and
//! `g_t = s_t(one call) − s_t(blocks)` in each round (the order of the two runs
//! alternating between rounds): `forked ⇔ max_t (second-smallest g_t over the rounds) ≥
//! 0.25`, a thread gaining in all rounds but one.
//!
//! # Shapes
//! The probe: `A: [256, 256]`, `B: [256, 256]`, `C: [256, 256]` (`m·k + k·n = 4·2¹⁵`).

use std::sync::OnceLock;

use super::Strided;
use super::serial::{Product, call, in_blocks};
use crate::cpu::real::Real;

/// The probe's `[m, k, n]`: `m·k + k·n` four times the size from which `matrixmultiply`
/// forks, and `m ≥ 96`, so it splits its row blocks between two threads or more.
const PROBE: [usize; 3] = [256, 256, 256];

/// Whether this process's `matrixmultiply` runs products on its own pool (module docs);
/// found on the first call, then remembered.
pub fn matrixmultiply_forks() -> bool {
    static FORKS: OnceLock<bool> = OnceLock::new();
    *FORKS.get_or_init(probe_forks)
}

/// `C ← α·A·B + β·C` by `product` (`sgemm` or `dgemm`), on the calling thread:
/// [`in_blocks`] where `matrixmultiply` forks ([`matrixmultiply_forks`]), else one call.
/// The bits are the same.
///
/// # Safety
/// As [`super::Gemm::gemm`].
pub(super) unsafe fn on_this_thread<E: Real>(
    dims: [usize; 3],
    alpha: E,
    ab: [Strided<E>; 2],
    beta: E,
    c: Strided<E>,
    product: Product<E>,
) {
    // SAFETY (both): forwarded from the caller.
    if matrixmultiply_forks() {
        unsafe { in_blocks(dims, alpha, ab, beta, c, product) }
    } else {
        unsafe { call(product, dims, alpha, ab, beta, c) }
    }
}

/// [`PROBES`] rounds of [`PROBE`] by `sgemm`, in one call and in blocks, and [`forked`]
/// on their [`score`]; no where the clocks cannot be read.
fn probe_forks() -> bool {
    let [m, k, n] = PROBE;
    let (a, b, mut c) = (
        vec![0.5f32; m * k],
        vec![0.25f32; k * n],
        vec![0.0f32; m * n],
    );
    let ab = [
        Strided::rows(a.as_ptr().cast_mut(), k),
        Strided::rows(b.as_ptr().cast_mut(), n),
    ];
    let c = Strided::rows(c.as_mut_ptr(), n);
    let sgemm: Product<f32> = matrixmultiply::sgemm;
    // SAFETY (both): each view addresses its own live buffer of its row-major shape.
    let one = || unsafe { call(sgemm, PROBE, 1.0, ab, 0.0, c) };
    let blocks = || unsafe { in_blocks(PROBE, 1.0, ab, 0.0, c, sgemm) };
    let mut rounds = Vec::new();
    for round in 0..PROBES {
        // Alternate which run goes first, so that work that starts or stops around the
        // probe weighs on each alike.
        let one_first = round % 2 == 0;
        let runs: [&dyn Fn(); 2] = if one_first {
            [&one, &blocks]
        } else {
            [&blocks, &one]
        };
        let Some(t0) = thread_times() else {
            return false;
        };
        runs[0]();
        let t1 = thread_times().unwrap_or_default();
        runs[1]();
        let t2 = thread_times().unwrap_or_default();
        let [mut one, mut blocks] = [[&t0, &t1], [&t1, &t2]];
        if !one_first {
            std::mem::swap(&mut one, &mut blocks);
        }
        rounds.push(share_gains(one, blocks));
    }
    forked(score(&rounds))
}

/// How many rounds [`probe_forks`] runs.
const PROBES: usize = 7;

/// For each other thread, its share of the caller's CPU time over the one call's window
/// (`[from, to]` times) less its share over the blocks' window. Empty if the caller's clock
/// did not move or is missing.
fn share_gains(one: [&ThreadTimes; 2], blocks: [&ThreadTimes; 2]) -> Vec<(i64, f64)> {
    let me = one[0].me;
    let spent = |[from, to]: [&ThreadTimes; 2], tid| Some(to.of(tid)? - from.of(tid)?);
    let (Some(mine_one), Some(mine_blocks)) = (spent(one, me), spent(blocks, me)) else {
        return Vec::new();
    };
    if mine_one <= 0.0 || mine_blocks <= 0.0 {
        return Vec::new();
    }
    let others = one[0]
        .times
        .iter()
        .map(|&(tid, _)| tid)
        .filter(|&tid| tid != me);
    others
        .filter_map(|tid| {
            Some((
                tid,
                spent(one, tid)? / mine_one - spent(blocks, tid)? / mine_blocks,
            ))
        })
        .collect()
}

/// The probe's score from its rounds' [`share_gains`]: over the threads seen in every
/// round but one or more, the largest of each one's second-smallest gain (so a thread
/// must have gained in all rounds but one), 0 if none was seen so often.
fn score(rounds: &[Vec<(i64, f64)>]) -> f64 {
    let mut tids: Vec<i64> = rounds.iter().flatten().map(|&(tid, _)| tid).collect();
    tids.sort_unstable();
    tids.dedup();
    let nearly_least_gain = |tid| {
        let mut gains: Vec<f64> = rounds
            .iter()
            .flatten()
            .filter(|g| g.0 == tid)
            .map(|g| g.1)
            .collect();
        gains.sort_by(f64::total_cmp);
        (gains.len() + 1 >= rounds.len() && gains.len() >= 2).then(|| gains[1])
    };
    tids.into_iter()
        .filter_map(nearly_least_gain)
        .fold(0.0, f64::max)
}

/// Whether a probe whose [`score`] was `score` ran partly on another thread (module docs'
/// formula).
fn forked(score: f64) -> bool {
    score >= 0.25
}

/// Every thread's CPU time in seconds at one moment, and which of them is the caller.
#[derive(Default)]
struct ThreadTimes {
    /// The caller's thread id.
    me: i64,
    /// `(thread id, seconds)` for each thread of the process.
    times: Vec<(i64, f64)>,
}

impl ThreadTimes {
    /// The CPU time of thread `tid`, if it was read.
    fn of(&self, tid: i64) -> Option<f64> {
        self.times.iter().find(|&&(t, _)| t == tid).map(|&(_, s)| s)
    }
}

/// The CPU time of every thread of the process (`/proc/self/task`), read from each
/// thread's own CPU clock, which counts a running thread's time up to now; `None` where
/// these cannot be read.
#[cfg(target_os = "linux")]
fn thread_times() -> Option<ThreadTimes> {
    // SAFETY: gettid has no preconditions.
    let me = i64::from(unsafe { libc::gettid() });
    let times = std::fs::read_dir("/proc/self/task")
        .ok()?
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i64>().ok())
        .filter_map(|tid| Some((tid, thread_seconds(tid)?)))
        .collect::<Vec<_>>();
    times
        .iter()
        .any(|&(tid, _)| tid == me)
        .then_some(ThreadTimes { me, times })
}

/// Thread CPU times: not readable here.
#[cfg(not(target_os = "linux"))]
fn thread_times() -> Option<ThreadTimes> {
    None
}

/// The CPU time of thread `tid` of this process, in seconds, from its clock: Linux names a
/// thread's CPU clock `(!tid << 3) | 6` (per thread, scheduler time), as glibc's
/// `pthread_getcpuclockid` does.
#[cfg(target_os = "linux")]
fn thread_seconds(tid: i64) -> Option<f64> {
    let id = libc::clockid_t::try_from((!tid << 3) | 6).ok()?;
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a live timespec that the call writes.
    let status = unsafe { libc::clock_gettime(id, &mut now) };
    (status == 0).then_some(now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn a_thread_busy_only_during_the_one_call_is_a_fork() {
        let times = |me_s: f64, pool_s: f64, busy_s: f64| ThreadTimes {
            me: 1,
            times: vec![(1, me_s), (2, pool_s), (3, busy_s)],
        };
        // Thread 2 works 0.6 of the caller's time in the one call, none in the blocks;
        // thread 3 spins through both.
        let [t0, t1, t2] = [
            times(0.0, 0.0, 0.0),
            times(1.0, 0.6, 1.0),
            times(2.2, 0.6, 2.2),
        ];
        let gains = share_gains([&t0, &t1], [&t1, &t2]);
        assert_eq!(gains.len(), 2);
        assert!(
            (gains[0].1 - 0.6).abs() < 1e-9 && gains[1].1.abs() < 1e-9,
            "{gains:?}"
        );
        // Thread 2 gains in every round but one: a fork. Thread 3's bursts in three rounds
        // of five (a median would count them) are not.
        let round = |pool: f64, busy: f64| vec![(2, pool), (3, busy)];
        let rounds = [
            round(0.6, 4.0),
            round(0.0, 0.0),
            round(0.6, 0.9),
            round(0.7, 0.0),
            round(0.5, 0.8),
        ];
        assert!((score(&rounds) - 0.5).abs() < 1e-9 && forked(score(&rounds)));
        let quiet = [
            round(0.0, 4.0),
            round(0.0, 0.0),
            round(0.1, 0.9),
            round(0.0, 0.0),
            round(0.0, 0.8),
        ];
        assert!(!forked(score(&quiet)), "{}", score(&quiet));
        // A caller's clock that did not move says nothing.
        let still = times(1.0, 0.0, 0.0);
        assert!(share_gains([&still, &still], [&still, &still]).is_empty());
    }

    /// A thread busy beside the probe does not read as a fork. This workspace builds
    /// matrixmultiply without `threading`: every probe's one call runs on this thread,
    /// whatever runs beside it. A probe that misread the steady neighbour would say yes in
    /// most of five tries; the tests running beside this one in the same process can
    /// burst into one probe's rounds (with three tries that all had to say no, this test
    /// failed once in about twenty runs of the kernels' tests), so one yes in five is
    /// allowed.
    #[test]
    fn another_busy_thread_does_not_read_as_a_fork() {
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let mut x = 0.0f64;
                while !stop.load(Ordering::Relaxed) {
                    x += std::hint::black_box(x).sqrt() + 1.0;
                }
            });
            let answers: Vec<bool> = (0..5).map(|_| probe_forks()).collect();
            stop.store(true, Ordering::Relaxed);
            let forks = answers.iter().filter(|&&forked| forked).count();
            assert!(forks <= 1, "{answers:?}");
        });
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_threads_clocks_count_their_own_work() {
        let (stop, ready) = (AtomicBool::new(false), AtomicBool::new(false));
        std::thread::scope(|scope| {
            let worker = scope.spawn(|| {
                // SAFETY: gettid has no preconditions.
                let tid = i64::from(unsafe { libc::gettid() });
                ready.store(true, Ordering::Release);
                let mut x = 0.0f64;
                while !stop.load(Ordering::Relaxed) {
                    x += std::hint::black_box(x).sqrt() + 1.0;
                }
                tid
            });
            while !ready.load(Ordering::Acquire) {
                std::hint::spin_loop();
            }
            let before = thread_times().unwrap();
            std::thread::sleep(std::time::Duration::from_millis(20));
            let after = thread_times().unwrap();
            stop.store(true, Ordering::Relaxed);
            let tid = worker.join().unwrap();
            let (me, spun) = (before.me, after.of(tid).unwrap() - before.of(tid).unwrap());
            // The spinning thread ran for most of the 20 ms; this one, asleep, hardly.
            assert!(spun > 5e-3, "spinner {spun} s");
            assert!(after.of(me).unwrap() - before.of(me).unwrap() < spun / 2.0);
        });
    }
}
