//! The client command's own measurements, when its standard output shows
//! it is a known load generator: recognised by what it printed, never by
//! the command line (an `sh -c` string may wrap, rename or loop a tool).
//!
//! * **curl** (or any client that prints the same): every line
//!   `bbrkit-fct SECONDS [BYTES [HTTP_CODE]]`, what curl prints with
//!   `-w 'bbrkit-fct %{time_total} %{size_download} %{http_code}\n'` (one
//!   line per transfer, so a loop of curls gives one per request). The
//!   marker is ours: curl has no summary of its own, and a bare number is
//!   not evidence of anything. `%{time_total}` runs from the start of the
//!   transfer (name lookup, connect) to its last byte: the flow completion
//!   time. A transfer with code `000` (curl connected nowhere or got no
//!   response) or 400 and above is counted as failed and kept out of the
//!   times (the same rule as wrk's "Non-2xx or 3xx responses").
//! * **wrk**: its summary, `N requests in TIME, SIZE read` followed by
//!   `Requests/sec:` (wrk's `main`), with the `Latency Distribution`
//!   block's percentiles when it ran with `--latency`, and its error lines.
//!   wrk's latency is per request on a kept-alive connection: from the
//!   request written to the response read.
//!
//! Where both are present, the marker lines win (they were asked for).
//! Pure functions of the text; fixtures of real output in
//! `tests/fixtures/client/` (how each was made: its README).

use serde::Serialize;

use crate::report::median;

/// The marker a line of per-transfer timing starts with.
pub const FCT_MARKER: &str = "bbrkit-fct";

/// What a known client reported about one run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "tool", rename_all = "lowercase")]
pub enum ClientReport {
    /// `bbrkit-fct` lines (curl's `-w`).
    Curl(CurlReport),
    /// wrk's summary.
    Wrk(WrkReport),
}

/// Per-transfer completion times from `bbrkit-fct` lines.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CurlReport {
    /// Marker lines read.
    pub transfers: usize,
    /// Of those, transfers with HTTP code `000` or ≥ 400.
    pub failed: usize,
    /// The completion time of each transfer that did not fail, ms, in
    /// the order printed.
    pub fct_ms: Vec<f64>,
    /// Their median, ms (`null` if none).
    pub fct_p50_ms: Option<f64>,
    /// Bytes those transfers downloaded, if the lines carry sizes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The client wrote more than the kept tail: only the transfers in the
    /// tail are here.
    pub truncated: bool,
}

/// wrk's summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WrkReport {
    /// Completed requests.
    pub requests: u64,
    /// The test's run time, seconds.
    pub duration_s: f64,
    /// Bytes read (wrk prints it with 2 decimals in binary units, so this
    /// is as exact as that).
    pub bytes_read: u64,
    /// Requests per second.
    pub requests_per_s: f64,
    /// Mean latency, ms.
    pub latency_avg_ms: f64,
    /// Largest latency, ms.
    pub latency_max_ms: f64,
    /// Latency percentiles, ms (only with wrk's `--latency`).
    pub latency_p50_ms: Option<f64>,
    /// 75th percentile.
    pub latency_p75_ms: Option<f64>,
    /// 90th percentile.
    pub latency_p90_ms: Option<f64>,
    /// 99th percentile.
    pub latency_p99_ms: Option<f64>,
    /// The sum of wrk's socket errors (connect, read, write, timeout).
    pub socket_errors: u64,
    /// Responses with a status other than 2xx or 3xx.
    pub non_2xx_3xx: u64,
}

impl ClientReport {
    /// Reads the tail of a client's standard output (`truncated`: it
    /// wrote more than the tail, so the tail's first line may be cut, and
    /// that line is not read).
    pub fn read(tail: &str, truncated: bool) -> Option<ClientReport> {
        let text = match (truncated, tail.find('\n')) {
            (true, Some(nl)) => &tail[nl + 1..],
            (true, None) => "",
            (false, _) => tail,
        };
        curl(text, truncated)
            .map(ClientReport::Curl)
            .or_else(|| wrk(text).map(ClientReport::Wrk))
    }

    /// The tool's name, as in the JSON.
    pub fn tool(&self) -> &'static str {
        match self {
            ClientReport::Curl(_) => "curl",
            ClientReport::Wrk(_) => "wrk",
        }
    }

    /// The run's typical completion time, ms: curl's median FCT, wrk's
    /// median latency (its mean without `--latency`).
    pub fn typical_ms(&self) -> Option<f64> {
        match self {
            ClientReport::Curl(c) => c.fct_p50_ms,
            ClientReport::Wrk(w) => {
                (w.requests > 0).then(|| w.latency_p50_ms.unwrap_or(w.latency_avg_ms))
            }
        }
    }
}

/// The per-algorithm figure of several runs' reports of one tool: curl's
/// FCTs pooled over the runs, their median; wrk's per-run median
/// latencies, their median. `None` if the reports are of different tools
/// or carry no time.
pub fn pooled_median_ms<'a>(reports: impl IntoIterator<Item = &'a ClientReport>) -> Option<f64> {
    let mut tool = None;
    let mut values = Vec::new();
    for r in reports {
        if tool.is_some_and(|t| t != r.tool()) {
            return None;
        }
        tool = Some(r.tool());
        match r {
            ClientReport::Curl(c) => values.extend_from_slice(&c.fct_ms),
            ClientReport::Wrk(_) => values.extend(r.typical_ms()),
        }
    }
    (!values.is_empty()).then(|| median(values))
}

/// `bbrkit-fct SECONDS [BYTES [CODE]]` lines, if there is one.
fn curl(text: &str, truncated: bool) -> Option<CurlReport> {
    let mut r = CurlReport {
        transfers: 0,
        failed: 0,
        fct_ms: Vec::new(),
        fct_p50_ms: None,
        bytes: None,
        truncated,
    };
    for line in text.lines() {
        let mut f = line.split_whitespace();
        if f.next() != Some(FCT_MARKER) {
            continue;
        }
        let Some(secs) = f.next().and_then(|s| s.parse::<f64>().ok()) else {
            continue;
        };
        let size = f.next().and_then(|s| s.parse::<u64>().ok());
        let code = f.next().and_then(|s| s.parse::<u16>().ok());
        r.transfers += 1;
        if code.is_some_and(|c| c == 0 || c >= 400) {
            r.failed += 1;
            continue;
        }
        // curl prints microseconds: ms to the microsecond, so `0.003838`
        // is exactly the double nearest 3.838.
        r.fct_ms.push((secs * 1e6).round() / 1e3);
        if let Some(n) = size {
            r.bytes = Some(r.bytes.unwrap_or(0) + n);
        }
    }
    if r.transfers == 0 {
        return None;
    }
    r.fct_p50_ms = (!r.fct_ms.is_empty()).then(|| median(r.fct_ms.iter().copied()));
    Some(r)
}

/// wrk's summary, if the text holds one.
fn wrk(text: &str) -> Option<WrkReport> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    // The last summary (a loop of wrk: its last run).
    let at = lines.iter().rposition(|l| l.starts_with("Requests/sec:"))?;
    let total = lines[..at]
        .iter()
        .rposition(|l| l.contains(" requests in "))?;
    let (requests, rest) = lines[total].split_once(" requests in ")?;
    let (time, read) = rest.split_once(", ")?;
    let block_start = lines[..total]
        .iter()
        .rposition(|l| l.starts_with("Thread Stats"))?;
    let block = &lines[block_start..at];
    let stat = |name: &str| -> Option<Vec<&str>> {
        let l = block
            .iter()
            .find(|l| l.starts_with(name) && **l != "Latency Distribution")?;
        Some(l.split_whitespace().skip(1).collect())
    };
    let latency = stat("Latency ")?;
    let pct = |p: &str| -> Option<f64> {
        let start = block.iter().position(|l| *l == "Latency Distribution")?;
        block[start + 1..]
            .iter()
            .take(4)
            .find_map(|l| l.strip_prefix(p))
            .and_then(|v| time_ms(v.trim()))
    };
    let number_after = |prefix: &str| -> u64 {
        block
            .iter()
            .find_map(|l| l.strip_prefix(prefix))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    let socket_errors = block
        .iter()
        .find_map(|l| l.strip_prefix("Socket errors:"))
        .map_or(0, |l| {
            l.split(',')
                .filter_map(|kv| kv.split_whitespace().nth(1)?.parse::<u64>().ok())
                .sum()
        });
    Some(WrkReport {
        requests: requests.trim().parse().ok()?,
        duration_s: time_ms(time)? / 1e3,
        bytes_read: size_bytes(read.strip_suffix(" read")?)?,
        requests_per_s: lines[at]
            .strip_prefix("Requests/sec:")?
            .trim()
            .parse()
            .ok()?,
        latency_avg_ms: time_ms(latency.first()?)?,
        latency_max_ms: time_ms(latency.get(2)?)?,
        latency_p50_ms: pct("50%"),
        latency_p75_ms: pct("75%"),
        latency_p90_ms: pct("90%"),
        latency_p99_ms: pct("99%"),
        socket_errors,
        non_2xx_3xx: number_after("Non-2xx or 3xx responses:"),
    })
}

/// One of wrk's times (`format_time_us`: us or ms below a second, then s,
/// m, h), in ms.
fn time_ms(s: &str) -> Option<f64> {
    // Longest suffix first: "ms" and "us" before "s" and "m".
    if let Some(v) = s.strip_suffix("us") {
        return v.parse::<f64>().ok().map(|v| v / 1e3);
    }
    for (unit, ms) in [("ms", 1.0), ("s", 1e3), ("m", 60e3), ("h", 3600e3)] {
        if let Some(v) = s.strip_suffix(unit) {
            return v.parse::<f64>().ok().map(|v| v * ms);
        }
    }
    None
}

/// One of wrk's sizes (`format_binary` + `B`: B, KB, MB, ... in powers of
/// 1024), in bytes.
fn size_bytes(s: &str) -> Option<u64> {
    let v = s.strip_suffix('B')?;
    let (num, scale) = match v.char_indices().last()? {
        (i, c @ ('K' | 'M' | 'G' | 'T' | 'P')) => {
            let power = "KMGTP".find(c)? as i32 + 1;
            (&v[..i], 1024f64.powi(power))
        }
        _ => (v, 1.0),
    };
    Some((num.parse::<f64>().ok()? * scale).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = format!(
            "{}/tests/fixtures/client/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn read(text: &str) -> Option<ClientReport> {
        ClientReport::read(text, false)
    }

    fn curl_of(text: &str) -> CurlReport {
        match read(text) {
            Some(ClientReport::Curl(c)) => c,
            other => panic!("not curl: {other:?}"),
        }
    }

    fn wrk_of(text: &str) -> WrkReport {
        match read(text) {
            Some(ClientReport::Wrk(w)) => w,
            other => panic!("not wrk: {other:?}"),
        }
    }

    #[test]
    fn curl_lines_give_each_transfer_its_time() {
        let c = curl_of(&fixture("curl-4mb-3x.txt"));
        assert_eq!((c.transfers, c.failed), (3, 0));
        assert_eq!(c.fct_ms, vec![3.838, 8.924, 4.044]);
        assert_eq!(c.fct_p50_ms, Some(4.044));
        assert_eq!(c.bytes, Some(12_000_000));
        assert!(!c.truncated);
        let t = curl_of(&fixture("curl-time-only.txt"));
        assert_eq!(
            (t.transfers, t.fct_ms.clone(), t.bytes),
            (1, vec![0.48], None)
        );
        assert_eq!(
            read(&fixture("curl-4mb-3x.txt")).unwrap().typical_ms(),
            Some(4.044)
        );
    }

    #[test]
    fn a_refused_or_4xx_transfer_is_failed_not_timed() {
        for f in ["curl-404.txt", "curl-refused.txt"] {
            let c = curl_of(&fixture(f));
            assert_eq!((c.transfers, c.failed), (1, 1), "{f}");
            assert!(c.fct_ms.is_empty() && c.fct_p50_ms.is_none(), "{f}");
            assert_eq!(c.bytes, None, "{f}");
        }
        let mixed = fixture("curl-4mb-3x.txt") + &fixture("curl-refused.txt");
        let c = curl_of(&mixed);
        assert_eq!((c.transfers, c.failed, c.fct_ms.len()), (4, 1, 3));
    }

    #[test]
    fn other_output_around_the_lines_is_ignored_and_plain_numbers_are_not_curl() {
        let around = format!(
            "starting\n{}bbrkit-fct not-a-time\n  bbrkit-fctx 1.0\ndone\n",
            fixture("curl-4mb-3x.txt")
        );
        assert_eq!(curl_of(&around).transfers, 3);
        // What a bare `-w '%{time_total}\n'` prints: no marker, no report.
        assert_eq!(read("0.003838\n0.008924\n"), None);
        assert_eq!(read(""), None);
    }

    #[test]
    fn a_cut_first_line_of_a_truncated_tail_is_not_read() {
        let text = fixture("curl-4mb-3x.txt");
        // The tail starts in the middle of the first line: "8 4000000 200"
        // must not be read as a transfer, and the report says it is partial.
        let cut = &text[text.find("8 4000000").unwrap()..];
        let Some(ClientReport::Curl(c)) = ClientReport::read(cut, true) else {
            panic!("no report")
        };
        assert_eq!((c.transfers, c.truncated), (2, true));
        assert_eq!(c.fct_ms, vec![8.924, 4.044]);
        assert_eq!(ClientReport::read("bbrkit-fct 1.0", true), None);
    }

    #[test]
    fn wrk_with_latency_gives_its_percentiles() {
        let w = wrk_of(&fixture("wrk-latency.txt"));
        assert_eq!(w.requests, 95429);
        assert!((w.duration_s - 3.03).abs() < 1e-9, "{w:?}");
        assert_eq!(w.bytes_read, (0.91 * 1024f64.powi(3)).round() as u64);
        assert_eq!(w.requests_per_s, 31517.94);
        assert_eq!((w.latency_avg_ms, w.latency_max_ms), (0.91, 77.32));
        assert_eq!(
            (w.latency_p50_ms, w.latency_p75_ms),
            (Some(0.206), Some(0.33))
        );
        assert_eq!(
            (w.latency_p90_ms, w.latency_p99_ms),
            (Some(1.49), Some(9.65))
        );
        assert_eq!((w.socket_errors, w.non_2xx_3xx), (0, 0));
        let r = read(&fixture("wrk-latency.txt")).unwrap();
        assert_eq!(r.typical_ms(), Some(0.206));
    }

    #[test]
    fn wrk_without_latency_has_no_percentiles_and_its_mean_is_typical() {
        let text = fixture("wrk-plain.txt");
        let w = wrk_of(&text);
        assert_eq!((w.requests, w.latency_avg_ms), (483, 7.65));
        assert_eq!(w.bytes_read, (1.80 * 1024f64.powi(3)).round() as u64);
        assert_eq!(w.latency_p50_ms, None);
        assert_eq!(read(&text).unwrap().typical_ms(), Some(7.65));
    }

    #[test]
    fn wrk_errors_are_counted() {
        let w = wrk_of(&fixture("wrk-404.txt"));
        assert_eq!((w.requests, w.non_2xx_3xx), (58125, 58125));
        assert_eq!(w.bytes_read, (17.07 * 1024f64.powi(2)).round() as u64);
        let t = wrk_of(&fixture("wrk-timeouts.txt"));
        assert_eq!((t.requests, t.socket_errors), (4, 4));
        assert_eq!((t.latency_avg_ms, t.latency_p99_ms), (0.0, Some(0.0)));
        assert!((t.duration_s - 6.01).abs() < 1e-9);
    }

    #[test]
    fn wrk_cut_before_its_summary_is_not_read_and_marker_lines_win() {
        let text = fixture("wrk-latency.txt");
        let cut = &text[..text.find("Requests/sec").unwrap()];
        assert_eq!(read(cut), None);
        let both = text + &fixture("curl-4mb-3x.txt");
        assert_eq!(read(&both).unwrap().tool(), "curl");
    }

    #[test]
    fn wrk_units() {
        assert_eq!(time_ms("206.00us"), Some(0.206));
        assert_eq!(time_ms("1.49ms"), Some(1.49));
        assert_eq!(time_ms("2.50s"), Some(2500.0));
        assert_eq!(time_ms("1.00m"), Some(60e3));
        assert_eq!(time_ms("12"), None);
        assert_eq!(size_bytes("153.00B"), Some(153));
        assert_eq!(size_bytes("2.00KB"), Some(2048));
        assert_eq!(size_bytes("12.13"), None);
    }

    #[test]
    fn pooled_medians_pool_curl_transfers_and_refuse_mixed_tools() {
        let a = read(&fixture("curl-4mb-3x.txt")).unwrap();
        let b = read(&fixture("curl-time-only.txt")).unwrap();
        // 0.48, 3.838, 4.044, 8.924: the median of the four transfers.
        let m = pooled_median_ms([&a, &b]).unwrap();
        assert!((m - (3.838 + 4.044) / 2.0).abs() < 1e-12, "{m}");
        let w = read(&fixture("wrk-plain.txt")).unwrap();
        assert_eq!(pooled_median_ms([&w]), Some(7.65));
        assert_eq!(pooled_median_ms([&a, &w]), None);
        assert_eq!(pooled_median_ms([]), None);
    }
}
