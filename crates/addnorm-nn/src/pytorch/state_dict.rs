//! [`StateDict`]: the tensors of a PyTorch checkpoint or a safetensors file, by key.

use std::collections::HashMap;
use std::path::Path;

use burn::tensor::{Tensor, backend::Backend};
use burn_store::pytorch::PytorchReader;
use burn_store::{ModuleStore, SafetensorsStore, TensorSnapshot};

use super::PytorchLoadError;

/// The tensors of a PyTorch checkpoint (`torch.save(model.state_dict(), path)`) or of a
/// safetensors file (Hugging Face's format), read with burn-store's readers and looked up by
/// their dotted keys. Each tensor keeps the file's element type (f32, f16, bf16, …) until
/// [`tensor`](Self::tensor) converts it to the backend's.
pub struct StateDict {
    tensors: HashMap<String, TensorSnapshot>,
}

impl StateDict {
    /// Reads a `.pt` / `.pth` file holding a state dict at its top level.
    ///
    /// # Errors
    /// [`PytorchLoadError::Read`] if the file is missing or not a PyTorch checkpoint.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, PytorchLoadError> {
        Self::read(path.as_ref(), PytorchReader::new(path.as_ref()))
    }

    /// Reads a checkpoint whose state dict sits under `key` (for example
    /// `{"model_state_dict": …, "optimizer": …}`).
    ///
    /// # Errors
    /// As [`from_file`](Self::from_file).
    pub fn from_file_under(path: impl AsRef<Path>, key: &str) -> Result<Self, PytorchLoadError> {
        Self::read(
            path.as_ref(),
            PytorchReader::with_top_level_key(path.as_ref(), key),
        )
    }

    /// Reads a safetensors file (`model.safetensors`, or one shard
    /// `model-0000k-of-0000n.safetensors` of a larger model: its `model.safetensors.index.json`
    /// names the shard of each key).
    ///
    /// # Errors
    /// [`PytorchLoadError::ReadSafetensors`] if the file is missing or not a safetensors
    /// file.
    pub fn from_safetensors(path: impl AsRef<Path>) -> Result<Self, PytorchLoadError> {
        let path = path.as_ref();
        let mut store = SafetensorsStore::from_file(path);
        let tensors =
            store
                .get_all_snapshots()
                .map_err(|source| PytorchLoadError::ReadSafetensors {
                    path: path.to_path_buf(),
                    source,
                })?;
        Ok(Self {
            tensors: tensors.clone().into_iter().collect(),
        })
    }

    fn read(
        path: &Path,
        reader: Result<PytorchReader, burn_store::pytorch::PytorchError>,
    ) -> Result<Self, PytorchLoadError> {
        let reader = reader.map_err(|source| PytorchLoadError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Self {
            tensors: reader.into_tensors(),
        })
    }

    /// The keys, sorted.
    pub fn keys(&self) -> Vec<&str> {
        let mut keys: Vec<&str> = self.tensors.keys().map(String::as_str).collect();
        keys.sort_unstable();
        keys
    }

    /// Whether the file has `key`.
    pub fn contains(&self, key: &str) -> bool {
        self.tensors.contains_key(key)
    }

    /// The tensor under `key`, checked to have `shape` and converted to `B`'s float type.
    ///
    /// # Errors
    /// [`PytorchLoadError::Missing`], [`PytorchLoadError::Shape`] or
    /// [`PytorchLoadError::Data`], each naming the key.
    pub fn tensor<B: Backend, const D: usize>(
        &self,
        key: &str,
        shape: [usize; D],
        device: &B::Device,
    ) -> Result<Tensor<B, D>, PytorchLoadError> {
        let snapshot = self
            .tensors
            .get(key)
            .ok_or_else(|| PytorchLoadError::Missing { key: key.into() })?;
        let actual = snapshot.shape.to_vec();
        if actual != shape {
            return Err(PytorchLoadError::Shape {
                key: key.into(),
                expected: shape.to_vec(),
                actual,
            });
        }
        let data = snapshot.to_data().map_err(|e| PytorchLoadError::Data {
            key: key.into(),
            message: e.to_string(),
        })?;
        Ok(Tensor::from_data(data.convert::<B::FloatElem>(), device))
    }
}

impl core::fmt::Debug for StateDict {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("StateDict")
            .field("keys", &self.keys())
            .finish()
    }
}
