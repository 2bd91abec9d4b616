//! Running runs: several at once in a process ([`jobs`]), claimed across processes
//! ([`lease`], [`worker`]), split into shards ([`shard`]) and joined again ([`merge`]), a
//! sweep's report from its finished runs ([`collect`]), the configuration a directory
//! holds ([`config_diff`]), what a run would cost ([`resources`]) and how far a long job
//! has got ([`progress`]).
//!
//! # Shapes
//! Not applicable: processes, threads and files.

pub mod collect;
pub mod config_diff;
pub mod jobs;
pub mod lease;
pub mod merge;
pub mod progress;
pub mod resources;
pub mod shard;
pub mod worker;
