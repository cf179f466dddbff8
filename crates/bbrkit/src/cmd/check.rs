//! `bbrkit check`: what this kernel offers, one line per fact with its
//! evidence. Renders `bbrkit_host::check::inspect`; holds no logic.

use std::path::PathBuf;

use bbrkit_host::bpf::FeatureId;
use bbrkit_host::check::{BpfSupport, CheckReport};
use bbrkit_host::kernel::Provision;
use bbrkit_host::{LinuxHost, Root};

use crate::{Global, Outcome, print_report};

/// Arguments of `bbrkit check`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Alternate filesystem root for every file read (sysctl.d, boot/, lib/modules/).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
}

/// Runs `bbrkit check`.
pub fn run(args: Args, global: Global) -> anyhow::Result<Outcome> {
    let root = Root::from_option(args.root.as_deref())?;
    let r = bbrkit_host::check::inspect(&LinuxHost::new(root))?;
    print_report(global, &r, |r| {
        let mut out = Lines::default();
        kernel_lines(r, &mut out);
        environment_lines(r, &mut out);
        out.0
    })?;
    Ok(Outcome::Ok)
}

/// The human output, one `label   text` line at a time.
#[derive(Default)]
struct Lines(String);

impl Lines {
    fn line(&mut self, label: &str, text: String) {
        self.0.push_str(&format!("{label:<16}{text}\n"));
    }
}

fn kernel_lines(r: &CheckReport, out: &mut Lines) {
    let k = &r.kernel;
    let config = k.config_source.as_deref().unwrap_or("none found");
    out.line(
        "kernel",
        format!(
            "{} (/proc/sys/kernel/osrelease; config: {config})",
            k.release
        ),
    );
    let list = |v: &[String], from: &str| format!("{} ({from})", v.join(" "));
    out.line(
        "cc available",
        list(&k.available_cc, "net.ipv4.tcp_available_congestion_control"),
    );
    if !k.loadable_cc.is_empty() {
        out.line(
            "cc loadable",
            list(&k.loadable_cc, "modules on disk, autoloaded on use"),
        );
    }
    out.line(
        "cc allowed",
        list(&k.allowed_cc, "net.ipv4.tcp_allowed_congestion_control"),
    );
    out.line(
        "cc current",
        format!(
            "{} (net.ipv4.tcp_congestion_control, this network namespace)",
            k.current_cc.as_deref().unwrap_or("(absent)")
        ),
    );
    out.line(
        "bbr",
        format!("{} ({})", k.bbr.provision.word(), k.bbr.evidence.join("; ")),
    );
    let which = k.bbr_version_meaning();
    out.line(
        "bbr version",
        format!("{}{which} ({})", k.bbr_version, k.bbr_version_evidence),
    );
    bpf_lines(&r.bpf, out);
    for q in &k.qdiscs {
        let mut text = format!("{} ({})", q.provision.word(), q.evidence.join("; "));
        if q.name == "fq" && q.provision == Provision::Absent {
            text.push_str("; BBR uses internal pacing (Linux >= 4.13)");
        }
        out.line(&format!("qdisc {}", q.name), text);
    }
    out.line(
        "default qdisc",
        match &k.default_qdisc {
            Some(d) => format!("{d} (net.core.default_qdisc)"),
            None => "absent in this network namespace: the host's setting applies".into(),
        },
    );
}

fn environment_lines(r: &CheckReport, out: &mut Lines) {
    let e = &r.environment;
    for i in &r.interfaces {
        out.line(
            &format!("iface {}", i.name),
            format!(
                "root {} [{}, {} tx queue(s), {}] (rtnetlink)",
                i.describe(),
                i.class.word(),
                i.tx_queues,
                if i.up { "up" } else { "down" }
            ),
        );
    }
    if let Some(err) = &r.interfaces_error {
        out.line("interfaces", format!("unreadable: {err}"));
    }
    let evidence = e.container_evidence.join("; ");
    out.line(
        "container",
        match &e.container {
            Some(c) => format!("{c} ({evidence})"),
            None if evidence.is_empty() => "none detected".into(),
            None => format!("none detected ({evidence})"),
        },
    );
    if let Some(v) = &e.virtualization {
        out.line("virtualization", v.clone());
    }
    let netns = match e.initial_netns {
        Some(true) => "initial",
        Some(false) => "non-initial (container): default qdisc and modules belong to the host",
        None => "unknown",
    };
    out.line("netns", format!("{netns} ({})", e.netns_evidence));
    let writable = if e.proc_sys_net_writable {
        "writable"
    } else {
        "not writable"
    };
    out.line(
        "/proc/sys/net",
        format!("{writable} ({})", e.proc_sys_evidence),
    );
}

/// What bbrkit's BPF bbr3 needs here, one requirement per line (lockdown
/// is reported, not needed), and whether it is registered now.
fn bpf_lines(b: &BpfSupport, out: &mut Lines) {
    out.line(
        "bbr3 (BPF)",
        match &b.missing {
            None => "can be registered here: every requirement below is met".to_string(),
            Some(m) => format!("cannot be registered here: {m}"),
        },
    );
    for f in b.features.iter().flat_map(|f| &f.features) {
        let (label, text) = match f.id {
            FeatureId::Lockdown => (
                "bbr3 lockdown",
                format!(
                    "{} ({}; does not stop bbr3: struct_ops works in every lockdown mode)",
                    if f.present { "active" } else { "none" },
                    f.detail
                ),
            ),
            id => {
                let role = match (id, id.since()) {
                    (FeatureId::Bpffs, _) => " (needed to pin)".to_string(),
                    (FeatureId::StructOpsLink, Some(v)) => {
                        format!(" (Linux >= {v}; else registered by map update)")
                    }
                    (_, Some(v)) => format!(" (Linux >= {v})"),
                    _ => String::new(),
                };
                let yes = if f.present { "yes" } else { "no" };
                let text = format!("{}{role}: {yes} ({})", id.label(), f.detail);
                ("bbr3 needs", text)
            }
        };
        out.line(label, text);
    }
    for r in &b.registrations {
        let state = if r.pin_exists { "exists" } else { "absent" };
        out.line(
            &format!("{} now", r.cc),
            if r.registered {
                format!("registered by {}", r.holder)
            } else {
                format!("not registered ({} {state})", r.pin)
            },
        );
    }
}
