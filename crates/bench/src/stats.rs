//! Order statistics over repeated measurements.
//!
//! xtask compiles this file in too (`#[path]`, for criterion's samples in BENCHMARKS.md):
//! keep it to std and serde.

use serde::Serialize;

/// A summary of repeated measurements (in whatever unit they were taken).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// How many measurements.
    pub n: usize,
    /// The median.
    pub median: f64,
    /// The first quartile.
    pub p25: f64,
    /// The third quartile.
    pub p75: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// The smallest.
    pub min: f64,
    /// The largest.
    pub max: f64,
}

/// The `q`-quantile (0..=1) of sorted data, interpolated linearly between the closest
/// ranks (the "type 7" definition used by numpy and R). `None` for no data.
pub fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lower = rank.floor() as usize;
    let upper = rank.ceil() as usize;
    let weight = rank - lower as f64;
    Some(sorted[lower] + (sorted[upper] - sorted[lower]) * weight)
}

impl Summary {
    /// Summarize `samples` (any order; NaNs are dropped). `None` when nothing is left.
    ///
    /// ```
    /// let s = gatehouse_bench::stats::Summary::of(&[5.0, 1.0, 3.0]).unwrap();
    /// assert_eq!((s.min, s.median, s.max), (1.0, 3.0, 5.0));
    /// ```
    pub fn of(samples: &[f64]) -> Option<Self> {
        let mut sorted: Vec<f64> = samples.iter().copied().filter(|x| !x.is_nan()).collect();
        sorted.sort_by(f64::total_cmp);
        Some(Self {
            n: sorted.len(),
            median: quantile(&sorted, 0.5)?,
            p25: quantile(&sorted, 0.25)?,
            p75: quantile(&sorted, 0.75)?,
            p99: quantile(&sorted, 0.99)?,
            min: *sorted.first()?,
            max: *sorted.last()?,
        })
    }

    /// Every figure multiplied by `factor` (unit conversion).
    pub fn scaled(&self, factor: f64) -> Self {
        Self {
            n: self.n,
            median: self.median * factor,
            p25: self.p25 * factor,
            p75: self.p75 * factor,
            p99: self.p99 * factor,
            min: self.min * factor,
            max: self.max * factor,
        }
    }
}
