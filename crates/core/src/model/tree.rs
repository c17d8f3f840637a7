//! Which member of a tree broadcast gets its data when.
//!
//! Table 1 of the intra-cluster pLogP paper ([`super::bcast`]) gives a broadcast's whole
//! time, the same for every member. Open MPI runs its broadcasts as trees over the
//! communicator's ranks (shifted so the root is 0), each parent sending to its children in
//! turn; a member has its data after its own path through the tree, not after the whole
//! tree. Measured on the emulated cluster (8 ranks by node, 8 KiB, the binary tree): ranks
//! 1 and 5 after one message time, 2, 3, 6 and 7 after two, 4 after three, where the
//! bound is six (docs/accuracy.md, fourteenth session). A hop between two ranks of one node
//! costs next to nothing; the hops leaving one node go out one after another through its
//! port, whichever of its ranks sends them.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// A broadcast tree of Open MPI's `coll/base` (`coll_base_topo.c`), over virtual ranks
/// (communicator rank minus the root's, modulo the size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tree {
    /// `basic_linear`: the root sends to the others in turn in communicator rank order
    /// (not virtual: rooted at 1 of 4, to 0, 2, 3).
    Linear,
    /// `pipeline` (and `chain` with the fixed decision's fan-out of 0, which it forces to
    /// 1): each member sends to the next.
    Chain,
    /// `binary_tree` (`ompi_coll_base_topo_build_tree`, fan-out 2): a member at level L
    /// (levels of 1, 2, 4, ... members) sends to `v + 2^L` and `v + 2·2^L`.
    Binary,
    /// `binomial` (`build_bmtree`): children `v | mask` for each power of two `mask` above
    /// `v`'s highest bit, in increasing order.
    Binomial,
    /// `knomial` of this radix (`build_kmtree`): children `v + r·mask`, largest `mask`
    /// first, `r` = 1..radix−1.
    Knomial(u32),
}

/// Cost of one hop of a tree: a parent's sends follow each other by `gap` (its port's
/// time for the block), the block arrives `lat` after its send ended. Where the link
/// between nodes is shaped with a burst allowance (`burst` bytes, refilled at one byte
/// per `beta` seconds), a block that fits in what its port's bucket holds takes
/// `inter_gap0` (the empty message's gap) and empties the bucket by its `bytes`; a larger
/// one takes `inter_gap` and leaves it empty once its bytes have left, as
/// [`crate::predict::bucket_bytes`] costs a collective's messages. Every port's bucket is
/// full when the broadcast starts. (Taking the bucket's bytes off a larger block, as a
/// tbf does, was tried: on `scripts/bench-bcast`'s runs it predicted the 8-24 KiB
/// broadcasts' members 2-10 % short where whole-or-nothing gives 0-20 % long, and the
/// 1 KiB k-nomial at 8 ranks by node 24 % short against 10 %.)
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Hops {
    pub inter_gap: f64,
    pub inter_lat: f64,
    pub intra_gap: f64,
    pub intra_lat: f64,
    pub inter_gap0: f64,
    pub bytes: f64,
    pub burst: f64,
    pub beta: f64,
}

/// The tree Open MPI 4.1's tuned component runs for a broadcast of `m` bytes among `p`
/// members by its fixed decision (`ompi_coll_tuned_bcast_intra_dec_fixed`, no
/// segmentation); None for the algorithms that are not one tree (split binary tree,
/// scatter-allgather), where every member keeps the whole time.
pub fn openmpi_tree(p: u64, m: u64) -> Option<Tree> {
    use Tree::{Binary, Binomial, Chain, Linear};
    let k = Tree::Knomial(4);
    let t = if p < 4 {
        match m {
            0..32 => Chain,
            32..256 => Binary,
            256..512 => Chain,
            512..1024 => k,
            1024..32768 => Linear,
            32768..131072 => Binary,
            131072..262144 => Chain,
            262144..524288 => Linear,
            524288..1048576 => Binomial,
            _ => Binary,
        }
    } else if p < 8 {
        match m {
            0..64 => Binary,
            64..128 => Binomial,
            128..2048 => Binary,
            2048..8192 => Binomial,
            8192..1048576 => Linear,
            _ => Chain,
        }
    } else if p < 16 {
        match m {
            0..8 => k,
            8..64 => Binary,
            64..4096 => k,
            4096..16384 => Binary,
            16384..32768 => Binomial,
            _ => Linear,
        }
    } else if p < 32 {
        match m {
            0..4096 => k,
            4096..1048576 => Binomial,
            _ => return None,
        }
    } else if p < 64 {
        if m < 2048 { Binomial } else { k }
    } else if p < 128 {
        k
    } else if p < 256 {
        match m {
            0..2 => Binomial,
            2..16384 => Binary,
            16384..32768 => Linear,
            32768..65536 => Binary,
            _ => k,
        }
    } else if p < 1024 {
        match m {
            16384..32768 => return None,
            _ => k,
        }
    } else if p < 2048 {
        if m < 524288 {
            k
        } else {
            return None;
        }
    } else if p < 4096 {
        if m < 262144 {
            k
        } else {
            return None;
        }
    } else {
        match m {
            0..8192 => k,
            8192..16384 => Binary,
            16384..262144 => k,
            _ => return None,
        }
    };
    Some(t)
}

/// The children of virtual rank `v` in a tree of `n` members rooted at communicator rank
/// `root`, in the order it sends to them, appended to `out`.
pub fn children(tree: Tree, n: u64, root: u64, v: u64, out: &mut Vec<u64>) {
    match tree {
        Tree::Linear => {
            if v == 0 {
                let root = root % n.max(1);
                out.extend((0..root).chain(root + 1..n).map(|k| (k + n - root) % n));
            }
        }
        Tree::Chain => {
            if v + 1 < n {
                out.push(v + 1);
            }
        }
        Tree::Binary => {
            // Level L holds 2^L members, from 2^L − 1 on.
            let level = 63 - (v + 1).leading_zeros() as u64;
            let delta = 1u64 << level;
            out.extend((1..=2).map(|i| v + delta * i).filter(|&c| c < n));
        }
        Tree::Binomial => {
            // opal_next_poweroftwo(v): the power of two above v's highest bit.
            let mut mask = 1u64 << (64 - v.leading_zeros());
            while mask < n && (v | mask) < n {
                out.push(v | mask);
                mask <<= 1;
            }
        }
        Tree::Knomial(radix) => {
            let radix = radix.max(2) as u64;
            let mut mask = 1u64;
            while mask < n && v.is_multiple_of(radix * mask) {
                mask *= radix;
            }
            mask /= radix;
            while mask > 0 {
                out.extend((1..radix).map(|r| v + mask * r).filter(|&c| c < n));
                mask /= radix;
            }
        }
    }
}

#[derive(Debug, PartialEq)]
struct Ready(f64, u64);

impl Eq for Ready {}

impl Ord for Ready {
    // Earliest first out of a max-heap; ties: the lower virtual rank.
    fn cmp(&self, o: &Self) -> Ordering {
        o.0.total_cmp(&self.0).then(o.1.cmp(&self.1))
    }
}

impl PartialOrd for Ready {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// Reusable space of [`schedule`] (a replay schedules many broadcasts).
#[derive(Debug, Default)]
pub struct Scratch {
    /// Per node: its port, when it is free again, its bucket's bytes and as of when.
    port: Vec<(u32, f64, f64, f64)>,
    kids: Vec<u64>,
    queue: BinaryHeap<Ready>,
}

/// When each member of a broadcast along `tree` has its data and when its own sends are
/// done (the last of its children has the data; a leaf: when it has it), in seconds after
/// the root entered, by virtual rank (communicator rank minus `root`'s, modulo the size);
/// `node[v]` is virtual rank v's node and `entry[v]`
/// when it entered, after the root (NaN: not yet; an empty slice: all with the root). A
/// member that has not entered sends nothing: its subtree's times are NaN.
///
/// A member posts its sends to all its children once it has the data and has entered
/// (Open MPI's generic tree broadcast posts them together and waits for all). A child on
/// its node has the data after the intra-node hop (one after the other by `intra_gap`); a
/// child on another node waits for the parent node's port, which takes the sends of all
/// that node's members one after another in the order they were posted. Measured at 8
/// ranks by node (8 KiB): rank 6 had its data from 2, on its host, as soon as 2 had it,
/// though 2 sent to 4 first.
pub fn schedule(
    tree: Tree,
    root: u64,
    node: &[u32],
    entry: &[f64],
    hops: &Hops,
    scratch: &mut Scratch,
    out: &mut Vec<(f64, f64)>,
) {
    let n = node.len();
    out.clear();
    out.resize(n, (f64::NAN, f64::NAN));
    if n == 0 {
        return;
    }
    let Scratch { port, kids, queue } = scratch;
    port.clear();
    queue.clear();
    // When member v can send, having its data at `arrive`; None: it has not entered.
    let ready = |v: usize, arrive: f64| match entry.get(v) {
        None => Some(arrive),
        Some(e) if e.is_nan() => None,
        Some(&e) => Some(arrive.max(e)),
    };
    out[0] = (0.0, 0.0);
    queue.push(Ready(0.0, 0));
    while let Some(Ready(t, v)) = queue.pop() {
        let vi = v as usize;
        kids.clear();
        children(tree, n as u64, root, v, kids);
        let mut local = t;
        let mut done = t.max(out[vi].0);
        for &c in kids.iter() {
            let ci = c as usize;
            let arrive = if node[ci] == node[vi] {
                local += hops.intra_gap;
                local + hops.intra_lat
            } else {
                let k = match port.iter().position(|p| p.0 == node[vi]) {
                    Some(k) => k,
                    None => {
                        port.push((node[vi], f64::NEG_INFINITY, hops.burst, 0.0));
                        port.len() - 1
                    }
                };
                let (_, free, held, at) = &mut port[k];
                let start = t.max(*free);
                if hops.beta > 0.0 {
                    *held = (*held + (start - *at).max(0.0) / hops.beta).min(hops.burst);
                }
                *at = start;
                let gap = if hops.burst > 0.0 && hops.bytes <= *held {
                    *held -= hops.bytes;
                    hops.inter_gap0
                } else {
                    *held = 0.0;
                    hops.inter_gap
                };
                *free = start + gap;
                // A block the bucket did not hold leaves it empty once its bytes have left.
                if *held == 0.0 {
                    *at = *free;
                }
                *free + hops.inter_lat
            };
            out[ci] = (arrive, arrive);
            done = done.max(arrive);
            if let Some(r) = ready(ci, arrive) {
                queue.push(Ready(r, c));
            }
        }
        out[vi].1 = done;
    }
    // A member that has its data but has not entered has not sent yet either.
    for (v, o) in out.iter_mut().enumerate() {
        if ready(v, o.0).is_none() {
            o.1 = f64::NAN;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kids(tree: Tree, n: u64, v: u64) -> Vec<u64> {
        let mut out = Vec::new();
        children(tree, n, 0, v, &mut out);
        out
    }

    #[test]
    fn the_trees_are_open_mpi_s() {
        // coll_base_topo.c's trees at 8 members (docs/accuracy.md: measured order).
        assert_eq!(kids(Tree::Binary, 8, 0), vec![1, 2]);
        assert_eq!(kids(Tree::Binary, 8, 1), vec![3, 5]);
        assert_eq!(kids(Tree::Binary, 8, 2), vec![4, 6]);
        assert_eq!(kids(Tree::Binary, 8, 3), vec![7]);
        assert_eq!(kids(Tree::Binary, 8, 4), Vec::<u64>::new());
        assert_eq!(kids(Tree::Binomial, 8, 0), vec![1, 2, 4]);
        assert_eq!(kids(Tree::Binomial, 8, 1), vec![3, 5]);
        assert_eq!(kids(Tree::Binomial, 8, 2), vec![6]);
        assert_eq!(kids(Tree::Binomial, 8, 3), vec![7]);
        assert_eq!(kids(Tree::Binomial, 8, 4), Vec::<u64>::new());
        assert_eq!(kids(Tree::Binomial, 6, 1), vec![3, 5]);
        // The k-nomial of radix 4 in build_kmtree's comment (10 members).
        assert_eq!(kids(Tree::Knomial(4), 10, 0), vec![4, 8, 1, 2, 3]);
        assert_eq!(kids(Tree::Knomial(4), 10, 4), vec![5, 6, 7]);
        assert_eq!(kids(Tree::Knomial(4), 10, 8), vec![9]);
        assert_eq!(kids(Tree::Knomial(4), 10, 2), Vec::<u64>::new());
        assert_eq!(kids(Tree::Knomial(2), 10, 0), vec![8, 4, 2, 1]);
        assert_eq!(kids(Tree::Knomial(2), 10, 4), vec![6, 5]);
        assert_eq!(kids(Tree::Linear, 4, 0), vec![1, 2, 3]);
        assert_eq!(kids(Tree::Linear, 4, 1), Vec::<u64>::new());
        // Rooted at 1: ranks 2, 3, 0 are virtual 1, 2, 3; sent to 0, 2, 3 in turn.
        let mut v = Vec::new();
        children(Tree::Linear, 4, 1, 0, &mut v);
        assert_eq!(v, vec![3, 1, 2]);
        assert_eq!(kids(Tree::Chain, 4, 2), vec![3]);
        assert_eq!(kids(Tree::Chain, 4, 3), Vec::<u64>::new());
        // Every member but the root is someone's child, once.
        for tree in [Tree::Binary, Tree::Binomial, Tree::Knomial(4), Tree::Chain] {
            for n in 1..40u64 {
                let mut seen = vec![0; n as usize];
                for v in 0..n {
                    for c in kids(tree, n, v) {
                        assert!(c > v, "{tree:?} {n} {v}->{c}");
                        seen[c as usize] += 1;
                    }
                }
                assert!(seen[1..].iter().all(|&s| s == 1), "{tree:?} {n}: {seen:?}");
            }
        }
    }

    #[test]
    fn the_decision_follows_open_mpi_4_1() {
        assert_eq!(openmpi_tree(8, 8192), Some(Tree::Binary));
        assert_eq!(openmpi_tree(8, 1024), Some(Tree::Knomial(4)));
        assert_eq!(openmpi_tree(8, 24576), Some(Tree::Binomial));
        assert_eq!(openmpi_tree(4, 4096), Some(Tree::Binomial));
        assert_eq!(openmpi_tree(4, 8192), Some(Tree::Linear));
        assert_eq!(openmpi_tree(4, 1 << 20), Some(Tree::Chain));
        assert_eq!(openmpi_tree(20, 1 << 20), None);
        assert_eq!(openmpi_tree(500, 20000), None);
    }

    const H: Hops = Hops {
        inter_gap: 1.0,
        inter_lat: 0.25,
        intra_gap: 0.0,
        intra_lat: 0.0,
        inter_gap0: 0.0,
        bytes: 100.0,
        burst: 0.0,
        beta: 0.0,
    };

    #[test]
    fn eight_by_node_binary() {
        // Ranks 0-7 on 4 nodes by node: 0 and 4 on node 0, 1 and 5 on node 1...
        let node = [0, 1, 2, 3, 0, 1, 2, 3];
        let (mut out, mut sc) = (Vec::new(), Scratch::default());
        schedule(Tree::Binary, 0, &node, &[], &H, &mut sc, &mut out);
        let arrive: Vec<f64> = out.iter().map(|x| x.0).collect();
        // 1 after one send; 2 after two (the root's second); 3 from 1; 4 from 2; 5, 6
        // and 7 as soon as their parent on their host (1, 2, 3) has it.
        assert_eq!(arrive, vec![0.0, 1.25, 2.25, 2.5, 3.5, 1.25, 2.25, 2.5]);
        // The root is done when 2 has its data; 1 when 3 has; a leaf at once.
        assert_eq!(out[0].1, 2.25);
        assert_eq!(out[1].1, 2.5);
        assert_eq!(out[4].1, 3.5);
    }

    #[test]
    fn ranks_of_one_node_take_turns_at_its_port() {
        // 8 by slot: 0 and 1 on node 0, 2 and 3 on node 1...
        let node = [0, 0, 1, 1, 2, 2, 3, 3];
        let (mut out, mut sc) = (Vec::new(), Scratch::default());
        schedule(Tree::Binary, 0, &node, &[], &H, &mut sc, &mut out);
        let arrive: Vec<f64> = out.iter().map(|x| x.0).collect();
        // 1 at once; the root's send to 2 holds node 0's port until 1, then 1's to 3 and
        // 5; 2 sends to 4, then 6; 3 waits for node 1's port until 2's two sends are done
        // (3.25) before sending to 7.
        assert_eq!(arrive, vec![0.0, 0.0, 1.25, 2.25, 2.5, 3.25, 3.5, 4.5]);
        // Linear on one node: everything at once.
        schedule(Tree::Linear, 0, &[7, 7, 7], &[], &H, &mut sc, &mut out);
        assert_eq!(out, vec![(0.0, 0.0); 3]);
        // Linear across nodes: one send after the other.
        schedule(Tree::Linear, 0, &[0, 1, 2, 3], &[], &H, &mut sc, &mut out);
        assert_eq!(out[3].0, 3.25);
        assert_eq!(out[0].1, 3.25);
        schedule(Tree::Chain, 0, &[0, 1, 2], &[], &H, &mut sc, &mut out);
        assert_eq!(out, vec![(0.0, 1.25), (1.25, 2.5), (2.5, 2.5)]);
    }

    #[test]
    fn a_port_s_bucket_passes_what_it_holds_at_once() {
        // Burst of 250 bytes refilled at 100 bytes a second, blocks of 100: the root's
        // first two sends pass at the empty message's gap (0.1); the third finds 70 bytes
        // and takes the whole gap.
        let h = Hops {
            inter_gap0: 0.1,
            burst: 250.0,
            beta: 0.01,
            ..H
        };
        let (mut out, mut sc) = (Vec::new(), Scratch::default());
        schedule(
            Tree::Linear,
            0,
            &[0, 1, 2, 3, 4],
            &[],
            &h,
            &mut sc,
            &mut out,
        );
        let arrive: Vec<f64> = out.iter().map(|x| x.0).collect();
        // The fourth finds it empty: it refills from when the third's bytes have left,
        // not while they leave.
        assert_eq!(arrive, vec![0.0, 0.35, 0.45, 1.45, 2.45]);
        // Refilled at 1,000 bytes a second, the bucket holds the third block too.
        let slow = Hops { beta: 0.001, ..h };
        schedule(
            Tree::Linear,
            0,
            &[0, 1, 2, 3],
            &[],
            &slow,
            &mut sc,
            &mut out,
        );
        assert!((out[3].0 - 0.55).abs() < 1e-12, "{out:?}");
    }

    #[test]
    fn a_member_sends_once_it_has_entered() {
        // 8 by node, binary; rank 1 entered 5 s after the root, 3 not yet.
        let node = [0, 1, 2, 3, 0, 1, 2, 3];
        let nan = f64::NAN;
        let entry = [0.0, 5.0, 0.0, nan, 0.0, 0.0, 0.0, 0.0];
        let (mut out, mut sc) = (Vec::new(), Scratch::default());
        schedule(Tree::Binary, 0, &node, &entry, &H, &mut sc, &mut out);
        // 1 has its data at 1.25 but sends from 5: 3 at 6.25, 5 (its host) at 5.
        assert_eq!(out[1].0, 1.25);
        assert_eq!(out[3].0, 6.25);
        assert_eq!(out[5].0, 5.0);
        // 3 has its data, has not entered: 7 (its child) has nothing yet, nor is 3 done.
        assert!(out[7].0.is_nan() && out[7].1.is_nan() && out[3].1.is_nan());
        assert_eq!(out[1].1, 6.25);
        // The others as if all had entered with the root.
        assert_eq!((out[2].0, out[4].0, out[6].0), (2.25, 3.5, 2.25));
    }
}
