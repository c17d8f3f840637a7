//! Fast penalty models against the slow reference implementations, on random graphs.

use pmpi_core::model::myrinet::MyrinetReport;
use pmpi_core::model::{
    CommGraph, GigabitEthernet, InfiniBand, MaxMinFair, Myrinet, PenaltyModel, reference,
};

/// Small deterministic generator, so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random multigraph without self-loops.
fn random_graph(rng: &mut Rng, max_nodes: u64, max_arcs: u64) -> CommGraph {
    let nodes = 2 + rng.below(max_nodes - 1);
    let arcs = rng.below(max_arcs + 1);
    let mut t = Vec::new();
    for _ in 0..arcs {
        let s = rng.below(nodes) as u32;
        let mut d = rng.below(nodes) as u32;
        if d == s {
            d = (d + 1) % nodes as u32;
        }
        // Sparse node ids exercise the renumbering.
        t.push((s * 7 + 3, d * 7 + 3, rng.below(1 << 20)));
    }
    CommGraph::from_triples(&t)
}

fn assert_close(fast: &[f64], slow: &[f64], g: &CommGraph) {
    assert_eq!(fast.len(), slow.len());
    for (a, b) in fast.iter().zip(slow) {
        assert!(
            (a - b).abs() <= 1e-9 * b.abs(),
            "{fast:?} vs {slow:?} on {g:?}"
        );
    }
}

#[test]
fn gige_fast_equals_reference() {
    let mut rng = Rng(0x1234_5678);
    let params = [
        GigabitEthernet::default(),
        GigabitEthernet::new(0.9, 0.3, 0.5).unwrap(),
    ];
    for i in 0..400 {
        let g = random_graph(&mut rng, 12, 40);
        let m = &params[i % 2];
        assert_close(&m.penalties(&g), &reference::gige(m, &g), &g);
    }
}

#[test]
fn infiniband_fast_equals_reference() {
    let mut rng = Rng(0x9abc_def1);
    let m = InfiniBand::default();
    for _ in 0..400 {
        let g = random_graph(&mut rng, 12, 40);
        assert_close(&m.penalties(&g), &reference::infiniband(&m, &g), &g);
    }
}

#[test]
fn maxmin_fast_equals_reference_and_is_fair() {
    let mut rng = Rng(0x4242_4242);
    for _ in 0..300 {
        let g = random_graph(&mut rng, 10, 30);
        let fast = MaxMinFair::rates(&g);
        assert_close(&fast, &reference::maxmin_rates(&g), &g);
        // Max-min fairness: every arc has a saturated port where no arc goes faster.
        for (a, e) in g.edges.iter().enumerate() {
            let port_ok = |uses: &dyn Fn(usize) -> bool| {
                let load: f64 = (0..g.edges.len())
                    .filter(|&b| uses(b))
                    .map(|b| fast[b])
                    .sum();
                let top = (0..g.edges.len())
                    .filter(|&b| uses(b))
                    .map(|b| fast[b])
                    .fold(0.0, f64::max);
                (load - 1.0).abs() < 1e-9 && fast[a] >= top - 1e-12
            };
            let send = |b: usize| g.edges[b].src == e.src;
            let recv = |b: usize| g.edges[b].dst == e.dst;
            assert!(
                port_ok(&send) || port_ok(&recv),
                "arc {a} has no bottleneck in {g:?}"
            );
        }
        let p = MaxMinFair.penalties(&g);
        assert!(p.iter().all(|&x| x >= 1.0 - 1e-12));
    }
}

#[test]
fn myrinet_fast_equals_brute_force() {
    let mut rng = Rng(0x5eed_0001);
    let m = Myrinet::default();
    for _ in 0..300 {
        let g = random_graph(&mut rng, 7, 14);
        let slow = reference::myrinet(&g).unwrap();
        let MyrinetReport {
            penalties,
            approximated,
            ..
        } = m.penalties_detailed(&g);
        assert_eq!(approximated, 0);
        assert_close(&penalties, &slow, &g);
    }
}

#[test]
fn myrinet_approximation_within_stated_error() {
    // max_sets = 0 forces the sampling path on every component.
    let approx = Myrinet { max_sets: 0 };
    let mut rng = Rng(0x5eed_0002);
    let mut worst: f64 = 1.0;
    for _ in 0..200 {
        let g = random_graph(&mut rng, 7, 14);
        let exact = reference::myrinet(&g).unwrap();
        let est = approx.penalties(&g);
        for (a, b) in est.iter().zip(&exact) {
            worst = worst.max(a / b).max(b / a);
        }
    }
    assert!(worst <= 2.5, "worst ratio {worst}");
    eprintln!("myrinet sampling: worst ratio to exact {worst:.3}");
    // The paper's Fig. 5 graph (exact penalties 5, 5, 5, 2.5, 2.5, 2.5).
    let fig5 = CommGraph::from_triples(&[
        (0, 2, 1),
        (0, 1, 1),
        (0, 3, 1),
        (1, 2, 1),
        (4, 2, 1),
        (1, 0, 1),
    ]);
    let est = approx.penalties(&fig5);
    eprintln!("myrinet sampling on Fig. 5: {est:?}");
    for (a, b) in est.iter().zip([5.0, 5.0, 5.0, 2.5, 2.5, 2.5]) {
        assert!((a / b).max(b / a) <= 2.5, "{est:?}");
    }
}

#[test]
fn all_models_total_on_edge_cases() {
    let models: Vec<Box<dyn PenaltyModel>> = vec![
        Box::new(GigabitEthernet::default()),
        Box::new(InfiniBand::default()),
        Box::new(MaxMinFair),
        Box::new(Myrinet::default()),
    ];
    let graphs = [
        CommGraph::default(),
        CommGraph::from_triples(&[(0, 1, 0)]),
        CommGraph::from_triples(&[(0, 1, 5), (0, 1, 5), (0, 1, 5)]),
        CommGraph::from_triples(&[(u32::MAX, 0, 1), (0, u32::MAX, 1)]),
    ];
    for m in &models {
        for g in &graphs {
            let p = m.penalties(g);
            assert_eq!(p.len(), g.edges.len(), "{}", m.name());
            assert!(
                p.iter().all(|x| x.is_finite() && *x > 0.0),
                "{} {p:?}",
                m.name()
            );
        }
        if m.name() != "infiniband" {
            assert_eq!(m.penalties(&graphs[1]), vec![1.0]);
        }
    }
    // A large all-to-all goes through the approximation without blowing up.
    let mut t = Vec::new();
    for s in 0..40u32 {
        for d in 0..40u32 {
            if s != d {
                t.push((s, d, 1));
            }
        }
    }
    let r = Myrinet::default().penalties_detailed(&CommGraph::from_triples(&t));
    assert_eq!(r.approximated, 1);
    assert!(r.penalties.iter().all(|x| x.is_finite() && *x >= 1.0));
}
