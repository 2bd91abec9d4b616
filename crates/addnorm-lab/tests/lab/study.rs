//! The study's newer measurements: Fig. 3's expected gradient, the z-loss and log Z, the
//! Markov task on the command line, independent weight decay, and the model update.

use addnorm::backend::ndarray::{AutodiffBackend as B, device};
use addnorm::nn::{Norm, Placement, TransformerStack, TransformerStackConfig};
use addnorm_lab::experiments::expected_gradient::{
    ExpectedGradientConfig, expected_gradient_one, summed_ffn_gradients, track_ffn_weights_only,
};
use addnorm_lab::experiments::model::ModelConfig;
use addnorm_lab::experiments::model_update::{ModelUpdateConfig, model_update_one};
use addnorm_lab::experiments::norm_kind::NormKind;
use addnorm_lab::experiments::sgd_update::sgd_update_one;
use addnorm_lab::experiments::task::{Task, TaskKind};
use addnorm_lab::experiments::train::loss::{
    log_partition, masked_cross_entropy, objective, z_loss,
};
use addnorm_lab::experiments::train::qk_gain::qk_gains;
use addnorm_lab::{TrainConfig, TrainOptions, train};
use burn::module::Param;
use burn::tensor::{ElementConversion, Int, Tensor, TensorData};

use super::{TempDir, assert_rejected};

fn fig3_config() -> ExpectedGradientConfig {
    ExpectedGradientConfig::new(Task::new(TaskKind::Reverse, 3, 5), narrow_model())
        .with_placements(vec![Placement::Post])
        .with_norm(NormKind::Layer)
        .with_depths(vec![2])
        .with_seeds(vec![4])
        .with_batches(3)
        .with_batch_size(4)
}

/// d_model 16, 2 heads, d_ff 32 on ndarray.
fn narrow_model() -> ModelConfig {
    let stack = TransformerStackConfig::tiny()
        .with_d_model(16)
        .with_d_ff(32);
    ModelConfig::new()
        .with_stack(stack)
        .with_backend(addnorm::backend::Kind::Ndarray)
}

/// Leaving every other parameter out of autodiff changes no bit of the FFN weights'
/// gradients (it only skips work): the expected-gradient measurement relies on it.
#[test]
fn tracking_only_the_ffn_weights_leaves_their_gradients_bit_identical() {
    let config = fig3_config();
    for placement in [Placement::Post, Placement::Pre] {
        let model = addnorm_lab::experiments::train::seeded::init_model::<B>(
            &config.cell_model(placement, 2),
            3,
            &device(),
        );
        let task = (3, 0, 2, 4);
        let all = summed_ffn_gradients(&model, &config.task, task, &device());
        let frozen = summed_ffn_gradients(
            &track_ffn_weights_only(model),
            &config.task,
            task,
            &device(),
        );
        assert_eq!(all.len(), frozen.len());
        for (a, b) in all.into_iter().zip(frozen) {
            assert_eq!(a.into_data(), b.into_data(), "{placement}");
        }
    }
}

/// Every batch scores the same number of positions, so the mean of the K batch gradients
/// is the gradient of the loss over their union, which the measurement takes (the batches
/// go through the model in unions): checked against one backward per batch, summed.
#[test]
fn the_expected_gradient_equals_the_mean_of_the_batch_gradients() {
    let config = fig3_config();
    let run = expected_gradient_one::<B>(&config, (Placement::Post, 2, 4), &device());
    let model = addnorm_lab::experiments::train::seeded::init_model::<B>(
        &config.cell_model(Placement::Post, 2),
        4,
        &device(),
    );
    let per_batch: Vec<_> = (0..3)
        .map(|k| {
            let (inputs, targets, mask) = config
                .task
                .training_batch(4, k, 4)
                .to_tensors::<B>(&device());
            masked_cross_entropy(model.forward(inputs), targets, mask).backward()
        })
        .collect();
    let norm = |p: &Param<Tensor<B, 2>>| -> f64 {
        let sum = per_batch
            .iter()
            .map(|grads| p.grad(grads).unwrap())
            .reduce(|a, b| a + b)
            .unwrap();
        (sum / 3.0).square().sum().sqrt().into_scalar().elem()
    };
    for (l, block) in model.blocks.iter().enumerate() {
        let (w1, w2) = (
            norm(&block.feed_forward.inner.weight),
            norm(&block.feed_forward.outer.weight),
        );
        assert!(
            (run.w_1[l] - w1).abs() <= 1e-4 * w1,
            "W₁ layer {l}: {} vs {w1}",
            run.w_1[l]
        );
        assert!(
            (run.w_2[l] - w2).abs() <= 1e-4 * w2,
            "W₂ layer {l}: {} vs {w2}",
            run.w_2[l]
        );
    }
    // Averaging cancels noise: the norm of the mean is below the mean of the norms.
    let single = {
        let (i, t, m) = config
            .task
            .training_batch(4, 0, 4)
            .to_tensors::<B>(&device());
        let g = masked_cross_entropy(model.forward(i), t, m).backward();
        let w = &model.blocks[0].feed_forward.outer.weight;
        w.grad(&g)
            .unwrap()
            .square()
            .sum()
            .sqrt()
            .into_scalar()
            .elem::<f64>()
    };
    assert!(
        run.w_2[0] < 2.0 * single,
        "{} vs one batch {single}",
        run.w_2[0]
    );
}

#[test]
fn log_z_and_the_z_loss_match_hand_computed_values() {
    let d = device();
    let logits = Tensor::<B, 3>::from_data(
        TensorData::new(vec![1.0f32, 2.0, 3.0, 100.0, 100.0, 100.0], [1, 2, 3]),
        &d,
    );
    let lz: Vec<f32> = log_partition(logits.clone()).into_data().to_vec().unwrap();
    let first = (1f64.exp() + 2f64.exp() + 3f64.exp()).ln();
    let second = 100.0 + 3f64.ln();
    assert!((lz[0] as f64 - first).abs() < 1e-5 && (lz[1] as f64 - second).abs() < 1e-4);
    // Only the first position is scored: z-loss = (log Z₀)².
    let mask = Tensor::<B, 2>::from_data(TensorData::new(vec![1.0f32, 0.0], [1, 2]), &d);
    let z: f64 = z_loss(logits.clone(), mask.clone()).into_scalar().elem();
    assert!((z - first * first).abs() < 1e-4, "{z}");
    let targets = Tensor::<B, 2, Int>::from_data(TensorData::new(vec![2i64, 0], [1, 2]), &d);
    let ce: f64 = masked_cross_entropy(logits.clone(), targets.clone(), mask.clone())
        .into_scalar()
        .elem();
    let total: f64 = objective(logits, targets, mask, 1e-2).into_scalar().elem();
    assert!(
        (total - ce - 1e-2 * first * first).abs() < 1e-5,
        "{total} vs {ce}"
    );
    // Its gradient pushes every logit down by 2c·log Z·softmax: d/dx₃ = 2c·log Z·p₃.
}

#[test]
fn independent_weight_decay_hands_burn_lambda_over_the_peak_lr() {
    let model = narrow_model();
    let config = addnorm_lab::TrainConfig::for_task(Task::new(TaskKind::Reverse, 3, 5), model)
        .with_learning_rate(0.1)
        .with_weight_decay(1e-4);
    // Burn decays by lr(s)·λ'. Coupled: λ' = λ, so 1e-5 per step at the peak; independent:
    // λ' = λ/lr_peak, so λ·lr(s)/lr_peak = 1e-4 at the peak, whatever the peak.
    assert_eq!(config.burn_weight_decay(), 1e-4);
    let independent = config.with_independent_weight_decay(true);
    assert!((independent.burn_weight_decay() * 0.1 - 1e-4).abs() < 1e-12);
}

/// A QK-norm stack of two layers, separate norms for queries and keys when `separate`.
fn qk_stack(separate: bool) -> TransformerStackConfig {
    narrow_model()
        .stack
        .with_n_layers(2)
        .with_qk_norm(Some(NormKind::Layer.config()))
        .with_separate_qk_norms(separate)
}

/// Sets every entry of a LayerNorm's γ to `value`.
fn set_gamma(norm: &mut Option<Norm<B>>, value: f32) {
    let Some(Norm::Layer(n)) = norm else {
        panic!("a LayerNorm QK norm")
    };
    let shape = n.gamma.as_ref().expect("affine").val().dims();
    n.gamma = Some(Param::from_tensor(Tensor::full(shape, value, &device())));
}

/// gain_l = rms(γ_Q)·rms(γ_K): 1 at init, 2·3 with γ_Q = 2 and γ_K = 3, 2² with one
/// shared norm of γ = 2; none without QK norms.
#[test]
fn the_qk_gain_is_the_product_of_the_two_gammas_rms() {
    let mut model: TransformerStack<B> = qk_stack(true).init(&device());
    assert_eq!(qk_gains(&model), vec![1.0, 1.0]);
    set_gamma(&mut model.blocks[1].attention.qk_norm, 2.0);
    set_gamma(&mut model.blocks[1].attention.key_norm, 3.0);
    assert_eq!(qk_gains(&model), vec![1.0, 6.0]);
    let mut shared: TransformerStack<B> = qk_stack(false).init(&device());
    assert!(shared.blocks[0].attention.key_norm.is_none());
    set_gamma(&mut shared.blocks[0].attention.qk_norm, 2.0);
    assert_eq!(qk_gains(&shared), vec![4.0, 1.0]);
    let plain: TransformerStack<B> = narrow_model().stack.init(&device());
    assert!(qk_gains(&plain).is_empty());
}

/// Every evaluation records each layer's largest logit (layer 0 first; their maximum is the
/// run's max logit) and, with QK norms, each layer's gain.
#[test]
fn evaluations_record_per_layer_logits_and_the_qk_gain() {
    let model = ModelConfig::new()
        .with_stack(qk_stack(true))
        .with_backend(addnorm::backend::Kind::Ndarray);
    let config = TrainConfig::for_task(Task::new(TaskKind::Reverse, 3, 5), model)
        .with_steps(4)
        .with_eval_every(2)
        .with_batch_size(4)
        .with_validation_size(8)
        .with_learning_rate(1e-2);
    let out = TempDir::new("qk-gain-run");
    let summary = train::<B>(&config, out.path(), &TrainOptions::default(), &device())
        .expect("the run directory is writable");
    let initial = summary.initial_evaluation.expect("recorded");
    assert_eq!(initial.qk_gain, vec![1.0, 1.0]);
    for e in &summary.evaluations {
        assert_eq!(e.attention_logits.len(), 2);
        assert_eq!(e.layer_0_logit(), e.attention_logits[0]);
        let max = e.attention_logits.iter().copied().fold(f64::MIN, f64::max);
        assert_eq!(e.max_attention_logit, max);
        assert_eq!(e.qk_gain.len(), 2);
        assert!(e.qk_gain.iter().all(|g| g.is_finite() && *g > 0.0));
    }
    // AdamW at LR 1e-2 moves γ by about the LR per step.
    let last = summary.evaluations.last().expect("evaluated").qk_gain[0];
    assert!(
        (last - 1.0).abs() > 1e-4 && (last - 1.0).abs() < 0.2,
        "{last}"
    );
}

/// After every step the model has moved (‖ΔF‖ > 0 and finite), one value per step.
#[test]
fn the_model_update_is_recorded_after_every_step() {
    let config = ModelUpdateConfig::new(Task::new(TaskKind::Reverse, 3, 5), narrow_model())
        .with_placements(vec![Placement::Post, Placement::DeepNorm])
        .with_depths(vec![2])
        .with_seeds(vec![0])
        .with_learning_rate(1e-3)
        .with_steps(3)
        .with_batch_size(4);
    let run = model_update_one::<B>(&config, (Placement::Post, 2, 0), &device());
    assert_eq!(run.updates.len(), 3);
    assert!(
        run.updates.iter().all(|u| u.is_finite() && *u > 0.0),
        "{:?}",
        run.updates
    );
    assert_eq!((run.first(), run.last()), (run.updates[0], run.updates[2]));
    assert_eq!(config.cells().len(), 2);
}

/// One plain SGD step moves F by Θ(η): ‖ΔF‖/η at step lengths s and s/10 agree (DeepNet
/// §4.3's limit), η = s/‖∇L‖ exactly, and the step moves the model at all.
#[test]
fn one_sgd_step_moves_the_features_in_proportion_to_the_step() {
    let config = ModelUpdateConfig::new(Task::new(TaskKind::Reverse, 3, 5), narrow_model())
        .with_placements(vec![Placement::Post, Placement::DeepNorm])
        .with_depths(vec![2])
        .with_seeds(vec![0])
        .with_batch_size(4)
        .with_sgd_step_lengths(vec![1e-2, 1e-3]);
    for placement in [Placement::Post, Placement::DeepNorm] {
        let run = sgd_update_one::<B>(&config, (placement, 2, 0), &device());
        assert!(run.gradient_norm.is_finite() && run.gradient_norm > 0.0);
        let expected = [1e-2 / run.gradient_norm, 1e-3 / run.gradient_norm];
        assert_eq!(run.learning_rates, expected);
        assert!(
            run.updates.iter().all(|u| u.is_finite() && *u > 1e-3),
            "{run:?}"
        );
        assert_eq!(run.at_smallest(), run.updates[1]);
        let linearity = run.linearity();
        assert!((linearity - 1.0).abs() < 0.05, "{placement}: {linearity}");
    }
}

#[test]
fn cli_refuses_a_markov_task_with_too_few_symbols() {
    let dir = TempDir::new("cli-markov");
    let out = dir.path().to_str().unwrap();
    assert_rejected(
        &["train", "--out", out, "--task", "markov", "--symbols", "3"],
        dir.path(),
        "--symbols",
        "3",
    );
}
