//! Setting Congestion Experienced on an Ethernet frame, as a router's AQM
//! does (RFC 3168 §5): the two ECN bits of the IPv4 TOS byte or the IPv6
//! traffic class become `11` when they were ECT(0) `10` or ECT(1) `01`;
//! a Not-ECT frame (`00`) is left as it is (the sender would not
//! understand the mark) and an already-CE one stays CE.
//!
//! ```text
//!   Ethernet: dst(6) src(6) ethertype(2) ─┬─ 0x0800 IPv4: byte 1 = TOS (DSCP:6 | ECN:2),
//!                                         │   bytes 10–11 = header checksum
//!                                         └─ 0x86DD IPv6: bits 4–11 = traffic class,
//!                                             ECN in byte 1 bits 4–5; no checksum
//! ```
//!
//! The IPv4 header checksum is updated incrementally (RFC 1624, eqn. 3:
//! HC' = ~(~HC + ~m + m')), so the frame stays valid without summing the
//! header again. Owns only the bytes of one frame; must never allocate.

/// What marking did to a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// ECT(0) or ECT(1) became CE.
    Marked,
    /// The frame was already CE.
    AlreadyCe,
    /// Not-ECT: left as it is.
    NotEct,
    /// Not IPv4 or IPv6 (or too short): left as it is.
    NotIp,
}

/// Ethernet header length (no VLAN tag: the lab's veths carry none).
const ETH_HEADER: usize = 14;
/// Ethertype of IPv4.
const ETHERTYPE_IPV4: u16 = 0x0800;
/// Ethertype of IPv6.
const ETHERTYPE_IPV6: u16 = 0x86DD;
/// The ECN field's two bits, CE when both are set (RFC 3168 §5).
const ECN_MASK: u8 = 0b11;

/// Sets CE on `frame` if it carries an ECN-capable IP packet.
pub fn mark_ce(frame: &mut [u8]) -> Mark {
    if frame.len() < ETH_HEADER + 20 {
        return Mark::NotIp;
    }
    match u16::from_be_bytes([frame[12], frame[13]]) {
        ETHERTYPE_IPV4 => mark_ipv4(&mut frame[ETH_HEADER..]),
        ETHERTYPE_IPV6 => mark_ipv6(&mut frame[ETH_HEADER..]),
        _ => Mark::NotIp,
    }
}

/// The ECN field's verdict before marking.
fn classify(ecn: u8) -> Option<Mark> {
    match ecn & ECN_MASK {
        0b00 => Some(Mark::NotEct),
        0b11 => Some(Mark::AlreadyCe),
        _ => None,
    }
}

fn mark_ipv4(ip: &mut [u8]) -> Mark {
    if ip[0] >> 4 != 4 {
        return Mark::NotIp;
    }
    if let Some(m) = classify(ip[1]) {
        return m;
    }
    // The checksummed 16-bit word holding TOS is bytes 0–1.
    let old = u16::from_be_bytes([ip[0], ip[1]]);
    ip[1] |= ECN_MASK;
    let new = u16::from_be_bytes([ip[0], ip[1]]);
    let hc = u16::from_be_bytes([ip[10], ip[11]]);
    let sum = u32::from(!hc) + u32::from(!old) + u32::from(new);
    let folded = (sum & 0xffff) + (sum >> 16);
    let folded = (folded & 0xffff) + (folded >> 16);
    ip[10..12].copy_from_slice(&(!(folded as u16)).to_be_bytes());
    Mark::Marked
}

fn mark_ipv6(ip: &mut [u8]) -> Mark {
    if ip[0] >> 4 != 6 {
        return Mark::NotIp;
    }
    // Traffic class = low nibble of byte 0 and high nibble of byte 1; its
    // low two bits (ECN) are bits 4–5 of byte 1.
    if let Some(m) = classify(ip[1] >> 4) {
        return m;
    }
    ip[1] |= ECN_MASK << 4;
    Mark::Marked
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The IPv4 header checksum summed from scratch (RFC 791).
    fn checksum(header: &[u8]) -> u16 {
        let mut sum: u32 = header
            .chunks(2)
            .enumerate()
            .filter(|(i, _)| *i != 5)
            .map(|(_, w)| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum();
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    /// An Ethernet frame carrying a 20-byte IPv4 header with `tos`.
    fn ipv4_frame(tos: u8) -> Vec<u8> {
        let mut f = vec![0u8; 14];
        f[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
        let mut ip = vec![
            0x45, tos, 0x05, 0xdc, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x06, 0, 0, 10, 0, 0, 1, 10, 0, 1,
            2,
        ];
        let c = checksum(&ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
        f.extend_from_slice(&ip);
        f.extend_from_slice(&[0xaa; 40]);
        f
    }

    #[test]
    fn ect_becomes_ce_and_the_checksum_stays_valid() {
        // Every DSCP with ECT(0) and ECT(1), so the checksum carry paths run.
        for dscp in 0..64u8 {
            for ect in [0b10, 0b01] {
                let mut f = ipv4_frame(dscp << 2 | ect);
                assert_eq!(mark_ce(&mut f), Mark::Marked);
                assert_eq!(f[15], dscp << 2 | 0b11);
                let got = u16::from_be_bytes([f[24], f[25]]);
                assert_eq!(got, checksum(&f[14..34]), "dscp {dscp} ect {ect:02b}");
                assert!(f[34..].iter().all(|&b| b == 0xaa), "payload untouched");
            }
        }
    }

    #[test]
    fn not_ect_ce_and_non_ip_frames_are_left_alone() {
        let mut f = ipv4_frame(0b1011_1000);
        let before = f.clone();
        assert_eq!(mark_ce(&mut f), Mark::NotEct);
        assert_eq!(f, before);
        let mut f = ipv4_frame(0b11);
        let before = f.clone();
        assert_eq!(mark_ce(&mut f), Mark::AlreadyCe);
        assert_eq!(f, before);
        let mut arp = ipv4_frame(0b10);
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        let before = arp.clone();
        assert_eq!(mark_ce(&mut arp), Mark::NotIp);
        assert_eq!(arp, before);
        assert_eq!(mark_ce(&mut [0u8; 20]), Mark::NotIp);
    }

    #[test]
    fn ipv6_traffic_class_gets_ce() {
        let mut f = vec![0u8; 14 + 40];
        f[12..14].copy_from_slice(&ETHERTYPE_IPV6.to_be_bytes());
        // Version 6, traffic class 0x2a (DSCP 10, ECT(0)), flow label 0x12345.
        f[14] = 0x62;
        f[15] = 0xa1;
        f[16] = 0x23;
        f[17] = 0x45;
        assert_eq!(mark_ce(&mut f), Mark::Marked);
        let tc = (f[14] & 0x0f) << 4 | f[15] >> 4;
        assert_eq!(tc, 0x2b);
        assert_eq!((f[15] & 0x0f, f[16], f[17]), (0x1, 0x23, 0x45));
        assert_eq!(mark_ce(&mut f), Mark::AlreadyCe);
    }
}
