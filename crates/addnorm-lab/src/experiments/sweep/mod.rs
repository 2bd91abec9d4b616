//! Experiment B: warm-up and learning rate (Xiong et al. 2020, §3.2; Wortsman et al. 2024).
//!
//! Trains every placement × depth × warm-up × LR × seed with no gradient clipping, and
//! reports
//!
//! ```text
//! divergence rate k/n      per cell; a run diverges if its loss or gradient becomes
//!                          non-finite, or its last 10 losses average above its first
//! final validation loss and accuracy, median steps to 99% exact accuracy   per cell
//! largest stable LR        per (placement, depth, warm-up): the largest LR with no divergence
//! LR sensitivity           E_η[ ℓ(η) − ℓ* ] over the LR grid (Wortsman et al. 2023,
//!                          crate::stats::sensitivity): ℓ(η) the mean over seeds of min(final
//!                          validation loss, ℓ₀), a diverged seed counting as ℓ₀, the
//!                          initial validation loss; ℓ* the configuration's own best ℓ(η)
//!                          (§2.2)
//! ```
//!
//! Each run lives in `runs/<name>/`; a run whose `summary.json` is complete is reused, and
//! an interrupted one resumes from its checkpoint, so rerunning a sweep continues it.
//!
//! One concept per file: [`config`] (the grid and each run's training configuration),
//! [`record`] (what `sweep.json` holds), [`aggregate`](mod@aggregate) (runs into cells, configurations
//! and loss tables), [`driver`] (a worker's share of the grid) and [`tables`] (Markdown).
//!
//! # Shapes
//! Not applicable: a sweep is a grid of [`crate::experiments::train`](mod@crate::experiments::train) runs.

pub mod aggregate;
pub mod config;
pub mod driver;
pub mod record;
pub mod tables;

pub use aggregate::{aggregate, loss_table, summarize};
pub use config::{GridPoint, SweepConfig, run_name};
pub use driver::{SweepOptions, SweepOutcome, collect, sweep};
pub use record::{SweepCell, SweepConfiguration, SweepReport, SweepRun};
