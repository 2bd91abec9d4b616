//! addnorm's integration tests: one test binary, one module per concern.
//!
//! Tests that can run on any backend are written once, generic over the backend, and
//! instantiated by [`on_every_backend!`] for every backend this build enables, so
//! `cargo test --features wgpu` runs each of them on both ndarray and wgpu.

// Build time only: links the lab's library so rustc reuses its compiled instances of
// Burn's and CubeCL's generic GPU code (see `tests/Cargo.toml`). No test uses the lab.
use addnorm_lab as _;

mod adamw;
mod attention;
mod block_parity;
mod block_placements;
mod block_recipes;
mod block_stack;
mod common;
mod embedding;
mod fused_kernels;
mod gelu;
mod gpu_guard;
mod group_norm;
mod hf_layers;
mod linear;
mod norm_errors;
mod norm_gradcheck;
mod norm_parity;
mod norm_properties;
mod norm_seeds;
mod output_pool;
mod pytorch_weights;
