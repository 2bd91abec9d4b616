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

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Instant;

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
