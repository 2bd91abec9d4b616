//! Fits and means over positive values: the log-log slope of a power law and the geometric
//! mean.
//!
//! ```text
//! slope   least squares of ln y against ln x:  Σ (ln x − m_x)(ln y − m_y) / Σ (ln x − m_x)²
//! linear  the same on x and y themselves:      Σ (x − m_x)(y − m_y) / Σ (x − m_x)²
//! GM(v)   exp(mean(ln vᵢ)) over the positive vᵢ (1 if there are none)
//! ```
//!
//! # Shapes
//! Not applicable: scalars.

/// The least-squares slope of `ln y` against `ln x`.
pub fn log_log_slope(points: &[(f64, f64)]) -> f64 {
    let logs: Vec<(f64, f64)> = points.iter().map(|(x, y)| (x.ln(), y.ln())).collect();
    linear_slope(&logs)
}

/// The least-squares slope of `y` against `x`.
pub fn linear_slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let cov: f64 = points.iter().map(|(x, y)| (x - mx) * (y - my)).sum();
    let var: f64 = points.iter().map(|(x, _)| (x - mx).powi(2)).sum();
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

    #[test]
    fn linear_slope_of_a_line() {
        let pts = [(1.0, 5.0), (2.0, 3.0), (4.0, -1.0)];
        assert!((linear_slope(&pts) + 2.0).abs() < 1e-12);
    }
}
