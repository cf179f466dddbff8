//! `--out` (JSON report) and `--timeseries` (CSV of TCP_INFO samples), both
//! written atomically.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use bbrkit_lab::runner::LabReport;

/// Fails early (before the lab is built) if `path` cannot be written.
pub fn check_writable(path: &Path) -> anyhow::Result<()> {
    let dir = parent(path);
    if !dir.is_dir() {
        anyhow::bail!(
            "cannot write {}: no directory {}",
            path.display(),
            dir.display()
        );
    }
    if path.is_dir() {
        anyhow::bail!("cannot write {}: it is a directory", path.display());
    }
    Ok(())
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Writes `bytes` to `path` with bbrkit's one atomic writer.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    bbrkit_host::atomic::write_atomic(path, bytes, 0o644)
        .with_context(|| format!("write {}", path.display()))
}

/// `--out FILE`: the JSON report.
pub fn write_json(path: &Path, report: &LabReport) -> anyhow::Result<()> {
    let mut text = serde_json::to_string_pretty(report)?;
    text.push('\n');
    write_atomic(path, text.as_bytes())
}

/// `--timeseries FILE`: one CSV row per sample.
pub fn write_timeseries(path: &Path, report: &LabReport) -> anyhow::Result<()> {
    let mut out = String::from(
        "condition,cc,run,flow,t_s,bytes_acked,goodput_bits_per_second,retransmits,snd_cwnd,rtt_us,min_rtt_us,pacing_rate_bits_per_second,delivery_rate_bits_per_second\n",
    );
    for c in &report.conditions {
        for res in &c.results {
            for run in &res.runs {
                for (fi, flow) in run.flows.iter().enumerate() {
                    let mut prev: Option<(f64, u64)> = None;
                    for s in &flow.samples {
                        let goodput = match prev {
                            Some((t, b)) if s.t_s > t => {
                                (s.bytes_acked.saturating_sub(b)) as f64 * 8.0 / (s.t_s - t)
                            }
                            _ => 0.0,
                        };
                        prev = Some((s.t_s, s.bytes_acked));
                        let _ = writeln!(
                            out,
                            "\"{}\",{},{},{},{:.3},{},{:.0},{},{},{},{},{},{}",
                            c.label,
                            res.cc,
                            run.run,
                            fi + 1,
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
            }
        }
    }
    write_atomic(path, out.as_bytes())
}
