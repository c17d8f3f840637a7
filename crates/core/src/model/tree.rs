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
    /// MPICH's `MPIR_Bcast_intra_binomial`: `v` receives from `v` minus its lowest set
    /// bit and sends to `v + mask` for each power of two `mask` below that bit, largest
    /// first (the root: below the power of two at or above the size). Not Open MPI's
    /// binomial tree: at 8 members 0 sends to 4, 2, 1 and 4 to 6, 5.
    MpichBinomial,
    /// MPICH 4.0's node-aware broadcast (ch4 `MPIDI_Bcast_intra_composition_alpha`, or
    /// `_beta` when `beta`): one leader a node (its lowest communicator rank); the
    /// leaders broadcast among themselves along [`Tree::MpichBinomial`] (in the order of
    /// their nodes' first ranks); each leader then hands the block to its node's other
    /// members at once through shared memory (`release_gather`). Alpha: a root that is
    /// not its node's leader first sends the block to it. Beta: such a root hands it to
    /// its node's members (the leader among them) before the leaders' broadcast.
    MpichSmp { beta: bool },
}

/// What MPICH 4.0 (ch4 device, its built-in selection: `maint/tuning/coll/ch4/generic.json`
/// and `mpir/generic.json`) runs for a broadcast of `m` bytes among `p` members, at most
/// `per_node` of them on one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MpichBcast {
    /// Along a tree.
    Tree(Tree),
    /// `scatter_recursive_doubling_allgather` (`ring` false) or
    /// `scatter_ring_allgather` among `members` ranks, the node leaders when `smp` (each
    /// then hands the block to its node's other members): every member has the block at
    /// about the same time.
    ScatterAllgather { members: u64, ring: bool, smp: bool },
}

/// MPICH 4.0's broadcast by its built-in selection. A communicator with two members on a
/// node is a "parent" (node-aware) one: fewer than 8 members, or below 12,288 bytes, the
/// alpha composition; a power-of-two size below 524,288 bytes, beta; otherwise the flat
/// algorithm. Without two members on a node (or in the flat case): binomial below 8
/// members or up to 12,288 bytes, then scatter and a recursive-doubling allgather (a
/// power-of-two size, up to 524,288 bytes) or a ring allgather. The leaders' own
/// broadcast follows the flat rules over the nodes, counted as `p / per_node` rounded up.
pub fn mpich_bcast(p: u64, m: u64, per_node: u64) -> MpichBcast {
    let flat = |p: u64| {
        if p < 8 || m <= 12288 {
            MpichBcast::Tree(Tree::MpichBinomial)
        } else {
            MpichBcast::ScatterAllgather {
                members: p,
                ring: !(p.is_power_of_two() && m <= 524288),
                smp: false,
            }
        }
    };
    if per_node < 2 {
        return flat(p);
    }
    let beta = if p < 8 || m < 12288 {
        false
    } else if p.is_power_of_two() && m < 524288 {
        true
    } else {
        return flat(p);
    };
    match flat(p.div_ceil(per_node)) {
        MpichBcast::Tree(_) => MpichBcast::Tree(Tree::MpichSmp { beta }),
        MpichBcast::ScatterAllgather { members, ring, .. } => MpichBcast::ScatterAllgather {
            members,
            ring,
            smp: true,
        },
    }
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
    /// Blocks by rendezvous: a send starts only once its child has entered (its receive
    /// posted), and a child that has not entered has nothing yet.
    pub rendezvous: bool,
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
        Tree::MpichBinomial => {
            let mut mask = if v == 0 {
                n.next_power_of_two()
            } else {
                v & v.wrapping_neg()
            };
            mask >>= 1;
            while mask > 0 {
                if v + mask < n {
                    out.push(v + mask);
                }
                mask >>= 1;
            }
        }
        // Its children depend on the members' nodes: [`smp_children`].
        Tree::MpichSmp { .. } => {}
    }
}

/// The children of every virtual rank in MPICH's node-aware broadcast ([`Tree::MpichSmp`])
/// with `node[v]` the node of virtual rank v, rooted at communicator rank `root`, each
/// list in sending order (a leader's sends to other leaders before its node's hand-over),
/// into `lists`.
fn smp_children(
    beta: bool,
    root: u64,
    node: &[u32],
    leaders: &mut Vec<u64>,
    lists: &mut Vec<Vec<u64>>,
) {
    let n = node.len() as u64;
    for l in lists.iter_mut() {
        l.clear();
    }
    lists.resize_with(n as usize, Vec::new);
    // Leaders in the order of their nodes' first communicator ranks.
    leaders.clear();
    for c in 0..n {
        let v = (c + n - root % n) % n;
        if !leaders
            .iter()
            .any(|&l| node[l as usize] == node[v as usize])
        {
            leaders.push(v);
        }
    }
    let q = leaders.len() as u64;
    let Some(ri) = leaders.iter().position(|&l| node[l as usize] == node[0]) else {
        return;
    };
    let root_leader = leaders[ri];
    for j in 0..leaders.len() {
        let l = leaders[j];
        // The leaders' binomial tree, relative to the root's node.
        let r = (j as u64 + q - ri as u64) % q;
        let at = lists[l as usize].len();
        children(Tree::MpichBinomial, q, 0, r, &mut lists[l as usize]);
        for k in &mut lists[l as usize][at..] {
            *k = leaders[((*k + ri as u64) % q) as usize];
        }
        // The node's other members (not the root, which has the block).
        let members = (0..n).filter(|&v| v != l && v != 0 && node[v as usize] == node[l as usize]);
        if beta && l == root_leader && l != 0 {
            // Beta: the root hands the block to its node first, its leader among them.
            lists[0].extend(members.chain(std::iter::once(l)));
        } else {
            lists[l as usize].extend(members);
        }
    }
    if !beta && root_leader != 0 {
        // Alpha: the root sends the block to its node's leader.
        lists[0].insert(0, root_leader);
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
    /// [`Tree::MpichSmp`]'s leaders and children ([`smp_children`]).
    leaders: Vec<u64>,
    lists: Vec<Vec<u64>>,
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
    let Scratch {
        port,
        kids,
        queue,
        leaders,
        lists,
    } = scratch;
    port.clear();
    queue.clear();
    // MPICH's node-aware tree: a node's members get the block at once through shared
    // memory.
    let smp = match tree {
        Tree::MpichSmp { beta } => {
            smp_children(beta, root, node, leaders, lists);
            true
        }
        _ => false,
    };
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
        if smp {
            kids.extend_from_slice(&lists[vi]);
        } else {
            children(tree, n as u64, root, v, kids);
        }
        let mut local = t;
        let mut done = t.max(out[vi].0);
        let mut blocked = false;
        for &c in kids.iter() {
            let ci = c as usize;
            // By rendezvous, the send waits for the child's receive.
            let t = if hops.rendezvous {
                let t = match entry.get(ci) {
                    None => t,
                    Some(e) if e.is_nan() => {
                        blocked = true;
                        continue;
                    }
                    Some(&e) => t.max(e),
                };
                local = local.max(t);
                t
            } else {
                t
            };
            let arrive = if node[ci] == node[vi] {
                if smp {
                    // Through shared memory: the node's members at once.
                    t + hops.intra_gap + hops.intra_lat
                } else {
                    local += hops.intra_gap;
                    local + hops.intra_lat
                }
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
        out[vi].1 = if blocked { f64::NAN } else { done };
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
        assert_eq!(kids(Tree::MpichBinomial, 8, 0), vec![4, 2, 1]);
        assert_eq!(kids(Tree::MpichBinomial, 8, 4), vec![6, 5]);
        assert_eq!(kids(Tree::MpichBinomial, 8, 2), vec![3]);
        assert_eq!(kids(Tree::MpichBinomial, 8, 6), vec![7]);
        assert_eq!(kids(Tree::MpichBinomial, 8, 1), Vec::<u64>::new());
        assert_eq!(kids(Tree::MpichBinomial, 5, 0), vec![4, 2, 1]);
        assert_eq!(kids(Tree::MpichBinomial, 5, 4), Vec::<u64>::new());
        for tree in [
            Tree::Binary,
            Tree::Binomial,
            Tree::Knomial(4),
            Tree::Chain,
            Tree::MpichBinomial,
        ] {
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
    fn mpich_s_node_aware_tree_reaches_every_member_once() {
        let (mut leaders, mut lists) = (Vec::new(), Vec::new());
        for n in 1..20u64 {
            for per in 1..4u64 {
                for root in 0..n {
                    for beta in [false, true] {
                        // By slot, `per` to a node, then by node.
                        for node in [
                            (0..n).map(|c| (c / per) as u32).collect::<Vec<_>>(),
                            (0..n).map(|c| (c % per) as u32).collect(),
                        ] {
                            // By virtual rank.
                            let node: Vec<u32> =
                                (0..n).map(|v| node[((v + root) % n) as usize]).collect();
                            smp_children(beta, root, &node, &mut leaders, &mut lists);
                            let mut seen = vec![0; n as usize];
                            for l in &lists {
                                for &c in l {
                                    seen[c as usize] += 1;
                                }
                            }
                            let ok = seen[0] == 0 && seen[1..].iter().all(|&s| s == 1);
                            assert!(ok, "{n} {per} {root} {beta}: {lists:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn mpich_s_node_aware_tree_hands_a_node_its_block_at_once() {
        let h = Hops {
            intra_gap: 0.125,
            ..H
        };
        let (mut out, mut sc) = (Vec::new(), Scratch::default());
        // 8 by slot, root 0: leaders 0, 2, 4, 6; 0 sends to 4 then 2 (binomial among the
        // leaders), each leader's partner has the block one intra-node hop after it.
        let by_slot = [0, 0, 1, 1, 2, 2, 3, 3];
        let alpha = Tree::MpichSmp { beta: false };
        schedule(alpha, 0, &by_slot, &[], &h, &mut sc, &mut out);
        let arrive: Vec<f64> = out.iter().map(|x| x.0).collect();
        assert_eq!(
            arrive,
            vec![0.0, 0.125, 2.25, 2.375, 1.25, 1.375, 2.5, 2.625]
        );
        // Rooted at 1, not its node's leader (0): 1 sends to 0 first (virtual 7), which
        // sends to the leaders 4 and 2 (virtual 3 and 1); 4 to 6; 2 hands to 3.
        let node: Vec<u32> = (0..8).map(|v| by_slot[(v + 1) % 8]).collect();
        schedule(alpha, 1, &node, &[], &h, &mut sc, &mut out);
        let arrive: Vec<f64> = out.iter().map(|x| x.0).collect();
        assert_eq!(
            arrive,
            vec![0.0, 2.375, 2.5, 1.375, 1.5, 2.625, 2.75, 0.125]
        );
        // Three to a node: a leader's two partners at once.
        let node = [0, 0, 0, 1, 1, 1];
        schedule(alpha, 0, &node, &[], &h, &mut sc, &mut out);
        let arrive: Vec<f64> = out.iter().map(|x| x.0).collect();
        assert_eq!(arrive, vec![0.0, 0.125, 0.125, 1.25, 1.375, 1.375]);
        // Beta rooted at 1 of those: 1 hands the block to 0 and 2 first; 0 then sends it
        // to 3. Alpha: 1 sends to 0, which sends to 3, then hands it to 2.
        let node = [0, 0, 1, 1, 1, 0];
        schedule(
            Tree::MpichSmp { beta: true },
            1,
            &node,
            &[],
            &h,
            &mut sc,
            &mut out,
        );
        assert_eq!((out[1].0, out[5].0, out[2].0), (0.125, 0.125, 1.375));
        schedule(alpha, 1, &node, &[], &h, &mut sc, &mut out);
        assert_eq!((out[5].0, out[1].0, out[2].0), (0.125, 0.25, 1.375));
    }

    #[test]
    fn the_decision_follows_mpich_4_0() {
        use MpichBcast::{ScatterAllgather as Sa, Tree as T};
        let sa = |members, ring, smp| Sa { members, ring, smp };
        // A rank a node: binomial below 8 ranks or up to 12,288 bytes.
        assert_eq!(mpich_bcast(4, 1 << 20, 1), T(Tree::MpichBinomial));
        assert_eq!(mpich_bcast(8, 12288, 1), T(Tree::MpichBinomial));
        assert_eq!(mpich_bcast(8, 12289, 1), sa(8, false, false));
        assert_eq!(mpich_bcast(8, 1 << 20, 1), sa(8, true, false));
        assert_eq!(mpich_bcast(12, 20000, 1), sa(12, true, false));
        // Two a node: alpha, beta, or the flat choice.
        let alpha = T(Tree::MpichSmp { beta: false });
        assert_eq!(mpich_bcast(8, 8192, 2), alpha);
        assert_eq!(mpich_bcast(4, 1 << 20, 2), alpha);
        assert_eq!(mpich_bcast(8, 20000, 2), T(Tree::MpichSmp { beta: true }));
        assert_eq!(mpich_bcast(8, 1 << 20, 2), sa(8, true, false));
        assert_eq!(mpich_bcast(12, 20000, 2), sa(12, true, false));
        // 16 leaders of 32 ranks: scatter and allgather among them.
        assert_eq!(mpich_bcast(32, 20000, 2), sa(16, false, true));
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
        rendezvous: false,
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
