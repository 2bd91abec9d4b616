//! The study's statistics: power-law slopes and geometric means ([`fit`]), sample
//! statistics and seed-bootstrap intervals ([`sample`]), exact intervals for success rates
//! ([`binomial`]) and Wortsman et al.'s LR sensitivity ([`sensitivity`]).
//!
//! # Shapes
//! Not applicable: arithmetic on per-seed values.

pub mod binomial;
pub mod fit;
pub mod rng;
pub mod sample;
pub mod sensitivity;
