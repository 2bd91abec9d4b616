//! `addnorm demo`: quick versions of experiments A and B, checked against the published
//! claims, with a Markdown report and PNG plots.
//!
//! ```text
//! A  probe at init      (post, layer) (pre, layer) (pre, rms) (pre, dyt) (none, identity)
//!                       × depths 6, 12, 24, 48 × 3 seeds, W^Q = W^K = 0
//! B  training           the same five × warm-up {0, 100} × 3 seeds at LR 1e-2, depth 6
//! claims                Theorem 1's slopes, Fig. 3's per-layer profiles, Lemma 2's band,
//!                       §3.2's warm-up finding; each marked reproduced or not
//! ```
//!
//! Outputs in `--out`: `config.json`, `demo.json`, `report.md`, `gradient_per_layer.png`,
//! `last_layer_vs_depth.png`, `loss_curves.png`, `residual_growth.png`, `probe.json`,
//! and one run directory per training run under `runs/`.
//!
//! # Workers
//! Any number of `addnorm demo` processes may share one `--out` (one machine, or several
//! over NFS). Experiment A (the part named `probe`) and each run of B are claimed before
//! they are computed ([`crate::worker`], [`crate::lease`]); a dead worker's part is taken
//! over. The worker that finds every part finished writes the report; the others name the
//! parts still held and exit 0. Rerunning the demo into the same `--out` reuses what is
//! finished. Within a process, `--jobs` runs (and probe cells) go at once.
//!
//! One concept per file: [`config`] (what runs), [`claims`] (what is checked, and how),
//! [`report`] (what `demo.json` holds), [`driver`] (the worker that runs it), [`plots`] and
//! [`markdown`] (how it is shown).
//!
//! # Shapes
//! Not applicable: a driver over [`crate::probe`] and [`crate::train`](mod@crate::train).

pub mod claims;
pub mod config;
pub mod driver;
pub mod markdown;
pub mod plots;
pub mod report;

pub use claims::{Claim, claims_table, evaluate_claims};
pub use config::{DemoConfig, default_seeds};
pub use driver::{DemoOptions, DemoOutcome, demo, demo_with};
pub use report::DemoReport;
