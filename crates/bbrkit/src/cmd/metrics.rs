//! `bbrkit metrics`: the host's congestion-control state in the Prometheus
//! text exposition format, for a scrape or node_exporter's textfile collector.
//!
//! Owns which families are published and the `--textfile` write (temporary
//! file and rename in the same directory). Host facts and `verify` checks come
//! from `bbrkit-host`; sockets, histograms and TCP counters from `bbrkit-diag`.
//! Never changes anything except the `--textfile` it is given.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use bbrkit_diag::exposition::{self, SocketStats};
use bbrkit_diag::model::{BbrState, ModelStats};
use bbrkit_diag::prom::{Exposition, MetricType};
use bbrkit_diag::{Filter, nstat};
use bbrkit_host::{Root, bpfcc, facts, verify};
use serde::Serialize;

use crate::{Global, Outcome};

/// Arguments of `bbrkit metrics`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write the exposition to PATH atomically (temporary file in the same
    /// directory, then rename) instead of stdout, for node_exporter's textfile
    /// collector (e.g. /var/lib/prometheus/node-exporter/bbrkit.prom).
    #[arg(long, value_name = "PATH")]
    pub textfile: Option<PathBuf>,
    /// Alternate filesystem root for the on-disk files the host facts and
    /// checks read (`etc/sysctl.d`, kernel config, ...).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

/// Runs `bbrkit metrics`.
pub fn run(args: Args, global: Global) -> anyhow::Result<Outcome> {
    let root = Root::from_option(args.root.as_deref())?;
    if let Some(path) = &args.textfile {
        check_textfile_path(path)?;
    }
    let exp = collect(&root)?;
    let text = exp.text().to_string();
    if let Some(path) = &args.textfile {
        write_textfile(path, text.as_bytes())?;
    }
    if global.json {
        crate::print_json(&document(&exp, args.textfile.as_deref()))?;
    } else if args.textfile.is_none() {
        crate::emit(&text)?;
    }
    Ok(Outcome::Ok)
}

/// Builds the whole exposition for the calling thread's network namespace.
pub fn collect(root: &Root) -> anyhow::Result<Exposition> {
    let mut stats = SocketStats::default();
    let mut established = Vec::new();
    let mut model = ModelStats::default();
    let mut bpf_socks = Vec::new();
    bbrkit_diag::census_each(&Filter::default(), |s| {
        stats.observe(&s);
        established.extend(verify::Established::from_socket(&s));
        match (&s.cc, &s.bbr) {
            _ if s.state != bbrkit_diag::TcpState::Established => {}
            (Some(cc), Some(info)) => model.observe_kernel(cc, info),
            (Some(cc), None) if bpfcc::is_bpf_cc(cc) => {
                bpf_socks.push((cc.clone(), s.local, s.remote));
            }
            _ => {}
        }
    })
    .context("taking the socket census")?;
    observe_bpf_models(&mut model, &bpf_socks);
    let counters = nstat::read().context("reading TCP counters")?;
    let host = facts::gather(root);
    let mut e = Exposition::new();
    write_host(&mut e, &host, &stats)?;
    stats.write(&mut e)?;
    write_bpf_registrations(&mut e)?;
    model.write(&mut e)?;
    exposition::write_tcp_counters(&mut e, &counters)?;
    write_verify(&mut e, verify::run_with(root, None, Ok(established)))?;
    Ok(e)
}

/// The model of each BPF socket (`bbr3`) from the telemetry maps; a socket
/// the maps do not hold (or maps this user may not read) counts as
/// `unknown`, with the reason on stderr.
fn observe_bpf_models(
    model: &mut ModelStats,
    socks: &[(String, std::net::SocketAddr, std::net::SocketAddr)],
) {
    if socks.is_empty() {
        return;
    }
    let known = bpfcc::telemetry_here().unwrap_or_else(|e| {
        eprintln!("bbrkit: metrics: BPF telemetry unreadable: {e}");
        Vec::new()
    });
    for (cc, local, remote) in socks {
        match known
            .iter()
            .find(|m| m.local == *local && m.remote == *remote)
        {
            Some(m) => model.observe(cc, m.state, m.bw_bytes_per_second),
            None => model.observe(cc, BbrState::Unknown, 0),
        }
    }
}

/// `bbrkit_bpf_registered{cc}` and `bbrkit_bpf_registered_by_bbrkit{cc}`
/// for each BPF congestion control bbrkit ships.
fn write_bpf_registrations(e: &mut Exposition) -> anyhow::Result<()> {
    let regs: Vec<bpfcc::Registration> = bpfcc::BPF_CCS
        .iter()
        .map(|c| bpfcc::registration(c))
        .collect();
    e.family(
        "bbrkit_bpf_registered",
        MetricType::Gauge,
        "1 when the BPF congestion control is registered (listed in tcp_available_congestion_control), else 0.",
    )?;
    for r in &regs {
        e.sample(&[("cc", &r.cc)], if r.registered { 1.0 } else { 0.0 })?;
    }
    e.family(
        "bbrkit_bpf_registered_by_bbrkit",
        MetricType::Gauge,
        "1 when bbrkit's pinned link holds the registration; 0 when not registered or registered by another program.",
    )?;
    for r in &regs {
        e.sample(&[("cc", &r.cc)], if r.by_bbrkit { 1.0 } else { 0.0 })?;
    }
    Ok(())
}

/// `bbrkit_verify_ok{check,key}` (1 passed, 0 failed) for every `verify` check
/// and `bbrkit_verify_all_ok`. When the checks cannot run, both families are
/// written without samples and the reason goes to stderr, so the rest of the
/// exposition still reaches Prometheus.
fn write_verify(
    e: &mut Exposition,
    report: Result<verify::VerifyReport, bbrkit_host::HostError>,
) -> anyhow::Result<()> {
    e.family(
        "bbrkit_verify_ok",
        MetricType::Gauge,
        "Result of each `bbrkit verify` check: 1 passed, 0 failed (key names what was measured).",
    )?;
    let report = match report {
        Ok(r) => Some(r),
        Err(err) => {
            eprintln!("bbrkit: metrics: verify checks did not run: {err}");
            None
        }
    };
    let mut seen = std::collections::BTreeSet::new();
    for c in report.iter().flat_map(|r| &r.checks) {
        if seen.insert((c.name.as_str(), c.key.as_str())) {
            e.sample(
                &[("check", &c.name), ("key", &c.key)],
                if c.ok { 1.0 } else { 0.0 },
            )?;
        }
    }
    e.family(
        "bbrkit_verify_all_ok",
        MetricType::Gauge,
        "1 when every `bbrkit verify` check passed, else 0.",
    )?;
    if let Some(r) = &report {
        e.sample(&[], if r.ok { 1.0 } else { 0.0 })?;
    }
    Ok(())
}

/// BBR version for the info metric: the host's `/sys/module/tcp_bbr/version`
/// when it has one, else the `bbr_version` of live BBR sockets' info
/// (`1` for the 20-byte mainline layout), else the layout the kernel reports
/// on a throwaway unconnected BBR socket, else `unknown` (BBR not available).
fn bbr_version(host: &facts::HostFacts, stats: &SocketStats) -> String {
    if host.bbr_version != "unknown" && !host.bbr_version.is_empty() {
        return host.bbr_version.clone();
    }
    stats
        .bbr_version()
        .or_else(|| bbrkit_diag::probe_bbr_info().map(|b| b.version()))
        .map_or_else(|| "unknown".to_string(), |v| v.to_string())
}

fn write_host(
    e: &mut Exposition,
    host: &facts::HostFacts,
    stats: &SocketStats,
) -> anyhow::Result<()> {
    e.family(
        "bbrkit_info",
        MetricType::Gauge,
        "Host congestion-control facts: default algorithm, default qdisc, BBR version, kernel (value 1).",
    )?;
    let bbr = bbr_version(host, stats);
    e.sample(
        &[
            (
                "default_cc",
                host.default_cc.as_deref().unwrap_or("unknown"),
            ),
            (
                "default_qdisc",
                host.default_qdisc.as_deref().unwrap_or("unknown"),
            ),
            ("bbr_version", &bbr),
            ("kernel", &host.kernel),
        ],
        1.0,
    )?;
    e.family(
        "bbrkit_interface_root_qdisc_info",
        MetricType::Gauge,
        "Root qdisc of each network interface (value 1); effective is the leaf kind under mq.",
    )?;
    for i in &host.interfaces {
        e.sample(
            &[
                ("dev", &i.dev),
                ("kind", &i.kind),
                ("effective", &i.effective),
            ],
            1.0,
        )?;
    }
    Ok(())
}

/// The `--json` document: where the text went and the families as written.
#[derive(Debug, Serialize)]
pub struct Document {
    textfile: Option<String>,
    families: Vec<FamilyJson>,
}

#[derive(Debug, Serialize)]
struct FamilyJson {
    name: String,
    #[serde(rename = "type")]
    kind: &'static str,
    help: String,
    samples: Vec<SampleJson>,
}

#[derive(Debug, Serialize)]
struct SampleJson {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// Builds the `--json` document.
pub fn document(exp: &Exposition, textfile: Option<&Path>) -> Document {
    Document {
        textfile: textfile.map(|p| p.display().to_string()),
        families: exp
            .records()
            .iter()
            .map(|f| FamilyJson {
                name: f.name.clone(),
                kind: f.kind.as_str(),
                help: f.help.clone(),
                samples: f
                    .samples
                    .iter()
                    .map(|s| SampleJson {
                        name: s.name.clone(),
                        labels: s.labels.iter().cloned().collect(),
                        value: s.value,
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// Refuses a `--textfile` that cannot work before anything is collected.
fn check_textfile_path(path: &Path) -> anyhow::Result<()> {
    if path.file_name().is_none() || path.as_os_str().to_string_lossy().ends_with('/') {
        anyhow::bail!("--textfile {}: not a file name", path.display());
    }
    let dir = parent_dir(path);
    if !dir.is_dir() {
        anyhow::bail!(
            "--textfile {}: directory {} does not exist",
            path.display(),
            dir.display()
        );
    }
    if path.is_dir() {
        anyhow::bail!("--textfile {}: is a directory", path.display());
    }
    Ok(())
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Writes `bytes` to `path` through a temporary sibling and a rename, so the
/// collector never reads a half-written file; nothing is left behind on error.
fn write_textfile(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let full = parent_dir(path).join(path.file_name().expect("checked"));
    bbrkit_host::atomic::write_atomic(&full, bytes, 0o644)
        .with_context(|| format!("writing --textfile {}", path.display()))
}
