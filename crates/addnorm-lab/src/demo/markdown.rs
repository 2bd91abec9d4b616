//! `report.md`: the claims table, experiment A's slopes and plots, and experiment B's
//! table (success rate, mean exact accuracy, divergences, median steps to 99% exact).
//!
//! # Shapes
//! Not applicable: text.

use std::fmt::Write as _;

use super::claims::{claims_table, success_rate};
use super::config::label;
use super::report::DemoReport;
use crate::sweep::SweepRun;

/// The Markdown report of `report`.
pub fn markdown(report: &DemoReport) -> String {
    let c = &report.config;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# addnorm demo: gradient stability of residual norm placements\n"
    );
    let _ = writeln!(
        s,
        "Backend `{}`, {:.0} s. Task: reverse, n = {}, {} symbols. Seeds {:?}.\n",
        c.backend.name(),
        report.wall_seconds,
        c.probe.task.length,
        c.probe.task.symbols,
        c.seeds
    );
    let _ = writeln!(s, "## Claims\n\n{}", claims_table(&report.claims));
    let _ = writeln!(
        s,
        "## A. Gradients at initialization\n\nd = {}, {} heads, d_ff = {}, W^Q = W^K = 0, one batch of {} sequences; \
         geometric means over seeds.\n\n{}",
        c.probe.d_model,
        c.probe.n_heads,
        c.probe.d_ff,
        c.probe.batch_size,
        crate::report::probe_table(&report.probe)
    );
    let _ = writeln!(s, "![last layer against depth](last_layer_vs_depth.png)\n");
    let _ = writeln!(s, "![per-layer gradient norms](gradient_per_layer.png)\n");
    let _ = writeln!(s, "![residual growth](residual_growth.png)\n");
    let _ = writeln!(
        s,
        "## B. Warm-up at a high learning rate\n\nDepth {}, d = {}, LR {:e}, {} steps, AdamW, cosine decay, no clipping.\n",
        c.train_depth, c.train_d_model, c.learning_rate, c.steps
    );
    let _ = writeln!(
        s,
        "| model | warm-up | ≥99% exact | mean exact acc | diverged | median steps to 99% |\n|---|---|---|---|---|---|"
    );
    for &(p, n) in &c.pairs {
        for &w in &c.warmups {
            let group: Vec<&SweepRun> = report
                .runs
                .iter()
                .filter(|r| r.placement == p && r.norm == n && r.warmup == w)
                .collect();
            let (ok, total) = success_rate(&report.runs, p, n, w);
            let acc = group.iter().map(|r| r.final_exact_accuracy).sum::<f64>()
                / group.len().max(1) as f64;
            let div = group.iter().filter(|r| r.diverged).count();
            let mut steps: Vec<usize> = group.iter().filter_map(|r| r.steps_to_99_exact).collect();
            steps.sort_unstable();
            let median = steps
                .get(steps.len() / 2)
                .map_or("—".into(), |s| s.to_string());
            let _ = writeln!(
                s,
                "| {} | {w} | {ok}/{total} | {:.1}% | {div}/{total} | {median} |",
                label(p, n),
                100.0 * acc
            );
        }
    }
    let _ = writeln!(s, "\n![loss curves](loss_curves.png)");
    s
}
