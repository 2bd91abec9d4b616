//! The study's statistics: sample statistics and seed-bootstrap intervals ([`sample`]) and
//! Wortsman et al.'s LR sensitivity ([`sensitivity`]).
//!
//! # Shapes
//! Not applicable: arithmetic on per-seed values.

pub mod sample;
pub mod sensitivity;

pub use sample::*;
