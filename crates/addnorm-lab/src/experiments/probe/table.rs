//! The probe's slopes as a Markdown table, for the terminal and `report.md`.
//!
//! # Shapes
//! Not applicable: text formatting.

use super::record::ProbeReport;

/// The probe's slopes as a Markdown table.
pub fn probe_table(report: &ProbeReport) -> String {
    let mut s = String::from(
        "| placement | norm | slope of ln ‖∂L/∂W₂^(L)‖ vs ln L | ‖∂L/∂W₂^(L)‖ by depth |\n|---|---|---|---|\n",
    );
    for fit in &report.slopes {
        let points: Vec<String> = fit
            .points
            .iter()
            .map(|(d, g)| format!("L={d}: {g:.3e}"))
            .collect();
        s += &format!(
            "| {} | {} | {:.3} | {} |\n",
            fit.placement,
            fit.norm.name(),
            fit.slope,
            points.join(", ")
        );
    }
    s
}
