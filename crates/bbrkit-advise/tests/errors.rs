//! Every `AdviseError` names each cause once: the census's or the
//! simulator's error is the `source`, never repeated in the wording, so the
//! binary's chain printer shows it once.

use std::time::Duration;

use bbrkit_advise::{AdviseError, SamplePlan, SystemClock, Tracker, sample};
use bbrkit_diag::{DiagError, Filter, Socket, error_chain};

fn plan() -> SamplePlan {
    SamplePlan {
        duration: Duration::from_millis(1),
        interval: Duration::from_millis(1),
        port: None,
    }
}

#[test]
fn a_failed_census_names_the_os_error_once() {
    let mut refused = |_: &Filter, _: &mut dyn FnMut(Socket)| -> Result<usize, DiagError> {
        Err(DiagError::Netlink {
            context: "open socket",
            source: std::io::Error::from_raw_os_error(libc::EPERM),
        })
    };
    let e = sample(
        &plan(),
        &SystemClock::start(),
        &mut refused,
        &mut Tracker::new(),
        &mut |_, _, _| {},
    )
    .expect_err("the census failed");
    assert!(matches!(e, AdviseError::Census(_)), "{e:?}");
    let text = error_chain(&e);
    assert_eq!(
        text,
        "taking the socket census: sock_diag netlink: open socket: \
         Operation not permitted (os error 1)"
    );
}

#[test]
fn an_invalid_plan_is_one_cause_without_a_source() {
    let bad = SamplePlan {
        interval: Duration::ZERO,
        ..plan()
    };
    let mut never = |_: &Filter, _: &mut dyn FnMut(Socket)| -> Result<usize, DiagError> {
        panic!("no census for an invalid plan")
    };
    let e = sample(
        &bad,
        &SystemClock::start(),
        &mut never,
        &mut Tracker::new(),
        &mut |_, _, _| {},
    )
    .expect_err("a zero interval is refused");
    assert!(std::error::Error::source(&e).is_none(), "{e:?}");
    assert_eq!(error_chain(&e), "the interval must be positive");
}

#[test]
fn a_simulator_refusal_is_the_source_of_the_wording() {
    let e = AdviseError::Sim {
        what: "bbr3 at 10 ms".into(),
        source: bbrkit_sim::ConfigError::ZeroRate,
    };
    assert_eq!(
        error_chain(&e),
        "simulating bbr3 at 10 ms: link rate must be positive"
    );
}
