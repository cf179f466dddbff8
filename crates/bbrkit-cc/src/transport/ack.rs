//! The ACK half of the transport (Linux `tcp_ack` in `tcp_input.c`): SACK
//! tagging (`tcp_sacktag_write_queue`; a range set remembers what is SACKed
//! so repeated blocks cost nothing), the cumulative ACK
//! (`tcp_clean_rtx_queue`), RTT samples (`tcp_ack_update_rtt`, Karn's
//! rule), then loss detection, recovery, `tcp_rate_gen` and
//! `tcp_cong_control`. Part of [`Sender`]; never decides what to send.

use super::{
    AckOutcome, AckPacket, DataPacket, F_EVER_RETRANS, F_LOST, F_RETRANS, F_SACKED, Sender,
};
use crate::controller::CongestionControl;
use crate::pacing::tcp_update_pacing_rate;
use crate::rate::{self, RateSample};
use crate::tcp::{AckSample, CaState};
use crate::time::Instant;

/// Send times of the segments one ACK delivers (Linux `first_ackt`,
/// `last_ackt`, `sack->first_sackt`): the RTT samples' sources.
#[derive(Debug, Default)]
struct AckTimes {
    /// Newest-sent delivered never-retransmitted segment: `ca_rtt`.
    newest: Option<Instant>,
    /// Earliest-sent newly SACKed never-retransmitted segment.
    first_sack: Option<Instant>,
    /// Earliest-sent newly cumulatively ACKed never-retransmitted segment.
    first_cum: Option<Instant>,
}

impl<C: CongestionControl> Sender<C> {
    /// Processes an ACK arriving at `now` (Linux `tcp_ack`); appends the
    /// segments it lets out to `out`.
    pub fn on_ack(
        &mut self,
        now: Instant,
        ack: &AckPacket,
        out: &mut Vec<DataPacket>,
    ) -> AckOutcome {
        if self.completed.is_some() || ack.cum < self.una {
            return AckOutcome::default();
        }
        self.tcp.now = now;
        let unsent = self.unsent_bytes();
        rate::check_app_limited(&mut self.tcp, unsent, false);
        let prior_in_flight = self.tcp.packets_in_flight();
        let prior_delivered = self.tcp.delivered;
        let prior_lost = self.tcp.lost;
        let mut rs = RateSample::default();
        rs.prior_in_flight = prior_in_flight;
        rs.is_ece = ack.ece;
        let mut times = AckTimes::default();

        // 1. SACK blocks, 2. the cumulative ACK.
        self.sacktag(now, ack, &mut rs, &mut times);
        let una_advanced = ack.cum.min(self.nxt) > self.una;
        let sacked_new = self.tcp.delivered > prior_delivered;
        let (pkts_acked, last_acked_flags) = self.clean_rtx_queue(now, ack, &mut rs, &mut times);
        let newly_delivered = (self.tcp.delivered - prior_delivered) as u32;
        if ack.ece {
            // tcp_newly_delivered: every newly delivered packet counts as CE.
            self.tcp.delivered_ce += u64::from(newly_delivered);
        }

        let ca_rtt = self.ack_update_rtt(now, &times);
        rs.rtt = ca_rtt;
        if pkts_acked > 0 || newly_delivered > 0 {
            let sample = AckSample {
                pkts_acked,
                rtt: ca_rtt,
                in_flight: prior_in_flight,
            };
            self.cc.pkts_acked(&mut self.tcp, &sample);
        }
        // FLAG_ACK_MAYBE_DELAYED: one segment, the last one sent, acked alone.
        rs.is_ack_delayed = pkts_acked == 1
            && newly_delivered == 1
            && self.una == self.nxt
            && last_acked_flags & F_SACKED == 0;

        // 3. Loss detection (RACK).
        if self.rack.advanced {
            self.rack.advanced = false;
            self.rack_detect(now);
        }
        let newly_lost = (self.tcp.lost - prior_lost) as u32;

        // 4. Tail-loss probe outcome, recovery state machine.
        self.process_tlp_ack(ack.cum, una_advanced, sacked_new);
        self.fastretrans_alert(ack.ece);

        // 5. Rate sample and 6. congestion control.
        rate::generate(&mut self.tcp, &mut rs, newly_delivered, newly_lost, false);
        if rs.delivered.is_some() && rs.interval.is_some() {
            self.last_rs = Some(rs);
        }
        self.cong_control(&rs, newly_delivered, newly_lost, una_advanced);

        // 7. Timers and transmission.
        self.after_ack(now, una_advanced, sacked_new, out);
        AckOutcome {
            rs,
            delivered: newly_delivered,
            lost: newly_lost,
            rtt: ca_rtt,
        }
    }

    /// The end of `tcp_ack`: a finite flow that is fully acknowledged
    /// completes; otherwise re-arm the RTO and the probe timer
    /// (`tcp_set_xmit_timer`) and send what the ACK allows.
    fn after_ack(
        &mut self,
        now: Instant,
        una_advanced: bool,
        sacked_new: bool,
        out: &mut Vec<DataPacket>,
    ) {
        if self.cfg.size.is_some() && self.total_segs.is_some_and(|t| self.una >= t) {
            self.completed = Some(now);
            self.rto_deadline = None;
            self.reo_deadline = None;
            self.tlp_deadline = None;
            self.pace_deadline = None;
            return;
        }
        if una_advanced {
            self.arm_rto(now);
        }
        if una_advanced || sacked_new {
            self.schedule_loss_probe(now, true);
        }
        self.try_send(now, out);
    }

    /// Linux `tcp_ack_update_rtt`: `seq_rtt` (for srtt and the RTO) from the
    /// oldest newly cum-acked segment, else the oldest newly SACKed one;
    /// `ca_rtt` (returned; min RTT, `rs.rtt`) from the newest.
    fn ack_update_rtt(&mut self, now: Instant, times: &AckTimes) -> Option<crate::time::Duration> {
        if let Some(t) = times.first_cum.or(times.first_sack) {
            self.rtt.update(now - t, self.una, self.nxt);
            self.backoff = 0;
            self.tcp.srtt = self.rtt.srtt();
            self.tcp.rttvar = self.rtt.rttvar();
        }
        let ca_rtt = times.newest.map(|t| now - t);
        if let Some(r) = ca_rtt {
            self.rtt.update_min(r, now);
            self.tcp.min_rtt = self.rtt.min_rtt();
        }
        ca_rtt
    }

    /// Linux `tcp_cong_control`.
    fn cong_control(&mut self, rs: &RateSample, delivered: u32, lost: u32, una_advanced: bool) {
        if self.cc.has_cong_control() {
            self.cc.cong_control(&mut self.tcp, rs);
            return;
        }
        if matches!(self.tcp.ca_state, CaState::Recovery | CaState::Cwr) {
            self.prr(delivered, lost, una_advanced);
        } else if una_advanced {
            let ack_bytes = self.tcp.snd_una;
            self.cc.cong_avoid(&mut self.tcp, ack_bytes, delivered);
        }
        tcp_update_pacing_rate(&mut self.tcp);
    }

    /// `tcp_sacktag_write_queue`: newly SACKed segments are delivered.
    fn sacktag(
        &mut self,
        now: Instant,
        ack: &AckPacket,
        rs: &mut RateSample,
        times: &mut AckTimes,
    ) {
        let (una, nxt) = (self.una, self.nxt);
        let mut fresh: [(u64, u64); 8] = [(0, 0); 8];
        let mut nfresh = 0;
        let mut overflow: Vec<(u64, u64)> = Vec::new();
        for &(s, e) in ack.sack_blocks() {
            let (s, e) = (s.max(una), e.min(nxt));
            if s >= e {
                continue;
            }
            self.sacked.insert(s, e, |a, b| {
                if nfresh < fresh.len() {
                    fresh[nfresh] = (a, b);
                    nfresh += 1;
                } else {
                    overflow.push((a, b));
                }
            });
        }
        for &(a, b) in fresh[..nfresh].iter().chain(overflow.iter()) {
            for k in a..b {
                let i = (k - self.una) as usize;
                let flags = self.segs[i].flags;
                if flags & F_SACKED != 0 {
                    continue;
                }
                let seg = &mut self.segs[i];
                seg.flags |= F_SACKED;
                if flags & F_LOST != 0 {
                    seg.flags &= !F_LOST;
                    self.tcp.lost_out -= 1;
                }
                if flags & F_RETRANS != 0 {
                    seg.flags &= !F_RETRANS;
                    self.tcp.retrans_out -= 1;
                }
                self.tcp.sacked_out += 1;
                self.tcp.delivered += 1;
                let xmit = seg.tx.send_time;
                rate::on_packet_delivered(&mut self.tcp, rs, &mut self.segs[i].tx, true);
                self.rack_advance(k, flags, xmit, now);
                if flags & F_EVER_RETRANS == 0 {
                    times.first_sack = Some(times.first_sack.map_or(xmit, |t| t.min(xmit)));
                    times.newest = times.newest.max(Some(xmit));
                }
            }
        }
    }

    /// `tcp_clean_rtx_queue`: segments below the cumulative ACK leave the
    /// scoreboard. Returns (`pkts_acked`, flags of the last one).
    fn clean_rtx_queue(
        &mut self,
        now: Instant,
        ack: &AckPacket,
        rs: &mut RateSample,
        times: &mut AckTimes,
    ) -> (u32, u8) {
        let cum = ack.cum.min(self.nxt);
        let una_advanced = cum > self.una;
        let mut pkts_acked = 0u32;
        let mut last_acked_flags = 0u8;
        while self.una < cum {
            let k = self.una;
            let mut seg = self.segs.pop_front().expect("scoreboard covers una..nxt");
            let flags = seg.flags;
            if flags & F_SACKED == 0 {
                self.tcp.delivered += 1;
                rate::on_packet_delivered(&mut self.tcp, rs, &mut seg.tx, false);
                self.rack_advance(k, flags, seg.tx.send_time, now);
                if flags & F_EVER_RETRANS == 0 {
                    times.first_cum.get_or_insert(seg.tx.send_time);
                    times.newest = times.newest.max(Some(seg.tx.send_time));
                }
            } else {
                self.tcp.sacked_out -= 1;
            }
            if flags & F_LOST != 0 {
                self.tcp.lost_out -= 1;
            }
            if flags & F_RETRANS != 0 {
                self.tcp.retrans_out -= 1;
            }
            self.tcp.packets_out -= 1;
            pkts_acked += 1;
            last_acked_flags = flags;
            self.una += 1;
        }
        if una_advanced {
            self.sacked.remove_below(self.una);
            self.tcp.snd_una = self.seq_bytes(self.una);
        }
        (pkts_acked, last_acked_flags)
    }
}
