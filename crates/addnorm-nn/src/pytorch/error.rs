//! [`PytorchLoadError`]: why a PyTorch or safetensors file could not be loaded into a module.

/// Why a PyTorch `state_dict` (or a safetensors file) could not be read or loaded.
#[derive(Debug)]
#[non_exhaustive]
pub enum PytorchLoadError {
    /// The file could not be read as a PyTorch checkpoint.
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// What burn-store's reader said.
        source: burn_store::pytorch::PytorchError,
    },
    /// The file could not be read as a safetensors file.
    ReadSafetensors {
        /// The file.
        path: std::path::PathBuf,
        /// What burn-store's reader said.
        source: burn_store::SafetensorsStoreError,
    },
    /// A parameter's key is not in the file.
    Missing {
        /// The full key, prefix included.
        key: String,
    },
    /// A tensor's shape differs from the module's parameter.
    Shape {
        /// The full key.
        key: String,
        /// The parameter's shape in PyTorch's layout.
        expected: Vec<usize>,
        /// The file's shape.
        actual: Vec<usize>,
    },
    /// A tensor's data could not be materialized.
    Data {
        /// The full key.
        key: String,
        /// What burn-store said.
        message: String,
    },
    /// The module has no PyTorch counterpart for this configuration.
    Unsupported(String),
}

impl core::fmt::Display for PytorchLoadError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Read { path, source } => {
                write!(
                    f,
                    "{}: not a readable PyTorch file: {source}",
                    path.display()
                )
            }
            Self::ReadSafetensors { path, source } => {
                write!(
                    f,
                    "{}: not a readable safetensors file: {source}",
                    path.display()
                )
            }
            Self::Missing { key } => write!(f, "key {key:?} is not in the state dict"),
            Self::Shape {
                key,
                expected,
                actual,
            } => write!(
                f,
                "{key}: expected shape {expected:?}, the file has {actual:?}"
            ),
            Self::Data { key, message } => write!(f, "{key}: {message}"),
            Self::Unsupported(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for PytorchLoadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Read { source, .. } => Some(source),
            Self::ReadSafetensors { source, .. } => Some(source),
            _ => None,
        }
    }
}
