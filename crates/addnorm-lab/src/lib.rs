#![warn(missing_docs)]
//! addnorm's lab: toy tasks, training, and the gradient-stability study that reproduces
//! Xiong et al. (2020), "On Layer Normalization in the Transformer Architecture", Wortsman
//! et al. (2023), "Small-scale proxies for large-scale Transformer training instabilities",
//! and DeepNet's (Wang et al. 2022) model update.
//!
//! # Formulas
//! ```text
//! Post-LN  x_{l+1} = Norm(x_l + F(x_l))        Pre-LN  x_{l+1} = x_l + F(Norm(x_l))
//! Theorem 1 (at init, W^Q = W^K = 0):  ‖∂L/∂W₂^{(L)}‖_F = O(d√ln d) (Post)  O(d√(ln d / L)) (Pre)
//! Lemma 2 (Pre-LN):                    1 + l/2 ≤ E‖x_l‖²/d ≤ 1 + 3l/2
//! LR sensitivity (Wortsman et al.):    E_η[min(ℓ(η), ℓ₀) − ℓ*]
//! model update (DeepNet):              ‖F(x, θ_t) − F(x, θ₀)‖
//! ```
//!
//! # Floor plan
//! From the command line down to the leaves; no module imports one that imports it back
//! (a sweep's driver in `experiments` runs through the `runner`'s workers, which train):
//! - [`cli`]: the `addnorm` command line (arguments, commands, printing);
//! - [`study`]: the demo, one file per paper, its claims, report and plots;
//! - [`runner`]: running runs (jobs, workers and their leases, shards, merge, collect);
//! - [`experiments`]: tasks, training, the probe, the sweep, the proxies, the model update
//!   and the expected gradient, each holding the one [`experiments::model::ModelConfig`];
//! - leaves: [`stats`] (bootstrap, fits, LR sensitivity), [`plot`] (charts), [`error`].
//!
//! # Shapes
//! Tasks produce token batches `[batch, 2n + 1]`; the models map them to logits
//! `[batch, 2n + 1, vocab]`.

pub mod cli;
pub mod error;
pub mod experiments;
pub mod plot;
pub mod runner;
pub mod stats;
pub mod study;

pub use error::LabError;
pub use experiments::task::{Task, TaskKind};
pub use experiments::train::{TrainConfig, TrainOptions, TrainSummary, train};
