//! Deterministic, irregular inputs for the kernels' unit tests: no two neighbours alike, no
//! random generator, the same values on every run; and [`on_threads`], which runs a test's
//! call on a pool of a given size (results must not depend on it).
//!
//! # Formula
//! ```text
//! inputs(len, scale, offset)[i]    = ((i·7919)   mod 1013)·scale + offset
//! gradients(len, scale, offset)[i] = ((i·104729) mod 997)·scale + offset
//! ```
//! Two prime strides and moduli, so the two sequences are uncorrelated.
//!
//! # Shapes
//! `[len]`, to be read as `[rows, n]` row-major.

use super::real::Real;

/// The `x` sequence (see the [module docs](self)).
pub(crate) fn inputs<E: Real>(len: usize, scale: f64, offset: f64) -> Vec<E> {
    (0..len)
        .map(|i| E::from_f64(((i * 7919) % 1013) as f64 * scale + offset))
        .collect()
}

/// The `dy` sequence (see the [module docs](self)).
pub(crate) fn gradients<E: Real>(len: usize, scale: f64, offset: f64) -> Vec<E> {
    (0..len)
        .map(|i| E::from_f64(((i * 104_729) % 997) as f64 * scale + offset))
        .collect()
}

/// `f` on a fresh rayon pool of `threads` threads.
pub(crate) fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a small rayon pool")
        .install(f)
}

/// Leaves a free buffer of `len` f32 NaNs in the output pool, which the next output of that
/// length takes as it is (see `memory::overwritten_output`); returns its address.
#[cfg(feature = "ndarray")]
pub(crate) fn poison_output_pool(len: usize) -> *const f32 {
    use super::ndarray::NdArrayReal;
    // SAFETY: the closure writes all `len` elements.
    let buffer = unsafe {
        super::memory::written_output::<f32>(len, |p| {
            (0..len).for_each(|i| p.add(i).write(f32::NAN))
        })
    };
    let address = buffer.as_ptr();
    drop(f32::tensor(buffer, vec![len]));
    address
}

/// The address of an f32 tensor's first element, to tell whether a kernel wrote into a
/// given buffer.
///
/// # Panics
/// If the tensor does not hold f32 values.
#[cfg(feature = "ndarray")]
pub(crate) fn data_pointer(tensor: &burn::backend::ndarray::NdArrayTensor) -> *const f32 {
    use burn::tensor::TensorMetadata;
    match tensor {
        burn::backend::ndarray::NdArrayTensor::F32(storage) => storage.view().as_ptr(),
        other => panic!("expected f32, got {:?}", other.dtype()),
    }
}
