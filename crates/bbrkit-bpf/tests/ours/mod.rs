//! The leak check of the bbr3 root tests (shared by `tests/root.rs` and the
//! CLI's `tests/bbr3_cli.rs` through `#[path]`): what a test or its child
//! created or held, and bbrkit's pins before it began. It looks at exactly
//! these, so the tests hold while bbrkit runs elsewhere on the host.

use std::time::Duration;

use bbrkit_bpf::objects::Objects;
use bbrkit_bpf::pin;

/// What a test created or held, and the pins before it began.
pub struct Ours {
    pub objects: Objects,
    pub pins: Vec<String>,
}

impl Ours {
    /// `objects` (never empty) and the pins now.
    pub fn new(objects: Objects) -> Ours {
        assert!(!objects.is_empty(), "nothing created or held");
        Ours {
            objects,
            pins: pin::pinned(),
        }
    }
}

/// Asserts that none of `ours` is left (but what another process still
/// uses through a link it joined, `Objects::shared`) and no new pin,
/// waiting up to 5 s (the kernel frees maps and links asynchronously after
/// a process dies).
pub fn assert_nothing_left(ours: &Ours) {
    let left = ours.objects.left_after(Duration::from_secs(5));
    assert!(
        left.is_empty(),
        "left behind: {left:?} (of {:?})",
        ours.objects
    );
    assert_eq!(pin::pinned(), ours.pins, "pins");
}
