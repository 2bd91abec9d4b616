//! The axes of the study's grids: norm kinds by name, and lists parsed from the command line.

use addnorm::nn::{Activation, NormConfig, Placement, TransformerStackConfig};
use serde::{Deserialize, Serialize};

/// A norm by the name the command line and reports use: `layer`, `rms`, `dyt`, `identity`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[serde(rename_all = "lowercase")]
pub enum NormKind {
    /// LayerNorm.
    Layer,
    /// RMSNorm.
    Rms,
    /// Dynamic Tanh.
    Dyt,
    /// No norm.
    Identity,
}

impl NormKind {
    /// Every kind.
    pub const ALL: [NormKind; 4] = [
        NormKind::Layer,
        NormKind::Rms,
        NormKind::Dyt,
        NormKind::Identity,
    ];

    /// The lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            NormKind::Layer => "layer",
            NormKind::Rms => "rms",
            NormKind::Dyt => "dyt",
            NormKind::Identity => "identity",
        }
    }

    /// Parses [`NormKind::name`] (`layernorm`, `rmsnorm` are accepted too).
    pub fn from_name(name: &str) -> Option<Self> {
        match name.to_ascii_lowercase().as_str() {
            "layer" | "layernorm" | "ln" => Some(NormKind::Layer),
            "rms" | "rmsnorm" => Some(NormKind::Rms),
            "dyt" | "dynamic_tanh" => Some(NormKind::Dyt),
            "identity" | "none" => Some(NormKind::Identity),
            _ => None,
        }
    }

    /// The default config of this kind (its width is set by the model).
    pub fn config(self) -> NormConfig {
        match self {
            NormKind::Layer => NormConfig::layer(0),
            NormKind::Rms => NormConfig::rms(0),
            NormKind::Dyt => NormConfig::dynamic_tanh(0),
            NormKind::Identity => NormConfig::Identity,
        }
    }
}

/// The study's model: a stack of `depth` blocks of width `d_model`, `n_heads` heads and
/// feed-forward width `d_ff`, with `norm` placed as `placement` says. Its vocabulary and
/// length are fitted to the task by whoever trains it ([`crate::TrainConfig::for_task`]).
pub fn stack_config(
    d_model: usize,
    n_heads: usize,
    d_ff: usize,
    depth: usize,
    placement: Placement,
    norm: NormKind,
) -> TransformerStackConfig {
    TransformerStackConfig::new()
        .with_d_model(d_model)
        .with_n_heads(n_heads)
        .with_d_ff(d_ff)
        .with_n_layers(depth)
        .with_placement(placement)
        .with_norm(norm.config())
}

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

/// The least-squares slope of `ln y` against `ln x`.
pub fn log_log_slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let (lx, ly): (Vec<f64>, Vec<f64>) = points.iter().map(|(x, y)| (x.ln(), y.ln())).unzip();
    let (mx, my) = (lx.iter().sum::<f64>() / n, ly.iter().sum::<f64>() / n);
    let cov: f64 = lx.iter().zip(&ly).map(|(x, y)| (x - mx) * (y - my)).sum();
    let var: f64 = lx.iter().map(|x| (x - mx).powi(2)).sum();
    cov / var
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slope_of_a_power_law() {
        let pts: Vec<(f64, f64)> = [6.0, 12.0, 24.0, 48.0]
            .iter()
            .map(|&x: &f64| (x, 3.0 * x.powf(-0.5)))
            .collect();
        assert!((log_log_slope(&pts) + 0.5).abs() < 1e-12);
    }

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
