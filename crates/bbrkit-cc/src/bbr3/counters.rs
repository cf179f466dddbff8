//! Counters of the model's events per flow: the same set the BPF bbr3 keeps
//! per socket (`crates/bbrkit-bpf/bpf/telemetry.h`, `struct
//! bbr3_counters`), so that a lab run and a simulation of the same path can
//! be compared event by event (docs/bbr3-validation.md).
//!
//! Owns the [`Counters`] record and [`Hit`], where an "inflight too high"
//! verdict came from. Only counts: must never influence the algorithm.

/// Where an "inflight too high" verdict that cut `inflight_hi` came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    /// An ACK's rate sample (`bbr_adapt_upper_bounds`).
    Ack,
    /// A packet marked lost (`bbr_skb_marked_lost`).
    Lost,
    /// A loss repaired by a tail-loss probe (`bbr_run_loss_probe_recovery`).
    Tlp,
}

/// Event counts of one flow since `init` (JSON with feature `serde`, as
/// the simulator's report writes it: `lost` is `lost_packets` there and
/// `hi_at_hit` is `inflight_hi_at_hits`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Counters {
    /// `cong_control` calls (ACKs).
    pub acks: u64,
    /// Packet-timed round starts.
    pub rounds: u64,
    /// Round starts spent in PROBE_BW REFILL or UP.
    pub probe_rounds: u64,
    /// PROBE_BW REFILL entries (bandwidth probes begun).
    pub refills: u64,
    /// PROBE_BW UP entries.
    pub ups: u64,
    /// PROBE_RTT entries.
    pub probe_rtts: u64,
    /// "Inflight too high" handled, from an ACK's sample.
    pub too_high_ack: u64,
    /// ... from a lost-packet sample.
    pub too_high_lost: u64,
    /// ... from a TLP-repaired loss.
    pub too_high_tlp: u64,
    /// STARTUP ended by loss (`bbr_check_loss_too_high_in_startup`).
    pub startup_loss_exits: u64,
    /// Lower-bound cuts by loss (`bw_lo`/`inflight_lo` × (1 − beta)).
    pub lo_cuts: u64,
    /// Loss events noted (`bbr_note_loss`).
    pub loss_events: u64,
    /// Packets the transport reported lost (`skb_marked_lost` pcounts).
    #[cfg_attr(feature = "serde", serde(rename = "lost_packets"))]
    pub lost: u64,
    /// TLP-repaired losses seen (`CA_EVENT_TLP_RECOVERY`, v3 only).
    pub tlp_repairs: u64,
    /// RTOs seen (`set_state(Loss)`).
    pub rtos: u64,
    /// `inflight_hi` just after each "too high" hit, packets, in order.
    #[cfg_attr(feature = "serde", serde(rename = "inflight_hi_at_hits"))]
    pub hi_at_hit: Vec<u32>,
}

impl Counters {
    /// Records a handled "inflight too high" from `path` that left
    /// `inflight_hi`.
    pub(super) fn too_high(&mut self, path: Hit, inflight_hi: u32) {
        match path {
            Hit::Ack => self.too_high_ack += 1,
            Hit::Lost => self.too_high_lost += 1,
            Hit::Tlp => self.too_high_tlp += 1,
        }
        self.hi_at_hit.push(inflight_hi);
    }

    /// All "too high" hits, whatever the path.
    pub fn too_high_hits(&self) -> u64 {
        self.too_high_ack + self.too_high_lost + self.too_high_tlp
    }
}
