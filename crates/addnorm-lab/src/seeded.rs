//! Reproducible model initialization, and running independent jobs on several threads.
//!
//! Burn's backends keep one global random generator, and parameters are initialized lazily
//! (on first use). Two runs on two threads would therefore draw each other's random numbers.
//! [`init_model`] seeds, builds and materializes every parameter under one process-wide
//! lock, so a run's initial weights depend on its seed alone, whatever runs beside it.
//!
//! # Shapes
//! Not applicable.

use std::sync::Mutex;

use addnorm::nn::{TransformerStack, TransformerStackConfig};
use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::{Tensor, backend::Backend};
use indicatif::{ProgressBar, ProgressStyle};

static SEED_LOCK: Mutex<()> = Mutex::new(());

/// Forces the lazy initialization of every float parameter.
struct Materialize;

impl<B: Backend> ModuleVisitor<B> for Materialize {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let _ = param.val();
    }
}

/// Builds `config` with the backend seeded to `seed`, all parameters drawn before returning.
pub fn init_model<B: Backend>(
    config: &TransformerStackConfig,
    seed: u64,
    device: &B::Device,
) -> TransformerStack<B> {
    let _guard = SEED_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    B::seed(device, seed);
    let model = config.init::<B>(device);
    model.visit(&mut Materialize);
    model
}

/// The number of worker threads for independent CPU runs: the machine's parallelism for
/// ndarray (each small run is single-threaded), 1 for a GPU backend.
pub fn workers_for(backend: &str) -> usize {
    if backend == "ndarray" {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        1
    }
}

/// Applies `f` to every item on `workers` threads, keeping the input order in the output.
pub fn parallel_map<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..workers.clamp(1, items.len().max(1)) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= items.len() {
                        break;
                    }
                    let r = f(&items[i]);
                    results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.expect("every item ran"))
        .collect()
}

/// Reseeds the backend's generator (for dropout) under the same lock as [`init_model`].
pub fn reseed<B: Backend>(device: &B::Device, seed: u64) {
    let _guard = SEED_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    B::seed(device, seed);
}

/// A progress bar over `len` independent jobs, labelled `label`; hidden unless `visible`.
pub fn job_bar(len: usize, label: &str, visible: bool) -> ProgressBar {
    counted_bar(len, label, "", visible)
}

/// A progress bar over `len` items: `label`, elapsed time, the bar, `done/len`, then
/// `counts` (more indicatif fields, such as `" runs, ETA {eta}"`) and the message; hidden
/// unless `visible`.
pub fn counted_bar(len: usize, label: &str, counts: &str, visible: bool) -> ProgressBar {
    if !visible {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{label} [{{elapsed_precise}}] {{bar:28.cyan/blue}} {{pos}}/{{len}}{counts} {{msg}}"
        ))
        .expect("valid template"),
    );
    bar
}
