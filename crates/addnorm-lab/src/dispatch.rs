//! Backends chosen at run time: `with_backend!` binds a type alias `B` to the autodiff
//! backend of an [`addnorm::backend::Kind`], and [`kind_by_name`] saves a `Kind` in a
//! configuration by its name.
//!
//! ```text
//! Kind::Ndarray → addnorm::backend::ndarray::AutodiffBackend   (feature ndarray)  "ndarray"
//! Kind::Wgpu    → addnorm::backend::wgpu::AutodiffBackend      (feature wgpu)     "wgpu"
//! Kind::Cuda    → addnorm::backend::cuda::AutodiffBackend      (feature cuda)     "cuda"
//! ```
//!
//! # Shapes
//! Not applicable.

/// Runs `$body` with `$B` bound to the autodiff backend of the [`addnorm::backend::Kind`]
/// `$kind` and `$device` to its device; a backend that is not compiled in is a
/// [`crate::error::LabError::Invalid`].
macro_rules! with_backend {
    ($kind:expr, |$B:ident, $device:ident| $body:expr) => {{
        match $kind {
            #[cfg(feature = "ndarray")]
            addnorm::backend::Kind::Ndarray => {
                type $B = addnorm::backend::ndarray::AutodiffBackend;
                let $device = addnorm::backend::ndarray::device();
                $body
            }
            #[cfg(feature = "wgpu")]
            addnorm::backend::Kind::Wgpu => {
                type $B = addnorm::backend::wgpu::AutodiffBackend;
                let $device = addnorm::backend::wgpu::device();
                $body
            }
            #[cfg(feature = "cuda")]
            addnorm::backend::Kind::Cuda => {
                type $B = addnorm::backend::cuda::AutodiffBackend;
                let $device = addnorm::backend::cuda::device();
                $body
            }
            other => Err($crate::error::LabError::Invalid(format!(
                "backend {} is not compiled in",
                other.name()
            ))),
        }
    }};
}
pub(crate) use with_backend;

/// Serde for a [`addnorm::backend::Kind`] field, as its name (`"ndarray"`, `"wgpu"`,
/// `"cuda"`): `#[serde(with = "crate::dispatch::kind_by_name")]`.
pub mod kind_by_name {
    use addnorm::backend::Kind;
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    /// Writes the backend's name.
    ///
    /// # Errors
    /// The serializer's.
    pub fn serialize<S: Serializer>(kind: &Kind, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(kind.name())
    }

    /// Reads a backend's name.
    ///
    /// # Errors
    /// An unknown name.
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Kind, D::Error> {
        String::deserialize(deserializer)?
            .parse()
            .map_err(D::Error::custom)
    }
}
