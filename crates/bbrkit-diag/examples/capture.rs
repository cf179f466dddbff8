//! Captures the raw sock_diag answer of a namespace into files, for the
//! parser's test fixtures:
//!
//! `cargo run -p bbrkit-diag --example capture -- DIR [--lab]`
//!
//! Without `--lab` it captures the calling namespace; with `--lab` (root) it
//! first makes a throwaway namespace holding one IPv4 connection each with
//! reno, cubic, bbr
//! and IPv6 bbr (64 KiB moved), their listeners, and TIME_WAIT sockets. Writes `DIR/ipv4-N.bin` and
//! `DIR/ipv6-N.bin` (one file per datagram) and prints every socket found.

#[path = "../tests/netns/mod.rs"]
mod netns;

fn capture(dir: &str) -> Result<(), String> {
    let filter = bbrkit_diag::Filter::default();
    for (v6, name) in [(false, "ipv4"), (true, "ipv6")] {
        let frames = bbrkit_diag::dump_raw(v6, &filter).map_err(|e| e.to_string())?;
        for (i, frame) in frames.iter().enumerate() {
            std::fs::write(format!("{dir}/{name}-{i}.bin"), frame).map_err(|e| e.to_string())?;
        }
    }
    for s in bbrkit_diag::census(&filter).map_err(|e| e.to_string())? {
        let info_len = s.tcp_info.as_ref().map(|t| t.len);
        let bbr_len = s.bbr.as_ref().map(|b| b.len);
        println!(
            "{} {} -> {} cc={:?} tcp_info={info_len:?} bbr={bbr_len:?} warnings={:?}",
            s.state, s.local, s.remote, s.cc, s.warnings
        );
    }
    Ok(())
}

fn main() -> Result<(), String> {
    let dir = std::env::args()
        .nth(1)
        .ok_or("usage: capture DIR [--lab]")?;
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    if std::env::args().any(|a| a == "--lab") {
        netns::in_new_netns(move || {
            let mut keep = Vec::new();
            for (cc, v6) in [
                ("reno", false),
                ("cubic", false),
                ("bbr", false),
                ("bbr", true),
            ] {
                let l = netns::listener(cc, v6);
                keep.push(netns::connect(&l, cc, 1, 64 * 1024));
                keep.push(Vec::new());
                // One more connection closed client-first: a TIME_WAIT socket.
                drop(netns::connect(&l, cc, 1, 1024));
                std::mem::forget(l);
            }
            capture(&dir)
        })
    } else {
        capture(&dir)
    }
}
