//! Sweeps beyond one worker: two processes on one directory, a worker killed mid-run and
//! taken over, `--jobs`, static shards with `merge`, and `report`.
//!
//! Every comparison is of `sweep.json`'s runs (losses of every step, final metrics), as
//! JSON: bit-equal floats, and NaN-safe.

use std::path::Path;
use std::process::{Command, Stdio};

use super::{TempDir, addnorm, stderr};

/// The grid of most tests: 2 LRs × 2 seeds.
const FOUR_RUNS: Grid = Grid {
    lrs: "1e-3,1e-2",
    seeds: "2",
};

/// The learning rates and the number of seeds of a tiny sweep.
struct Grid {
    lrs: &'static str,
    seeds: &'static str,
}

/// A sweep of tiny runs (one layer of width 16, 3 symbols) into `out`.
fn tiny_sweep(out: &Path, steps: usize, grid: &Grid, extra: &[&str]) -> Vec<String> {
    let steps = steps.to_string();
    let mut args: Vec<String> = [
        "sweep",
        "--backend",
        "ndarray",
        "--out",
        out.to_str().unwrap(),
        "--length",
        "3",
        "--symbols",
        "5",
        "--placements",
        "pre",
        "--depths",
        "1",
        "--warmups",
        "0",
        "--lrs",
        grid.lrs,
        "--seeds",
        grid.seeds,
        "--steps",
        &steps,
        "--d-model",
        "16",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn sweep(out: &Path, steps: usize, grid: &Grid, extra: &[&str]) -> String {
    let output = spawn_sweep(out, steps, grid, extra)
        .wait_with_output()
        .expect("the worker ends");
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn spawn_sweep(out: &Path, steps: usize, grid: &Grid, extra: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_addnorm"))
        .args(tiny_sweep(out, steps, grid, extra))
        .env("ADDNORM_LOG_RUNS", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start a worker")
}

/// The runs of `out/sweep.json`, as JSON.
fn runs(out: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(out.join("sweep.json"))
        .unwrap_or_else(|e| panic!("{}/sweep.json: {e}", out.display()));
    let report: serde_json::Value = serde_json::from_str(&text).expect("sweep.json parses");
    report["runs"].clone()
}

fn trained_lines(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("trained "))
        .map(str::to_string)
        .collect()
}

#[test]
fn two_workers_on_one_directory_train_every_run_once_and_match_one_worker() {
    let (alone, shared) = (TempDir::new("one-worker"), TempDir::new("two-workers"));
    let single = sweep(alone.path(), 12, &FOUR_RUNS, &["--jobs", "1"]);
    assert_eq!(trained_lines(&single).len(), 4, "stdout: {single}");

    let workers = [
        spawn_sweep(shared.path(), 12, &FOUR_RUNS, &["--jobs", "1"]),
        spawn_sweep(shared.path(), 12, &FOUR_RUNS, &["--jobs", "1"]),
    ];
    let mut trained = vec![];
    for worker in workers {
        let output = worker.wait_with_output().expect("the worker ends");
        assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
        trained.extend(trained_lines(&String::from_utf8_lossy(&output.stdout)));
    }
    trained.sort();
    let mut expected = trained_lines(&single);
    expected.sort();
    assert_eq!(trained, expected, "every run trained exactly once");
    assert_eq!(runs(shared.path()), runs(alone.path()));
    let claims = std::fs::read_dir(shared.join("claims")).unwrap().count();
    assert_eq!(claims, 0, "every claim is released");
}

#[test]
fn jobs_2_gives_the_results_of_jobs_1() {
    let (one, two) = (TempDir::new("jobs-1"), TempDir::new("jobs-2"));
    sweep(one.path(), 8, &FOUR_RUNS, &["--jobs", "1"]);
    sweep(
        two.path(),
        8,
        &FOUR_RUNS,
        &["--jobs", "2", "--threads", "1"],
    );
    assert_eq!(runs(one.path()), runs(two.path()));
}

#[test]
fn a_worker_killed_mid_run_is_taken_over_and_resumed_to_the_uninterrupted_result() {
    let (killed, reference) = (TempDir::new("killed"), TempDir::new("uninterrupted"));
    let one_run = Grid {
        lrs: "1e-3",
        seeds: "1",
    };
    let steps = 1200;
    let mut worker = spawn_sweep(killed.path(), steps, &one_run, &[]);
    let run_dir = killed.join("runs/pre-layer-L1-w0-lr1e-3-s0");
    // Kill it once it has written its first checkpoint (a quarter of the run).
    while !run_dir.join("checkpoint.json").exists() {
        assert!(
            worker.try_wait().unwrap().is_none(),
            "the worker ended before its first checkpoint"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    worker.kill().expect("SIGKILL the worker");
    worker.wait().expect("reap it");
    assert!(
        !run_dir.join("summary.json").exists(),
        "the run finished before the kill; the test needs more steps"
    );
    assert!(
        killed
            .join("claims/pre-layer-L1-w0-lr1e-3-s0.json")
            .exists()
    );

    let second = sweep(killed.path(), steps, &one_run, &[]);
    assert_eq!(trained_lines(&second), ["pre-layer-L1-w0-lr1e-3-s0"]);
    sweep(reference.path(), steps, &one_run, &[]);
    assert_eq!(runs(killed.path()), runs(reference.path()));
}

#[test]
fn merging_two_shards_gives_the_unsharded_sweep_and_report_names_missing_runs() {
    let whole = TempDir::new("unsharded");
    let shards = [TempDir::new("shard-0"), TempDir::new("shard-1")];
    let merged = TempDir::new("merged");
    sweep(whole.path(), 6, &FOUR_RUNS, &[]);
    let first = sweep(shards[0].path(), 6, &FOUR_RUNS, &["--shard", "0/2"]);
    assert_eq!(trained_lines(&first).len(), 2, "stdout: {first}");
    assert!(!shards[0].join("sweep.json").exists());

    let report = addnorm(&["report", "--out", shards[0].path().to_str().unwrap()]);
    let message = stderr(&report);
    assert_eq!(report.status.code(), Some(2), "stderr: {message}");
    assert!(
        message.contains("2 of 4 runs") && message.contains("pre-layer-L1-w0-lr1e-3-s1"),
        "the message should name the missing runs: {message}"
    );

    sweep(shards[1].path(), 6, &FOUR_RUNS, &["--shard", "1/2"]);
    let output = addnorm(&[
        "merge",
        shards[0].path().to_str().unwrap(),
        shards[1].path().to_str().unwrap(),
        "--out",
        merged.path().to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    assert_eq!(runs(merged.path()), runs(whole.path()));

    let again = addnorm(&["report", "--out", merged.path().to_str().unwrap()]);
    assert_eq!(again.status.code(), Some(0), "stderr: {}", stderr(&again));
}

#[test]
fn merge_refuses_different_sweeps_and_names_the_field() {
    let (a, b, out) = (
        TempDir::new("merge-a"),
        TempDir::new("merge-b"),
        TempDir::new("merge-out"),
    );
    sweep(a.path(), 4, &FOUR_RUNS, &["--shard", "0/2"]);
    let other = Grid {
        lrs: "1e-3,3e-3",
        seeds: "2",
    };
    sweep(b.path(), 4, &other, &["--shard", "1/2"]);
    let output = addnorm(&[
        "merge",
        a.path().to_str().unwrap(),
        b.path().to_str().unwrap(),
        "--out",
        out.path().to_str().unwrap(),
    ]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "stderr: {message}");
    assert!(
        message.contains("learning_rates") && message.contains("0.003"),
        "the message should name the differing field: {message}"
    );
    assert!(!out.join("runs").exists(), "nothing merged");

    // A worker pointed at a directory of another sweep refuses too.
    let output = addnorm(&tiny_sweep(a.path(), 5, &FOUR_RUNS, &["--shard", "0/2"]));
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "stderr: {message}");
    assert!(message.contains("steps"), "stderr: {message}");
}
