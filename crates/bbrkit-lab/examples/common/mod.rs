//! Shared by the lab's measurement examples (`mod common;`).

use std::time::Duration;

use bbrkit_lab::tester::{CcOn, TestSpec};

/// One bulk flow of `cc` on the sender for 4 s, sampled every 100 ms: the
/// TCP run of the baseline and fidelity tables.
pub fn bulk_4s(cc: &str) -> TestSpec {
    TestSpec {
        cc: cc.into(),
        cc_on: CcOn::Sender,
        flows: 1,
        duration: Duration::from_secs(4),
        sample_every: Duration::from_millis(100),
        keep_off_cpu: None,
    }
}
