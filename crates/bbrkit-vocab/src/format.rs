//! The one formatter of rates, percentages, byte counts and plain numbers
//! in human output (tables, labels, messages). JSON carries raw SI values
//! with the unit in the key and never goes through here.

/// A rate in bits per second for people, with 3–4 significant digits:
/// `4.70 Gbit/s`, `190.7 Gbit/s`, `959.6 Mbit/s`, `7.9 Mbit/s`,
/// `12.0 kbit/s`, `500 bit/s`.
pub fn rate(bps: f64) -> String {
    if bps >= 10e9 {
        format!("{:.1} Gbit/s", bps / 1e9)
    } else if bps >= 1e9 {
        format!("{:.2} Gbit/s", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{:.1} Mbit/s", bps / 1e6)
    } else if bps >= 1e3 {
        format!("{:.1} kbit/s", bps / 1e3)
    } else {
        format!("{bps:.0} bit/s")
    }
}

/// A fraction (0..1) as a percentage with the precision it needs: `0%`,
/// `0.84%`, `2%`, `2.5%`.
pub fn pct(x: f64) -> String {
    let p = x * 100.0;
    if p == 0.0 {
        "0%".into()
    } else if p.abs() < 1.0 {
        format!("{p:.2}%")
    } else if (p - p.round()).abs() < 1e-9 {
        format!("{p:.0}%")
    } else {
        format!("{p:.1}%")
    }
}

/// A byte count: `512 B`, `125.0 kB`, `1.25 MB`, `4.20 GB` (decimal units).
pub fn bytes(b: u64) -> String {
    let f = b as f64;
    if b >= 1_000_000_000 {
        format!("{:.2} GB", f / 1e9)
    } else if b >= 1_000_000 {
        format!("{:.2} MB", f / 1e6)
    } else if b >= 1_000 {
        format!("{:.1} kB", f / 1e3)
    } else {
        format!("{b} B")
    }
}

/// A number with at most three decimals and no trailing zeros: `10`,
/// `2.5`, `0.125`.
pub fn number(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A byte count as a short size a person would type: `10 kB`, `4 MB`,
/// `1.5 MB`, `512 B`.
pub fn size(b: u64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{} GB", number(b / 1e9))
    } else if b >= 1e6 {
        format!("{} MB", number(b / 1e6))
    } else if b >= 1e3 {
        format!("{} kB", number(b / 1e3))
    } else {
        format!("{b} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_for_people() {
        let cases = [
            (4.7e9, "4.70 Gbit/s"),
            (190.72e9, "190.7 Gbit/s"),
            (959.6e6, "959.6 Mbit/s"),
            (7.9e6, "7.9 Mbit/s"),
            (12e3, "12.0 kbit/s"),
            (500.0, "500 bit/s"),
            (0.0, "0 bit/s"),
        ];
        for (bps, text) in cases {
            assert_eq!(rate(bps), text);
        }
    }

    #[test]
    fn percentages() {
        assert_eq!(pct(0.0), "0%");
        assert_eq!(pct(0.0084), "0.84%");
        assert_eq!(pct(0.02), "2%");
        assert_eq!(pct(0.025), "2.5%");
        assert_eq!(pct(-0.05), "-5%");
    }

    #[test]
    fn byte_counts_and_numbers() {
        assert_eq!(bytes(125_000), "125.0 kB");
        assert_eq!(bytes(1_250_000), "1.25 MB");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(4_200_000_000), "4.20 GB");
        assert_eq!(number(10.0), "10");
        assert_eq!(number(2.5), "2.5");
        assert_eq!(size(10_000), "10 kB");
        assert_eq!(size(4_000_000), "4 MB");
        assert_eq!(size(512), "512 B");
    }
}
