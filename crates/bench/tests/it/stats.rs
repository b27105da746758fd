//! Order statistics used by every live figure.

use gatehouse_bench::stats::{quantile, Summary};

#[test]
fn quantiles_interpolate_between_ranks() {
    let sorted = [1.0, 2.0, 3.0, 4.0];
    assert_eq!(quantile(&sorted, 0.0), Some(1.0));
    assert_eq!(quantile(&sorted, 1.0), Some(4.0));
    assert_eq!(quantile(&sorted, 0.5), Some(2.5));
    assert_eq!(quantile(&sorted, 0.25), Some(1.75));
    assert_eq!(quantile(&[], 0.5), None);
}

#[test]
fn summary_sorts_drops_nan_and_scales() {
    let s = Summary::of(&[9.0, f64::NAN, 1.0, 5.0, 3.0, 7.0]).unwrap();
    assert_eq!(s.n, 5);
    assert_eq!(
        (s.min, s.p25, s.median, s.p75, s.max),
        (1.0, 3.0, 5.0, 7.0, 9.0)
    );
    let ms = s.scaled(0.001);
    assert_eq!(ms.median, 0.005);
    assert!(Summary::of(&[f64::NAN]).is_none());
}
