//! The fused CPU kernels of [`RowNormBackend::norm_rows`](crate::RowNormBackend::norm_rows)
//! and [`dynamic_tanh`](crate::RowNormBackend::dynamic_tanh): one forward and one backward
//! pass over `[rows, n]`, rows in parallel (rayon) when the call is large enough to pay for
//! the hand-off ([`plan::rows_per_task`]), inner loops written so the compiler vectorizes
//! them ([`crate::cpu::dispatch`] picks the widest instruction set at run time). They run
//! in f32 and f64, on plain slices, so they can be tested and reused without a backend;
//! `super::ndarray` runs them on `NdArray` tensors.
//!
//! - [`plan`]: the per-call constants and the split of rows into tasks.
//! - [`forward`]: `y`, and the per-row shift and `r` it saves.
//! - [`backward`]: dx, dγ, dβ from `x`, `dy` and the saved statistics.
//! - [`dyt`]: the fused Dynamic Tanh forward and backward.
//!
//! # Formula
//! See [`super::spec`] and [`plan`]: `y = (x − μ)·r·γ + β` with the saved statistics
//! `shift = μ − p` and `r = 1/√(σ² + ε)` or `1/(√σ² + ε)`; DyT `y = γ·tanh(α·x) + β`.
//!
//! # Shapes
//! - `x`, `y`, `dy`, `dx`: `[rows, n]` row-major; `gamma`, `beta`: `[n]`;
//!   `shift`, `rstd`: `[rows]`

pub mod backward;
pub mod dyt;
pub mod forward;
pub mod plan;

#[cfg(test)]
mod tests {
    use super::plan::RowPlan;
    use super::{backward, dyt, forward};
    use crate::cpu::dispatch::{
        assert_every_copy_gives_the_baseline_bits, under_every_instruction_set,
    };
    use crate::cpu::test_values::{gradients, inputs};
    use crate::norm::spec::RowNormSpec;

    #[test]
    fn the_kernels_give_the_same_bits_under_every_instruction_set() {
        let (rows, n) = (45, 301); // a tail after every vector width
        let x: Vec<f32> = inputs(rows * n, 3e-3, -1.2);
        let dy: Vec<f32> = gradients(rows * n, 1e-3, -0.4);
        let gamma: Vec<f32> = (0..n).map(|j| 1.0 + j as f32 * 1e-3).collect();
        let beta: Vec<f32> = (0..n).map(|j| j as f32 * -2e-3).collect();
        let run = || {
            let mut outputs = Vec::new();
            for spec in [RowNormSpec::layer_norm(1e-5), RowNormSpec::rms_norm(1e-6)] {
                let plan = RowPlan::<f32>::new(&spec, n);
                let (mut y, mut shift, mut rstd) =
                    (vec![0.0; rows * n], vec![0.0; rows], vec![0.0; rows]);
                forward::forward(&plan, &x, &gamma, &beta, &mut y, &mut shift, &mut rstd);
                let mut dx = vec![0.0; rows * n];
                let grads = backward::backward(&plan, &x, &dy, &gamma, &shift, &rstd, &mut dx);
                outputs.push([y, shift, rstd, dx, grads.gamma, grads.beta]);
            }
            let mut y = vec![0.0; rows * n];
            dyt::forward(n, &x, 0.7, &gamma, &beta, &mut y);
            let mut dx = vec![0.0; rows * n];
            let grads = dyt::backward(n, &x, &dy, 0.7, &gamma, &mut dx);
            outputs.push([y, dx, grads.gamma, grads.beta, vec![grads.alpha], vec![]]);
            outputs
        };
        let results = under_every_instruction_set(run);
        assert_every_copy_gives_the_baseline_bits(&results, |outputs| {
            outputs.iter().flatten().flatten().copied().collect()
        });
    }
}
