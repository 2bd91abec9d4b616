//! The row-norm core that [`LayerNorm`](super::LayerNorm) and [`RmsNorm`](super::RmsNorm)
//! share. Like candle's RmsNorm, which is its LayerNorm with `remove_mean = false`, both are
//! one module shape: flatten the input to rows, apply one [`RowNormSpec`] to every row, then
//! the affine map. Only the spec differs (`Centering::MeanRemoved` or
//! `Centering::RootMeanSquare`, and the options each config exposes).
//!
//! ```text
//! rows = x.reshape([Π leading dims, n])       n = Π normalized_shape
//! y    = B::norm_rows(rows, γ, β, spec)       spec: the formula of the norm, per row
//! out  = y.reshape(x.dims())
//! ```
//!
//! # Shapes
//! - input: `[..., S₀, …, S_m]` where `normalized_shape = [S₀, …, S_m]`
//! - γ, β: `[S₀·…·S_m]` (elementwise) or `[1]` (scalar)
//! - output: same as the input
//!
//! # Why a macro, not a nested module
//! A Burn module's record and parameter paths follow its fields, and its display and the
//! container types burn-store matches follow its struct name. A `LayerNorm { core: RowNorm }`
//! would move γ from `norm.gamma` to `norm.core.gamma` in every saved record and PyTorch
//! mapping; a generic `RowNorm<B, Kind>` behind two type aliases would rename the module to
//! `Struct:RowNorm`, which burn-store's PyTorch adapter no longer recognizes as a
//! `Struct:LayerNorm` (it maps PyTorch's `weight`/`bias` to `gamma`/`beta` for those). So
//! [`row_norm_module!`] writes, once, the flat struct both norms have always had (`gamma`,
//! `beta`, `normalized_shape`, `affine`, `spec`) under the name it is given, with its
//! accessors, its `forward` and its display. The work is done by the plain functions below;
//! each norm's file keeps its config, its formula, its docs and what its display adds.

use burn::module::Content;
use burn::tensor::{Tensor, backend::Backend};

use addnorm_kernels::{NormBackend, RowNormSpec};

use super::affine::{Affine, AffineParams, OptionalParam, init_affine};
use super::rows::{normalize_trailing, primitive};

/// Declares a row-norm module: `$name<B>` with the learnable `gamma` and `beta`, a
/// constructor `new` (γ = 1, β = 0; the config validates first), `normalized_shape()`,
/// `spec()`, `forward` and a one-line [`ModuleDisplay`](burn::module::ModuleDisplay) that
/// shows `normalized_shape`, `epsilon`, `affine`, `bias`, then what `$display` adds.
///
/// The struct's docs come first; the docs after `fn forward;` open `forward`'s docs, which
/// end with its shapes and panics.
macro_rules! row_norm_module {
    (
        $(#[$doc:meta])*
        pub struct $name:ident;
        $(#[$forward_doc:meta])*
        fn forward;
        display = $display:path;
    ) => {
        $(#[$doc])*
        #[derive(burn::module::Module, Debug)]
        #[module(custom_display)]
        pub struct $name<B: burn::tensor::backend::Backend> {
            /// The learnable scale γ, flattened over the normalized shape (`[1]` for
            /// `Affine::Scalar`), or `None` with `Affine::Off`.
            pub gamma: Option<burn::module::Param<burn::tensor::Tensor<B, 1>>>,
            /// The learnable shift β, shaped as γ, or `None` without bias.
            pub beta: Option<burn::module::Param<burn::tensor::Tensor<B, 1>>>,
            #[module(skip)]
            normalized_shape: Vec<usize>,
            #[module(skip)]
            affine: $crate::norm::Affine,
            #[module(skip)]
            spec: addnorm_kernels::RowNormSpec,
        }

        impl<B: burn::tensor::backend::Backend> $name<B> {
            /// The module with γ = 1 and β = 0, shaped as `affine` says.
            fn new(
                normalized_shape: &[usize],
                affine: $crate::norm::Affine,
                bias: bool,
                spec: addnorm_kernels::RowNormSpec,
                device: &B::Device,
            ) -> Self {
                let (gamma, beta) =
                    $crate::norm::row_norm::init_parameters(normalized_shape, affine, bias, device);
                Self {
                    gamma,
                    beta,
                    normalized_shape: normalized_shape.to_vec(),
                    affine,
                    spec,
                }
            }

            /// The trailing dimensions this norm normalizes over.
            pub fn normalized_shape(&self) -> &[usize] {
                &self.normalized_shape
            }

            /// The row-wise computation this norm performs.
            pub fn spec(&self) -> addnorm_kernels::RowNormSpec {
                self.spec
            }
        }

        impl<B: addnorm_kernels::NormBackend> $name<B> {
            $(#[$forward_doc])*
            ///
            /// # Shapes
            /// - input: `[..., S₀, …, S_m]`
            /// - output: same as the input
            ///
            /// # Panics
            /// If the input's trailing dimensions are not `normalized_shape`.
            pub fn forward<const D: usize>(
                &self,
                x: burn::tensor::Tensor<B, D>,
            ) -> burn::tensor::Tensor<B, D> {
                $crate::norm::row_norm::forward(
                    stringify!($name),
                    &self.normalized_shape,
                    (self.affine, &self.gamma, &self.beta),
                    self.spec,
                    x,
                )
            }
        }

        impl<B: burn::tensor::backend::Backend> burn::module::ModuleDisplay for $name<B> {
            fn custom_settings(&self) -> Option<burn::module::DisplaySettings> {
                $crate::norm::rows::display_settings()
            }

            fn custom_content(
                &self,
                content: burn::module::Content,
            ) -> Option<burn::module::Content> {
                let common = $crate::norm::row_norm::display_common(
                    content,
                    &self.normalized_shape,
                    self.spec,
                    self.affine,
                    self.beta.is_some(),
                );
                $display(self.spec, common).optional()
            }
        }
    };
}

pub(crate) use row_norm_module;

/// γ (ones) and β (zeros) for a norm over `normalized_shape`; see [`init_affine`].
pub(crate) fn init_parameters<B: Backend>(
    normalized_shape: &[usize],
    affine: Affine,
    bias: bool,
    device: &B::Device,
) -> AffineParams<B> {
    init_affine(affine, bias, normalized_shape.iter().product(), device)
}

/// Applies `spec` to every row of `x` over its trailing `normalized_shape`, then the
/// affine map (`·γ + β`, or `·(1 + γ) + β` for `Affine::UnitOffset`). `module` names the
/// norm in the panic message.
///
/// # Panics
/// If the input's trailing dimensions are not `normalized_shape`.
pub(crate) fn forward<B: NormBackend, const D: usize>(
    module: &str,
    normalized_shape: &[usize],
    (affine, gamma, beta): (Affine, &OptionalParam<B>, &OptionalParam<B>),
    spec: RowNormSpec,
    x: Tensor<B, D>,
) -> Tensor<B, D> {
    normalize_trailing(module, normalized_shape, x, |rows| {
        B::norm_rows(rows, affine.gain(gamma), primitive(beta), spec)
    })
}

/// What every row norm shows: `normalized_shape`, `epsilon`, `affine` and `bias`.
pub(crate) fn display_common(
    content: Content,
    normalized_shape: &[usize],
    spec: RowNormSpec,
    affine: Affine,
    bias: bool,
) -> Content {
    content
        .add("normalized_shape", &format!("{normalized_shape:?}"))
        .add("epsilon", &spec.epsilon)
        .add("affine", &format!("{affine:?}"))
        .add("bias", &bias)
}

#[cfg(test)]
mod tests {
    use burn::backend::NdArray;
    use burn::module::{Module, ModuleVisitor, Param};
    use burn::tensor::Tensor;

    use crate::norm::layer::{LayerNorm, LayerNormConfig, LayerNormRecord};
    use crate::norm::rms::{RmsNorm, RmsNormConfig};

    type B = NdArray;

    /// The fields a module's visit enters, with their container type, as burn-store sees
    /// them.
    #[derive(Default)]
    struct Fields(Vec<String>);

    impl ModuleVisitor<B> for Fields {
        fn enter_module(&mut self, name: &str, container_type: &str) {
            self.0.push(format!("{container_type}.{name}"));
        }

        fn visit_float<const D: usize>(&mut self, _: &Param<Tensor<B, D>>) {}
    }

    fn fields(module: &impl Module<B>) -> Vec<String> {
        let mut fields = Fields::default();
        module.visit(&mut fields);
        fields.0
    }

    /// Saved records, the PyTorch loader and burn-store's adapters (which rename PyTorch's
    /// weight/bias for a `Struct:LayerNorm`) depend on these names: the core must not nest.
    #[test]
    fn parameters_keep_their_paths_and_container_types() {
        let device = Default::default();
        let layer: LayerNorm<B> = LayerNormConfig::new(vec![4]).init(&device);
        assert_eq!(
            fields(&layer),
            ["Struct:LayerNorm.gamma", "Struct:LayerNorm.beta"]
        );
        let rms: RmsNorm<B> = RmsNormConfig::new(vec![4]).with_bias(true).init(&device);
        assert_eq!(
            fields(&rms),
            ["Struct:RmsNorm.gamma", "Struct:RmsNorm.beta"]
        );
    }

    /// The record has the five fields of the struct, as before the core existed
    /// (the pattern names every field, so a sixth one would not compile). Both norms get
    /// their struct from `row_norm_module!`, so one record stands for both.
    #[test]
    fn the_record_has_the_same_five_fields() {
        let layer: LayerNorm<B> = LayerNormConfig::new(vec![4]).init(&Default::default());
        let LayerNormRecord {
            gamma: Some(_),
            beta: Some(_),
            normalized_shape: _,
            affine: _,
            spec: _,
        } = layer.into_record()
        else {
            panic!("LayerNorm has γ and β by default");
        };
    }
}
