//! `bbrkit check`: what this kernel offers, one line per fact with its
//! evidence. Renders `bbrkit_host::check::inspect`; holds no logic.

use std::path::PathBuf;

use bbrkit_host::Root;
use bbrkit_host::check::CheckReport;

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
    let r = bbrkit_host::check::inspect(&root);
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
    let mut line = |label: &str, text: String| out.line(label, text);
    line(
        "kernel",
        format!(
            "{} (/proc/sys/kernel/osrelease; config: {})",
            k.release,
            k.config_source.as_deref().unwrap_or("none found")
        ),
    );
    line(
        "cc available",
        format!(
            "{} (net.ipv4.tcp_available_congestion_control)",
            k.available_cc.join(" ")
        ),
    );
    if !k.loadable_cc.is_empty() {
        line(
            "cc loadable",
            format!(
                "{} (modules on disk, autoloaded on use)",
                k.loadable_cc.join(" ")
            ),
        );
    }
    line(
        "cc allowed",
        format!(
            "{} (net.ipv4.tcp_allowed_congestion_control)",
            k.allowed_cc.join(" ")
        ),
    );
    line(
        "cc current",
        format!(
            "{} (net.ipv4.tcp_congestion_control, this network namespace)",
            k.current_cc.as_deref().unwrap_or("(absent)")
        ),
    );
    line(
        "bbr",
        format!("{} ({})", k.bbr.provision.word(), k.bbr.evidence.join("; ")),
    );
    let which = match k.bbr_version.as_str() {
        "1" => ": the built-in bbr is BBRv1 (mainline)",
        "3" => ": the built-in bbr is BBRv3 (a patched kernel such as XanMod), not v1",
        _ => "",
    };
    line(
        "bbr version",
        format!("{}{which} ({})", k.bbr_version, k.bbr_version_evidence),
    );
    bpf_lines(&r.bpf, &mut line);
    for q in &k.qdiscs {
        let mut text = format!("{} ({})", q.provision.word(), q.evidence.join("; "));
        if q.name == "fq" && q.provision == bbrkit_host::kernel::Provision::Absent {
            text.push_str("; BBR uses internal pacing (Linux >= 4.13)");
        }
        line(&format!("qdisc {}", q.name), text);
    }
    line(
        "default qdisc",
        match &k.default_qdisc {
            Some(d) => format!("{d} (net.core.default_qdisc)"),
            None => "absent in this network namespace: the host's setting applies".into(),
        },
    );
}

fn environment_lines(r: &CheckReport, out: &mut Lines) {
    let e = &r.environment;
    let mut line = |label: &str, text: String| out.line(label, text);
    for i in &r.interfaces {
        line(
            &format!("iface {}", i.name),
            format!(
                "root {} [{:?}, {} tx queue(s), {}] (rtnetlink)",
                i.describe(),
                i.class,
                i.tx_queues,
                if i.up { "up" } else { "down" }
            )
            .replace("KernelDefault", "kernel default")
            .replace("NoQueue", "no queue")
            .replace("Multiqueue", "multiqueue")
            .replace("Deliberate", "deliberate")
            .replace("Inactive", "inactive"),
        );
    }
    if let Some(err) = &r.interfaces_error {
        line("interfaces", format!("unreadable: {err}"));
    }
    line(
        "container",
        match &e.container {
            Some(c) => format!("{c} ({})", e.container_evidence.join("; ")),
            None if e.container_evidence.is_empty() => "none detected".into(),
            None => format!("none detected ({})", e.container_evidence.join("; ")),
        },
    );
    if let Some(v) = &e.virtualization {
        line("virtualization", v.clone());
    }
    line(
        "netns",
        format!(
            "{} ({})",
            match e.initial_netns {
                Some(true) => "initial",
                Some(false) =>
                    "non-initial (container): default qdisc and modules belong to the host",
                None => "unknown",
            },
            e.netns_evidence
        ),
    );
    line(
        "/proc/sys/net",
        format!(
            "{} ({})",
            if e.proc_sys_net_writable {
                "writable"
            } else {
                "not writable"
            },
            e.proc_sys_evidence
        ),
    );
}

/// What bbrkit's BPF bbr3 needs here, one requirement per line, and
/// whether it is registered now.
fn bpf_lines(b: &bbrkit_host::check::BpfSupport, line: &mut dyn FnMut(&str, String)) {
    use bbrkit_host::bpfcc::FeatureId;
    line(
        "bbr3 (BPF)",
        match &b.missing {
            None => "can be registered here: every requirement below is met".to_string(),
            Some(m) => format!("cannot be registered here: {m}"),
        },
    );
    for f in &b.features.features {
        let role = match f.id {
            FeatureId::Bpffs => " (needed to pin)".to_string(),
            FeatureId::Lockdown => " (informational)".to_string(),
            _ => match f.id.since() {
                Some(v) => format!(" (Linux >= {v})"),
                None => String::new(),
            },
        };
        line(
            "bbr3 needs",
            format!(
                "{}{role}: {} ({})",
                bbrkit_host::bpfcc::feature_label(f.id),
                if f.present { "yes" } else { "no" },
                f.detail
            ),
        );
    }
    for r in &b.registrations {
        line(
            &format!("{} now", r.cc),
            if r.registered {
                format!("registered by {}", r.holder)
            } else {
                format!(
                    "not registered ({} {})",
                    r.pin,
                    if r.pin_exists { "exists" } else { "absent" }
                )
            },
        );
    }
}
