//! Gradient sums without a fresh tensor: a fused backward node that gives a parent its
//! gradient adds it into the one the parent has already, in place where that buffer is
//! free, instead of leaving the sum to Burn.
//!
//! Burn's `Gradients::register` sums a second contribution as `float_add(new, old)`, and
//! burn-ndarray (without its `simd` feature) allocates the sum afresh: a `[rows, d_model]`
//! tensor for each of the normed input's three projections (Q, K, V) and for each residual
//! stream that feeds a norm and a residual add, all pages the allocator maps anew at
//! every step (PERFORMANCE.md §27). [`register_sum`] takes the parent's gradient out first
//! and adds the new one into whichever of the two buffers no one else holds, so the sum
//! costs no allocation; `float_add(new, old)` remains where neither is free, the tensors
//! are not `NdArray`'s, or they differ in dtype, shape or layout.
//!
//! # Formula
//! `g_parent ← new + g_parent` element by element: the bits of Burn's own sum (IEEE
//! addition is commutative, and one addition per element is all either does). Large sums
//! are cut into chunks over the threads; each element is still one addition, so the cut
//! changes no bit.
//!
//! # Shapes
//! `new` and the registered gradient: the parent's shape.

use burn::backend::Autodiff;
use burn::backend::autodiff::grads::Gradients;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;

/// A tracked parent of a node, kept by the node's state so that its backward can find the
/// gradient registered for it already (`Gradients::remove` takes the tensor, not its id).
/// It shares the parent's buffer; the nodes that keep one checkpoint that tensor anyway.
pub type TrackedParent<B> = FloatTensor<Autodiff<B>>;

/// Registers `grad` as a contribution to `parent`'s gradient: `new + old` in one buffer
/// when the parent has a gradient already (see the [module docs](self)).
pub fn register_sum<B: Backend>(
    grads: &mut Gradients,
    parent: &TrackedParent<B>,
    grad: FloatTensor<B>,
) {
    let sum = match grads.remove::<B>(parent) {
        Some(old) => add::<B>(grad, old),
        None => grad,
    };
    grads.register::<B>(parent.node.id, sum);
}

/// `new + old`, written over one of the two where that can be done, else Burn's
/// `float_add(new, old)`.
fn add<B: Backend>(new: FloatTensor<B>, old: FloatTensor<B>) -> FloatTensor<B> {
    #[cfg(feature = "ndarray")]
    let (new, old) = match ndarray::add_in_place::<B>(new, old) {
        Ok(sum) => return sum,
        Err(operands) => operands,
    };
    B::float_add(new, old)
}

#[cfg(feature = "ndarray")]
mod ndarray {
    use std::any::Any;

    use burn::backend::ndarray::NdArrayTensor;
    use burn::tensor::TensorMetadata;
    use burn::tensor::backend::Backend;
    use burn::tensor::ops::FloatTensor;

    use crate::cpu::ndarray::{NdArrayReal, elements_mut};
    use crate::cpu::parallel::add_in_chunks;

    /// The fewest elements a task of the sum takes (128 KiB of f32): the sum is
    /// memory-bound, and a smaller task costs more to hand over than it saves.
    const MIN_TASK_ELEMENTS: usize = 1 << 15;

    /// `new + old` over one of the two when `B`'s tensors are `NdArray`'s; the operands
    /// back otherwise.
    pub(super) fn add_in_place<B: Backend>(
        new: FloatTensor<B>,
        old: FloatTensor<B>,
    ) -> Result<FloatTensor<B>, (FloatTensor<B>, FloatTensor<B>)> {
        // `FloatTensor<B>` is `NdArrayTensor` exactly when `B` is an `NdArray` backend.
        let (Some(new_nd), Some(old_nd)) = (as_ndarray::<B>(&new), as_ndarray::<B>(&old)) else {
            return Err((new, old));
        };
        if new_nd.shape() != old_nd.shape() || new_nd.dtype() != old_nd.dtype() {
            return Err((new, old));
        }
        let (new, old) = (into_ndarray::<B>(new), into_ndarray::<B>(old));
        let summed = match new {
            NdArrayTensor::F32(_) => summed::<f32>(new, old),
            NdArrayTensor::F64(_) => summed::<f64>(new, old),
            other => Err(Box::new((other, old))),
        };
        match summed {
            Ok(sum) => Ok(from_ndarray::<B>(sum)),
            Err(operands) => {
                let (new, old) = *operands;
                Err((from_ndarray::<B>(new), from_ndarray::<B>(old)))
            }
        }
    }

    /// `new + old` written over `old`, or over `new`, whichever no one else holds; the
    /// operands back (boxed: two tensors) when neither is free.
    fn summed<E: NdArrayReal>(
        new: NdArrayTensor,
        old: NdArrayTensor,
    ) -> Result<NdArrayTensor, Box<(NdArrayTensor, NdArrayTensor)>> {
        let (mut target, other) = match E::take_unique(old) {
            Ok(old) => (old, new),
            Err(old) => match E::take_unique(new) {
                Ok(new) => (new, old),
                Err(new) => return Err(Box::new((new, old))),
            },
        };
        let other_values = E::elements(&other).expect("the caller checked the dtypes");
        // Either operand order: IEEE addition is commutative, bit for bit.
        add_in_chunks(
            elements_mut(&mut target),
            &[&other_values],
            MIN_TASK_ELEMENTS,
        );
        Ok(E::from_array(target))
    }

    /// `t` as the `NdArrayTensor` it is, when `B` is an `NdArray` backend.
    fn as_ndarray<B: Backend>(t: &FloatTensor<B>) -> Option<&NdArrayTensor> {
        (t as &dyn Any).downcast_ref::<NdArrayTensor>()
    }

    /// `t`, which [`as_ndarray`] found to be an `NdArrayTensor`, as one.
    fn into_ndarray<B: Backend>(t: FloatTensor<B>) -> NdArrayTensor {
        let mut slot = Some(t);
        (&mut slot as &mut dyn Any)
            .downcast_mut::<Option<NdArrayTensor>>()
            .and_then(Option::take)
            .expect("checked by as_ndarray")
    }

    /// `t` as `B`'s float tensor, which is an `NdArrayTensor`.
    fn from_ndarray<B: Backend>(t: NdArrayTensor) -> FloatTensor<B> {
        let mut slot: Option<FloatTensor<B>> = None;
        *(&mut slot as &mut dyn Any)
            .downcast_mut::<Option<NdArrayTensor>>()
            .expect("B's float tensors are NdArrayTensor") = Some(t);
        slot.expect("just written")
    }
}

#[cfg(all(test, feature = "ndarray"))]
mod tests {
    use burn::backend::NdArray;
    use burn::backend::ndarray::NdArrayTensor;
    use burn::tensor::ops::FloatTensorOps;
    use burn::tensor::{Tensor, TensorData, TensorPrimitive};

    use super::add;
    use crate::cpu::test_values::{data_pointer, gradients, inputs};

    type B = NdArray<f32>;

    fn tensor(values: Vec<f32>, shape: [usize; 2]) -> NdArrayTensor {
        let t = Tensor::<B, 2>::from_data(TensorData::new(values, shape), &Default::default());
        t.into_primitive().tensor()
    }

    fn bits(t: NdArrayTensor) -> Vec<u32> {
        let t = Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(t));
        let values = t.into_data().to_vec::<f32>().expect("f32");
        values.iter().map(|v| v.to_bits()).collect()
    }

    /// `new` and `old` as fresh tensors, and Burn's `float_add(new, old)` of copies.
    fn operands(shape: [usize; 2]) -> (NdArrayTensor, NdArrayTensor, Vec<u32>) {
        let len = shape[0] * shape[1];
        let new = inputs::<f32>(len, 1.7e-3, -0.9);
        let old = gradients::<f32>(len, 2.3e-3, -1.1);
        let expected = B::float_add(tensor(new.clone(), shape), tensor(old.clone(), shape));
        (tensor(new, shape), tensor(old, shape), bits(expected))
    }

    /// With the old gradient free, the sum is written over it, with Burn's bits.
    #[test]
    fn sums_over_a_free_old_gradient_with_burns_bits() {
        let (new, old, expected) = operands([64, 33]);
        let target = data_pointer(&old);
        let sum = add::<B>(new, old);
        assert_eq!(
            data_pointer(&sum),
            target,
            "not written over the old gradient"
        );
        assert_eq!(bits(sum), expected);
    }

    /// With the old gradient shared, the sum is written over the new one; the old one
    /// keeps its values.
    #[test]
    fn sums_over_the_new_gradient_when_the_old_one_is_shared() {
        let (new, old, expected) = operands([7, 5]);
        let (held, target) = (old.clone(), data_pointer(&new));
        let before = bits(held.clone());
        let sum = add::<B>(new, old);
        assert_eq!(
            data_pointer(&sum),
            target,
            "not written over the new gradient"
        );
        assert_eq!(bits(sum), expected);
        assert_eq!(bits(held), before, "the shared old gradient changed");
    }

    /// With both shared, Burn's `float_add` makes a new tensor; neither operand changes.
    #[test]
    fn sums_into_a_new_tensor_when_both_are_shared() {
        let (new, old, expected) = operands([3, 4]);
        let (new_held, old_held) = (new.clone(), old.clone());
        let (new_before, old_before) = (bits(new_held.clone()), bits(old_held.clone()));
        let sum = add::<B>(new, old);
        assert_ne!(data_pointer(&sum), data_pointer(&new_held));
        assert_ne!(data_pointer(&sum), data_pointer(&old_held));
        assert_eq!(bits(sum), expected);
        assert_eq!((bits(new_held), bits(old_held)), (new_before, old_before));
    }

    /// A sum large enough to be cut into chunks over 3 threads has Burn's bits too.
    #[test]
    fn a_sum_in_chunks_has_burns_bits() {
        let (new, old, expected) = operands([300, 301]);
        let sum = crate::cpu::test_values::on_threads(3, || add::<B>(new, old));
        assert_eq!(bits(sum), expected);
    }

    /// Shapes that differ (broadcasting) go to Burn's `float_add`.
    #[test]
    fn shapes_that_differ_go_to_burns_add() {
        let (new, old) = (tensor(vec![1.0, 2.0], [1, 2]), tensor(vec![3.0; 6], [3, 2]));
        let sum = Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(add::<B>(new, old)));
        assert_eq!(
            sum.into_data().to_vec::<f32>().expect("f32"),
            [4.0, 5.0, 4.0, 5.0, 4.0, 5.0]
        );
    }
}
