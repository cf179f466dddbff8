//! Shared by the lab's measurement examples (`mod common;`).

use std::time::Duration;

use bbrkit_lab::tester::{CcOn, TestSpec};

/// One bulk flow of `cc` on the sender for 4 s, sampled every 100 ms: the
/// TCP run of the baseline and fidelity tables.
pub fn bulk_4s(cc: &str) -> TestSpec {
    TestSpec {
        sample_every: Duration::from_millis(100),
        keep_off_cpu: None,
        ..TestSpec::uniform(cc, 1, CcOn::Sender, Duration::from_secs(4))
    }
}
