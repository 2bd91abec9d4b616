//! The demo as a shared-directory worker: two workers on one `--out` compute every part
//! once and write the same report as one worker; a helper process's worker leaves the
//! report to the first; `--jobs` does not change the results; a
//! directory of another demo is refused.
//!
//! The demo runs a shrunken configuration here (depths 2 and 4 of width 16, 20 training
//! steps), through the same code path as `addnorm demo`.

use std::collections::BTreeSet;
use std::path::Path;

use addnorm::backend::ndarray::{AutodiffBackend as B, device};
use addnorm_lab::experiments::model::ModelConfig;
use addnorm_lab::experiments::proxy_grid::{self, ProxySize};
use addnorm_lab::experiments::task::{Task, TaskKind};
use addnorm_lab::runner::jobs::JobPlan;
use addnorm_lab::study::claims::not_run;
use addnorm_lab::study::registry::Registry;
use addnorm_lab::study::verdict::Verdict;
use addnorm_lab::study::{DemoConfig, DemoOptions, DemoOutcome, DemoReport, demo_with};

use super::{TempDir, addnorm, stderr};

/// The demo's parts and claims on models small enough for a test: 5 pairs × 2 depths × 2
/// seeds probed, 5 pairs × 2 seeds trained for 20 steps, and every other part shrunk the
/// same way (widths 16, a few steps, 2 or 3 seeds).
pub(super) fn tiny_demo() -> DemoConfig {
    let mut config = DemoConfig::quick(addnorm::backend::Kind::Ndarray, 0).with_seed_count(2);
    config.probe.task = Task::new(TaskKind::Reverse, 3, 5);
    config.probe.depths = vec![2, 4];
    let narrow = |m: &ModelConfig, d_ff| {
        let stack = m.stack.clone().with_d_model(16).with_n_heads(2);
        m.clone().with_stack(stack.with_d_ff(d_ff))
    };
    config.probe.model = narrow(&config.probe.model, 32);
    config.probe.batch_size = 4;
    let train = narrow(&config.train_model, 64);
    config.train_model = train.clone().with_stack(train.stack.with_n_layers(1));
    config.warmups = vec![0];
    config.warmup_grid.warmups = vec![0, 2, 8];
    config.steps = 20;
    config.early_gradients.steps = 4;
    config.early_gradients.seeds = vec![0, 1, 2];
    let tiny = |c: &mut addnorm_lab::experiments::expected_gradient::ExpectedGradientConfig,
                depth| {
        c.task = config.probe.task;
        c.depths = vec![depth];
        c.seeds = vec![0, 1, 2];
        (c.batches, c.batch_size) = (2, 4);
        c.model = narrow(&c.model, 32);
    };
    tiny(&mut config.figure_3, 2);
    tiny(&mut config.figure_3_paper_width, 2);
    tiny(&mut config.figure_3_extension, 3);
    tiny(&mut config.figure_3_resi_dual, 3);
    // The registered extension depths, so that every registered Fig. 3 claim is emitted.
    config.figure_3_extension.depths = vec![12, 24, 48];
    let l2 = &mut config.lemma_2;
    (l2.task, l2.depths, l2.seeds) = (config.probe.task, vec![3], vec![0, 1]);
    let l2_stack = l2.model.stack.clone().with_d_model(16).with_d_ff(16);
    (l2.model.stack, l2.batch_size) = (l2_stack, 4);
    let c = &mut config.proxies;
    let c_stack = c.model.stack.clone().with_d_model(16).with_n_layers(1);
    (c.task, c.model.stack) = (Task::new(TaskKind::Markov, 3, 5), c_stack.with_d_ff(64));
    (c.learning_rates, c.z_loss_learning_rate) = (vec![1e-3, 1e-1], 1e-1);
    (c.steps, c.batch_size) = (8, 4);
    // The `--full` grids, shrunk: C's size (16, 1, 2) and one below it, and one LR above
    // B's, so that every registered grid claim is emitted too.
    config.proxy_grid.sizes = vec![ProxySize::new(8, 1, 1), ProxySize::new(16, 1, 2)];
    config.proxy_grid.steps = 6;
    config.divergence_learning_rates = vec![1e-1];
    // CaiT's depth grid at B's depth (B's own runs without LayerScale) and one deeper.
    config.depth_grid.depths = vec![1, 2];
    let d = &mut config.model_update;
    (d.task, d.depths, d.steps, d.batch_size) = (config.probe.task, vec![1, 2], 3, 4);
    d.model = narrow(&d.model, 32);
    config
}

fn options(jobs: usize) -> DemoOptions {
    DemoOptions {
        progress: false,
        plan: JobPlan { jobs, threads: 1 },
        stale_after: std::time::Duration::from_secs(300),
        writes_report: true,
    }
}

fn worker(config: &DemoConfig, out: &Path, jobs: usize) -> DemoOutcome {
    demo_with::<B>(config, out, &options(jobs), &device()).expect("the demo runs")
}

/// What must not depend on who computed it: every part, every run and the claims, as
/// JSON.
fn results(report: &DemoReport) -> Vec<serde_json::Value> {
    vec![
        json(&report.probe),
        json(&report.runs),
        json(&report.figure_3),
        json(&report.figure_3_paper_width),
        json(&report.figure_3_extension),
        json(&report.figure_3_resi_dual),
        json(&report.lemma_2),
        json(&report.early_gradients),
        json(&report.warmup_grid),
        json(&report.proxies),
        json(&report.proxy_grid),
        json(&report.divergence_grid),
        json(&report.depth_grid),
        json(&report.model_update),
        json(&report.sgd_update),
        json(&report.claims),
    ]
}

fn json<T: serde::Serialize>(value: &T) -> serde_json::Value {
    serde_json::to_value(value).unwrap()
}

#[test]
fn two_demo_workers_on_one_directory_compute_each_part_once_and_match_one_worker() {
    let config = tiny_demo();
    let alone = TempDir::new("demo-alone");
    let single = worker(&config, alone.path(), 1);
    let mut computed = single.computed.clone();
    computed.sort();
    let mut expected = part_names(&config);
    expected.sort();
    assert_eq!(computed, expected);
    let single = single.report.expect("a lone worker writes the report");

    let shared = TempDir::new("demo-shared");
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| worker(&config, shared.path(), 2));
        let b = s.spawn(|| worker(&config, shared.path(), 2));
        (a.join().unwrap(), b.join().unwrap())
    });
    let mut all: Vec<String> = a.computed.iter().chain(&b.computed).cloned().collect();
    all.sort();
    let mut expected = part_names(&config);
    expected.sort();
    assert_eq!(
        all.len(),
        expected.len(),
        "a part was computed twice: {all:?}"
    );
    assert_eq!(all, expected);

    // The last worker to finish writes the report; a worker that finished first may
    // have left parts to the other.
    let report = a
        .report
        .or(b.report)
        .expect("one of the workers writes the report");
    assert_eq!(results(&report), results(&single));
    let claims = std::fs::read_dir(shared.join("claims")).unwrap().count();
    assert_eq!(claims, 0, "every claim is released");
}

/// Every part of the tiny demo, as `computed` names them: the nine JSON parts, one run
/// of B per training pair and seed (warm-up 0), C's runs, the Fig. 2 grid's runs that
/// B does not already train (Post-LN at warm-up 0 and LR 1e-2 is B's), the `--full` grids'
/// runs, and CaiT's depth grid but for its Pre-LN cell at B's depth (B's run).
fn part_names(config: &DemoConfig) -> Vec<String> {
    let mut names: Vec<String> = [
        "probe",
        "figure-3",
        "figure-3-paper-width",
        "figure-3-extension",
        "figure-3-resi-dual",
        "lemma-2",
        "early-gradients",
        "model-update",
        "sgd-update",
    ]
    .map(String::from)
    .to_vec();
    let grid = [
        "w0-lr5e-3",
        "w2-lr5e-3",
        "w8-lr5e-3",
        "w2-lr1e-2",
        "w8-lr1e-2",
        "w0-lr1e-3-fixed",
    ];
    for cell in grid {
        for s in &config.seeds {
            names.push(format!("post-layer-{cell}-s{s}"));
        }
    }
    for (p, n) in config.training_pairs() {
        for s in &config.seeds {
            names.push(format!("{p}-{}-w0-s{s}", n.name()));
        }
    }
    for (variant, lr, seed) in config.proxies.runs() {
        names.push(addnorm_lab::experiments::proxies::run_name(
            variant, lr, seed,
        ));
    }
    for (size, variant, lr, seed) in config.proxy_grid.runs(&config.proxies) {
        names.push(proxy_grid::run_name(size, variant, lr, seed));
    }
    for p in ["pre", "peri"] {
        for s in &config.seeds {
            names.push(format!("{p}-layer-w0-lr1e-1-s{s}"));
        }
    }
    for cell in ["l1-layerscale", "l2", "l2-layerscale"] {
        for s in &config.seeds {
            names.push(format!("cait-pre-layer-{cell}-s{s}"));
        }
    }
    names
}

/// Every claim the demo emits is registered, with the registry's rule and a verdict that
/// rule gives on its interval; every registered claim is emitted or listed as not run yet.
fn claims_match_the_registry(report: &DemoReport) {
    let registry = Registry::embedded();
    let emitted: BTreeSet<&str> = report.claims.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(emitted.len(), report.claims.len(), "an id is emitted twice");
    let not_run: BTreeSet<&str> = not_run(&report.config)
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let registered: BTreeSet<&str> = registry.claim.iter().map(|c| c.id.as_str()).collect();
    assert!(
        emitted.is_disjoint(&not_run),
        "{:?}",
        emitted.intersection(&not_run)
    );
    let covered: BTreeSet<&str> = emitted.union(&not_run).copied().collect();
    assert_eq!(
        covered, registered,
        "emitted ∪ not_run must be the registry"
    );
    for c in &report.claims {
        let entry = registry.get(&c.id).unwrap();
        assert_eq!(c.rule, entry.rule, "{}", c.id);
        let expected = c
            .estimate
            .map_or(Verdict::Inconclusive, |e| entry.rule.verdict(&e));
        assert_eq!(c.verdict, expected, "{}", c.id);
    }
    assert_eq!(report.registry_hash, Registry::content_hash());
}

#[test]
fn demo_results_do_not_depend_on_jobs_and_a_rerun_reuses_every_part() {
    let config = tiny_demo();
    let one = TempDir::new("demo-jobs1");
    let two = TempDir::new("demo-jobs2");
    let r1 = worker(&config, one.path(), 1).report.unwrap();
    let r2 = worker(&config, two.path(), 2).report.unwrap();
    assert_eq!(results(&r1), results(&r2));
    claims_match_the_registry(&r1);

    let again = worker(&config, two.path(), 2);
    assert!(again.computed.is_empty(), "{:?}", again.computed);
    assert_eq!(results(&again.report.unwrap()), results(&r2));
}

/// A helper process's worker (`writes_report: false`) computes its share and leaves the
/// report alone; the worker that started it then writes the report from the finished parts
/// without computing any again, equal to a lone worker's.
#[test]
fn a_helper_worker_leaves_the_report_to_the_first_worker() {
    let config = tiny_demo();
    let dir = TempDir::new("demo-helper");
    let helper = DemoOptions {
        writes_report: false,
        ..options(1)
    };
    let first = demo_with::<B>(&config, dir.path(), &helper, &device()).expect("the demo runs");
    assert!(first.report.is_none() && first.held.is_empty());
    assert_eq!(first.computed.len(), part_names(&config).len());
    assert!(!dir.join("demo.json").exists() && !dir.join("report.md").exists());

    let second = worker(&config, dir.path(), 1);
    assert!(
        second.computed.is_empty(),
        "recomputed {:?}",
        second.computed
    );
    let report = second.report.expect("the first worker writes the report");
    assert!(dir.join("demo.json").exists() && dir.join("report.md").exists());
    let alone = TempDir::new("demo-helper-alone");
    let single = worker(&config, alone.path(), 1).report.unwrap();
    assert_eq!(results(&report), results(&single));
}

#[test]
fn cli_demo_refuses_a_directory_of_another_demo_and_names_the_field() {
    let out = TempDir::new("demo-other");
    std::fs::create_dir_all(out.path()).unwrap();
    let other = DemoConfig::quick(addnorm::backend::Kind::Ndarray, 0).with_seed_count(1);
    std::fs::write(
        out.join("config.json"),
        serde_json::to_string(&other).unwrap(),
    )
    .unwrap();
    let output = addnorm(&[
        "demo",
        "--backend",
        "ndarray",
        "--seeds",
        "2",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("seeds"), "{message}");
    assert!(!out.join("probe.json").exists(), "nothing ran");
}
