//! The demo's measured parts other than training runs, each claimed as a whole and written
//! as one JSON file of `--out`.
//!
//! ```text
//! probe               experiment A, Theorem 1            probe.json
//! figure-3            Fig. 3 as published (L = 6)         figure_3.json
//! figure-3-paper-width  the same at the paper's widths    figure_3_paper_width.json
//! figure-3-extension  the same at L = 12, 24, 48          figure_3_extension.json
//! lemma-2             Lemma 2 in its own setting          lemma_2.json
//! model-update        experiment D, DeepNet Fig. 5        model_update.json
//! sgd-update          D's models, one SGD step (§4.3)     sgd_update.json
//! ```
//!
//! # Shapes
//! Not applicable: file names and the calls that fill them.

use std::path::{Path, PathBuf};

use addnorm::NormAutodiffBackend;

use super::config::DemoConfig;
use crate::error::{LabError, write_json};
use crate::experiments::expected_gradient::expected_gradients;
use crate::experiments::model_update::model_updates;
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
    /// Lemma 2 in its own setting.
    Lemma2,
    /// Experiment D: model update against depth.
    ModelUpdate,
    /// D's models after one plain SGD step, the setting of DeepNet's analysis.
    SgdUpdate,
}

impl Part {
    /// Every part, in the order they run.
    pub const ALL: [Part; 7] = [
        Part::Probe,
        Part::Figure3,
        Part::Figure3PaperWidth,
        Part::Figure3Extension,
        Part::Lemma2,
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
            Part::Lemma2 => "lemma-2",
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
            Part::Figure3 => write_json(
                &path,
                &expected_gradients::<B>(&config.figure_3, "Fig. 3", progress, plan, device),
            ),
            Part::Figure3PaperWidth => write_json(
                &path,
                &expected_gradients::<B>(
                    &config.figure_3_paper_width,
                    "Fig. 3, d = 512",
                    progress,
                    plan,
                    device,
                ),
            ),
            Part::Figure3Extension => write_json(
                &path,
                &expected_gradients::<B>(
                    &config.figure_3_extension,
                    "Fig. 3 at L ≥ 12",
                    progress,
                    plan,
                    device,
                ),
            ),
            Part::Lemma2 => {
                let pairs = config.lemma_2.pairs();
                let report =
                    probe_pairs::<B>(&config.lemma_2, &pairs, "Lemma 2", progress, plan, device);
                write_json(&path, &report)
            }
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
