//! `addnorm report --out DIR`: a sweep's report (`sweep.json` and the tables) built from the
//! finished runs in `DIR` alone, without training anything. Workers that share a directory
//! write it themselves when the last run finishes; this command is for a report step that
//! runs after them (a Slurm job depending on the array) or after a worker died.

use std::path::Path;

use crate::error::{LabError, read_json};
use crate::experiments::sweep::{SweepConfig, collect};

/// Reads the sweep configuration saved in `dir`, or says why it cannot.
pub fn saved_config(dir: &Path) -> Result<SweepConfig, String> {
    let path = dir.join("config.json");
    read_json(&path).map_err(|e| {
        format!(
            "{} does not hold a sweep (its config.json is missing or is not a sweep's: {e})",
            dir.display()
        )
    })
}

/// `addnorm report`: prints the tables and returns 0, or names the unfinished runs and
/// returns 2.
///
/// # Errors
/// If `sweep.json` cannot be written.
pub fn run(out: &Path) -> Result<i32, LabError> {
    let config = match saved_config(out) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("error: --out {message}");
            return Ok(2);
        }
    };
    match collect(&config, out)? {
        Ok(report) => {
            print!(
                "{}",
                crate::experiments::sweep::tables::sweep_tables(&report)
            );
            println!("files: {}", out.join("sweep.json").display());
            Ok(0)
        }
        Err(missing) => {
            eprintln!(
                "error: {} of {} runs are not finished in {}: {}",
                missing.len(),
                config.grid().len(),
                out.display(),
                missing.join(", ")
            );
            Ok(2)
        }
    }
}
