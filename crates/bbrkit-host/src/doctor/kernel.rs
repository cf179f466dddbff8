//! `doctor`'s findings about what the kernel offers: no BBR (`no_bbr`), no
//! fq (`no_fq`).

use crate::kernel::Provision;
use crate::outcome::{Finding, FindingId, Level};
use crate::snapshot::Snapshot;

pub(super) fn no_bbr(snap: &Snapshot) -> Option<Finding> {
    let bbr = &snap.kernel.bbr;
    (!bbr.provision.present() && bbr.provision != Provision::Unknown).then(|| {
        Finding::new(FindingId::NoBbr, Level::Error, "this kernel has no BBR", bbr.evidence.clone(),
            "boot a distro kernel >= 4.9 with CONFIG_TCP_CONG_BBR (HWE, backports, linux-image-cloud); bbrkit never installs kernels")
    })
}

pub(super) fn no_fq(snap: &Snapshot) -> Option<Finding> {
    let fq = snap
        .kernel
        .qdisc("fq")
        .filter(|q| q.provision == Provision::Absent)?;
    let mut ev = fq.evidence.clone();
    ev.push("tcp_bbr.c: without fq, TCP falls back to internal pacing with one hrtimer per socket (Linux >= 4.13)".into());
    Some(Finding::new(
        FindingId::NoFq,
        Level::Info,
        "kernel has no fq: BBR uses internal pacing (not a failure)",
        ev,
        "nothing required; on busy servers a kernel with CONFIG_NET_SCH_FQ saves CPU",
    ))
}
