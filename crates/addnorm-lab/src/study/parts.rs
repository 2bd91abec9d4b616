//! The demo's measured parts other than training runs, each claimed as a whole and written
//! as one JSON file of `--out`.
//!
//! ```text
//! probe               experiment A, Theorem 1            probe.json
//! figure-3            Fig. 3 as published (L = 6)         figure_3.json
//! figure-3-paper-width  the same at the paper's widths    figure_3_paper_width.json
//! figure-3-extension  the same at L = 12, 24, 48          figure_3_extension.json
//! figure-3-resi-dual  ResiDual and Post-LN at L = 48      figure_3_resi_dual.json
//! lemma-2             Lemma 2 in its own setting          lemma_2.json
//! early-gradients     NormFormer's Fig. 2                 early_gradients.json
//! model-update        experiment D, DeepNet Fig. 5        model_update.json
//! sgd-update          D's models, one SGD step (§4.3)     sgd_update.json
//! ```
//!
//! # Shapes
//! Not applicable: file names and the calls that fill them.

use std::path::{Path, PathBuf};

use addnorm::NormAutodiffBackend;
use addnorm::nn::Placement;

use super::config::DemoConfig;
use crate::error::{LabError, write_json};
use crate::experiments::early_gradients::{EarlyGradientRun, early_gradient_profile};
use crate::experiments::expected_gradient::{ExpectedGradientConfig, expected_gradients};
use crate::experiments::model_update::model_updates;
use crate::experiments::norm_kind::NormKind;
use crate::experiments::probe::probe_pairs;
use crate::experiments::sgd_update::sgd_updates;
use crate::runner::jobs::JobPlan;

/// One claimed part of the demo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// Experiment A: gradients at initialization against depth.
    Probe,
    /// Fig. 3 as published.
    Figure3,
    /// Fig. 3 at the paper's widths.
    Figure3PaperWidth,
    /// Fig. 3's measurement at larger depths.
    Figure3Extension,
    /// Fig. 3's measurement for ResiDual and Post-LN at L = 48.
    Figure3ResiDual,
    /// Lemma 2 in its own setting.
    Lemma2,
    /// NormFormer's Fig. 2: per-layer gradients over the first training steps.
    EarlyGradients,
    /// Experiment D: model update against depth.
    ModelUpdate,
    /// D's models after one plain SGD step, the setting of DeepNet's analysis.
    SgdUpdate,
}

impl Part {
    /// Every part, in the order they run.
    pub const ALL: [Part; 9] = [
        Part::Probe,
        Part::Figure3,
        Part::Figure3PaperWidth,
        Part::Figure3Extension,
        Part::Figure3ResiDual,
        Part::Lemma2,
        Part::EarlyGradients,
        Part::ModelUpdate,
        Part::SgdUpdate,
    ];

    /// The claim name.
    pub fn name(self) -> &'static str {
        match self {
            Part::Probe => "probe",
            Part::Figure3 => "figure-3",
            Part::Figure3PaperWidth => "figure-3-paper-width",
            Part::Figure3Extension => "figure-3-extension",
            Part::Figure3ResiDual => "figure-3-resi-dual",
            Part::Lemma2 => "lemma-2",
            Part::EarlyGradients => "early-gradients",
            Part::ModelUpdate => "model-update",
            Part::SgdUpdate => "sgd-update",
        }
    }

    /// Its JSON file in `out`.
    pub fn path(self, out: &Path) -> PathBuf {
        out.join(format!("{}.json", self.name().replace('-', "_")))
    }

    /// The part whose claim name is `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The configuration and progress label of a part that measures Fig. 3's expected
    /// gradient; `None` for the other parts.
    fn expected_gradient(self, config: &DemoConfig) -> Option<(&ExpectedGradientConfig, &str)> {
        match self {
            Part::Figure3 => Some((&config.figure_3, "Fig. 3")),
            Part::Figure3PaperWidth => Some((&config.figure_3_paper_width, "Fig. 3, d = 512")),
            Part::Figure3Extension => Some((&config.figure_3_extension, "Fig. 3 at L ≥ 12")),
            Part::Figure3ResiDual => Some((&config.figure_3_resi_dual, "Fig. 3, ResiDual")),
            _ => None,
        }
    }

    /// Computes the part and writes its file.
    ///
    /// # Errors
    /// If the file cannot be written.
    pub fn compute<B: NormAutodiffBackend>(
        self,
        config: &DemoConfig,
        out: &Path,
        (progress, plan): (bool, JobPlan),
        device: &B::Device,
    ) -> Result<(), LabError> {
        let path = self.path(out);
        match self {
            Part::Probe => write_json(
                &path,
                &probe_pairs::<B>(
                    &config.probe,
                    &config.pairs,
                    "A: probe",
                    progress,
                    plan,
                    device,
                ),
            ),
            Part::Figure3
            | Part::Figure3PaperWidth
            | Part::Figure3Extension
            | Part::Figure3ResiDual => {
                let (c, label) = self.expected_gradient(config).expect("a Fig. 3 part");
                write_json(
                    &path,
                    &expected_gradients::<B>(c, label, progress, plan, device),
                )
            }
            Part::Lemma2 => {
                let pairs = config.lemma_2.pairs();
                let report =
                    probe_pairs::<B>(&config.lemma_2, &pairs, "Lemma 2", progress, plan, device);
                write_json(&path, &report)
            }
            Part::EarlyGradients => write_json(
                &path,
                &early_gradient_runs::<B>(config, "NormFormer Fig. 2", (progress, plan), device),
            ),
            Part::ModelUpdate => write_json(
                &path,
                &model_updates::<B>(
                    &config.model_update,
                    "D: model update",
                    progress,
                    plan,
                    device,
                ),
            ),
            Part::SgdUpdate => write_json(
                &path,
                &sgd_updates::<B>(
                    &config.model_update,
                    "D: one SGD step",
                    progress,
                    plan,
                    device,
                ),
            ),
        }
    }
}

/// NormFormer's Fig. 2 cells: B's Pre-LN run (no warm-up) of each seed, and its NormFormer
/// variant, over their first `early_gradients.steps` steps, `plan.jobs` at a time.
fn early_gradient_runs<B: NormAutodiffBackend>(
    config: &DemoConfig,
    label: &str,
    (progress, plan): (bool, JobPlan),
    device: &B::Device,
) -> Vec<EarlyGradientRun> {
    let c = &config.early_gradients;
    crate::runner::jobs::run_jobs_with_bar(
        &c.cells(),
        plan,
        (label, progress),
        |cell| format!("{:?} seed {}", cell.0, cell.1),
        |&(variant, seed)| {
            let tc = variant.apply(config.train_config(Placement::Pre, NormKind::Layer, 0, seed));
            EarlyGradientRun {
                variant,
                seed,
                w_2: early_gradient_profile::<B>(&tc, c.steps, device),
            }
        },
    )
}
