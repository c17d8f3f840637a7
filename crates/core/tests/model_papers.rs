//! The papers' worked numbers, reproduced by the model library.

use pmpi_core::model::alltoall::{self, Signature};
use pmpi_core::model::bcast::{self, BcastStrategy};
use pmpi_core::model::grid::{self, TwoClusters};
use pmpi_core::model::scatter::{self, ScatterStrategy};
use pmpi_core::model::{
    CommGraph, GigabitEthernet, Hockney, InfiniBand, Myrinet, PLogP, PenaltyModel, PiecewiseLinear,
    reference,
};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1e-12)
}

fn assert_all(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!(close(*g, *w), "got {got:?}, want {want:?}");
    }
}

#[test]
fn gige_fig2_outgoing_conflicts() {
    // β = 1.5/2 = 2.25/3 = 0.75 (section V-A).
    assert_eq!(1.5 / 2.0, 0.75);
    assert_eq!(2.25 / 3.0, 0.75);
    let m = GigabitEthernet::default();
    assert_eq!(m.beta, 0.75);
    let lone = CommGraph::from_triples(&[(0, 1, 20_000_000)]);
    assert_all(&m.penalties(&lone), &[1.0]);
    let two = CommGraph::from_triples(&[(0, 1, 20_000_000), (0, 2, 20_000_000)]);
    assert_all(&m.penalties(&two), &[1.5, 1.5]);
    let three =
        CommGraph::from_triples(&[(0, 1, 20_000_000), (0, 2, 20_000_000), (0, 3, 20_000_000)]);
    assert_all(&m.penalties(&three), &[2.25, 2.25, 2.25]);
}

#[test]
fn gige_non_max_branch_by_hand() {
    // 0→1, 0→2, 3→2: from node 0, C_o^m = {0→2} (dest in-degree 2), |C_o^m| = 1.
    // 0→1 is not in C_o^m: p_o = 2·0.75·(1 − 0.115/1) = 1.3275; p_i = 1.
    // 0→2: p_o = 2·0.75·(1 + 0.115·(2 − 1)) = 1.6725; p_i: C_i = {0→2, 3→2}, source
    // out-degrees 2 and 1, C_i^m = {0→2}: 2·0.75·(1 + 0.036·1) = 1.554 → p = 1.6725.
    // 3→2: p_o = 1; p_i non-max: 2·0.75·(1 − 0.036/1) = 1.446.
    let g = CommGraph::from_triples(&[(0, 1, 1), (0, 2, 1), (3, 2, 1)]);
    assert_all(
        &GigabitEthernet::default().penalties(&g),
        &[1.3275, 1.6725, 1.446],
    );
}

/// A graph consistent with Fig. 5/6 of the bandwidth-sharing paper: a = 0→2, b = 0→1,
/// c = 0→3, d = 1→2, e = 4→2, f = 1→0 (found by exhaustive search over small graphs).
fn fig6() -> CommGraph {
    CommGraph::from_triples(&[
        (0, 2, 1),
        (0, 1, 1),
        (0, 3, 1),
        (1, 2, 1),
        (4, 2, 1),
        (1, 0, 1),
    ])
}

#[test]
fn myrinet_fig6() {
    let g = fig6();
    let states = reference::myrinet_states(&g).unwrap();
    assert_eq!(states.len(), 5);
    let coef: Vec<usize> = (0..6)
        .map(|a| states.iter().filter(|s| s.contains(&a)).count())
        .collect();
    assert_eq!(coef, vec![1, 2, 2, 2, 2, 3]); // Fig. 6 "Sum" row.
    let want = [5.0, 5.0, 5.0, 2.5, 2.5, 2.5]; // Fig. 6 "penalty" row.
    assert_all(&Myrinet::default().penalties(&g), &want);
    assert_all(&reference::myrinet(&g).unwrap(), &want);
}

#[test]
fn infiniband_outgoing_by_hand() {
    let m = InfiniBand::default();
    let two = CommGraph::from_triples(&[(0, 1, 1), (0, 2, 1)]);
    assert_all(&m.penalties(&two), &[1.85, 1.85]); // 2·βs (Fig. 2 measures 1.725)
    // Incoming: 1→0 and 2→0: p_in = 1·βe·2 = 1.93.
    let inc = CommGraph::from_triples(&[(1, 0, 1), (2, 0, 1)]);
    assert_all(&m.penalties(&inc), &[1.93, 1.93]);
    // Three arcs into node 3 with one sender of two arcs: γr applies to node 0's arc to 3.
    let g = CommGraph::from_triples(&[(0, 3, 1), (0, 4, 1), (1, 3, 1), (2, 3, 1)]);
    let p_out = 2.0 * 0.925 * 1.35;
    // 0→3 also receives p_in = 1·βe·3 = 2.895, larger than node 0's p_out.
    let p_in = 3.0 * 0.965;
    assert_all(&m.penalties(&g), &[p_in, p_out, p_in, p_in]);
}

#[test]
fn alltoall_signature_gigabit_by_hand() {
    // Gigabit Ethernet signature: γ = 4.3628, δ = 4.93 ms for m ≥ 8 kB (40 processes).
    let s = Signature::new(4.3628, 4.93e-3, 8192).unwrap();
    let h = Hockney::new(50e-6, 8e-9).unwrap();
    // m = 16384 ≥ M: 39·(50e-6 + 16384·8e-9·4.3628 + 4.93e-3) = 39·0.0055518409216.
    assert!(close(s.predict(&h, 40, 16384).unwrap(), 0.216521795942_4));
    // m = 4096 < M: 39·(50e-6 + 4096·8e-9·4.3628) = 39·1.9296023040e-4.
    assert!(close(s.predict(&h, 40, 4096).unwrap(), 7.525448985_6e-3));
    // Proposition 1 is below the prediction.
    assert!(alltoall::lower_bound(&h, 40, 16384).unwrap() < s.predict(&h, 40, 16384).unwrap());
    assert!(s.predict(&h, 1, 16384).is_err());
}

fn plogp_hand() -> PLogP {
    // L = 10 µs, g(m) = 1 µs + 1 ns·m, os(m) = 0.5 µs, or(m) = 0.25 µs.
    PLogP::new(
        1e-5,
        PiecewiseLinear::linear(1e-6, 1e-9),
        PiecewiseLinear::new("os", vec![(0.0, 0.5e-6)]).unwrap(),
        PiecewiseLinear::new("or", vec![(0.0, 0.25e-6)]).unwrap(),
    )
    .unwrap()
}

#[test]
fn binomial_bcast_by_hand() {
    let pl = plogp_hand();
    // P = 6: ⌊log2 6⌋ = 2, ⌈log2 6⌉ = 3; g(1000) = 2 µs → 2·2e-6 + 3·1e-5 = 3.4e-5.
    let t = bcast::predict(&pl, BcastStrategy::Binomial, 6, 1000).unwrap();
    assert!(close(t.seconds, 3.4e-5));
    // P = 8: 3·g + 3·L = 3.6e-5.
    let t = bcast::predict(&pl, BcastStrategy::Binomial, 8, 1000).unwrap();
    assert!(close(t.seconds, 3.6e-5));
    // Flat: (P−1)·g(m) + L = 5·2e-6 + 1e-5.
    let t = bcast::predict(&pl, BcastStrategy::Flat, 6, 1000).unwrap();
    assert!(close(t.seconds, 2.0e-5));
    // Segmented chain picks the best s = m/2^i: check it against a direct search.
    let t = bcast::predict(&pl, BcastStrategy::SegmentedChain, 6, 1024).unwrap();
    let best = (0..=10)
        .map(|i| {
            let s = 1024f64 / 2f64.powi(i);
            let k = 1024.0 / s;
            let gs = 1e-6 + 1e-9 * s;
            5.0 * (gs + 1e-5) + gs * (k - 1.0)
        })
        .fold(f64::INFINITY, f64::min);
    assert!(close(t.seconds, best));
    let r = bcast::rank(&pl, 6, 1000).unwrap();
    assert_eq!(r.len(), 10);
    assert!(r.windows(2).all(|w| w[0].seconds <= w[1].seconds));
}

#[test]
fn scatter_by_hand() {
    let pl = plogp_hand();
    // Flat, P = 5, m = 1000: 4·2e-6 + 1e-5 = 1.8e-5.
    let t = scatter::predict(&pl, ScatterStrategy::Flat, 5, 1000).unwrap();
    assert!(close(t.seconds, 1.8e-5));
    // Binomial, P = 5: g(1000) + g(2000) + g(4000) + 3·L = (2 + 3 + 5)e-6 + 3e-5.
    let t = scatter::predict(&pl, ScatterStrategy::Binomial, 5, 1000).unwrap();
    assert!(close(t.seconds, 4.0e-5));
    // Chain, P = 4: g(1000) + g(2000) + g(3000) + 3·L = 9e-6 + 3e-5.
    let t = scatter::predict(&pl, ScatterStrategy::Chain, 4, 1000).unwrap();
    assert!(close(t.seconds, 3.9e-5));
}

#[test]
fn upper_lower_by_hand() {
    let pl = plogp_hand();
    // P = 4, m = 1000: Upper = 3·2e-6 + 3·0.25e-6 + 1e-5; Lower = 3·0.5e-6 + 3·0.25e-6 + 1e-5.
    let (u, l) = alltoall::upper_lower_bounds(&pl, 4, 1000).unwrap();
    assert!(close(u, 1.675e-5));
    assert!(close(l, 1.225e-5));
    let t = alltoall::upper_lower_ratio(&pl, 4, 1000, 0.5).unwrap();
    assert!(close(t, 1.45e-5));
}

#[test]
fn local_group_example() {
    // n1 = 3, n2 = 7: M(7,2) is stored on node ⌊7/3⌋·3 + 2 = 8 and sent in step 2.
    let r = grid::lg_route(3, 7, 7, 2).unwrap();
    assert_eq!((r.stage, r.step), (8, 2));
    // "node 8 sends M6,2, M7,2 and M8,2 to node 2".
    let via8: Vec<u64> = grid::lg_schedule(3, 7)
        .into_iter()
        .filter(|r| r.stage == 8 && r.dst == 2)
        .map(|r| r.src)
        .collect();
    assert_eq!(via8, vec![6, 7, 8]);
    // Steps: 0–3, 1–4, 2–5; then 0–6, 1–7, 2–8; then only 0–9.
    assert_eq!(
        grid::lg_steps(3, 7),
        vec![
            vec![(0, 3), (1, 4), (2, 5)],
            vec![(0, 6), (1, 7), (2, 8)],
            vec![(0, 9)]
        ]
    );
    // Every route's step pairs its stage with the right peer.
    let steps = grid::lg_steps(3, 7);
    for r in grid::lg_schedule(3, 7) {
        let pairs = &steps[(r.step - 1) as usize];
        let peer = r.dst;
        assert!(
            pairs
                .iter()
                .any(|&(i, j)| (i == r.stage && j == peer) || (j == r.stage && i == peer))
                || r.stage == r.src,
            "{r:?}"
        );
    }
}

#[test]
fn two_cluster_equations_by_hand() {
    let lan = Hockney::new(1e-5, 1e-9).unwrap();
    let wan = Hockney::new(1e-2, 1e-8).unwrap();
    let sig = Signature::new(1.0, 0.0, u64::MAX).unwrap();
    let c = TwoClusters::new(3, 7, lan, sig, wan).unwrap();
    // T_C7 = 6·(1e-5 + 1e-6) = 6.6e-5 dominates T_C3 = 2.2e-5.
    assert!(close(c.eq6_direct(1000), 6.6e-5 + 7.0 * (1e-2 + 1e-5)));
    assert!(close(
        c.eq7_local_group(1000),
        6.6e-5 + 3.0 * (1e-2 + 1e-8 * 3000.0)
    ));
    assert!(TwoClusters::new(7, 3, lan, sig, wan).is_err());
}
