//! The backends this build enables, chosen by cargo feature: `ndarray` (the default), `wgpu`
//! and `cuda`.
//!
//! [`Backend`], [`AutodiffBackend`] and [`device`] name the preferred one: `cuda`, else
//! `wgpu`, else `ndarray`. The submodules name each enabled backend, so a program (or a
//! test) can run on every one of them. [`Kind`] names them as values, for command lines.
//!
//! A GPU backend needs a driver at run time. Burn panics inside a worker thread when it has
//! none, so ask [`Kind::check_available`] first: it says which driver is missing.
//!
//! ```
//! use addnorm::backend::{self, Kind};
//!
//! let kind: Kind = "ndarray".parse().unwrap();
//! assert_eq!(kind.name(), "ndarray");
//! assert!(kind.check_available().is_ok());
//! assert!(backend::ENABLED.contains(&Kind::Ndarray));
//! assert!("tpu".parse::<Kind>().unwrap_err().contains("not compiled in"));
//! ```
//!
//! # Shapes
//! None: this module names types and devices.

#[cfg(not(any(feature = "ndarray", feature = "wgpu", feature = "cuda")))]
compile_error!("addnorm needs a backend: enable `ndarray` (default), `wgpu` or `cuda`.");

/// The CPU backend, burn-ndarray, in f32.
#[cfg(feature = "ndarray")]
pub mod ndarray {
    /// `NdArray<f32>`.
    pub type Backend = burn::backend::NdArray<f32>;
    /// `Autodiff<NdArray<f32>>`.
    pub type AutodiffBackend = burn::backend::Autodiff<Backend>;

    /// The CPU device.
    pub fn device() -> burn::backend::ndarray::NdArrayDevice {
        burn::backend::ndarray::NdArrayDevice::Cpu
    }
}

/// The GPU backend through wgpu, with Burn's default fusion, in f32. Without a GPU it runs
/// on Mesa's software Vulkan driver (llvmpipe).
#[cfg(feature = "wgpu")]
pub mod wgpu {
    /// `Wgpu<f32>` (fusion over CubeCL's wgpu runtime).
    pub type Backend = burn::backend::Wgpu<f32, i32>;
    /// `Autodiff<Wgpu<f32>>`.
    pub type AutodiffBackend = burn::backend::Autodiff<Backend>;

    /// The default wgpu device (the first adapter found).
    pub fn device() -> burn::backend::wgpu::WgpuDevice {
        burn::backend::wgpu::WgpuDevice::default()
    }
}

/// NVIDIA GPUs through CUDA, with Burn's default fusion, in f32.
#[cfg(feature = "cuda")]
pub mod cuda {
    /// `Cuda<f32>` (fusion over CubeCL's CUDA runtime).
    pub type Backend = burn::backend::Cuda<f32, i32>;
    /// `Autodiff<Cuda<f32>>`.
    pub type AutodiffBackend = burn::backend::Autodiff<Backend>;

    /// The first CUDA device.
    pub fn device() -> burn::backend::cuda::CudaDevice {
        burn::backend::cuda::CudaDevice::default()
    }
}

#[cfg(feature = "cuda")]
pub use self::cuda::{AutodiffBackend, Backend, device};

#[cfg(all(feature = "wgpu", not(feature = "cuda")))]
pub use self::wgpu::{AutodiffBackend, Backend, device};

#[cfg(all(feature = "ndarray", not(any(feature = "wgpu", feature = "cuda"))))]
pub use self::ndarray::{AutodiffBackend, Backend, device};

/// A backend this crate knows, compiled in or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// burn-ndarray on the CPU (feature `ndarray`).
    Ndarray,
    /// burn-wgpu with fusion (feature `wgpu`).
    Wgpu,
    /// burn-cuda with fusion (feature `cuda`).
    Cuda,
}

/// The backends compiled into this build, preferred first.
pub const ENABLED: &[Kind] = &[
    #[cfg(feature = "cuda")]
    Kind::Cuda,
    #[cfg(feature = "wgpu")]
    Kind::Wgpu,
    #[cfg(feature = "ndarray")]
    Kind::Ndarray,
];

/// The preferred backend of this build: the one [`Backend`] names.
pub const PREFERRED: Kind = ENABLED[0];

impl Kind {
    /// Every backend this crate knows.
    pub const ALL: [Kind; 3] = [Kind::Ndarray, Kind::Wgpu, Kind::Cuda];

    /// The name command lines use: `ndarray`, `wgpu`, `cuda`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Ndarray => "ndarray",
            Kind::Wgpu => "wgpu",
            Kind::Cuda => "cuda",
        }
    }

    /// Whether this build has the backend.
    pub fn is_enabled(self) -> bool {
        ENABLED.contains(&self)
    }

    /// Checks, without initializing the backend, that it is compiled in and that this
    /// machine has a device for it.
    ///
    /// # Errors
    /// A message that names the missing feature or driver and how to install it.
    pub fn check_available(self) -> Result<(), String> {
        if !self.is_enabled() {
            return Err(format!(
                "backend {} is not compiled in; build with `--features {}` (this build has: {})",
                self.name(),
                self.name(),
                enabled_names()
            ));
        }
        match self {
            Kind::Ndarray => Ok(()),
            Kind::Wgpu => check_wgpu(),
            Kind::Cuda => check_cuda(),
        }
    }
}

impl core::fmt::Display for Kind {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.pad(self.name())
    }
}

/// Saved by name (`"ndarray"`, `"wgpu"`, `"cuda"`), through Burn's re-export of serde, so
/// that configurations can record their backend.
impl burn::serde::Serialize for Kind {
    fn serialize<S: burn::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// Read by name; only backends compiled into this build are accepted (as [`str::parse`]).
impl<'de> burn::serde::Deserialize<'de> for Kind {
    fn deserialize<D: burn::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = <String as burn::serde::Deserialize>::deserialize(deserializer)?;
        name.parse()
            .map_err(<D::Error as burn::serde::de::Error>::custom)
    }
}

impl core::str::FromStr for Kind {
    type Err = String;

    /// Parses a backend name; only backends compiled into this build are accepted.
    fn from_str(s: &str) -> Result<Self, String> {
        match Kind::ALL.into_iter().find(|k| k.name() == s) {
            Some(kind) if kind.is_enabled() => Ok(kind),
            Some(kind) => Err(format!(
                "backend {kind} is not compiled in; build with `--features {kind}` (this build has: {})",
                enabled_names()
            )),
            None => Err(format!(
                "unknown backend {s:?}: not compiled in; this build has: {}",
                enabled_names()
            )),
        }
    }
}

fn enabled_names() -> String {
    ENABLED
        .iter()
        .map(|k| k.name())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(feature = "wgpu")]
fn check_wgpu() -> Result<(), String> {
    if addnorm_kernels::cube::devices::wgpu_adapters() > 0 {
        return Ok(());
    }
    Err(
        "backend wgpu: no GPU adapter found (no Vulkan driver is installed). Install your \
         GPU's Vulkan driver, or, on a machine without a GPU, Mesa's software one: \
         `apt-get install mesa-vulkan-drivers libvulkan1` (Debian, Ubuntu)"
            .to_string(),
    )
}

#[cfg(not(feature = "wgpu"))]
fn check_wgpu() -> Result<(), String> {
    unreachable!("only enabled backends are checked")
}

#[cfg(feature = "cuda")]
fn check_cuda() -> Result<(), String> {
    if addnorm_kernels::cube::devices::cuda_devices() > 0 {
        return Ok(());
    }
    Err(
        "backend cuda: no CUDA device found (the NVIDIA driver's libcuda.so.1 cannot be \
         loaded, or it reports no GPU). Install the NVIDIA driver, or use --backend wgpu \
         or ndarray"
            .to_string(),
    )
}

#[cfg(not(feature = "cuda"))]
fn check_cuda() -> Result<(), String> {
    unreachable!("only enabled backends are checked")
}
