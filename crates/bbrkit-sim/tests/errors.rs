//! The simulator's errors name each cause once: a `ConfigError` is one
//! cause with no source, and `RunError` passes it through unchanged
//! (`transparent`), so the binary's chain printer shows it once.

use bbrkit_cc::{Algorithm, Duration};
use bbrkit_diag::error_chain;
use bbrkit_sim::{
    BufferSize, ConfigError, FlowConfig, LossModel, PathConfig, RunError, SimConfig, run_parallel,
};

fn config(rate_bps: u64, mss: u32) -> SimConfig {
    let path = PathConfig {
        rate_bps,
        rtt: Duration::from_millis(10),
        buffer: BufferSize::Bdp(1.0),
        loss: LossModel::bernoulli(0.0),
        ack_loss: 0.0,
    };
    let flow = FlowConfig::bulk(Algorithm::Cubic);
    let mut cfg = SimConfig::new(path, vec![flow], Duration::from_millis(100), 1);
    cfg.mss = mss;
    cfg
}

#[test]
fn a_refused_batch_names_the_configuration_error_once() {
    let good = config(10_000_000, 1448);
    let bad = config(10_000_000, 10);
    let e = run_parallel(&[good, bad]).expect_err("an MSS of 10 is refused");
    assert!(matches!(e, RunError::Config(ConfigError::Mss(10))), "{e:?}");
    assert_eq!(error_chain(&e), "MSS 10 is outside 64..=65000 bytes");
}

#[test]
fn every_configuration_error_is_one_cause() {
    let bad = [config(0, 1448), config(10_000_000, 70_000)];
    for cfg in &bad {
        let e = bbrkit_sim::run(cfg, &mut |_| {}).expect_err("refused");
        assert!(std::error::Error::source(&e).is_none(), "{e:?}");
        let text = error_chain(&e);
        assert!(!text.contains(": "), "one cause, no chain: {text}");
    }
}
