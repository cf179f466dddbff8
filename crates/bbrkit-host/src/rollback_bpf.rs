//! `rollback`'s BPF part: unregister what `enable` registered by removing
//! the pins it made under `/sys/fs/bpf/bbrkit` (every pin that was not
//! there before, so also other struct_ops maps of the same object), after
//! the default was restored (a namespace whose default is bbr3 holds it),
//! and name the connections that keep the unregistered program until they
//! close. Touches no pin that existed before `enable` and nothing outside
//! bbrkit's pin directory.

use crate::rollback::Action;
use crate::state::BeforeImage;
use crate::{bpfcc, sysctl};

/// What rollback did (or would do) with the registrations, and the
/// connections still on an algorithm that is no longer registered.
#[derive(Debug, Clone, Default)]
pub struct BpfRollback {
    /// One action per pin.
    pub actions: Vec<Action>,
    /// `local -> remote (cc)` of connections on an unregistered algorithm.
    pub still_running: Vec<String>,
    /// A pin could not be removed (the image is kept for another try).
    pub problem: bool,
}

fn act(what: &str, action: &str, detail: String) -> Action {
    Action {
        what: what.into(),
        action: action.into(),
        detail,
    }
}

/// The pins `image` says bbrkit made (present now, absent before).
pub fn pins_to_remove(image: &BeforeImage) -> Vec<String> {
    let now = bpfcc::pinned();
    let mut out: Vec<String> = Vec::new();
    for b in &image.bpf {
        for p in now.iter().filter(|p| !b.pinned_before.contains(p)) {
            if !out.contains(p) {
                out.push(p.clone());
            }
        }
    }
    out
}

/// Unregisters what `image` registered (`dry_run`: says what it would).
pub fn run(image: &BeforeImage, dry_run: bool, no_apply: bool) -> BpfRollback {
    let mut r = BpfRollback::default();
    if image.bpf.is_empty() {
        return r;
    }
    for name in pins_to_remove(image) {
        let pin = bpfcc::pin_path(&name).display().to_string();
        if dry_run {
            r.actions
                .push(act(&name, "would_unregister", format!("remove pin {pin}")));
        } else if no_apply {
            r.actions.push(act(
                &name,
                "skipped",
                format!("--no-apply: stays registered through {pin} until reboot"),
            ));
        } else {
            match bpfcc::unregister(&name) {
                Ok(_) => r
                    .actions
                    .push(act(&name, "unregistered", format!("pin {pin} removed"))),
                Err(e) => {
                    r.problem = true;
                    r.actions.push(act(&name, "failed", e.to_string()));
                }
            }
        }
    }
    for b in &image.bpf {
        if !r.actions.iter().any(|a| a.what == b.cc) {
            r.actions.push(act(
                &b.cc,
                "unchanged",
                "no pin of bbrkit's holds it any more".into(),
            ));
        }
    }
    if !dry_run {
        let available = sysctl::read_list("net.ipv4.tcp_available_congestion_control");
        let gone: Vec<&str> = image
            .bpf
            .iter()
            .map(|b| b.cc.as_str())
            .filter(|c| !available.iter().any(|a| a == c))
            .collect();
        r.still_running = bpfcc::sockets_on(&gone);
    }
    r
}
