//! The demo worker: claims experiment A and each run of B in `--out`, computes what no
//! live worker holds, and writes the report once every part is finished.
//!
//! ```text
//! parts     probe (A, written as probe.json), runs/<name>/ (B, summary.json each)
//! outcome   computed parts; the report if all were finished; the parts others hold
//! ```
//!
//! # Shapes
//! Not applicable: a driver over [`crate::probe`] and [`crate::worker`].

use std::path::Path;
use std::time::{Duration, Instant};

use addnorm::NormAutodiffBackend;
use addnorm::backend::Kind;

use super::claims::evaluate_claims;
use super::config::{DemoConfig, label, run_name, training_runs};
use super::report::DemoReport;
use crate::error::{LabError, read_json, write_json};
use crate::jobs::JobPlan;
use crate::lease::Holder;
use crate::probe::{ProbeReport, probe_pairs};
use crate::sweep::{SweepRun, summarize};
use crate::worker::{RunState, claim_and_compute, finished, still_held, train_claimed};

/// How a demo worker runs: progress, concurrency, and when another worker's claim is stale.
#[derive(Clone, Copy, Debug)]
pub struct DemoOptions {
    /// Show progress bars.
    pub progress: bool,
    /// Runs (and probe cells) at once, threads per run.
    pub plan: JobPlan,
    /// A claim whose heartbeat is older than this is taken over.
    pub stale_after: Duration,
}

impl DemoOptions {
    /// The default plan for `backend`, progress bars as `progress` says.
    pub fn new(backend: Kind, progress: bool) -> Self {
        Self {
            progress,
            plan: JobPlan::new(None, None, backend),
            stale_after: Duration::from_secs(300),
        }
    }
}

/// What a demo worker did and ended with.
#[derive(Debug, Default)]
pub struct DemoOutcome {
    /// The parts this worker computed: `probe` (experiment A) and run names (B).
    pub computed: Vec<String>,
    /// The report, written by this worker because every part was finished.
    pub report: Option<Box<DemoReport>>,
    /// The parts other workers still held when this one finished (name, holder).
    pub held: Vec<(String, Holder)>,
}

/// Runs both experiments with the default options and writes every output into `out`;
/// `None` if other workers on `out` still hold parts of it.
///
/// # Errors
/// If `out` cannot be written.
pub fn demo<B>(
    config: &DemoConfig,
    out: &Path,
    progress: bool,
    device: &B::Device,
) -> Result<Option<DemoReport>, LabError>
where
    B: NormAutodiffBackend,
{
    let options = DemoOptions::new(config.backend, progress);
    Ok(demo_with::<B>(config, out, &options, device)?
        .report
        .map(|r| *r))
}

/// Experiment A, claimed as the part named `probe`: computed here (`Done { trained:
/// true }`) unless `probe.json` is written (`Done { trained: false }`) or a live worker
/// holds it.
fn claimed_probe<B: NormAutodiffBackend>(
    config: &DemoConfig,
    out: &Path,
    options: &DemoOptions,
    device: &B::Device,
) -> Result<RunState, LabError> {
    let path = out.join("probe.json");
    claim_and_compute(
        out,
        PROBE_PART,
        options.stale_after,
        || path.exists(),
        || {
            let (pairs, plan) = (&config.pairs, options.plan);
            let report = probe_pairs::<B>(
                &config.probe,
                pairs,
                "A: probe",
                options.progress,
                plan,
                device,
            );
            write_json(&path, &report)
        },
    )
}

/// The claim name of experiment A.
const PROBE_PART: &str = "probe";

/// Experiment B: trains every run no live worker holds, `plan.jobs` at a time; returns
/// each run's state, in report order.
fn train_unclaimed<B: NormAutodiffBackend>(
    config: &DemoConfig,
    out: &Path,
    options: &DemoOptions,
    device: &B::Device,
) -> Result<Vec<RunState>, LabError> {
    let runs = training_runs(config);
    let bar = crate::jobs::runs_bar(runs.len(), "B: train", options.progress);
    let states = crate::jobs::run_jobs(&runs, options.plan, |&(p, n, w, s)| {
        let tc = config.train_config(p, n, w, s);
        let name = run_name(p, n, w, s);
        let state = train_claimed::<B>(out, &name, &tc, options.stale_after, device);
        bar.set_message(format!("{} warm-up {w}", label(p, n)));
        bar.inc(1);
        state
    })
    .into_iter()
    .collect::<Result<Vec<RunState>, LabError>>()?;
    bar.finish_and_clear();
    Ok(states)
}

/// Experiment B's summaries, in report order; every run must be finished.
fn finished_runs(config: &DemoConfig, out: &Path) -> Result<Vec<SweepRun>, LabError> {
    training_runs(config)
        .into_iter()
        .map(|(p, n, w, s)| {
            let tc = config.train_config(p, n, w, s);
            let dir = out.join("runs").join(run_name(p, n, w, s));
            finished(&dir, tc.steps)
                .map(|summary| summarize(&tc, n, &summary))
                .ok_or_else(|| LabError::Invalid(format!("run {} is not finished", dir.display())))
        })
        .collect()
}

/// Runs this worker's share of both experiments in `out` (any number of workers may share
/// it: each probe and training run is claimed before it is computed), then, once every
/// part is finished, writes the report and plots.
///
/// # Errors
/// If `out` cannot be written.
pub fn demo_with<B>(
    config: &DemoConfig,
    out: &Path,
    options: &DemoOptions,
    device: &B::Device,
) -> Result<DemoOutcome, LabError>
where
    B: NormAutodiffBackend,
{
    let started = Instant::now();
    let mut states = vec![claimed_probe::<B>(config, out, options, device)?];
    states.extend(train_unclaimed::<B>(config, out, options, device)?);
    let names = std::iter::once(PROBE_PART.to_string()).chain(
        training_runs(config)
            .into_iter()
            .map(|(p, n, w, s)| run_name(p, n, w, s)),
    );
    let computed = names
        .zip(&states)
        .filter(|(_, s)| matches!(s, RunState::Done { trained: true }))
        .map(|(name, _)| name)
        .collect();
    // A part held when this worker reached it may have been finished since.
    let probe_path = out.join("probe.json");
    let held = still_held(states, |name| {
        if name == PROBE_PART {
            probe_path.exists()
        } else {
            finished(&out.join("runs").join(name), config.steps).is_some()
        }
    });
    if !held.is_empty() {
        return Ok(DemoOutcome {
            computed,
            report: None,
            held,
        });
    }
    let probe: ProbeReport = read_json(&probe_path)?;
    let runs = finished_runs(config, out)?;
    let claims = evaluate_claims(config, &probe, &runs);
    let report = DemoReport {
        config: config.clone(),
        probe,
        runs,
        claims,
        wall_seconds: started.elapsed().as_secs_f64(),
    };
    super::plots::draw_plots(&report, out)?;
    write_json(&out.join("demo.json"), &report)?;
    std::fs::write(out.join("report.md"), super::markdown::markdown(&report))
        .map_err(|e| LabError::io(out.join("report.md"), e))?;
    Ok(DemoOutcome {
        computed,
        report: Some(Box::new(report)),
        held: vec![],
    })
}
