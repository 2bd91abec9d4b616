//! Reproducible model initialization when several runs share a process.
//!
//! Burn's backends keep one global random generator, and parameters are initialized lazily
//! (on first use). Two runs on two threads would therefore draw each other's random numbers.
//! [`init_model`] seeds, builds and materializes every parameter under one process-wide
//! lock, so a run's initial weights depend on its seed alone, whatever runs beside it.
//!
//! # Shapes
//! Not applicable.

use std::sync::Mutex;

use addnorm::nn::{TransformerStack, TransformerStackConfig};
use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::{Tensor, backend::Backend};

static SEED_LOCK: Mutex<()> = Mutex::new(());

/// Forces the lazy initialization of every float parameter.
struct Materialize;

impl<B: Backend> ModuleVisitor<B> for Materialize {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let _ = param.val();
    }
}

/// Builds `config` with the backend seeded to `seed`, all parameters drawn before returning.
pub fn init_model<B: Backend>(
    config: &TransformerStackConfig,
    seed: u64,
    device: &B::Device,
) -> TransformerStack<B> {
    let _guard = SEED_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    B::seed(device, seed);
    let model = config.init::<B>(device);
    model.visit(&mut Materialize);
    model
}

/// Reseeds the backend's generator (for dropout) under the same lock as [`init_model`].
pub fn reseed<B: Backend>(device: &B::Device, seed: u64) {
    let _guard = SEED_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    B::seed(device, seed);
}
