//! The shared words this crate uses, from `bbrkit-vocab` (bbrkit's one
//! definition of each): the transfer-size classes (the lab's workload
//! report uses the same ones), flow-completion-time quantiles, and the
//! human formatting of rates, byte counts and fractions. Must never hold
//! anything trial-specific.

pub use bbrkit_vocab::format::{bytes, pct, rate};
pub use bbrkit_vocab::{FctQuantiles, SizeClass};

/// `x` as a ratio for people: `1.42x`, `0.981x`, `118x`. The one
/// formatter of a ratio, so the same quantity prints the same everywhere
/// (table, guardrail reasons, progress line).
pub(crate) fn ratio(x: f64) -> String {
    if !x.is_finite() {
        "-".into()
    } else if x >= 100.0 {
        format!("{x:.0}x")
    } else if x >= 10.0 {
        format!("{x:.1}x")
    } else {
        format!("{x:.2}x")
    }
}

/// `1.42x [1.10, 1.83]`.
pub(crate) fn ratio_interval(r: f64, lo: f64, hi: f64) -> String {
    format!("{} [{}, {}]", ratio(r), bound(lo), bound(hi))
}

fn bound(x: f64) -> String {
    ratio(x).trim_end_matches('x').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_have_the_issues_boundaries() {
        assert_eq!(SizeClass::of(0), SizeClass::Under100Kb);
        assert_eq!(SizeClass::of(99_999), SizeClass::Under100Kb);
        assert_eq!(SizeClass::of(100_000), SizeClass::To1Mb);
        assert_eq!(SizeClass::of(999_999), SizeClass::To1Mb);
        assert_eq!(SizeClass::of(1_000_000), SizeClass::To10Mb);
        assert_eq!(SizeClass::of(10_000_000), SizeClass::Over10Mb);
        for (i, c) in SizeClass::ALL.iter().enumerate() {
            assert_eq!(c.index(), i);
        }
    }

    #[test]
    fn human_forms() {
        assert_eq!(rate(4.7e9), "4.70 Gbit/s");
        assert_eq!(rate(8.9e6), "8.9 Mbit/s");
        assert_eq!(rate(500.0), "500 bit/s");
        assert_eq!(pct(0.0), "0%");
        assert_eq!(pct(0.0084), "0.84%");
        assert_eq!(pct(0.02), "2%");
        assert_eq!(pct(0.025), "2.5%");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(4_200_000_000), "4.20 GB");
    }
}
