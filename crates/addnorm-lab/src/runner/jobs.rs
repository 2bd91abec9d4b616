//! Several independent runs at once in one process, each on its own rayon pool.
//!
//! Burn's ndarray backend runs its parallel kernels on whatever rayon pool is current, by
//! default the process-wide global pool of `cores` threads. Runs started on plain threads
//! would all queue their kernels on that one pool. Here each of the `jobs` worker threads
//! builds its own pool of `threads` threads and runs its runs inside it
//! (`ThreadPool::install`), so the budget is `jobs × threads ≈ cores` threads and no run
//! waits on another's kernels.
//!
//! A toy run keeps about one core busy whatever its thread count (its tensors are too
//! small to split), so the default is one job per core with one thread each.
//!
//! Results do not depend on the plan: each run seeds its initialization under
//! [`crate::experiments::train::seeded::init_model`]'s lock and draws its data from its own seeded streams.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use addnorm::backend::Kind;

use crate::runner::progress::Progress;

/// How many runs go at once, and how many rayon threads each run gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobPlan {
    /// Runs trained concurrently.
    pub jobs: usize,
    /// Rayon threads per run.
    pub threads: usize,
}

/// The machine's parallelism (1 if it cannot be read).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl JobPlan {
    /// `jobs` runs at once (default: one per core on ndarray, 1 on a GPU backend, whose
    /// runs share one device), each with `threads` rayon threads (default: cores / jobs,
    /// at least 1).
    pub fn new(jobs: Option<usize>, threads: Option<usize>, backend: Kind) -> Self {
        let jobs = jobs
            .unwrap_or(if backend == Kind::Ndarray { cores() } else { 1 })
            .max(1);
        let threads = threads.unwrap_or(cores() / jobs).max(1);
        Self { jobs, threads }
    }

    /// One run at a time on the whole machine.
    pub fn sequential() -> Self {
        Self::new(Some(1), None, Kind::Ndarray)
    }
}

/// Progress over `len` runs: a bar with runs done / total, elapsed time and ETA on a
/// terminal, a line every tenth off one ([`Progress`]); hidden unless `visible`.
pub fn runs_bar(len: usize, label: &str, visible: bool) -> Progress {
    Progress::new(len, label, "runs", visible)
}

/// Progress over `len` independent jobs, labelled `label`; hidden unless `visible`.
pub fn job_bar(len: usize, label: &str, visible: bool) -> Progress {
    Progress::new(len, label, "jobs", visible)
}

/// [`run_jobs`] with a progress bar labelled `label` (hidden unless `visible`) whose
/// message names each finished item with `name`.
pub fn run_jobs_with_bar<T: Sync, R: Send>(
    items: &[T],
    plan: JobPlan,
    (label, visible): (&str, bool),
    name: impl Fn(&T) -> String + Sync,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let bar = job_bar(items.len(), label, visible);
    let results = run_jobs(items, plan, |item| {
        let result = f(item);
        bar.set_message(name(item));
        bar.inc(1);
        result
    });
    bar.finish_and_clear();
    results
}

/// Runs `f` on a worker of a new rayon pool of `threads` threads (rayon's default, one per
/// core, when `None`), as `addnorm train` runs its one run.
///
/// The pool sets the run's thread count (`--threads`). Since issue 25 the kernels let the
/// calling thread take part in their parallel calls wherever it runs
/// (`addnorm::kernels::cpu::parallel`), so running on a worker is no longer what makes
/// the step fast; results are bit-identical whatever the thread count.
///
/// # Panics
/// If the pool cannot be built (the OS refuses threads).
pub fn on_own_pool<R: Send>(threads: Option<usize>, f: impl FnOnce() -> R + Send) -> R {
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(threads) = threads {
        builder = builder.num_threads(threads);
    }
    builder
        .build()
        .expect("a rayon pool of a few threads can be built")
        .install(f)
}

/// Applies `f` to every item, `plan.jobs` items at a time, each call inside its worker's
/// own rayon pool of `plan.threads` threads; the output keeps the input order.
pub fn run_jobs<T: Sync, R: Send>(
    items: &[T],
    plan: JobPlan,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    let worker = || {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(plan.threads)
            .build()
            .expect("a rayon pool of a few threads can be built");
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= items.len() {
                break;
            }
            let r = pool.install(|| f(&items[i]));
            results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
        }
    };
    std::thread::scope(|scope| {
        for _ in 0..plan.jobs.clamp(1, items.len().max(1)) {
            scope.spawn(worker);
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every item ran"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_runs_once_in_order_inside_a_pool_of_the_planned_size() {
        let plan = JobPlan {
            jobs: 3,
            threads: 2,
        };
        let out = run_jobs(&[1, 2, 3, 4, 5, 6, 7], plan, |&x| {
            (x * 10, rayon::current_num_threads())
        });
        assert_eq!(
            out.iter().map(|r| r.0).collect::<Vec<_>>(),
            [10, 20, 30, 40, 50, 60, 70]
        );
        assert!(out.iter().all(|r| r.1 == 2), "{out:?}");
    }

    #[test]
    fn the_default_plan_splits_the_cores() {
        let plan = JobPlan::new(Some(2), None, Kind::Ndarray);
        assert_eq!(plan.jobs, 2);
        assert_eq!(plan.threads, (cores() / 2).max(1));
        assert_eq!(JobPlan::new(None, Some(3), Kind::Wgpu).jobs, 1);
        assert_eq!(JobPlan::new(Some(0), Some(0), Kind::Ndarray).threads, 1);
    }
}
