//! `addnorm demo`: quick versions of experiments A and B, checked against the published
//! claims, with a Markdown report and PNG plots.
//!
//! ```text
//! A  probe at init      (post, layer) (pre, layer) (pre, rms) (pre, dyt) (none, identity)
//!                       × depths 6, 12, 24, 48 × 3 seeds, W^Q = W^K = 0
//! B  training           the same five × warm-up {0, 100} × 3 seeds at LR 1e-2, depth 6
//! claims                Theorem 1's slopes, Fig. 3's per-layer profiles, Lemma 2's band,
//!                       §3.2's warm-up finding; each marked reproduced or not
//! ```
//!
//! Outputs in `--out`: `config.json`, `demo.json`, `report.md`, `gradient_per_layer.png`,
//! `last_layer_vs_depth.png`, `loss_curves.png`, `residual_growth.png`, `probe.json`,
//! and one run directory per training run under `runs/`.
//!
//! # Workers
//! Any number of `addnorm demo` processes may share one `--out` (one machine, or several
//! over NFS). Experiment A (the part named `probe`) and each run of B are claimed before
//! they are computed ([`crate::worker`], [`crate::lease`]); a dead worker's part is taken
//! over. The worker that finds every part finished writes the report; the others name the
//! parts still held and exit 0. Rerunning the demo into the same `--out` reuses what is
//! finished. Within a process, `--jobs` runs (and probe cells) go at once.
//!
//! # Shapes
//! Not applicable: a driver over [`crate::probe`] and [`crate::train`](mod@crate::train).

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use addnorm::NormAutodiffBackend;
use addnorm::nn::Placement;
use serde::{Deserialize, Serialize};

use crate::config_diff::{Difference, first_difference};
use crate::error::{LabError, read_json, write_json};
use crate::grid::{NormKind, stack_config};
use crate::jobs::JobPlan;
use crate::lease::{self, Holder, Lease};
use crate::plot::{Band, Chart, Series, save_png};
use crate::probe::{ProbeConfig, ProbeReport, ProbeResult, probe_pairs};
use crate::sweep::{SweepRun, summarize};
use crate::task::{Task, TaskKind};
use crate::train::TrainConfig;
use crate::worker::{RunState, finished, still_held, train_claimed};

/// What the demo runs. Saved as `config.json`.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct DemoConfig {
    /// Experiment A's model and depths (its placements/norms list every pair probed).
    pub probe: ProbeConfig,
    /// The (placement, norm) pairs of both experiments.
    pub pairs: Vec<(Placement, NormKind)>,
    /// Experiment B's training runs, one per pair × warm-up × seed.
    pub train_depth: usize,
    /// Experiment B's model width.
    pub train_d_model: usize,
    /// The one high learning rate of experiment B.
    pub learning_rate: f64,
    /// Warm-up lengths compared.
    pub warmups: Vec<usize>,
    /// Steps per training run.
    pub steps: usize,
    /// Seeds of both experiments.
    pub seeds: Vec<u64>,
    /// The backend.
    pub backend: String,
}

impl DemoConfig {
    /// The quick default: about 3 minutes on 2 CPU cores with ndarray.
    pub fn quick(backend: &str, seed: u64) -> Self {
        let task = Task::new(TaskKind::Reverse, 8, 10);
        let pairs = vec![
            (Placement::Post, NormKind::Layer),
            (Placement::Pre, NormKind::Layer),
            (Placement::Pre, NormKind::Rms),
            (Placement::Pre, NormKind::Dyt),
            (Placement::None, NormKind::Identity),
        ];
        let seeds: Vec<u64> = (seed..seed + 3).collect();
        Self {
            probe: ProbeConfig {
                task,
                placements: vec![Placement::Post, Placement::Pre, Placement::None],
                norms: vec![
                    NormKind::Layer,
                    NormKind::Rms,
                    NormKind::Dyt,
                    NormKind::Identity,
                ],
                depths: vec![6, 12, 24, 48],
                seeds: seeds.clone(),
                d_model: 64,
                n_heads: 4,
                d_ff: 256,
                batch_size: 16,
                zero_init_query_key: true,
                backend: backend.into(),
            },
            pairs,
            train_depth: 6,
            train_d_model: 32,
            learning_rate: 1e-2,
            warmups: vec![0, 100],
            steps: 250,
            seeds,
            backend: backend.into(),
        }
    }

    /// The same demo with `n` seeds (from the first seed on) in both experiments.
    pub fn with_seeds(mut self, n: usize) -> Self {
        let first = self.seeds.first().copied().unwrap_or(0);
        self.seeds = (first..first + n as u64).collect();
        self.probe.seeds = self.seeds.clone();
        self
    }

    /// The training configuration of one experiment-B run.
    pub fn train_config(
        &self,
        placement: Placement,
        norm: NormKind,
        warmup: usize,
        seed: u64,
    ) -> TrainConfig {
        let model = stack_config(
            self.train_d_model,
            2,
            4 * self.train_d_model,
            self.train_depth,
            placement,
            norm,
        );
        let mut config = TrainConfig::new(self.probe.task, model);
        config.learning_rate = self.learning_rate;
        config.warmup_steps = warmup;
        config.steps = self.steps;
        config.seed = seed;
        config.eval_every = 25;
        config.stats_every = self.steps;
        config.checkpoint_every = self.steps;
        config.validation_size = 128;
        config.backend = self.backend.clone();
        config
    }
}

/// The demo's default seed count for `plan`: 3 seeds per job at 80% efficiency,
/// `⌊12·jobs/5⌋`, kept between 3 and 10 (3 at one job, 4 at two, 9 at four).
///
/// Both experiments run `plan.jobs` cells at once, and the time saved goes to more seeds,
/// with a margin: on 2 cores, 5 seeds took 309 s against the 300 s budget
/// (`cargo bench --bench demo_time`; PERFORMANCE.md of the lab).
pub fn default_seeds(plan: JobPlan) -> usize {
    (12 * plan.jobs / 5).clamp(3, 10)
}

/// One published claim and what we measured.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Claim {
    /// Where the claim comes from.
    pub source: String,
    /// The claim.
    pub statement: String,
    /// What was measured.
    pub measured: String,
    /// Whether the measurement reproduces it.
    pub reproduced: bool,
}

/// What `demo.json` holds.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct DemoReport {
    /// The configuration.
    pub config: DemoConfig,
    /// Experiment A.
    pub probe: ProbeReport,
    /// Experiment B's runs.
    pub runs: Vec<SweepRun>,
    /// The claims checked.
    pub claims: Vec<Claim>,
    /// Wall-clock seconds.
    pub wall_seconds: f64,
}

fn label(p: Placement, n: NormKind) -> String {
    format!("{p}-{}", n.name())
}

fn geometric_mean(v: impl IntoIterator<Item = f64>) -> f64 {
    let logs: Vec<f64> = v.into_iter().filter(|x| *x > 0.0).map(f64::ln).collect();
    (logs.iter().sum::<f64>() / logs.len().max(1) as f64).exp()
}

/// Per-layer profile of one weight's gradient norm at `depth`, geometric mean over seeds.
/// The second feed-forward weight's gradient norms of a run.
fn w2(r: &ProbeResult) -> &Vec<f64> {
    &r.grad_norms.w_2
}

fn profile(
    results: &[ProbeResult],
    p: Placement,
    n: NormKind,
    depth: usize,
    pick: fn(&ProbeResult) -> &Vec<f64>,
) -> Vec<f64> {
    let runs: Vec<&ProbeResult> = results
        .iter()
        .filter(|r| r.placement == p.name() && r.norm == n.name() && r.depth == depth)
        .collect();
    if runs.is_empty() {
        return vec![];
    }
    let len = pick(runs[0]).len();
    (0..len)
        .map(|l| geometric_mean(runs.iter().map(|r| pick(r)[l])))
        .collect()
}

/// Fraction of runs of a (pair, warm-up) that reach ≥ 99% exact accuracy.
fn success_rate(runs: &[SweepRun], p: Placement, n: NormKind, warmup: usize) -> (usize, usize) {
    let group: Vec<&SweepRun> = runs
        .iter()
        .filter(|r| r.placement == p.name() && r.norm == n.name() && r.warmup == warmup)
        .collect();
    let ok = group
        .iter()
        .filter(|r| !r.diverged && r.final_exact_accuracy >= 0.99)
        .count();
    (ok, group.len())
}

/// Checks the claims against the measurements.
pub fn evaluate_claims(config: &DemoConfig, probe: &ProbeReport, runs: &[SweepRun]) -> Vec<Claim> {
    let mut claims = vec![];
    let slope = |p, n| probe.slope(p, n).unwrap_or(f64::NAN);
    let (post, pre) = (
        slope(Placement::Post, NormKind::Layer),
        slope(Placement::Pre, NormKind::Layer),
    );
    claims.push(Claim {
        source: "Xiong et al. 2020, Theorem 1".into(),
        statement:
            "Post-LN: the last layer's ‖∂L/∂W₂‖ does not shrink with depth (log-log slope ≈ 0)"
                .into(),
        measured: format!("slope {post:.2} over L = {:?}", config.probe.depths),
        reproduced: post.abs() <= 0.25,
    });
    claims.push(Claim {
        source: "Xiong et al. 2020, Theorem 1".into(),
        statement: "Pre-LN: the last layer's ‖∂L/∂W₂‖ scales as 1/√L (slope ≈ −0.5)".into(),
        measured: format!("slope {pre:.2}"),
        reproduced: (-0.75..=-0.3).contains(&pre),
    });
    // Fig. 3's per-layer profiles, at every probed depth.
    // The trend from the input to the output: mean of the last third of layers over the mean
    // of the first third (single layers are noisy).
    let ratio = |v: &[f64]| {
        let third = (v.len() / 3).max(1);
        let mean = |s: &[f64]| s.iter().sum::<f64>() / s.len().max(1) as f64;
        mean(&v[v.len() - third..]) / mean(&v[..third])
    };
    let spread = |v: &[f64]| {
        v.iter().copied().fold(0.0_f64, f64::max) / v.iter().copied().fold(f64::INFINITY, f64::min)
    };
    let profiles = |p| -> Vec<(usize, Vec<f64>)> {
        config
            .probe
            .depths
            .iter()
            .map(|&d| (d, profile(&probe.results, p, NormKind::Layer, d, w2)))
            .collect()
    };
    let post_profiles = profiles(Placement::Post);
    let pre_profiles = profiles(Placement::Pre);
    let listed = |v: &[(usize, Vec<f64>)], f: &dyn Fn(&[f64]) -> f64| -> String {
        let parts: Vec<String> = v
            .iter()
            .map(|(d, p)| format!("{:.2} (L={d})", f(p)))
            .collect();
        parts.join(", ")
    };
    claims.push(Claim {
        source: "Xiong et al. 2020, Fig. 3".into(),
        statement: "Post-LN: ‖∂L/∂W₂^(l)‖ grows toward the output layer".into(),
        measured: format!(
            "last third / first third of layers: {}",
            listed(&post_profiles, &ratio)
        ),
        reproduced: post_profiles.iter().all(|(_, p)| ratio(p) > 1.0),
    });
    claims.push(Claim {
        source: "Xiong et al. 2020, Fig. 3".into(),
        statement: "Pre-LN: ‖∂L/∂W₂^(l)‖ is about the same at every layer (max/min ≤ 2)".into(),
        measured: format!("max/min over layers: {}", listed(&pre_profiles, &spread)),
        reproduced: pre_profiles.iter().all(|(_, p)| spread(p) <= 2.0),
    });
    let deepest = *config.probe.depths.last().unwrap_or(&1);
    let ms = profile(
        &probe.results,
        Placement::Pre,
        NormKind::Layer,
        deepest,
        |r| &r.residual_mean_square,
    );
    let inside = ms
        .iter()
        .enumerate()
        .skip(1)
        .filter(|&(l, &m)| (1.0 + l as f64 / 2.0..=1.0 + 1.5 * l as f64).contains(&m))
        .count();
    let layers = ms.len().saturating_sub(1).max(1);
    claims.push(Claim {
        source: "Xiong et al. 2020, Lemma 2".into(),
        statement: "Pre-LN: 1 + l/2 ≤ E‖x_l‖²/d ≤ 1 + 3l/2".into(),
        measured: format!(
            "{inside}/{layers} layers inside the band at L = {deepest}; E‖x_L‖²/d = {:.1}",
            ms.last().copied().unwrap_or(f64::NAN)
        ),
        reproduced: inside as f64 >= 0.9 * layers as f64,
    });
    let lr = config.learning_rate;
    let (no_w, with_w) = (config.warmups[0], *config.warmups.last().unwrap_or(&0));
    let rate = |p, n, w| success_rate(runs, p, n, w);
    let (a, n1) = rate(Placement::Post, NormKind::Layer, no_w);
    let (b, n2) = rate(Placement::Post, NormKind::Layer, with_w);
    claims.push(Claim {
        source: "Xiong et al. 2020, §3.2 and Fig. 1".into(),
        statement: format!("Post-LN at LR {lr:e} fails without warm-up and trains with it"),
        measured: format!("≥99% exact: {a}/{n1} without warm-up, {b}/{n2} with {with_w} steps"),
        reproduced: 3 * a <= n1 && 3 * b >= 2 * n2,
    });
    for (p, n, source, statement) in [
        (
            Placement::Pre,
            NormKind::Layer,
            "Xiong et al. 2020, §4",
            "Pre-LN trains at the same LR without warm-up",
        ),
        (
            Placement::Pre,
            NormKind::Rms,
            "Zhang & Sennrich 2019",
            "Pre-RMSNorm trains like Pre-LN, without warm-up",
        ),
        (
            Placement::Pre,
            NormKind::Dyt,
            "Zhu et al. 2025",
            "Pre-DyT trains like Pre-LN, without warm-up",
        ),
    ] {
        let (k, total) = rate(p, n, no_w);
        claims.push(Claim {
            source: source.into(),
            statement: format!("{statement} (LR {lr:e})"),
            measured: format!("≥99% exact without warm-up: {k}/{total}"),
            reproduced: 3 * k >= 2 * total,
        });
    }
    let (k, total) = rate(Placement::None, NormKind::Identity, no_w);
    let (kw, tw) = rate(Placement::None, NormKind::Identity, with_w);
    claims.push(Claim {
        source: "motivation of every norm".into(),
        statement: format!(
            "Without normalization, a {}-layer model does not train at LR {lr:e}",
            config.train_depth
        ),
        measured: format!("≥99% exact: {k}/{total} without warm-up, {kw}/{tw} with"),
        reproduced: 3 * (k + kw) <= total + tw,
    });
    claims
}

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
    pub fn new(backend: &str, progress: bool) -> Self {
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
    let options = DemoOptions::new(&config.backend, progress);
    Ok(demo_with::<B>(config, out, &options, device)?
        .report
        .map(|r| *r))
}

/// Experiment B's runs: (placement, norm, warm-up, seed), in report order.
fn training_runs(config: &DemoConfig) -> Vec<(Placement, NormKind, usize, u64)> {
    config
        .pairs
        .iter()
        .flat_map(|&(p, n)| {
            config
                .warmups
                .iter()
                .flat_map(move |&w| config.seeds.iter().map(move |&s| (p, n, w, s)))
        })
        .collect()
}

/// The run directory name of one experiment-B run.
fn run_name(p: Placement, n: NormKind, w: usize, s: u64) -> String {
    format!("{}-w{w}-s{s}", label(p, n))
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
    if path.exists() {
        return Ok(RunState::Done { trained: false });
    }
    let _lease = match Lease::acquire(&out.join("claims"), PROBE_PART, options.stale_after)? {
        lease::Claim::Held(holder) => return Ok(RunState::Held(PROBE_PART.into(), holder)),
        lease::Claim::Acquired(lease) => lease,
    };
    if path.exists() {
        return Ok(RunState::Done { trained: false });
    }
    let (pairs, plan) = (&config.pairs, options.plan);
    let report = probe_pairs::<B>(
        &config.probe,
        pairs,
        "A: probe",
        options.progress,
        plan,
        device,
    );
    write_json(&path, &report)?;
    Ok(RunState::Done { trained: true })
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
    let held = still_held(states, out, |_| config.steps)
        .into_iter()
        .filter(|(name, _)| name != PROBE_PART || !probe_path.exists())
        .collect::<Vec<_>>();
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
    draw_plots(&report, out)?;
    write_json(&out.join("demo.json"), &report)?;
    std::fs::write(out.join("report.md"), markdown(&report))
        .map_err(|e| LabError::io(out.join("report.md"), e))?;
    Ok(DemoOutcome {
        computed,
        report: Some(Box::new(report)),
        held: vec![],
    })
}

fn draw_plots(report: &DemoReport, out: &Path) -> Result<(), LabError> {
    let config = &report.config;
    let probed: Vec<(Placement, NormKind)> = config
        .pairs
        .iter()
        .copied()
        .filter(|&(p, _)| p != Placement::None)
        .collect();
    let per_layer = |depth: usize| Chart {
        title: format!("‖∂L/∂W₂^(l)‖ at initialization, L = {depth}"),
        x_label: "layer l".into(),
        y_label: "gradient norm".into(),
        log_y: true,
        series: probed
            .iter()
            .enumerate()
            .map(|(i, &(p, n))| Series {
                label: label(p, n),
                points: profile(&report.probe.results, p, n, depth, w2)
                    .into_iter()
                    .enumerate()
                    .map(|(l, g)| ((l + 1) as f64, g))
                    .collect(),
                color: i,
                dashed: false,
            })
            .collect(),
        ..Chart::default()
    };
    let depths = &config.probe.depths;
    save_png(
        &out.join("gradient_per_layer.png"),
        &[
            per_layer(depths[0]),
            per_layer(*depths.last().unwrap_or(&depths[0])),
        ],
        640,
        440,
    )?;

    let mut series: Vec<Series> = vec![];
    for (i, &(p, n)) in probed.iter().enumerate() {
        if let Some(fit) = report
            .probe
            .slopes
            .iter()
            .find(|f| f.placement == p.name() && f.norm == n.name())
        {
            series.push(Series {
                label: format!("{} (slope {:.2})", label(p, n), fit.slope),
                points: fit.points.iter().map(|&(d, g)| (d as f64, g)).collect(),
                color: i,
                dashed: false,
            });
        }
    }
    for (slope, anchor, color) in [(0.0, Placement::Post, 7), (-0.5, Placement::Pre, 7)] {
        if let Some(fit) = report
            .probe
            .slopes
            .iter()
            .find(|f| f.placement == anchor.name() && f.norm == "layer")
        {
            let (d0, g0) = fit.points[0];
            series.push(Series {
                label: format!("slope {slope}"),
                points: fit
                    .points
                    .iter()
                    .map(|&(d, _)| (d as f64, g0 * (d as f64 / d0 as f64).powf(slope)))
                    .collect(),
                color,
                dashed: true,
            });
        }
    }
    save_png(
        &out.join("last_layer_vs_depth.png"),
        &[Chart {
            title: "Last layer's ‖∂L/∂W₂‖ against depth (Theorem 1)".into(),
            x_label: "depth L".into(),
            y_label: "gradient norm".into(),
            log_x: true,
            log_y: true,
            series,
            ..Chart::default()
        }],
        760,
        480,
    )?;

    let curves = |warmup: usize| Chart {
        title: format!(
            "training loss, LR {:e}, warm-up {warmup}",
            config.learning_rate
        ),
        x_label: "step".into(),
        y_label: "loss (mean over seeds)".into(),
        log_y: true,
        series: config
            .pairs
            .iter()
            .enumerate()
            .map(|(i, &(p, n))| {
                let group: Vec<&SweepRun> = report
                    .runs
                    .iter()
                    .filter(|r| r.placement == p.name() && r.norm == n.name() && r.warmup == warmup)
                    .collect();
                let len = group.iter().map(|r| r.losses.len()).min().unwrap_or(0);
                let points = (0..len)
                    .map(|s| {
                        (
                            s as f64,
                            group.iter().map(|r| r.losses[s]).sum::<f64>() / group.len() as f64,
                        )
                    })
                    .collect();
                Series {
                    label: label(p, n),
                    points,
                    color: i,
                    dashed: false,
                }
            })
            .collect(),
        ..Chart::default()
    };
    save_png(
        &out.join("loss_curves.png"),
        &config
            .warmups
            .iter()
            .map(|&w| curves(w))
            .collect::<Vec<_>>(),
        640,
        440,
    )?;

    let deepest = *depths.last().unwrap_or(&1);
    let ms = |p, n| {
        profile(&report.probe.results, p, n, deepest, |r| {
            &r.residual_mean_square
        })
    };
    let color = |p, n| config.pairs.iter().position(|&q| q == (p, n)).unwrap_or(7);
    let growth: Vec<Series> = [
        (Placement::Pre, NormKind::Layer),
        (Placement::Pre, NormKind::Rms),
        (Placement::Post, NormKind::Layer),
    ]
    .into_iter()
    .map(|(p, n)| Series {
        label: label(p, n),
        points: ms(p, n)
            .into_iter()
            .enumerate()
            .map(|(l, m)| (l as f64, m))
            .collect(),
        color: color(p, n),
        dashed: false,
    })
    .collect();
    save_png(
        &out.join("residual_growth.png"),
        &[Chart {
            title: format!("residual stream E‖x_l‖²/d at initialization, L = {deepest}"),
            x_label: "layer l".into(),
            y_label: "E‖x_l‖²/d".into(),
            series: growth,
            bands: vec![Band {
                label: "Lemma 2: 1 + l/2 … 1 + 3l/2".into(),
                points: (0..=deepest)
                    .map(|l| (l as f64, 1.0 + l as f64 / 2.0, 1.0 + 1.5 * l as f64))
                    .collect(),
            }],
            ..Chart::default()
        }],
        760,
        480,
    )
}

/// The claims as a Markdown table.
pub fn claims_table(claims: &[Claim]) -> String {
    let mut s = String::from("| claim | source | measured | reproduced |\n|---|---|---|---|\n");
    for c in claims {
        let mark = if c.reproduced { "yes" } else { "**no**" };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {mark} |",
            c.statement, c.source, c.measured
        );
    }
    s
}

fn markdown(report: &DemoReport) -> String {
    let c = &report.config;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# addnorm demo: gradient stability of residual norm placements\n"
    );
    let _ = writeln!(
        s,
        "Backend `{}`, {:.0} s. Task: reverse, n = {}, {} symbols. Seeds {:?}.\n",
        c.backend, report.wall_seconds, c.probe.task.length, c.probe.task.symbols, c.seeds
    );
    let _ = writeln!(s, "## Claims\n\n{}", claims_table(&report.claims));
    let _ = writeln!(
        s,
        "## A. Gradients at initialization\n\nd = {}, {} heads, d_ff = {}, W^Q = W^K = 0, one batch of {} sequences; \
         geometric means over seeds.\n\n{}",
        c.probe.d_model,
        c.probe.n_heads,
        c.probe.d_ff,
        c.probe.batch_size,
        crate::report::probe_table(&report.probe)
    );
    let _ = writeln!(s, "![last layer against depth](last_layer_vs_depth.png)\n");
    let _ = writeln!(s, "![per-layer gradient norms](gradient_per_layer.png)\n");
    let _ = writeln!(s, "![residual growth](residual_growth.png)\n");
    let _ = writeln!(
        s,
        "## B. Warm-up at a high learning rate\n\nDepth {}, d = {}, LR {:e}, {} steps, AdamW, cosine decay, no clipping.\n",
        c.train_depth, c.train_d_model, c.learning_rate, c.steps
    );
    let _ = writeln!(
        s,
        "| model | warm-up | ≥99% exact | mean exact acc | diverged | median steps to 99% |\n|---|---|---|---|---|---|"
    );
    for &(p, n) in &c.pairs {
        for &w in &c.warmups {
            let group: Vec<&SweepRun> = report
                .runs
                .iter()
                .filter(|r| r.placement == p.name() && r.norm == n.name() && r.warmup == w)
                .collect();
            let (ok, total) = success_rate(&report.runs, p, n, w);
            let acc = group.iter().map(|r| r.final_exact_accuracy).sum::<f64>()
                / group.len().max(1) as f64;
            let div = group.iter().filter(|r| r.diverged).count();
            let mut steps: Vec<usize> = group.iter().filter_map(|r| r.steps_to_99_exact).collect();
            steps.sort_unstable();
            let median = steps
                .get(steps.len() / 2)
                .map_or("—".into(), |s| s.to_string());
            let _ = writeln!(
                s,
                "| {} | {w} | {ok}/{total} | {:.1}% | {div}/{total} | {median} |",
                label(p, n),
                100.0 * acc
            );
        }
    }
    let _ = writeln!(s, "\n![loss curves](loss_curves.png)");
    s
}

/// Saves `config` into `out`, or checks it against the demo already there; returns the
/// first difference, which makes the caller exit with code 2.
///
/// # Errors
/// If `config.json` cannot be read or written.
pub fn adopt_config(config: &DemoConfig, out: &Path) -> Result<Option<Difference>, LabError> {
    let path = out.join("config.json");
    if path.exists() {
        let existing: DemoConfig = read_json(&path)?;
        return Ok(first_difference(&existing, config));
    }
    write_json(&path, config)?;
    Ok(None)
}

/// Prints what a worker ended with.
fn print_outcome(outcome: &DemoOutcome, out: &Path) {
    match &outcome.report {
        Some(report) => {
            println!("{}", claims_table(&report.claims));
            let reproduced = report.claims.iter().filter(|c| c.reproduced).count();
            println!(
                "{reproduced}/{} claims reproduced in {:.0} s. Report: {}",
                report.claims.len(),
                report.wall_seconds,
                out.join("report.md").display()
            );
        }
        None => {
            let held = &outcome.held;
            println!(
                "this worker is done; {} parts are still held by other workers, so the report \
                 is left to the last of them (rerun `addnorm demo` with the same --out to \
                 take over a dead worker's part):",
                held.len()
            );
            for (name, holder) in held {
                println!("  {name}: {holder}");
            }
        }
    }
}

/// `addnorm demo`.
pub fn run(args: &crate::cli::DemoArgs) -> Result<i32, LabError> {
    let options = args.options();
    let config = DemoConfig::quick(args.backend(), args.seed()).with_seeds(args.seeds());
    let out = args.out();
    if let Some(d) = adopt_config(&config, out)? {
        eprintln!(
            "error: --out {} holds a demo of another configuration ({d}); use another --out \
             or the same flags",
            out.display()
        );
        return Ok(2);
    }
    let outcome = crate::cli::with_backend!(config.backend.as_str(), |B, device| {
        demo_with::<B>(&config, out, &options, &device)
    })?;
    print_outcome(&outcome, out);
    Ok(0)
}
