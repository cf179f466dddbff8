//! The run of a trial: attach the program (a link that is never pinned,
//! so it dies with the process: SIGKILL leaves nothing attached), read
//! its close records on a thread of their own, look at the statistics
//! every `look_every`, apply a guardrail decision, stop, sample what is
//! still open, detach, read the last records, and report.
//!
//! ```text
//!   main thread                                   reader thread
//!   attach ─────────────────────────────────────► Records::new(ring)
//!   loop  ◄── batches (channel) ──────────────── poll(100 ms) until told to stop
//!     take (Intake) │ tick every 1 s │ look every look_every:
//!       report (sequential, 200 resamples) → trips? again as the final report (its resamples)
//!         → guardrail? set_weights → event → confident?
//!     until: --duration, --until-confident (or a guardrail), --max-duration, cancel
//!   census of open connections → detach the link → stop the reader ──► drain() last records
//!   last records (their cookies reconcile the census) → open samples → final report
//! ```
//!
//! The final interval is the fixed horizon's when the trial ran its
//! `--duration` untouched; after any data-dependent stop (confident,
//! a guardrail, Ctrl-C) it is the anytime interval, the one valid then.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

use bbrkit_bpf::BpfError;
use bbrkit_bpf::sockops::records::Records;
use bbrkit_bpf::sockops::{Attachment, Maps, cgroup};
use bbrkit_policy::ConnRecord;
use bbrkit_trial::gates;
use bbrkit_trial::{Decision, Estimand, Look, Mode, Report, Trial};

use crate::LiveError;
use crate::intake::{self, Applied, Intake};
use crate::open::{self, Stamp};
use crate::plan::{Plan, Stop};
use crate::report::{Cohort, LiveInfo, LiveReport, StopReason};

/// What the run tells its caller as it goes.
#[derive(Debug)]
pub enum Event<'a> {
    /// The program is attached (ids in `attachment`).
    Attached(&'a LiveInfo),
    /// Every second: time so far and records taken.
    Tick {
        /// Since the attach.
        elapsed: Duration,
        /// Closed connections the statistics hold.
        closed: u64,
    },
    /// Records as the statistics take them (closed ones as they arrive,
    /// then the open ones sampled at the end), before the intake's filter.
    Records(&'a [ConnRecord]),
    /// Every `look_every`: the running estimate (sequential).
    Look(&'a LiveReport),
    /// A guardrail decision was just applied to the split.
    Guardrail(&'a Applied),
    /// Stopping: sampling open connections, detaching.
    Ending(StopReason),
}

/// Resamples of a progress look: its anytime interval's SE comes from
/// the draws' interquartile range, which a few hundred estimate well
/// (`bbrkit_trial::Look::resamples`).
const LOOK_RESAMPLES: usize = 200;
/// The mode a guardrail decision is made in: the final report's after a
/// guardrail ([`final_mode`]), so both compute the same interval.
const DECISION_MODE: Mode = Mode::Sequential;
/// How often the caller hears the time and the count.
const TICK: Duration = Duration::from_secs(1);
/// How long the reader waits for records before looking at its stop flag.
const READER_POLL: Duration = Duration::from_millis(100);

/// Runs the trial `plan` until it ends or `cancel` is set, then reports.
/// Whatever happens, the program is detached when this returns.
pub fn run(
    plan: &Plan,
    cancel: &AtomicBool,
    on: &mut dyn FnMut(Event<'_>),
) -> Result<LiveReport, LiveError> {
    let mut live = Live::new(plan)?;
    live.info.other_programs = cgroup::sock_ops_programs(&plan.cgroup, true)?;
    let att = Attachment::attach_with_ring(&plan.compiled, &plan.cgroup, Some(plan.ring_bytes))?;
    live.start(att.describe()?);
    on(Event::Attached(&live.info));
    let stop_reader = AtomicBool::new(false);
    let (tx, rx) = channel();
    std::thread::scope(|s| {
        let _stop = SetOnDrop(&stop_reader);
        let reader = s.spawn(|| read_ring(att.maps(), &stop_reader, tx));
        let reason = live.run_until_stop(att.maps(), &rx, cancel, on)?;
        on(Event::Ending(reason));
        let mut open =
            open::sample(&plan.compiled, live.arms_cc(), live.stamp()).map_err(LiveError::Diag)?;
        att.detach_link()?;
        stop_reader.store(true, Ordering::SeqCst);
        live.info.records.malformed = reader.join().map_err(|_| LiveError::Reader)??;
        let mut closed_since = HashSet::new();
        for batch in rx.try_iter() {
            closed_since.extend(live.take(&batch));
            on(Event::Records(&batch));
        }
        open.reconcile(&closed_since);
        live.trial.extend(&open.records);
        on(Event::Records(&open.records));
        live.info.open = Some(open);
        live.finish(att.maps(), reason)
    })
}

/// Sets the flag when dropped (the reader stops on every way out).
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Reads the ring until `stop`, then once more; returns the malformed count.
fn read_ring(
    maps: &Maps,
    stop: &AtomicBool,
    tx: Sender<Vec<ConnRecord>>,
) -> Result<u64, LiveError> {
    let mut records = Records::new(maps)?;
    while !stop.load(Ordering::SeqCst) {
        let batch = records.poll(READER_POLL)?;
        if !batch.is_empty() && tx.send(batch).is_err() {
            return Ok(records.malformed());
        }
    }
    let last = records.drain()?;
    if !last.is_empty() {
        let _ = tx.send(last);
    }
    Ok(records.malformed())
}

/// `CLOCK_MONOTONIC` in ns, the clock of the program's `bpf_ktime_get_ns`.
fn monotonic_ns() -> u64 {
    let t = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .expect("CLOCK_MONOTONIC is always readable");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

/// The time limit of `stop`, if `elapsed` reached it.
pub fn deadline_reached(stop: Stop, elapsed: Duration) -> Option<StopReason> {
    match stop {
        Stop::For(d) if elapsed >= d => Some(StopReason::Duration),
        Stop::UntilConfident { max } if elapsed >= max => Some(StopReason::MaxDuration),
        _ => None,
    }
}

/// Whether `--until-confident` may stop after a look.
pub fn decided(stop: Stop, report: &Report, guarded: bool) -> Option<StopReason> {
    match stop {
        Stop::UntilConfident { .. } if guarded => Some(StopReason::Guardrail),
        Stop::UntilConfident { .. } if report.confident() => Some(StopReason::Confident),
        _ => None,
    }
}

/// The final look's interval: fixed horizon only for a trial that ran its
/// planned duration with the split untouched.
pub fn final_mode(reason: StopReason, guarded: bool) -> Mode {
    if reason == StopReason::Duration && !guarded {
        Mode::FixedHorizon
    } else {
        Mode::Sequential
    }
}

/// A running trial's state.
struct Live<'a> {
    plan: &'a Plan,
    trial: Trial,
    intake: Intake,
    info: LiveInfo,
    start: Instant,
    start_ns: u64,
    /// The estimand, frozen at the first look that had one.
    estimand: Option<Estimand>,
    /// The last look's mark (the attach before any): a report compares
    /// the connections established before it.
    mark: Mark,
    /// The mark of the latest counters read.
    read: Mark,
}

/// When a report read the counters, and the draws it read.
#[derive(Debug, Clone, Copy, Default)]
struct Mark {
    ns: u64,
    s: f64,
    drawn: [u64; 2],
}

impl<'a> Live<'a> {
    fn new(plan: &'a Plan) -> Result<Live<'a>, LiveError> {
        Ok(Live {
            trial: Trial::new(plan.def.clone()).map_err(LiveError::Trial)?,
            intake: Intake::default(),
            info: LiveInfo::new(plan),
            start: Instant::now(),
            start_ns: monotonic_ns(),
            estimand: None,
            mark: Mark::default(),
            read: Mark::default(),
            plan,
        })
    }

    fn start(&mut self, attachment: bbrkit_bpf::sockops::Description) {
        self.info.attachment = Some(attachment);
        self.start = Instant::now();
        self.start_ns = monotonic_ns();
        self.mark = Mark {
            ns: self.start_ns,
            ..Mark::default()
        };
    }

    fn arms_cc(&self) -> [&str; 2] {
        [0, 1].map(|i| self.plan.def.arms[i].cc.as_str())
    }

    fn stamp(&self) -> Stamp {
        Stamp {
            rule: self.plan.scope.rule,
            start_ns: self.start_ns,
            now_ns: monotonic_ns(),
        }
    }

    /// Takes a batch; returns the batch's cookies.
    fn take(&mut self, batch: &[ConnRecord]) -> Vec<u64> {
        let cut = self.info.guardrail.as_ref().map(|g| g.cut_ns);
        for r in batch {
            self.intake
                .take(&mut self.trial, self.plan.scope.rule, cut, r);
        }
        batch.iter().map(|r| r.cookie).collect()
    }

    /// Takes batches, looks and ticks until the trial should stop.
    fn run_until_stop(
        &mut self,
        maps: &Maps,
        rx: &Receiver<Vec<ConnRecord>>,
        cancel: &AtomicBool,
        on: &mut dyn FnMut(Event<'_>),
    ) -> Result<StopReason, LiveError> {
        let every = self.plan.look_every;
        let (mut next_look, mut next_tick) = (self.start + every, self.start + TICK);
        loop {
            let now = Instant::now();
            if cancel.load(Ordering::SeqCst) {
                return Ok(StopReason::Interrupted);
            }
            if let Some(r) = deadline_reached(self.plan.stop, now - self.start) {
                return Ok(r);
            }
            if now >= next_look {
                if let Some(r) = self.look_and_guard(maps, on)? {
                    return Ok(r);
                }
                next_look = Instant::now() + every;
            }
            if now >= next_tick {
                let closed = self.trial.counts().closed;
                on(Event::Tick {
                    elapsed: now - self.start,
                    closed,
                });
                next_tick += TICK;
            }
            let wait = next_look
                .min(next_tick)
                .saturating_duration_since(Instant::now());
            match rx.recv_timeout(wait) {
                Ok(batch) => {
                    self.take(&batch);
                    on(Event::Records(&batch));
                }
                Err(RecvTimeoutError::Timeout) => {}
                // The reader ended early: its error comes from join.
                Err(RecvTimeoutError::Disconnected) => return Ok(StopReason::Interrupted),
            }
        }
    }

    /// One progress look: guardrails applied, the event, maybe a stop.
    fn look_and_guard(
        &mut self,
        maps: &Maps,
        on: &mut dyn FnMut(Event<'_>),
    ) -> Result<Option<StopReason>, LiveError> {
        let mut look = self.report(maps, Mode::Sequential, Some(LOOK_RESAMPLES))?;
        if self.info.guardrail.is_none() && !look.report.decisions.is_empty() {
            // A look that would move the split is made again as the final
            // report is made (sequential, the definition's resamples,
            // the same seed): the decision's reason and the final report
            // then print one interval for the goodput ratio, not the
            // 200-resample one beside the 2000-resample one (issue 32).
            look = self.report(maps, DECISION_MODE, None)?;
        }
        if self.info.guardrail.is_none()
            && let Some(d) = look.report.decisions.first()
        {
            self.apply(maps, d)?;
            if let Some(a) = &self.info.guardrail {
                on(Event::Guardrail(a));
            }
            look.live.guardrail = self.info.guardrail.clone();
        }
        on(Event::Look(&look));
        // The next report compares the connections established before
        // this look (with the draws counted by then).
        self.mark = self.read;
        let guarded = self.info.guardrail.is_some();
        Ok(decided(self.plan.stop, &look.report, guarded))
    }

    /// Rewrites the rule's weights after `d`.
    fn apply(&mut self, maps: &Maps, d: &Decision) -> Result<(), BpfError> {
        let weights = intake::weights_after(&self.plan.def, d);
        // Draws counted just before the cut: every one of them was drawn
        // under the old weights and started before the cut, so its record
        // is compared. A connection drawn between this read and the rewrite
        // is compared but not counted, an omission that does not depend on
        // its arm; counting after the rewrite would add draws under the new
        // weights to the sample-ratio check.
        let counters = maps.counters()?;
        self.info.counters(&counters.stats, &counters.arms);
        let drawn_at_cut = self.info.drawn();
        let cut_ns = monotonic_ns();
        maps.set_weights(usize::from(self.plan.scope.rule), &weights)?;
        self.info.guardrail = Some(Applied {
            decision: d.clone(),
            after_s: self.start.elapsed().as_secs_f64(),
            weights,
            note: intake::note(d),
            drawn_at_cut,
            cut_ns,
        });
        Ok(())
    }

    /// The statistics now, with the live account.
    fn report(
        &mut self,
        maps: &Maps,
        mode: Mode,
        resamples: Option<usize>,
    ) -> Result<LiveReport, LiveError> {
        // Before the counters: a connection of the cohort (established
        // before `ns`) is in the draws read after.
        let ns = monotonic_ns();
        let counters = maps.counters()?;
        self.info.counters(&counters.stats, &counters.arms);
        self.info.elapsed_s = self.start.elapsed().as_secs_f64();
        self.read = Mark {
            ns,
            s: self.info.elapsed_s,
            drawn: self.info.drawn(),
        };
        // The split drew to a guardrail's cut, if any: the draws and the
        // drawing time the stall gate weighs are the ones under the split.
        let (drawn, drawing_s) = match &self.info.guardrail {
            Some(g) => (g.drawn_at_cut, g.after_s),
            None => (self.info.drawn(), self.info.elapsed_s),
        };
        self.info.draws = intake::draws_check(&self.plan.def, drawn);
        self.info.records.intake = self.intake.clone();
        let look = Look {
            seed: self.plan.seed,
            mode,
            duration_s: Some(self.info.elapsed_s),
            resamples,
            estimand: self.estimand.clone(),
            established_before_ns: Some(self.mark.ns),
        };
        let closed = self.trial.closed_durations();
        self.info.gates = gates::check(&self.info.gate_input(
            &self.plan.def,
            drawn,
            closed,
            drawing_s,
        ));
        let mut report = self.trial.report(&look);
        // Frozen at the first report once the trial may stop (its minimum
        // duration): before, it is provisional, and no verdict stops on it.
        if self.estimand.is_none() && self.info.elapsed_s >= self.plan.def.settings.min_stop_s {
            self.estimand = report.estimand.clone();
        }
        self.info.cohort = Some(Cohort {
            established_before_s: self.mark.s,
            drawn: self.mark.drawn,
            compared: report.cohort.as_ref().map_or([0, 0], |c| c.closed),
        });
        gates::apply(&mut report, &self.info.gates);
        Ok(LiveReport {
            report,
            live: self.info.clone(),
        })
    }

    /// The final report.
    fn finish(&mut self, maps: &Maps, reason: StopReason) -> Result<LiveReport, LiveError> {
        self.info.stopped = reason;
        let mode = final_mode(reason, self.info.guardrail.is_some());
        self.report(maps, mode, None)
    }
}

#[cfg(test)]
mod tests {
    use bbrkit_trial::TrialDef;

    use super::*;

    #[test]
    fn time_limits_stop_with_their_reason() {
        let s = Duration::from_secs;
        assert_eq!(deadline_reached(Stop::For(s(60)), s(59)), None);
        assert_eq!(
            deadline_reached(Stop::For(s(60)), s(60)),
            Some(StopReason::Duration)
        );
        let until = Stop::UntilConfident { max: s(600) };
        assert_eq!(deadline_reached(until, s(599)), None);
        assert_eq!(
            deadline_reached(until, s(601)),
            Some(StopReason::MaxDuration)
        );
    }

    #[test]
    fn only_until_confident_stops_on_a_decided_look_or_a_guardrail() {
        let trial = Trial::new(TrialDef::new("cubic", "bbr")).unwrap();
        let empty = trial.report(&Look::new(1, Mode::Sequential));
        assert!(!empty.confident());
        let until = Stop::UntilConfident {
            max: Duration::from_secs(60),
        };
        assert_eq!(decided(until, &empty, false), None);
        assert_eq!(decided(until, &empty, true), Some(StopReason::Guardrail));
        let fixed = Stop::For(Duration::from_secs(60));
        assert_eq!(decided(fixed, &empty, true), None);
    }

    #[test]
    fn a_decision_is_made_as_the_final_report_after_it_is() {
        // Same mode, same resamples (the definition's), same seed: over the
        // same records the decision's interval is the final report's.
        for r in [
            StopReason::Duration,
            StopReason::Guardrail,
            StopReason::MaxDuration,
            StopReason::Interrupted,
        ] {
            assert_eq!(final_mode(r, true), DECISION_MODE, "{r:?}");
        }
        // Over a trial whose B trips the goodput guardrail: the progress
        // look's interval is not the final report's, the decision's is.
        let mut t = Trial::new(TrialDef::new("cubic", "bbr")).unwrap();
        for i in 0..220u64 {
            let arm = (i % 2) as u8;
            let spread = 1.0 + ((i * 7919) % 97) as f64 / 20.0;
            let g = if arm == 0 { 20e6 } else { 4e6 } * spread;
            t.add(&bbrkit_trial::testing::conn(
                i,
                arm,
                "192.0.2.1",
                3_000_000,
                g,
            ));
        }
        let look = |mode, resamples| Look {
            resamples,
            ..Look::new(7, mode)
        };
        let progress = t.report(&look(Mode::Sequential, Some(LOOK_RESAMPLES)));
        let decision = t.report(&look(DECISION_MODE, None));
        let last = t.report(&look(final_mode(StopReason::Guardrail, true), None));
        assert!(!decision.decisions.is_empty(), "{:?}", decision.overall);
        assert_ne!(progress.decisions, last.decisions, "the 200-resample look");
        assert_eq!(decision.decisions, last.decisions);
    }

    #[test]
    fn the_fixed_horizon_is_only_for_an_untouched_full_duration() {
        assert_eq!(final_mode(StopReason::Duration, false), Mode::FixedHorizon);
        assert_eq!(final_mode(StopReason::Duration, true), Mode::Sequential);
        for r in [
            StopReason::Confident,
            StopReason::Guardrail,
            StopReason::MaxDuration,
            StopReason::Interrupted,
        ] {
            assert_eq!(final_mode(r, false), Mode::Sequential, "{r:?}");
        }
    }
}
