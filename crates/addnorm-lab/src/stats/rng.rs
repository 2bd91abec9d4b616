//! A small seedable random generator, identical on every platform, so that a seed names
//! the same data and the same bootstrap resamples everywhere.
//!
//! ```text
//! SplitMix64   x ← x + 0x9E3779B97F4A7C15; z = mix(x)   (Steele et al. 2014)
//! stream_seed  SplitMix64(seed ⊕ stream · 0xD1B54A32D192ED03).next()
//! ```
//!
//! # Shapes
//! Not applicable: scalars.

/// A SplitMix64 generator: small, seedable, and identical on every platform, so that a
/// seed names the same data everywhere.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform integer in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// Mixes a run seed with a stream id (a step number, or a tag), so that each training step
/// draws its batch independently of every other: a resumed run sees the same data.
pub fn stream_seed(seed: u64, stream: u64) -> u64 {
    SplitMix64::new(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03)).next_u64()
}
