//! How many devices each CubeCL runtime can see, asked without initializing a runtime.
//!
//! Initializing a CubeCL runtime on a machine without a driver panics inside its worker
//! (cubecl-wgpu: "No possible adapter available"; cudarc: the CUDA library cannot be
//! loaded). Programs that should instead say what is missing ask here first.
//!
//! # Shapes
//! None: these functions return counts.

/// The adapters wgpu finds for the graphics API `burn::backend::Wgpu` uses by default
/// (Vulkan on Linux and Windows, Metal on macOS), GPUs and software drivers (llvmpipe)
/// alike. 0 when no driver is installed.
#[cfg(feature = "wgpu")]
pub fn wgpu_adapters() -> usize {
    use burn::backend::wgpu::WgpuRuntime;
    use burn::backend::wgpu::graphics::{AutoGraphicsApi, GraphicsApi};
    use cubecl::Runtime;
    WgpuRuntime::enumerate_all_devices(&AutoGraphicsApi::backend()).len()
}

/// The CUDA devices the NVIDIA driver reports; 0 when the driver library (`libcuda.so.1`)
/// cannot be loaded, in which case the CUDA runtime is never touched (it would panic).
#[cfg(feature = "cuda")]
pub fn cuda_devices() -> usize {
    if !cuda_driver_loadable() {
        return 0;
    }
    use cubecl::Runtime;
    use cubecl::cuda::CudaRuntime;
    CudaRuntime::enumerate_all_devices(&()).len()
}

/// Whether the NVIDIA driver's library can be loaded.
#[cfg(feature = "cuda")]
fn cuda_driver_loadable() -> bool {
    const NAMES: [&std::ffi::CStr; 2] = [c"libcuda.so.1", c"libcuda.so"];
    NAMES.iter().any(|name| {
        // SAFETY: dlopen with a valid C string; the handle is closed right away.
        unsafe {
            let handle = libc::dlopen(name.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
            if handle.is_null() {
                return false;
            }
            libc::dlclose(handle);
            true
        }
    })
}
