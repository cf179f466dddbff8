//! The name `bbr3` is global to the host: every network namespace sees
//! the same registration. The host tests that enable and roll back bbr3
//! (`bbr3_host.rs`, `bbr3_shared.rs`) wait until no one else holds the
//! name before they start, and judge what they leave by what *they* held:
//! a `bbrkit lab --cc …,bbr3` started beside them joins their registration
//! (`bbrkit_bpf::share`) and keeps it after their rollback, which is
//! correct and not a leak. `bbr3_cli.rs` shares only [`FREE_WITHIN`].
#![allow(dead_code)]

use std::time::{Duration, Instant};

use bbrkit_bpf::status::{self, Holder};

/// How long a test waits for bbr3 to be free while someone else (a lab
/// running beside the tests) holds it; a name held longer skips the test,
/// with a message (as the bbrkit-bpf and lab root tests do).
pub const FREE_WITHIN: Duration = Duration::from_secs(120);

/// Whether the kernel lists bbr3 as available (anyone's registration).
pub fn registered() -> bool {
    bbrkit_diag::algorithms::is_available("bbr3").unwrap()
}

/// Waits up to [`FREE_WITHIN`] for bbr3 to be unregistered; false, with a
/// message, when someone else held it all along.
pub fn wait_free() -> bool {
    let until = Instant::now() + FREE_WITHIN;
    while registered() {
        if Instant::now() >= until {
            eprintln!("skipped: bbr3 stayed registered by someone else for {FREE_WITHIN:?}");
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// Whether bbr3 is held only by someone outside this test: unregistered,
/// or registered through a link that a running process still holds (a
/// lab beside the test that joined or made it). A registration no process
/// and no pin in this mount namespace holds is this test's leftover.
pub fn released_by_us() -> bool {
    match status::ca_status("bbr3").holder {
        None => true,
        Some(Holder::Link { link_id, .. }) => !status::link_holders(link_id).is_empty(),
        Some(_) => false,
    }
}

/// Waits up to 5 s for [`released_by_us`]: a bpffs, and the link pinned in
/// it, go away asynchronously once its mount namespace is gone.
pub fn wait_released() -> bool {
    let until = Instant::now() + Duration::from_secs(5);
    while !released_by_us() {
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    true
}
