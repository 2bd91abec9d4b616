//! The machinery every row-wise norm shares (LayerNorm, RMSNorm and DyT): checking the
//! normalized shape, flattening `[..., S₀, …, S_m]` into `[rows, n]` and back, and the
//! one-line display.
//!
//! # Shapes
//! - input: `[d₀, …, d_{D−m−1}, S₀, …, S_m]`, with `normalized_shape = [S₀, …, S_m]`
//! - the backend sees `[rows, n]`, `rows = Π dᵢ`, `n = Π Sⱼ`
//! - output: the input's shape

use addnorm_kernels::NormBackend;
use burn::module::DisplaySettings;
use burn::tensor::{Shape, Tensor, TensorPrimitive, backend::Backend, ops::FloatTensor};

use crate::config_error::{ConfigError, ensure};

/// Refuses a `normalized_shape` that is empty or holds a zero; `config` names the config.
pub(crate) fn validate_normalized_shape(
    config: &str,
    normalized_shape: &[usize],
) -> Result<(), ConfigError> {
    let field = || format!("{config}.normalized_shape");
    ensure(!normalized_shape.is_empty(), || {
        ConfigError::of_field(field(), "must name at least one dimension, got []")
    })?;
    ensure(normalized_shape.iter().all(|&s| s > 0), || {
        ConfigError::of_field(
            field(),
            format_args!("must not contain 0, got {normalized_shape:?}"),
        )
    })
}

/// Refuses an ε that is not positive and finite; `config` names the config.
pub(crate) fn validate_epsilon(config: &str, epsilon: f64) -> Result<(), ConfigError> {
    ensure(epsilon.is_finite() && epsilon > 0.0, || {
        ConfigError::of_field(
            format!("{config}.epsilon"),
            format_args!("must be positive and finite, got {epsilon}"),
        )
    })
}

/// Checks that `x` ends in `normalized_shape`, flattens it to `[rows, n]`, applies
/// `normalize` to the primitive and restores the input's shape.
///
/// # Panics
/// If the input's rank is lower than the normalized shape's length, or its trailing
/// dimensions differ; the message names the expected and the actual shape.
pub(crate) fn normalize_trailing<B: NormBackend, const D: usize>(
    module: &str,
    normalized_shape: &[usize],
    x: Tensor<B, D>,
    normalize: impl FnOnce(FloatTensor<B>) -> FloatTensor<B>,
) -> Tensor<B, D> {
    let dims = x.dims();
    let m = normalized_shape.len();
    assert!(
        D >= m,
        "{module} normalizes the trailing dimensions {normalized_shape:?}, but the input has \
         rank {D} (shape {dims:?})"
    );
    let trailing = &dims[D - m..];
    assert!(
        trailing == normalized_shape,
        "{module} expected the input's trailing dimensions to be {normalized_shape:?} (its \
         normalized_shape), got {trailing:?} (input shape {dims:?})"
    );
    let rows: usize = dims[..D - m].iter().product();
    let n: usize = normalized_shape.iter().product();
    if rows == 0 {
        return x;
    }
    // NormBackend::reshape_rows: burn-ndarray's own reshape copies even a contiguous tensor.
    let flat = B::reshape_rows(x.into_primitive().tensor(), Shape::new([rows, n]));
    let normalized = B::reshape_rows(normalize(flat), Shape::from(dims.to_vec()));
    Tensor::from_primitive(TensorPrimitive::Float(normalized))
}

/// Every norm prints on one line.
pub(crate) fn display_settings() -> Option<DisplaySettings> {
    DisplaySettings::new()
        .with_new_line_after_attribute(false)
        .optional()
}

/// Unwraps an optional parameter into its primitive.
pub(crate) fn primitive<B: Backend>(
    param: &Option<burn::module::Param<Tensor<B, 1>>>,
) -> Option<FloatTensor<B>> {
    param.as_ref().map(|p| p.val().into_primitive().tensor())
}
