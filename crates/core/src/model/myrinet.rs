//! Myrinet 2000 (Stop & Go) penalty model of the bandwidth-sharing paper, section V-B.
//!
//! Two arcs conflict when they share a source or a destination. A "send" state is a maximal
//! set of pairwise non-conflicting arcs (a maximal independent set of the conflict graph).
//! An arc's emission coefficient is the number of states it sends in; each arc takes the
//! minimum coefficient among the arcs leaving its source (the NIC is shared fairly, so all of
//! a node's messages go as slowly as its slowest); `p = (number of states) / that minimum`.
//!
//! Tractability: the states of a graph are the products of the states of the conflict
//! graph's connected components, and all arcs leaving one source lie in one component, so
//! `p` only depends on the arc's component: `p = N_k / min c_k` within component k.
//! Each component is enumerated exactly (Bron–Kerbosch with Tomita pivoting, on bitsets)
//! when it has at most [`MAX_EXACT_ARCS`] arcs and at most `max_sets` states.
//!
//! **Approximation.** A component that is larger, or whose enumeration passes `max_sets`
//! states, is estimated instead: [`SAMPLES`] maximal states are drawn by greedy insertion in a
//! random order (fixed seed, so results are reproducible), and an arc's share of states
//! `c/N` is estimated by `(sends + 1) / (SAMPLES + 1)`. Random-order greedy does not draw
//! states uniformly (it favours states built around low-conflict arcs), so this is an
//! estimate, not a bound, and its error is measured, not proven: on 200 random graphs of at
//! most 14 arcs (`tests/model_oracle.rs`, which asserts a factor ≤ 2.5) the worst ratio
//! between estimated and exact penalty was 2.16; on the paper's Fig. 5 graph the estimates
//! are within 35 % (4.84 for 5, 2.01–3.33 for 2.5). Use [`Myrinet::penalties_detailed`] to know
//! whether any component was approximated.

use super::{CommGraph, PenaltyModel};

/// Largest component (in arcs) enumerated exactly.
pub const MAX_EXACT_ARCS: usize = 256;
/// Number of random greedy states drawn for an approximated component.
pub const SAMPLES: usize = 512;

/// The Stop & Go model. `max_sets` bounds the exact enumeration per component.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Myrinet {
    pub max_sets: u64,
}

impl Default for Myrinet {
    fn default() -> Self {
        Myrinet { max_sets: 100_000 }
    }
}

/// Penalties plus how they were obtained.
#[derive(Debug, Clone, PartialEq)]
pub struct MyrinetReport {
    pub penalties: Vec<f64>,
    /// Connected components of the conflict graph.
    pub components: usize,
    /// Components whose penalties were estimated by sampling (see the module doc).
    pub approximated: usize,
}

impl Myrinet {
    /// Penalties, with the number of components and of approximated components.
    pub fn penalties_detailed(&self, g: &CommGraph) -> MyrinetReport {
        let d = g.dense();
        let n = d.arcs.len();
        // Components: union arcs with the first arc seen at the same source / destination.
        let mut uf = UnionFind::new(n);
        let mut first_out = vec![usize::MAX; d.nodes];
        let mut first_in = vec![usize::MAX; d.nodes];
        for (i, &(s, t)) in d.arcs.iter().enumerate() {
            if first_out[s] == usize::MAX {
                first_out[s] = i;
            } else {
                uf.union(first_out[s], i);
            }
            if first_in[t] == usize::MAX {
                first_in[t] = i;
            } else {
                uf.union(first_in[t], i);
            }
        }
        let mut comp_of_root = vec![usize::MAX; n];
        let mut comps: Vec<Vec<usize>> = Vec::new();
        for i in 0..n {
            let r = uf.find(i);
            if comp_of_root[r] == usize::MAX {
                comp_of_root[r] = comps.len();
                comps.push(Vec::new());
            }
            comps[comp_of_root[r]].push(i);
        }
        let mut penalties = vec![1.0; n];
        let mut approximated = 0;
        for comp in &comps {
            let local: Vec<(usize, usize)> = comp.iter().map(|&a| d.arcs[a]).collect();
            let shares = exact_shares(&local, self.max_sets).unwrap_or_else(|| {
                approximated += 1;
                sampled_shares(&local, d.nodes)
            });
            // Minimum share over the arcs leaving each source, then p = 1 / that minimum.
            let mut min_out: std::collections::HashMap<usize, f64> = Default::default();
            for (k, &(s, _)) in local.iter().enumerate() {
                let e = min_out.entry(s).or_insert(f64::INFINITY);
                *e = e.min(shares[k]);
            }
            for (k, &a) in comp.iter().enumerate() {
                penalties[a] = 1.0 / min_out[&local[k].0];
            }
        }
        MyrinetReport {
            penalties,
            components: comps.len(),
            approximated,
        }
    }
}

impl PenaltyModel for Myrinet {
    fn name(&self) -> &str {
        "myrinet"
    }
    fn penalties(&self, g: &CommGraph) -> Vec<f64> {
        self.penalties_detailed(g).penalties
    }
}

/// Exact `c/N` per arc of one component, or None if it is too big to enumerate.
fn exact_shares(arcs: &[(usize, usize)], max_sets: u64) -> Option<Vec<f64>> {
    let n = arcs.len();
    if n > MAX_EXACT_ARCS {
        return None;
    }
    let words = n.div_ceil(64);
    // compat[v]: arcs that may send together with v (no shared source or destination).
    let compat: Vec<Bits> = (0..n)
        .map(|v| {
            let mut b = Bits::zeros(words);
            for (u, &(s, t)) in arcs.iter().enumerate() {
                if u != v && s != arcs[v].0 && t != arcs[v].1 {
                    b.set(u);
                }
            }
            b
        })
        .collect();
    let mut all = Bits::zeros(words);
    for v in 0..n {
        all.set(v);
    }
    let mut e = Enum {
        compat: &compat,
        counts: vec![0u64; n],
        total: 0,
        max_sets,
        r: Vec::new(),
    };
    if !e.run(all, Bits::zeros(words)) {
        return None;
    }
    let total = e.total as f64;
    Some(e.counts.iter().map(|&c| c as f64 / total).collect())
}

struct Enum<'a> {
    compat: &'a [Bits],
    counts: Vec<u64>,
    total: u64,
    max_sets: u64,
    r: Vec<usize>,
}

impl Enum<'_> {
    /// Bron–Kerbosch with pivoting over the compatibility graph (whose maximal cliques are
    /// the maximal non-conflicting sets). Returns false when the set bound is passed.
    fn run(&mut self, mut p: Bits, mut x: Bits) -> bool {
        if p.is_empty() && x.is_empty() {
            self.total += 1;
            for &v in &self.r {
                self.counts[v] += 1;
            }
            return self.total <= self.max_sets;
        }
        // Pivot: the vertex of P ∪ X with the most compatible vertices in P.
        let mut pivot = usize::MAX;
        let mut best = 0usize;
        for u in p.iter().chain(x.iter()) {
            let c = p.and_count(&self.compat[u]);
            if pivot == usize::MAX || c > best {
                pivot = u;
                best = c;
            }
        }
        let cands: Vec<usize> = p.iter().filter(|&v| !self.compat[pivot].get(v)).collect();
        for v in cands {
            self.r.push(v);
            let ok = self.run(p.and(&self.compat[v]), x.and(&self.compat[v]));
            self.r.pop();
            if !ok {
                return false;
            }
            p.clear(v);
            x.set(v);
        }
        true
    }
}

/// Estimated `c/N` per arc of one component by random greedy maximal states.
fn sampled_shares(arcs: &[(usize, usize)], nodes: usize) -> Vec<f64> {
    let n = arcs.len();
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15 ^ n as u64);
    let mut order: Vec<usize> = (0..n).collect();
    let mut sends = vec![0u64; n];
    // Stamps avoid clearing per-node arrays between samples.
    let mut out_busy = vec![0u32; nodes];
    let mut in_busy = vec![0u32; nodes];
    for sample in 1..=SAMPLES as u32 {
        for i in (1..n).rev() {
            let j = (rng.next() % (i as u64 + 1)) as usize;
            order.swap(i, j);
        }
        for &a in &order {
            let (s, t) = arcs[a];
            if out_busy[s] != sample && in_busy[t] != sample {
                out_busy[s] = sample;
                in_busy[t] = sample;
                sends[a] += 1;
            }
        }
    }
    sends
        .iter()
        .map(|&c| (c as f64 + 1.0) / (SAMPLES as f64 + 1.0))
        .collect()
}

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

#[derive(Clone)]
struct Bits(Vec<u64>);

impl Bits {
    fn zeros(words: usize) -> Self {
        Bits(vec![0; words])
    }
    fn set(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn clear(&mut self, i: usize) {
        self.0[i / 64] &= !(1 << (i % 64));
    }
    fn get(&self, i: usize) -> bool {
        self.0[i / 64] & (1 << (i % 64)) != 0
    }
    fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
    fn and(&self, o: &Bits) -> Bits {
        Bits(self.0.iter().zip(&o.0).map(|(a, b)| a & b).collect())
    }
    fn and_count(&self, o: &Bits) -> usize {
        self.0
            .iter()
            .zip(&o.0)
            .map(|(a, b)| (a & b).count_ones() as usize)
            .sum()
    }
    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &bits)| {
            let mut b = bits;
            std::iter::from_fn(move || {
                if b == 0 {
                    return None;
                }
                let i = b.trailing_zeros() as usize;
                b &= b - 1;
                Some(w * 64 + i)
            })
        })
    }
}

struct UnionFind(Vec<usize>);

impl UnionFind {
    fn new(n: usize) -> Self {
        UnionFind((0..n).collect())
    }
    fn find(&mut self, mut i: usize) -> usize {
        while self.0[i] != i {
            self.0[i] = self.0[self.0[i]];
            i = self.0[i];
        }
        i
    }
    fn union(&mut self, a: usize, b: usize) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            self.0[ra] = rb;
        }
    }
}
