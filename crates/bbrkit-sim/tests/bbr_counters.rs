//! The BBRv2/v3 model's event counters in a run's report: present for bbr2
//! and bbr3 flows only, and consistent with each other and with the loss
//! the path applied.

use bbrkit_cc::{Algorithm, Duration};
use bbrkit_sim::{BufferSize, FlowConfig, PathConfig, SimConfig};

fn run(algs: &[Algorithm], loss: f64) -> bbrkit_sim::RunReport {
    let path = PathConfig::bernoulli(100_000_000, 20, BufferSize::Bdp(1.0), loss);
    let flows = algs.iter().map(|a| FlowConfig::bulk(*a)).collect();
    let cfg = SimConfig::new(path, flows, Duration::from_secs(8), 1);
    bbrkit_sim::run(&cfg, &mut |_| {}).expect("valid config")
}

#[test]
fn bbr_flows_report_their_model_events_others_none() {
    let r = run(&[Algorithm::Bbr3, Algorithm::Cubic, Algorithm::Bbr2], 0.02);
    assert!(r.flows[1].bbr_counters.is_none(), "cubic has no BBR model");
    for f in [&r.flows[0], &r.flows[2]] {
        let c = f.bbr_counters.as_ref().expect("bbr counters");
        assert!(c.acks > 1000 && c.rounds > 100, "{}: {c:?}", f.cc);
        assert!(c.refills > 0 && c.ups <= c.refills, "{}: {c:?}", f.cc);
        let hits = c.too_high_ack + c.too_high_lost + c.too_high_tlp;
        assert_eq!(hits as usize, c.hi_at_hit.len(), "{}", f.cc);
        assert!(c.loss_events > 0 && c.lo_cuts > 0, "{}: {c:?}", f.cc);
        // Every lost packet the path dropped and the sender detected was
        // reported to the model (retransmits cover spurious ones too).
        assert!(c.lost > 0 && c.lost <= f.retransmits, "{}: {c:?}", f.cc);
    }
    let v2 = r.flows[2].bbr_counters.as_ref().unwrap();
    assert_eq!(v2.tlp_repairs, 0, "v2alpha has no TLP response");
    let json = serde_json::to_value(&r.flows[0]).unwrap();
    assert!(
        json["bbr_counters"]["inflight_hi_at_hits"].is_array(),
        "{json}"
    );
    assert!(
        serde_json::to_value(&r.flows[1])
            .unwrap()
            .get("bbr_counters")
            .is_none()
    );
}
