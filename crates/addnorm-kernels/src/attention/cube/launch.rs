//! Host side of the CubeCL attention kernels: decides whether they take the inputs,
//! allocates the outputs and launches [`super::kernels`] on `CubeTensor`s.
//!
//! # Formula
//! See [`super::kernels`]. This file adds the max logit, `max_rows row_max` (one Burn
//! reduction), and the launch geometry: cubes of 64 rows of one head, `(⌈T / 64⌉,
//! batch·heads)` of them, and the tile of rows each cube stages at a time.
//!
//! # Shapes
//! - `q`, `k`, `v`, `grad_output`, output and gradients: `[batch, T, d_model]`, any strides
//! - `lse`: `[batch, heads, T]`, f32, contiguous; max logit `[1]` in the inputs' dtype

use burn::tensor::{DType, Shape, TensorMetadata, ops::FloatTensorOps};
use burn_cubecl::{
    BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement, tensor::CubeTensor,
};
use cubecl::{features::Plane, prelude::*};

use super::kernels;
use super::tiles::ROWS;
use crate::attention::spec::{AttentionSpec, HeadLayout};
use crate::cube::launch::{empty_like, supports};

/// The widest head the kernels take: each unit keeps up to four rows of `d_head / split`
/// f32 values in local memory. Wider heads take the composite path.
pub const MAX_D_HEAD: usize = 256;

/// The most f32 values one staged tile holds: two tiles fill 16 KiB of shared memory,
/// the least every Vulkan and WebGPU device offers a cube.
const TILE_VALUES: usize = 2048;

/// The most cubes along one grid dimension that every runtime accepts.
const MAX_GRID_DIM: usize = 65_535;

/// The layout of `q`, `k`, `v` when the kernels take them: one float dtype the kernels
/// read ([`supports`]), equal non-empty `[batch, T, d_model]` shapes, `d_model` a multiple
/// of the heads, `d_head ≤` [`MAX_D_HEAD`] and `batch·heads` within one grid dimension.
/// `None` sends the call to the composite path.
pub fn takes(shapes: [&Shape; 3], dtypes: [DType; 3], spec: &AttentionSpec) -> Option<HeadLayout> {
    let dims = shapes[0].as_slice();
    let &[batch, seq, d_model] = dims else {
        return None;
    };
    let same =
        shapes.iter().all(|s| s.as_slice() == dims) && dtypes.iter().all(|&d| d == dtypes[0]);
    let fits = spec.heads > 0
        && d_model % spec.heads == 0
        && d_model / spec.heads <= MAX_D_HEAD
        && batch * spec.heads <= MAX_GRID_DIM;
    (same && fits && supports(dtypes[0]) && batch * seq * d_model > 0)
        .then(|| spec.layout([batch, seq, d_model]))
}

/// Units a row where the device has plane operations and `d_head` is a multiple of it.
const PLANE_SPLIT: usize = 4;

/// The launch geometry and tiling for `layout`: cubes `(⌈T / ROWS⌉, batch·heads)` of
/// [`ROWS`] rows of one head, `split` units a row ([`PLANE_SPLIT`] where the device has
/// plane operations and `d_head` is a multiple of it, else 1), each holding `share =
/// d_head / split` features of its row; the other side's rows staged `tile = clamp(
/// TILE_VALUES / d_head, 1, ROWS)` at a time, `loads = ⌈tile·d_head / (ROWS·split)⌉`
/// values per unit.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    blocks: u32,
    heads: u32,
    split: usize,
    share: usize,
    tile: usize,
    loads: usize,
}

impl Geometry {
    fn new<R: CubeRuntime>(layout: &HeadLayout, like: &CubeTensor<R>) -> Self {
        let planes = like.client.properties().features.plane.contains(Plane::Ops);
        let split = if planes && layout.d_head.is_multiple_of(PLANE_SPLIT) {
            PLANE_SPLIT
        } else {
            1
        };
        let tile = (TILE_VALUES / layout.d_head).clamp(1, ROWS);
        Self {
            blocks: layout.seq.div_ceil(ROWS) as u32,
            heads: (layout.batch * layout.heads) as u32,
            split,
            share: layout.d_head / split,
            tile,
            loads: (tile * layout.d_head).div_ceil(ROWS * split),
        }
    }

    fn count(&self) -> CubeCount {
        CubeCount::Static(self.blocks, self.heads, 1)
    }

    fn dim(&self) -> CubeDim {
        CubeDim::new_1d((ROWS * self.split) as u32)
    }
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
    let geometry = Geometry::new(&layout, q);
    kernels::attention_forward_kernel::launch::<R>(
        &q.client,
        geometry.count(),
        geometry.dim(),
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
        geometry.share,
        geometry.split,
        geometry.tile,
        geometry.loads,
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
    let geometry = Geometry::new(&layout, q);
    let arg = |t: &CubeTensor<R>| t.clone().into_tensor_arg();
    kernels::attention_backward_query_kernel::launch::<R>(
        &q.client,
        geometry.count(),
        geometry.dim(),
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
        geometry.share,
        geometry.split,
        geometry.tile,
        geometry.loads,
        spec.causal,
        spec.softcap.is_some(),
        q.dtype.into(),
    );
    kernels::attention_backward_key_kernel::launch::<R>(
        &q.client,
        geometry.count(),
        geometry.dim(),
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
        geometry.share,
        geometry.split,
        geometry.tile,
        geometry.loads,
        spec.causal,
        spec.softcap.is_some(),
        q.dtype.into(),
    );
    [dq, dk, dv]
}
