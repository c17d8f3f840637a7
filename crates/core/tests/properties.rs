//! Property tests (proptest) of contracts every input must keep: the penalty models' (one
//! finite, positive penalty per arc; a lone arc is 1; `penalties_into` equals
//! `penalties`) and the spool record's byte round trip.

use pmpi_core::model::{CommGraph, ModelName, penalty_model_by_name};
use pmpi_core::trace::Record;
use proptest::prelude::*;

/// Graphs of up to 12 arcs among 6 nodes, without self-loops (what the engine builds).
fn graphs() -> impl Strategy<Value = CommGraph> {
    prop::collection::vec((0u32..6, 1u32..6, 1u64..1 << 24), 0..12).prop_map(|t| {
        let t: Vec<(u32, u32, u64)> = t.into_iter().map(|(s, d, b)| (s, (s + d) % 6, b)).collect();
        CommGraph::from_triples(&t)
    })
}

proptest! {
    #[test]
    fn every_model_gives_one_finite_positive_penalty_per_arc(g in graphs()) {
        for m in ModelName::ALL {
            let model = penalty_model_by_name(m.as_str(), &[]).unwrap();
            let p = model.penalties(&g);
            prop_assert_eq!(p.len(), g.edges.len(), "{}", m);
            for x in &p {
                prop_assert!(x.is_finite() && *x > 0.0, "{}: {:?}", m, p);
            }
            let mut into = vec![7.0];
            model.penalties_into(&g, &mut into);
            prop_assert_eq!(&into, &p, "{}", m);
        }
    }

    #[test]
    fn a_lone_arc_has_penalty_one(s in 0u32..100, d in 1u32..100, b in 1u64..1 << 40) {
        let g = CommGraph::from_triples(&[(s, s + d, b)]);
        for m in ModelName::ALL {
            let p = penalty_model_by_name(m.as_str(), &[]).unwrap().penalties(&g);
            prop_assert_eq!(p, vec![1.0], "{}", m);
        }
    }

    #[test]
    fn records_round_trip_through_their_bytes(
        t in any::<[u64; 5]>(), i in any::<[i32; 4]>(), u in any::<[u32; 2]>(),
        h in any::<[u16; 4]>(),
    ) {
        let r = Record {
            t_start: t[0], t_end: t[1], t_posted: t[2], bytes_send: t[3], bytes_recv: t[4],
            peer: i[0], root: i[1], tag: i[2], peer2: i[3],
            comm: u[0], comm_size: u[1],
            thread: h[0], call: h[1], flags: h[2], reserved: h[3],
        };
        prop_assert_eq!(Record::from_bytes(r.as_bytes()), r);
    }
}
