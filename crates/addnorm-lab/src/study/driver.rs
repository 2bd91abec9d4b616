//! The demo worker: claims each part (A, Fig. 3, Lemma 2, D) and each run of B and C in
//! `--out`, computes what no live worker holds, and writes the report once every part is
//! finished.
//!
//! ```text
//! parts     probe.json, figure_3.json, figure_3_paper_width.json,
//!           figure_3_extension.json, figure_3_resi_dual.json, lemma_2.json,
//!           early_gradients.json, model_update.json, sgd_update.json (super::parts);
//!           runs/<name>/ (B, C, the Fig. 2 grid and the `--full` grids, summary.json each)
//! outcome   computed parts; the report if all were finished; the parts others hold
//! ```
//!
//! # Shapes
//! Not applicable: a driver over [`crate::experiments::probe`] and [`crate::runner::worker`].

use std::path::Path;
use std::time::{Duration, Instant};

use addnorm::NormAutodiffBackend;
use addnorm::backend::Kind;

use super::claims::evaluate_claims;
use super::config::{DemoConfig, all_training_runs, divergence_run_name, run_name, training_runs};
use super::parts::Part;
use super::record::DemoReport;
use crate::error::{LabError, read_json, write_json};
use crate::experiments::depth_grid::DepthGridRun;
use crate::experiments::norm_kind::NormKind;
use crate::experiments::probe::ProbeReport;
use crate::experiments::proxies::ProxyRun;
use crate::experiments::proxy_grid::ProxyGridRun;
use crate::experiments::sweep::{SweepRun, summarize};
use crate::experiments::train::TrainConfig;
use crate::experiments::warmup_grid::WarmupGridRun;
use crate::runner::jobs::JobPlan;
use crate::runner::lease::Holder;
use crate::runner::worker::{RunState, claim_and_compute, finished, still_held, train_claimed};

/// How a demo worker runs: progress, concurrency, and when another worker's claim is stale.
#[derive(Clone, Copy, Debug)]
pub struct DemoOptions {
    /// Show progress bars.
    pub progress: bool,
    /// Runs (and probe cells) at once, threads per run.
    pub plan: JobPlan,
    /// A claim whose heartbeat is older than this is taken over.
    pub stale_after: Duration,
    /// Write the report once every part is finished. A helper process of `addnorm demo
    /// --processes` leaves it to the worker that started it, which waits for its helpers,
    /// so two processes never write it at once.
    pub writes_report: bool,
}

impl DemoOptions {
    /// The default plan for `backend`, progress bars as `progress` says; writes the report.
    pub fn new(backend: Kind, progress: bool) -> Self {
        Self {
            progress,
            plan: JobPlan::new(None, None, backend),
            stale_after: Duration::from_secs(300),
            writes_report: true,
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
    let options = DemoOptions::new(config.backend(), progress);
    Ok(demo_with::<B>(config, out, &options, device)?
        .report
        .map(|r| *r))
}

/// A JSON part, claimed: computed here (`Done { trained: true }`) unless its file is
/// written (`Done { trained: false }`) or a live worker holds it.
fn claimed_part<B: NormAutodiffBackend>(
    part: Part,
    config: &DemoConfig,
    out: &Path,
    options: &DemoOptions,
    device: &B::Device,
) -> Result<RunState, LabError> {
    let path = part.path(out);
    claim_and_compute(
        out,
        part.name(),
        options.stale_after,
        || path.exists(),
        || part.compute::<B>(config, out, (options.progress, options.plan), device),
    )
}

/// Experiments B and C and the Fig. 2 grid: trains every run no live worker holds, `plan.jobs` at a time;
/// returns each run's state, in report order.
fn train_unclaimed<B: NormAutodiffBackend>(
    runs: &[(String, TrainConfig)],
    out: &Path,
    options: &DemoOptions,
    device: &B::Device,
) -> Result<Vec<RunState>, LabError> {
    let bar = crate::runner::jobs::runs_bar(runs.len(), "B, C, Fig. 2: train", options.progress);
    let states = crate::runner::jobs::run_jobs(runs, options.plan, |(name, tc)| {
        let state = train_claimed::<B>(out, name, tc, options.stale_after, device);
        bar.set_message(name.clone());
        bar.inc(1);
        state
    })
    .into_iter()
    .collect::<Result<Vec<RunState>, LabError>>()?;
    bar.finish_and_clear();
    Ok(states)
}

/// The summary of a finished run, as a [`SweepRun`].
fn finished_run(
    out: &Path,
    name: &str,
    tc: &TrainConfig,
    norm: NormKind,
) -> Result<SweepRun, LabError> {
    let dir = out.join("runs").join(name);
    finished(&dir, tc.steps)
        .map(|summary| summarize(tc, norm, &summary))
        .ok_or_else(|| LabError::Invalid(format!("run {} is not finished", dir.display())))
}

/// Experiment B's summaries, in report order; every run must be finished.
fn finished_runs(config: &DemoConfig, out: &Path) -> Result<Vec<SweepRun>, LabError> {
    training_runs(config)
        .into_iter()
        .map(|(p, n, w, s)| {
            finished_run(
                out,
                &run_name(p, n, w, s),
                &config.train_config(p, n, w, s),
                n,
            )
        })
        .collect()
}

/// Experiment C's summaries, in report order; every run must be finished.
fn finished_proxies(config: &DemoConfig, out: &Path) -> Result<Vec<ProxyRun>, LabError> {
    let c = &config.proxies;
    c.runs()
        .into_iter()
        .map(|(variant, lr, seed)| {
            let tc = c.train_config(variant, lr, seed);
            let run = finished_run(
                out,
                &crate::experiments::proxies::run_name(variant, lr, seed),
                &tc,
                NormKind::Layer,
            )?;
            Ok(ProxyRun { variant, run })
        })
        .collect()
}

/// The Fig. 2 grid's summaries, by cell then seed; every run must be finished.
fn finished_grid(config: &DemoConfig, out: &Path) -> Result<Vec<WarmupGridRun>, LabError> {
    config
        .grid_runs()
        .into_iter()
        .map(|(cell, seed)| {
            let tc = config.grid_train_config(cell, seed);
            let name = config.grid_run_name(cell, seed);
            let run = finished_run(out, &name, &tc, NormKind::Layer)?;
            Ok(WarmupGridRun { cell, run })
        })
        .collect()
}

/// C's grid summaries, in run order; every run must be finished.
fn finished_proxy_grid(config: &DemoConfig, out: &Path) -> Result<Vec<ProxyGridRun>, LabError> {
    let (grid, c) = (&config.proxy_grid, &config.proxies);
    grid.runs(c)
        .into_iter()
        .map(|run| {
            let (size, variant, lr, seed) = run;
            let name = crate::experiments::proxy_grid::run_name(size, variant, lr, seed);
            let tc = grid.train_config(c, run);
            let run = finished_run(out, &name, &tc, NormKind::Layer)?;
            Ok(ProxyGridRun { size, variant, run })
        })
        .collect()
}

/// The divergence grid's summaries, in run order; every run must be finished.
fn finished_divergence(config: &DemoConfig, out: &Path) -> Result<Vec<SweepRun>, LabError> {
    config
        .divergence_runs()
        .into_iter()
        .map(|(p, lr, s)| {
            let tc = config.divergence_config(p, lr, s);
            finished_run(out, &divergence_run_name(p, lr, s), &tc, NormKind::Layer)
        })
        .collect()
}

/// CaiT's depth grid's summaries, by cell then seed; every run must be finished.
fn finished_depth_grid(config: &DemoConfig, out: &Path) -> Result<Vec<DepthGridRun>, LabError> {
    config
        .depth_grid_runs()
        .into_iter()
        .map(|(cell, seed)| {
            let tc = config.depth_grid_train_config(cell, seed);
            let name = config.depth_grid_run_name(cell, seed);
            let run = finished_run(out, &name, &tc, NormKind::Layer)?;
            Ok(DepthGridRun { cell, run })
        })
        .collect()
}

/// Reads every part and run of a finished demo in `out` into its report.
fn read_report(config: &DemoConfig, out: &Path, wall_seconds: f64) -> Result<DemoReport, LabError> {
    let probe: ProbeReport = read_json(&Part::Probe.path(out))?;
    let runs = finished_runs(config, out)?;
    let mut report = DemoReport {
        config: config.clone(),
        probe,
        runs,
        figure_3: read_json(&Part::Figure3.path(out))?,
        figure_3_paper_width: read_json(&Part::Figure3PaperWidth.path(out))?,
        figure_3_extension: read_json(&Part::Figure3Extension.path(out))?,
        figure_3_resi_dual: read_json(&Part::Figure3ResiDual.path(out))?,
        lemma_2: read_json(&Part::Lemma2.path(out))?,
        early_gradients: read_json(&Part::EarlyGradients.path(out))?,
        warmup_grid: finished_grid(config, out)?,
        proxies: finished_proxies(config, out)?,
        proxy_grid: finished_proxy_grid(config, out)?,
        divergence_grid: finished_divergence(config, out)?,
        depth_grid: finished_depth_grid(config, out)?,
        model_update: read_json(&Part::ModelUpdate.path(out))?,
        sgd_update: read_json(&Part::SgdUpdate.path(out))?,
        claims: vec![],
        registry_hash: super::registry::Registry::content_hash(),
        wall_seconds,
    };
    report.claims = evaluate_claims(&report);
    Ok(report)
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
    demo_since::<B>(config, out, options, device, Instant::now())
}

/// [`demo_with`], with the report's wall time counted from `started`: a worker that waited
/// for its helper processes (`addnorm demo --processes`) and then writes the report in a
/// second pass reports the time since its first.
///
/// # Errors
/// If `out` cannot be written.
pub fn demo_since<B>(
    config: &DemoConfig,
    out: &Path,
    options: &DemoOptions,
    device: &B::Device,
    started: Instant,
) -> Result<DemoOutcome, LabError>
where
    B: NormAutodiffBackend,
{
    let mut states = vec![];
    for part in Part::ALL {
        states.push(claimed_part::<B>(part, config, out, options, device)?);
    }
    let runs = all_training_runs(config);
    states.extend(train_unclaimed::<B>(&runs, out, options, device)?);
    let names = Part::ALL
        .iter()
        .map(|p| p.name().to_string())
        .chain(runs.iter().map(|(name, _)| name.clone()));
    let computed = names
        .zip(&states)
        .filter(|(_, s)| matches!(s, RunState::Done { trained: true }))
        .map(|(name, _)| name)
        .collect();
    // A part held when this worker reached it may have been finished since.
    let steps: std::collections::HashMap<&str, usize> = runs
        .iter()
        .map(|(name, tc)| (name.as_str(), tc.steps))
        .collect();
    let held = still_held(states, |name| match Part::from_name(name) {
        Some(part) => part.path(out).exists(),
        None => finished(&out.join("runs").join(name), steps[name]).is_some(),
    });
    if !held.is_empty() || !options.writes_report {
        return Ok(DemoOutcome {
            computed,
            report: None,
            held,
        });
    }
    let report = read_report(config, out, started.elapsed().as_secs_f64())?;
    super::plots::draw_plots(&report, out)?;
    write_json(&out.join("demo.json"), &report)?;
    std::fs::write(out.join("report.md"), super::markdown::markdown(&report))
        .map_err(|e| LabError::io(out.join("report.md"), e))?;
    std::fs::write(
        out.join("claims.md"),
        super::claim::summary_table(&report.claims),
    )
    .map_err(|e| LabError::io(out.join("claims.md"), e))?;
    Ok(DemoOutcome {
        computed,
        report: Some(Box::new(report)),
        held: vec![],
    })
}
