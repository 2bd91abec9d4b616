//! The backends this build enables, chosen by cargo feature: `ndarray` (the default) and
//! `wgpu`.
//!
//! [`Backend`], [`AutodiffBackend`] and [`device`] name the preferred one: `wgpu` when that
//! feature is on, else `ndarray`. The submodules name each enabled backend, so a program
//! (or a test) can run on every one of them.

#[cfg(not(any(feature = "ndarray", feature = "wgpu")))]
compile_error!("addnorm needs a backend: enable the `ndarray` (default) or `wgpu` feature.");

/// The CPU backend, burn-ndarray, in f32.
#[cfg(feature = "ndarray")]
pub mod ndarray {
    /// `NdArray<f32>`.
    pub type Backend = burn::backend::NdArray<f32>;
    /// `Autodiff<NdArray<f32>>`.
    pub type AutodiffBackend = burn::backend::Autodiff<Backend>;
    /// The name `--backend` accepts for it.
    pub const NAME: &str = "ndarray";

    /// The CPU device.
    pub fn device() -> burn::backend::ndarray::NdArrayDevice {
        burn::backend::ndarray::NdArrayDevice::Cpu
    }
}

/// The GPU backend, burn-wgpu with Burn's default fusion, in f32. Without a GPU it runs on
/// Mesa's software Vulkan driver (llvmpipe).
#[cfg(feature = "wgpu")]
pub mod wgpu {
    /// `Wgpu<f32>` (fusion over CubeCL's wgpu runtime).
    pub type Backend = burn::backend::Wgpu<f32, i32>;
    /// `Autodiff<Wgpu<f32>>`.
    pub type AutodiffBackend = burn::backend::Autodiff<Backend>;
    /// The name `--backend` accepts for it.
    pub const NAME: &str = "wgpu";

    /// The default wgpu device (the first adapter found).
    pub fn device() -> burn::backend::wgpu::WgpuDevice {
        burn::backend::wgpu::WgpuDevice::default()
    }
}

#[cfg(feature = "wgpu")]
pub use self::wgpu::{AutodiffBackend, Backend, NAME, device};

#[cfg(all(feature = "ndarray", not(feature = "wgpu")))]
pub use self::ndarray::{AutodiffBackend, Backend, NAME, device};

/// The names of the backends compiled into this build, preferred first.
pub const ENABLED: &[&str] = &[
    #[cfg(feature = "wgpu")]
    "wgpu",
    #[cfg(feature = "ndarray")]
    "ndarray",
];
