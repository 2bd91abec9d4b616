//! Fits and means over positive values: the log-log slope of a power law and the geometric
//! mean.
//!
//! ```text
//! slope   least squares of ln y against ln x:  Σ (ln x − m_x)(ln y − m_y) / Σ (ln x − m_x)²
//! GM(v)   exp(mean(ln vᵢ)) over the positive vᵢ (1 if there are none)
//! ```
//!
//! # Shapes
//! Not applicable: scalars.

/// The least-squares slope of `ln y` against `ln x`.
pub fn log_log_slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let (lx, ly): (Vec<f64>, Vec<f64>) = points.iter().map(|(x, y)| (x.ln(), y.ln())).unzip();
    let (mx, my) = (lx.iter().sum::<f64>() / n, ly.iter().sum::<f64>() / n);
    let cov: f64 = lx.iter().zip(&ly).map(|(x, y)| (x - mx) * (y - my)).sum();
    let var: f64 = lx.iter().map(|x| (x - mx).powi(2)).sum();
    cov / var
}

/// The geometric mean of the positive values of `v` (1 if there are none).
pub fn geometric_mean(v: impl IntoIterator<Item = f64>) -> f64 {
    let logs: Vec<f64> = v.into_iter().filter(|x| *x > 0.0).map(f64::ln).collect();
    (logs.iter().sum::<f64>() / logs.len().max(1) as f64).exp()
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
}
