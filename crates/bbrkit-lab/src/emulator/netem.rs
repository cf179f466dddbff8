//! Kernel netem detection and configuration on the router's egress toward
//! the client.
//!
//! Owns the raw `TCA_OPTIONS` of netem (`struct tc_netem_qopt` followed by
//! 64-bit latency/jitter/rate and PRNG-seed attributes). Must only touch the
//! router namespace's `veth-rc`.

use crate::error::{LabError, Result};
use crate::netlink::{Rtnl, push_nla};
use crate::topology::Topology;

use super::model::LinkParams;

const TCA_NETEM_RATE64: u16 = 8;
const TCA_NETEM_RATE: u16 = 6;
const TCA_NETEM_LATENCY64: u16 = 10;
const TCA_NETEM_JITTER64: u16 = 11;
const TCA_NETEM_PRNG_SEED: u16 = 14;

/// The `TCA_OPTIONS` payload for netem with `params` and `limit` packets.
pub fn netem_options(params: &LinkParams, limit: u32, seed: u64) -> Vec<u8> {
    let loss = (params.loss.clamp(0.0, 1.0) * u32::MAX as f64) as u32;
    let mut out = Vec::new();
    // struct tc_netem_qopt { latency, limit, loss, gap, duplicate, jitter }
    for v in [0u32, limit, loss, 0, 0, 0] {
        out.extend_from_slice(&v.to_ne_bytes());
    }
    let mut nla = |kind: u16, value: &[u8]| push_nla(&mut out, kind, value);
    nla(
        TCA_NETEM_LATENCY64,
        &(params.delay.as_nanos() as i64).to_ne_bytes(),
    );
    nla(
        TCA_NETEM_JITTER64,
        &(params.jitter.as_nanos() as i64).to_ne_bytes(),
    );
    nla(TCA_NETEM_PRNG_SEED, &seed.to_ne_bytes());
    if let Some(rate) = params.rate_bps {
        let bytes_per_s = rate / 8;
        let mut r = Vec::new();
        // struct tc_netem_rate { rate, packet_overhead, cell_size, cell_overhead }
        for v in [bytes_per_s.min(u32::MAX as u64) as u32, 0, 0, 0] {
            r.extend_from_slice(&v.to_ne_bytes());
        }
        nla(TCA_NETEM_RATE, &r);
        if bytes_per_s >= u32::MAX as u64 {
            nla(TCA_NETEM_RATE64, &bytes_per_s.to_ne_bytes());
        }
    }
    out
}

/// True when the kernel accepts a netem qdisc (probed on the router's
/// `veth-rc`, removed again by replacing nothing: the probe qdisc stays only
/// if netem exists, and is then reconfigured by [`configure`]).
pub fn kernel_has_netem(topo: &Topology) -> Result<bool> {
    topo.router.run(|| {
        let mut nl = Rtnl::open()?;
        let opts = netem_options(&LinkParams::transparent(), 1000, 0);
        match nl.root_qdisc(topo.router_client_index, "netem", opts, false) {
            Ok(()) => Ok(true),
            Err(LabError::Netlink { source, .. })
                if matches!(
                    source.raw_os_error(),
                    Some(libc::ENOENT) | Some(libc::EINVAL) | Some(libc::EOPNOTSUPP)
                ) =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    })
}

/// Configures netem on the router's `veth-rc` for one run: delay, jitter,
/// loss, and (with a rate) netem's own rate limiter with a queue of
/// `buffer_bytes / frame` packets; without a rate the queue holds 100 000
/// packets so the delay line never drops.
pub fn configure(topo: &Topology, params: &LinkParams, seed: u64) -> Result<()> {
    let frame = topo.mtu as u64 + 14;
    let limit = match (params.rate_bps, params.buffer_bytes) {
        (Some(_), Some(b)) => (b / frame).max(1) as u32,
        _ => 100_000,
    };
    topo.router.run(|| {
        let mut nl = Rtnl::open()?;
        nl.root_qdisc(
            topo.router_client_index,
            "netem",
            netem_options(params, limit, seed),
            true,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn options_layout_matches_tc_netem_qopt() {
        let p = LinkParams {
            delay: Duration::from_millis(10),
            jitter: Duration::ZERO,
            loss: 0.5,
            rate_bps: None,
            buffer_bytes: None,
            ecn_threshold_bytes: None,
        };
        let o = netem_options(&p, 1000, 9);
        // 24-byte qopt, then LATENCY64, JITTER64, PRNG_SEED (12 bytes each).
        assert_eq!(o.len(), 24 + 3 * 12);
        assert_eq!(u32::from_ne_bytes(o[4..8].try_into().unwrap()), 1000);
        assert_eq!(
            u32::from_ne_bytes(o[8..12].try_into().unwrap()),
            u32::MAX / 2
        );
        assert_eq!(u16::from_ne_bytes(o[24..26].try_into().unwrap()), 12);
        assert_eq!(
            u16::from_ne_bytes(o[26..28].try_into().unwrap()),
            TCA_NETEM_LATENCY64
        );
        assert_eq!(
            i64::from_ne_bytes(o[28..36].try_into().unwrap()),
            10_000_000
        );
        let mut r = p;
        r.rate_bps = Some(8_000_000_000_000);
        let o = netem_options(&r, 10, 9);
        assert_eq!(
            o.len(),
            24 + 3 * 12 + 20 + 12,
            "RATE then RATE64 for > 4 GB/s"
        );
    }
}
