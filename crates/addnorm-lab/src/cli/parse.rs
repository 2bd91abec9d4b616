//! The command line's value parsers: each names what it expected on failure.
//!
//! # Shapes
//! Not applicable: argument parsing.

use addnorm::backend::Kind;
use addnorm::nn::{Activation, Placement};

use crate::experiments::norm_kind::NormKind;
use crate::experiments::task::TaskKind;
use crate::runner::shard::Shard;

/// Parses a placement name for the command line, naming the valid ones on failure.
pub fn parse_placement(s: &str) -> Result<Placement, String> {
    Placement::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = Placement::ALL.iter().map(|p| p.name()).collect();
        format!(
            "unknown placement {s:?}; expected one of {}",
            names.join(", ")
        )
    })
}

/// Parses a norm name for the command line, naming the valid ones on failure.
pub fn parse_norm(s: &str) -> Result<NormKind, String> {
    NormKind::from_name(s).ok_or_else(|| {
        let names: Vec<&str> = NormKind::ALL.iter().map(|n| n.name()).collect();
        format!("unknown norm {s:?}; expected one of {}", names.join(", "))
    })
}

/// Parses a feed-forward nonlinearity: `gelu` or `relu`.
pub fn parse_activation(s: &str) -> Result<Activation, String> {
    match s.to_ascii_lowercase().as_str() {
        "gelu" => Ok(Activation::Gelu),
        "relu" => Ok(Activation::Relu),
        _ => Err(format!("unknown activation {s:?}; expected gelu or relu")),
    }
}

/// Parses a strictly positive, finite float (learning rates).
pub fn parse_positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        Ok(v) => Err(format!("must be a positive number, got {v}")),
        Err(e) => Err(format!("{s:?} is not a number: {e}")),
    }
}

/// Parses a non-negative, finite float (weight decay).
pub fn parse_non_negative(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(v) => Err(format!("must be zero or positive, got {v}")),
        Err(e) => Err(format!("{s:?} is not a number: {e}")),
    }
}

/// Parses an Adam β: a number in [0, 1).
pub fn parse_beta(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..1.0).contains(&v) => Ok(v),
        Ok(v) => Err(format!("must be in [0, 1), got {v}")),
        Err(e) => Err(format!("{s:?} is not a number: {e}")),
    }
}

/// Parses a count (depths, widths, steps, seeds): an integer ≥ 1.
pub fn parse_count(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1, got 0".into()),
        Ok(v) => Ok(v),
        Err(e) => Err(format!("{s:?} is not a positive integer: {e}")),
    }
}

/// Parses a shard `K/N`.
pub fn parse_shard(s: &str) -> Result<Shard, String> {
    s.parse()
}

/// Parses a backend name.
pub fn parse_backend(s: &str) -> Result<Kind, String> {
    s.parse()
}

/// Parses a task name.
pub fn parse_task(s: &str) -> Result<TaskKind, String> {
    TaskKind::from_name(s)
        .ok_or_else(|| format!("unknown task {s:?}; expected reverse, copy, sort or markov"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsers_name_what_is_wrong() {
        assert_eq!(parse_placement("Sandwich"), Ok(Placement::Peri));
        assert!(
            parse_placement("middle")
                .unwrap_err()
                .contains("post, pre, peri")
        );
        assert_eq!(parse_norm("rmsnorm"), Ok(NormKind::Rms));
        assert!(parse_positive("-1e-3").unwrap_err().contains("positive"));
        assert!(parse_count("0").unwrap_err().contains("at least 1"));
    }
}
