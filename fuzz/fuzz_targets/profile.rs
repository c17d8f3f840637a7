//! `Profile::from_json` on arbitrary UTF-8 text. For a profile it accepts: the chosen
//! penalty model builds and keeps its contract (one finite, positive penalty per arc) on
//! a few small graphs; the all-to-all signature, reference times and pLogP view evaluate
//! without panicking for a range of process counts and sizes; and the profile re-serialises
//! to JSON that loads again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pmpi_core::model::{CommGraph, MAX_PROCS};
use pmpi_core::profile::Profile;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(p) = Profile::from_json(text) else { return };
    let model = p
        .penalty_model()
        .expect("validated profile must build its penalty model");
    let graphs = [
        CommGraph::default(),
        CommGraph::from_triples(&[(0, 1, 1000)]),
        CommGraph::from_triples(&[(0, 1, 1), (0, 2, 1), (1, 2, 1), (2, 0, 1), (0, 1, 5)]),
        CommGraph::from_triples(&[(0, 9, 1), (1, 9, 1), (2, 9, 1), (3, 9, 1), (9, 0, 1)]),
    ];
    for g in &graphs {
        let pen = model.penalties(g);
        assert_eq!(pen.len(), g.edges.len(), "{}: one penalty per arc", model.name());
        for x in &pen {
            assert!(x.is_finite() && *x > 0.0, "{}: penalty {x} on {g:?}", model.name());
        }
    }
    let threshold = p.alltoall.threshold;
    for n in [0, 1, 2, 3, 64, MAX_PROCS, MAX_PROCS + 1, u64::MAX] {
        for m in [0, 1, threshold.saturating_sub(1), threshold, threshold.saturating_add(1), u64::MAX] {
            let _ = p.alltoall.predict(&p.hockney.inter, n, m);
        }
    }
    for bytes in [0, 1, 1 << 20, u64::MAX] {
        let _ = p.reference_time(true, bytes);
        let _ = p.reference_time(false, bytes);
    }
    let _ = p.plogp_or_hockney();
    if let Err(e) = Profile::from_json(&p.to_json()) {
        panic!("accepted profile does not reload after to_json: {e}");
    }
});
