//! LR sensitivity as Wortsman et al. 2023 define it (§3.1): how much a configuration's
//! final loss suffers over a learning-rate grid, relative to the best loss of any
//! configuration compared.
//!
//! ```text
//! v(η, s)   = ℓ₀(s)                   if seed s diverged at LR η
//!             min(ℓ(η, s), ℓ₀(s))     otherwise
//! ℓ(η)      = mean_s v(η, s)           (the loss-vs-LR curve)
//! ℓ*        = min over every compared configuration and η of ℓ(η)
//! S         = mean_η [ ℓ(η) − ℓ* ]      (lower is more robust)
//! ```
//!
//! ℓ(η, s) is the final *validation* loss and ℓ₀(s) the validation loss of the initial
//! model, so both sides of the min measure the same thing. A configuration that diverges at
//! every LR scores `mean ℓ₀ − ℓ*`, the worst possible, not 0.
//!
//! # Shapes
//! A [`LossTable`] is `[learning rates][seeds]`; seed indices select resamples for the
//! bootstrap ([`crate::stats::bootstrap`]).

use serde::{Deserialize, Serialize};

use crate::sweep::SweepRun;

/// The capped losses v(η, s) of one configuration.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct LossTable {
    /// The LR grid η.
    pub learning_rates: Vec<f64>,
    /// The seeds, in column order.
    pub seeds: Vec<u64>,
    /// v(η, s), `[lr][seed]`; NaN where the run is missing.
    pub capped: Vec<Vec<f64>>,
    /// Whether seed s diverged at η, `[lr][seed]`.
    pub diverged: Vec<Vec<bool>>,
}

impl LossTable {
    /// The table of `runs` (one configuration's runs) over `learning_rates` × `seeds`.
    pub fn from_runs(runs: &[&SweepRun], learning_rates: &[f64], seeds: &[u64]) -> Self {
        let find = |lr: f64, seed: u64| {
            runs.iter()
                .find(|r| r.learning_rate == lr && r.seed == seed)
        };
        let capped = learning_rates
            .iter()
            .map(|&lr| {
                seeds
                    .iter()
                    .map(|&s| find(lr, s).map_or(f64::NAN, |r| capped_loss(r)))
                    .collect()
            })
            .collect();
        let diverged = learning_rates
            .iter()
            .map(|&lr| {
                seeds
                    .iter()
                    .map(|&s| find(lr, s).is_some_and(|r| r.diverged))
                    .collect()
            })
            .collect();
        Self {
            learning_rates: learning_rates.to_vec(),
            seeds: seeds.to_vec(),
            capped,
            diverged,
        }
    }

    /// ℓ(η) for every η, averaged over the seed columns `seeds` (indices, repeats allowed).
    pub fn curve(&self, seeds: &[usize]) -> Vec<f64> {
        self.capped
            .iter()
            .map(|row| seeds.iter().map(|&s| row[s]).sum::<f64>() / seeds.len() as f64)
            .collect()
    }

    /// Every seed column, once.
    pub fn all_seeds(&self) -> Vec<usize> {
        (0..self.seeds.len()).collect()
    }

    /// The largest η at which no seed diverged, if any.
    pub fn largest_stable_lr(&self) -> Option<f64> {
        self.learning_rates
            .iter()
            .zip(&self.diverged)
            .filter(|(_, d)| !d.iter().any(|&x| x))
            .map(|(&lr, _)| lr)
            .fold(None, |best, lr| Some(best.map_or(lr, |b: f64| b.max(lr))))
    }
}

/// v(η, s) of one run: ℓ₀ if it diverged, else min(final validation loss, ℓ₀).
pub fn capped_loss(run: &SweepRun) -> f64 {
    if run.diverged || !run.final_loss.is_finite() {
        run.initial_loss
    } else {
        run.final_loss.min(run.initial_loss)
    }
}

/// The sensitivities S of `tables`, against their shared ℓ*, on the seed columns `seeds`.
pub fn sensitivities(tables: &[&LossTable], seeds: &[usize]) -> Vec<f64> {
    let curves: Vec<Vec<f64>> = tables.iter().map(|t| t.curve(seeds)).collect();
    let best = curves
        .iter()
        .flatten()
        .copied()
        .filter(|v| !v.is_nan())
        .fold(f64::INFINITY, f64::min);
    curves
        .iter()
        .map(|c| c.iter().map(|l| l - best).sum::<f64>() / c.len() as f64)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::NormKind;
    use addnorm::nn::Placement;

    fn run(lr: f64, seed: u64, final_loss: f64, diverged: bool) -> SweepRun {
        SweepRun {
            placement: Placement::Pre,
            norm: NormKind::Layer,
            depth: 2,
            warmup: 0,
            learning_rate: lr,
            seed,
            diverged,
            final_loss,
            final_token_accuracy: 0.0,
            final_exact_accuracy: 0.0,
            steps_to_99_exact: None,
            initial_loss: 2.0,
            losses: vec![],
            grad_norms: vec![],
            evaluations: vec![],
        }
    }

    #[test]
    fn a_configuration_diverging_everywhere_is_the_least_robust() {
        let lrs = [1e-3, 1e-2];
        let seeds = [0, 1];
        let good: Vec<SweepRun> = vec![
            run(1e-3, 0, 0.5, false),
            run(1e-3, 1, 0.7, false),
            run(1e-2, 0, 1.0, false),
            run(1e-2, 1, 0.0, true),
        ];
        let bad: Vec<SweepRun> = lrs
            .iter()
            .flat_map(|&lr| seeds.iter().map(move |&s| run(lr, s, f64::NAN, true)))
            .collect();
        let t_good = LossTable::from_runs(&good.iter().collect::<Vec<_>>(), &lrs, &seeds);
        let t_bad = LossTable::from_runs(&bad.iter().collect::<Vec<_>>(), &lrs, &seeds);
        // ℓ(1e-3) = 0.6, ℓ(1e-2) = (1.0 + ℓ₀ = 2.0)/2 = 1.5: the diverged seed counts as ℓ₀.
        assert_eq!(t_good.curve(&t_good.all_seeds()), vec![0.6, 1.5]);
        let s = sensitivities(&[&t_good, &t_bad], &[0, 1]);
        // ℓ* = 0.6 over both: S_good = (0 + 0.9)/2, S_bad = ℓ₀ − ℓ* = 1.4.
        assert!(
            (s[0] - 0.45).abs() < 1e-12 && (s[1] - 1.4).abs() < 1e-12,
            "{s:?}"
        );
        assert_eq!(t_good.largest_stable_lr(), Some(1e-3));
        assert_eq!(t_bad.largest_stable_lr(), None);
        // A final loss above ℓ₀ is capped at ℓ₀.
        assert_eq!(capped_loss(&run(1e-3, 0, 3.0, false)), 2.0);
    }
}
