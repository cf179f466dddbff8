//! Renderings of a [`Report`](crate::Report) the CLI prints or writes: the
//! human table ([`table()`]), the one-line running estimate
//! ([`progress_line`]) and the Prometheus textfile for node_exporter
//! ([`textfile()`]). The `--json` document is the report's `Serialize` form.
//!
//! Must never decide anything: every number and word comes from the report.

mod progress;
mod table;
mod textfile;

pub use progress::progress_line;
pub use table::table;
pub use textfile::{
    Export, LiveStatus, check_name, default_name, log_se, textfile, textfile_export, textfile_with,
};

use crate::effect::Mode;
use crate::words::{ratio, ratio_interval};

/// How an interval is named: `95% interval`, `95% anytime interval`.
fn interval_name(confidence: f64, mode: Mode) -> String {
    let kind = match mode {
        Mode::FixedHorizon => "interval",
        Mode::Sequential => "anytime interval",
    };
    format!("{:.0}% {kind}", confidence * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratios_keep_three_significant_digits() {
        assert_eq!(ratio(1.4234), "1.42x");
        assert_eq!(ratio(0.98123), "0.98x");
        assert_eq!(ratio(11.83), "11.8x");
        assert_eq!(ratio(118.3), "118x");
        assert_eq!(ratio(f64::NAN), "-");
        assert_eq!(ratio_interval(1.42, 1.1, 1.834), "1.42x [1.10, 1.83]");
        assert_eq!(
            interval_name(0.95, Mode::Sequential),
            "95% anytime interval"
        );
    }
}
