//! The sweep's cells and configurations as Markdown tables, for the terminal.
//!
//! # Shapes
//! Not applicable: text formatting.

use super::record::SweepReport;

fn fmt_opt<T: core::fmt::Display>(v: Option<T>) -> String {
    v.map_or("—".into(), |v| v.to_string())
}

/// The sweep's cells and configurations as Markdown tables.
pub fn sweep_tables(report: &SweepReport) -> String {
    let mut s = String::from(
        "| placement | depth | warm-up | LR | diverged | final val loss | exact acc | token acc | median steps to 99% |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    for c in &report.cells {
        s += &format!(
            "| {} | {} | {} | {:e} | {}/{} | {:.4} | {:.1}% | {:.1}% | {} |\n",
            c.placement,
            c.depth,
            c.warmup,
            c.learning_rate,
            c.diverged,
            c.runs,
            c.mean_final_loss,
            100.0 * c.mean_exact_accuracy,
            100.0 * c.mean_token_accuracy,
            fmt_opt(c.median_steps_to_99)
        );
    }
    s += "\n| placement | depth | warm-up | largest stable LR | LR sensitivity |\n|---|---|---|---|---|\n";
    for c in &report.configurations {
        s += &format!(
            "| {} | {} | {} | {} | {:.4} |\n",
            c.placement,
            c.depth,
            c.warmup,
            c.largest_stable_lr
                .map_or("none".into(), |lr| format!("{lr:e}")),
            c.lr_sensitivity
        );
    }
    s
}
