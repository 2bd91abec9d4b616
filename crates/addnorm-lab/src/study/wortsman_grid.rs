//! Wortsman et al. 2023's grid claims (Figs. 1, 3, 5, 6), from C's grids
//! ([`crate::experiments::proxy_grid`]); emitted only when the grid ran (`--full`).
//!
//! ```text
//! S(size, variant)    LR sensitivity against the variant's own ℓ* (§2.2,
//!                     crate::stats::sensitivity) on C's LR grid
//! growth              least-squares slope of S against log10 N over the sizes
//!                     (baseline; QK-layernorm)
//! divergence LR       per seed and size, the smallest grid LR at which the baseline
//!                     diverged; a seed that never diverged counts one grid step above the
//!                     top (a bound); per seed the slope of ln LR against log10 N, averaged
//! warm-up by size     [S(qk) − S(qk, long warm-up)] at the largest size minus at the smallest
//! decay (Fig. 6)      S_coupled − S_independent at C's size, S_coupled = the smaller of S
//!                     over the coupled grid's first and last |C's grid| LRs
//! z-loss (Fig. 3)     S(no decay) − S(no decay, z-loss) at C's size
//! ```
//!
//! Every statistic resamples seeds in pairs across sizes and variants (the runs of one seed
//! share initialization seed and batches). The rules are the registry's (`claims.toml`).
//!
//! # Shapes
//! Not applicable: statistics over run summaries.

use super::claim::Measurement;
use super::record::DemoReport;
use crate::experiments::proxies::ProxyVariant;
use crate::experiments::proxy_grid::ProxySize;
use crate::experiments::sweep::{SweepRun, loss_table};
use crate::stats::fit::linear_slope;
use crate::stats::sample::{bootstrap, mean};
use crate::stats::sensitivity::{LossTable, sensitivity};

/// The note on a grid claim that does not reproduce.
const UNEXPLAINED: &str = "Unexplained: no run here measures why.";

/// The runs of (`size`, `variant`).
fn runs(report: &DemoReport, size: ProxySize, variant: ProxyVariant) -> Vec<&SweepRun> {
    report
        .proxy_grid
        .iter()
        .filter(|r| r.size == size && r.variant == variant)
        .map(|r| &r.run)
        .collect()
}

/// The loss table of (`size`, `variant`) over `lrs`.
pub(super) fn table(
    report: &DemoReport,
    size: ProxySize,
    variant: ProxyVariant,
    lrs: &[f64],
) -> LossTable {
    let seeds = &report.config.proxies.seeds;
    loss_table(&runs(report, size, variant), lrs, seeds)
}

/// The loss table of (`size`, `variant`) over C's LR grid.
fn grid_table(report: &DemoReport, size: ProxySize, variant: ProxyVariant) -> LossTable {
    table(report, size, variant, &report.config.proxies.learning_rates)
}

/// The grid's sizes, smallest first.
fn sizes(report: &DemoReport) -> Vec<ProxySize> {
    report.config.proxy_grid.sizes.clone()
}

/// The grid's largest size, if the grid ran.
pub(super) fn largest(report: &DemoReport) -> Option<ProxySize> {
    report.proxy_grid.first()?;
    sizes(report).last().copied()
}

/// Every seed index of C.
fn seed_indices(report: &DemoReport) -> Vec<usize> {
    (0..report.config.proxies.seeds.len()).collect()
}

/// The grid's setting in words.
pub(super) fn setting(report: &DemoReport) -> String {
    let (c, g) = (&report.config.proxies, &report.config.proxy_grid);
    let sizes: Vec<String> = g
        .sizes
        .iter()
        .map(|s| format!("{} (N = {})", s.name(), s.parameters()))
        .collect();
    format!(
        "Markov language ({} symbols, {} positions), Pre-LN at sizes {} (d_ff = 4d), AdamW β₂ \
         0.95, clip 1, independent decay {:e}, warm-up 5%, {} steps, LRs {:?}, {} seeds",
        c.task.symbols,
        c.task.seq_len(),
        sizes.join(", "),
        c.weight_decay,
        g.steps,
        c.learning_rates,
        c.seeds.len()
    )
}

/// The loss table of `variant` at every size, smallest first (built once; the bootstraps
/// resample its seed columns).
fn tables_by_size(report: &DemoReport, variant: ProxyVariant) -> Vec<LossTable> {
    sizes(report)
        .into_iter()
        .map(|size| grid_table(report, size, variant))
        .collect()
}

/// log10 N of every size, smallest first.
fn log_sizes(report: &DemoReport) -> Vec<f64> {
    sizes(report)
        .iter()
        .map(|s| s.parameters().log10())
        .collect()
}

/// S of each table on the seed columns `s`.
fn s_of(tables: &[LossTable], s: &[usize]) -> Vec<f64> {
    tables.iter().map(|t| sensitivity(t, s)).collect()
}

/// The slope of S against log10 N for `variant`.
fn growth(report: &DemoReport, variant: ProxyVariant, id: &str, seed: u64) -> Measurement {
    let (log_n, tables) = (log_sizes(report), tables_by_size(report, variant));
    let slope = bootstrap(&seed_indices(report), seed, |s| {
        let points: Vec<(f64, f64)> = log_n.iter().copied().zip(s_of(&tables, s)).collect();
        linear_slope(&points)
    });
    let all = s_of(&tables, &seed_indices(report));
    let shown: Vec<String> = sizes(report)
        .iter()
        .zip(&all)
        .map(|(size, v)| format!("{} {v:.3}", size.name()))
        .collect();
    let with = if variant == ProxyVariant::Baseline {
        "without"
    } else {
        "with"
    };
    Measurement {
        id: id.into(),
        statement: format!(
            "LR sensitivity grows with model size {with} QK-layernorm (slope of S, own ℓ*, \
             against log10 N)"
        ),
        setting: setting(report),
        measured: format!("S: {}; slope {}", shown.join(", "), slope.show(3)),
        estimate: Some(slope),
        if_not: UNEXPLAINED.into(),
        caveat: "The paper's sizes span 10⁷ to 1.2·10⁹ parameters trained for 10⁵ steps; \
                 these span 50× at 300 steps."
            .into(),
    }
}

/// ln of the smallest LR of `t`'s grid (ascending) at which seed column `i` diverged, or of
/// one grid step above the top when it never did; `true` when it is that bound.
fn divergence_ln(t: &LossTable, i: usize) -> (f64, bool) {
    let lrs = &t.learning_rates;
    if let Some(k) = (0..lrs.len()).find(|&k| t.diverged[k][i]) {
        return (lrs[k].ln(), false);
    }
    let top = lrs[lrs.len() - 1];
    let step = if lrs.len() > 1 {
        top / lrs[lrs.len() - 2]
    } else {
        10.0
    };
    ((top * step).ln(), true)
}

/// Per seed index, per size: [`divergence_ln`] of the baseline; and how many (seed, size)
/// were bounds.
fn divergence_lrs(report: &DemoReport) -> (Vec<Vec<f64>>, usize) {
    let tables = tables_by_size(report, ProxyVariant::Baseline);
    let mut bounds = 0;
    let per_seed = seed_indices(report)
        .into_iter()
        .map(|i| {
            tables
                .iter()
                .map(|t| {
                    let (ln, bound) = divergence_ln(t, i);
                    bounds += usize::from(bound);
                    ln
                })
                .collect()
        })
        .collect();
    (per_seed, bounds)
}

/// Without QK-layernorm the divergence LR falls with size.
fn divergence_falls(report: &DemoReport) -> Measurement {
    let log_n = log_sizes(report);
    let (per_seed, bounds) = divergence_lrs(report);
    let slopes: Vec<f64> = per_seed
        .iter()
        .map(|lns| {
            linear_slope(
                &log_n
                    .iter()
                    .copied()
                    .zip(lns.iter().copied())
                    .collect::<Vec<_>>(),
            )
        })
        .collect();
    let estimate = bootstrap(&slopes, 53, mean);
    let cells = per_seed.len() * log_n.len();
    Measurement {
        id: "wortsman-s311-divergence-lr-falls-with-size".into(),
        statement: "Without QK-layernorm the LR at which a model diverges falls with size \
                    (slope of ln(smallest diverging LR) against log10 N, per seed)"
            .into(),
        setting: setting(report),
        measured: format!(
            "mean slope {} ({bounds} of {cells} (seed, size) never diverged on the grid and \
             count one grid step above its top, a bound)",
            estimate.show(2)
        ),
        estimate: Some(estimate),
        if_not: "Unexplained where runs diverged; where none did, the grid's top LR was not \
                 high enough to find the divergence LR at these sizes."
            .into(),
        caveat: "Diverged: the run stopped on a non-finite loss or gradient.".into(),
    }
}

/// The loss tables of QK-layernorm and of its long warm-up at `size`.
fn warm_up_tables(report: &DemoReport, size: ProxySize) -> [LossTable; 2] {
    [ProxyVariant::QkLayernorm, ProxyVariant::LongWarmup].map(|v| grid_table(report, size, v))
}

/// S(qk) − S(qk, long warm-up) of `[qk, long]` on the seed columns `s`.
fn warm_up_gain([qk, long]: &[LossTable; 2], s: &[usize]) -> f64 {
    sensitivity(qk, s) - sensitivity(long, s)
}

/// The long warm-up helps the largest size more than the smallest.
fn warm_up_by_size(report: &DemoReport) -> Measurement {
    let all = sizes(report);
    let (small, large) = (all[0], all[all.len() - 1]);
    let (at_small, at_large) = (warm_up_tables(report, small), warm_up_tables(report, large));
    let difference = bootstrap(&seed_indices(report), 59, |s| {
        warm_up_gain(&at_large, s) - warm_up_gain(&at_small, s)
    });
    let every = seed_indices(report);
    Measurement {
        id: "wortsman-fig5-warmup-effect-larger-for-larger-models".into(),
        statement: "The long warm-up lowers LR sensitivity more at the largest size than at \
                    the smallest ([S(short) − S(long)] largest minus smallest, QK-layernorm)"
            .into(),
        setting: format!(
            "{}, warm-up {:.0}% against {:.0}% of the steps",
            setting(report),
            100.0 * crate::experiments::proxies::ProxyConfig::WARMUP,
            100.0 * report.config.proxies.long_warmup
        ),
        measured: format!(
            "S(short) − S(long): {} {:.3}, {} {:.3}; difference {}",
            small.name(),
            warm_up_gain(&at_small, &every),
            large.name(),
            warm_up_gain(&at_large, &every),
            difference.show(3)
        ),
        estimate: Some(difference),
        if_not: UNEXPLAINED.into(),
        caveat: String::new(),
    }
}

/// The first and the last `width` LRs of `lrs`: the two windows of a grid shifted against
/// the other's. The paper reports S_coupled as the smaller S of the two.
fn windows(lrs: &[f64], width: usize) -> [&[f64]; 2] {
    [&lrs[..width], &lrs[lrs.len() - width..]]
}

/// The coupled-decay loss tables at `size` over the coupled grid's two [`windows`] of
/// |C's grid| LRs.
fn coupled_windows(report: &DemoReport, size: ProxySize) -> [LossTable; 2] {
    let lrs = report
        .config
        .proxy_grid
        .coupled_learning_rates(&report.config.proxies);
    let width = report.config.proxies.learning_rates.len();
    windows(&lrs, width).map(|w| table(report, size, ProxyVariant::CoupledDecay, w))
}

/// S_coupled on the seed columns `s`: the smaller S of the two windows' tables.
fn coupled_s([first, last]: &[LossTable; 2], s: &[usize]) -> f64 {
    sensitivity(first, s).min(sensitivity(last, s))
}

/// Independent decay lowers LR sensitivity (Fig. 6), at C's size.
fn decay(report: &DemoReport, size: ProxySize) -> Measurement {
    let coupled = coupled_windows(report, size);
    let independent_table = grid_table(report, size, ProxyVariant::QkLayernorm);
    let independent = |s: &[usize]| sensitivity(&independent_table, s);
    let difference = bootstrap(&seed_indices(report), 61, |s| {
        coupled_s(&coupled, s) - independent(s)
    });
    let every = seed_indices(report);
    let c = &report.config.proxies;
    Measurement {
        id: "wortsman-fig6-independent-decay-lowers-sensitivity".into(),
        statement: "Weight decay independent of the LR lowers LR sensitivity (S_coupled − \
                    S_independent, QK-layernorm, own ℓ* each)"
            .into(),
        setting: format!(
            "{}; at {}: coupled λ = {} (decay λ·lr(s)) over {:?}, independent λ = {:e}",
            setting(report),
            size.name(),
            c.coupled_weight_decay,
            report.config.proxy_grid.coupled_learning_rates(c),
            c.weight_decay
        ),
        measured: format!(
            "S = {:.3} coupled (better window), {:.3} independent; difference {}",
            coupled_s(&coupled, &every),
            independent(&every),
            difference.show(3)
        ),
        estimate: Some(difference),
        if_not: UNEXPLAINED.into(),
        caveat: String::new(),
    }
}

/// z-loss lowers LR sensitivity without weight decay (Fig. 3), at C's size.
fn z_loss(report: &DemoReport, size: ProxySize) -> Measurement {
    let [without, with] =
        [ProxyVariant::NoDecay, ProxyVariant::NoDecayZLoss].map(|v| grid_table(report, size, v));
    let pair = |s: &[usize]| (sensitivity(&without, s), sensitivity(&with, s));
    let difference = bootstrap(&seed_indices(report), 67, |s| {
        let (without, with) = pair(s);
        without - with
    });
    let (without, with) = pair(&seed_indices(report));
    Measurement {
        id: "wortsman-fig3-zloss-lowers-sensitivity".into(),
        statement: format!(
            "Without weight decay, z-loss ({:e}) lowers LR sensitivity (S without − S with, \
             QK-layernorm, own ℓ* each)",
            report.config.proxies.z_loss
        ),
        setting: format!("{}; at {}, no weight decay", setting(report), size.name()),
        measured: format!(
            "S = {without:.3} without z-loss, {with:.3} with; difference {}",
            difference.show(3)
        ),
        estimate: Some(difference),
        if_not: "Unexplained here. The paper's instability appears late in long training \
                 (Fig. 4); these runs are 300 steps."
            .into(),
        caveat: String::new(),
    }
}

/// Every grid claim, in report order; none when the grid did not run.
pub(super) fn claims(report: &DemoReport) -> Vec<Measurement> {
    if largest(report).is_none() {
        return vec![];
    }
    let mut claims = vec![
        growth(
            report,
            ProxyVariant::Baseline,
            "wortsman-fig1-sensitivity-grows-with-size-baseline",
            47,
        ),
        growth(
            report,
            ProxyVariant::QkLayernorm,
            "wortsman-fig1-sensitivity-grows-with-size-qkln",
            49,
        ),
        divergence_falls(report),
        warm_up_by_size(report),
    ];
    let own = ProxySize::of(&report.config.proxies.model);
    if sizes(report).contains(&own) {
        claims.push(decay(report, own));
        claims.push(z_loss(report, own));
    }
    claims
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::sensitivity::RunLoss;

    #[test]
    fn the_divergence_lr_is_the_first_diverging_one_or_a_bound_above_the_grid() {
        let lrs = [1e-2, 3e-2, 1e-1];
        // Seed 0 diverges from 3e-2 on; seed 1 never does.
        let t = LossTable::new(&lrs, &[0, 1], |lr, s| {
            Some(RunLoss {
                final_loss: 1.0,
                initial_loss: 2.0,
                diverged: s == 0 && lr > 1e-2,
            })
        });
        assert_eq!(divergence_ln(&t, 0), (3e-2_f64.ln(), false));
        let (ln, bound) = divergence_ln(&t, 1);
        // One grid step (×1e-1/3e-2) above the top.
        assert!(bound && (ln - (1e-1_f64 * (1e-1 / 3e-2)).ln()).abs() < 1e-12);
    }

    #[test]
    fn s_coupled_is_the_better_of_the_two_shifted_windows() {
        let lrs = [1e-4, 3e-4, 1e-3, 3e-3];
        let [first, last] = windows(&lrs, 3);
        assert_eq!(first, &[1e-4, 3e-4, 1e-3]);
        assert_eq!(last, &[3e-4, 1e-3, 3e-3]);
        // The first window's curve is flat (S = 0), the last one's is not (S > 0): the
        // smaller is taken, whichever window it is.
        let flat_first = |lr: f64, _| {
            Some(RunLoss {
                final_loss: if lr > 1e-3 { 2.0 } else { 1.0 },
                initial_loss: 3.0,
                diverged: false,
            })
        };
        let tables = [first, last].map(|w| LossTable::new(w, &[0], flat_first));
        assert_eq!(coupled_s(&tables, &[0]), 0.0);
        let swapped = [tables[1].clone(), tables[0].clone()];
        assert_eq!(coupled_s(&swapped, &[0]), 0.0);
        assert!(sensitivity(&tables[1], &[0]) > 0.0);
    }
}
