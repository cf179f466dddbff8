//! Tests of the synthetic path and of the sender's Linux call order.

use super::*;
use crate::controller::Status;
use crate::reno::Reno;
use crate::tcp::{AckSample, CaEvent};
use crate::transport::SenderConfig;
use std::cell::RefCell;
use std::rc::Rc;

/// Reno that logs every hook call, to check the transport's call order.
#[derive(Debug)]
struct Logged {
    inner: Reno,
    cong_control: bool,
    log: Rc<RefCell<Vec<String>>>,
}

impl Logged {
    fn push(&self, s: String) {
        self.log.borrow_mut().push(s);
    }
}

impl CongestionControl for Logged {
    fn name(&self) -> &'static str {
        "logged"
    }
    fn has_cong_control(&self) -> bool {
        self.cong_control
    }
    fn cong_control(&mut self, tcp: &mut Tcp, rs: &RateSample) {
        self.push(format!(
            "cong_control(acked={},losses={})",
            rs.acked_sacked, rs.losses
        ));
        // Behave like a trivial window controller so traffic flows.
        if !matches!(tcp.ca_state, CaState::Recovery) {
            tcp.set_cwnd(tcp.snd_cwnd + rs.acked_sacked.min(1));
        }
        tcp.pacing_rate = 1_000_000;
    }
    fn cong_avoid(&mut self, tcp: &mut Tcp, ack: u64, acked: u32) {
        self.push("cong_avoid".into());
        self.inner.cong_avoid(tcp, ack, acked)
    }
    fn pkts_acked(&mut self, _tcp: &mut Tcp, s: &AckSample) {
        self.push(format!("pkts_acked({})", s.pkts_acked));
    }
    fn ssthresh(&mut self, tcp: &mut Tcp) -> u32 {
        self.push(format!("ssthresh(state={:?})", tcp.ca_state));
        self.inner.ssthresh(tcp)
    }
    fn undo_cwnd(&mut self, tcp: &mut Tcp) -> u32 {
        self.push(format!("undo_cwnd(state={:?})", tcp.ca_state));
        self.inner.undo_cwnd(tcp)
    }
    fn set_state(&mut self, tcp: &mut Tcp, s: CaState) {
        self.push(format!("set_state({:?}->{:?})", tcp.ca_state, s));
    }
    fn cwnd_event(&mut self, _tcp: &mut Tcp, e: CaEvent) {
        self.push(format!("cwnd_event({e:?})"));
    }
    fn status(&self, tcp: &Tcp) -> Status {
        self.inner.status(tcp)
    }
}

fn logged(cfg: TestPath, cong_control: bool) -> (Driver<Logged>, Rc<RefCell<Vec<String>>>) {
    let log = Rc::new(RefCell::new(Vec::new()));
    let l2 = log.clone();
    let d = Driver::new(cfg, move |_| Logged {
        inner: Reno::default(),
        cong_control,
        log: l2,
    });
    (d, log)
}

fn pos(log: &[String], pat: &str) -> usize {
    log.iter()
        .position(|s| s.starts_with(pat))
        .unwrap_or_else(|| panic!("{pat} not in {log:?}"))
}

#[test]
fn reno_bulk_fills_the_bottleneck_and_sees_drop_tail_losses() {
    let cfg = TestPath::default();
    let capacity = cfg.rate_bps / 8 / u64::from(cfg.mss) * 10; // packets in 10 s
    let mut d = Driver::with_algorithm(cfg, Algorithm::Reno, 1);
    d.run_for(Duration::from_secs(10));
    let delivered = d.sender.tcp.delivered;
    assert!(delivered <= capacity + 1, "{delivered} > {capacity}");
    assert!(
        delivered * 100 > capacity * 85,
        "utilization {delivered}/{capacity}"
    );
    assert!(
        d.stats().dropped_queue > 0,
        "a 100-packet queue overflows under Reno"
    );
    assert!(d.sender.stats.recoveries > 0);
    assert!(d.trace().iter().all(|e| e.cwnd >= 1));
    // Reno halves on loss: some consecutive ACK trace entries show a recovery
    // that ends with cwnd == ssthresh.
    assert!(
        d.trace()
            .windows(2)
            .any(|w| w[0].ca_state == CaState::Recovery
                && w[1].ca_state == CaState::Open
                && w[1].cwnd == w[1].ssthresh)
    );
}

#[test]
fn rtt_and_min_rtt_match_the_path() {
    let cfg = TestPath {
        queue_limit: 1000,
        app: App::OnOff {
            burst: 5,
            idle: Duration::from_millis(100),
        },
        ..TestPath::default()
    };
    let ser = cfg.serialization();
    let mut d = Driver::with_algorithm(cfg, Algorithm::Reno, 1);
    d.run_for(Duration::from_secs(1));
    let min = d.sender.tcp.min_rtt.unwrap();
    assert_eq!(min, Duration::from_millis(40) + ser);
    assert!(d.sender.tcp.srtt >= min);
}

#[test]
fn one_drop_gives_one_fast_recovery_with_prr_and_no_rto() {
    let cfg = TestPath {
        queue_limit: 1000,
        ..TestPath::default()
    };
    let mut d = Driver::with_algorithm(cfg, Algorithm::Reno, 1).with_loss(drop_packets([30]));
    d.run_for(Duration::from_secs(2));
    let s = d.sender.stats;
    assert_eq!(s.recoveries, 1);
    assert_eq!(s.retransmits, 1);
    assert_eq!(s.rtos, 0);
    assert_eq!(d.sender.tcp.lost, 1);
    let first_rec = d
        .trace()
        .iter()
        .position(|e| e.ca_state == CaState::Recovery)
        .unwrap();
    let prior = &d.trace()[first_rec - 1];
    let rec = &d.trace()[first_rec];
    assert_eq!(
        rec.ssthresh,
        (prior.cwnd / 2).max(2),
        "Reno halves cwnd at entry"
    );
    // PRR: cwnd during recovery never exceeds the pre-loss window.
    assert!(
        d.trace()[first_rec..]
            .iter()
            .take_while(|e| e.ca_state == CaState::Recovery)
            .all(|e| e.cwnd <= prior.cwnd)
    );
}

#[test]
fn tail_loss_ends_in_rto_then_loss_state_then_open() {
    let cfg = TestPath {
        app: App::OnOff {
            burst: 20,
            idle: Duration::from_secs(5),
        },
        ..TestPath::default()
    };
    let mut d = Driver::with_algorithm(cfg, Algorithm::Reno, 1).with_loss(drop_packets([19]));
    d.run_for(Duration::from_secs(3));
    assert_eq!(d.sender.stats.rtos, 1);
    let rto = d.trace().iter().find(|e| e.kind == EventKind::Rto).unwrap();
    assert_eq!(rto.ca_state, CaState::Loss);
    assert_eq!(rto.cwnd, 1, "in_flight (0 after marking all lost) + 1");
    // RTO = 1 s initial? No: srtt is known by then, so srtt + 200 ms floor.
    assert!(rto.t_us > 200_000 && rto.t_us < 400_000, "{}", rto.t_us);
    assert_eq!(d.sender.tcp.ca_state, CaState::Open);
    assert_eq!(d.sender.tcp.packets_out, 0);
    assert_eq!(d.receiver.rcv_nxt(), 20);
}

#[test]
fn call_order_follows_linux_for_cong_avoid_controllers() {
    let cfg = TestPath {
        queue_limit: 1000,
        ..TestPath::default()
    };
    let (d, log) = logged(cfg, false);
    let mut d = d.with_loss(drop_packets([12]));
    d.run_for(Duration::from_millis(200));
    let log = log.borrow();
    // The first send raises TX_START.
    assert_eq!(log[0], "cwnd_event(TxStart)");
    // Recovery entry: ssthresh() is asked while still Open/Disorder, then set_state.
    let ss = pos(&log, "ssthresh(state=Disorder)");
    assert_eq!(log[ss + 1], "set_state(Disorder->Recovery)");
    // ...after pkts_acked for that ACK, and with no cong_avoid during recovery.
    assert!(log[ss - 1].starts_with("pkts_acked"));
    let exit = pos(&log, "set_state(Recovery->Open)");
    assert!(!log[ss..exit].iter().any(|s| s == "cong_avoid"));
    assert_eq!(log[exit + 1], "cwnd_event(CompleteCwr)");
}

#[test]
fn call_order_follows_linux_for_cong_control_and_rto() {
    let cfg = TestPath {
        app: App::OnOff {
            burst: 20,
            idle: Duration::from_secs(5),
        },
        ..TestPath::default()
    };
    let (d, log) = logged(cfg, true);
    let mut d = d.with_loss(drop_packets([19]));
    d.run_for(Duration::from_secs(1));
    let log = log.borrow();
    // Every ACK: pkts_acked then cong_control; never cong_avoid.
    assert!(!log.iter().any(|s| s == "cong_avoid"));
    let first = pos(&log, "pkts_acked");
    assert!(log[first + 1].starts_with("cong_control"));
    // RTO: ssthresh, CA_EVENT_LOSS, set_state(Loss) in that order.
    let ss = pos(&log, "ssthresh(");
    assert_eq!(log[ss + 1], "cwnd_event(Loss)");
    assert!(log[ss + 2].ends_with("->Loss)"), "{}", log[ss + 2]);
    // Loss ends when the retransmission is ACKed; no CompleteCwr for cong_control.
    assert!(log.iter().any(|s| s == "set_state(Loss->Open)"));
    assert!(!log.iter().any(|s| s == "cwnd_event(CompleteCwr)"));
}

#[test]
fn pacing_spaces_packets_at_the_pacing_rate() {
    let cfg = TestPath {
        pacing: Pacing::On,
        queue_limit: 1000,
        ..TestPath::default()
    };
    let mut d = Driver::with_algorithm(cfg, Algorithm::Reno, 1);
    d.run_for(Duration::from_secs(1));
    assert!(d.sender.tcp.pacing_rate > 0);
    // Paced Reno never builds a queue burst: the departure time is ahead of now
    // by at most one cwnd at the pacing rate.
    assert!(d.sender.tcp.departure_time >= d.now() - Duration::from_secs(1));
    assert_eq!(d.stats().dropped_queue, 0);
}

#[test]
fn delayed_acks_halve_the_ack_count_until_loss() {
    let cfg = TestPath {
        ack_every: 2,
        queue_limit: 1000,
        ..TestPath::default()
    };
    let mut d = Driver::with_algorithm(cfg, Algorithm::Reno, 1);
    d.run_for(Duration::from_secs(3));
    // Before the first loss every ACK covers two packets, except at most one
    // delayed-ACK timer expiry per round (odd flight sizes) and the first
    // 16 segments, ACKed one by one in quick-ACK mode (`TCP_MAX_QUICKACKS`).
    let clean: Vec<_> = d.trace().iter().take_while(|e| e.lost == 0).collect();
    let last = clean.last().unwrap();
    assert!(last.delivered > 1000, "{}", last.delivered);
    let acks = clean.len() as u64;
    assert!(
        acks * 2 >= last.delivered,
        "{acks} ACKs for {}",
        last.delivered
    );
    assert!(
        acks * 2
            <= last.delivered
                + 2 * last.round
                + u64::from(crate::transport::receiver::MAX_QUICKACKS),
        "{acks} ACKs for {}",
        last.delivered
    );
    // Once SACK holes exist, every packet is ACKed at once (RFC 5681 §4.2).
    let lossy: Vec<_> = d
        .trace()
        .iter()
        .skip_while(|e| e.lost == 0)
        .take(20)
        .collect();
    assert!(
        lossy
            .windows(2)
            .all(|w| w[1].delivered - w[0].delivered <= 1 || w[1].ca_state == CaState::Open)
    );
}

#[test]
fn ecn_marks_put_reno_into_cwr_without_loss() {
    let cfg = TestPath {
        queue_limit: 1000,
        ecn_threshold: Some(20),
        ..TestPath::default()
    };
    let mut d = Driver::with_algorithm(cfg, Algorithm::Reno, 1);
    d.run_for(Duration::from_secs(5));
    assert!(d.stats().ce_marked > 0);
    assert_eq!(d.sender.tcp.lost, 0);
    assert!(d.trace().iter().any(|e| e.ca_state == CaState::Cwr));
    assert!(d.sender.tcp.delivered_ce > 0);
    assert!(
        d.stats().max_queue < 60,
        "ECN keeps the queue near the threshold"
    );
}

#[test]
fn runs_are_deterministic() {
    let run = || {
        let cfg = TestPath::default();
        let mut d = Driver::with_algorithm(cfg, Algorithm::Reno, 7).with_loss(random_loss(0.01, 3));
        d.run_for(Duration::from_secs(3));
        d.trace().to_vec()
    };
    assert_eq!(run(), run());
}

#[test]
fn observer_sees_every_ack_with_valid_samples() {
    let seen = Rc::new(RefCell::new((0u64, 0u64)));
    let s2 = seen.clone();
    let mut d =
        Driver::with_algorithm(TestPath::default(), Algorithm::Reno, 1).with_observer(move |v| {
            let mut s = s2.borrow_mut();
            s.0 += 1;
            if v.rs.interval.is_some() {
                s.1 += 1;
            }
        });
    d.run_for(Duration::from_secs(1));
    let (acks, valid) = *seen.borrow();
    assert_eq!(acks as usize, d.trace().len());
    assert!(valid * 10 >= acks * 9, "{valid} of {acks} samples valid");
}

#[test]
fn idle_longer_than_rto_restarts_cwnd_unless_disabled() {
    let run = |restart: bool| {
        let cfg = TestPath {
            queue_limit: 1000,
            app: App::OnOff {
                burst: 300,
                idle: Duration::from_secs(2),
            },
            slow_start_after_idle: restart,
            ..TestPath::default()
        };
        let mut d = Driver::with_algorithm(cfg, Algorithm::Reno, 1);
        d.run_for(Duration::from_millis(2500));
        // Last ACK of the first burst, first ACK of the second.
        let tr = d.trace();
        let gap = tr
            .windows(2)
            .position(|w| w[1].t_us - w[0].t_us > 1_000_000)
            .unwrap();
        (tr[gap].cwnd, tr[gap + 1].cwnd, tr[gap + 1].ssthresh)
    };
    let (before, after, ssthresh) = run(true);
    assert!(before > 40, "cwnd grew in the first burst: {before}");
    // 2 s idle ≈ 8 RTOs: halved down to the initial window (+1 for the ACK).
    assert_eq!(after, 11);
    assert!(
        ssthresh >= before * 3 / 4,
        "tcp_current_ssthresh keeps 3/4 of cwnd"
    );
    let (before, after, _) = run(false);
    assert!(after >= before, "no restart: {before} -> {after}");
}

#[test]
fn spurious_recovery_is_undone_with_undo_cwnd_before_open() {
    let cfg = TestPath {
        queue_limit: 1000,
        ..TestPath::default()
    };
    let (d, log) = logged(cfg.clone(), false);
    let mut d = d.with_loss(drop_packets([30]));
    d.sender.mark_spurious();
    d.run_for(Duration::from_secs(1));
    assert_eq!(d.sender.stats.undos, 1);
    let log = log.borrow();
    let undo = pos(&log, "undo_cwnd(state=Recovery)");
    assert_eq!(log[undo + 1], "set_state(Recovery->Open)");
    assert!(
        !log.iter().any(|s| s == "cwnd_event(CompleteCwr)"),
        "undo skips tcp_end_cwnd_reduction"
    );

    // Reno: cwnd comes back to the pre-loss window, ssthresh to its old value.
    let mut d = Driver::with_algorithm(cfg, Algorithm::Reno, 1).with_loss(drop_packets([30]));
    d.sender.mark_spurious();
    d.run_for(Duration::from_secs(1));
    let tr = d.trace();
    let entry = tr
        .iter()
        .position(|e| e.ca_state == CaState::Recovery)
        .unwrap();
    let exit = entry
        + tr[entry..]
            .iter()
            .position(|e| e.ca_state == CaState::Open)
            .unwrap();
    assert!(
        tr[exit].cwnd >= tr[entry - 1].cwnd,
        "{} < {}",
        tr[exit].cwnd,
        tr[entry - 1].cwnd
    );
    assert!(tr[exit].ssthresh > tr[entry].ssthresh);
}

#[test]
fn rtt_samples_follow_clean_rtx_queue_and_karn() {
    use crate::transport::{AckPacket, MAX_SACK_BLOCKS};
    let ms = |n: u64| Instant::from_micros(n * 1000);
    let cfg = SenderConfig {
        app_writes: true,
        ..SenderConfig::bulk(1000)
    };
    let mut s = Sender::new(0, cfg, Instant::ZERO, Reno::new);
    let mut out = Vec::new();
    let mut send_at = |s: &mut Sender<Reno>, t: u64| {
        s.write(1);
        s.try_send(ms(t), &mut out);
    };
    for t in 0..4 {
        send_at(&mut s, t);
    }
    let ack = |cum: u64, sacks: &[(u64, u64)]| {
        let mut blocks = [(0, 0); MAX_SACK_BLOCKS];
        blocks[..sacks.len()].copy_from_slice(sacks);
        AckPacket {
            flow: 0,
            cum,
            sacks: blocks,
            nsacks: sacks.len() as u8,
            ece: false,
        }
    };
    // A stretch ACK of packets 0..=2 at 50 ms: srtt from the earliest
    // (sent at 0: 50 ms), rs.rtt and min_rtt from the latest (sent at 2: 48 ms).
    let mut sink = Vec::new();
    let o = s.on_ack(ms(50), &ack(3, &[]), &mut sink);
    assert_eq!(s.tcp.srtt, Duration::from_millis(50));
    assert_eq!(o.rs.rtt, Some(Duration::from_millis(48)));
    assert_eq!(s.tcp.min_rtt, Some(Duration::from_millis(48)));
    // RTO: packet 3 is retransmitted at once; its ACK gives no RTT (Karn).
    s.on_rto(ms(400), &mut sink);
    assert_eq!(sink.last().map(|p| (p.seg, p.retrans)), Some((3, true)));
    let o = s.on_ack(ms(450), &ack(4, &[]), &mut sink);
    assert_eq!(o.rs.rtt, None);
    assert_eq!(s.tcp.srtt, Duration::from_millis(50));
    // SACK-only ACKs: both samples from the SACKed packets.
    s.tcp.snd_cwnd = 10;
    for t in 0..3 {
        send_at(&mut s, 500 + t);
    }
    let o = s.on_ack(ms(560), &ack(4, &[(5, 7)]), &mut sink);
    assert_eq!(
        o.rs.rtt,
        Some(Duration::from_millis(58)),
        "latest SACKed, sent at 502"
    );
    // srtt moved towards the earliest SACKed (sent at 501: 59 ms), with
    // tcp_rtt_estimator's gain 1/8.
    assert_eq!(
        s.tcp.srtt,
        (Duration::from_millis(50) * 7 + Duration::from_millis(59)) / 8
    );
}

#[test]
fn tail_loss_probe_repairs_a_tail_loss_and_reports_tlp_recovery() {
    let cfg = TestPath {
        app: App::OnOff {
            burst: 20,
            idle: Duration::from_millis(300),
        },
        tlp: true,
        ..TestPath::default()
    };
    let (d, log) = logged(cfg, false);
    let mut d = d.with_loss(drop_packets([19]));
    d.run_for(Duration::from_secs(1));
    assert_eq!((d.sender.stats.rtos, d.sender.stats.tlps), (0, 1));
    assert_eq!(d.sender.stats.retransmits, 1);
    let log = log.borrow();
    // The ACK beyond the probe (the next burst) shows it repaired a loss:
    // CA_EVENT_TLP_RECOVERY, then one cwnd reduction through CWR.
    let tlp = pos(&log, "cwnd_event(TlpRecovery)");
    assert!(log[tlp + 1].starts_with("ssthresh("), "{}", log[tlp + 1]);
    assert_eq!(log[tlp + 2], "set_state(Open->Cwr)");
    assert_eq!(log[tlp + 3], "cwnd_event(CompleteCwr)");
    assert!(
        log[tlp + 4].starts_with("set_state(Cwr->"),
        "{}",
        log[tlp + 4]
    );
}
