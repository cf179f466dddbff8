//! The `--timeseries` CSV: one row per flow per sampling interval, streamed
//! as the simulation runs. Columns start `time_s,flow,cc` (a stable contract).

use std::io::Write;

use bbrkit_sim::TraceRow;

/// The header line.
pub const HEADER: &str = "time_s,flow,cc,run,loss,throughput_bps,goodput_bps,cwnd_pkts,inflight_pkts,\
pacing_rate_bps,delivery_rate_bps,srtt_ms,bw_estimate_bps,state,ca_state,queue_bytes";

fn opt(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.0}")).unwrap_or_default()
}

/// Writes one row; `run` numbers the condition, `loss` is its loss rate,
/// `time_s` gets `decimals` digits after the point (3 for intervals of a
/// millisecond or more). `srtt_ms` is empty until the first RTT sample.
pub fn write_row(
    w: &mut impl Write,
    run: usize,
    loss: f64,
    decimals: usize,
    r: &TraceRow,
) -> std::io::Result<()> {
    let srtt = if r.srtt_ms > 0.0 {
        format!("{:.3}", r.srtt_ms)
    } else {
        String::new()
    };
    writeln!(
        w,
        "{:.decimals$},{},{},{},{},{:.0},{:.0},{},{},{:.0},{},{},{},{},{},{}",
        r.time_s,
        r.flow,
        r.cc,
        run,
        loss,
        r.throughput_bps,
        r.goodput_bps,
        r.cwnd_pkts,
        r.inflight_pkts,
        r.pacing_rate_bps,
        opt(r.delivery_rate_bps),
        srtt,
        opt(r.bw_estimate_bps),
        r.state,
        r.ca_state,
        r.queue_bytes
    )
}
