//! Captures the raw sock_diag answer of this namespace into files, for the
//! parser's test fixtures: `cargo run -p bbrkit-diag --example capture -- DIR`.
//! Writes `DIR/ipv4-N.bin` and `DIR/ipv6-N.bin` (one file per datagram) and
//! prints a one-line summary of every socket found.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).ok_or("usage: capture DIR")?;
    std::fs::create_dir_all(&dir)?;
    let filter = bbrkit_diag::Filter::default();
    for (v6, name) in [(false, "ipv4"), (true, "ipv6")] {
        for (i, frame) in bbrkit_diag::dump_raw(v6, &filter)?.iter().enumerate() {
            std::fs::write(format!("{dir}/{name}-{i}.bin"), frame)?;
        }
    }
    for s in bbrkit_diag::census(&filter)? {
        let info_len = s.tcp_info.as_ref().map(|t| t.len);
        let bbr_len = s.bbr.as_ref().map(|b| b.len);
        println!(
            "{} {} -> {} cc={:?} tcp_info={info_len:?} bbr={bbr_len:?} warnings={:?}",
            s.state, s.local, s.remote, s.cc, s.warnings
        );
    }
    Ok(())
}
