//! What `demo.json` holds: the configuration, every part's results and the claims.
//!
//! # Shapes
//! Not applicable: a serialized record.

use serde::{Deserialize, Serialize};

use super::claim::Claim;
use super::config::DemoConfig;
use crate::experiments::depth_grid::DepthGridRun;
use crate::experiments::early_gradients::EarlyGradientRun;
use crate::experiments::expected_gradient::ExpectedGradientRun;
use crate::experiments::model_update::ModelUpdateRun;
use crate::experiments::probe::ProbeReport;
use crate::experiments::proxies::ProxyRun;
use crate::experiments::proxy_grid::ProxyGridRun;
use crate::experiments::sgd_update::SgdUpdateRun;
use crate::experiments::sweep::SweepRun;
use crate::experiments::warmup_grid::WarmupGridRun;

/// What `demo.json` holds.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct DemoReport {
    /// The configuration.
    pub config: DemoConfig,
    /// Experiment A.
    pub probe: ProbeReport,
    /// Experiment B's runs.
    pub runs: Vec<SweepRun>,
    /// Fig. 3 as published: one run per placement × seed at L = 6.
    pub figure_3: Vec<ExpectedGradientRun>,
    /// Fig. 3 at the paper's widths (absent from reports written before it existed).
    #[serde(default)]
    pub figure_3_paper_width: Vec<ExpectedGradientRun>,
    /// The same at L = 12, 24, 48.
    pub figure_3_extension: Vec<ExpectedGradientRun>,
    /// The same for ResiDual and Post-LN at L = 48 (absent from reports written before it
    /// existed).
    #[serde(default)]
    pub figure_3_resi_dual: Vec<ExpectedGradientRun>,
    /// Lemma 2's probe in its own setting.
    pub lemma_2: ProbeReport,
    /// NormFormer's Fig. 2 profiles (absent from reports written before it existed).
    #[serde(default)]
    pub early_gradients: Vec<EarlyGradientRun>,
    /// Fig. 2's warm-up × LR grid and App. H's fixed LR (Post-LN; absent from reports
    /// written before it existed).
    #[serde(default)]
    pub warmup_grid: Vec<WarmupGridRun>,
    /// Experiment C's runs.
    pub proxies: Vec<ProxyRun>,
    /// C's grids over size, decay and z-loss (empty when not run, and in reports written
    /// before they existed).
    #[serde(default)]
    pub proxy_grid: Vec<ProxyGridRun>,
    /// Pre-LN and Peri-LN without warm-up at the LRs above B's (empty when not run).
    #[serde(default)]
    pub divergence_grid: Vec<SweepRun>,
    /// CaiT's depth grid: Pre-LN with and without LayerScale by depth (empty when not run).
    #[serde(default)]
    pub depth_grid: Vec<DepthGridRun>,
    /// Experiment D's runs.
    pub model_update: Vec<ModelUpdateRun>,
    /// D's models after one SGD step (absent from reports written before it existed).
    #[serde(default)]
    pub sgd_update: Vec<SgdUpdateRun>,
    /// The claims checked.
    pub claims: Vec<Claim>,
    /// The content hash of the claims registry that decided them
    /// ([`super::registry::Registry::content_hash`]).
    #[serde(default)]
    pub registry_hash: String,
    /// Wall-clock seconds.
    pub wall_seconds: f64,
}
