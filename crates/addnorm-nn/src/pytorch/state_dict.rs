//! [`StateDict`]: the tensors of a PyTorch checkpoint, by key.

use std::collections::HashMap;
use std::path::Path;

use burn::tensor::{Tensor, backend::Backend};
use burn_store::TensorSnapshot;
use burn_store::pytorch::PytorchReader;

use super::PytorchLoadError;

/// The tensors of a PyTorch checkpoint (`torch.save(model.state_dict(), path)`), read with
/// burn-store's PyTorch reader and looked up by their dotted keys.
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
