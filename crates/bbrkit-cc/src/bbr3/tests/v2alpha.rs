//! `bbr2` follows google/bbr v2alpha (`tcp_bbr2.c`) where its logic
//! differs from v3: each test drives a v2 and a v3 controller through the
//! same ACKs and shows the difference `v2alpha.rs` lists.

use super::*;

fn both() -> [Synth; 2] {
    [Synth::new(Bbr3Params::v2()), Synth::new(Bbr3Params::v3())]
}

/// `bbr2_update_cycle_phase`: PROBE_UP ends once, after at least one
/// min_rtt in UP, inflight reached 1.25·BDP (a queue is building). v3
/// keeps probing until the bandwidth plateaus.
#[test]
fn probe_up_ends_when_a_queue_builds_in_v2alpha_not_in_v3() {
    for (i, mut s) in both().into_iter().enumerate() {
        s.go_up();
        let queue = s.bbr.inflight(
            &s.tcp,
            s.bbr.max_bw(),
            super::super::v2alpha::BW_PROBE_PIF_GAIN,
        );
        for _ in 0..2 {
            s.ack(A {
                dt: Duration::from_millis(6),
                ..A::inflight(queue + 5)
            });
        }
        let expect = if i == 0 {
            State::ProbeBwDown
        } else {
            State::ProbeBwUp
        };
        assert_eq!(s.state(), expect, "{}: steps {:?}", s.bbr.name(), s.steps);
    }
}

/// v1's full-pipe detector in v2alpha: `max_bw` compared at round starts,
/// so a mid-round sample 30 % higher restarts the count one round later
/// than v3's per-ACK comparison does.
#[test]
fn a_mid_round_bw_jump_delays_the_full_pipe_one_round_more_in_v2alpha() {
    let rounds_to_drain = |mut s: Synth| {
        s.round(10, A::inflight(50));
        s.round(10, A::inflight(50));
        s.ack(A {
            new_round: true,
            ..A::inflight(50)
        });
        s.ack(A::rate(13_000, 50)); // mid-round: +30 %
        let mut n = 0;
        while s.state() == State::Startup {
            s.round(10, A::inflight(400)); // a queue: DRAIN stays
            n += 1;
            assert!(n < 10, "no full pipe: {:?}", s.steps);
        }
        n
    };
    let [v2, v3] = both();
    assert_eq!(rounds_to_drain(v2), rounds_to_drain(v3) + 1);
}

/// `bbr2_handle_queue_too_high_in_startup`: a loss exit from STARTUP
/// remembers the BDP as inflight_hi; v3 takes the larger of it and what
/// the last round delivered.
#[test]
fn startup_loss_exit_sets_inflight_hi_to_the_bdp_in_v2alpha() {
    // A loss round of 8 events whose samples delivered more than a BDP.
    let loss_round = |params| {
        let mut s = Synth::new(params);
        s.round(4, A::rate(1000, 100));
        s.round(4, A::rate(2000, 100));
        s.tcp.ca_state = CaState::Recovery;
        s.round(1, A::rate(4000, 100));
        for _ in 0..8 {
            s.ack(A {
                acked: 30,
                losses: 1,
                ..A::rate(5000, 100)
            });
        }
        s.ack(A {
            new_round: true,
            lost: 3,
            ..A::rate(5000, 100)
        });
        s
    };
    let [v2, v3] = [loss_round(Bbr3Params::v2()), loss_round(Bbr3Params::v3())];
    for s in [&v2, &v3] {
        assert_eq!(s.state(), State::Drain, "{}", s.bbr.name());
    }
    let bdp = |s: &Synth| s.bbr.inflight(&s.tcp, s.bbr.max_bw(), BBR_UNIT);
    assert_eq!(v2.bbr.inflight_hi, bdp(&v2));
    assert!(
        v3.bbr.inflight_hi > bdp(&v3),
        "v3 keeps the round's larger delivered volume: {} vs BDP {}",
        v3.bbr.inflight_hi,
        bdp(&v3)
    );
}

/// `bbr_update_min_rtt` of v2alpha refreshes the PROBE_RTT clock on an RTT
/// equal to the window's minimum (`<=`); v3 only on a lower one (`<`).
#[test]
fn an_equal_rtt_postpones_probe_rtt_in_v2alpha_only() {
    for (i, mut s) in both().into_iter().enumerate() {
        s.ack(A::rtt_ms(10));
        let stamp = s.bbr.probe_rtt_min_stamp;
        s.ack(A {
            dt: Duration::from_millis(50),
            ..A::rtt_ms(10)
        });
        let refreshed = s.bbr.probe_rtt_min_stamp > stamp;
        assert_eq!(refreshed, i == 0, "{}", s.bbr.name());
    }
}

/// `bbr2_probe_inflight_hi_upward` drops credit gathered while the flow
/// was not using all of inflight_hi; v3 keeps it.
#[test]
fn unused_up_credit_is_dropped_in_v2alpha() {
    for (i, mut s) in both().into_iter().enumerate() {
        s.go_up();
        s.bbr.inflight_hi = 500;
        s.bbr.bw_probe_up_acks = 7;
        s.tcp.is_cwnd_limited = false;
        s.ack(A::inflight(100));
        let kept = if i == 0 { 0 } else { 7 };
        assert_eq!(s.bbr.bw_probe_up_acks, kept, "{}", s.bbr.name());
    }
}

/// `bbr2_set_state`: an RTO outside probing starts inflight_lo from the
/// cwnd before the loss episode (prior_cwnd); v3 from the larger of it and
/// the current cwnd.
#[test]
fn an_rto_starts_inflight_lo_from_prior_cwnd_in_v2alpha() {
    for (i, mut s) in both().into_iter().enumerate() {
        s.go_cruise();
        s.bbr.prior_cwnd = 50;
        s.tcp.snd_cwnd = 80;
        s.bbr.inflight_lo = INF;
        s.bbr.set_state(&mut s.tcp, CaState::Loss);
        let lo = if i == 0 { 50 } else { 80 };
        assert_eq!(s.bbr.inflight_lo, lo, "{}", s.bbr.name());
    }
}

/// `bbr2_undo_cwnd` leaves the fast path as it is; v3's takes the slow
/// path to set cwnd and pacing.
#[test]
fn undo_keeps_the_fast_path_in_v2alpha() {
    for (i, mut s) in both().into_iter().enumerate() {
        s.go_cruise();
        s.bbr.try_fast_path = true;
        s.bbr.undo_cwnd(&mut s.tcp);
        assert_eq!(s.bbr.try_fast_path, i == 0, "{}", s.bbr.name());
    }
}

/// v2alpha's `bbr_min_tso_segs`: one-segment bursts below 1.2 Mbit/s of
/// pacing; v3 (`tcp_min_tso_segs`) never fewer than two.
#[test]
fn slow_flows_send_single_segments_in_v2alpha() {
    for (i, mut s) in both().into_iter().enumerate() {
        s.bbr.min_rtt_us = 200_000; // no RTT allowance
        s.tcp.pacing_rate = 100_000; // 0.8 Mbit/s
        assert_eq!(s.bbr.tso_segs(&s.tcp), Some(if i == 0 { 1 } else { 2 }));
        s.tcp.pacing_rate = 200_000; // 1.6 Mbit/s
        assert_eq!(s.bbr.tso_segs(&s.tcp), Some(2), "{}", s.bbr.name());
    }
}

/// `bbr2_update_ecn_alpha` follows the CE ratio whenever `ecn_factor` is
/// set, eligible or not, and `bbr2_main` notes ECE in the round without the
/// eligibility gate; v3 does neither on a route without ECN_LOW.
#[test]
fn ecn_alpha_and_ecn_in_round_move_without_eligibility_in_v2alpha() {
    for (i, mut s) in both().into_iter().enumerate() {
        s.ack(A {
            delivered_ce: 5,
            ..A::default()
        });
        assert_eq!(s.bbr.ecn_in_round, i == 0, "{}", s.bbr.name());
        s.round(1, A::default());
        assert!(!s.bbr.ecn_eligible());
        let moved = s.bbr.ecn_alpha() < 1.0;
        assert_eq!(
            moved,
            i == 0,
            "{}: alpha {}",
            s.bbr.name(),
            s.bbr.ecn_alpha()
        );
    }
}

/// `bbr2_main` has no separate latest-delivery step: an app-limited ACK on
/// the fast path does not start a loss round; v3's does.
#[test]
fn the_fast_path_skips_the_loss_round_in_v2alpha() {
    for (i, mut s) in both().into_iter().enumerate() {
        s.go_cruise();
        s.bbr.try_fast_path = true;
        s.bbr.loss_round_start = false;
        s.ack(A {
            new_round: true,
            app_limited: true,
            ..A::rate(5_000, 50)
        });
        assert!(s.bbr.try_fast_path, "{}: fast path taken", s.bbr.name());
        assert_eq!(s.bbr.loss_round_start, i == 1, "{}", s.bbr.name());
    }
}

/// `bbr2_adapt_lower_bounds` cuts `inflight_lo` on ECN only when
/// `ecn_eligible`, which v2alpha's default `bbr_ecn_enable = 0` never sets;
/// v3 notes ECE only when eligible. Eligible (v2alpha with
/// `bbr_ecn_enable`, v3 on an ECN_LOW route), both cut. The BPF object's
/// `ce_marks_cut_inflight_lo_only_when_ecn_eligible` (issue 30 #1).
#[test]
fn ce_marks_cut_inflight_lo_only_when_ecn_eligible() {
    for eligible in [false, true] {
        for mut s in both() {
            s.go_cruise();
            s.bbr.ecn_eligible = eligible;
            s.bbr.inflight_lo = INF;
            // CE on the ACK that ends the loss round (before v3's ECN
            // reprobe would move an eligible flow to REFILL).
            s.ack(A {
                new_round: true,
                delivered_ce: 5,
                ..A::inflight(50)
            });
            let cut = s.bbr.inflight_lo < INF;
            assert_eq!(cut, eligible, "{}: eligible {eligible}", s.bbr.name());
        }
    }
}
