//! The emulator's verdict on a run: whether its own account (late frames,
//! frames dropped outside the emulated link) makes the run untrustworthy,
//! and which emulator a condition runs on under `auto`.
//!
//! Owns the thresholds; pure functions of the emulator's report. Must never
//! start or stop anything.

use bbrkit_vocab::PathConditions;

use crate::emulator::forwarder::ForwarderStats;
use crate::emulator::{EmulatorKind, EmulatorReport};

/// More than this fraction of frames late: the emulator is at its ceiling
/// (a repeat will find it there again).
const CEILING_LATE: f64 = 0.25;
/// More than this fraction of frames late: a CPU stall or an emulator near
/// its ceiling (a repeat may help).
const SPOILED_LATE: f64 = 0.10;
/// More than this fraction of a direction's frames dropped outside the
/// emulated link spoils the run.
const OWN_DROPS: f64 = 0.001;

/// Why a run's emulator report makes it untrustworthy, if it does, and
/// whether repeating it can help (a stall may not recur; an emulator at its
/// ceiling will be there again).
pub fn spoiled(rep: &EmulatorReport) -> Option<(String, bool)> {
    // The direction that holds frames (the data one, or the ACK one in the
    // split emulator) is the one whose lateness matters; judge the worse.
    let late_of = |d: &ForwarderStats| {
        if d.frames_out > 0 {
            d.late_frames as f64 / d.frames_out as f64
        } else {
            0.0
        }
    };
    let (d, late) = [&rep.data, &rep.reverse]
        .into_iter()
        .map(|d| (d, late_of(d)))
        .fold((&rep.data, 0.0), |a, b| if b.1 > a.1 { b } else { a });
    // Own drops are judged per direction: ACKs are a few percent of the
    // frames, so pooling them with the data would hide a forwarder dropping
    // many of them.
    let own = |d: &ForwarderStats| d.kernel_drops + d.overflow_drops;
    let own_drops = own(&rep.data) + own(&rep.reverse);
    let too_many_own = [&rep.data, &rep.reverse]
        .into_iter()
        .any(|d| d.frames_in > 0 && own(d) as f64 > OWN_DROPS * d.frames_in as f64);
    if late > CEILING_LATE {
        return Some((
            format!(
                "emulator at its ceiling: {:.0}% of frames > {} µs late, {own_drops} dropped outside the link",
                late * 100.0,
                d.late_us_threshold
            ),
            false,
        ));
    }
    if too_many_own {
        return Some((
            format!(
                "{own_drops} frames dropped outside the emulated link (the emulator's buffers \
                 or a kernel receive backlog)"
            ),
            true,
        ));
    }
    if late > SPOILED_LATE {
        return Some((
            format!(
                "{} of {} frames delivered > {} µs late (CPU stall or emulator near its ceiling)",
                d.late_frames, d.frames_out, d.late_us_threshold
            ),
            true,
        ));
    }
    None
}

/// The emulator for `cond` when the plan asked for `requested` and the
/// kernel resolved it to `resolved`. Under `auto`, a condition with a rate
/// limit runs on the userspace emulator instead of split: its link model
/// serialises each frame exactly, and against the simulator (`bbrkit sim`,
/// BBRv1, 500 Mbit/s, 10 ms, 1 BDP: 1 024 drops, RTT p50 12.6 ms) it gave
/// BBR 1 018–1 530 drops and 12.6–13.0 ms, while split's `tbf` gave
/// 6 599–9 929 drops and 18–19 ms (CUBIC agreed on all three); at
/// 1 Gbit/s on 2 cores split also left the sender CPU-bound before the
/// queue formed. Rated links rarely need more than the userspace
/// emulator's 2.5–3.8 Gbit/s; `--emulator split` still forces split.
pub fn condition_emulator(
    requested: EmulatorKind,
    resolved: EmulatorKind,
    cond: &PathConditions,
) -> EmulatorKind {
    if requested == EmulatorKind::Auto && resolved == EmulatorKind::Split && cond.rate_bps.is_some()
    {
        EmulatorKind::Userspace
    } else {
        resolved
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn spoiled_runs_are_recognised() {
        let mut rep = EmulatorReport::default();
        rep.data.frames_in = 1000;
        rep.data.frames_out = 1000;
        assert_eq!(spoiled(&rep), None);
        rep.data.late_frames = 200;
        let (why, retry) = spoiled(&rep).unwrap();
        assert!(why.contains("late") && retry, "{why}");
        rep.data.late_frames = 300;
        let (why, retry) = spoiled(&rep).unwrap();
        assert!(why.contains("ceiling") && !retry, "{why}");
        rep.data.late_frames = 0;
        rep.data.kernel_drops = 5;
        let (why, retry) = spoiled(&rep).unwrap();
        assert!(why.contains("dropped") && retry, "{why}");
    }

    #[test]
    fn auto_runs_rated_conditions_on_the_userspace_emulator() {
        let cond = |rate_bps| PathConditions {
            rate_bps,
            ..PathConditions::new(Duration::from_millis(10), 0.02)
        };
        use EmulatorKind::*;
        assert_eq!(condition_emulator(Auto, Split, &cond(None)), Split);
        assert_eq!(
            condition_emulator(Auto, Split, &cond(Some(1_000_000_000))),
            Userspace
        );
        assert_eq!(
            condition_emulator(Split, Split, &cond(Some(1_000_000_000))),
            Split
        );
        assert_eq!(
            condition_emulator(Auto, Netem, &cond(Some(1_000_000_000))),
            Netem
        );
        assert_eq!(condition_emulator(Auto, Userspace, &cond(None)), Userspace);
    }

    #[test]
    fn late_acks_spoil_a_split_run() {
        // Split emulator: the data direction holds nothing (no lateness),
        // the ACK direction carries the delay.
        let mut rep = EmulatorReport::default();
        rep.data.frames_in = 100_000;
        rep.data.frames_out = 98_000;
        rep.reverse.frames_in = 10_000;
        rep.reverse.frames_out = 10_000;
        rep.reverse.late_frames = 50;
        assert_eq!(spoiled(&rep), None, "0.5% late ACKs are fine");
        rep.reverse.late_frames = 1_500;
        let (why, retry) = spoiled(&rep).unwrap();
        assert!(why.contains("1500 of 10000") && retry, "{why}");
        rep.reverse.late_frames = 0;
        rep.reverse.overflow_drops = 20;
        let (why, _) = spoiled(&rep).unwrap();
        assert!(
            why.contains("20 frames"),
            "0.2% of the ACKs, though 0.02% of all frames: {why}"
        );
    }
}
