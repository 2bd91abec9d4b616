//! The lab's error type: what went wrong, and with which file.

use std::path::PathBuf;

/// An error of a lab command.
#[derive(Debug)]
pub enum LabError {
    /// A file or directory could not be read or written.
    Io {
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A model or optimizer record could not be saved or loaded.
    Record(String),
    /// A saved file (config, checkpoint index) could not be parsed.
    Parse {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// The arguments make no sense together.
    Invalid(String),
}

impl LabError {
    /// Wraps an I/O error with its path.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}

impl core::fmt::Display for LabError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Self::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Self::Record(message) => write!(f, "record error: {message}"),
            Self::Parse { path, message } => write!(f, "{}: {message}", path.display()),
            Self::Invalid(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for LabError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io { source, .. } => Some(source),
            Self::Record(_) | Self::Parse { .. } | Self::Invalid(_) => None,
        }
    }
}

/// Writes `contents` to `path` atomically: a temporary file beside it, then a rename. The
/// temporary name is unique to the process and call, so that workers sharing a directory
/// (and runs sharing a process) never rename each other's half-written files.
pub fn write_atomic(path: &std::path::Path, contents: &[u8]) -> Result<(), LabError> {
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_extension(format!("{}-{call}.tmp", std::process::id()));
    std::fs::write(&tmp, contents).map_err(|e| LabError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| LabError::io(path, e))
}

/// Serializes `value` as pretty JSON into `path`, atomically.
pub fn write_json<T: serde::Serialize>(path: &std::path::Path, value: &T) -> Result<(), LabError> {
    let json = serde_json::to_vec_pretty(value).expect("serializable");
    write_atomic(path, &json)
}

/// Reads JSON from `path`.
pub fn read_json<T: serde::de::DeserializeOwned>(path: &std::path::Path) -> Result<T, LabError> {
    let bytes = std::fs::read(path).map_err(|e| LabError::io(path, e))?;
    serde_json::from_slice(&bytes).map_err(|e| LabError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}
