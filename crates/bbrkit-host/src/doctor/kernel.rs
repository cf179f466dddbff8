//! `doctor`'s findings about what the kernel offers and how its
//! interfaces are set up: no BBR (`no_bbr`), no fq (`no_fq`), interfaces
//! still on the old default qdisc (`stale_interface_qdisc`).

use super::{Finding, Level};
use crate::{enable, kernel, qdisc};

pub(super) fn no_bbr(facts: &kernel::KernelFacts) -> Option<Finding> {
    (!facts.bbr.provision.present() && facts.bbr.provision != kernel::Provision::Unknown).then(|| {
        Finding::new("no_bbr", Level::Error, "this kernel has no BBR", facts.bbr.evidence.clone(),
            "boot a distro kernel >= 4.9 with CONFIG_TCP_CONG_BBR (HWE, backports, linux-image-cloud); bbrkit never installs kernels")
    })
}

pub(super) fn stale_interface_qdisc(facts: &kernel::KernelFacts) -> Option<Finding> {
    let d = facts.default_qdisc.as_ref()?;
    let list = qdisc::list().ok()?;
    let stale: Vec<String> = list
        .iter()
        .filter(|i| enable::needs_recreate(i, Some(d)))
        .map(|i| {
            format!(
                "{}: root {} while net.core.default_qdisc = {d}",
                i.name,
                i.describe()
            )
        })
        .collect();
    (!stale.is_empty()).then(|| {
        Finding::new(
            "stale_interface_qdisc",
            Level::Warning,
            "default qdisc changed but interfaces still use the old one",
            stale,
            "`bbrkit enable` re-creates kernel-default root qdiscs (mq-aware); a reboot also does",
        )
    })
}

pub(super) fn no_fq(facts: &kernel::KernelFacts) -> Option<Finding> {
    let fq = facts
        .qdisc("fq")
        .filter(|q| q.provision == kernel::Provision::Absent)?;
    let mut ev = fq.evidence.clone();
    ev.push("tcp_bbr.c: without fq, TCP falls back to internal pacing with one hrtimer per socket (Linux >= 4.13)".into());
    Some(Finding::new(
        "no_fq",
        Level::Info,
        "kernel has no fq: BBR uses internal pacing (not a failure)",
        ev,
        "nothing required; on busy servers a kernel with CONFIG_NET_SCH_FQ saves CPU",
    ))
}
