//! Xiong et al. 2020's Fig. 2 and App. H at toy scale: Post-LN over warm-up length × peak
//! LR, and Post-LN at a small fixed LR without warm-up.
//!
//! ```text
//! grid     warm-up {0, W/8, W} × peak LR {η/2, η}: the paper's {1, 500, 4000} × {5e-4, 1e-3}
//!          kept as ratios; linear warm-up, then B's cosine decay to a tenth of the peak
//! fixed    LR η/10 at every step, no warm-up, no decay (App. H: 1e-4 against 1e-3)
//! model    experiment B's Post-LN with LayerNorm on the reverse task, B's steps and seeds
//! ```
//!
//! The training configurations and run names are the demo's
//! (`crate::study::config::DemoConfig::grid_train_config`): a cell that coincides with one
//! of B's runs (warm-up 0 or W at η) is that run, trained once.
//!
//! # Shapes
//! Batches are `[batch_size, 2n + 1]` tokens of the reverse task.

use burn::config::Config;
use serde::{Deserialize, Serialize};

use crate::experiments::sweep::SweepRun;

/// The grid of Fig. 2 and App. H's fixed LR, a Burn [`Config`]. Part of the demo's
/// `config.json`.
#[derive(Config, Debug)]
pub struct WarmupGridConfig {
    /// Warm-up lengths: none, W/8 and W (the paper's 500 and 4000 steps). Default: 0, 12,
    /// 100
    #[config(default = "vec![0, 12, 100]")]
    pub warmups: Vec<usize>,
    /// Peak LRs: η/2 and η (the paper's 5e-4 and 1e-3). Default: 5e-3, 1e-2
    #[config(default = "vec![5e-3, 1e-2]")]
    pub learning_rates: Vec<f64>,
    /// App. H's fixed LR, a tenth of the larger peak (the paper's 1e-4). Default: 1e-3
    #[config(default = 1e-3)]
    pub fixed_learning_rate: f64,
}

/// One cell: a warm-up and peak LR of the grid, or the fixed LR.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
pub struct GridCell {
    /// Warm-up steps.
    pub warmup: usize,
    /// The peak LR, or the fixed LR.
    pub learning_rate: f64,
    /// Whether the LR stays fixed (no warm-up, no decay).
    pub fixed: bool,
}

impl WarmupGridConfig {
    /// Every cell: the grid by LR, then by warm-up; the fixed LR last.
    pub fn cells(&self) -> Vec<GridCell> {
        let grid = self.learning_rates.iter().flat_map(|&learning_rate| {
            self.warmups.iter().map(move |&warmup| GridCell {
                warmup,
                learning_rate,
                fixed: false,
            })
        });
        grid.chain(std::iter::once(GridCell {
            warmup: 0,
            learning_rate: self.fixed_learning_rate,
            fixed: true,
        }))
        .collect()
    }
}

/// One run of the grid: its cell and its summary.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct WarmupGridRun {
    /// Its cell.
    pub cell: GridCell,
    /// Its summary (Post-LN with LayerNorm, its warm-up, LR and seed).
    pub run: SweepRun,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grid_has_every_warmup_at_every_lr_then_the_fixed_lr() {
        let cells = WarmupGridConfig::new().cells();
        assert_eq!(cells.len(), 7);
        assert_eq!((cells[0].warmup, cells[0].learning_rate), (0, 5e-3));
        assert_eq!((cells[5].warmup, cells[5].learning_rate), (100, 1e-2));
        assert!(cells[..6].iter().all(|c| !c.fixed));
        assert_eq!(
            cells[6],
            GridCell {
                warmup: 0,
                learning_rate: 1e-3,
                fixed: true
            }
        );
    }
}
