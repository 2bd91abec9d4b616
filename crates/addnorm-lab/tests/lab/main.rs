#![cfg(feature = "ndarray")]
//! The lab: a toy task learned in a bounded number of steps, the probe's depth slopes
//! (Xiong et al. 2020, Theorem 1 and Lemma 2), exact resume from a checkpoint, a clean stop
//! on a non-finite loss, the run directory's files, and the command line's exit codes.
//!
//! Training runs on ndarray only: on CI's software Vulkan driver a few hundred steps would
//! take minutes, and the training loop is backend-generic code that the per-backend tests
//! of the model already cover.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod demo_workers;
mod plots;
mod readme;
mod study;
mod workers;

use addnorm::backend::ndarray::{AutodiffBackend as B, device};
use addnorm::nn::{Placement, TransformerStack, TransformerStackConfig};
use addnorm_lab::experiments::model::ModelConfig;
use addnorm_lab::experiments::norm_kind::NormKind;
use addnorm_lab::experiments::probe::{ProbeConfig, probe};
use addnorm_lab::experiments::train::loss::masked_cross_entropy;
use addnorm_lab::{Task, TaskKind, TrainConfig, TrainOptions, TrainSummary, train};
use burn::module::{AutodiffModule, Module};
use burn::record::{FullPrecisionSettings, NamedMpkFileRecorder};
use burn::tensor::ElementConversion;

/// A directory under the system's temp dir, unique to this process and test, removed on
/// drop (also when the test fails).
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let path =
            std::env::temp_dir().join(format!("addnorm-lab-{name}-{}-{nanos}", std::process::id()));
        Self(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn join(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if self.0.is_dir() {
            std::fs::remove_dir_all(&self.0).ok();
        } else {
            std::fs::remove_file(&self.0).ok();
        }
    }
}

/// A run small enough to take a fraction of a second: reverse 4 symbols of 6, 2 layers of
/// width 16.
fn tiny_run(steps: usize) -> TrainConfig {
    let stack = TransformerStackConfig::new()
        .with_d_model(16)
        .with_n_heads(2)
        .with_d_ff(32)
        .with_n_layers(2);
    let model = ModelConfig::new()
        .with_stack(stack)
        .with_backend(addnorm::backend::Kind::Ndarray);
    TrainConfig::for_task(Task::new(TaskKind::Reverse, 4, 6), model)
        .with_steps(steps)
        .with_warmup_steps(3)
        .with_learning_rate(3e-3)
        .with_batch_size(8)
        .with_validation_size(32)
        .with_eval_every(3)
        .with_stats_every(2)
        .with_checkpoint_every(3)
        .with_seed(7)
}

fn run(config: &TrainConfig, out: &Path, options: &TrainOptions) -> TrainSummary {
    train::<B>(config, out, options, &device()).expect("the run directory is writable")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// metrics.csv as its header and its rows, each split into fields.
fn metrics(out: &Path) -> (String, Vec<Vec<String>>) {
    let text = read(&out.join("metrics.csv"));
    let mut lines = text.lines();
    let header = lines.next().expect("a header line").to_string();
    let rows = lines
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    (header, rows)
}

/// The validation loss of the checkpoint `checkpoint.json` points to, computed the way the
/// training loop's evaluation does.
fn checkpoint_validation_loss(config: &TrainConfig, out: &Path) -> (usize, f64) {
    let index: serde_json::Value =
        serde_json::from_str(&read(&out.join("checkpoint.json"))).expect("checkpoint.json");
    let step = index["step"].as_u64().expect("a step") as usize;
    let dir = out.join(index["dir"].as_str().expect("a directory"));
    let model: TransformerStack<B> =
        addnorm_lab::experiments::train::seeded::init_model(&config.model.stack, 999, &device())
            .load_file(
                dir.join("model"),
                &NamedMpkFileRecorder::<FullPrecisionSettings>::new(),
                &device(),
            )
            .unwrap_or_else(|e| panic!("{} does not load: {e}", dir.display()));
    let valid = model.valid();
    let validation = config
        .task
        .validation_set(config.seed, config.validation_size);
    let (inputs, targets, mask) = validation.to_tensors(&device());
    let loss: f64 = masked_cross_entropy(valid.forward(inputs), targets, mask)
        .into_scalar()
        .elem();
    (step, loss)
}

/// The demo's training run (6 layers, d = 32, batch 32 × 17 tokens: its FFN layers are
/// large enough for the fused linear kernels to split dW over rows) gives bit-identical
/// losses, gradient norms and evaluations on pools of 1, 2 and 3 threads, as on machines
/// with other core counts.
#[test]
fn a_run_is_bit_identical_whatever_the_thread_count() {
    let stack = TransformerStackConfig::new()
        .with_n_layers(6)
        .with_placement(Placement::Post);
    let model = ModelConfig::new().with_stack(stack);
    let config = TrainConfig::for_task(Task::new(TaskKind::Reverse, 8, 10), model)
        .with_steps(6)
        .with_learning_rate(1e-2)
        .with_warmup_steps(0)
        .with_eval_every(3)
        .with_stats_every(3)
        .with_checkpoint_every(6);
    let on = |threads: usize| {
        let dir = TempDir::new(&format!("threads-{threads}"));
        addnorm_lab::runner::jobs::on_own_pool(Some(threads), || {
            run(&config, dir.path(), &TrainOptions::default())
        })
    };
    let one = on(1);
    assert_eq!(one.losses.len(), 6);
    for threads in [2, 3] {
        let other = on(threads);
        assert_eq!(one.losses, other.losses, "{threads} threads: losses");
        assert_eq!(one.grad_norms, other.grad_norms, "{threads} threads");
        assert_eq!(one.evaluations, other.evaluations, "{threads} threads");
    }
}

#[test]
fn reverse_with_depth_2_and_width_32_reaches_99_percent_exact_within_150_steps() {
    let dir = TempDir::new("reverse");
    let stack = TransformerStackConfig::new()
        .with_d_model(32)
        .with_n_heads(2)
        .with_d_ff(64)
        .with_n_layers(2)
        .with_placement(Placement::Pre);
    let model = ModelConfig::new().with_stack(stack);
    let config = TrainConfig::for_task(Task::new(TaskKind::Reverse, 6, 10), model)
        .with_steps(200)
        .with_warmup_steps(30)
        .with_learning_rate(3e-3)
        .with_eval_every(10)
        .with_stats_every(100)
        .with_checkpoint_every(200);
    // Measured with these settings: 99% exact at step 70 (seeds 0 and 2) or 80 (seeds 1
    // and 3). The bound of 150 leaves room for numerical drift, not for a slower optimizer.
    let summary = run(&config, dir.path(), &TrainOptions::default());
    assert_eq!(summary.diverged, None);
    assert_eq!(summary.steps_completed, 200);
    let reached = summary.steps_to_99_exact.unwrap_or_else(|| {
        panic!(
            "never reached 99% exact; evaluations: {:?}",
            summary.evaluations
        )
    });
    assert!(
        reached <= 150,
        "99% exact only at step {reached}, expected ≤ 150"
    );
    let last = summary
        .final_evaluation()
        .expect("an evaluation at the end");
    assert_eq!(last.step, 200);
    assert!(
        last.accuracy.exact >= 0.99 && last.loss < 0.1,
        "final evaluation {last:?}: expected exact ≥ 0.99 and loss < 0.1"
    );
    // The initial loss is about ln(vocab) = ln 13 ≈ 2.56; training must have brought it down.
    assert!(
        summary.losses[0] > 1.5 && summary.losses[199] < 0.1,
        "training loss went from {} to {}",
        summary.losses[0],
        summary.losses[199]
    );
}

#[test]
fn probe_slopes_have_the_signs_of_theorem_1_and_pre_ln_grows_as_lemma_2_says() {
    let stack = TransformerStackConfig::new()
        .with_d_model(32)
        .with_n_heads(2)
        .with_d_ff(64)
        .with_zero_init_query_key(true);
    let model = ModelConfig::new()
        .with_stack(stack)
        .with_backend(addnorm::backend::Kind::Ndarray);
    let config = ProbeConfig::new(Task::new(TaskKind::Reverse, 8, 10), model)
        .with_placements(vec![Placement::Post, Placement::Pre])
        .with_norms(vec![NormKind::Layer])
        .with_depths(vec![2, 4, 8, 16])
        .with_seeds((0..8).collect())
        .with_batch_size(16);
    let report = probe::<B>(&config, None, false, &device()).expect("no output to write");
    assert_eq!(report.results.len(), 2 * 4 * 8);
    let post = report
        .slope(Placement::Post, NormKind::Layer)
        .expect("post");
    let pre = report.slope(Placement::Pre, NormKind::Layer).expect("pre");
    // Theorem 1: Post-LN's last-layer ‖∂L/∂W₂‖ does not shrink with depth (slope ≈ 0),
    // Pre-LN's shrinks as L^{-1/2}. At these small depths we measure Post ≈ +0.33 and
    // Pre ≈ −0.30 with these seeds (over 26 other seed ranges: Post 0.25…0.45, Pre
    // −0.36…−0.13, gap ≥ 0.49), so the thresholds leave a wide margin.
    assert!(
        pre < -0.1,
        "Pre-LN slope {pre:.3}: expected clearly negative (theory −0.5)"
    );
    assert!(
        post > -0.1 && post < 0.8,
        "Post-LN slope {post:.3}: expected no decay with depth (theory 0)"
    );
    assert!(
        post - pre > 0.3,
        "Post-LN slope {post:.3} should lie well above Pre-LN's {pre:.3}"
    );

    for r in &report.results {
        assert!(
            r.loss.is_finite() && r.last_ffn_grad_norm > 0.0,
            "{r:?}: finite loss and a non-zero last-layer gradient expected"
        );
        assert_eq!(r.grad_norms.w_2.len(), r.depth);
        assert_eq!(r.grad_norms.w_2[r.depth - 1], r.last_ffn_grad_norm);
        assert_eq!(r.residual_mean_square.len(), r.depth + 1);
        if r.placement == Placement::Post {
            // Every Post-LN block ends in LayerNorm (γ = 1, β = 0 at init): E x² = 1 − O(ε).
            for (l, ms) in r.residual_mean_square.iter().enumerate().skip(1) {
                assert!(
                    (ms - 1.0).abs() < 1e-3,
                    "post L={} seed {} layer {l}: E‖x‖²/d = {ms}, expected 1",
                    r.depth,
                    r.seed
                );
            }
        }
    }
    // Lemma 2, in expectation (the mean over seeds): 1 + L/2 ≤ E‖x_L‖²/d ≤ 1 + 3L/2.
    // Measured: 3.5, 8.6 and 16.0 at L = 4, 8 and 16.
    for depth in [4, 8, 16] {
        let last: Vec<f64> = report
            .results
            .iter()
            .filter(|r| r.placement == Placement::Pre && r.depth == depth)
            .map(|r| r.residual_mean_square[depth])
            .collect();
        let mean = last.iter().sum::<f64>() / last.len() as f64;
        let (low, high) = (1.0 + depth as f64 / 2.0, 1.0 + 1.5 * depth as f64);
        assert!(
            (low..=high).contains(&mean),
            "pre L={depth}: E‖x_L‖²/d = {mean:.3}, expected in [{low}, {high}]"
        );
    }
}

#[test]
fn resuming_from_a_checkpoint_repeats_the_uninterrupted_run_exactly() {
    let config = tiny_run(12);
    let whole = TempDir::new("resume-whole");
    let expected = run(&config, whole.path(), &TrainOptions::default());
    assert_eq!(expected.steps_completed, 12);

    // Interrupt a second run after the checkpoint at step 6 (a fault at step 8, so two steps
    // past the checkpoint are lost and must be redone), then resume it without the fault.
    let split = TempDir::new("resume-split");
    let interrupted = run(
        &config,
        split.path(),
        &TrainOptions {
            inject_nan_at: Some(8),
            ..TrainOptions::default()
        },
    );
    let divergence = interrupted.diverged.expect("stopped by the injected NaN");
    assert_eq!((divergence.step, divergence.last_checkpoint), (8, Some(6)));
    assert_eq!(interrupted.losses, expected.losses[..8]);
    let resumed = run(
        &config,
        split.path(),
        &TrainOptions {
            resume: true,
            ..TrainOptions::default()
        },
    );

    assert_eq!(resumed.diverged, None);
    assert_eq!(resumed.steps_completed, 12);
    // Bit for bit: the same data, weights, optimizer moments and learning rates.
    assert_eq!(resumed.losses, expected.losses);
    assert_eq!(resumed.evaluations, expected.evaluations);
    assert_eq!(resumed.steps_to_99_exact, expected.steps_to_99_exact);
    // metrics.csv is rewritten up to the checkpoint and continued: the same file.
    assert_eq!(
        read(&split.join("metrics.csv")),
        read(&whole.join("metrics.csv"))
    );
    assert_eq!(
        checkpoint_validation_loss(&config, split.path()),
        checkpoint_validation_loss(&config, whole.path())
    );
}

#[test]
fn a_non_finite_loss_stops_cleanly_and_keeps_the_last_checkpoint() {
    let config = tiny_run(10);
    let dir = TempDir::new("diverge");
    let summary = run(
        &config,
        dir.path(),
        &TrainOptions {
            inject_nan_at: Some(7),
            ..TrainOptions::default()
        },
    );

    let divergence = summary.diverged.clone().expect("a divergence");
    assert_eq!(divergence.step, 7);
    assert_eq!(divergence.last_checkpoint, Some(6));
    assert!(
        divergence.reason.contains("NaN"),
        "reason {:?} should name the value",
        divergence.reason
    );
    assert_eq!(summary.steps_completed, 7);
    assert_eq!(summary.losses.len(), 7);
    assert!(summary.losses.iter().all(|l| l.is_finite()));

    // summary.json records the same stop.
    let saved: TrainSummary =
        serde_json::from_str(&read(&dir.join("summary.json"))).expect("summary.json");
    assert_eq!(saved.diverged, Some(divergence));
    assert_eq!(saved.losses, summary.losses);

    // metrics.csv stops at the last good step.
    let (_, rows) = metrics(dir.path());
    let steps: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(steps, ["0", "1", "2", "3", "4", "5", "6"]);

    // checkpoint.json points at step 6, the older checkpoint is gone, and the model loads
    // and reproduces the validation loss recorded at step 6.
    assert!(dir.join("checkpoints/step-000006").is_dir());
    assert!(!dir.join("checkpoints/step-000003").exists());
    let (step, loss) = checkpoint_validation_loss(&config, dir.path());
    assert_eq!(step, 6);
    let recorded = summary
        .evaluations
        .iter()
        .find(|e| e.step == 6)
        .expect("an evaluation at step 6");
    assert!(
        (loss - recorded.loss).abs() <= 1e-6 * recorded.loss.abs(),
        "the checkpoint's validation loss {loss} differs from the recorded {}",
        recorded.loss
    );
}

#[test]
fn config_json_round_trips_and_metrics_csv_has_one_row_per_step() {
    let config = tiny_run(5)
        .with_grad_clip(Some(0.5))
        .with_weight_decay(0.01);
    let dir = TempDir::new("files");
    let summary = run(&config, dir.path(), &TrainOptions::default());
    for file in addnorm_lab::experiments::train::run_files(dir.path()) {
        assert!(file.is_file(), "{} missing", file.display());
    }

    let saved: TrainConfig =
        serde_json::from_str(&read(&dir.join("config.json"))).expect("config.json is a config");
    assert_eq!(
        serde_json::to_value(&saved).unwrap(),
        serde_json::to_value(&config).unwrap()
    );
    assert_eq!(
        (saved.steps, saved.seed, saved.grad_clip),
        (5, 7, Some(0.5))
    );
    assert_eq!(saved.model.block().n_layers, 2);
    assert_eq!(saved.model.stack.vocab_size, 9);
    assert_eq!(saved.model.stack.max_seq_len, 9);
    assert_eq!(saved.task, Task::new(TaskKind::Reverse, 4, 6));

    let (header, rows) = metrics(dir.path());
    let mut expected_header: Vec<String> = [
        "step",
        "lr",
        "loss",
        "grad_norm",
        "val_loss",
        "val_token_acc",
        "val_exact_acc",
    ]
    .map(String::from)
    .to_vec();
    for l in 1..=2 {
        for w in ["w_q", "w_k", "w_v", "w_o", "w_1", "w_2"] {
            expected_header.push(format!("l{l}_grad_{w}"));
        }
    }
    expected_header
        .extend(["rms_0", "rms_1", "rms_2", "max_logit_1", "max_logit_2"].map(String::from));
    assert_eq!(header, expected_header.join(","));

    assert_eq!(rows.len(), 5, "one row per step");
    let schedule = config.schedule();
    for (step, row) in rows.iter().enumerate() {
        assert_eq!(row.len(), expected_header.len(), "row {step}: {row:?}");
        assert_eq!(row[0], step.to_string());
        let number = |i: usize| -> f64 {
            row[i].parse().unwrap_or_else(|e| {
                panic!(
                    "row {step} column {}: {:?}: {e}",
                    expected_header[i], row[i]
                )
            })
        };
        assert!((number(1) - schedule.at(step)).abs() <= 1e-6 * schedule.at(step));
        assert!((number(2) - summary.losses[step]).abs() <= 1e-6);
        assert!(number(3) > 0.0);
        // Evaluations after steps 3 and 5 (eval_every 3, and the last step).
        let evaluated = step == 2 || step == 4;
        assert_eq!(!row[4].is_empty(), evaluated, "row {step}: {row:?}");
        if evaluated {
            let e = summary
                .evaluations
                .iter()
                .find(|e| e.step == step + 1)
                .unwrap();
            assert!((number(4) - e.loss).abs() <= 1e-6);
            assert!((number(6) - e.accuracy.exact).abs() <= 1e-4);
        }
        // Per-layer statistics every stats_every = 2 steps.
        let with_stats = (step + 1) % 2 == 0;
        assert_eq!(!row[7].is_empty(), with_stats, "row {step}: {row:?}");
        if with_stats {
            for i in 7..row.len() {
                assert!(number(i).is_finite() && number(i) >= 0.0);
            }
        }
    }
}

/// Runs the `addnorm` binary this test suite was built with.
fn addnorm<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_addnorm"))
        .args(args)
        .output()
        .expect("run the addnorm binary")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The recipes of issue 27 from the command line: a ResiDual NormFormer model with
/// LayerScale, residual gating and both soft caps trains, and its config records each
/// option; residual gating on a parallel block is refused with exit code 2.
#[test]
fn cli_train_takes_the_modern_recipes() {
    let dir = TempDir::new("cli-recipes");
    let out = dir.path().to_str().unwrap();
    let output = addnorm(&[
        "train",
        "--backend",
        "ndarray",
        "--out",
        out,
        "--task",
        "copy",
        "--length",
        "3",
        "--symbols",
        "5",
        "--placement",
        "resi-dual",
        "--normformer",
        "--layer-scale",
        "0.1",
        "--attention-softcap",
        "5",
        "--final-softcap",
        "10",
        "--residual-gate",
        "--depth",
        "2",
        "--d-model",
        "8",
        "--heads",
        "2",
        "--steps",
        "3",
        "--batch",
        "4",
        "--eval-every",
        "3",
    ]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let config: TrainConfig = serde_json::from_str(&read(&dir.join("config.json")))
        .expect("config.json parses as a TrainConfig");
    let block = config.model.block();
    assert_eq!(block.placement, Placement::ResiDual);
    assert!(block.attention_output_norm && block.feed_forward_norm && block.head_scale);
    assert!(block.residual_gate);
    assert_eq!(
        (block.layer_scale, block.attention_logit_softcap),
        (Some(0.1), Some(5.0))
    );
    assert_eq!(config.model.stack.final_logit_softcap, Some(10.0));
    let summary: TrainSummary =
        serde_json::from_str(&read(&dir.join("summary.json"))).expect("summary.json");
    assert_eq!((summary.steps_completed, summary.diverged), (3, None));
    let bad = addnorm(&["train", "--out", out, "--final-softcap", "0"]);
    assert_eq!(bad.status.code(), Some(2), "stderr: {}", stderr(&bad));
    let args = [
        "train",
        "--out",
        out,
        "--placement",
        "parallel",
        "--residual-gate",
    ];
    let bad = addnorm(&args);
    assert_eq!(bad.status.code(), Some(2), "stderr: {}", stderr(&bad));
    assert!(stderr(&bad).contains("--residual-gate"), "{}", stderr(&bad));
}

#[test]
fn cli_train_with_tiny_settings_exits_0_and_writes_a_rerunnable_config() {
    let dir = TempDir::new("cli-train");
    let out = dir.path().to_str().unwrap();
    let output = addnorm(&[
        "train",
        "--backend",
        "ndarray",
        "--out",
        out,
        "--seed",
        "3",
        "--task",
        "copy",
        "--length",
        "3",
        "--symbols",
        "5",
        "--placement",
        "post",
        "--norm",
        "rms",
        "--depth",
        "1",
        "--d-model",
        "8",
        "--heads",
        "2",
        "--d-ff",
        "16",
        "--lr",
        "2e-3",
        "--warmup",
        "2",
        "--steps",
        "4",
        "--batch",
        "4",
        "--eval-every",
        "2",
        "--checkpoint-every",
        "2",
    ]);
    assert_eq!(output.status.code(), Some(0), "stderr: {}", stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("trained 4 steps"), "stdout: {stdout}");

    let config: TrainConfig = serde_json::from_str(&read(&dir.join("config.json")))
        .expect("config.json parses as a TrainConfig");
    assert_eq!(config.task, Task::new(TaskKind::Copy, 3, 5));
    let block = config.model.block();
    assert_eq!(block.placement, Placement::Post);
    assert_eq!((block.n_layers, block.d_model, block.n_heads), (1, 8, 2));
    assert_eq!((block.d_ff, config.model.stack.vocab_size), (16, 8));
    assert_eq!((config.learning_rate, config.warmup_steps), (2e-3, 2));
    assert_eq!((config.steps, config.batch_size, config.seed), (4, 4, 3));
    assert_eq!(config.model.backend, addnorm::backend::Kind::Ndarray);

    let (_, rows) = metrics(dir.path());
    assert_eq!(rows.len(), 4);
    let summary: TrainSummary =
        serde_json::from_str(&read(&dir.join("summary.json"))).expect("summary.json");
    assert_eq!(summary.steps_completed, 4);
    assert_eq!(summary.diverged, None);
    assert_eq!(
        summary
            .evaluations
            .iter()
            .map(|e| e.step)
            .collect::<Vec<_>>(),
        [2, 4]
    );
}

#[test]
fn cli_train_that_diverges_exits_1_and_names_the_kept_checkpoint() {
    let dir = TempDir::new("cli-diverge");
    let output = addnorm(&[
        "train",
        "--backend",
        "ndarray",
        "--out",
        dir.path().to_str().unwrap(),
        "--length",
        "3",
        "--d-model",
        "8",
        "--d-ff",
        "16",
        "--steps",
        "6",
        "--batch",
        "4",
        "--checkpoint-every",
        "2",
        "--inject-nan-at",
        "3",
    ]);
    assert_eq!(output.status.code(), Some(1), "stderr: {}", stderr(&output));
    let message = stderr(&output);
    assert!(
        message.contains("diverged at step 3") && message.contains("checkpoint (step 2)"),
        "stderr: {message}"
    );
}

/// Asserts that `args` exit with code 2, name `argument` and `value` on standard error, and
/// write nothing to `out`.
fn assert_rejected(args: &[&str], out: &Path, argument: &str, value: &str) {
    let output = addnorm(args);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{args:?}: stderr: {message}");
    assert!(
        message.contains(argument) && message.contains(value),
        "{args:?}: the message should name {argument} and {value}: {message}"
    );
    assert!(!out.exists(), "{args:?} wrote {}", out.display());
}

#[test]
fn cli_rejects_an_unknown_placement() {
    let dir = TempDir::new("cli-placement");
    let out = dir.path().to_str().unwrap();
    assert_rejected(
        &["train", "--out", out, "--placement", "middle"],
        dir.path(),
        "--placement",
        "middle",
    );
    assert_rejected(
        &["probe", "--out", out, "--placements", "post,middle"],
        dir.path(),
        "--placements",
        "middle",
    );
}

#[test]
fn cli_refuses_runs_that_would_exhaust_memory_or_time_before_any_work() {
    let dir = TempDir::new("cli-cost");
    let out = dir.path().to_str().unwrap();
    assert_rejected(
        &["train", "--out", out, "--length", "100000"],
        dir.path(),
        "--length",
        "of memory",
    );
    assert_rejected(
        &[
            "sweep",
            "--out",
            out,
            "--depths",
            "2,100000",
            "--d-model",
            "4096",
        ],
        dir.path(),
        "--depth",
        "of memory",
    );
    assert_rejected(
        &["train", "--out", out, "--steps", "1000000000000000"],
        dir.path(),
        "--steps",
        "floating-point operations",
    );
}

#[test]
fn cli_rejects_depth_0() {
    let dir = TempDir::new("cli-depth");
    let out = dir.path().to_str().unwrap();
    assert_rejected(
        &["train", "--out", out, "--depth", "0"],
        dir.path(),
        "--depth",
        "0",
    );
    assert_rejected(
        &["probe", "--out", out, "--depths", "2,0"],
        dir.path(),
        "--depths",
        "at least 1",
    );
}

/// Widths the attention cannot split into heads are refused by every command that builds
/// a model, before any work (they used to panic in the model's constructor, exit 101).
#[test]
fn cli_rejects_a_width_that_the_heads_do_not_divide() {
    let dir = TempDir::new("cli-heads");
    let out = dir.path().to_str().unwrap();
    for command in ["train", "probe", "sweep"] {
        assert_rejected(
            &[command, "--out", out, "--d-model", "30", "--heads", "4"],
            dir.path(),
            "--heads 4",
            "--d-model 30",
        );
    }
    // The command's default head count counts too: train's is 2.
    assert_rejected(
        &["train", "--out", out, "--d-model", "31"],
        dir.path(),
        "--heads 2",
        "--d-model 31",
    );
}

#[test]
fn cli_rejects_a_negative_learning_rate() {
    let dir = TempDir::new("cli-lr");
    let out = dir.path().to_str().unwrap();
    assert_rejected(
        &["train", "--out", out, "--lr=-1e-3"],
        dir.path(),
        "--lr",
        "-1e-3",
    );
    assert_rejected(
        &["train", "--out", out, "--lr", "0"],
        dir.path(),
        "--lr",
        "positive",
    );
    // The spelling users type: clap must take "-1e-3" as --lr's value, not as a flag.
    assert_rejected(
        &["train", "--out", out, "--lr", "-1e-3"],
        dir.path(),
        "--lr",
        "-1e-3",
    );
}

#[test]
fn cli_rejects_an_unwritable_out() {
    let file = TempDir::new("cli-out-file");
    std::fs::write(file.path(), b"a regular file").unwrap();
    let under_a_file = file.join("sub");
    let out = under_a_file.to_str().unwrap();
    for command in ["train", "probe"] {
        let output = addnorm(&[command, "--backend", "ndarray", "--out", out]);
        let message = stderr(&output);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{command}: stderr: {message}"
        );
        assert!(
            message.contains("--out") && message.contains(out),
            "{command}: the message should name --out and {out}: {message}"
        );
    }
    assert_eq!(read(file.path()), "a regular file");
}

/// With the Vulkan loader pointed at no driver, `--backend wgpu` exits with code 2 before
/// any work, naming the missing driver, instead of panicking in Burn's device thread.
#[cfg(feature = "wgpu")]
#[test]
fn cli_wgpu_without_a_driver_exits_2_and_names_the_driver() {
    let dir = TempDir::new("cli-no-driver");
    let out = dir.path().to_str().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_addnorm"))
        .args(["train", "--backend", "wgpu", "--steps", "1", "--out", out])
        .env("VK_ICD_FILENAMES", "/nonexistent/icd.json")
        .env("VK_DRIVER_FILES", "/nonexistent/icd.json")
        .output()
        .expect("run the addnorm binary");
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "stderr: {message}");
    assert!(
        message.contains("no GPU adapter found") && message.contains("mesa-vulkan-drivers"),
        "the message should name the missing driver: {message}"
    );
    assert!(!message.contains("panicked"), "{message}");
    assert!(!dir.path().exists(), "wrote {out}");
}

/// A backend this build does not have is refused by name, with the feature that adds it.
#[cfg(not(feature = "cuda"))]
#[test]
fn cli_rejects_a_backend_that_is_not_compiled_in() {
    let dir = TempDir::new("cli-no-cuda");
    let out = dir.path();
    assert_rejected(
        &["train", "--backend", "cuda", "--out", out.to_str().unwrap()],
        out,
        "--backend",
        "--features cuda",
    );
}
