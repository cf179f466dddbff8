//! What the kernel's TCP does here *without* the emulator: client and server
//! namespaces joined by one veth pair (offloads off, as in the lab), no delay,
//! no loss. The lab's "no impairment" row and the emulator's ceiling are
//! compared with this in docs/lab.md.
//!
//! `cargo run --release -p bbrkit-lab --example baseline`

mod common;

use std::sync::atomic::AtomicBool;

use bbrkit_lab::ethtool;
use bbrkit_lab::netlink::Rtnl;
use bbrkit_lab::netns::Netns;
use bbrkit_lab::tester::run_test;
use bbrkit_lab::topology::{CLIENT_ADDR, CLIENT_IF, SERVER_ADDR, SERVER_IF, Topology};

fn main() {
    let client = Netns::create("base-client").unwrap();
    let server = Netns::create("base-server").unwrap();
    client
        .run(|| {
            let mut nl = Rtnl::open()?;
            nl.add_veth(
                CLIENT_IF,
                SERVER_IF,
                server.raw_fd(),
                bbrkit_lab::topology::SERVER_MAC,
                1500,
            )?;
            Ok(())
        })
        .unwrap();
    for (ns, ifname, addr) in [
        (&client, CLIENT_IF, CLIENT_ADDR),
        (&server, SERVER_IF, SERVER_ADDR),
    ] {
        ns.run(|| {
            let mut nl = Rtnl::open()?;
            let idx = nix::net::if_::if_nametoindex(ifname).unwrap();
            ethtool::offloads_off(ifname)?;
            nl.add_address(idx, addr, 24)?;
            nl.set_up(idx)?;
            Ok(())
        })
        .unwrap();
    }
    let topo = Topology {
        prefix: "base".into(),
        client,
        router: Netns::create("base-router").unwrap(),
        server,
        mtu: 1500,
        router_client_index: 0,
        router_server_index: 0,
    };
    for cc in ["cubic", "bbr"] {
        for _ in 0..2 {
            let spec = common::bulk_4s(cc);
            let r = run_test(&topo, &spec, &AtomicBool::new(false)).unwrap();
            println!(
                "{cc}: {:.2} Gbit/s, retransmits {}",
                r.bits_per_second / 1e9,
                r.retransmits
            );
        }
    }
}
