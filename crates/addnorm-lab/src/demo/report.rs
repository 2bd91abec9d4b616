//! What `demo.json` holds: the configuration, both experiments' results and the claims.
//!
//! # Shapes
//! Not applicable: a serialized record.

use serde::{Deserialize, Serialize};

use super::claims::Claim;
use super::config::DemoConfig;
use crate::probe::ProbeReport;
use crate::sweep::SweepRun;

/// What `demo.json` holds.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct DemoReport {
    /// The configuration.
    pub config: DemoConfig,
    /// Experiment A.
    pub probe: ProbeReport,
    /// Experiment B's runs.
    pub runs: Vec<SweepRun>,
    /// The claims checked.
    pub claims: Vec<Claim>,
    /// Wall-clock seconds.
    pub wall_seconds: f64,
}
