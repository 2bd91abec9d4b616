//! What a run would cost, estimated from its configuration before any work starts, so
//! that an argument which would exhaust memory or time is refused with a clear message
//! (exit code 2) instead of aborting in an allocation hours later.
//!
//! ```text
//! T = 2n + 1 positions, V vocabulary, d width, f = d_ff, h heads, L layers, B batch
//! parameters   P = V·d + T·d + L·(4d² + 2d·f) + d·V
//! one step     bytes ≈ 4 · (4P + B·T·L·(12d + 3f + 2h·T) + 3·B·T·V)
//!              (weights, gradients and AdamW's two moments; each layer's saved
//!               activations, with one [B, h, T, T] score tensor; logits and their grad)
//! validation   bytes ≈ 4 · N_val·T·(8d + f + h·T + 2V)   for one layer at a time
//! time         flops ≈ steps · (6·P·B·T + 12·L·B·T²·d)
//! ```
//!
//! [`step_matmul_flops`] is the exact count of one step's matrix products, which the
//! benchmarks divide by time for GFLOP/s:
//!
//! ```text
//! N = B·T tokens, causal attention:
//! forward = L·(2N·(4d² + 2d·f) + 2B·T(T+1)·d) + 2N·d·V      step = 3 · forward
//! ```
//!
//! The estimate is deliberately rough (within a small factor); the limits only catch
//! configurations that are off by orders of magnitude: memory beyond what the machine has,
//! or compute beyond [`MAX_FLOPS`].
//!
//! # Shapes
//! Not applicable: arithmetic on sizes.

use addnorm::nn::TransformerStackConfig;

use crate::experiments::train::TrainConfig;

/// The most floating-point operations a run may need: 10¹⁷, a week at about 165 GFLOP/s,
/// far beyond any toy study.
pub const MAX_FLOPS: f64 = 1e17;

/// A run's estimated cost.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cost {
    /// Peak bytes of one training step (or of the validation pass, if larger).
    pub bytes: f64,
    /// Floating-point operations of the whole run.
    pub flops: f64,
}

/// The estimate of the [module docs](self) for `config`.
pub fn estimate(config: &TrainConfig) -> Cost {
    let m = config.model.block();
    let f = |x: usize| x as f64;
    let (t, v) = (f(config.task.seq_len()), f(config.task.vocab_size()));
    let (d, ff, h, l) = (f(m.d_model), f(m.d_ff), f(m.n_heads), f(m.n_layers));
    let b = f(config.batch_size);
    let params = v * d + t * d + l * (4.0 * d * d + 2.0 * d * ff) + d * v;
    let activations = b * t * l * (12.0 * d + 3.0 * ff + 2.0 * h * t) + 3.0 * b * t * v;
    let validation = f(config.validation_size) * t * (8.0 * d + ff + h * t + 2.0 * v);
    let bytes = 4.0 * (4.0 * params + activations.max(validation));
    let flops = f(config.steps) * (6.0 * params * b * t + 12.0 * l * b * t * t * d);
    Cost { bytes, flops }
}

/// The floating-point operations of one training step of `stack` on `[batch, seq]` tokens,
/// counted as 2 per multiply-add of the matrix products (the rest is lower order): see the
/// [module docs](self); the backward is twice the forward.
pub fn step_matmul_flops(stack: &TransformerStackConfig, batch: usize, seq: usize) -> f64 {
    let block = &stack.block;
    let (n, d, f) = (
        (batch * seq) as f64,
        block.d_model as f64,
        block.d_ff as f64,
    );
    let per_layer =
        2.0 * n * (4.0 * d * d + 2.0 * d * f) + 2.0 * (batch * seq * (seq + 1)) as f64 * d;
    let forward = block.n_layers as f64 * per_layer + 2.0 * n * d * stack.vocab_size as f64;
    3.0 * forward
}

/// Bytes of memory this machine has available (Linux `MemAvailable`), if known.
pub fn available_bytes() -> Option<f64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024.0)
}

fn human(bytes: f64) -> String {
    const UNITS: [&str; 6] = ["B", "KB", "MB", "GB", "TB", "PB"];
    let mut x = bytes;
    let mut unit = 0;
    while x >= 1000.0 && unit + 1 < UNITS.len() {
        x /= 1000.0;
        unit += 1;
    }
    format!("{x:.1} {}", UNITS[unit])
}

/// Checks `config` against `available` bytes of memory (if known) and [`MAX_FLOPS`].
///
/// # Errors
/// A message with the estimate, the limit, and which arguments make the run smaller.
pub fn check(config: &TrainConfig, available: Option<f64>) -> Result<(), String> {
    let cost = estimate(config);
    if let Some(avail) = available.filter(|&a| cost.bytes > 0.8 * a) {
        return Err(format!(
            "the run would need about {} of memory at its peak (a training step or the \
             validation pass), and this machine has {} \
             available; make --length, --symbols, --batch, --depth, --d-model or --d-ff \
             smaller",
            human(cost.bytes),
            human(avail)
        ));
    }
    if cost.flops.is_nan() || cost.flops > MAX_FLOPS {
        return Err(format!(
            "the run would need about {:.1e} floating-point operations (more than a week at \
             165 GFLOP/s; the limit is {MAX_FLOPS:.0e}); make --steps or the model smaller",
            cost.flops
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The demo's model (L = 6, d = 32, d_ff = 128, V = 12) on [32, 17] tokens, counted by
    /// hand: N = 544, per layer 2·544·12 288 + 2·32·17·18·32 = 13 996 032, forward
    /// 6·13 996 032 + 2·544·32·12 = 84 393 984, step three times that.
    #[test]
    fn step_matmul_flops_counts_the_demo_model() {
        let block = addnorm::nn::TransformerBlockConfig::new(32, 2, 128).with_n_layers(6);
        let stack = TransformerStackConfig::tiny()
            .with_block(block)
            .with_vocab_size(12);
        assert_eq!(step_matmul_flops(&stack, 32, 17), 253_181_952.0);
    }
    use crate::experiments::model::ModelConfig;
    use crate::experiments::task::{Task, TaskKind};

    /// The tiny Pre-LN model (d_model 32, 2 heads, d_ff 128, 2 layers).
    fn config(length: usize, steps: usize) -> TrainConfig {
        let task = Task::new(TaskKind::Reverse, length, 10);
        TrainConfig::for_task(task, ModelConfig::new()).with_steps(steps)
    }

    #[test]
    fn a_toy_run_passes_and_a_hundred_thousand_symbol_question_does_not() {
        let gib = 16.0 * (1u64 << 30) as f64;
        assert!(check(&config(8, 1000), Some(gib)).is_ok());
        let cost = estimate(&config(8, 1000));
        // About 25 k parameters and 1 M activation floats: a few MB in all.
        assert!(cost.bytes > 1e5 && cost.bytes < 1e8, "{cost:?}");
        let err = check(&config(100_000, 1000), Some(gib)).unwrap_err();
        assert!(err.contains("TB of memory"), "{err}");
        assert!(err.contains("--length"), "{err}");
    }

    #[test]
    fn too_many_steps_are_refused_even_when_memory_is_unknown() {
        let err = check(&config(8, usize::MAX / 2), None).unwrap_err();
        assert!(err.contains("floating-point operations"), "{err}");
        assert!(check(&config(8, 1000), None).is_ok());
    }
}
