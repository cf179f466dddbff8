//! `--out` (the JSON report), `--timeseries` (CSV: `TCP_INFO` samples of
//! bulk and competing flows, or one row per request of a workload) and
//! `--plot` (SVG), written into the files [`crate::output::open_all`]
//! opened before the run.

use std::fmt::Write as _;

use bbrkit_lab::experiment::Report;
use bbrkit_lab::tcpinfo::TcpSample;

use crate::output::OutFile;

/// Writes the files opened for `--out`, `--timeseries` and `--plot` (in
/// that order; `None` where no path was given).
pub fn write_files(report: &Report, files: Vec<Option<OutFile>>) -> anyhow::Result<()> {
    let mut files = files.into_iter();
    if let Some(f) = files.next().flatten() {
        let mut text = serde_json::to_string_pretty(report)?;
        text.push('\n');
        f.write_and_commit(text.as_bytes())?;
    }
    if let Some(f) = files.next().flatten() {
        f.write_and_commit(timeseries(report).as_bytes())?;
    }
    if let Some(f) = files.next().flatten() {
        f.write_and_commit(super::plot::render(report)?.as_bytes())?;
    }
    Ok(())
}

const SAMPLE_HEADER: &str = "condition,cc,run,flow,t_s,bytes_acked,goodput_bits_per_second,retransmits,snd_cwnd,rtt_us,min_rtt_us,pacing_rate_bits_per_second,delivery_rate_bits_per_second\n";

/// The CSV of a report.
fn timeseries(report: &Report) -> String {
    match report {
        Report::Alone(r) => {
            let mut out = String::from(SAMPLE_HEADER);
            for c in &r.conditions {
                for res in &c.results {
                    for run in &res.runs {
                        for (fi, flow) in run.flows.iter().enumerate() {
                            sample_rows(
                                &mut out,
                                (&c.label, &res.cc, run.run, fi + 1),
                                &flow.samples,
                            );
                        }
                    }
                }
            }
            out
        }
        Report::Compete(r) => {
            let mut out = String::from(SAMPLE_HEADER);
            for run in &r.runs {
                for f in &run.flows {
                    sample_rows(
                        &mut out,
                        (&run.label, &f.cc, run.run, f.flow + 1),
                        &f.samples,
                    );
                }
            }
            out
        }
        Report::Workload(r) => {
            let mut out = String::from("condition,cc,run,request,bytes,fct_ms\n");
            for c in &r.conditions {
                for res in &c.results {
                    for run in &res.runs {
                        for (i, (bytes, ms)) in run.fct.iter().enumerate() {
                            let _ = writeln!(
                                out,
                                "\"{}\",{},{},{},{bytes},{ms:.3}",
                                c.label,
                                res.cc,
                                run.run,
                                i + 1
                            );
                        }
                    }
                }
            }
            out
        }
    }
}

/// One row per sample of one flow, with the goodput since the last one.
fn sample_rows(
    out: &mut String,
    (label, cc, run, flow): (&str, &str, usize, usize),
    samples: &[TcpSample],
) {
    let mut prev: Option<(f64, u64)> = None;
    for s in samples {
        let goodput = match prev {
            Some((t, b)) if s.t_s > t => {
                (s.bytes_acked.saturating_sub(b)) as f64 * 8.0 / (s.t_s - t)
            }
            _ => 0.0,
        };
        prev = Some((s.t_s, s.bytes_acked));
        let _ = writeln!(
            out,
            "\"{label}\",{cc},{run},{flow},{:.3},{},{:.0},{},{},{},{},{},{}",
            s.t_s,
            s.bytes_acked,
            goodput,
            s.retransmits,
            s.snd_cwnd,
            s.rtt,
            s.min_rtt,
            s.pacing_rate_bits_per_second,
            s.delivery_rate_bits_per_second
        );
    }
}
