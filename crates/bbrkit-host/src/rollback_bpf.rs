//! `rollback`'s BPF part: unregister what `enable` registered by removing
//! the pins it made under `/sys/fs/bpf/bbrkit` (every pin that was not
//! there before, so also other struct_ops maps of the same object), after
//! the default was restored (a namespace whose default is bbr3 holds it),
//! and name the connections that keep the unregistered program until they
//! close. Touches no pin that existed before `enable` and nothing outside
//! bbrkit's pin directory.

use crate::bpfcc;
use crate::rollback::{Action, Step};
use crate::state::BeforeImage;

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

/// Plans the unregistrations into `actions` (as `would_unregister`) and
/// `steps`; `(dry_run, no_apply)` as for the runtime values.
pub fn plan(
    image: &BeforeImage,
    (dry_run, no_apply): (bool, bool),
    actions: &mut Vec<Action>,
    steps: &mut Vec<Step>,
) {
    if image.bpf.is_empty() {
        return;
    }
    for name in pins_to_remove(image) {
        let pin = bpfcc::pin_path(&name).display().to_string();
        if no_apply && !dry_run {
            actions.push(act(
                &name,
                "skipped",
                format!("--no-apply: stays registered through {pin} until reboot"),
            ));
            continue;
        }
        actions.push(act(&name, "would_unregister", format!("remove pin {pin}")));
        steps.push(Step::Unregister {
            name,
            at: actions.len() - 1,
        });
    }
    for b in &image.bpf {
        if !actions.iter().any(|a| a.what == b.cc) {
            actions.push(act(
                &b.cc,
                "unchanged",
                "no pin of bbrkit's holds it any more".into(),
            ));
        }
    }
    steps.push(Step::NameStillRunning {
        ccs: image.bpf.iter().map(|b| b.cc.clone()).collect(),
    });
}

/// Removes the pins of `name` (unregisters it); the outcome for its line.
pub fn unregister(name: &str, a: &mut Action) -> bool {
    match bpfcc::unregister(name) {
        Ok(_) => {
            a.action = "unregistered".into();
            a.detail = format!("pin {} removed", bpfcc::pin_path(name).display());
            if !wait_gone(name) {
                a.detail.push_str(&format!(
                    "; still listed after {UNREGISTER_WAIT_MS} ms (another process holds a link)"
                ));
            }
            false
        }
        Err(e) => {
            a.action = "failed".into();
            a.detail = e.to_string();
            true
        }
    }
}

/// How long rollback waits for the kernel to drop an unpinned name: the
/// last reference to a link goes through a workqueue (`bpf_link_put`), so
/// the name leaves `tcp_available_congestion_control` a moment after the
/// pin is removed.
const UNREGISTER_WAIT_MS: u64 = 2000;

fn wait_gone(name: &str) -> bool {
    for _ in 0..UNREGISTER_WAIT_MS / 20 {
        if !bbrkit_diag::algorithms::is_available(name).unwrap_or(false) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

/// `local -> remote (cc)` of connections on those of `ccs` that are no
/// longer registered.
pub fn still_running(ccs: &[String]) -> Vec<String> {
    let available = bbrkit_diag::algorithms::available().unwrap_or_default();
    let gone: Vec<&str> = ccs
        .iter()
        .map(String::as_str)
        .filter(|c| !available.iter().any(|a| a == c))
        .collect();
    bpfcc::sockets_on(&gone)
}
