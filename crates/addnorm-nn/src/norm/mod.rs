//! Normalization modules: [`LayerNorm`], [`RmsNorm`], [`DynamicTanh`], and [`Norm`] to choose
//! among them from a config.
//!
//! Each one maps `x: [..., S₀, …, S_m]` to the same shape, normalizing over the trailing
//! `normalized_shape = [S₀, …, S_m]`:
//!
//! ```text
//! LayerNorm     y = (x − μ) / √(σ² + ε) · γ + β     (and its variants)
//! RmsNorm       y = x / √(mean(x²) + ε) · γ (+ β)
//! DynamicTanh   y = γ · tanh(α·x) + β
//! ```

mod affine;
mod choice;
pub mod dyt;
pub mod layer;
pub mod rms;
mod rows;

pub use affine::Affine;
pub use choice::{Identity, Norm, NormConfig};
pub use dyt::{DynamicTanh, DynamicTanhConfig};
pub use layer::{LayerNorm, LayerNormConfig};
pub use rms::{RmsNorm, RmsNormConfig};

#[cfg(test)]
mod tests {
    use burn::backend::NdArray;
    use burn::module::{Module, ModuleVisitor, Param};
    use burn::tensor::Tensor;

    use super::*;

    type B = NdArray;

    /// The parameters a module's visit reaches: (field, container type), as burn-store sees them.
    #[derive(Default)]
    struct Fields(Vec<(String, String)>);

    impl ModuleVisitor<B> for Fields {
        fn enter_module(&mut self, name: &str, container_type: &str) {
            self.0.push((name.to_string(), container_type.to_string()));
        }

        fn visit_float<const D: usize>(&mut self, _: &Param<Tensor<B, D>>) {}
    }

    fn fields(module: &impl Module<B>) -> Vec<(String, String)> {
        let mut fields = Fields::default();
        module.visit(&mut fields);
        fields.0
    }

    fn pairs(container: &str, names: &[&str]) -> Vec<(String, String)> {
        names
            .iter()
            .map(|n| (n.to_string(), container.to_string()))
            .collect()
    }

    /// Saved records and burn-store's adapters (which rename PyTorch's weight/bias for a
    /// `Struct:LayerNorm`) depend on these names.
    #[test]
    fn records_keep_their_field_names_and_container_types() {
        let device = Default::default();
        let layer: LayerNorm<B> = LayerNormConfig::new(vec![4]).init(&device);
        assert_eq!(
            fields(&layer),
            pairs("Struct:LayerNorm", &["gamma", "beta"])
        );
        let layer::LayerNormRecord {
            gamma: Some(_),
            beta: Some(_),
            normalized_shape: _,
            affine: _,
            spec: _,
        } = layer.into_record()
        else {
            panic!("LayerNorm has γ and β by default");
        };

        let rms: RmsNorm<B> = RmsNormConfig::new(vec![4]).with_bias(true).init(&device);
        assert_eq!(fields(&rms), pairs("Struct:RmsNorm", &["gamma", "beta"]));
        let rms::RmsNormRecord {
            gamma: Some(_),
            beta: Some(_),
            normalized_shape: _,
            affine: _,
            spec: _,
        } = rms.into_record()
        else {
            panic!("RmsNorm has γ, and β with bias");
        };
    }
}
