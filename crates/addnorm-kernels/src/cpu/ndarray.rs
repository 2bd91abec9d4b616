//! The `NdArray` glue every op's CPU kernels share: the named bound of the `NdArray`
//! backends ([`NdArrayBackend`]), reading and writing their tensors as slices
//! (`NdArrayReal`), reshaping without a copy, and writing a gradient over the incoming one
//! (`with_gradient_buffer`). A kernel's output becomes a tensor through `NdArrayReal`,
//! which registers it with the output pool (`super::output_pool`); `take_unique` does not
//! count the pool's handle.
//!
//! Each op's own glue (`crate::norm::ndarray`, `crate::attention::ndarray`,
//! `crate::linear::ndarray`, `crate::gelu::ndarray`) picks the element type from the
//! tensors' runtime dtype (f32 or f64; anything else goes back to the composite path) and
//! calls its kernels through these.
//!
//! # Shapes
//! Any: a tensor is read as its elements in row-major order (a transposed or sliced view is
//! gathered first).

use std::borrow::Cow;

use burn::backend::NdArray;
use burn::backend::ndarray::{
    FloatNdArrayElement, IntNdArrayElement, NdArrayTensor, QuantElement, SharedArray,
};
use burn::tensor::backend::Backend;

use super::aligned::Aligned;
use super::memory::{written_output, zeroed_output};
use super::output_pool;
use super::real::Real;

/// Every `NdArray<E, I, Q>`, named once: the bound of the ops' `NdArray` impls
/// (`impl<B: NdArrayBackend> GeluBackend for B`), which would otherwise each repeat
/// burn-ndarray's five-line `where` clause (the element traits of `E`, `I`, `Q` and
/// `NdArrayTensor: From<SharedArray<E>> + From<SharedArray<I>>`). It says what the impls
/// rely on: the float primitive is an [`NdArrayTensor`].
///
/// Implemented for every `NdArray<E, I, Q>` and nothing else; no other type needs it.
pub trait NdArrayBackend: Backend<FloatTensorPrimitive = NdArrayTensor> {}

impl<E, I, Q> NdArrayBackend for NdArray<E, I, Q>
where
    E: FloatNdArrayElement,
    I: IntNdArrayElement,
    Q: QuantElement,
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
}

/// The element types with an `NdArrayTensor` variant.
pub(crate) trait NdArrayReal: Real {
    /// The tensor's elements in row-major order, borrowed when they already are, or `None`
    /// when the tensor holds another dtype.
    fn elements(tensor: &NdArrayTensor) -> Option<Cow<'_, [Self]>>;
    /// A new tensor of `shape` from row-major `values` (an [`Aligned`] buffer keeps its
    /// alignment: the array starts where its elements do, inside its `Vec`).
    fn tensor(values: impl Into<Aligned<Self>>, shape: Vec<usize>) -> NdArrayTensor;
    /// The tensor's array when this is its only reference and it is in standard layout, so
    /// a kernel may overwrite it; `Err(tensor)` otherwise.
    fn take_unique(tensor: NdArrayTensor) -> Result<SharedArray<Self>, NdArrayTensor>;
    /// The tensor holding `array`.
    fn from_array(array: SharedArray<Self>) -> NdArrayTensor;
}

macro_rules! ndarray_real {
    ($ty:ty, $variant:ident) => {
        impl NdArrayReal for $ty {
            fn elements(tensor: &NdArrayTensor) -> Option<Cow<'_, [Self]>> {
                let NdArrayTensor::$variant(storage) = tensor else {
                    return None;
                };
                let view = storage.view();
                Some(match view.to_slice() {
                    Some(contiguous) => Cow::Borrowed(contiguous),
                    None => Cow::Owned(view.iter().copied().collect()),
                })
            }

            fn tensor(values: impl Into<Aligned<Self>>, shape: Vec<usize>) -> NdArrayTensor {
                let array = shared_array(values.into(), shape);
                output_pool::register(&array);
                array.into()
            }

            fn take_unique(tensor: NdArrayTensor) -> Result<SharedArray<Self>, NdArrayTensor> {
                match tensor {
                    NdArrayTensor::$variant(storage) if storage.view().is_standard_layout() => {
                        if storage.is_unique() {
                            return Ok(storage.into_shared());
                        }
                        // The output pool's handle does not count (see `output_pool`).
                        if !output_pool::release(storage.view().as_ptr() as usize) {
                            return Err(NdArrayTensor::$variant(storage));
                        }
                        let array = storage.into_shared();
                        if array.is_unique() {
                            Ok(array)
                        } else {
                            output_pool::register(&array);
                            Err(array.into())
                        }
                    }
                    other => Err(other),
                }
            }

            fn from_array(array: SharedArray<Self>) -> NdArrayTensor {
                output_pool::register(&array);
                array.into()
            }
        }
    };
}

ndarray_real!(f32, F32);
ndarray_real!(f64, F64);

/// `tensor`'s array, to overwrite: its own when this is the only reference to it (see
/// [`NdArrayReal::take_unique`]), else a standard-layout copy.
///
/// # Panics
/// If `tensor` holds another dtype than `E`.
pub(crate) fn unique_or_copy<E: NdArrayReal>(tensor: NdArrayTensor) -> SharedArray<E> {
    E::take_unique(tensor).unwrap_or_else(|shared| {
        let shape = burn::tensor::TensorMetadata::shape(&shared)
            .as_slice()
            .to_vec();
        let values = E::elements(&shared).expect("unique_or_copy: the dtype was matched");
        // SAFETY: the closure writes all `values.len()` elements. (A pooled output buffer,
        // so that the copy comes back to the pool once it is a tensor.)
        let copy = unsafe {
            written_output(values.len(), |p| {
                std::ptr::copy_nonoverlapping(values.as_ptr(), p, values.len())
            })
        };
        shared_array(copy, shape)
    })
}

/// `values` as an array of `shape`, starting where they start in their `Vec` (a sliced
/// owned array when they do not start it, which `ndarray` and burn-ndarray read as any
/// other; see [`Aligned`]).
///
/// # Panics
/// If `shape` does not hold `values.len()` elements.
pub(crate) fn shared_array<E: Real>(values: Aligned<E>, shape: Vec<usize>) -> SharedArray<E> {
    let (buffer, start, len) = values.into_parts();
    let array = ndarray::Array1::from_vec(buffer).slice_move(ndarray::s![start..start + len]);
    array
        .into_shape_with_order(shape)
        .expect("the kernel writes exactly rows × n values")
        .into_dyn()
        .into_shared()
}

/// The elements of an array that [`NdArrayReal::take_unique`] or [`unique_or_copy`]
/// returned, to overwrite.
///
/// # Panics
/// If the array is not in standard layout (those two return only such arrays).
pub(crate) fn elements_mut<E: NdArrayReal>(array: &mut SharedArray<E>) -> &mut [E] {
    array
        .as_slice_mut()
        .expect("a standard-layout array is one slice")
}

/// `x` reshaped to `shape` without copying, when it is an f32 or f64 tensor in standard
/// layout (row-major, contiguous): only the dimensions change. `Err(x)` otherwise.
///
/// # Panics
/// If `shape` does not hold as many elements as `x`.
pub(crate) fn reshape_without_copy(
    x: NdArrayTensor,
    shape: &burn::tensor::Shape,
) -> Result<NdArrayTensor, NdArrayTensor> {
    macro_rules! reshaped {
        ($storage:expr) => {{
            let array = $storage.into_shared();
            let from = array.shape().to_vec();
            array
                .into_shape_with_order(shape.as_slice())
                .unwrap_or_else(|e| panic!("reshape {from:?} to {shape:?}: {e}"))
                .into()
        }};
    }
    match x {
        NdArrayTensor::F32(storage) if storage.view().is_standard_layout() => {
            Ok(reshaped!(storage))
        }
        NdArrayTensor::F64(storage) if storage.view().is_standard_layout() => {
            Ok(reshaped!(storage))
        }
        other => Err(other),
    }
}

/// Runs a backward kernel with dx written over dy (`in_place`) when `grad_output` is the
/// only reference to a standard-layout `E` array: the usual case in a backward pass, and no
/// allocation of dx's size. Otherwise `separate` reads dy and writes a fresh buffer.
/// Returns dx as a tensor of `shape` (which holds as many elements as dy), and what the
/// kernel returned.
///
/// # Panics
/// With the message `wrong_dtype` makes when `grad_output` does not hold `E` values.
pub(crate) fn with_gradient_buffer<E: NdArrayReal, R>(
    grad_output: NdArrayTensor,
    shape: Vec<usize>,
    wrong_dtype: impl FnOnce(&NdArrayTensor) -> String,
    in_place: impl FnOnce(&mut [E]) -> R,
    separate: impl FnOnce(&[E], &mut [E]) -> R,
) -> (NdArrayTensor, R) {
    match E::take_unique(grad_output) {
        Ok(mut grad) => {
            let result = in_place(elements_mut(&mut grad));
            let grad = grad
                .into_shape_with_order(shape)
                .expect("dx holds as many elements as dy");
            (E::from_array(grad), result)
        }
        Err(grad_output) => {
            let dy = E::elements(&grad_output)
                .unwrap_or_else(|| panic!("{}", wrong_dtype(&grad_output)));
            let mut dx = zeroed_output(shape.iter().product());
            let result = separate(&dy, &mut dx);
            (E::tensor(dx, shape), result)
        }
    }
}

/// An int tensor's values as i64 in row-major order (class or row ids), borrowed when they
/// already are; `None` for a float or bool tensor. A u64 id past `i64::MAX` becomes
/// `i64::MAX`, which the kernels reject as out of range.
pub(crate) fn int_ids(targets: &NdArrayTensor) -> Option<Cow<'_, [i64]>> {
    macro_rules! widened {
        ($storage:expr) => {
            Cow::Owned(
                $storage
                    .view()
                    .iter()
                    .map(|&t| i64::try_from(t).unwrap_or(i64::MAX))
                    .collect(),
            )
        };
    }
    Some(match targets {
        NdArrayTensor::I64(storage) => {
            let view = storage.view();
            match view.to_slice() {
                Some(contiguous) => Cow::Borrowed(contiguous),
                None => Cow::Owned(view.iter().copied().collect()),
            }
        }
        NdArrayTensor::I32(storage) => widened!(storage),
        NdArrayTensor::I16(storage) => widened!(storage),
        NdArrayTensor::I8(storage) => widened!(storage),
        NdArrayTensor::U64(storage) => widened!(storage),
        NdArrayTensor::U32(storage) => widened!(storage),
        NdArrayTensor::U16(storage) => widened!(storage),
        NdArrayTensor::U8(storage) => widened!(storage),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Shape, Tensor, TensorData, TensorMetadata};

    use super::*;
    use crate::cpu::test_values::data_pointer;

    #[test]
    fn contiguous_reshape_keeps_the_buffer_and_views_fall_back() {
        let device = Default::default();
        let values: Vec<f32> = (0..24).map(|v| v as f32).collect();
        let x =
            Tensor::<NdArray, 3>::from_data(TensorData::new(values.clone(), [2, 3, 4]), &device);
        let primitive = x.clone().into_primitive().tensor();
        let before = data_pointer(&primitive);
        let reshaped = reshape_without_copy(primitive, &Shape::new([6, 4]))
            .unwrap_or_else(|_| panic!("a contiguous tensor must reshape in place"));
        assert_eq!(
            data_pointer(&reshaped),
            before,
            "the reshape copied the buffer"
        );
        assert_eq!(reshaped.shape(), Shape::new([6, 4]));
        let back =
            Tensor::<NdArray, 2>::from_primitive(burn::tensor::TensorPrimitive::Float(reshaped));
        assert_eq!(back.into_data().to_vec::<f32>().unwrap(), values);

        let transposed = x.swap_dims(1, 2).into_primitive().tensor();
        assert!(
            reshape_without_copy(transposed, &Shape::new([6, 4])).is_err(),
            "a transposed view has no row-major reshape without a copy"
        );
    }

    /// A fused kernel's output reaches Burn starting on a 64-byte line (`super::aligned`),
    /// fresh or taken again from the output pool, and reads back as the values it holds:
    /// here a linear layer's `[4, 128, 96]` output (192 KiB, pooled) over three calls, its first
    /// and last elements against their sums.
    #[test]
    fn kernel_outputs_reach_burn_on_cache_lines() {
        let device = Default::default();
        let values = |len: usize| -> Vec<f32> { (0..len).map(|i| (i % 7) as f32 - 3.0).collect() };
        let (xs, ws) = (values(4 * 128 * 64), values(64 * 96));
        let x = Tensor::<NdArray, 3>::from_data(TensorData::new(xs.clone(), [4, 128, 64]), &device);
        let w = Tensor::<NdArray, 2>::from_data(TensorData::new(ws.clone(), [64, 96]), &device);
        // Small integers: every sum is exact, in any order.
        let dot = |row: usize, col: usize| {
            (0..64)
                .map(|k| xs[row * 64 + k] * ws[k * 96 + col])
                .sum::<f32>()
        };
        let mut first = None;
        for _ in 0..3 {
            let y = crate::linear::linear(x.clone(), w.clone(), None);
            let address = data_pointer(&y.clone().into_primitive().tensor()) as usize;
            assert!(
                address.is_multiple_of(super::super::aligned::ALIGN),
                "an output at {address:#x} starts off a cache line"
            );
            let y = y.into_data().to_vec::<f32>().unwrap();
            assert_eq!(y.len(), 4 * 128 * 96);
            assert_eq!((y[0], y[y.len() - 1]), (dot(0, 0), dot(4 * 128 - 1, 95)));
            assert_eq!(*first.get_or_insert_with(|| y.clone()), y);
        }
    }

    /// A kernel's output is registered with the output pool, which holds a second handle to
    /// it; writing over it in place must still work when the caller holds the only other
    /// one, and must still copy when somebody else holds one too.
    #[test]
    fn a_pooled_output_is_taken_in_place_unless_shared() {
        let len = super::super::output_pool::MIN_BYTES / 4 + 104_729;
        // SAFETY: the closure writes all `len` elements.
        let values =
            unsafe { written_output::<f32>(len, |p| (0..len).for_each(|i| p.add(i).write(1.5))) };
        let output = f32::tensor(values, vec![len]);
        let address = data_pointer(&output);
        let alone = f32::take_unique(output).expect("only the pool shares it");
        assert_eq!(alone.as_ptr(), address, "the buffer was not taken in place");

        let output = f32::from_array(alone);
        let other = output.clone();
        let output = f32::take_unique(output).expect_err("another tensor holds it");
        let copy = unique_or_copy::<f32>(output);
        assert_ne!(copy.as_ptr(), address, "a shared buffer was written over");
        assert_eq!(data_pointer(&other), address);
        assert!(copy.iter().all(|&v| v == 1.5));
    }
}
