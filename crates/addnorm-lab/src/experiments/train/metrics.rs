//! `metrics.csv`: one row per step, written through a buffer, and cut back to a
//! checkpoint's step when a run resumes.
//!
//! ```text
//! step, lr, loss, grad_norm,                      every step
//! val_loss, val_token_acc, val_exact_acc,         every eval_every steps (else empty)
//! l{l}_grad_{w} for l = 1..L, w ∈ LAYER_WEIGHTS,  every stats_every steps (else empty)
//! rms_{l} for l = 0..L, max_logit_{l} for l = 1..L
//! ```
//!
//! # Shapes
//! Not applicable: text rows.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use addnorm::nn::StackStats;

use super::gradients::LAYER_WEIGHTS;
use super::summary::Evaluation;
use crate::error::LabError;

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> LabError + '_ {
    move |e| LabError::io(path, e)
}

/// The metrics.csv header for a model of `layers` blocks.
pub fn header(layers: usize) -> String {
    let mut cols: Vec<String> = [
        "step",
        "lr",
        "loss",
        "grad_norm",
        "val_loss",
        "val_token_acc",
        "val_exact_acc",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for l in 1..=layers {
        cols.extend(LAYER_WEIGHTS.iter().map(|w| format!("l{l}_grad_{w}")));
    }
    cols.extend((0..=layers).map(|l| format!("rms_{l}")));
    cols.extend((1..=layers).map(|l| format!("max_logit_{l}")));
    cols.join(",")
}

/// Keeps the header and the rows of an existing metrics.csv whose step is below `step`.
///
/// # Errors
/// If the file cannot be read.
pub fn rows_before(path: &Path, step: usize) -> Result<Vec<String>, LabError> {
    let file = File::open(path).map_err(io(path))?;
    let mut kept = vec![];
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(io(path))?;
        let row_step = line.split(',').next().and_then(|s| s.parse::<usize>().ok());
        if i == 0 || row_step.is_some_and(|s| s < step) {
            kept.push(line);
        }
    }
    Ok(kept)
}

/// What one step measured.
pub struct StepRow<'a> {
    /// The 0-based step.
    pub step: usize,
    /// Its learning rate.
    pub lr: f64,
    /// Its training loss.
    pub loss: f64,
    /// Its global gradient norm (before clipping).
    pub grad_norm: f64,
    /// The validation metrics after it, on evaluation steps.
    pub evaluation: Option<&'a Evaluation>,
    /// Per-layer gradient norms and the forward's statistics, on statistics steps.
    pub stats: Option<(&'a [[f64; 6]], &'a StackStats)>,
}

impl StepRow<'_> {
    /// The CSV row of a model of `layers` blocks (matching [`header`]).
    pub fn to_csv(&self, layers: usize) -> String {
        let mut row = format!(
            "{},{:.6e},{:.6},{:.6}",
            self.step, self.lr, self.loss, self.grad_norm
        );
        match self.evaluation {
            Some(e) => {
                let a = e.accuracy;
                let _ = write!(row, ",{:.6},{:.4},{:.4}", e.loss, a.token, a.exact);
            }
            None => row += ",,,",
        }
        match self.stats {
            Some((norms, stats)) => {
                norms.iter().flatten().for_each(|n| {
                    let _ = write!(row, ",{n:.6e}");
                });
                stats.residual_rms.iter().for_each(|r| {
                    let _ = write!(row, ",{r:.6}");
                });
                stats.max_attention_logit.iter().for_each(|m| {
                    let _ = write!(row, ",{m:.6}");
                });
            }
            None => row += &",".repeat(LAYER_WEIGHTS.len() * layers + 2 * layers + 1),
        }
        row
    }
}

/// `metrics.csv`, open for appending rows through a buffer.
pub struct MetricsFile {
    path: PathBuf,
    file: BufWriter<File>,
}

impl MetricsFile {
    /// Creates `path` holding `rows` (the header first).
    ///
    /// # Errors
    /// If the file cannot be written.
    pub fn create(path: PathBuf, rows: &[String]) -> Result<Self, LabError> {
        let file = BufWriter::new(File::create(&path).map_err(io(&path))?);
        let mut metrics = Self { path, file };
        for row in rows {
            metrics.push(row)?;
        }
        Ok(metrics)
    }

    /// Appends one row.
    ///
    /// # Errors
    /// If the file cannot be written.
    pub fn push(&mut self, row: &str) -> Result<(), LabError> {
        writeln!(self.file, "{row}").map_err(io(&self.path))
    }

    /// Writes the buffered rows out (before a checkpoint, and at the end).
    ///
    /// # Errors
    /// If the file cannot be written.
    pub fn flush(&mut self) -> Result<(), LabError> {
        self.file.flush().map_err(io(&self.path))
    }
}
