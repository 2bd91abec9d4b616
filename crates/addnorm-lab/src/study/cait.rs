//! CaiT's LayerScale claim (Touvron et al. 2021, abstract and §2) as an extension, from the
//! depth grid (`--full`): Pre-LN with and without LayerScale over depths at B's LR, no
//! warm-up.
//!
//! ```text
//! success     no divergence and ≥ 99% exact accuracy at the end (super::measures::succeeded)
//! L*          the deepest depth at which Pre-LN alone succeeds in under half of its seeds
//!             (its rate, the registry's "falls below 0.5")
//! statistic   LayerScale's success rate at L*, with its exact (Clopper–Pearson) interval
//! ```
//!
//! Where Pre-LN alone never falls below half, the claim has no depth to be tested at: no
//! estimate, so inconclusive. The rule is the registry's.
//!
//! # Shapes
//! Not applicable: statistics over run summaries.

use super::claim::Measurement;
use super::measures::{rate, show_rate, succeeded};
use super::record::DemoReport;
use crate::experiments::depth_grid::DepthCell;

/// (successes, runs) of one cell of the depth grid.
fn count(report: &DemoReport, cell: DepthCell) -> (usize, usize) {
    let runs: Vec<bool> = report
        .depth_grid
        .iter()
        .filter(|r| r.cell == cell)
        .map(|r| succeeded(&r.run))
        .collect();
    (runs.iter().filter(|&&ok| ok).count(), runs.len())
}

/// (successes, runs) of both cells at `depth`: Pre-LN alone, then with LayerScale.
pub fn counts(report: &DemoReport, depth: usize) -> [(usize, usize); 2] {
    [false, true].map(|layer_scale| count(report, DepthCell { depth, layer_scale }))
}

/// L* of the report's depth grid (see [`deepest_failing`]).
pub fn failing_depth(report: &DemoReport) -> Option<usize> {
    let depths = &report.config.depth_grid.depths;
    deepest_failing(depths.iter().map(|&d| (d, counts(report, d)[0])))
}

/// L*: the deepest depth whose Pre-LN runs, `(depth, (successes, runs))`, succeed in under
/// half of the seeds; `None` if none does (depths without runs are skipped).
pub fn deepest_failing(pre_ln: impl IntoIterator<Item = (usize, (usize, usize))>) -> Option<usize> {
    pre_ln
        .into_iter()
        .filter(|&(_, (ok, n))| n > 0 && 2 * ok < n)
        .map(|(depth, _)| depth)
        .max()
}

/// Every depth's two success rates, in words.
fn rates(report: &DemoReport) -> String {
    report
        .config
        .depth_grid
        .depths
        .iter()
        .map(|&depth| {
            let [plain, scaled] = counts(report, depth);
            format!(
                "L = {depth}: Pre-LN {}, with LayerScale {}",
                show_rate(plain),
                show_rate(scaled)
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The claim, when the depth grid ran.
pub(super) fn claims(report: &DemoReport) -> Vec<Measurement> {
    if report.depth_grid.is_empty() {
        return vec![];
    }
    let c = &report.config;
    let depth = failing_depth(report);
    let estimate = depth.and_then(|d| rate(counts(report, d)[1]));
    let at = depth.map_or(
        "no depth: Pre-LN alone succeeded in at least half of its seeds at every depth".into(),
        |d| format!("L* = {d}"),
    );
    vec![Measurement {
        id: "cait-abstract-layerscale-trains-deeper".into(),
        statement: "LayerScale trains Pre-LN at a depth where Pre-LN alone fails (success rate \
                    with LayerScale at L*, the deepest depth where Pre-LN alone succeeds in \
                    under half of its seeds)"
            .into(),
        setting: format!(
            "reverse task, Pre-LN d = {}, depths {:?}, LayerScale ε = {:e}, LR {:e} without \
             warm-up, {} steps, {} seeds; success = ≥ 99% exact at the end, no divergence",
            c.train_model.block().d_model,
            c.depth_grid.depths,
            c.depth_grid.layer_scale_init,
            c.learning_rate,
            c.steps,
            c.seeds.len()
        ),
        measured: format!("{at} ({})", rates(report)),
        estimate,
        if_not: "Where no depth was found, Pre-LN alone succeeded in at least half of its \
                 seeds at every depth of the grid, so the registered selection finds no depth \
                 to test at (the per-depth rates are in the measurement); otherwise \
                 unexplained."
            .into(),
        caveat: "An extension: CaiT's evidence is ImageNet accuracy against depth; here the \
                 reverse task at toy width."
            .into(),
    }]
}

#[cfg(test)]
mod tests {
    use super::deepest_failing;

    #[test]
    fn l_star_is_the_deepest_depth_where_pre_ln_succeeds_in_under_half_of_its_seeds() {
        let grid = [(6, (10, 10)), (12, (4, 10)), (24, (6, 10)), (48, (0, 10))];
        assert_eq!(deepest_failing(grid), Some(48));
        // Not monotone in depth: the deepest failing depth, not the first.
        let grid = [(6, (10, 10)), (12, (4, 10)), (24, (6, 10)), (48, (9, 10))];
        assert_eq!(deepest_failing(grid), Some(12));
        // Exactly half is not under half; a depth without runs is skipped.
        assert_eq!(deepest_failing([(6, (5, 10)), (12, (0, 0))]), None);
        assert_eq!(deepest_failing([]), None);
    }
}
