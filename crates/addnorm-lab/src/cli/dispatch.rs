//! Backends chosen at run time: `with_backend!` binds a type alias `B` to the autodiff
//! backend of an [`addnorm::backend::Kind`] (which configurations save by its name).
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
