//! What `bbrkit metrics` publishes, read from this host once: one socket
//! census (streamed: sockets by algorithm and state, the kernel BBR's model
//! states, the established sockets `verify` needs, the BPF sockets whose
//! model the telemetry join adds), the TCP counters, the kernel facts, the
//! interfaces' root qdiscs, the BPF registrations, the attached policies'
//! counters by rule and arm, and the `verify` checks.
//!
//! Owns the gathering only: every family is written by
//! `bbrkit_diag::metrics` from the [`Inputs`] this returns. Only reads; what
//! fails on the way without stopping the exposition becomes a warning.

use bbrkit_diag::conns::ModelSource;
use bbrkit_diag::metrics::{
    BpfRegistration, HostInfo, Inputs, PolicyArm, PolicyForeign, PolicyStats, VerifyCheck,
};
use bbrkit_diag::model::BbrState;
use bbrkit_diag::{DiagError, Filter, Socket, TcpState};

use crate::algorithm::BPF_ALGORITHMS;
use crate::host::{Established, LinuxHost};
use crate::{Root, bpf, kernel, verify};

/// Gathers the inputs of the exposition for the calling thread's network
/// namespace (on-disk files under `root`). Fails only when the census or
/// the counters cannot be read.
pub fn gather(root: &Root) -> Result<Inputs, DiagError> {
    let mut inputs = Inputs::default();
    let mut established = Vec::new();
    let mut on_bpf = Vec::new();
    let bpf_algos = bpf::offered();
    let telemetry = bpf::telemetry();
    let mut filter = Filter::default();
    telemetry.ask(&mut filter);
    bbrkit_diag::census_each(&filter, |s| {
        inputs.sockets.observe(&s);
        established.extend(Established::from_socket(&s));
        match (&s.cc, &s.bbr) {
            _ if s.state != TcpState::Established => {}
            (Some(cc), Some(info)) => inputs.models.observe_kernel(cc, info),
            (Some(cc), None) if bpf_algos.contains(cc) => on_bpf.push(s),
            _ => {}
        }
    })?;
    observe_bpf_models(&mut inputs, &telemetry, &on_bpf);
    inputs.counters = bbrkit_diag::nstat::read()?;
    inputs.host = host_info(root, &inputs);
    inputs.interfaces = bbrkit_diag::qdisc::list().unwrap_or_default();
    inputs.bpf = BPF_ALGORITHMS
        .iter()
        .map(|a| bpf::registration(a.name))
        .map(|r| BpfRegistration {
            cc: r.cc,
            registered: r.registered,
            by_bbrkit: r.by_bbrkit,
        })
        .collect();
    let pins = bpf::policy_pins();
    inputs.policy = policy_arms(&pins);
    inputs.policy_stats = policy_stats(&pins);
    inputs.policy_foreign = policy_foreign(root, &pins);
    inputs.verify = match verify::run_with(root, None, Ok(established)) {
        Ok(r) => Some((
            r.checks
                .into_iter()
                .map(|c| VerifyCheck {
                    name: c.name.to_string(),
                    key: c.key,
                    ok: c.ok,
                })
                .collect(),
            r.ok,
        )),
        Err(err) => {
            inputs
                .warnings
                .push(format!("verify checks did not run: {err}"));
            None
        }
    };
    Ok(inputs)
}

/// The per-rule, per-arm counters of every attached policy.
fn policy_arms(pins: &[crate::live::PolicyPin]) -> Vec<PolicyArm> {
    let live = pins.iter().filter_map(|p| p.live.as_ref().ok());
    live.filter_map(|l| Some((l.cgroup_id, l.counters.as_ref().ok()?)))
        .flat_map(|(cgroup_id, c)| {
            c.arms.iter().map(move |a| PolicyArm {
                cgroup_id,
                rule: a.rule + 1,
                arm: a.arm,
                cc: a.cc.clone(),
                matched: a.matched,
                assigned: a.assigned,
                kept_app: a.kept_app,
                kept_route: a.kept_route,
                failed: a.failed,
            })
        })
        .collect()
}

/// The other sock_ops programs around each policy the before-image
/// records (`crate::live::foreign`, as `verify`'s `policy_foreign`).
fn policy_foreign(root: &Root, pins: &[crate::live::PolicyPin]) -> Vec<PolicyForeign> {
    let image = crate::image::load(root).ok().flatten();
    let pinned: Vec<u32> = pins
        .iter()
        .filter_map(|p| p.live.as_ref().ok().map(|l| l.link_id))
        .collect();
    let mount = crate::host::Host::cgroup2(&LinuxHost::new(root.clone()));
    crate::live::recorded(image.as_ref())
        .into_iter()
        .map(|(cg, recorded_id)| {
            let cg = std::path::PathBuf::from(cg);
            let around = mount
                .as_deref()
                .ok_or_else(String::new)
                .and_then(|m| bpf::sock_ops_around(&cg, m));
            PolicyForeign {
                cgroup_id: bpf::cgroup_id(&cg).unwrap_or(recorded_id),
                programs: around
                    .ok()
                    .map(|a| crate::live::foreign(&a, &cg, &pinned).len()),
            }
        })
        .collect()
}

/// The global counters of every attached policy.
fn policy_stats(pins: &[crate::change::policy::PolicyPin]) -> Vec<PolicyStats> {
    let live = pins.iter().filter_map(|p| p.live.as_ref().ok());
    live.filter_map(|l| {
        Some(PolicyStats {
            cgroup_id: l.cgroup_id,
            stats: l.counters.as_ref().ok()?.stats.clone(),
        })
    })
    .collect()
}

/// The model of each BPF socket (`bbr3`) from the one telemetry join; a
/// socket it does not know counts as `unknown`, and a join that could read
/// nothing says why in a warning.
fn observe_bpf_models(inputs: &mut Inputs, telemetry: &bpf::Telemetry, socks: &[Socket]) {
    if socks.is_empty() {
        return;
    }
    let known = telemetry.models(socks);
    if let Some(bbrkit_diag::conns::ModelNote::Unreadable(why)) = &known.note {
        inputs
            .warnings
            .push(format!("BPF telemetry unreadable: {why}"));
    }
    for s in socks {
        let cc = s.cc.as_deref().unwrap_or_default();
        match known.get(s) {
            Some(m) => {
                let (state, bytes_per_second) = bpf::model_state(m);
                inputs.models.observe(cc, state, bytes_per_second);
            }
            None => inputs.models.observe(cc, BbrState::Unknown, 0),
        }
    }
}

/// `bbrkit_info`'s facts. The BBR version: the host's
/// `/sys/module/tcp_bbr/version` when it has one, else the `bbr_version` of
/// live BBR sockets' info (`1` for the 20-byte mainline layout), else the
/// layout the kernel reports on a throwaway unconnected BBR socket, else
/// `unknown` (BBR not available).
fn host_info(root: &Root, inputs: &Inputs) -> HostInfo {
    let k = kernel::gather(&LinuxHost::new(root.clone()), false);
    let bbr_version = if k.bbr_version != "unknown" && !k.bbr_version.is_empty() {
        k.bbr_version
    } else {
        inputs
            .sockets
            .bbr_version()
            .or_else(|| bbrkit_diag::probe_bbr_info().map(|b| b.version()))
            .map_or_else(|| "unknown".to_string(), |v| v.to_string())
    };
    HostInfo {
        kernel: k.release,
        default_cc: k.current_cc,
        default_qdisc: k.default_qdisc,
        bbr_version,
    }
}
