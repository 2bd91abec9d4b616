//! [`ResidualGate`]: residual gating, a GRU cell in place of the residual sum. It is
//! x-transformers' `gate_residual` (`GRUGating`: `nn.GRUCell(branch, residual)`), the
//! gating that Parisotto et al. 2020 (GTrXL, §3, "Gated Identity Connections") put in place
//! of a transformer's residual additions.
//!
//! For a branch term `y` (what the connection adds) and a residual `x`:
//!
//! ```text
//! r  = σ(y·W_ir + b_ir + x·W_hr + b_hr)        reset gate
//! z  = σ(y·W_iz + b_iz + x·W_hz + b_hz)        update gate
//! n  = tanh(y·W_in + b_in + r ⊙ (x·W_hn + b_hn))
//! x' = (1 − z) ⊙ n + z ⊙ x                     instead of x' = x + y
//! ```
//!
//! `W_i = [W_ir | W_iz | W_in]` and `W_h` (each `[d_model, 3·d_model]`) are PyTorch's
//! `weight_ih` and `weight_hh` transposed; every weight and bias starts uniform in
//! `[−1/√d_model, 1/√d_model]`, as `nn.GRUCell`'s do. The gate acts on each token's
//! `d_model` features alone.
//!
//! # Shapes
//! - branch `y`, residual `x` and output: `[batch, seq, d_model]`

use burn::module::{Initializer, Module};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::activation::{sigmoid, tanh};
use burn::tensor::{Tensor, backend::Backend};

use addnorm_kernels::NormBackend;

use super::linear;

/// A GRU cell joining a branch term to the residual (see the [module docs](self)).
#[derive(Module, Debug)]
pub struct ResidualGate<B: Backend> {
    /// `y·W_i + b_i` for the branch term: PyTorch's `weight_ih` (transposed) and `bias_ih`,
    /// `[d_model, 3·d_model]` with columns (r, z, n).
    pub input: Linear<B>,
    /// `x·W_h + b_h` for the residual: PyTorch's `weight_hh` (transposed) and `bias_hh`.
    pub hidden: Linear<B>,
}

impl<B: Backend> ResidualGate<B> {
    /// A gate over `d_model` features, initialized as `nn.GRUCell(d_model, d_model)`.
    pub fn new(d_model: usize, device: &B::Device) -> Self {
        let bound = 1.0 / (d_model as f64).sqrt();
        let make = || {
            LinearConfig::new(d_model, 3 * d_model)
                .with_initializer(Initializer::Uniform {
                    min: -bound,
                    max: bound,
                })
                .init(device)
        };
        Self {
            input: make(),
            hidden: make(),
        }
    }
}

impl<B: NormBackend> ResidualGate<B> {
    /// `x' = (1 − z) ⊙ n + z ⊙ x` for the branch term `branch` and the residual `residual`.
    ///
    /// # Shapes
    /// - `branch`, `residual` and output: `[batch, seq, d_model]`
    pub fn forward(&self, branch: Tensor<B, 3>, residual: Tensor<B, 3>) -> Tensor<B, 3> {
        let [gi_r, gi_z, gi_n] = thirds(linear::forward(&self.input, branch));
        let [gh_r, gh_z, gh_n] = thirds(linear::forward(&self.hidden, residual.clone()));
        let r = sigmoid(gi_r + gh_r);
        let z = sigmoid(gi_z + gh_z);
        let n = tanh(gi_n + r * gh_n);
        // (1 − z) ⊙ n + z ⊙ x, written as n + z ⊙ (x − n).
        n.clone() + z * (residual - n)
    }
}

/// The (r, z, n) thirds of the last axis (Burn's `chunk`).
fn thirds<B: Backend>(t: Tensor<B, 3>) -> [Tensor<B, 3>; 3] {
    t.chunk(3, 2)
        .try_into()
        .unwrap_or_else(|_| unreachable!("3·d_model features split into three"))
}
