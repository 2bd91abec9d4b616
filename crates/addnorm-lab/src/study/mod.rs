//! `addnorm demo`: quick versions of the study's experiments, checked against the published
//! claims, with a Markdown report and PNG plots.
//!
//! ```text
//! A        probe at init   (post, layer) (pre, layer) (pre, rms) (pre, dyt) (none, identity)
//!                          × depths 6, 12, 24, 48 × seeds, W^Q = W^K = 0   (Theorem 1)
//! Fig. 3   expected-gradient norms of W₁, W₂ per layer, L = 6, K = 32, 10 seeds, Xavier
//!          W^Q/W^K, at d = 64 and at the paper's d = 512; the same at L = 12, 24, 48 as an
//!          extension, and for ResiDual against Post-LN at L = 48 (Xie et al. 2023)
//! Lemma 2  Pre-LN residual growth, ReLU, d_ff = d, one head, W^Q = W^K = 0, 10 seeds
//! NormFormer Fig. 2: B's Pre-LN run and its NormFormer variant, the average |∇W₂| per
//!          layer over the first 100 steps, 10 seeds
//! B        training        the five pairs × warm-up {0, 100} × seeds at LR 1e-2, depth 6,
//!                          and Peri-LN and ReZero without warm-up
//! Fig. 2   Post-LN         warm-up {0, 12, 100} × peak LR {5e-3, 1e-2}, and App. H's fixed
//!                          LR 1e-3 (crate::experiments::warmup_grid), on B's model
//! C        proxies         Wortsman et al. 2023 on the Markov language (crate::experiments::proxies),
//!                          with §3.2.1's long warm-up, and Gemma 2's soft cap at the top LR
//! D        model update    DeepNet Fig. 5, Post-LN vs DeepNorm, 6–96 layers, after Adam
//!                          steps and after one SGD step (§4.3)
//! grids    `--full` only   C at three model sizes with its long warm-up, coupled decay
//!                          and z-loss over the LR grid (Wortsman Figs. 1, 3, 5, 6;
//!                          crate::experiments::proxy_grid); Pre-LN and Peri-LN without
//!                          warm-up at three LRs above B's (the divergence count)
//! claims   every registered claim (claims.toml) the runs measure, with its source, setting,
//!          measured value, 95% interval and verdict
//! ```
//!
//! Outputs in `--out`: `config.json`, `demo.json`, `report.md`, `claims.md` (the claims
//! in one short table, which `docs/rebuild-demo.sh` puts into the README), eleven PNG plots
//! (`gradient_per_layer`, `last_layer_vs_depth`, `loss_curves`, `residual_growth`,
//! `figure_3`, `figure_3_paper_width`, `warmup_grid`, `peri_ln`, `lr_sensitivity`,
//! `attention_logits`, `model_update`; `--full` adds `lr_sensitivity_by_size` and
//! `layer_scale_by_depth`), one JSON file per part ([`parts`]), and one run directory per
//! training run of B, C, the Fig. 2 grid and the `--full` grids under `runs/`.
//! [`config::Profile`] picks the quick (5 minutes on 2 cores) or the `--full` profile.
//!
//! # Workers
//! Any number of `addnorm demo` processes may share one `--out` (one machine, or several
//! over NFS). Each part ([`parts::Part`]) and each run of B and C is claimed before it is
//! computed ([`crate::runner::worker`], [`crate::runner::lease`]); a dead worker's part is taken
//! over. The worker that finds every part finished writes the report; the others name the
//! parts still held and exit 0. Rerunning the demo into the same `--out` reuses what is
//! finished. Within a process, `--jobs` runs (and probe cells) go at once.
//!
//! One concept per file: [`config`] (what runs), [`parts`] (the claimed JSON parts),
//! [`claim`] (the record of a claim), [`claims`] (the list of all), `xiong`, `peri_ln`,
//! `wortsman` and `deepnet` (each paper's claims and statistics; `warmup_grid` holds Xiong's
//! Fig. 2 and App. H, `resi_dual` ResiDual's claim on Fig. 3's probe, `normformer` NormFormer's two, `gemma2` the soft-cap control, `wortsman_grid` Wortsman's grids, `peri_ln_divergence` Peri-LN's
//! divergence count, [`cait`] CaiT's LayerScale claim over depths), `convergence` (steps to
//! the target: Xiong's §4 and ReZero's headline), [`measures`] (the
//! profiles and success rates they read), [`record`] (what `demo.json` holds), [`registry`]
//! (the claims registered in `claims.toml`, with their rules), [`verdict`] (the one decision
//! rule: three verdicts from a 95% interval), [`driver`] (the worker that runs it), [`plots`], `plots_study`, `plots_grid` and [`markdown`] (how it is shown).
//!
//! # Shapes
//! Not applicable: a driver over [`crate::experiments::probe`], [`crate::experiments::expected_gradient`],
//! [`crate::experiments::train`](mod@crate::experiments::train) and [`crate::experiments::model_update`].

pub mod cait;
pub mod claim;
pub mod claims;
pub mod config;
mod convergence;
mod deepnet;
pub mod driver;
mod gemma2;
mod layer_series;
pub mod markdown;
pub mod measures;
mod normformer;
pub mod parts;
mod peri_ln;
mod peri_ln_divergence;
pub mod plots;
mod plots_grid;
mod plots_study;
pub mod record;
pub mod registry;
mod resi_dual;
pub mod verdict;
mod warmup_grid;
mod wortsman;
mod wortsman_grid;
mod xiong;

pub use claim::{Claim, claims_table};
pub use claims::evaluate_claims;
pub use config::{DemoConfig, default_seeds};
pub use driver::{DemoOptions, DemoOutcome, demo, demo_since, demo_with};
pub use record::DemoReport;
