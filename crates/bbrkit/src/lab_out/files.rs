//! `--out` (the JSON report), `--timeseries` (CSV: `TCP_INFO` samples of
//! bulk and competing flows, or one row per request of a workload) and
//! `--plot` (SVG), written into the files [`crate::output::open_all`]
//! opened before the run.

use std::fmt::Write as _;

use bbrkit_lab::experiment::Report;
use bbrkit_lab::tcpinfo::TcpSample;

use crate::output::OutFile;

/// The end of a lab: the results through `print` first (the JSON document
/// or the table on stdout), then the files. A file that cannot be written
/// at the end (its directory removed, the disk full) loses nothing: the
/// results are already printed, every other file is still written, and the
/// error names each file that failed (the command then exits 2).
pub fn deliver(
    report: &Report,
    files: Vec<Option<OutFile>>,
    print: impl FnOnce(&Report) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    print(report)?;
    write_files(report, files)
}

/// Writes the files opened for `--out`, `--timeseries` and `--plot` (in
/// that order; `None` where no path was given), each even when an earlier
/// one failed; the error names every failure.
fn write_files(report: &Report, files: Vec<Option<OutFile>>) -> anyhow::Result<()> {
    let mut files = files.into_iter();
    let mut failed: Vec<String> = Vec::new();
    let mut note = |r: anyhow::Result<()>| {
        if let Err(e) = r {
            failed.push(format!("{e:#}"));
        }
    };
    if let Some(f) = files.next().flatten() {
        note(
            serde_json::to_string_pretty(report)
                .map_err(Into::into)
                .and_then(|mut text| {
                    text.push('\n');
                    f.write_and_commit(text.as_bytes())
                }),
        );
    }
    if let Some(f) = files.next().flatten() {
        note(f.write_and_commit(timeseries(report).as_bytes()));
    }
    if let Some(f) = files.next().flatten() {
        note(super::plot::render(report).and_then(|svg| f.write_and_commit(svg.as_bytes())));
    }
    match failed.is_empty() {
        true => Ok(()),
        false => anyhow::bail!("{}; the results are on stdout", failed.join("; ")),
    }
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
        // Refused with these modes (clap): nothing is sampled over time.
        Report::Commands(_) | Report::Hold(_) => String::new(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::open_all;

    /// Issue 21 item 4: the output directory disappears between the check
    /// before the run and the commit after it. The results are printed all
    /// the same, the other file is still written, and the error (main's
    /// `bbrkit: ...` line, exit 2) names the file that failed.
    #[test]
    fn results_are_printed_when_a_file_fails_at_the_end() {
        let report = Report::Alone(super::super::table::tests::report(&[
            ("cubic", 10e6),
            ("bbr", 25e6),
        ]));
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("gone");
        std::fs::create_dir(&gone).unwrap();
        let (json, svg) = (gone.join("lab.json"), dir.path().join("lab.svg"));
        let files = open_all(&[
            ("--out", Some(&json)),
            ("--timeseries", None),
            ("--plot", Some(&svg)),
        ])
        .unwrap();
        // The lab runs; meanwhile someone removes the directory of --out
        // (its hidden temporary file first, or rmdir would refuse).
        for e in std::fs::read_dir(&gone).unwrap() {
            std::fs::remove_file(e.unwrap().path()).unwrap();
        }
        std::fs::remove_dir(&gone).unwrap();
        let mut stdout = String::new();
        let e = deliver(&report, files, |r| {
            stdout.push_str(&crate::lab_out::table(r));
            Ok(())
        })
        .unwrap_err();
        let line = format!("bbrkit: {e:#}");
        assert!(
            stdout.contains("bbr/cubic") && stdout.contains("2.50x"),
            "{stdout}"
        );
        assert_eq!(line.lines().count(), 1, "{line}");
        assert!(
            line.starts_with(&format!("bbrkit: writing '{}': ", json.display()))
                && line.contains("No such file or directory")
                && line.ends_with("; the results are on stdout"),
            "{line}"
        );
        assert!(!line.contains("lab.svg"), "{line}");
        assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["lab.svg"], "no temporary file left");
    }
}
