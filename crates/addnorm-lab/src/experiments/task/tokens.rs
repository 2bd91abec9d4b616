//! The special token ids; symbols follow them.
//!
//! ```text
//! PAD = 0, BOS = 1, SEP = 2, symbols 3 … 3 + symbols − 1
//! ```
//!
//! # Shapes
//! Not applicable: constants.

/// The beginning-of-sequence token.
pub const BOS: i64 = 1;
/// The separator between the question and the answer.
pub const SEP: i64 = 2;
/// The first symbol id; ids below it are special.
pub const FIRST_SYMBOL: i64 = 3;
