//! Checkpoints of a run: the model and optimizer records under
//! `checkpoints/step-NNNNNN/`, and `checkpoint.json`, the index that names the last good
//! one with the history up to it. The index is replaced atomically, then the previous
//! checkpoint is removed, so a crash at any point leaves one complete checkpoint.
//!
//! # Shapes
//! Not applicable: files.

use std::path::Path;

use addnorm::NormAutodiffBackend;
use addnorm::nn::TransformerStack;
use burn::module::Module;
use burn::optim::Optimizer;
use burn::record::{FullPrecisionSettings, NamedMpkFileRecorder, Recorder};
use serde::{Deserialize, Serialize};

use super::summary::Evaluation;
use crate::error::{LabError, read_json, write_json};

/// The recorder of every checkpoint file.
type Files = NamedMpkFileRecorder<FullPrecisionSettings>;

/// What `checkpoint.json` records: where the last good state is, and the history up to it.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct CheckpointIndex {
    /// Optimizer steps taken.
    pub step: usize,
    /// The checkpoint's directory, relative to the run directory.
    pub dir: String,
    /// The training loss of every step taken.
    pub losses: Vec<f64>,
    /// The global gradient norm of every step taken, before clipping.
    #[serde(default)]
    pub grad_norms: Vec<f64>,
    /// Every evaluation so far.
    pub evaluations: Vec<Evaluation>,
}

fn record_error(dir: &Path) -> impl FnOnce(burn::record::RecorderError) -> LabError + '_ {
    move |e| LabError::Record(format!("{}: {e}", dir.display()))
}

/// Saves `model` and `optimizer` after `index.step` steps into `out` and points
/// `checkpoint.json` at them.
///
/// # Errors
/// If a file cannot be written.
pub fn save<B, O>(
    out: &Path,
    model: &TransformerStack<B>,
    optimizer: &O,
    index: CheckpointIndex,
) -> Result<(), LabError>
where
    B: NormAutodiffBackend,
    O: Optimizer<TransformerStack<B>, B>,
{
    let dir = out.join(&index.dir);
    std::fs::create_dir_all(&dir).map_err(|e| LabError::io(&dir, e))?;
    let files = Files::new();
    model
        .clone()
        .save_file(dir.join("model"), &files)
        .map_err(record_error(&dir))?;
    files
        .record(optimizer.to_record(), dir.join("optimizer"))
        .map_err(record_error(&dir))?;
    let index_path = out.join("checkpoint.json");
    let previous: Option<CheckpointIndex> = read_json(&index_path).ok();
    write_json(&index_path, &index)?;
    if let Some(prev) = previous.filter(|p| p.dir != index.dir) {
        std::fs::remove_dir_all(out.join(prev.dir)).ok();
    }
    Ok(())
}

/// The name of the checkpoint directory after `step` steps.
pub fn dir_name(step: usize) -> String {
    format!("checkpoints/step-{step:06}")
}

/// Loads the checkpoint `checkpoint.json` in `out` names, if there is one, into `model`
/// and `optimizer`.
///
/// # Errors
/// If the index or a record cannot be read.
pub fn load<B, O>(
    out: &Path,
    model: TransformerStack<B>,
    optimizer: O,
    device: &B::Device,
) -> Result<Option<(TransformerStack<B>, O, CheckpointIndex)>, LabError>
where
    B: NormAutodiffBackend,
    O: Optimizer<TransformerStack<B>, B>,
{
    let index_path = out.join("checkpoint.json");
    if !index_path.exists() {
        return Ok(None);
    }
    let index: CheckpointIndex = read_json(&index_path)?;
    let dir = out.join(&index.dir);
    let files = Files::new();
    let model = model
        .load_file(dir.join("model"), &files, device)
        .map_err(record_error(&dir))?;
    let record = files
        .load(dir.join("optimizer"), device)
        .map_err(record_error(&dir))?;
    Ok(Some((model, optimizer.load_record(record), index)))
}
