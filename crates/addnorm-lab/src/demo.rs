//! The demo (placeholder).
/// Runs the demo.
pub fn run(_args: &crate::cli::DemoArgs) -> Result<i32, crate::LabError> {
    Ok(0)
}
