//! Rate-sampler tests: each case builds the per-ACK call sequence by hand
//! (on_send per packet, on_packet_delivered per newly delivered packet,
//! then generate), as a transport does.

use super::*;

const MSS: u64 = 1000;

fn ms(n: u64) -> Instant {
    Instant::from_micros(n * 1000)
}

struct Conn {
    tcp: Tcp,
    sent: Vec<TxSnapshot>,
}

impl Conn {
    fn new() -> Self {
        let mut tcp = Tcp::new(Instant::ZERO, MSS as u32);
        tcp.snd_cwnd = 100;
        Conn {
            tcp,
            sent: Vec::new(),
        }
    }

    /// Send `n` new packets at `t`.
    fn send(&mut self, t: Instant, n: usize) {
        self.tcp.now = t;
        for _ in 0..n {
            let was_idle = self.tcp.packets_out == 0;
            self.tcp.packets_out += 1;
            self.tcp.snd_nxt += MSS;
            let end_seq = self.tcp.snd_nxt;
            let snap = on_send(&mut self.tcp, was_idle, end_seq, false);
            self.sent.push(snap);
        }
    }

    /// An ACK at `t` delivering packets `idx` (SACKed or cumulatively).
    fn ack(&mut self, t: Instant, idx: &[usize], sacked: bool) -> (RateSample, bool) {
        self.tcp.now = t;
        let mut rs = RateSample::default();
        let mut n = 0;
        for &i in idx {
            let counted = self.sent[i].delivered_time.is_some();
            on_packet_delivered(&mut self.tcp, &mut rs, &mut self.sent[i], sacked);
            if counted {
                // The transport counts a packet once (SACK or cum-ACK).
                self.tcp.delivered += 1;
                n += 1;
            }
            if !sacked {
                self.tcp.packets_out -= 1;
            }
        }
        let valid = generate(&mut self.tcp, &mut rs, n, 0, false);
        (rs, valid)
    }
}

#[test]
fn steady_flight_gives_the_delivery_rate() {
    let mut c = Conn::new();
    c.send(ms(0), 10);
    // ACKs every 10 ms: 1 packet per 10 ms = 100 packets/s.
    let (rs, valid) = c.ack(ms(100), &[0], false);
    assert!(valid);
    assert_eq!(rs.delivered, Some(1));
    assert_eq!(rs.interval, Some(Duration::from_millis(100)));
    for i in 1..10 {
        let (rs, _) = c.ack(ms(100 + 10 * i as u64), &[i], false);
        // delivered since packet i was sent (at 0, when 0 were delivered):
        // i + 1 packets over 100 + 10i ms.
        assert_eq!(rs.delivered, Some(i as u64 + 1));
        assert_eq!(rs.ack_elapsed, Duration::from_millis(100 + 10 * i as u64));
    }
}

#[test]
fn interval_is_the_longer_of_send_and_ack_phases() {
    let mut c = Conn::new();
    c.send(ms(0), 2);
    // Packet 0 delivered at 50: first_send_time = 0 (its send time),
    // delivered_time = 50. Packet 1 stays in flight (no idle restart).
    c.ack(ms(50), &[0], false);
    for k in 0..4 {
        c.send(ms(50 + 10 * k), 1);
    }
    // ACK compression: packets 1..=5 all ACKed at 85 ms.
    let (rs, valid) = c.ack(ms(85), &[1, 2, 3, 4, 5], false);
    assert!(valid);
    // Newest packet sent at 80, its flight began at first_send_time = 0.
    assert_eq!(rs.send_elapsed, Duration::from_millis(80));
    // ACK phase from delivered_time at its send (50) to now (85).
    assert_eq!(rs.ack_elapsed, Duration::from_millis(35));
    assert_eq!(
        rs.interval,
        Some(Duration::from_millis(80)),
        "max(send, ack)"
    );
    assert_eq!(rs.delivered, Some(5), "6 delivered now, 1 when it was sent");
}

#[test]
fn sample_comes_from_the_most_recently_sent_packet() {
    let mut c = Conn::new();
    c.send(ms(0), 2);
    c.send(ms(5), 1);
    // Delivered in "wrong" order: the packet sent at 5 ms still wins.
    let (rs, _) = c.ack(ms(60), &[2, 0, 1], true);
    assert_eq!(rs.tx_in_flight, 3);
    assert_eq!(rs.send_elapsed, Duration::from_millis(5));
    assert_eq!(c.tcp.first_send_time, ms(5));
    // Same send time: the higher end sequence wins (tcp_skb_sent_after).
    let mut c = Conn::new();
    c.send(ms(0), 3);
    let (rs, _) = c.ack(ms(60), &[2, 1], true);
    assert_eq!(
        rs.tx_in_flight, 3,
        "packet 2 (in flight 3 after send), not 1"
    );
}

#[test]
fn a_sacked_packet_is_not_counted_again_by_the_cumulative_ack() {
    let mut c = Conn::new();
    c.send(ms(0), 3);
    let (rs, _) = c.ack(ms(50), &[1, 2], true);
    assert_eq!(rs.acked_sacked, 2);
    assert!(c.sent[1].delivered_time.is_none(), "marked as counted");
    // The cum-ACK now covers 0, 1, 2: only packet 0 is new.
    let before = c.tcp.first_send_time;
    let (rs, valid) = c.ack(ms(60), &[0, 1, 2], false);
    assert_eq!(rs.acked_sacked, 1);
    assert!(valid);
    // Packets 1 and 2 did not feed this sample; packet 0 (sent at 0) did.
    assert_eq!(rs.prior_delivered, 0);
    assert_eq!(c.tcp.delivered, 3);
    assert_eq!(before, ms(0));
}

#[test]
fn cumulatively_acked_packets_keep_their_snapshot() {
    let mut c = Conn::new();
    c.send(ms(0), 1);
    c.ack(ms(50), &[0], false);
    assert!(
        c.sent[0].delivered_time.is_some(),
        "freed by the transport, not cleared"
    );
}

#[test]
fn no_delivered_packet_gives_an_invalid_sample() {
    let mut c = Conn::new();
    c.send(ms(0), 2);
    let (rs, valid) = c.ack(ms(50), &[], false);
    assert!(!valid);
    assert_eq!(rs.delivered, None);
    assert_eq!(rs.interval, None);
    // A SACKed-before packet cum-ACKed alone is also no sample.
    c.ack(ms(60), &[1], true);
    let (rs, valid) = c.ack(ms(70), &[1], false);
    assert!(!valid);
    assert_eq!(rs.interval, None);
}

#[test]
fn sack_reneging_invalidates_the_sample() {
    let mut c = Conn::new();
    c.send(ms(0), 1);
    c.tcp.now = ms(50);
    let mut rs = RateSample::default();
    on_packet_delivered(&mut c.tcp, &mut rs, &mut c.sent[0], false);
    c.tcp.delivered += 1;
    assert!(!generate(&mut c.tcp, &mut rs, 1, 0, true));
    assert_eq!(rs.delivered, None);
    assert_eq!(
        c.tcp.delivered_time,
        ms(50),
        "delivery still advances the clock"
    );
}

#[test]
fn interval_below_min_rtt_is_discarded_but_delivered_kept() {
    let mut c = Conn::new();
    c.tcp.min_rtt = Some(Duration::from_millis(40));
    c.send(ms(0), 1);
    // A spurious retransmission ACKed after 10 ms would claim 100 packets/s
    // too many: the interval is implausible.
    let (rs, valid) = c.ack(ms(10), &[0], false);
    assert!(!valid);
    assert_eq!(rs.interval, None);
    assert_eq!(rs.delivered, Some(1));
    c.send(ms(10), 1);
    let (_, valid) = c.ack(ms(50), &[1], false);
    assert!(valid, "40 ms >= min_rtt");
}

#[test]
fn app_limited_marks_packets_until_the_bubble_is_delivered() {
    let mut c = Conn::new();
    c.send(ms(0), 4);
    // The application has nothing more (less than one MSS unsent).
    check_app_limited(&mut c.tcp, 500, false);
    assert_eq!(c.tcp.app_limited, 4, "delivered 0 + 4 in flight");
    c.send(ms(1), 1); // sent inside the bubble
    assert!(c.sent[4].is_app_limited);
    assert!(!c.sent[0].is_app_limited);
    // Delivering the first 4 packets: delivered = 4, not > 4 yet.
    let (rs, _) = c.ack(ms(50), &[0, 1, 2, 3], false);
    assert!(!rs.is_app_limited);
    assert_eq!(c.tcp.app_limited, 4);
    c.send(ms(50), 1);
    assert!(c.sent[5].is_app_limited);
    // The 5th delivery passes the bubble: cleared, later sends are normal.
    let (rs, _) = c.ack(ms(51), &[4], false);
    assert!(rs.is_app_limited, "sample from a packet sent in the bubble");
    assert_eq!(c.tcp.app_limited, 0);
    c.send(ms(52), 1);
    assert!(!c.sent[6].is_app_limited);
}

#[test]
fn app_limited_needs_every_condition() {
    let mut c = Conn::new();
    c.send(ms(0), 4);
    check_app_limited(&mut c.tcp, 1000, false);
    assert_eq!(c.tcp.app_limited, 0, "a full MSS is waiting");
    check_app_limited(&mut c.tcp, 0, true);
    assert_eq!(c.tcp.app_limited, 0, "data queued below TCP");
    c.tcp.snd_cwnd = 4;
    check_app_limited(&mut c.tcp, 0, false);
    assert_eq!(c.tcp.app_limited, 0, "cwnd-limited");
    c.tcp.snd_cwnd = 10;
    c.tcp.lost_out = 1;
    check_app_limited(&mut c.tcp, 0, false);
    assert_eq!(c.tcp.app_limited, 0, "a lost packet awaits retransmission");
    c.tcp.lost_out = 0;
    let mut idle = Conn::new();
    check_app_limited(&mut idle.tcp, 0, false);
    assert_eq!(idle.tcp.app_limited, 1, "never 0 when marking: at least 1");
}

#[test]
fn send_after_idle_restarts_the_sampling_clocks() {
    let mut c = Conn::new();
    c.send(ms(0), 1);
    c.ack(ms(50), &[0], false);
    c.send(ms(1000), 1);
    assert_eq!(c.tcp.first_send_time, ms(1000));
    assert_eq!(c.tcp.delivered_time, ms(1000));
    let (rs, _) = c.ack(ms(1050), &[1], false);
    // Not 1 packet over 1 s of idleness: over the 50 ms it was in flight.
    assert_eq!(rs.interval, Some(Duration::from_millis(50)));
}

#[test]
fn v3_fields_lost_and_delivered_ce() {
    let mut c = Conn::new();
    c.send(ms(0), 2);
    c.tcp.lost = 3; // three older packets marked lost after the send
    c.tcp.delivered_ce = 0;
    c.tcp.now = ms(50);
    let mut rs = RateSample::default();
    on_packet_delivered(&mut c.tcp, &mut rs, &mut c.sent[1], false);
    c.tcp.delivered += 1;
    c.tcp.delivered_ce += 1;
    assert!(generate(&mut c.tcp, &mut rs, 1, 0, false));
    assert_eq!(rs.lost, 3);
    assert_eq!(rs.delivered_ce, 1);
    assert_eq!(rs.delivery_rate_pps().map(|r| r.round()), Some(20.0));
}

#[test]
fn rs_lost_counts_the_marks_of_the_same_ack_as_v3() {
    let mut c = Conn::new();
    c.send(ms(0), 2);
    c.tcp.now = ms(50);
    let mut rs = RateSample::default();
    on_packet_delivered(&mut c.tcp, &mut rs, &mut c.sent[1], false);
    c.tcp.delivered += 1;
    // The same ACK's loss detection (tcp_rack_mark_lost runs after
    // tcp_clean_rtx_queue) then marks packet 0 lost: v3's tcp_rate_gen
    // counts it in rs.lost.
    c.tcp.lost += 1;
    assert!(generate(&mut c.tcp, &mut rs, 1, 1, false));
    assert_eq!((rs.lost, rs.losses), (1, 1));
}
