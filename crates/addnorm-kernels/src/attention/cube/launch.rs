//! Host side of the CubeCL attention kernels: decides whether they take the inputs,
//! allocates the outputs and launches [`super::kernels`] on `CubeTensor`s.
//!
//! # Formula
//! See [`super::kernels`]. This file adds the max logit, `max_rows row_max` (one Burn
//! reduction), and the launch geometry: one unit per row of `batch·heads·T`, 64 units a
//! cube.
//!
//! # Shapes
//! - `q`, `k`, `v`, `grad_output`, output and gradients: `[batch, T, d_model]`, any strides
//! - `lse`: `[batch, heads, T]`, f32, contiguous; max logit `[1]` in the inputs' dtype

use burn::tensor::{DType, Shape, TensorMetadata, ops::FloatTensorOps};
use burn_cubecl::{
    BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement, tensor::CubeTensor,
};
use cubecl::prelude::*;

use super::kernels;
use crate::attention::spec::{AttentionSpec, HeadLayout};
use crate::cube::launch::{empty_like, supports};

/// The widest head the kernels take: each unit keeps up to four rows of `d_head` f32 values
/// in local memory. Wider heads take the composite path.
pub const MAX_D_HEAD: usize = 256;

/// Units per cube.
const BLOCK: u32 = 64;

/// The layout of `q`, `k`, `v` when the kernels take them: one float dtype the kernels
/// read ([`supports`]), equal non-empty `[batch, T, d_model]` shapes, `d_model` a multiple
/// of the heads, and `d_head ≤` [`MAX_D_HEAD`]. `None` sends the call to the composite
/// path.
pub fn takes(shapes: [&Shape; 3], dtypes: [DType; 3], spec: &AttentionSpec) -> Option<HeadLayout> {
    let dims = shapes[0].as_slice();
    let &[batch, seq, d_model] = dims else {
        return None;
    };
    let same =
        shapes.iter().all(|s| s.as_slice() == dims) && dtypes.iter().all(|&d| d == dtypes[0]);
    let fits = spec.heads > 0 && d_model % spec.heads == 0 && d_model / spec.heads <= MAX_D_HEAD;
    (same && fits && supports(dtypes[0]) && batch * seq * d_model > 0)
        .then(|| spec.layout([batch, seq, d_model]))
}

/// The launch geometry for one unit per row of `layout`.
fn geometry<R: CubeRuntime>(like: &CubeTensor<R>, layout: &HeadLayout) -> (CubeCount, CubeDim) {
    let rows = layout.batch * layout.heads * layout.seq;
    let dim = CubeDim::new_1d(BLOCK);
    (
        cubecl::calculate_cube_count_elemwise(&like.client, rows, dim),
        dim,
    )
}

/// `(output, lse, row_max)`: the forward's output `[batch, T, d_model]`, the per-row
/// log-sum-exp (f32) and the per-row largest logit (`[batch·heads·T]`, the inputs' dtype).
pub type Forward<R> = (CubeTensor<R>, CubeTensor<R>, CubeTensor<R>);

/// The fused forward without the max logit's reduction (which [`forward`] adds). `None`
/// unless [`takes`] accepts the inputs.
pub fn forward_rows<R: CubeRuntime>(
    q: &CubeTensor<R>,
    k: &CubeTensor<R>,
    v: &CubeTensor<R>,
    spec: &AttentionSpec,
) -> Option<Forward<R>> {
    let layout = takes(
        [&q.shape(), &k.shape(), &v.shape()],
        [q.dtype, k.dtype, v.dtype],
        spec,
    )?;
    let rows = layout.batch * layout.heads * layout.seq;
    let output = empty_like(q, q.shape(), q.dtype);
    let lse = empty_like(
        q,
        Shape::new([layout.batch, layout.heads, layout.seq]),
        DType::F32,
    );
    let row_max = empty_like(q, Shape::new([rows]), q.dtype);
    let (count, dim) = geometry(q, &layout);
    kernels::attention_forward_kernel::launch::<R>(
        &q.client,
        count,
        dim,
        q.clone().into_tensor_arg(),
        k.clone().into_tensor_arg(),
        v.clone().into_tensor_arg(),
        output.clone().into_tensor_arg(),
        lse.clone().into_tensor_arg(),
        row_max.clone().into_tensor_arg(),
        layout.heads as u32,
        spec.scale as f32,
        spec.softcap.unwrap_or(1.0) as f32,
        layout.d_head,
        spec.causal,
        spec.softcap.is_some(),
        q.dtype.into(),
    );
    Some((output, lse, row_max))
}

/// The fused forward: `(output, lse, max_logit)`, the max logit a `[1]` tensor in the
/// inputs' dtype. `None` unless [`takes`] accepts the inputs.
pub fn forward<R, F, I, BT>(
    q: &CubeTensor<R>,
    k: &CubeTensor<R>,
    v: &CubeTensor<R>,
    spec: &AttentionSpec,
) -> Option<Forward<R>>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    let (output, lse, row_max) = forward_rows(q, k, v, spec)?;
    Some((output, lse, CubeBackend::<R, F, I, BT>::float_max(row_max)))
}

/// The fused backward: `[dq, dk, dv]`, each `[batch, T, d_model]` in the inputs' dtype.
///
/// # Panics
/// If the inputs are not what [`forward`] accepted, or `lse` does not hold one value per
/// row.
pub fn backward<R: CubeRuntime>(
    [q, k, v]: [&CubeTensor<R>; 3],
    output: &CubeTensor<R>,
    lse: &CubeTensor<R>,
    grad_output: &CubeTensor<R>,
    spec: &AttentionSpec,
) -> [CubeTensor<R>; 3] {
    let layout = takes(
        [&q.shape(), &k.shape(), &v.shape()],
        [q.dtype, k.dtype, v.dtype],
        spec,
    )
    .expect("fused attention backward: the forward accepted these inputs");
    let rows = layout.batch * layout.heads * layout.seq;
    assert!(
        output.shape() == q.shape() && grad_output.shape() == q.shape(),
        "fused attention backward: output {:?} and grad_output {:?} must be shaped as q {:?}",
        output.shape(),
        grad_output.shape(),
        q.shape()
    );
    assert_eq!(
        lse.shape().num_elements(),
        rows,
        "fused attention backward: lse must hold one value per row"
    );
    let [dq, dk, dv] = [(); 3].map(|()| empty_like(q, q.shape(), q.dtype));
    let delta = empty_like(q, Shape::new([rows]), DType::F32);
    let (count, dim) = geometry(q, &layout);
    let arg = |t: &CubeTensor<R>| t.clone().into_tensor_arg();
    kernels::attention_backward_query_kernel::launch::<R>(
        &q.client,
        count.clone(),
        dim,
        arg(q),
        arg(k),
        arg(v),
        arg(output),
        arg(grad_output),
        arg(lse),
        arg(&dq),
        arg(&delta),
        layout.heads as u32,
        spec.scale as f32,
        spec.softcap.unwrap_or(1.0) as f32,
        layout.d_head,
        spec.causal,
        spec.softcap.is_some(),
        q.dtype.into(),
    );
    kernels::attention_backward_key_kernel::launch::<R>(
        &q.client,
        count,
        dim,
        arg(q),
        arg(k),
        arg(v),
        arg(grad_output),
        arg(lse),
        arg(&delta),
        arg(&dk),
        arg(&dv),
        layout.heads as u32,
        spec.scale as f32,
        spec.softcap.unwrap_or(1.0) as f32,
        layout.d_head,
        spec.causal,
        spec.softcap.is_some(),
        q.dtype.into(),
    );
    [dq, dk, dv]
}
