//! Property tests: the wire parser never panics, whatever the bytes (random
//! buffers, and the captured kernel answer with random bytes overwritten or
//! cut). A failure prints the seed (`BBRKIT_TEST_SEED` replays it) and the
//! minimal failing input.

use bbrkit_diag::wire;
use proptest::prelude::*;

fn fixture() -> Vec<u8> {
    let path = format!("{}/tests/fixtures/ipv4-0.bin", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(path).unwrap()
}

fn parse(buf: &[u8]) -> Result<usize, bbrkit_diag::DiagError> {
    let mut n = 0;
    wire::parse_datagram(buf, "IPv4", &mut |_| n += 1)?;
    Ok(n)
}

/// Proptest's generator seeded from `BBRKIT_TEST_SEED` when set (else a
/// fresh seed); the seed is printed, so a failing run shows how to replay it.
fn seeded(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        rng_seed: proptest::test_runner::RngSeed::Fixed(bbrkit_cc::testing::fresh_test_seed()),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(seeded(512))]

    #[test]
    fn random_bytes_never_panic(buf in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let _ = parse(&buf);
    }

    #[test]
    fn mutated_capture_never_panics(
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..16),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut buf = fixture();
        for (at, byte) in &edits {
            let i = at.index(buf.len());
            buf[i] = *byte;
        }
        let end = cut.index(buf.len() + 1);
        let _ = parse(&buf[..end]);
    }

    #[test]
    fn tcp_info_and_bbr_info_of_any_length(buf in proptest::collection::vec(any::<u8>(), 0..400)) {
        let t = bbrkit_diag::TcpInfo::parse(&buf);
        prop_assert_eq!(t.len, buf.len());
        prop_assert_eq!(t.snd_cwnd.is_some(), buf.len() >= 84);
        let b = bbrkit_diag::BbrInfo::parse(&buf);
        prop_assert_eq!(b.is_ok(), buf.len() >= 20);
    }
}
