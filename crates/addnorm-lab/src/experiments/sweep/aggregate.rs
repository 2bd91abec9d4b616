//! From runs to the sweep's report: a finished run's [`SweepRun`] ([`summarize`]), the
//! aggregate of each cell over its seeds, each configuration's largest stable LR and LR
//! sensitivity ([`aggregate`]), and a configuration's [`LossTable`] ([`loss_table`]).
//!
//! ```text
//! diverged      stopped on a non-finite value, or the last 10 losses average above the first
//! cell          mean final loss of the runs that did not diverge; mean accuracies (diverged
//!               count as 0); median steps to 99% exact
//! sensitivity   crate::stats::sensitivity, against the best loss of every configuration
//! ```
//!
//! # Shapes
//! Not applicable: aggregation over runs.

use addnorm::nn::Placement;

use super::config::SweepConfig;
use super::record::{SweepCell, SweepConfiguration, SweepRun};
use crate::experiments::norm_kind::NormKind;
use crate::experiments::train::{TrainConfig, TrainSummary};
use crate::stats::sensitivity::{LossTable, sensitivities};

/// Turns a finished run's summary into its [`SweepRun`].
pub fn summarize(config: &TrainConfig, norm: NormKind, summary: &TrainSummary) -> SweepRun {
    let first_loss = summary.losses.first().copied().unwrap_or(f64::NAN);
    let tail = &summary.losses[summary.losses.len().saturating_sub(10)..];
    let tail_mean = tail.iter().sum::<f64>() / tail.len().max(1) as f64;
    // A NaN tail counts as diverged too: `partial_cmp` is None then.
    let worse_than_start = !matches!(
        tail_mean.partial_cmp(&first_loss),
        Some(core::cmp::Ordering::Less | core::cmp::Ordering::Equal)
    );
    let diverged = summary.diverged.is_some() || worse_than_start;
    let last = summary.final_evaluation();
    SweepRun {
        placement: config.model.block().placement,
        norm,
        depth: config.model.block().n_layers,
        warmup: config.warmup_steps,
        learning_rate: config.learning_rate,
        seed: config.seed,
        diverged,
        final_loss: if summary.diverged.is_some() {
            f64::NAN
        } else {
            last.map_or(f64::NAN, |e| e.loss)
        },
        final_token_accuracy: last.map_or(0.0, |e| e.accuracy.token),
        final_exact_accuracy: last.map_or(0.0, |e| e.accuracy.exact),
        steps_to_99_exact: summary.steps_to_99_exact,
        initial_loss: summary
            .initial_evaluation
            .as_ref()
            .map_or(first_loss, |e| e.loss),
        losses: summary.losses.clone(),
        grad_norms: summary.grad_norms.clone(),
        evaluations: summary
            .initial_evaluation
            .iter()
            .chain(&summary.evaluations)
            .cloned()
            .collect(),
    }
}

fn median(mut v: Vec<usize>) -> Option<usize> {
    v.sort_unstable();
    (!v.is_empty()).then(|| v[v.len() / 2])
}

/// The aggregate of one cell's runs (one LR of one configuration).
fn cell(
    (placement, depth, warmup, lr): (Placement, usize, usize, f64),
    group: &[&SweepRun],
) -> SweepCell {
    let ok: Vec<&&SweepRun> = group.iter().filter(|r| !r.diverged).collect();
    let n = group.len() as f64;
    let mean_of_ok = |f: fn(&SweepRun) -> f64| {
        group
            .iter()
            .map(|r| if r.diverged { 0.0 } else { f(r) })
            .sum::<f64>()
            / n
    };
    SweepCell {
        placement,
        depth,
        warmup,
        learning_rate: lr,
        diverged: group.len() - ok.len(),
        runs: group.len(),
        mean_final_loss: if ok.is_empty() {
            f64::NAN
        } else {
            ok.iter().map(|r| r.final_loss).sum::<f64>() / ok.len() as f64
        },
        mean_exact_accuracy: mean_of_ok(|r| r.final_exact_accuracy),
        mean_token_accuracy: mean_of_ok(|r| r.final_token_accuracy),
        median_steps_to_99: median(group.iter().filter_map(|r| r.steps_to_99_exact).collect()),
    }
}

/// Aggregates runs into cells and configurations. Every configuration's LR sensitivity is
/// measured against the best loss of all of them ([`crate::stats::sensitivity`]).
pub fn aggregate(
    config: &SweepConfig,
    runs: &[SweepRun],
) -> (Vec<SweepCell>, Vec<SweepConfiguration>) {
    let mut cells = vec![];
    let mut keys = vec![];
    let mut tables = vec![];
    for &placement in &config.placements {
        for &depth in &config.depths {
            for &warmup in &config.warmups {
                let mine: Vec<&SweepRun> = runs
                    .iter()
                    .filter(|r| r.placement == placement && r.depth == depth && r.warmup == warmup)
                    .collect();
                if mine.is_empty() {
                    continue;
                }
                for &lr in &config.learning_rates {
                    let group: Vec<&SweepRun> = mine
                        .iter()
                        .copied()
                        .filter(|r| r.learning_rate == lr)
                        .collect();
                    if !group.is_empty() {
                        cells.push(cell((placement, depth, warmup, lr), &group));
                    }
                }
                keys.push((placement, depth, warmup));
                tables.push(loss_table(&mine, &config.learning_rates, &config.seeds));
            }
        }
    }
    let all_seeds: Vec<usize> = (0..config.seeds.len()).collect();
    let table_refs: Vec<&LossTable> = tables.iter().collect();
    let scores = sensitivities(&table_refs, &all_seeds);
    let configurations = keys
        .into_iter()
        .zip(&tables)
        .zip(scores)
        .map(
            |(((placement, depth, warmup), table), lr_sensitivity)| SweepConfiguration {
                placement,
                depth,
                warmup,
                largest_stable_lr: table.largest_stable_lr(),
                lr_sensitivity,
            },
        )
        .collect();
    (cells, configurations)
}

/// The [`LossTable`] of one configuration's `runs` over `learning_rates` × `seeds`.
pub fn loss_table(runs: &[&SweepRun], learning_rates: &[f64], seeds: &[u64]) -> LossTable {
    LossTable::new(learning_rates, seeds, |lr, seed| {
        runs.iter()
            .find(|r| r.learning_rate == lr && r.seed == seed)
            .map(|r| r.loss())
    })
}
