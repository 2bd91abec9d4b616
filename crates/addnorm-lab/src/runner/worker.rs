//! One run of a shared directory, trained by whichever worker claims it first.
//!
//! `sweep` and `demo` both lay their training runs out as `<out>/runs/<name>/` and train
//! each through [`train_claimed`]:
//!
//! ```text
//! finished?  → done (nothing to do)
//! claim      → held by a live worker: report it, go on with the next run
//!            → acquired (or taken over from a dead one): finished meanwhile? done.
//!              Otherwise train, resuming from the run's checkpoint, then release.
//! ```
//!
//! A run is finished when its `summary.json` is complete (all steps, or diverged),
//! whatever the claims say. See [`crate::runner::lease`] for the claim protocol.
//!
//! # Shapes
//! Not applicable: a driver over [`crate::experiments::train`](mod@crate::experiments::train).

use std::path::Path;
use std::time::Duration;

use addnorm::NormAutodiffBackend;

use super::lease::{Acquisition, Holder, Lease};
use crate::error::{LabError, read_json};
use crate::experiments::train::{TrainConfig, TrainOptions, TrainSummary, train};

/// The summary of the run in `dir`, if it is finished (all `steps` done, or diverged).
pub fn finished(dir: &Path, steps: usize) -> Option<TrainSummary> {
    let summary: TrainSummary = read_json(&dir.join("summary.json")).ok()?;
    (summary.diverged.is_some() || summary.steps_completed == steps).then_some(summary)
}

/// What [`train_claimed`] found or did.
#[derive(Debug)]
pub enum RunState {
    /// The run is finished; `trained` says whether this call trained it.
    Done {
        /// This worker trained (or finished) the run.
        trained: bool,
    },
    /// Another live worker holds the run (its name and the holder).
    Held(String, Holder),
}

/// With `ADDNORM_LOG_RUNS=1`, says on standard output which runs this worker trained: a
/// worker's log on a shared directory (and how the tests check that every run is trained
/// once). Off by default: a demo trains hundreds of runs, and the progress lines count them.
fn log_trained(name: &str) {
    if std::env::var_os("ADDNORM_LOG_RUNS").is_some_and(|v| v == "1") {
        println!("trained {name}");
    }
}

/// The claim protocol for any part `name` of a shared `out`: nothing to do if `is_done`;
/// otherwise claim it, check `is_done` again (another worker may have finished it between
/// the check and the claim), and run `compute` while holding the claim.
///
/// # Errors
/// If the claim cannot be written, or `compute` fails.
pub fn claim_and_compute(
    out: &Path,
    name: &str,
    stale_after: Duration,
    is_done: impl Fn() -> bool,
    compute: impl FnOnce() -> Result<(), LabError>,
) -> Result<RunState, LabError> {
    if is_done() {
        return Ok(RunState::Done { trained: false });
    }
    let _lease = match Lease::acquire(&out.join("claims"), name, stale_after)? {
        Acquisition::Held(holder) => return Ok(RunState::Held(name.to_string(), holder)),
        Acquisition::Acquired(lease) => lease,
    };
    if is_done() {
        return Ok(RunState::Done { trained: false });
    }
    compute()?;
    Ok(RunState::Done { trained: true })
}

/// Trains run `name` (`<out>/runs/<name>/`, with `config`) unless it is finished or a live
/// worker holds it; a claim older than `stale_after` is taken over and the run resumed.
///
/// # Errors
/// If the claim or the run's files cannot be written or read.
pub fn train_claimed<B: NormAutodiffBackend>(
    out: &Path,
    name: &str,
    config: &TrainConfig,
    stale_after: Duration,
    device: &B::Device,
) -> Result<RunState, LabError> {
    let dir = out.join("runs").join(name);
    let is_done = || finished(&dir, config.steps).is_some();
    claim_and_compute(out, name, stale_after, is_done, || {
        let options = TrainOptions {
            resume: true,
            ..TrainOptions::default()
        };
        train::<B>(config, &dir, &options, device)?;
        log_trained(name);
        Ok(())
    })
}

/// The parts of `states` that were held by others when reached and are still not
/// finished (`is_finished` of the part's name).
pub fn still_held(
    states: Vec<RunState>,
    is_finished: impl Fn(&str) -> bool,
) -> Vec<(String, Holder)> {
    states
        .into_iter()
        .filter_map(|s| match s {
            RunState::Held(name, h) => Some((name, h)),
            RunState::Done { .. } => None,
        })
        .filter(|(name, _)| !is_finished(name))
        .collect()
}
