//! Sweep throughput, in runs per minute, on the demo's experiment-B model: how much a
//! grid gains from `--jobs` in one process and from worker processes sharing `--out`.
//!
//! ```text
//! cargo bench --bench sweep_throughput                       # 2 repeats
//! ADDNORM_BENCH_REPEATS=3 ADDNORM_BENCH_SEEDS=2 cargo bench --bench sweep_throughput
//! ```
//!
//! Every row runs the `addnorm` binary as a user would, into a fresh directory, on the grid
//! placements {post, pre, none} × warm-ups {0, 100} × seeds, depth 6, d_model 32, LR 1e-2,
//! 250 steps (the demo's training runs). Rows:
//!
//! ```text
//! single thread   --jobs 1 --threads 1          the unit of the target
//! sequential      --jobs 1 (threads = cores)    the sweep before --jobs existed
//! --jobs J        J = 2, 4, … up to the core count, cores / J threads each
//! 2 processes     two `addnorm sweep --jobs 1` workers on one --out
//! ```
//!
//! Throughput = runs / wall time; the table gives the median over repeats, the ratio to
//! the sequential sweep, and, for the core-count row, the target
//! `≥ 0.8 × cores × single-thread throughput`.
//!
//! # What stacking K runs could gain (issue 26)
//! A second table bounds what training K runs of one shape as one stacked model (a member
//! axis on every parameter) could buy. Such a stack does at least the work of one run whose
//! batch is K times larger, in the same kernels with the same per-member shapes, and pays
//! no less per-op bookkeeping. So the time per member-step of a `--batch 32·K` run is a
//! lower bound on a K-stack's, and `time(K = 1) / time(K)` an upper bound on its gain:
//!
//! ```text
//! ms per member-step(K, threads) = ms per step of `addnorm train --batch 32K` / K
//! bound on a K-stack's gain      = ms per member-step(1, threads) / ms per member-step(K, threads)
//! against --jobs                 = ms per member-step(1, 1 thread) / cores
//!                                  (what `--jobs cores` gets with perfect scaling)
//! GFLOP/s                        = 3 · forward flops (matrix products, as the train_step
//!                                  bench counts them) / time; peak = cores · 2 FMA units
//!                                  · lanes · 2 · GHz (from /proc/cpuinfo; an estimate)
//! ```
//!
//! Each time is the difference of two `addnorm train` runs that differ only in the step
//! count (5 and 5 + n steps), so start-up, evaluations and checkpoints cancel.
//!
//! ```text
//! cargo bench --bench sweep_throughput -- --stack-bound-only    # the second table alone
//! ```

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use addnorm::nn::TransformerStackConfig;
use addnorm_lab::experiments::task::{Task, TaskKind};

/// One way of running the grid.
struct Plan {
    name: String,
    /// Extra arguments of each worker process.
    workers: Vec<Vec<String>>,
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn sweep_args(out: &Path, seeds: usize) -> Vec<String> {
    let seeds = seeds.to_string();
    [
        "sweep",
        "--backend",
        "ndarray",
        "--placements",
        "post,pre,none",
        "--norm",
        "layer",
        "--depths",
        "6",
        "--warmups",
        "0,100",
        "--lrs",
        "1e-2",
        "--seeds",
        &seeds,
        "--steps",
        "250",
        "--d-model",
        "32",
        "--out",
        out.to_str().expect("utf-8 temp path"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn spawn(out: &Path, seeds: usize, extra: &[String]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_addnorm"))
        .args(sweep_args(out, seeds))
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the addnorm binary starts")
}

/// Seconds for all of `plan`'s workers to finish the grid in a fresh directory.
fn time_plan(plan: &Plan, seeds: usize, dir: &Path) -> f64 {
    std::fs::remove_dir_all(dir).ok();
    std::fs::create_dir_all(dir).expect("temporary directory");
    let started = Instant::now();
    let children: Vec<Child> = plan
        .workers
        .iter()
        .map(|extra| spawn(dir, seeds, extra))
        .collect();
    for mut child in children {
        let status = child.wait().expect("the worker runs");
        assert!(
            status.success(),
            "{}: a worker failed ({status})",
            plan.name
        );
    }
    let seconds = started.elapsed().as_secs_f64();
    assert!(dir.join("sweep.json").exists(), "{}: no report", plan.name);
    seconds
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn plans(cores: usize) -> Vec<Plan> {
    let mut plans = vec![
        Plan {
            name: "single thread (--jobs 1 --threads 1)".into(),
            workers: vec![args(&["--jobs", "1", "--threads", "1"])],
        },
        Plan {
            name: format!("sequential (--jobs 1, {cores} threads)"),
            workers: vec![args(&["--jobs", "1"])],
        },
    ];
    let mut jobs = 2;
    while jobs <= cores {
        plans.push(Plan {
            name: format!("--jobs {jobs} ({} threads each)", (cores / jobs).max(1)),
            workers: vec![args(&["--jobs", &jobs.to_string()])],
        });
        jobs *= 2;
    }
    if !cores.is_power_of_two() {
        plans.push(Plan {
            name: format!("--jobs {cores} (1 thread each)"),
            workers: vec![args(&["--jobs", &cores.to_string()])],
        });
    }
    let threads = (cores / 2).max(1).to_string();
    plans.push(Plan {
        name: format!("2 processes (--jobs 1 --threads {threads} each)"),
        workers: vec![args(&["--jobs", "1", "--threads", &threads]); 2],
    });
    plans
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn main() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let repeats = env_usize("ADDNORM_BENCH_REPEATS", 2).max(1);
    if !std::env::args().any(|a| a == "--stack-bound-only") {
        sweep_table(cores, repeats);
    }
    stack_bound_table(cores, repeats.max(3));
}

/// The sweep's plans, timed and printed (the first table).
fn sweep_table(cores: usize, repeats: usize) {
    let seeds = env_usize("ADDNORM_BENCH_SEEDS", 2).max(1);
    let runs = (3 * 2 * seeds) as f64;
    let dir: PathBuf =
        std::env::temp_dir().join(format!("addnorm-sweep-bench-{}", std::process::id()));
    let plans = plans(cores);
    // Interleaved repeats: a slow spell of the shared machine hits every plan alike.
    let mut seconds: Vec<Vec<f64>> = vec![vec![]; plans.len()];
    for _ in 0..repeats {
        for (plan, times) in plans.iter().zip(&mut seconds) {
            times.push(time_plan(plan, seeds, &dir));
            eprintln!("{}: {:.1} s", plan.name, times.last().unwrap());
        }
    }
    std::fs::remove_dir_all(&dir).ok();

    let per_minute: Vec<f64> = seconds
        .into_iter()
        .map(|t| 60.0 * runs / median(t))
        .collect();
    let (single, sequential) = (per_minute[0], per_minute[1]);
    println!(
        "sweep throughput: {runs} runs (depth 6, d 32, 250 steps), {cores} cores, median of \
         {repeats}"
    );
    println!("| plan | runs/min | × sequential | × single thread |\n|---|---|---|---|");
    for (plan, rate) in plans.iter().zip(&per_minute) {
        println!(
            "| {} | {rate:.1} | {:.2} | {:.2} |",
            plan.name,
            rate / sequential,
            rate / single
        );
    }
    let best_in_process = per_minute[2..per_minute.len() - 1]
        .iter()
        .copied()
        .fold(sequential, f64::max);
    let target = 0.8 * cores as f64 * single;
    println!(
        "target: --jobs at the core count ≥ 0.8 × {cores} × single thread = {target:.1} runs/min; \
         best in one process {best_in_process:.1} ({}), 2 processes {:.1}",
        if best_in_process >= target {
            "met"
        } else {
            "NOT met"
        },
        per_minute[per_minute.len() - 1]
    );
}

/// The stacking members the second table measures.
const MEMBERS: [usize; 4] = [1, 4, 8, 16];

/// Sequences per member (the demo's batch).
const MEMBER_BATCH: usize = 32;

/// The demo's model: `(layers, d, d_ff)`, on [`TASK`].
const DEMO_MODEL: (usize, usize, usize) = (6, 32, 128);

/// The `addnorm train` default task the bound is measured on.
const TASK: Task = Task {
    kind: TaskKind::Reverse,
    length: 8,
    symbols: 10,
};

/// Floating-point operations of one member-step's matrix products
/// ([`addnorm_lab::runner::resources::step_matmul_flops`], as the train_step bench counts
/// them).
fn member_step_flops() -> f64 {
    let (layers, d, ff) = DEMO_MODEL;
    let block = addnorm::nn::TransformerBlockConfig::new(d, d / 16, ff).with_n_layers(layers);
    let stack = TASK.fit(TransformerStackConfig::tiny().with_block(block));
    addnorm_lab::runner::resources::step_matmul_flops(&stack, MEMBER_BATCH, TASK.seq_len())
}

/// This machine's f32 peak in GFLOP/s, estimated: cores · 2 FMA units · lanes (16 with
/// AVX-512, 8 with AVX2, else 4) · 2 flops · the clock /proc/cpuinfo reports.
fn peak_gflops(cores: usize) -> Option<f64> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    let mhz: f64 = info
        .lines()
        .find(|l| l.starts_with("cpu MHz"))?
        .split(':')
        .nth(1)?
        .trim()
        .parse()
        .ok()?;
    let lanes = if info.contains(" avx512f") {
        16.0
    } else if info.contains(" avx2") {
        8.0
    } else {
        4.0
    };
    Some(cores as f64 * 2.0 * lanes * 2.0 * mhz / 1000.0)
}

/// Seconds of one `addnorm train` run of the demo's model at `members · 32` sequences per
/// batch, for `steps` steps on `threads` rayon threads.
fn time_train(dir: &Path, members: usize, steps: usize, threads: usize) -> f64 {
    std::fs::remove_dir_all(dir).ok();
    let (layers, d, ..) = DEMO_MODEL;
    let started = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_addnorm"))
        .env("RAYON_NUM_THREADS", threads.to_string())
        .args([
            "train",
            "--backend",
            "ndarray",
            "--placement",
            "pre",
            "--depth",
            &layers.to_string(),
            "--d-model",
            &d.to_string(),
            "--batch",
            &(members * MEMBER_BATCH).to_string(),
            "--steps",
            &steps.to_string(),
            "--eval-every",
            "100000",
            "--stats-every",
            "100000",
            "--checkpoint-every",
            "100000",
            "--out",
            dir.to_str().expect("utf-8 temp path"),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("the addnorm binary starts");
    assert!(status.success(), "addnorm train failed ({status})");
    started.elapsed().as_secs_f64()
}

/// Milliseconds per member-step at `members` on `threads`: the difference between runs of
/// 5 + n and 5 steps, over n·members.
fn member_step_ms(dir: &Path, members: usize, threads: usize) -> f64 {
    let extra = (240 / members).max(10);
    let short = time_train(dir, members, 5, threads);
    let long = time_train(dir, members, 5 + extra, threads);
    1e3 * (long - short) / (extra * members) as f64
}

/// The second table: the bound on what stacking K runs could gain (see the module docs).
fn stack_bound_table(cores: usize, repeats: usize) {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("addnorm-stack-bound-{}", std::process::id()));
    let flops = member_step_flops();
    let peak = peak_gflops(cores);
    let mut thread_counts = vec![1];
    if cores > 1 {
        thread_counts.push(cores);
    }
    // Interleaved: every (threads, K) cell once per repeat.
    let cells: Vec<(usize, usize)> = thread_counts
        .iter()
        .flat_map(|&t| MEMBERS.iter().map(move |&k| (t, k)))
        .collect();
    let mut times: Vec<Vec<f64>> = vec![vec![]; cells.len()];
    for _ in 0..repeats {
        for (&(threads, members), cell) in cells.iter().zip(&mut times) {
            cell.push(member_step_ms(&dir, members, threads));
        }
    }
    std::fs::remove_dir_all(&dir).ok();
    let ms: Vec<f64> = times.into_iter().map(median).collect();
    let at = |threads: usize, members: usize| {
        ms[cells
            .iter()
            .position(|&c| c == (threads, members))
            .expect("a measured cell")]
    };
    // `--jobs cores` at K = 1, scaling perfectly: one single-thread run per core.
    let jobs = at(1, 1) / cores as f64;
    println!(
        "\nwhat stacking K runs could gain at most: the demo's model (Pre-LN, 6 layers, d 32, \
         d_ff 128, [32, 17] tokens per member) trained at batch 32·K, median of {repeats}; \
         {:.3} GFLOP per member-step; peak {} (estimated); --jobs {cores} at K = 1, scaling \
         perfectly: {jobs:.2} ms per member-step",
        flops / 1e9,
        peak.map_or("unknown".into(), |p| format!("{p:.0} GFLOP/s"))
    );
    println!(
        "| K | threads | ms per member-step | GFLOP/s | % of peak | bound on a K-stack's gain, \
         same threads | bound over --jobs {cores} |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (&(threads, members), &ms_k) in cells.iter().zip(&ms) {
        let gflops = flops / ms_k / 1e6;
        let share = peak.map_or("-".into(), |p| format!("{:.0}%", 100.0 * gflops / p));
        // A stack on fewer threads than cores leaves the other cores to more stacks.
        let over_jobs = jobs / (ms_k * threads as f64 / cores as f64);
        println!(
            "| {members} | {threads} | {ms_k:.2} | {gflops:.1} | {share} | {:.2}× | {over_jobs:.2}× |",
            at(threads, 1) / ms_k
        );
    }
    println!("issue 26's target: a K-stack at 3× the runs per minute of --stack 1");
}
