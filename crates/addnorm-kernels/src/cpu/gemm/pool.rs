//! Whether `matrixmultiply` forks its products onto its own thread pool
//! ([`matrixmultiply_forks`]).
//!
//! It does when it was built with its `threading` feature and `MATMUL_NUM_THREADS` (else
//! the count of physical cores) is above 1. burn-ndarray's default feature `multi-threads`
//! turns `threading` on, and Cargo unifies features, so whether addnorm's products fork
//! depends on how the *user's* `Cargo.toml` names `burn`. Nothing in `matrixmultiply`'s API
//! says which, so the answer is observed: `sgemm` runs one product large enough to fork
//! ([`PROBE`]), and the CPU time the whole process spent during the call is compared with
//! the calling thread's own. A forked product keeps other threads busy meanwhile: on a
//! 2-core Zen 3 the process spent 1.58–1.72× the caller's CPU time with `threading`, and
//! 1.000× without it. The probe sleeps a millisecond after the call, because the process
//! clock counts another thread's time only once that thread stops running.
//!
//! The answer is found once per process, by three such probes of about a millisecond each,
//! two of which must agree. Either answer gives the same bits ([`super::serial`]); a wrong
//! one costs only speed. Where thread CPU clocks are not available (outside Linux), the
//! answer is no.
//!
//! # Formula
//! `forked ⇔ Δt_process ≥ 1.25·Δt_thread` over one `sgemm` call (the other threads spent at
//! least a quarter of the caller's time).
//!
//! # Shapes
//! The probe: `A: [192, 256]`, `B: [256, 192]`, `C: [192, 192]` (`m·k + k·n = 3·2¹⁵`).

use std::sync::OnceLock;

/// The probe's `[m, k, n]`: `m·k + k·n` three times the size from which `matrixmultiply`
/// forks, and `m ≥ 96`, so it splits its row blocks between two threads.
const PROBE: [usize; 3] = [256, 256, 256];

/// Whether this process's `matrixmultiply` runs products on its own pool (module docs);
/// found on the first call, then remembered.
pub fn matrixmultiply_forks() -> bool {
    static FORKS: OnceLock<bool> = OnceLock::new();
    *FORKS.get_or_init(|| (0..3).filter(|_| probe_forks()).count() >= 2)
}

/// One probe: `sgemm` on [`PROBE`], and [`forked`] on its CPU times.
fn probe_forks() -> bool {
    let [m, k, n] = PROBE;
    let (a, b, mut c) = (
        vec![0.5f32; m * k],
        vec![0.25f32; k * n],
        vec![0.0f32; m * n],
    );
    let (Some(thread0), Some(process0)) = (cpu_seconds(Clock::Thread), cpu_seconds(Clock::Process))
    else {
        return false;
    };
    // SAFETY: each pointer addresses its own live buffer of the stated row-major shape.
    unsafe {
        let (ap, bp, cp) = (a.as_ptr(), b.as_ptr(), c.as_mut_ptr());
        matrixmultiply::sgemm(
            m, k, n, 1.0, ap, k as isize, 1, bp, n as isize, 1, 0.0, cp, n as isize, 1,
        );
    }
    // The process clock counts another thread's time when that thread stops running: let
    // a pool worker that has just finished its part go back to waiting.
    std::thread::sleep(std::time::Duration::from_millis(1));
    let (Some(thread1), Some(process1)) = (cpu_seconds(Clock::Thread), cpu_seconds(Clock::Process))
    else {
        return false;
    };
    std::hint::black_box(&c);
    forked(thread1 - thread0, process1 - process0)
}

/// Whether a call on which the caller spent `thread` seconds of CPU, and the process
/// `process`, ran partly on other threads (module docs' formula).
fn forked(thread: f64, process: f64) -> bool {
    thread > 0.0 && process >= 1.25 * thread
}

/// The CPU clocks [`cpu_seconds`] reads.
#[derive(Clone, Copy)]
enum Clock {
    /// The calling thread's CPU time.
    Thread,
    /// The whole process's CPU time, every thread's summed.
    Process,
}

/// The CPU time `clock` has counted, in seconds; `None` where it cannot be read.
#[cfg(target_os = "linux")]
fn cpu_seconds(clock: Clock) -> Option<f64> {
    let id = match clock {
        Clock::Thread => libc::CLOCK_THREAD_CPUTIME_ID,
        Clock::Process => libc::CLOCK_PROCESS_CPUTIME_ID,
    };
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a live timespec that the call writes.
    let status = unsafe { libc::clock_gettime(id, &mut now) };
    (status == 0).then_some(now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9)
}

/// The CPU time `clock` has counted: never readable here.
#[cfg(not(target_os = "linux"))]
fn cpu_seconds(_clock: Clock) -> Option<f64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_forked_when_other_threads_spent_a_quarter_of_the_callers_time() {
        // matrixmultiply splitting the probe between two threads (measured 1.58–1.72×).
        assert!(forked(1.0e-3, 1.6e-3));
        assert!(forked(1.0e-3, 1.25e-3));
        // One thread, with a little work elsewhere in the process meanwhile.
        assert!(!forked(1.0e-3, 1.0e-3));
        assert!(!forked(1.0e-3, 1.2e-3));
        // A clock that did not move says nothing.
        assert!(!forked(0.0, 1.0e-3));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_clocks_count_this_threads_work() {
        let (thread0, process0) = (cpu_seconds(Clock::Thread), cpu_seconds(Clock::Process));
        let mut x = 0.0f64;
        for i in 0..3_000_000 {
            x += std::hint::black_box(i as f64).sqrt();
        }
        std::hint::black_box(x);
        let thread = cpu_seconds(Clock::Thread).unwrap() - thread0.unwrap();
        let process = cpu_seconds(Clock::Process).unwrap() - process0.unwrap();
        assert!(thread > 0.0, "the thread clock did not move");
        assert!(
            process >= thread * 0.999,
            "process {process} s < thread {thread} s"
        );
    }
}
