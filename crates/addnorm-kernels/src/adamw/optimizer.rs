//! [`FusedAdamW`]: Burn's `AdamW` with each parameter's step as one
//! [`AdamWBackend::adamw_update`] call, fused where the backend has a kernel. It keeps
//! Burn's state type (`AdamWState`), so its records are Burn's `AdamW` records: a
//! checkpoint written by either optimizer loads into the other.
//!
//! # Formula
//! See [`super`]. AMSGrad and cautious weight decay are Burn's own code: with either
//! option on, every step is Burn's `AdamW` step.
//!
//! # Shapes
//! Any parameter shape; the moments are shaped as their parameter.
//!
//! # Example
//! ```
//! use addnorm_kernels::adamw::FusedAdamWConfig;
//! # #[cfg(feature = "ndarray")]
//! # {
//! use burn::backend::{Autodiff, NdArray};
//! use burn::module::Module;
//! use burn::nn::{Linear, LinearConfig};
//! use burn::optim::{GradientsParams, Optimizer};
//! use burn::tensor::Tensor;
//!
//! type B = Autodiff<NdArray>;
//! let device = Default::default();
//! let model: Linear<B> = LinearConfig::new(4, 2).init(&device);
//! // The same settings and defaults as Burn's AdamWConfig.
//! let mut optimizer = FusedAdamWConfig::new().with_weight_decay(0.1).init();
//! let loss = model.forward(Tensor::<B, 2>::ones([3, 4], &device)).sum();
//! let grads = GradientsParams::from_grads(loss.backward(), &model);
//! let model = optimizer.step(1e-3, model, grads);
//! # let _ = model;
//! # }
//! ```

use burn::config::Config;
use burn::module::AutodiffModule;
use burn::optim::adaptor::OptimizerAdaptor;
use burn::optim::grad_clipping::GradientClippingConfig;
use burn::optim::{AdamW, AdamWConfig, AdamWState, AdaptiveMomentumState, SimpleOptimizer};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Tensor, TensorPrimitive};

use super::backend::AdamWBackend;
use super::spec::AdamWUpdate;

/// The configuration of a [`FusedAdamW`]: the fields, defaults and meaning of Burn's
/// `AdamWConfig`.
#[derive(Config, Debug)]
pub struct FusedAdamWConfig {
    /// β₁, the first moment's decay.
    #[config(default = 0.9)]
    pub beta_1: f32,
    /// β₂, the second moment's decay.
    #[config(default = 0.999)]
    pub beta_2: f32,
    /// ε, added to `√v̂`.
    #[config(default = 1e-5)]
    pub epsilon: f32,
    /// λ, the decoupled weight decay (multiplied by the learning rate).
    #[config(default = 1e-4)]
    pub weight_decay: f32,
    /// Cautious weight decay (Burn's code, not fused).
    #[config(default = false)]
    pub cautious_weight_decay: bool,
    /// AMSGrad (Burn's code, not fused).
    #[config(default = false)]
    pub amsgrad: bool,
    /// Gradient clipping, applied by the adaptor before each step.
    pub grad_clipping: Option<GradientClippingConfig>,
}

impl FusedAdamWConfig {
    /// Burn's `AdamWConfig` with these settings.
    pub fn to_burn(&self) -> AdamWConfig {
        AdamWConfig::new()
            .with_beta_1(self.beta_1)
            .with_beta_2(self.beta_2)
            .with_epsilon(self.epsilon)
            .with_weight_decay(self.weight_decay)
            .with_cautious_weight_decay(self.cautious_weight_decay)
            .with_amsgrad(self.amsgrad)
            .with_grad_clipping(self.grad_clipping.clone())
    }

    /// The optimizer.
    pub fn build(&self) -> FusedAdamW {
        FusedAdamW {
            beta_1: self.beta_1,
            beta_2: self.beta_2,
            epsilon: self.epsilon,
            weight_decay: self.weight_decay,
            burn: (self.amsgrad || self.cautious_weight_decay).then(|| self.to_burn().build()),
        }
    }

    /// The optimizer for module `M`, with the gradient clipping, as Burn's
    /// `AdamWConfig::init` returns it.
    pub fn init<B, M>(&self) -> OptimizerAdaptor<FusedAdamW, M, B>
    where
        B: AutodiffBackend<InnerBackend: AdamWBackend>,
        M: AutodiffModule<B>,
    {
        let optimizer = OptimizerAdaptor::from(self.build());
        match &self.grad_clipping {
            Some(clipping) => optimizer.with_grad_clipping(clipping.init()),
            None => optimizer,
        }
    }
}

/// Burn's `AdamW`, with each parameter's step one [`AdamWBackend::adamw_update`] (see the
/// [module docs](self)). Built by [`FusedAdamWConfig`].
#[derive(Clone)]
pub struct FusedAdamW {
    beta_1: f32,
    beta_2: f32,
    epsilon: f32,
    weight_decay: f32,
    /// Burn's optimizer, which takes every step when an option the fused step lacks is on.
    burn: Option<AdamW>,
}

impl<B: AdamWBackend> SimpleOptimizer<B> for FusedAdamW {
    type State<const D: usize> = AdamWState<B, D>;

    fn step<const D: usize>(
        &self,
        lr: burn::optim::LearningRate,
        tensor: Tensor<B, D>,
        grad: Tensor<B, D>,
        state: Option<Self::State<D>>,
    ) -> (Tensor<B, D>, Option<Self::State<D>>) {
        if let Some(burn) = &self.burn {
            return SimpleOptimizer::<B>::step(burn, lr, tensor, grad, state);
        }
        let (time, moments) = match state {
            Some(state) => {
                let momentum = state.momentum;
                let moments = [momentum.moment_1, momentum.moment_2].map(primitive);
                (momentum.time + 1, Some(moments))
            }
            None => (1, None),
        };
        let update = AdamWUpdate {
            beta_1: self.beta_1,
            beta_2: self.beta_2,
            epsilon: self.epsilon,
            weight_decay: self.weight_decay,
            lr,
            time,
        };
        let inputs = (primitive(tensor), primitive(grad), moments);
        let [param, m, v] = B::adamw_update(inputs, update).map(tensor_of::<B, D>);
        let momentum = AdaptiveMomentumState::new(time, m, v);
        (param, Some(AdamWState::new(momentum)))
    }

    fn to_device<const D: usize>(mut state: Self::State<D>, device: &B::Device) -> Self::State<D> {
        state.momentum = state.momentum.to_device(device);
        state
    }
}

fn primitive<B: AdamWBackend, const D: usize>(
    tensor: Tensor<B, D>,
) -> burn::tensor::ops::FloatTensor<B> {
    tensor.into_primitive().tensor()
}

fn tensor_of<B: AdamWBackend, const D: usize>(
    primitive: burn::tensor::ops::FloatTensor<B>,
) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(primitive))
}
